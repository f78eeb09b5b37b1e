//! Repeatable indexing traces: what an index's worker consumed, recorded to a file so that the same input
//! can be replayed into a fresh index elsewhere (`trace_replay.rs`, `corvid replay-trace`), with other
//! commit points. The file is JSON lines:
//!
//! | line | content |
//! |------|---------|
//! | first | `{"Trace": "corvid-index-trace", "Version": 1, "Index": name, "Definition": {...}}` (the index's `definition.json`) |
//! | per batch | `{"Batch": {"Cut": etag, "Documents": [doc...], "Tombstones": [key...]}}`, in the order the worker read them |
//! | after mapping | `{"Loaded": [doc...]}`: documents `load()` returned that the batch did not hold (only when there were some) |
//! | batch end | `{"Commit": etag}` (committed with that payload; also when nothing changed) or `{"Dropped": true}` (interrupted, not committed) |
//!
//! A `doc` is `{"Id", "Collection", "Etag", "LastModified", "Flags", "ChangeVector", "Body", "Metadata"}`
//! with the body and client metadata as the JSON text stored.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use corvid_storage::DocumentRecord;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::definition::AutoIndexDefinition;

/// The first line's `Trace` value.
pub const TRACE_FORMAT: &str = "corvid-index-trace";
/// The format version this code writes and reads.
pub const TRACE_VERSION: u32 = 1;

/// Why a trace could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The trace file could not be created, written or read.
    #[error("trace file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A line of the trace is not what the format says.
    #[error("trace file {path}, line {line}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The index is already being traced.
    #[error("index '{0}' is already being traced")]
    AlreadyTracing(String),
    /// A stop asked of an index that is not being traced.
    #[error("index '{0}' is not being traced")]
    NotTracing(String),
}

/// One document as a trace holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TracedDocument {
    id: String,
    collection: String,
    etag: u64,
    last_modified: i64,
    flags: u32,
    change_vector: String,
    body: String,
    metadata: String,
}

impl From<&DocumentRecord> for TracedDocument {
    fn from(record: &DocumentRecord) -> Self {
        TracedDocument {
            id: record.id.clone(),
            collection: record.collection.clone(),
            etag: record.etag,
            last_modified: record.last_modified,
            flags: record.flags,
            change_vector: record.change_vector.clone(),
            body: record.body.clone(),
            metadata: record.client_metadata.clone(),
        }
    }
}

impl From<TracedDocument> for DocumentRecord {
    fn from(doc: TracedDocument) -> Self {
        DocumentRecord {
            id: doc.id,
            etag: doc.etag,
            last_modified: doc.last_modified,
            flags: doc.flags,
            collection: doc.collection,
            change_vector: doc.change_vector,
            body: doc.body,
            client_metadata: doc.metadata,
        }
    }
}

/// The first line of a trace.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct TraceHeader {
    pub trace: String,
    pub version: u32,
    pub index: String,
    pub definition: AutoIndexDefinition,
}

/// A batch as the worker read it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct TracedBatch {
    pub cut: u64,
    pub documents: Vec<TracedDocument>,
    pub tombstones: Vec<String>,
}

/// Every line after the header.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum TraceLine {
    /// A batch read.
    Batch(TracedBatch),
    /// Documents `load()` returned while mapping the batch.
    Loaded(Vec<TracedDocument>),
    /// The batch committed with this payload.
    Commit(u64),
    /// The batch was interrupted and not committed.
    Dropped(bool),
}

/// An open trace file being written.
struct TraceFile {
    path: PathBuf,
    out: BufWriter<File>,
    batches: u64,
}

/// An index's trace recorder: off, or writing a file. The worker writes through it; the admin endpoint
/// starts and stops it.
#[derive(Default)]
pub struct TraceRecorder {
    file: Mutex<Option<TraceFile>>,
}

/// What a finished trace holds.
#[derive(Debug, Clone)]
pub struct TraceSummary {
    /// The trace file.
    pub path: PathBuf,
    /// Batches recorded.
    pub batches: u64,
}

impl TraceRecorder {
    /// Starts writing a trace of `definition`'s index to `path` (replacing a file there).
    pub fn start(&self, name: &str, definition: &AutoIndexDefinition, path: &Path) -> Result<(), TraceError> {
        let mut file = self.file.lock();
        if file.is_some() {
            return Err(TraceError::AlreadyTracing(name.to_owned()));
        }
        let io = |source| TraceError::Io { path: path.to_owned(), source };
        let mut out = BufWriter::new(File::create(path).map_err(io)?);
        let header = TraceHeader { trace: TRACE_FORMAT.into(), version: TRACE_VERSION, index: name.into(), definition: definition.clone() };
        write_line(&mut out, &header).map_err(io)?;
        out.flush().map_err(io)?;
        *file = Some(TraceFile { path: path.to_owned(), out, batches: 0 });
        Ok(())
    }

    /// Stops the trace, flushing and syncing its file.
    pub fn stop(&self, name: &str) -> Result<TraceSummary, TraceError> {
        let Some(mut file) = self.file.lock().take() else {
            return Err(TraceError::NotTracing(name.to_owned()));
        };
        let io = |source| TraceError::Io { path: file.path.clone(), source };
        file.out.flush().map_err(io)?;
        file.out.get_ref().sync_all().map_err(io)?;
        Ok(TraceSummary { path: file.path, batches: file.batches })
    }

    /// Whether a trace is being written.
    pub fn is_recording(&self) -> bool {
        self.file.lock().is_some()
    }

    /// Records a line; a write failure ends the trace (logged) rather than the indexing.
    pub(super) fn record(&self, line: &TraceLine) {
        let mut guard = self.file.lock();
        let Some(file) = guard.as_mut() else { return };
        if matches!(line, TraceLine::Batch(_)) {
            file.batches += 1;
        }
        let written = write_line(&mut file.out, line).and_then(|()| match line {
            // Flushed at each batch end, so a trace cut short by a crash still replays up to there.
            TraceLine::Commit(_) | TraceLine::Dropped(_) => file.out.flush(),
            _ => Ok(()),
        });
        if let Err(e) = written {
            tracing::warn!(path = %file.path.display(), error = %e, "writing the indexing trace failed; the trace stops");
            *guard = None;
        }
    }
}

fn write_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, value).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// A batch's documents as a trace line.
pub(super) fn batch_line(records: &[DocumentRecord], deletes: &[String], cut: u64) -> TraceLine {
    TraceLine::Batch(TracedBatch { cut, documents: records.iter().map(TracedDocument::from).collect(), tombstones: deletes.to_vec() })
}

impl From<TraceError> for crate::EngineError {
    fn from(e: TraceError) -> Self {
        match e {
            TraceError::AlreadyTracing(_) | TraceError::NotTracing(_) => crate::EngineError::InvalidOperation(e.to_string()),
            TraceError::Io { .. } | TraceError::Malformed { .. } => crate::EngineError::Internal(e.to_string()),
        }
    }
}
