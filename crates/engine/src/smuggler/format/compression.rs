//! A dump is one JSON object inside a compression stream: gzip (what Corvid writes unless asked) or zstd
//! (RavenDB's default since 5.4); readers tell them apart by their first bytes, and also take plain JSON.

use std::io::{self, BufRead, BufReader, Read, Write};

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

/// Read buffer of the decompressed stream: the reader scans it for item boundaries.
const READ_BUFFER: usize = 256 * 1024;
/// zstd's frame magic number.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// gzip's magic number.
const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];

/// How a dump is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// gzip (RavenDB before 5.4, and Corvid's default).
    Gzip,
    /// zstd.
    Zstd,
    /// Plain JSON.
    None,
}

impl Compression {
    /// The option's name (`CompressionAlgorithm`), case-insensitively.
    pub fn parse(name: &str) -> Option<Compression> {
        if name.eq_ignore_ascii_case("Gzip") {
            Some(Compression::Gzip)
        } else if name.eq_ignore_ascii_case("Zstd") {
            Some(Compression::Zstd)
        } else {
            None
        }
    }
}

/// A writer compressing into `W`; [`DumpSink::finish`] writes the compressor's trailer.
pub enum DumpSink<W: Write> {
    /// gzip.
    Gzip(GzEncoder<W>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// Uncompressed.
    Plain(W),
}

impl<W: Write> DumpSink<W> {
    /// Compresses into `inner` as `compression` says (fast levels: an export is bounded by the disk or the
    /// network more than by its size).
    pub fn new(inner: W, compression: Compression) -> io::Result<DumpSink<W>> {
        Ok(match compression {
            Compression::Gzip => DumpSink::Gzip(GzEncoder::new(inner, flate2::Compression::fast())),
            Compression::Zstd => DumpSink::Zstd(zstd::stream::write::Encoder::new(inner, 1)?),
            Compression::None => DumpSink::Plain(inner),
        })
    }

    /// Ends the compressed stream and hands back the inner writer (flushed).
    pub fn finish(self) -> io::Result<W> {
        let mut inner = match self {
            DumpSink::Gzip(encoder) => encoder.finish()?,
            DumpSink::Zstd(encoder) => encoder.finish()?,
            DumpSink::Plain(inner) => inner,
        };
        inner.flush()?;
        Ok(inner)
    }
}

impl<W: Write> Write for DumpSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            DumpSink::Gzip(encoder) => encoder.write(buf),
            DumpSink::Zstd(encoder) => encoder.write(buf),
            DumpSink::Plain(inner) => inner.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            DumpSink::Gzip(encoder) => encoder.flush(),
            DumpSink::Zstd(encoder) => encoder.flush(),
            DumpSink::Plain(inner) => inner.flush(),
        }
    }
}

/// The decompressed dump, whatever compression its first bytes announce.
pub fn open_dump<'r>(input: impl Read + Send + 'r) -> io::Result<Box<dyn BufRead + Send + 'r>> {
    let mut buffered = BufReader::with_capacity(64 * 1024, input);
    let head = buffered.fill_buf()?;
    if head.starts_with(&ZSTD_MAGIC) {
        let decoder = zstd::stream::read::Decoder::with_buffer(buffered)?;
        return Ok(Box::new(BufReader::with_capacity(READ_BUFFER, decoder)));
    }
    if head.starts_with(&GZIP_MAGIC) {
        return Ok(Box::new(BufReader::with_capacity(READ_BUFFER, MultiGzDecoder::new(buffered))));
    }
    Ok(Box::new(buffered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compression_reads_back() {
        for compression in [Compression::Gzip, Compression::Zstd, Compression::None] {
            let mut sink = DumpSink::new(Vec::new(), compression).unwrap();
            sink.write_all(br#"{"BuildVersion":70000}"#).unwrap();
            let bytes = sink.finish().unwrap();
            let mut text = String::new();
            open_dump(&bytes[..]).unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, r#"{"BuildVersion":70000}"#, "{compression:?}");
        }
    }
}
