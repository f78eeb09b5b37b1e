//! Writes a dump's JSON object piece by piece: sections opened and closed, items separated by commas, and
//! raw bytes (attachment contents) right after the item that announces them.

use std::io::{self, Write};

use corvid_types::push_json_string;

/// The dump's object as it is written; every write counts its bytes.
pub(crate) struct DumpWriter<W: Write> {
    out: W,
    /// No item written yet in the open section.
    first_item: bool,
    pub bytes: u64,
}

impl<W: Write> DumpWriter<W> {
    /// Opens the object with its `BuildVersion`.
    pub fn begin(mut out: W, build_version: u64) -> io::Result<DumpWriter<W>> {
        let head = format!("{{\"BuildVersion\":{build_version}");
        out.write_all(head.as_bytes())?;
        Ok(DumpWriter { out, first_item: true, bytes: head.len() as u64 })
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.bytes += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    /// A property whose value is one JSON object (`DatabaseRecord`).
    pub fn object_section(&mut self, name: &str, json: &str) -> io::Result<()> {
        let mut head = String::with_capacity(name.len() + 4);
        head.push(',');
        push_json_string(&mut head, name);
        head.push(':');
        self.write(head.as_bytes())?;
        self.write(json.as_bytes())
    }

    /// Opens an array section.
    pub fn begin_section(&mut self, name: &str) -> io::Result<()> {
        let mut head = String::with_capacity(name.len() + 5);
        head.push(',');
        push_json_string(&mut head, name);
        head.push_str(":[");
        self.first_item = true;
        self.write(head.as_bytes())
    }

    /// One item of the open section.
    pub fn item(&mut self, json: &str) -> io::Result<()> {
        if !self.first_item {
            self.write(b",")?;
        }
        self.first_item = false;
        self.write(json.as_bytes())
    }

    /// Bytes outside the JSON, right after the last item (its header says how many).
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes)
    }

    /// Closes the open section.
    pub fn end_section(&mut self) -> io::Result<()> {
        self.write(b"]")
    }

    /// Closes the object and hands back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.write(b"}")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_sections_items_and_raw_bytes() {
        let mut w = DumpWriter::begin(Vec::new(), 70000).unwrap();
        w.object_section("DatabaseRecord", "{\"DatabaseName\":\"db\"}").unwrap();
        w.begin_section("Docs").unwrap();
        w.item("{\"a\":1}").unwrap();
        w.raw(b"xy").unwrap();
        w.item("{\"b\":2}").unwrap();
        w.end_section().unwrap();
        w.begin_section("Indexes").unwrap();
        w.end_section().unwrap();
        let bytes = w.bytes;
        let out = w.finish().unwrap();
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"BuildVersion":70000,"DatabaseRecord":{"DatabaseName":"db"},"Docs":[{"a":1}xy,{"b":2}],"Indexes":[]}"#
        );
        assert_eq!(bytes + 1, out.len() as u64);
    }
}
