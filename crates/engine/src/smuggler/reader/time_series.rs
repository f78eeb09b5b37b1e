//! The `TimeSeries` and `TimeSeriesDeletedRanges` sections: each segment read whole (RavenDB's are at most
//! 2048 bytes), decoded, and its live entries appended to the series in the import's batches; deleted
//! ranges are removed first. A segment that cannot be decoded stops the import with an error naming the
//! series and the segment; what was imported before it is made durable first, so it stays.

use std::io::BufRead;

use corvid_storage::TimeSeriesEntry;
use corvid_types::{format_date_ms, validate_name, NameKind};
use serde_json::Value;

use super::batch_writer::ImportItem;
use super::ImportRun;
use crate::smuggler::format::time_series_item::{parse_deleted_range, parse_header};
use crate::smuggler::format::time_series_segment::{self, SegmentEntry, MAX_SEGMENT_BYTES};
use crate::time_series::is_incremental;
use crate::EngineError;

/// A blob larger than this is not a segment: the dump is corrupt (RavenDB's segments are at most 2 KB).
const MAX_BLOB_BYTES: u64 = 64 * MAX_SEGMENT_BYTES as u64;

fn json_of(item: &[u8]) -> Result<Value, EngineError> {
    serde_json::from_slice(item).map_err(|e| EngineError::bad_request(format!("the item is not valid JSON: {e}")))
}

impl<R: BufRead> ImportRun<'_, '_, R> {
    /// Reads the `TimeSeries` section into the database.
    pub(super) fn time_series(&mut self, item: &mut Vec<u8>) -> Result<(), EngineError> {
        self.result.time_series.processed = true;
        while self.reader.next_item(item)? {
            self.item_index += 1;
            let header = parse_header(&json_of(item)?).map_err(EngineError::bad_request)?;
            let header = match header {
                Ok(header) => header,
                Err((size, why)) => {
                    self.reader.read_raw(size, |_| Ok(()))?;
                    self.result.time_series.skipped += 1;
                    self.result.note(format!("TimeSeries #{} was skipped: {why}", self.item_index));
                    continue;
                }
            };
            if header.blob_size > MAX_BLOB_BYTES {
                return Err(EngineError::bad_request(format!(
                    "the segment of time series '{}' of '{}' says it has {} bytes; a segment has at most {MAX_SEGMENT_BYTES}",
                    header.name, header.doc_id, header.blob_size
                )));
            }
            let mut blob = Vec::with_capacity(header.blob_size as usize);
            self.reader.read_raw(header.blob_size, |chunk| {
                blob.extend_from_slice(chunk);
                Ok(())
            })?;
            if !self.options.takes_collection(&header.collection) {
                self.result.time_series.skipped += 1;
                continue;
            }
            let decoded = match time_series_segment::decode(header.baseline, &blob) {
                Ok(decoded) => decoded,
                Err(e) => {
                    // What came before the bad segment stays imported.
                    self.writer.flush(&mut self.result)?;
                    return Err(EngineError::bad_request(format!(
                        "the segment of time series '{}' of '{}' starting at {} cannot be read ({e})",
                        header.name,
                        header.doc_id,
                        format_date_ms(header.baseline)
                    )));
                }
            };
            if let Err(e) = validate_name(NameKind::TimeSeries, &header.name) {
                self.result.time_series.errored += 1;
                self.result.note(format!("Time series '{}' of '{}' was skipped: {e}", header.name, header.doc_id));
                continue;
            }
            let (entries, left_out) = live_entries(decoded, is_incremental(&header.name));
            self.result.time_series.read += entries.len() as u64;
            if left_out > 0 {
                self.result.time_series.skipped += left_out;
            }
            if !entries.is_empty() {
                let bytes = blob.len();
                self.writer.push(ImportItem::TimeSeries { id: header.doc_id, name: header.name, entries }, bytes, &mut self.result)?;
            }
            self.advance()?;
        }
        Ok(())
    }

    /// Reads the `TimeSeriesDeletedRanges` section: each range is removed before later segments land.
    pub(super) fn time_series_deleted_ranges(&mut self, item: &mut Vec<u8>) -> Result<(), EngineError> {
        self.result.time_series.processed = true;
        while self.reader.next_item(item)? {
            self.item_index += 1;
            let range = parse_deleted_range(&json_of(item)?).map_err(EngineError::bad_request)?;
            self.writer.push(
                ImportItem::DeleteTimeSeries { id: range.doc_id, name: range.name, from: range.from, to: range.to },
                64,
                &mut self.result,
            )?;
            self.advance()?;
        }
        Ok(())
    }
}

/// The entries Corvid keeps of a segment, in order, and how many it left out: dead entries are gone, an
/// incremental series' entries of one timestamp (one per contributing database) are summed into one (Corvid
/// keeps a total per timestamp; it keeps the first one's tag), and an entry
/// with an absent value before a present one (Corvid has no absent values) is left out.
fn live_entries(decoded: Vec<SegmentEntry>, incremental: bool) -> (Vec<TimeSeriesEntry>, u64) {
    let mut out: Vec<TimeSeriesEntry> = Vec::with_capacity(decoded.len());
    let mut left_out = 0;
    for entry in decoded {
        if !entry.live {
            continue;
        }
        if entry.values.is_empty() || entry.values.iter().any(|v| v.is_nan()) {
            left_out += 1;
            continue;
        }
        match out.last_mut() {
            Some(last) if last.timestamp == entry.timestamp && incremental => {
                if last.values.len() < entry.values.len() {
                    last.values.resize(entry.values.len(), 0.0);
                }
                for (sum, v) in last.values.iter_mut().zip(&entry.values) {
                    *sum += v;
                }
            }
            Some(last) if last.timestamp == entry.timestamp => *last = to_entry(entry),
            _ => out.push(to_entry(entry)),
        }
    }
    (out, left_out)
}

fn to_entry(entry: SegmentEntry) -> TimeSeriesEntry {
    TimeSeriesEntry { timestamp: entry.timestamp, values: entry.values, tag: entry.tag }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(timestamp: i64, values: &[f64], tag: Option<&str>, live: bool) -> SegmentEntry {
        SegmentEntry { timestamp, values: values.to_vec(), tag: tag.map(str::to_owned), live }
    }

    #[test]
    fn keeps_live_entries_and_sums_incremental_ones() {
        let decoded = vec![
            seg(1, &[1.0], Some("TC:INC-a"), true),
            seg(1, &[2.0, 5.0], Some("TC:INC-b"), true),
            seg(2, &[9.0], None, false),
            seg(3, &[f64::NAN, 1.0], None, true),
            seg(4, &[4.0], None, true),
        ];
        let (entries, left_out) = live_entries(decoded.clone(), true);
        assert_eq!(left_out, 1);
        assert_eq!(entries.iter().map(|e| (e.timestamp, e.values.clone())).collect::<Vec<_>>(), vec![(1, vec![3.0, 5.0]), (4, vec![4.0])]);
        let (entries, _) = live_entries(decoded, false);
        assert_eq!(entries[0].values, vec![2.0, 5.0], "a plain series keeps the last entry of a timestamp");
    }
}
