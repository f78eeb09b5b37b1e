//! Export: one storage snapshot written as a dump, section by section, in RavenDB's order. Items are read
//! and written one at a time (attachment contents streamed from their files), so memory stays flat.

mod definitions;
mod documents;
pub(crate) mod dump_writer;
mod time_series;

use std::io::Write;

use corvid_storage::ReadTxn;

use super::format::chunk_pipe::PipeWriter;
use super::format::sections::{self, BUILD_VERSION};
use super::format::threaded::compress_on_thread;
use super::item_types::ItemType;
use super::options::ExportOptions;
use super::smuggler_result::SmugglerResult;
use super::transform::Transformer;
use crate::{Database, EngineError};
use dump_writer::DumpWriter;

/// Progress is reported after this many items.
const PROGRESS_EVERY: u64 = 1024;

/// Told the counts so far every [`PROGRESS_EVERY`] items and at each section's end; returns false to stop
/// the export (it then fails with `Cancelled`).
pub type Progress<'p> = &'p mut dyn FnMut(&SmugglerResult) -> bool;

/// What an export needs while it runs.
pub(crate) struct ExportRun<'a, 'p, W: Write> {
    pub db: &'a Database,
    pub txn: ReadTxn<'a>,
    pub options: &'a ExportOptions,
    pub out: DumpWriter<W>,
    pub result: SmugglerResult,
    /// The compiled `TransformScript`, run on every document written.
    pub transform: Option<Transformer>,
    progress: Progress<'p>,
    since_progress: u64,
}

impl<W: Write> ExportRun<'_, '_, W> {
    /// Counts one item written; reports progress now and then.
    pub fn advance(&mut self) -> Result<(), EngineError> {
        self.since_progress += 1;
        if self.since_progress >= PROGRESS_EVERY {
            self.report()?;
        }
        Ok(())
    }

    fn report(&mut self) -> Result<(), EngineError> {
        self.since_progress = 0;
        self.result.bytes = self.out.bytes;
        if (self.progress)(&self.result) {
            Ok(())
        } else {
            Err(EngineError::Cancelled)
        }
    }
}

pub(crate) fn io_error(e: std::io::Error) -> EngineError {
    EngineError::Internal(format!("writing the export failed: {e}"))
}

/// Writes the database as a dump into `out` (compressed as the options say, on a thread of its own) and
/// hands `out` back.
pub fn export<W: Write + Send>(
    db: &Database,
    options: &ExportOptions,
    out: W,
    progress: Progress<'_>,
) -> Result<(SmugglerResult, W), EngineError> {
    std::thread::scope(|scope| {
        let (pipe, compressor) = compress_on_thread(scope, out, options.compression).map_err(io_error)?;
        // The pipe is dropped when `write_dump` returns, which ends the compressed stream.
        let written = write_dump(db, options, pipe, progress);
        let compressed = compressor.join().unwrap_or_else(|_| Err(std::io::Error::other("the compressing thread panicked")));
        match (written, compressed) {
            (Ok(result), Ok(inner)) => Ok((result, inner)),
            // The compressor failing first (the destination gone) makes the writer fail too: its error says why.
            (_, Err(e)) => Err(io_error(e)),
            (Err(e), Ok(_)) => Err(e),
        }
    })
}

/// The dump's plain JSON, section by section, into `pipe`.
fn write_dump(db: &Database, options: &ExportOptions, pipe: PipeWriter, progress: Progress<'_>) -> Result<SmugglerResult, EngineError> {
    // Compiled first: a script that does not compile fails the export before a byte of it is written.
    let transform = options.transform.as_ref().map(Transformer::new).transpose()?;
    let txn = db.store.read()?;
    let writer = DumpWriter::begin(pipe, BUILD_VERSION).map_err(io_error)?;
    let result =
        SmugglerResult { last_etag: txn.last_etag()?, last_raft_index: txn.last_compare_exchange_index()?, ..SmugglerResult::default() };
    let mut run = ExportRun { db, txn, options, out: writer, result, transform, progress, since_progress: 0 };
    let types = options.types;
    if types.contains(ItemType::DatabaseRecord) {
        definitions::database_record(&mut run)?;
    }
    if types.contains(ItemType::Documents) {
        documents::documents(&mut run)?;
        run.report()?;
    }
    if types.contains(ItemType::RevisionDocuments) {
        documents::revisions(&mut run)?;
        run.report()?;
    }
    if types.contains(ItemType::Tombstones) {
        documents::tombstones(&mut run)?;
    }
    if types.contains(ItemType::Conflicts) {
        // One node keeps no conflicts; the section is written empty, as RavenDB writes it.
        run.out.begin_section(sections::CONFLICTS).map_err(io_error)?;
        run.out.end_section().map_err(io_error)?;
        run.result.conflicts.processed = true;
    }
    if types.contains(ItemType::Indexes) {
        definitions::indexes(&mut run)?;
    }
    if types.contains(ItemType::Identities) {
        definitions::identities(&mut run)?;
    }
    if types.contains(ItemType::CompareExchange) {
        definitions::compare_exchange(&mut run)?;
    }
    if types.contains(ItemType::CounterGroups) {
        documents::counter_groups(&mut run)?;
    }
    if types.contains(ItemType::Subscriptions) {
        definitions::subscriptions(&mut run)?;
    }
    if types.contains(ItemType::TimeSeries) {
        time_series::time_series(&mut run)?;
    }
    run.report()?;
    let ExportRun { out, mut result, .. } = run;
    result.bytes = out.bytes + 1;
    out.finish().map_err(io_error)?;
    Ok(result)
}
