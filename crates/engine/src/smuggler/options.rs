//! What an export or import is asked to do: RavenDB's `DatabaseSmugglerOptions` JSON, read leniently (the
//! clients send every field, most of them null).

use serde_json::Value;

use super::format::compression::Compression;
use super::item_types::{ItemType, ItemTypes};
use super::record_config::RecordTypes;
use super::transform::TransformScript;
use crate::EngineError;

/// The options of an export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// The item types written (`OperateOnTypes`).
    pub types: ItemTypes,
    /// Only documents (and their revisions, counters, attachments) of these collections; empty: all.
    pub collections: Vec<String>,
    /// Documents marked `Artificial` (written by `OutputReduceToCollection`) are written too.
    pub include_artificial: bool,
    /// How the stream is compressed (`CompressionAlgorithm`; gzip when absent).
    pub compression: Compression,
    /// Only documents, revisions and tombstones with an etag above this one (an incremental backup: what
    /// changed since the previous backup); 0 writes them all.
    pub after_etag: u64,
    /// The record's time-series configuration (kept by the server's catalog), written in `DatabaseRecord`.
    pub time_series_config: Option<Value>,
    /// Run on every exported document (`TransformScript`).
    pub transform: Option<TransformScript>,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            types: ItemTypes::default_types(),
            collections: Vec::new(),
            include_artificial: false,
            compression: Compression::Gzip,
            after_etag: 0,
            time_series_config: None,
            transform: None,
        }
    }
}

/// The options of an import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The item types read; sections of other types are skipped (`OperateOnTypes`).
    pub types: ItemTypes,
    /// Only documents of these collections; empty: all.
    pub collections: Vec<String>,
    /// Imported documents never make revisions, whatever the configuration (restores use it).
    pub skip_revision_creation: bool,
    /// The dump is one file of a backup chain replayed in order into a new database (a restore): a
    /// document's attachments become exactly those the dump lists, and the sections the dump's record
    /// marks complete (Corvid's backups) replace what the database holds, so deletes are replayed too.
    pub replay: bool,
    /// The parts of the dump's `DatabaseRecord` applied (`OperateOnDatabaseRecordTypes`).
    pub record_types: RecordTypes,
    /// Run on every imported document (`TransformScript`).
    pub transform: Option<TransformScript>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            types: ItemTypes::default_types(),
            collections: Vec::new(),
            skip_revision_creation: false,
            replay: false,
            record_types: RecordTypes::default(),
            transform: None,
        }
    }
}

fn types_of(json: &Value) -> Result<ItemTypes, EngineError> {
    match json.get("OperateOnTypes") {
        None | Some(Value::Null) => Ok(ItemTypes::default_types()),
        Some(Value::String(text)) => ItemTypes::parse(text).map_err(|e| EngineError::bad_request(format!("OperateOnTypes: {e}"))),
        Some(other) => Err(EngineError::bad_request(format!("OperateOnTypes must be a string of type names, not {other}"))),
    }
}

fn collections_of(json: &Value) -> Vec<String> {
    json.get("Collections")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

fn flag(json: &Value, key: &str, default: bool) -> bool {
    json.get(key).and_then(Value::as_bool).unwrap_or(default)
}

impl ExportOptions {
    /// Reads the options JSON a client sends (an empty body means the defaults).
    pub fn from_json(json: &Value) -> Result<ExportOptions, EngineError> {
        let compression = match json.get("CompressionAlgorithm").and_then(Value::as_str) {
            None => Compression::Gzip,
            Some(name) => Compression::parse(name)
                .ok_or_else(|| EngineError::bad_request(format!("CompressionAlgorithm '{name}' is not Gzip or Zstd")))?,
        };
        let compression = match json.get("CompressionLevel").and_then(Value::as_str) {
            Some(level) if level.eq_ignore_ascii_case("NoCompression") && compression == Compression::Zstd => Compression::None,
            _ => compression,
        };
        Ok(ExportOptions {
            types: types_of(json)?,
            collections: collections_of(json),
            include_artificial: flag(json, "IncludeArtificial", false),
            compression,
            after_etag: 0,
            time_series_config: None,
            transform: TransformScript::from_options(json)?,
        })
    }
}

impl ImportOptions {
    /// Reads the `importOptions` JSON a client sends.
    pub fn from_json(json: &Value) -> Result<ImportOptions, EngineError> {
        Ok(ImportOptions {
            types: types_of(json)?,
            collections: collections_of(json),
            skip_revision_creation: flag(json, "SkipRevisionCreation", false),
            replay: false,
            record_types: RecordTypes::from_options(json),
            transform: TransformScript::from_options(json)?,
        })
    }

    /// Whether documents of `collection` are imported.
    pub(crate) fn takes_collection(&self, collection: &str) -> bool {
        self.collections.is_empty() || self.collections.iter().any(|c| c.eq_ignore_ascii_case(collection))
    }
}

impl ExportOptions {
    /// Whether documents of `collection` are exported.
    pub(crate) fn takes_collection(&self, collection: &str) -> bool {
        self.collections.is_empty() || self.collections.iter().any(|c| c.eq_ignore_ascii_case(collection))
    }

    /// Whether attachments are written with the documents.
    pub(crate) fn attachments(&self) -> bool {
        self.types.contains(ItemType::Attachments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_what_the_python_client_sends() {
        let options = ImportOptions::from_json(&json!({
            "OperateOnTypes": "Documents, Indexes", "TransformScript": null, "Collections": [], "SkipRevisionCreation": true
        }))
        .unwrap();
        assert!(options.types.contains(ItemType::Documents) && !options.types.contains(ItemType::Identities));
        assert!(options.skip_revision_creation);
        let export = ExportOptions::from_json(&json!({"CompressionAlgorithm": "Zstd"})).unwrap();
        assert_eq!(export.compression, Compression::Zstd);
        assert!(export.types.contains(ItemType::CompareExchange), "absent types mean the defaults");
        let import = ImportOptions::from_json(&json!({"TransformScript": "this.x = 1", "MaxStepsForTransformScript": 50})).unwrap();
        assert_eq!(import.transform.map(|t| t.max_steps), Some(50));
    }
}
