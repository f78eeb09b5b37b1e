//! Walks a dump's JSON object without holding it: its properties one at a time, the items of an array
//! property one at a time, and the raw bytes that follow some items (attachment contents, blobs).

use std::io::BufRead;

use crate::json_stream::JsonArrayReader;
use crate::EngineError;

/// The value of one property of the dump's object.
pub(crate) enum SectionValue {
    /// An array: read its items with [`DumpReader::next_item`].
    Array,
    /// An object (`DatabaseRecord`), whole.
    Object(Vec<u8>),
    /// A number, string or literal (`BuildVersion`), whole.
    Scalar(Vec<u8>),
}

pub(crate) struct DumpReader<R> {
    inner: JsonArrayReader<R>,
    started: bool,
}

fn malformed(offset: u64, what: &str) -> EngineError {
    EngineError::bad_request(format!("Malformed dump at byte {offset}: {what}"))
}

impl<R: BufRead> DumpReader<R> {
    pub fn new(input: R) -> DumpReader<R> {
        DumpReader { inner: JsonArrayReader::labelled(input, "dump"), started: false }
    }

    /// Bytes of the decompressed dump read so far.
    pub fn offset(&self) -> u64 {
        self.inner.offset()
    }

    /// The next property's name and value; None after the object's closing brace.
    pub fn next_section(&mut self) -> Result<Option<(String, SectionValue)>, EngineError> {
        let mut token = self.inner.next_token()?;
        if !self.started {
            match token {
                Some(b'{') => self.started = true,
                None => return Err(malformed(self.offset(), "the dump is empty")),
                Some(_) => return Err(malformed(self.offset(), "a dump is a JSON object; it must start with '{'")),
            }
            token = self.inner.next_token()?;
        } else if token == Some(b',') {
            token = self.inner.next_token()?;
        }
        match token {
            Some(b'}') => return Ok(None),
            Some(b'"') => {}
            None => return Err(malformed(self.offset(), "the dump ends before its closing '}' (is the file truncated?)")),
            Some(other) => return Err(malformed(self.offset(), &format!("expected a section name, found '{}'", other as char))),
        }
        let mut name = vec![b'"'];
        self.inner.read_string_rest(&mut name)?;
        let name: String = serde_json::from_slice(&name).map_err(|e| malformed(self.offset(), &format!("bad section name: {e}")))?;
        if self.inner.next_token()? != Some(b':') {
            return Err(malformed(self.offset(), &format!("expected ':' after section name '{name}'")));
        }
        let value = match self.inner.next_token()? {
            Some(b'[') => {
                self.inner.begin_array();
                SectionValue::Array
            }
            Some(b'{') => {
                let mut object = vec![b'{'];
                self.inner.read_object_rest(&mut object)?;
                SectionValue::Object(object)
            }
            Some(b'"') => {
                let mut text = vec![b'"'];
                self.inner.read_string_rest(&mut text)?;
                SectionValue::Scalar(text)
            }
            Some(first) => {
                let mut scalar = vec![first];
                self.inner.read_scalar_rest(&mut scalar)?;
                SectionValue::Scalar(scalar)
            }
            None => return Err(malformed(self.offset(), &format!("the dump ends after section name '{name}'"))),
        };
        Ok(Some((name, value)))
    }

    /// The next item (an object) of the array being read; false at its end.
    pub fn next_item(&mut self, item: &mut Vec<u8>) -> Result<bool, EngineError> {
        self.inner.next_element(item)
    }

    /// The `len` raw bytes after the last item, piece by piece.
    pub fn read_raw(&mut self, len: u64, sink: impl FnMut(&[u8]) -> Result<(), EngineError>) -> Result<(), EngineError> {
        self.inner.read_raw(len, sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn walks_sections_items_and_raw_bytes() {
        let dump = br#"{"BuildVersion":70000,"DatabaseRecord":{"A":[1]},"Docs":[{"a":1}xy,{"b":"}"}],"Empty":[]}"#;
        for buffer in [1, 3, 4096] {
            let mut reader = DumpReader::new(BufReader::with_capacity(buffer, &dump[..]));
            let (name, value) = reader.next_section().unwrap().unwrap();
            assert!(name == "BuildVersion" && matches!(value, SectionValue::Scalar(ref v) if v == b"70000"));
            let (_, value) = reader.next_section().unwrap().unwrap();
            assert!(matches!(value, SectionValue::Object(_)));
            let (name, value) = reader.next_section().unwrap().unwrap();
            assert!(name == "Docs" && matches!(value, SectionValue::Array));
            let mut item = Vec::new();
            assert!(reader.next_item(&mut item).unwrap());
            let mut raw = Vec::new();
            reader
                .read_raw(2, |c| {
                    raw.extend_from_slice(c);
                    Ok(())
                })
                .unwrap();
            assert_eq!(raw, b"xy");
            assert!(reader.next_item(&mut item).unwrap());
            assert_eq!(item, br#"{"b":"}"}"#);
            assert!(!reader.next_item(&mut item).unwrap());
            let (name, _) = reader.next_section().unwrap().unwrap();
            assert_eq!(name, "Empty");
            assert!(!reader.next_item(&mut item).unwrap());
            assert!(reader.next_section().unwrap().is_none(), "buffer {buffer}");
        }
    }

    fn read_all(reader: &mut DumpReader<BufReader<&[u8]>>) -> Result<(), EngineError> {
        let mut item = Vec::new();
        while let Some((_, value)) = reader.next_section()? {
            if matches!(value, SectionValue::Array) {
                while reader.next_item(&mut item)? {}
            }
        }
        Ok(())
    }

    #[test]
    fn truncated_and_garbage_dumps_are_errors() {
        for bad in [&b""[..], b"garbage", br#"{"Docs":[{"a":1}"#, br#"{"Docs":[{"a":1}],"#, br#"{"Docs""#] {
            let mut reader = DumpReader::new(BufReader::new(bad));
            assert!(read_all(&mut reader).is_err(), "{:?} should fail", String::from_utf8_lossy(bad));
        }
    }
}
