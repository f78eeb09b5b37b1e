//! The byte encoding shared by every stored record: big-endian integers and length-prefixed UTF-8 strings.
//! A decoding error names the table the bytes came from.

use crate::StorageError;

/// Appends fields to a record's bytes.
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn str16(&mut self, s: &str) {
        self.0.extend_from_slice(&(s.len() as u16).to_be_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
    pub(crate) fn str32(&mut self, s: &str) {
        self.0.extend_from_slice(&(s.len() as u32).to_be_bytes());
        self.0.extend_from_slice(s.as_bytes());
    }
}

/// Takes fields from the front of a record's bytes.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) table: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], StorageError> {
        if self.bytes.len() < n {
            return Err(StorageError::corrupted(self.table, "record is truncated"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, StorageError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u16(&mut self) -> Result<u16, StorageError> {
        Ok(u16::from_be_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, StorageError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, StorageError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    pub(crate) fn string(&mut self, len: usize) -> Result<String, StorageError> {
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| StorageError::corrupted(self.table, "string is not UTF-8"))
    }
    pub(crate) fn str16(&mut self) -> Result<String, StorageError> {
        let len = self.u16()? as usize;
        self.string(len)
    }
    pub(crate) fn str32(&mut self) -> Result<String, StorageError> {
        let len = self.u32()? as usize;
        self.string(len)
    }
}
