//! The `TimeSeries` section: every series of the documents exported, cut into RavenDB's segments (each a
//! header item followed by the segment's bytes). An incremental export (a backup after the first) writes
//! the series changed since its etag, each whole, after a `TimeSeriesDeletedRanges` item clearing the
//! series first, so replaying the chain also replays deleted entries and series.

use std::collections::HashSet;
use std::io::Write;

use corvid_storage::{flags, DocumentRecord, ItemKind};
use corvid_types::id_key;

use super::documents::{each_document, wanted};
use super::dump_writer::DumpWriter;
use super::{io_error, ExportRun};
use crate::smuggler::format::sections;
use crate::smuggler::format::time_series_item::{render_deleted_range, render_header, SegmentHeader};
use crate::smuggler::format::time_series_segment::SegmentEncoder;
use crate::EngineError;

/// (lower-cased document id, lower-cased series name).
type SeriesKey = (String, String);

/// Writes `TimeSeriesDeletedRanges` (incremental exports only) and `TimeSeries`.
pub(super) fn time_series<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.result.time_series.processed = true;
    let changed = if run.options.after_etag > 0 { Some(changed_series(run)?) } else { None };
    if let Some(changed) = &changed {
        deleted_ranges(run, changed)?;
    }
    run.out.begin_section(sections::TIME_SERIES).map_err(io_error)?;
    each_document(run, 0, |run, doc| {
        if doc.flags & flags::HAS_TIME_SERIES == 0 || !wanted(run, &doc) {
            return Ok(());
        }
        let key = id_key(&doc.id);
        for stats in run.txn.time_series_of(&key)? {
            if changed.as_ref().is_some_and(|c| !c.contains(&(key.clone(), id_key(&stats.name)))) {
                continue;
            }
            write_series(run, &doc, &stats.name)?;
        }
        run.advance()
    })?;
    run.out.end_section().map_err(io_error)
}

/// The series whose segments changed after the export's etag (the change log keeps one row per segment).
fn changed_series<W: Write>(run: &ExportRun<'_, '_, W>) -> Result<HashSet<SeriesKey>, EngineError> {
    let mut changed = HashSet::new();
    run.txn.item_changes_after(run.options.after_etag, |change| {
        if change.kind == ItemKind::TimeSeriesSegment {
            changed.insert((change.doc_key, change.name_lower));
        }
        true
    })?;
    Ok(changed)
}

/// One item per changed series of a document still there: the whole series goes before its new segments.
fn deleted_ranges<W: Write>(run: &mut ExportRun<'_, '_, W>, changed: &HashSet<SeriesKey>) -> Result<(), EngineError> {
    run.out.begin_section(sections::TIME_SERIES_DELETED_RANGES).map_err(io_error)?;
    let mut sorted: Vec<&SeriesKey> = changed.iter().collect();
    sorted.sort();
    for (doc_key, name_lower) in sorted {
        // A deleted document's tombstone removes its series.
        let Some(doc) = run.txn.document(doc_key)? else { continue };
        if !wanted(run, &doc) {
            continue;
        }
        let name = run.txn.time_series_stats(doc_key, name_lower)?.map_or_else(|| name_lower.clone(), |s| s.name);
        let item = render_deleted_range(&doc.id, &name, &doc.collection, &doc.change_vector);
        run.out.item(&item.to_string()).map_err(io_error)?;
    }
    run.out.end_section().map_err(io_error)
}

/// Streams one series' entries through the segment encoder, writing each segment as it fills.
fn write_series<W: Write>(run: &mut ExportRun<'_, '_, W>, doc: &DocumentRecord, name: &str) -> Result<(), EngineError> {
    let key = id_key(&doc.id);
    let txn = &run.txn;
    let out = &mut run.out;
    let result = &mut run.result;
    let mut encoder = SegmentEncoder::new();
    let mut failure = None;
    let write = |out: &mut DumpWriter<W>, (baseline, bytes): (i64, Vec<u8>)| -> std::io::Result<()> {
        let header = SegmentHeader {
            doc_id: doc.id.clone(),
            name: name.to_owned(),
            collection: doc.collection.clone(),
            change_vector: doc.change_vector.clone(),
            baseline,
            blob_size: bytes.len() as u64,
        };
        out.item(&render_header(&header).to_string())?;
        out.raw(&bytes)
    };
    txn.visit_time_series(&key, name, i64::MIN, i64::MAX, |entry| {
        match encoder.push(&entry) {
            Ok(closed) => {
                result.time_series.read += 1;
                if let Some(segment) = closed {
                    if let Err(e) = write(out, segment) {
                        failure = Some(e);
                        return false;
                    }
                }
            }
            Err(e) => {
                result.time_series.skipped += 1;
                result.note(format!("An entry of time series '{name}' of '{}' was not exported: {e}", doc.id));
            }
        }
        true
    })?;
    if let Some(e) = failure {
        return Err(io_error(e));
    }
    if let Some(segment) = encoder.finish() {
        write(out, segment).map_err(io_error)?;
    }
    Ok(())
}
