//! How a worker turns documents into index entries: by paths (automatic indexes) or by running a static
//! index's maps, JavaScript or C#, with `load()` answered from the batch's storage snapshot.

use corvid_js::Host;
use corvid_linq::{LinqError, LinqIndex};
use corvid_storage::{DocumentRecord, ReadTxn};
use corvid_types::id_key;
use serde_json::Value;

use super::definition::AutoIndexDefinition;
use super::js_map::{JsMapCompileError, JsMapProgram, JsMapRunError};
use super::linq_map::{compile_linq, linq_entry};
use super::static_index::SourceLanguage;
use crate::document_json::DocumentJson;

/// Index entries one document may produce over all the maps of a static index (each C# map is also held
/// to it by its own budget, which stops it while it evaluates).
const MAX_OUTPUTS_PER_DOCUMENT: usize = corvid_linq::DEFAULT_MAX_OUTPUTS;

/// One index entry of a document: field name to value.
pub(super) type Entry = serde_json::Map<String, Value>;

/// Why a static index's maps do not compile on the worker's thread (they compiled when the index was
/// defined, so the runtime refused them: out of memory, for instance).
#[derive(Debug, thiserror::Error)]
pub(super) enum MapsCompileError {
    /// JavaScript maps or reduce.
    #[error(transparent)]
    JavaScript(#[from] JsMapCompileError),
    /// C# maps or reduce.
    #[error(transparent)]
    CSharp(#[from] LinqError),
}

/// Why mapping one document or reducing one key failed: that document's or key's indexing error.
#[derive(Debug, thiserror::Error)]
pub(super) enum MapError {
    /// A JavaScript map or reduce failed.
    #[error(transparent)]
    JavaScript(#[from] JsMapRunError),
    /// A C# map or reduce failed or went over its budget.
    #[error(transparent)]
    CSharp(#[from] LinqError),
    /// A document, entry or result that is not JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The maps together produced more entries (first) than one document may have (second).
    #[error("The maps produced {0} index entries for this document, over the limit of {1}")]
    TooManyEntries(usize, usize),
    /// A static index's mapping asked of an automatic index (a bug, reported as the document's error).
    #[error("automatic indexes are mapped by path")]
    MappedByPath,
    /// A reduce asked of an automatic index (a bug, reported as the key's error).
    #[error("automatic indexes have no reduce function")]
    NoReduce,
}

/// How a worker turns documents into index entries: by paths (automatic indexes) or by running the
/// static index's maps. Built on the worker's thread (a JavaScript runtime cannot move between threads).
pub(super) enum Mapper {
    /// An automatic index: the worker reads the paths itself.
    Paths,
    /// A JavaScript static index.
    JavaScript(JsMapProgram),
    /// A C# static index.
    CSharp(Box<LinqIndex>),
}

impl Mapper {
    /// The mapper of an index: its maps compiled, or paths for an automatic index.
    pub(super) fn for_definition(definition: &AutoIndexDefinition) -> Result<Mapper, MapsCompileError> {
        match &definition.static_index {
            None => Ok(Mapper::Paths),
            Some(s) if s.language == SourceLanguage::CSharp => Ok(Mapper::CSharp(Box::new(compile_linq(&s.maps, s.reduce.as_deref())?))),
            Some(s) => {
                let sources = s.definition.get("AdditionalSources").and_then(Value::as_object).cloned().unwrap_or_default();
                Ok(Mapper::JavaScript(JsMapProgram::compile(&s.maps, s.reduce.as_deref(), &sources)?))
            }
        }
    }

    /// The entries of one document (static indexes).
    pub(super) fn map_document(&self, record: &DocumentRecord, host: &mut SnapshotHost<'_>) -> Result<Vec<Entry>, MapError> {
        let entries = self.map_unchecked(record, host)?;
        if entries.len() > MAX_OUTPUTS_PER_DOCUMENT {
            return Err(MapError::TooManyEntries(entries.len(), MAX_OUTPUTS_PER_DOCUMENT));
        }
        Ok(entries)
    }

    fn map_unchecked(&self, record: &DocumentRecord, host: &mut SnapshotHost<'_>) -> Result<Vec<Entry>, MapError> {
        match self {
            Mapper::Paths => Err(MapError::MappedByPath),
            Mapper::JavaScript(program) => Ok(program.map(&record.collection, &record.to_json_string(false), host)?),
            Mapper::CSharp(program) => {
                let body: Value = corvid_types::json::parse(&record.body)?;
                let metadata = if program.reads_metadata() {
                    let mut wire: Value = corvid_types::json::parse(&record.to_json_string(true))?;
                    wire.get_mut("@metadata").map(Value::take).unwrap_or(Value::Null)
                } else {
                    Value::Null
                };
                let maps = program.map_count();
                let mut body = Some(body);
                let mut entries = Vec::new();
                for map_no in 0..maps {
                    // The last map takes the document itself, the others a copy.
                    let doc = if map_no + 1 == maps { body.take() } else { body.clone() }.unwrap_or(Value::Null);
                    let mapped = program.map_owned(map_no, &record.id, &record.collection, doc, &metadata, host)?;
                    entries.extend(mapped.into_iter().map(linq_entry));
                }
                Ok(entries)
            }
        }
    }

    /// The reduce key of a map entry (JSON text), as canonical JSON text.
    pub(super) fn reduce_key(&self, entry: &str) -> Result<String, MapError> {
        match self {
            Mapper::JavaScript(program) => Ok(program.reduce_key(entry)?),
            Mapper::CSharp(program) => {
                let value: Value = corvid_types::json::parse(entry)?;
                Ok(program.group_key(&value)?.to_string())
            }
            Mapper::Paths => Err(MapError::NoReduce),
        }
    }

    /// Reduces the entries (JSON texts) of one key into results (JSON texts).
    pub(super) fn reduce(&self, key: &str, entries: &[String]) -> Result<Vec<String>, MapError> {
        match self {
            Mapper::JavaScript(program) => Ok(program.reduce(key, entries)?),
            Mapper::CSharp(program) => {
                let values = entries.iter().map(|e| corvid_types::json::parse(e)).collect::<Result<Vec<Value>, _>>()?;
                let out = program.reduce(&values)?;
                Ok(out.into_iter().map(|v| v.to_string()).collect())
            }
            Mapper::Paths => Err(MapError::NoReduce),
        }
    }
}

/// Where `load()` in index maps finds documents: the batch's storage snapshot, or a replayed trace's
/// documents (`trace_replay.rs`).
pub(super) trait DocumentSource {
    /// The document stored under `key` (a lower-cased id), if any.
    fn document(&self, key: &str) -> Result<Option<DocumentRecord>, corvid_storage::StorageError>;
}

impl DocumentSource for ReadTxn<'_> {
    fn document(&self, key: &str) -> Result<Option<DocumentRecord>, corvid_storage::StorageError> {
        ReadTxn::document(self, key)
    }
}

/// Answers `load()` in index maps from the batch's document source, and remembers what was loaded.
pub(super) struct SnapshotHost<'a> {
    snapshot: &'a dyn DocumentSource,
    /// Keys loaded while mapping the current document (its references).
    loaded: Vec<String>,
}

impl<'a> SnapshotHost<'a> {
    /// A host reading from `snapshot`.
    pub(super) fn new(snapshot: &'a dyn DocumentSource) -> Self {
        SnapshotHost { snapshot, loaded: Vec::new() }
    }

    /// The keys loaded since the last call: the references of the document just mapped.
    pub(super) fn take_loaded(&mut self) -> Vec<String> {
        std::mem::take(&mut self.loaded)
    }
}

impl corvid_linq::DocumentLoader for SnapshotHost<'_> {
    fn load(&mut self, id: &str) -> Option<Value> {
        self.loaded.push(id_key(id));
        let record = self.snapshot.document(&id_key(id)).ok()??;
        corvid_types::json::parse(&record.to_json_string(false)).ok()
    }
}

impl Host for SnapshotHost<'_> {
    fn call(&mut self, op: &str, arguments_json: &str) -> Result<String, String> {
        let arguments: Vec<Value> = corvid_types::json::parse(arguments_json).map_err(|e| e.to_string())?;
        match (op, arguments.first()) {
            ("load", Some(Value::String(id))) => {
                self.loaded.push(id_key(id));
                let record = self.snapshot.document(&id_key(id)).map_err(|e| e.to_string())?;
                Ok(record.map(|r| r.to_json_string(false)).unwrap_or_else(|| "null".to_owned()))
            }
            ("load", _) => Ok("null".to_owned()),
            (other, _) => Err(format!("{other}() is not available in index maps")),
        }
    }
}
