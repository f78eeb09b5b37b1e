//! RavenDB's time-series segment (`TimeSeriesValuesSegment`), the blob a dump's `TimeSeries` item carries:
//! a run of entries of one series starting at the segment's baseline, at most 2048 bytes. Layout, all
//! integers little-endian (notes: /work/shared/ravendb-notes/dump-backup-timeseries.md section 5):
//!
//! `header 16 | summary 48 per value | tag table | bits header 8 | LZ4 part | raw bits`
//!
//! Entries are bit coded: a status bit (live/dead), the timestamp (31 bits for the first, then a
//! delta-of-delta prefix code), each value XOR'd with the column's previous one (Gorilla coding), then the
//! tag (same as before / none / an index into the tag table). Corvid writes version 1 segments whose
//! header state (previous timestamp, delta, values, block sizes, tag) is the encoder's final state, so
//! RavenDB can keep appending to them; it reads versions 0 and 1, compressed or not.

use corvid_storage::TimeSeriesEntry;

use super::bit_stream::{BitReader, BitWriter};
use super::lz4_block;

/// RavenDB's largest segment.
pub(crate) const MAX_SEGMENT_BYTES: usize = 2048;
const HEADER_BYTES: usize = 16;
const SUMMARY_BYTES: usize = 48;
const BITS_HEADER_BYTES: usize = 8;
const MAX_ENTRIES: usize = u16::MAX as usize;
const MAX_TAGS: usize = 127;
const MAX_VALUES: usize = 32;
const NO_TAG: u8 = u8::MAX;
/// The version Corvid writes: the XOR base follows live, non-NaN values only (RavenDB's `V50001`).
const VERSION: u8 = 1;
/// The low bits of the version byte are the version; the high ones flag duplicate timestamps.
const VERSION_MASK: u8 = 0x3F;
const FIRST_TIMESTAMP_BITS: usize = 31;
const LEADING_ZEROS_BITS: usize = 5;
const BLOCK_SIZE_BITS: usize = 6;
const MAX_LEADING_ZEROS: u32 = (1 << LEADING_ZEROS_BITS) - 1;
/// Delta-of-delta classes: prefix code (value, length) and the bits of the field after it.
const TIMESTAMP_CLASSES: [(u64, usize, usize); 4] = [(0b10, 2, 7), (0b110, 3, 9), (0b1110, 4, 12), (0b1111, 4, 32)];

/// One entry read from a segment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SegmentEntry {
    /// Unix milliseconds.
    pub timestamp: i64,
    /// The values, trailing NaN (absent) values dropped.
    pub values: Vec<f64>,
    pub tag: Option<String>,
    /// False for a dead entry (a deleted value RavenDB keeps for replication).
    pub live: bool,
}

/// Why a segment cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("corrupt time-series segment: {0}")]
pub(crate) struct SegmentError(pub String);

fn corrupt(what: impl Into<String>) -> SegmentError {
    SegmentError(what.into())
}

/// One column's running summary and encoder state.
#[derive(Debug, Clone, Copy)]
struct Column {
    first: f64,
    previous: u64,
    max: f64,
    min: f64,
    sum: f64,
    count: i32,
    leading: u8,
    trailing: u8,
}

impl Column {
    fn new() -> Column {
        Column { first: f64::NAN, previous: 0, max: f64::NAN, min: f64::NAN, sum: 0.0, count: 0, leading: 0, trailing: 0 }
    }
}

/// A stored tag as RavenDB keeps strings: 7-bit varint length, UTF-8 bytes, then the positions of the
/// characters JSON must escape (a count and the distance from the previous one, as varints).
fn stored_tag(tag: &str) -> Vec<u8> {
    let bytes = tag.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + 3);
    push_varint(&mut out, bytes.len() as u64);
    out.extend_from_slice(bytes);
    let mut escapes = Vec::new();
    let mut last = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'"' || b == b'\\' || b < 0x20 {
            escapes.push((i - last) as u64);
            last = i + 1;
        }
    }
    push_varint(&mut out, escapes.len() as u64);
    for e in escapes {
        push_varint(&mut out, e);
    }
    out
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The string of a stored tag.
fn read_stored_tag(stored: &[u8]) -> Result<String, SegmentError> {
    let (mut len, mut shift, mut i) = (0usize, 0, 0);
    loop {
        let b = *stored.get(i).ok_or_else(|| corrupt("a tag's length is cut short"))?;
        i += 1;
        len |= usize::from(b & 0x7F) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
        if shift > 28 {
            return Err(corrupt("a tag's length is not a number"));
        }
    }
    let bytes = stored.get(i..i + len).ok_or_else(|| corrupt("a tag is longer than its slot in the tag table"))?;
    String::from_utf8(bytes.to_vec()).map_err(|_| corrupt("a tag is not UTF-8"))
}

/// Builds one segment entry by entry.
struct SegmentBuilder {
    baseline: i64,
    columns: Vec<Column>,
    tags: Vec<Vec<u8>>,
    bits: BitWriter,
    entries: usize,
    previous_timestamp: i32,
    previous_delta: i32,
    previous_tag: u8,
}

/// The builder's state before an entry, to undo an entry that does not fit.
struct Undo {
    columns: Vec<Column>,
    tags: usize,
    bits: usize,
    previous_timestamp: i32,
    previous_delta: i32,
    previous_tag: u8,
}

impl SegmentBuilder {
    fn new(baseline: i64, values: usize) -> SegmentBuilder {
        SegmentBuilder {
            baseline,
            columns: vec![Column::new(); values],
            tags: Vec::new(),
            bits: BitWriter::default(),
            entries: 0,
            previous_timestamp: 0,
            previous_delta: 0,
            previous_tag: NO_TAG,
        }
    }

    fn tags_size(&self) -> usize {
        self.tags.iter().map(|t| t.len() + 1).sum::<usize>() + 1
    }

    fn size(&self) -> usize {
        HEADER_BYTES + SUMMARY_BYTES * self.columns.len() + self.tags_size() + BITS_HEADER_BYTES + self.bits.bytes().len()
    }

    /// Adds the entry; false (and nothing changed) when it does not fit in this segment.
    fn try_append(&mut self, entry: &TimeSeriesEntry, tag: Option<&[u8]>) -> bool {
        let Some(offset) = entry.timestamp.checked_sub(self.baseline).and_then(|o| i32::try_from(o).ok()) else { return false };
        if offset < 0 || self.entries >= MAX_ENTRIES || entry.values.len() > self.columns.len() {
            return false;
        }
        let undo = Undo {
            columns: self.columns.clone(),
            tags: self.tags.len(),
            bits: self.bits.len(),
            previous_timestamp: self.previous_timestamp,
            previous_delta: self.previous_delta,
            previous_tag: self.previous_tag,
        };
        self.bits.write(0, 1); // live
        self.timestamp(offset);
        for i in 0..self.columns.len() {
            let value = entry.values.get(i).copied().unwrap_or(f64::NAN);
            self.value(i, value);
        }
        let fits = self.tag(tag) && self.size() <= MAX_SEGMENT_BYTES;
        if !fits {
            self.columns = undo.columns;
            self.tags.truncate(undo.tags);
            self.bits.truncate(undo.bits);
            self.previous_timestamp = undo.previous_timestamp;
            self.previous_delta = undo.previous_delta;
            self.previous_tag = undo.previous_tag;
            return false;
        }
        self.entries += 1;
        true
    }

    fn timestamp(&mut self, offset: i32) {
        if self.entries == 0 {
            self.bits.write(offset as u64, FIRST_TIMESTAMP_BITS);
            self.previous_delta = 0;
        } else {
            let delta = offset - self.previous_timestamp;
            let mut delta_of_delta = i64::from(delta) - i64::from(self.previous_delta);
            if delta_of_delta == 0 {
                self.bits.write(0, 1);
            } else {
                if delta_of_delta > 0 {
                    delta_of_delta -= 1; // zero is never coded in a field
                }
                for (prefix, prefix_bits, field_bits) in TIMESTAMP_CLASSES {
                    let bound = 1i64 << (field_bits - 1);
                    if delta_of_delta.abs() < bound {
                        self.bits.write(prefix, prefix_bits);
                        self.bits.write((delta_of_delta + bound) as u64, field_bits);
                        break;
                    }
                }
            }
            self.previous_delta = delta;
        }
        self.previous_timestamp = offset;
    }

    fn value(&mut self, i: usize, value: f64) {
        let column = &mut self.columns[i];
        let bits = value.to_bits();
        let xor = column.previous ^ bits;
        if !value.is_nan() {
            column.previous = bits;
            if column.first.is_nan() {
                column.first = value;
            }
            column.count += 1;
            column.sum += value;
            column.max = if column.max.is_nan() { value } else { column.max.max(value) };
            column.min = if column.min.is_nan() { value } else { column.min.min(value) };
        }
        if xor == 0 {
            self.bits.write(0, 1);
            return;
        }
        self.bits.write(1, 1);
        let leading = xor.leading_zeros().min(MAX_LEADING_ZEROS);
        // RavenDB counts trailing zero *bytes* here and uses the count as bits; kept for identical state.
        let trailing = xor.trailing_zeros() / 8;
        let useful = 64 - leading - trailing;
        let previous_useful = 64 - u32::from(column.leading) - u32::from(column.trailing);
        if leading >= u32::from(column.leading)
            && trailing >= u32::from(column.trailing)
            && previous_useful < LEADING_ZEROS_BITS as u32 + BLOCK_SIZE_BITS as u32 + useful
        {
            self.bits.write(1, 1);
            self.bits.write(xor >> column.trailing, previous_useful as usize);
        } else {
            self.bits.write(0, 1);
            self.bits.write(u64::from(leading), LEADING_ZEROS_BITS);
            self.bits.write(u64::from(useful - 1), BLOCK_SIZE_BITS);
            self.bits.write(xor >> trailing, useful as usize);
            column.leading = leading as u8;
            column.trailing = trailing as u8;
        }
    }

    /// Writes the entry's tag reference; false when the table is full.
    fn tag(&mut self, tag: Option<&[u8]>) -> bool {
        let index = match tag {
            None => NO_TAG,
            Some(stored) => match self.tags.iter().position(|t| t == stored) {
                Some(i) => i as u8,
                None if self.tags.len() >= MAX_TAGS => return false,
                None => {
                    self.tags.push(stored.to_vec());
                    (self.tags.len() - 1) as u8
                }
            },
        };
        if index == self.previous_tag {
            self.bits.write(0, 1);
        } else if index == NO_TAG {
            self.bits.write(0b10, 2);
        } else {
            self.bits.write(0b11, 2);
            self.bits.write(u64::from(index), 7);
        }
        self.previous_tag = index;
        true
    }

    fn finish(self) -> (i64, Vec<u8>) {
        let mut out = Vec::with_capacity(self.size());
        out.extend_from_slice(&self.previous_timestamp.to_le_bytes());
        out.extend_from_slice(&self.previous_delta.to_le_bytes());
        out.extend_from_slice(&(self.entries as u16).to_le_bytes());
        out.extend_from_slice(&(self.tags_size() as u16).to_le_bytes());
        out.extend_from_slice(&[self.previous_tag, self.columns.len() as u8, VERSION, 0]);
        for c in &self.columns {
            // A column without values keeps RavenDB's zeroed summary.
            let or_zero = |v: f64| if v.is_nan() { 0.0 } else { v };
            out.extend_from_slice(&or_zero(c.first).to_le_bytes());
            out.extend_from_slice(&c.previous.to_le_bytes());
            out.extend_from_slice(&or_zero(c.max).to_le_bytes());
            out.extend_from_slice(&or_zero(c.min).to_le_bytes());
            out.extend_from_slice(&c.sum.to_le_bytes());
            out.extend_from_slice(&c.count.to_le_bytes());
            out.extend_from_slice(&[c.leading, c.trailing, 0, 0]);
        }
        for t in &self.tags {
            out.extend_from_slice(t);
        }
        out.extend(self.tags.iter().map(|t| t.len() as u8));
        out.push(self.tags.len() as u8);
        out.extend_from_slice(&(self.bits.len() as i32).to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]); // not compressed
        out.extend_from_slice(self.bits.bytes());
        (self.baseline, out)
    }
}

/// Why entries cannot be written as segments.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum EncodeError {
    #[error("the tag '{0}' is longer than the 255 bytes a segment can hold")]
    TagTooLong(String),
    #[error("an entry has {0} values; a segment holds 1 to 32")]
    ValueCount(usize),
}

/// Cuts a series' entries (timestamp order, one per timestamp) into segments, handing each one
/// (baseline in unix milliseconds, bytes) to `emit` as soon as it is full.
pub(crate) struct SegmentEncoder {
    current: Option<SegmentBuilder>,
}

impl SegmentEncoder {
    pub fn new() -> SegmentEncoder {
        SegmentEncoder { current: None }
    }

    /// Adds one entry; returns the segment it closed, if any.
    pub fn push(&mut self, entry: &TimeSeriesEntry) -> Result<Option<(i64, Vec<u8>)>, EncodeError> {
        if entry.values.is_empty() || entry.values.len() > MAX_VALUES {
            return Err(EncodeError::ValueCount(entry.values.len()));
        }
        let tag = match &entry.tag {
            Some(t) => {
                let stored = stored_tag(t);
                if stored.len() > usize::from(u8::MAX) {
                    return Err(EncodeError::TagTooLong(t.clone()));
                }
                Some(stored)
            }
            None => None,
        };
        if let Some(builder) = &mut self.current {
            if builder.try_append(entry, tag.as_deref()) {
                return Ok(None);
            }
        }
        let mut fresh = SegmentBuilder::new(entry.timestamp, entry.values.len());
        let appended = fresh.try_append(entry, tag.as_deref());
        debug_assert!(appended, "one entry always fits an empty segment");
        Ok(self.current.replace(fresh).map(SegmentBuilder::finish))
    }

    /// The last segment, if any entry is in it.
    pub fn finish(self) -> Option<(i64, Vec<u8>)> {
        self.current.map(SegmentBuilder::finish)
    }
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The length a segment's header says it has (what `@raven-blob-size` must be), or why it cannot say.
pub(crate) fn stated_length(bytes: &[u8]) -> Result<usize, SegmentError> {
    if bytes.len() < HEADER_BYTES {
        return Err(corrupt(format!("{} bytes is shorter than a segment's header", bytes.len())));
    }
    let values = usize::from(bytes[13]);
    if values == 0 || values > MAX_VALUES {
        return Err(corrupt(format!("the header says {values} values per entry (1 to 32)")));
    }
    let bits_at = HEADER_BYTES + SUMMARY_BYTES * values + usize::from(le_u16(bytes, 10));
    if bytes.len() < bits_at + BITS_HEADER_BYTES {
        return Err(corrupt("the segment ends inside its tag table or bits header"));
    }
    let raw_bits = le_i32(bytes, bits_at);
    if raw_bits < 0 {
        return Err(corrupt("the bits header has a negative length"));
    }
    Ok(bits_at + BITS_HEADER_BYTES + usize::from(le_u16(bytes, bits_at + 4)) + (raw_bits as usize).div_ceil(8))
}

/// The entries of a segment starting at `baseline` (unix milliseconds), dead ones included.
pub(crate) fn decode(baseline: i64, bytes: &[u8]) -> Result<Vec<SegmentEntry>, SegmentError> {
    let length = stated_length(bytes)?;
    if bytes.len() < length {
        return Err(corrupt(format!("the header says {length} bytes, the segment has {}", bytes.len())));
    }
    let entries = usize::from(le_u16(bytes, 8));
    let size_of_tags = usize::from(le_u16(bytes, 10));
    let values = usize::from(bytes[13]);
    let version = bytes[14] & VERSION_MASK;
    let tags_at = HEADER_BYTES + SUMMARY_BYTES * values;
    let tags = tag_table(&bytes[tags_at..tags_at + size_of_tags])?;
    let bits_at = tags_at + size_of_tags;
    let raw_bits = le_i32(bytes, bits_at) as usize;
    let compressed = usize::from(le_u16(bytes, bits_at + 4));
    let inflated = usize::from(le_u16(bytes, bits_at + 6));
    let data_at = bits_at + BITS_HEADER_BYTES;
    let (stream, bit_count) = if compressed > 0 {
        let mut stream = lz4_block::decompress(&bytes[data_at..data_at + compressed], inflated).map_err(corrupt)?;
        stream.extend_from_slice(&bytes[data_at + compressed..length]);
        (stream, inflated * 8 + raw_bits)
    } else {
        (bytes[data_at..length].to_vec(), raw_bits)
    };
    let mut reader = BitReader::new(&stream, bit_count);
    let cut = |reader: &BitReader<'_>, n: usize| corrupt(format!("entry #{n} is cut short at bit {}", reader.position()));
    let mut out = Vec::with_capacity(entries);
    let mut columns = vec![0u64; values];
    let mut blocks = vec![(0u32, 0u32); values];
    let mut current = vec![0u64; values];
    let (mut timestamp, mut delta) = (0i64, 0i64);
    let mut tag: Option<usize> = None;
    while reader.has_more() {
        let n = out.len();
        let live = reader.read(1).ok_or_else(|| cut(&reader, n))? == 0;
        if n == 0 {
            timestamp = reader.read(FIRST_TIMESTAMP_BITS).ok_or_else(|| cut(&reader, n))? as i64;
            delta = 0;
        } else {
            let class = reader.ones_before_zero(4).ok_or_else(|| cut(&reader, n))?;
            if class > 0 {
                let field_bits = TIMESTAMP_CLASSES[class - 1].2;
                let mut d = reader.read(field_bits).ok_or_else(|| cut(&reader, n))? as i64 - (1i64 << (field_bits - 1));
                if d >= 0 {
                    d += 1;
                }
                delta += d;
            }
            timestamp += delta;
        }
        for i in 0..values {
            if reader.read(1).ok_or_else(|| cut(&reader, n))? == 0 {
                current[i] = columns[i];
                continue;
            }
            let xor = if reader.read(1).ok_or_else(|| cut(&reader, n))? == 1 {
                let (leading, trailing) = blocks[i];
                let width = 64u32.checked_sub(leading + trailing).ok_or_else(|| corrupt(format!("entry #{n} has a bad block")))?;
                reader.read(width as usize).ok_or_else(|| cut(&reader, n))? << trailing
            } else {
                let leading = reader.read(LEADING_ZEROS_BITS).ok_or_else(|| cut(&reader, n))? as u32;
                let size = reader.read(BLOCK_SIZE_BITS).ok_or_else(|| cut(&reader, n))? as u32 + 1;
                let trailing = 64u32.checked_sub(size + leading).ok_or_else(|| corrupt(format!("entry #{n} has a block past 64 bits")))?;
                blocks[i] = (leading, trailing);
                // `size` is at least 1, so `trailing` is at most 63.
                reader.read(size as usize).ok_or_else(|| cut(&reader, n))? << trailing
            };
            current[i] = columns[i] ^ xor;
            // Version 0 bases the next XOR on every value; version 1 on live, present values only.
            if version == 0 || (live && !f64::from_bits(current[i]).is_nan()) {
                columns[i] = current[i];
            }
        }
        if reader.read(1).ok_or_else(|| cut(&reader, n))? == 1 {
            tag = if reader.read(1).ok_or_else(|| cut(&reader, n))? == 0 {
                None
            } else {
                let index = reader.read(7).ok_or_else(|| cut(&reader, n))? as usize;
                if index >= tags.len() {
                    return Err(corrupt(format!("entry #{n} names tag {index} of a table of {}", tags.len())));
                }
                Some(index)
            };
        }
        let mut entry_values: Vec<f64> = current.iter().map(|&b| f64::from_bits(b)).collect();
        while entry_values.last().is_some_and(|v| v.is_nan()) {
            entry_values.pop();
        }
        let at = baseline.checked_add(timestamp).ok_or_else(|| corrupt(format!("entry #{n} has a timestamp out of range")))?;
        // Version 0 segments may repeat a timestamp; RavenDB reads the first.
        if version == 0 && out.last().is_some_and(|e: &SegmentEntry| e.timestamp == at) {
            continue;
        }
        out.push(SegmentEntry { timestamp: at, values: entry_values, tag: tag.map(|i| tags[i].clone()), live });
    }
    Ok(out)
}

/// The tags of a segment's tag table, in index order.
fn tag_table(table: &[u8]) -> Result<Vec<String>, SegmentError> {
    let Some((&count, rest)) = table.split_last() else { return Err(corrupt("the tag table is empty")) };
    let count = usize::from(count);
    if rest.len() < count {
        return Err(corrupt(format!("the tag table names {count} tags and has {} bytes", table.len())));
    }
    let (stored, lengths) = rest.split_at(rest.len() - count);
    let mut tags = Vec::with_capacity(count);
    let mut at = 0;
    for &len in lengths {
        let slot = stored.get(at..at + usize::from(len)).ok_or_else(|| corrupt("a tag passes the tag table's end"))?;
        tags.push(read_stored_tag(slot)?);
        at += usize::from(len);
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(timestamp: i64, values: &[f64], tag: Option<&str>) -> TimeSeriesEntry {
        TimeSeriesEntry { timestamp, values: values.to_vec(), tag: tag.map(str::to_owned) }
    }

    fn encode_all(entries: &[TimeSeriesEntry]) -> Vec<(i64, Vec<u8>)> {
        let mut encoder = SegmentEncoder::new();
        let mut out: Vec<_> = entries.iter().filter_map(|e| encoder.push(e).unwrap()).collect();
        out.extend(encoder.finish());
        out
    }

    fn decode_all(segments: &[(i64, Vec<u8>)]) -> Vec<TimeSeriesEntry> {
        segments
            .iter()
            .flat_map(|(baseline, bytes)| {
                assert!(bytes.len() <= MAX_SEGMENT_BYTES);
                assert_eq!(stated_length(bytes).unwrap(), bytes.len());
                decode(*baseline, bytes).unwrap()
            })
            .map(|e| {
                assert!(e.live);
                TimeSeriesEntry { timestamp: e.timestamp, values: e.values, tag: e.tag }
            })
            .collect()
    }

    #[test]
    fn round_trips_values_tags_and_long_series() {
        let base = 1_700_000_000_000i64;
        let mut entries = Vec::new();
        let mut t = base;
        for i in 0..20_000i64 {
            // Irregular steps (every delta-of-delta class), values that repeat, jump and go negative.
            t += [1000, 1000, 1001, 7, 300_000, 86_400_000, 1][(i % 7) as usize];
            let values: Vec<f64> = match i % 5 {
                0 => vec![72.0],
                1 => vec![72.0, -3.25, 1e300],
                2 => vec![f64::MIN_POSITIVE, (i as f64).sqrt()],
                _ => vec![i as f64 * 0.1, 0.0, -0.0, 5.5],
            };
            let tag = match i % 4 {
                0 => None,
                1 => Some("watches/fitbit"),
                2 => Some("say \"hi\"\\ ⭐"),
                _ => Some(["t0", "t1", "t2", "t3", "t4", "t5"][(i % 6) as usize]),
            };
            entries.push(entry(t, &values, tag));
        }
        // Baselines more than 24.8 days apart start a new segment.
        entries.push(entry(t + (1 << 31) + 5, &[1.0], None));
        let segments = encode_all(&entries);
        assert!(segments.len() > 10);
        assert_eq!(decode_all(&segments), entries);
    }

    #[test]
    fn header_and_summary_hold_the_final_state() {
        let base = 1_000_000;
        let segments = encode_all(&[
            entry(base, &[1.5, 10.0], None),
            entry(base + 60_000, &[2.5], Some("a")),
            entry(base + 120_000, &[0.5, 4.0], Some("a")),
        ]);
        assert_eq!(segments.len(), 1);
        let (baseline, b) = &segments[0];
        assert_eq!(*baseline, base);
        assert_eq!(le_i32(b, 0), 120_000, "PreviousTimestamp");
        assert_eq!(le_i32(b, 4), 60_000, "PreviousDelta");
        assert_eq!(le_u16(b, 8), 3, "NumberOfEntries");
        assert_eq!(le_u16(b, 10), 1 + 2 + 1 + 1, "SizeOfTags: the stored tag, its length, the count");
        assert_eq!((b[12], b[13], b[14]), (0, 2, VERSION));
        let f64_at = |at: usize| f64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        let column0 = HEADER_BYTES;
        assert_eq!(
            (f64_at(column0), f64_at(column0 + 8), f64_at(column0 + 16), f64_at(column0 + 24), f64_at(column0 + 32)),
            (1.5, 0.5, 2.5, 0.5, 4.5)
        );
        assert_eq!(le_i32(b, column0 + 40), 3);
        let column1 = HEADER_BYTES + SUMMARY_BYTES;
        assert_eq!((f64_at(column1 + 8), f64_at(column1 + 32), le_i32(b, column1 + 40)), (4.0, 14.0, 2), "the absent value does not count");
        let tags = HEADER_BYTES + 2 * SUMMARY_BYTES;
        assert_eq!(&b[tags..tags + 5], &[1, b'a', 0, 3, 1]);
    }

    /// A segment built by hand from RavenDB's description: one value, entries at 0, +1 day (a 32-bit
    /// delta-of-delta field), +1 day (same delta: `0`), value 84.76 then unchanged then 83.75, tags
    /// `employees/1-A`, then the same, then none.
    #[test]
    fn reads_a_segment_built_from_ravendbs_format() {
        let day = 86_400_000u64;
        let a = 84.76f64.to_bits();
        let b = 83.75f64.to_bits();
        let mut bits = BitWriter::default();
        // Entry 0: live, offset 0, `1 1` + 64 raw bits (the block of a fresh column is 0/0), new tag 0.
        bits.write(0, 1);
        bits.write(0, 31);
        bits.write(0b11, 2);
        bits.write(a, 64);
        bits.write(0b11, 2);
        bits.write(0, 7);
        // Entry 1: live, `1111` + 32-bit field (d - 1 + 2^31), value unchanged `0`, same tag `0`.
        bits.write(0, 1);
        bits.write(0b1111, 4);
        bits.write(day - 1 + (1 << 31), 32);
        bits.write(0, 1);
        bits.write(0, 1);
        // Entry 2 (dead): same delta `0`, a new block `1 0` + lead + size-1 + block, no tag `1 0`.
        bits.write(1, 1);
        bits.write(0, 1);
        let xor = a ^ b;
        let lead = xor.leading_zeros().min(31) as u64;
        let trail = xor.trailing_zeros() as u64;
        let size = 64 - lead - trail;
        bits.write(0b10, 2);
        bits.write(lead, 5);
        bits.write(size - 1, 6);
        bits.write(xor >> trail, size as usize);
        bits.write(0b10, 2);
        let tag = b"\x0demployees/1-A\x00";
        let mut seg = Vec::new();
        seg.extend_from_slice(&(2 * day as i32).to_le_bytes());
        seg.extend_from_slice(&(day as i32).to_le_bytes());
        seg.extend_from_slice(&3u16.to_le_bytes());
        seg.extend_from_slice(&((tag.len() + 2) as u16).to_le_bytes());
        seg.extend_from_slice(&[NO_TAG, 1, 0, 0]);
        seg.extend_from_slice(&[0u8; SUMMARY_BYTES]);
        seg.extend_from_slice(tag);
        seg.extend_from_slice(&[tag.len() as u8, 1]);
        seg.extend_from_slice(&(bits.len() as i32).to_le_bytes());
        seg.extend_from_slice(&[0, 0, 0, 0]);
        seg.extend_from_slice(bits.bytes());
        assert_eq!(stated_length(&seg).unwrap(), seg.len());
        let base = 1_576_540_800_000; // 2019-12-17
        let got = decode(base, &seg).unwrap();
        let t = Some("employees/1-A".to_owned());
        assert_eq!(
            got,
            vec![
                SegmentEntry { timestamp: base, values: vec![84.76], tag: t.clone(), live: true },
                SegmentEntry { timestamp: base + day as i64, values: vec![84.76], tag: t, live: true },
                SegmentEntry { timestamp: base + 2 * day as i64, values: vec![83.75], tag: None, live: false },
            ]
        );
        // Cut short, or pointing past the tag table: errors, never panics.
        for len in 0..seg.len() {
            assert!(decode(base, &seg[..len]).is_err(), "{len} bytes");
        }
        let mut bad = seg.clone();
        bad[13] = 40;
        assert!(decode(base, &bad).is_err(), "more than 32 values");
    }

    #[test]
    fn reads_a_compressed_segment() {
        let base = 0;
        let (_, plain) = encode_all(&[entry(base, &[1.0], None), entry(base + 10, &[2.0], None), entry(base + 20, &[2.0], None)]).remove(0);
        let bits_at = HEADER_BYTES + SUMMARY_BYTES + 1;
        let raw_bits = le_i32(&plain, bits_at) as usize;
        let data = &plain[bits_at + BITS_HEADER_BYTES..];
        // Move the first two whole bytes into an LZ4 block of literals only.
        let mut seg = plain[..bits_at].to_vec();
        seg.extend_from_slice(&((raw_bits - 16) as i32).to_le_bytes());
        seg.extend_from_slice(&3u16.to_le_bytes());
        seg.extend_from_slice(&2u16.to_le_bytes());
        seg.extend_from_slice(&[0x20, data[0], data[1]]);
        seg.extend_from_slice(&data[2..]);
        assert_eq!(decode(base, &seg).unwrap(), decode(base, &plain).unwrap());
    }
}
