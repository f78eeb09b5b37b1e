//! Splits a streamed JSON array (`[{...}, {...}, ...]`) into its elements without holding the whole array:
//! the bulk-insert body can be gigabytes. Each element's bytes are handed out for `serde_json` to parse;
//! this reader only tracks nesting and strings to find where an element ends.

use std::io::{BufRead, ErrorKind};

use crate::EngineError;

/// Elements larger than this are refused (a single document, not the stream, is bounded).
pub const MAX_ELEMENT_BYTES: usize = 256 << 20;

pub struct JsonArrayReader<R> {
    input: R,
    started: bool,
    finished: bool,
    /// Bytes consumed so far, for error positions.
    offset: u64,
    /// What the stream is, in error messages.
    label: &'static str,
}

fn malformed(label: &str, offset: u64, what: &str) -> EngineError {
    EngineError::bad_request(format!("Malformed {label} at byte {offset}: {what}"))
}

/// Bytes that end a scalar JSON value (a number, `true`, `false`, `null`).
fn ends_scalar(byte: u8) -> bool {
    matches!(byte, b',' | b'}' | b']') || byte.is_ascii_whitespace()
}

impl<R: BufRead> JsonArrayReader<R> {
    pub fn new(input: R) -> Self {
        JsonArrayReader::labelled(input, "bulk insert stream")
    }

    /// A reader whose errors call the stream `label` (`dump`, ...).
    pub fn labelled(input: R, label: &'static str) -> Self {
        JsonArrayReader { input, started: false, finished: false, offset: 0, label }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn io(&self, e: std::io::Error) -> EngineError {
        EngineError::bad_request(format!("Reading the {} failed at byte {}: {e}", self.label, self.offset))
    }

    /// The next byte that is not whitespace, consumed; None at the end of the input.
    pub(crate) fn next_token(&mut self) -> Result<Option<u8>, EngineError> {
        loop {
            let buffer = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            if buffer.is_empty() {
                return Ok(None);
            }
            let skip = buffer.iter().take_while(|b| b.is_ascii_whitespace()).count();
            if skip < buffer.len() {
                let byte = buffer[skip];
                self.input.consume(skip + 1);
                self.offset += skip as u64 + 1;
                return Ok(Some(byte));
            }
            let n = buffer.len();
            self.input.consume(n);
            self.offset += n as u64;
        }
    }

    /// Reads the next element (an object) into `element`; false once the array has ended.
    pub fn next_element(&mut self, element: &mut Vec<u8>) -> Result<bool, EngineError> {
        element.clear();
        if self.finished {
            return Ok(false);
        }
        let mut token = self.next_token()?;
        if !self.started {
            match token {
                Some(b'[') => self.started = true,
                None => return Err(malformed(self.label, self.offset, "the body is empty; expected a JSON array")),
                Some(_) => return Err(malformed(self.label, self.offset, "expected '[' to open the array of commands")),
            }
            token = self.next_token()?;
        } else if token == Some(b',') {
            token = self.next_token()?;
        } else if token != Some(b']') && token != Some(b'{') {
            // A command right after another without a comma is read as RavenDB reads it: the Python client
            // 5.2 writes two time-series commands in a row so.
            return Err(malformed(self.label, self.offset, "expected ',' or ']' after a command"));
        }
        match token {
            // The array's end is the end of the input: nothing after it is read. The Node client never ends
            // its request body; it waits for the answer, which RavenDB sends once the array is closed.
            Some(b']') => {
                self.finished = true;
                Ok(false)
            }
            Some(b'{') => {
                element.push(b'{');
                self.read_object_rest(element)?;
                Ok(true)
            }
            None => Err(malformed(self.label, self.offset, "the stream ended inside the array (was the insert aborted?)")),
            Some(_) => Err(malformed(self.label, self.offset, "every command must be a JSON object")),
        }
    }

    /// Hands the next `len` raw bytes to `sink` piece by piece: an attachment's content follows its command
    /// in the stream, outside the JSON.
    pub fn read_raw(&mut self, mut len: u64, mut sink: impl FnMut(&[u8]) -> Result<(), EngineError>) -> Result<(), EngineError> {
        while len > 0 {
            let buffer = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            if buffer.is_empty() {
                return Err(malformed(self.label, self.offset, &format!("the stream ended {len} bytes before the end of an attachment")));
            }
            let take = buffer.len().min(usize::try_from(len).unwrap_or(usize::MAX));
            sink(&buffer[..take])?;
            self.input.consume(take);
            self.offset += take as u64;
            len -= take as u64;
        }
        Ok(())
    }

    /// Continues inside an array whose `[` the caller already read (a dump's sections are arrays inside an
    /// object the caller walks).
    pub(crate) fn begin_array(&mut self) {
        self.started = true;
        self.finished = false;
    }

    /// Copies a string whose opening quote was already read, up to and including its closing quote.
    pub(crate) fn read_string_rest(&mut self, out: &mut Vec<u8>) -> Result<(), EngineError> {
        let mut escaped = false;
        loop {
            let buffer = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            if buffer.is_empty() {
                return Err(malformed(self.label, self.offset, "the stream ended inside a string"));
            }
            let mut end = None;
            for (i, &byte) in buffer.iter().enumerate() {
                if escaped {
                    escaped = false;
                } else if byte == b'\\' {
                    escaped = true;
                } else if byte == b'"' {
                    end = Some(i + 1);
                    break;
                }
            }
            let take = end.unwrap_or(buffer.len());
            out.extend_from_slice(&buffer[..take]);
            self.input.consume(take);
            self.offset += take as u64;
            if out.len() > MAX_ELEMENT_BYTES {
                return Err(malformed(self.label, self.offset, &format!("a string is longer than {MAX_ELEMENT_BYTES} bytes")));
            }
            if end.is_some() {
                return Ok(());
            }
        }
    }

    /// Copies the rest of a scalar (number, `true`, `false`, `null`) whose first byte was already read; the
    /// byte after it stays unread.
    pub(crate) fn read_scalar_rest(&mut self, out: &mut Vec<u8>) -> Result<(), EngineError> {
        loop {
            let buffer = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            if buffer.is_empty() {
                return Ok(());
            }
            let take = buffer.iter().position(|b| ends_scalar(*b));
            let n = take.unwrap_or(buffer.len());
            out.extend_from_slice(&buffer[..n]);
            self.input.consume(n);
            self.offset += n as u64;
            if out.len() > 64 {
                return Err(malformed(self.label, self.offset, "a number or literal is too long"));
            }
            if take.is_some() {
                return Ok(());
            }
        }
    }

    /// Copies bytes up to and including the `}` (or `]`) that closes an object (or array) whose opening
    /// bracket was already read.
    pub(crate) fn read_object_rest(&mut self, element: &mut Vec<u8>) -> Result<(), EngineError> {
        let mut depth = 1usize;
        let mut in_string = false;
        let mut escaped = false;
        loop {
            let buffer = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io(e)),
            };
            if buffer.is_empty() {
                return Err(malformed(self.label, self.offset, "the stream ended inside a command"));
            }
            let mut end = None;
            let mut i = 0;
            while i < buffer.len() {
                if in_string {
                    if escaped {
                        escaped = false;
                        i += 1;
                        continue;
                    }
                    // Most bytes of a document are inside strings: jump to the next quote or backslash.
                    match memchr::memchr2(b'"', b'\\', &buffer[i..]) {
                        Some(at) => {
                            i += at;
                            if buffer[i] == b'\\' {
                                escaped = true;
                            } else {
                                in_string = false;
                            }
                            i += 1;
                        }
                        None => i = buffer.len(),
                    }
                    continue;
                }
                match buffer[i] {
                    b'"' => in_string = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(i + 1);
                            break;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            let take = end.unwrap_or(buffer.len());
            element.extend_from_slice(&buffer[..take]);
            self.input.consume(take);
            self.offset += take as u64;
            if element.len() > MAX_ELEMENT_BYTES {
                return Err(malformed(self.label, self.offset, &format!("a command is larger than {MAX_ELEMENT_BYTES} bytes")));
            }
            if end.is_some() {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn elements(input: &str, buffer: usize) -> Result<Vec<String>, EngineError> {
        let mut reader = JsonArrayReader::new(BufReader::with_capacity(buffer, input.as_bytes()));
        let mut out = Vec::new();
        let mut element = Vec::new();
        while reader.next_element(&mut element)? {
            out.push(String::from_utf8(element.clone()).unwrap());
        }
        Ok(out)
    }

    #[test]
    fn splits_objects_with_nested_values_and_tricky_strings() {
        let input = r#" [ {"a": {"b": [1, {"c": "}"}]}}, {"s": "quote \" and \\ and ] and {"} ,{}] "#;
        for buffer in [1, 2, 3, 7, 64, 4096] {
            let got = elements(input, buffer).unwrap();
            assert_eq!(got, vec![r#"{"a": {"b": [1, {"c": "}"}]}}"#, r#"{"s": "quote \" and \\ and ] and {"}"#, "{}"], "buffer {buffer}");
        }
        assert!(elements("[]", 8).unwrap().is_empty());
    }

    #[test]
    fn raw_bytes_between_commands() {
        let input = [&b"[{\"a\":1}"[..], b"\x00]{\"", b",{\"b\":2}]"].concat();
        for buffer in [1, 3, 64] {
            let mut reader = JsonArrayReader::new(BufReader::with_capacity(buffer, &input[..]));
            let mut element = Vec::new();
            assert!(reader.next_element(&mut element).unwrap());
            assert_eq!(element, b"{\"a\":1}");
            let mut raw = Vec::new();
            reader
                .read_raw(4, |chunk| {
                    raw.extend_from_slice(chunk);
                    Ok(())
                })
                .unwrap();
            assert_eq!(raw, b"\x00]{\"");
            assert!(reader.next_element(&mut element).unwrap());
            assert_eq!(element, b"{\"b\":2}");
            assert!(!reader.next_element(&mut element).unwrap());
        }
        let mut reader = JsonArrayReader::new(BufReader::new(&b"[{}ab"[..]));
        let mut element = Vec::new();
        assert!(reader.next_element(&mut element).unwrap());
        assert!(reader.read_raw(3, |_| Ok(())).is_err(), "a truncated attachment is an error");
    }

    #[test]
    fn a_missing_comma_between_commands_is_tolerated() {
        assert_eq!(elements("[{\"a\":1} {\"b\":2}]", 4).unwrap(), ["{\"a\":1}", "{\"b\":2}"]);
    }

    #[test]
    fn refuses_malformed_streams() {
        for bad in ["", "{}", "[1]", "[{} 1]", "[{\"a\": 1}", "[{\"a\": 1},"] {
            assert!(elements(bad, 4).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn stops_at_the_end_of_the_array() {
        assert_eq!(elements("[{}] whatever follows", 4).unwrap(), vec!["{}"]);
    }
}
