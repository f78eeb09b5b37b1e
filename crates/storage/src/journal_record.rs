//! The byte layout of the write-ahead journal's records (docs/storage-format.md, "Journal"): a transaction
//! record holds the logical write set of one merged commit, a checkpoint record names the LMDB snapshot that
//! was flushed and carries its meta pages. Pure encoding; no I/O.

/// Bytes before a record's payload: length, checksum, file sequence, journal transaction id, kind.
pub(crate) const RECORD_HEADER_LEN: usize = 4 + 4 + 8 + 8 + 1;

const KIND_TRANSACTION: u8 = 1;
const KIND_CHECKPOINT: u8 = 2;
const OP_PUT: u8 = 1;
const OP_DELETE: u8 = 2;

/// One table write, as replayed at recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TableOp {
    /// `table[key] = value`.
    Put { table: String, key: Vec<u8>, value: Vec<u8> },
    /// Removes `table[key]` (absent is fine).
    Delete { table: String, key: Vec<u8> },
}

/// What a record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Record {
    /// The write set of journal transaction `id`, in the order the writes were made.
    Transaction { id: u64, ops: Vec<TableOp> },
    /// The data file was flushed at LMDB transaction `lmdb_txn`, which holds every journal transaction up to
    /// `covers`; `meta_pages` are the data file's first two pages (LMDB's meta pages) right after that flush.
    Checkpoint { covers: u64, lmdb_txn: u64, page_size: u32, meta_pages: Vec<u8> },
}

/// Appends the encoded ops of one transaction; a merged commit's record is its jobs' buffers back to back.
#[derive(Default)]
pub(crate) struct OpBuffer {
    pub bytes: Vec<u8>,
    pub count: u32,
}

impl OpBuffer {
    pub fn put(&mut self, table: &str, key: &[u8], value: &[u8]) {
        self.bytes.push(OP_PUT);
        push_name(&mut self.bytes, table);
        push_bytes(&mut self.bytes, key);
        push_bytes(&mut self.bytes, value);
        self.count += 1;
    }

    pub fn delete(&mut self, table: &str, key: &[u8]) {
        self.bytes.push(OP_DELETE);
        push_name(&mut self.bytes, table);
        push_bytes(&mut self.bytes, key);
        self.count += 1;
    }

    pub fn append(&mut self, other: &OpBuffer) {
        self.bytes.extend_from_slice(&other.bytes);
        self.count += other.count;
    }
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    // Table names are short constants (tables.rs).
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn frame(file_seq: u64, id: u64, kind: u8, payload_parts: &[&[u8]]) -> Vec<u8> {
    let payload_len: usize = payload_parts.iter().map(|p| p.len()).sum();
    let len = RECORD_HEADER_LEN + payload_len;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&file_seq.to_le_bytes());
    out.extend_from_slice(&id.to_le_bytes());
    out.push(kind);
    for part in payload_parts {
        out.extend_from_slice(part);
    }
    let crc = crc32fast::hash(&out[8..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A transaction record for `file_seq` (the file it is written to: records left in a recycled file from its
/// previous life carry another sequence and end the replay).
pub(crate) fn encode_transaction(file_seq: u64, id: u64, ops: &OpBuffer) -> Vec<u8> {
    frame(file_seq, id, KIND_TRANSACTION, &[&ops.count.to_le_bytes(), &ops.bytes])
}

/// A checkpoint record (see [`Record::Checkpoint`]).
pub(crate) fn encode_checkpoint(file_seq: u64, covers: u64, lmdb_txn: u64, page_size: u32, meta_pages: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(16);
    head.extend_from_slice(&lmdb_txn.to_le_bytes());
    head.extend_from_slice(&page_size.to_le_bytes());
    head.extend_from_slice(&(meta_pages.len() as u32).to_le_bytes());
    frame(file_seq, covers, KIND_CHECKPOINT, &[&head, meta_pages])
}

/// Why reading stopped at an offset: the normal end of the written part, or a record that was never
/// completely written (a torn write) or was damaged. Either way nothing after it was acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecordEnd {
    /// Zeros or too few bytes for a header: nothing was written here.
    Unwritten,
    /// The length runs past the end of the file.
    Truncated,
    /// The checksum does not match (torn or damaged).
    Checksum,
    /// A valid record of an earlier life of a recycled file.
    StaleFile,
    /// Checksum fine but the payload does not parse (written by another version).
    Malformed,
}

/// Decodes the record at the start of `bytes`, written to file `file_seq`; with its length.
pub(crate) fn decode(bytes: &[u8], file_seq: u64) -> Result<(Record, usize), RecordEnd> {
    if bytes.len() < RECORD_HEADER_LEN {
        return Err(RecordEnd::Unwritten);
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    if len == 0 {
        return Err(RecordEnd::Unwritten);
    }
    if len < RECORD_HEADER_LEN {
        return Err(RecordEnd::Checksum);
    }
    if len > bytes.len() {
        return Err(RecordEnd::Truncated);
    }
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if crc32fast::hash(&bytes[8..len]) != crc {
        return Err(RecordEnd::Checksum);
    }
    let seq = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    if seq != file_seq {
        return Err(RecordEnd::StaleFile);
    }
    let id = u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes"));
    let mut payload = Cursor { bytes: &bytes[RECORD_HEADER_LEN..len] };
    let record = match bytes[24] {
        KIND_TRANSACTION => decode_transaction(id, &mut payload),
        KIND_CHECKPOINT => decode_checkpoint(id, &mut payload),
        _ => None,
    };
    match record {
        Some(record) if payload.bytes.is_empty() => Ok((record, len)),
        _ => Err(RecordEnd::Malformed),
    }
}

fn decode_transaction(id: u64, c: &mut Cursor<'_>) -> Option<Record> {
    let count = c.u32()?;
    let mut ops = Vec::with_capacity((count as usize).min(1 << 16));
    for _ in 0..count {
        let op = c.take(1)?[0];
        let name_len = c.take(1)?[0] as usize;
        let table = String::from_utf8(c.take(name_len)?.to_vec()).ok()?;
        let key = c.sized()?.to_vec();
        ops.push(match op {
            OP_PUT => TableOp::Put { table, key, value: c.sized()?.to_vec() },
            OP_DELETE => TableOp::Delete { table, key },
            _ => return None,
        });
    }
    Some(Record::Transaction { id, ops })
}

fn decode_checkpoint(covers: u64, c: &mut Cursor<'_>) -> Option<Record> {
    let lmdb_txn = u64::from_le_bytes(c.take(8)?.try_into().ok()?);
    let page_size = c.u32()?;
    let meta_pages = c.sized()?.to_vec();
    Some(Record::Checkpoint { covers, lmdb_txn, page_size, meta_pages })
}

struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn sized(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_ops() -> OpBuffer {
        let mut ops = OpBuffer::default();
        ops.put("docs", b"users/1", b"{\"Name\":\"a\"}");
        ops.delete("docs_by_etag", &7u64.to_be_bytes());
        ops.put("meta", b"last_etag", &[]);
        ops
    }

    #[test]
    fn a_transaction_record_round_trips() {
        let bytes = encode_transaction(3, 42, &sample_ops());
        let (record, len) = decode(&bytes, 3).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!(
            record,
            Record::Transaction {
                id: 42,
                ops: vec![
                    TableOp::Put { table: "docs".into(), key: b"users/1".to_vec(), value: b"{\"Name\":\"a\"}".to_vec() },
                    TableOp::Delete { table: "docs_by_etag".into(), key: 7u64.to_be_bytes().to_vec() },
                    TableOp::Put { table: "meta".into(), key: b"last_etag".to_vec(), value: vec![] },
                ]
            }
        );
    }

    #[test]
    fn a_checkpoint_record_round_trips() {
        let bytes = encode_checkpoint(9, 100, 57, 4096, &[5u8; 8192]);
        let (record, _) = decode(&bytes, 9).unwrap();
        assert_eq!(record, Record::Checkpoint { covers: 100, lmdb_txn: 57, page_size: 4096, meta_pages: vec![5u8; 8192] });
    }

    #[test]
    fn every_torn_prefix_ends_the_replay() {
        let bytes = encode_transaction(1, 1, &sample_ops());
        for cut in 0..bytes.len() {
            let mut torn = bytes[..cut].to_vec();
            torn.resize(bytes.len() + 64, 0);
            if torn[..bytes.len()] == bytes[..] {
                continue; // the missing bytes were zeros: nothing was lost
            }
            let end = decode(&torn, 1).unwrap_err();
            assert!(matches!(end, RecordEnd::Unwritten | RecordEnd::Checksum), "cut at {cut}: {end:?}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 1], 1).unwrap_err(), RecordEnd::Truncated);
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let bytes = encode_transaction(1, 1, &sample_ops());
        for at in 4..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert_eq!(decode(&damaged, 1).unwrap_err(), RecordEnd::Checksum, "bit flipped at {at}");
        }
    }

    #[test]
    fn a_record_of_a_recycled_files_previous_life_is_stale() {
        let bytes = encode_transaction(1, 1, &sample_ops());
        assert_eq!(decode(&bytes, 2).unwrap_err(), RecordEnd::StaleFile);
        assert_eq!(decode(&[0u8; 64], 1).unwrap_err(), RecordEnd::Unwritten);
    }
}
