//! The byte format of one time-series segment: a run of entries of one series, in timestamp order, delta and
//! XOR compressed. This module is the only one that knows the format (an export to RavenDB's own segment
//! encoding would sit beside it). Layout (docs/storage-format.md, "Time-series segments"):
//!
//! `version u8 | varint entries | varint tags | tags (varint length + UTF-8 each) | entries`
//!
//! Each entry starts with a flags byte: bit 0 = same timestamp step as the previous entry (no timestamp
//! field), bit 1 = same number of values (no count field), bit 2 = same tag (no tag field). Then, when
//! present: the step's change (zig-zag varint of delta-of-delta milliseconds; the first entry is at the
//! segment start with step 0), the value count (varint), the tag (varint: 0 = none, i + 1 = tag i). Then each
//! value, XOR'd with the same column of the previous entry (0 for a new column): a control byte
//! (leading zero bytes << 4 | trailing zero bytes; `0x80` = unchanged) and the bytes between them.

use crate::StorageError;

/// The format version written in the first byte.
const VERSION: u8 = 1;
/// A segment stops growing past this many encoded bytes (two LMDB overflow pages with room for the header).
pub(crate) const MAX_SEGMENT_BYTES: usize = 8000;
/// ... or past this many entries, so decoding one for a small change stays cheap.
pub(crate) const MAX_SEGMENT_ENTRIES: usize = 4096;
/// RavenDB's limit on the values of one entry.
pub const MAX_VALUES: usize = 32;

const SAME_STEP: u8 = 1;
const SAME_COUNT: u8 = 2;
const SAME_TAG: u8 = 4;
const UNCHANGED: u8 = 0x80;

/// One entry of a time series: a timestamp (unix milliseconds), 1 to 32 values and an optional tag.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesEntry {
    /// Unix milliseconds (RavenDB keeps millisecond precision).
    pub timestamp: i64,
    /// The values, at most [`MAX_VALUES`].
    pub values: Vec<f64>,
    /// The tag, when the entry has one.
    pub tag: Option<String>,
}

/// Encodes entries into one segment, refusing an entry that would make it too large.
struct SegmentWriter {
    body: Vec<u8>,
    tags: Vec<String>,
    entries: usize,
    start: i64,
    previous_timestamp: i64,
    previous_step: i64,
    previous_values: [u64; MAX_VALUES],
    previous_count: usize,
    previous_tag: usize,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

impl SegmentWriter {
    fn new(start: i64) -> Self {
        SegmentWriter {
            body: Vec::with_capacity(1024),
            tags: Vec::new(),
            entries: 0,
            start,
            previous_timestamp: start,
            previous_step: 0,
            previous_values: [0; MAX_VALUES],
            previous_count: 0,
            previous_tag: 0,
        }
    }

    fn encoded_len(&self) -> usize {
        self.body.len() + self.tags.iter().map(|t| t.len() + 2).sum::<usize>() + 6
    }

    /// Appends `entry` (later than every entry so far); false, with nothing changed, when the segment is full.
    fn push(&mut self, entry: &TimeSeriesEntry) -> bool {
        if self.entries >= MAX_SEGMENT_ENTRIES {
            return false;
        }
        let (body_len, tags_len) = (self.body.len(), self.tags.len());
        let tag = match &entry.tag {
            None => 0,
            Some(t) => match self.tags.iter().position(|known| known == t) {
                Some(i) => i + 1,
                None => {
                    self.tags.push(t.clone());
                    self.tags.len()
                }
            },
        };
        let step = entry.timestamp - self.previous_timestamp;
        let step_change = step - self.previous_step;
        let mut flags = 0;
        if step_change == 0 {
            flags |= SAME_STEP;
        }
        if entry.values.len() == self.previous_count {
            flags |= SAME_COUNT;
        }
        if tag == self.previous_tag {
            flags |= SAME_TAG;
        }
        self.body.push(flags);
        if flags & SAME_STEP == 0 {
            put_varint(&mut self.body, zigzag(step_change));
        }
        if flags & SAME_COUNT == 0 {
            put_varint(&mut self.body, entry.values.len() as u64);
        }
        if flags & SAME_TAG == 0 {
            put_varint(&mut self.body, tag as u64);
        }
        let mut values = self.previous_values;
        for (i, value) in entry.values.iter().enumerate() {
            let bits = value.to_bits();
            let xor = bits ^ values[i];
            values[i] = bits;
            if xor == 0 {
                self.body.push(UNCHANGED);
                continue;
            }
            let lead = (xor.leading_zeros() / 8) as usize;
            let trail = (xor.trailing_zeros() / 8) as usize;
            self.body.push(((lead as u8) << 4) | trail as u8);
            self.body.extend_from_slice(&xor.to_be_bytes()[lead..8 - trail]);
        }
        if self.entries > 0 && self.encoded_len() > MAX_SEGMENT_BYTES {
            self.body.truncate(body_len);
            self.tags.truncate(tags_len);
            return false;
        }
        // Columns past this entry's count start again from 0, as the reader assumes.
        for v in values.iter_mut().skip(entry.values.len()) {
            *v = 0;
        }
        self.previous_values = values;
        self.previous_step = step;
        self.previous_timestamp = entry.timestamp;
        self.previous_count = entry.values.len();
        self.previous_tag = tag;
        self.entries += 1;
        true
    }

    fn finish(self) -> (i64, Vec<u8>) {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(VERSION);
        put_varint(&mut out, self.entries as u64);
        put_varint(&mut out, self.tags.len() as u64);
        for tag in &self.tags {
            put_varint(&mut out, tag.len() as u64);
            out.extend_from_slice(tag.as_bytes());
        }
        out.extend_from_slice(&self.body);
        (self.start, out)
    }
}

/// Encodes entries (strictly increasing timestamps) into as many segments as their size needs, each with its
/// start (the timestamp of its first entry).
pub(crate) fn encode_segments(entries: &[TimeSeriesEntry]) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut writer: Option<SegmentWriter> = None;
    for entry in entries {
        let current = writer.get_or_insert_with(|| SegmentWriter::new(entry.timestamp));
        if !current.push(entry) {
            let full = writer.take().expect("a writer is open");
            out.push(full.finish());
            let mut fresh = SegmentWriter::new(entry.timestamp);
            fresh.push(entry);
            writer = Some(fresh);
        }
    }
    out.extend(writer.map(SegmentWriter::finish));
    out
}

/// Reads fields from the front of a segment's bytes.
struct SegmentReader<'a> {
    bytes: &'a [u8],
}

impl SegmentReader<'_> {
    fn corrupted(what: &str) -> StorageError {
        StorageError::corrupted(crate::tables::TIME_SERIES, format!("segment is malformed: {what}"))
    }

    fn byte(&mut self) -> Result<u8, StorageError> {
        let (&b, rest) = self.bytes.split_first().ok_or_else(|| Self::corrupted("truncated"))?;
        self.bytes = rest;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, StorageError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Self::corrupted("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&[u8], StorageError> {
        if self.bytes.len() < n {
            return Err(Self::corrupted("truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
}

/// The number of entries of a segment, read from its header alone.
pub(crate) fn entry_count(bytes: &[u8]) -> Result<usize, StorageError> {
    let mut r = SegmentReader { bytes };
    if r.byte()? != VERSION {
        return Err(SegmentReader::corrupted("unknown version"));
    }
    Ok(r.varint()? as usize)
}

/// Decodes a segment that starts at `start` (its key's timestamp).
pub(crate) fn decode_segment(start: i64, bytes: &[u8]) -> Result<Vec<TimeSeriesEntry>, StorageError> {
    let mut r = SegmentReader { bytes };
    if r.byte()? != VERSION {
        return Err(SegmentReader::corrupted("unknown version"));
    }
    let count = r.varint()? as usize;
    let tag_count = r.varint()? as usize;
    let mut tags = Vec::with_capacity(tag_count.min(256));
    for _ in 0..tag_count {
        let len = r.varint()? as usize;
        let text = std::str::from_utf8(r.take(len)?).map_err(|_| SegmentReader::corrupted("tag is not UTF-8"))?;
        tags.push(text.to_owned());
    }
    let mut out = Vec::with_capacity(count.min(MAX_SEGMENT_ENTRIES));
    let (mut timestamp, mut step, mut values_count, mut tag) = (start, 0i64, 0usize, 0usize);
    let mut previous = [0u64; MAX_VALUES];
    for _ in 0..count {
        let flags = r.byte()?;
        if flags & SAME_STEP == 0 {
            step += unzigzag(r.varint()?);
        }
        if flags & SAME_COUNT == 0 {
            values_count = r.varint()? as usize;
            if values_count > MAX_VALUES {
                return Err(SegmentReader::corrupted("more than 32 values"));
            }
        }
        if flags & SAME_TAG == 0 {
            tag = r.varint()? as usize;
            if tag > tags.len() {
                return Err(SegmentReader::corrupted("tag index out of range"));
            }
        }
        timestamp += step;
        let mut values = Vec::with_capacity(values_count);
        for column in previous.iter_mut().take(values_count) {
            let control = r.byte()?;
            if control != UNCHANGED {
                let (lead, trail) = ((control >> 4) as usize, (control & 0x0F) as usize);
                if lead + trail > 8 {
                    return Err(SegmentReader::corrupted("bad value control byte"));
                }
                let mut be = [0u8; 8];
                be[lead..8 - trail].copy_from_slice(r.take(8 - lead - trail)?);
                *column ^= u64::from_be_bytes(be);
            }
            values.push(f64::from_bits(*column));
        }
        for column in previous.iter_mut().skip(values_count) {
            *column = 0;
        }
        out.push(TimeSeriesEntry { timestamp, values, tag: if tag == 0 { None } else { Some(tags[tag - 1].clone()) } });
    }
    if !r.bytes.is_empty() {
        return Err(SegmentReader::corrupted("bytes after the last entry"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(timestamp: i64, values: &[f64], tag: Option<&str>) -> TimeSeriesEntry {
        TimeSeriesEntry { timestamp, values: values.to_vec(), tag: tag.map(str::to_owned) }
    }

    #[test]
    fn entries_round_trip_with_tags_gaps_and_changing_counts() {
        let entries = vec![
            entry(-5_000, &[1.5], None),
            entry(55_000, &[1.5], Some("watches/1")),
            entry(115_000, &[2.25, -0.0], Some("watches/1")),
            entry(175_001, &[f64::MAX, 3.0, 1e-300], Some("watches/2")),
            entry(9_000_000_000, &[7.0], None),
        ];
        let segments = encode_segments(&entries);
        assert_eq!(segments.len(), 1);
        let (start, bytes) = &segments[0];
        assert_eq!(*start, -5_000);
        assert_eq!(entry_count(bytes).unwrap(), 5);
        let decoded = decode_segment(*start, bytes).unwrap();
        assert_eq!(decoded.len(), entries.len());
        for (a, b) in decoded.iter().zip(&entries) {
            assert_eq!(a.timestamp, b.timestamp);
            assert_eq!(a.tag, b.tag);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.values), bits(&b.values));
        }
    }

    #[test]
    fn regular_values_are_compact_and_large_runs_split() {
        let entries: Vec<_> = (0..20_000).map(|i| entry(i * 60_000, &[20.0 + f64::from(i as i32 % 7) * 0.5], None)).collect();
        let segments = encode_segments(&entries);
        assert!(segments.len() > 1);
        let bytes: usize = segments.iter().map(|(_, b)| b.len()).sum();
        assert!(bytes < entries.len() * 5, "{bytes} bytes for {} entries", entries.len());
        let mut decoded = Vec::new();
        for (start, b) in &segments {
            assert!(b.len() <= MAX_SEGMENT_BYTES);
            decoded.extend(decode_segment(*start, b).unwrap());
        }
        assert_eq!(decoded, entries);
    }

    #[test]
    fn truncated_segments_are_reported() {
        let (start, bytes) = encode_segments(&[entry(0, &[1.0, 2.0], Some("t"))]).remove(0);
        for cut in 0..bytes.len() {
            assert!(decode_segment(start, &bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
