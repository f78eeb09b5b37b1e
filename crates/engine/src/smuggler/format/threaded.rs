//! (De)compression of a dump on a thread of its own, joined to the exporting or importing thread by a
//! [`chunk_pipe`](super::chunk_pipe): deflate and inflate cost about as much CPU as rendering or parsing
//! the items, so running them side by side roughly halves an export's or an import's time on two cores.

use std::io::{self, BufRead, Read, Write};
use std::thread::{Scope, ScopedJoinHandle};

use super::chunk_pipe::{chunk_pipe, PipeReader, PipeWriter};
use super::compression::{open_dump, Compression, DumpSink};

/// Copies everything `from` holds into `to`, chunk by chunk.
fn pump(from: &mut impl BufRead, to: &mut impl Write) -> io::Result<()> {
    loop {
        let chunk = from.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        let n = chunk.len();
        to.write_all(chunk)?;
        from.consume(n);
    }
}

/// The writer an export writes its plain JSON into; a thread of `scope` compresses it into `inner`.
/// Dropping the writer ends the stream: the handle then hands `inner` back (compressed stream finished).
/// [`PipeWriter::fail`] instead stops the thread without finishing the stream.
pub fn compress_on_thread<'scope, W: Write + Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    inner: W,
    compression: Compression,
) -> io::Result<(PipeWriter, ScopedJoinHandle<'scope, io::Result<W>>)> {
    let mut sink = DumpSink::new(inner, compression)?;
    let (writer, mut reader) = chunk_pipe();
    let handle = scope.spawn(move || {
        pump(&mut reader, &mut sink)?;
        sink.finish()
    });
    Ok((writer, handle))
}

/// The plain JSON of the dump in `input` (gzip, zstd or plain), decompressed by a thread of `scope`.
/// Errors of the compressed stream reach the reader where they happen. The thread ends at the input's
/// end, or at its next chunk once the reader is dropped.
pub fn decompress_on_thread<'scope, R: Read + Send + 'scope>(scope: &'scope Scope<'scope, '_>, input: R) -> PipeReader {
    let (mut writer, reader) = chunk_pipe();
    scope.spawn(move || {
        let outcome = open_dump(input).and_then(|mut stream| pump(&mut stream, &mut writer));
        if let Err(e) = outcome {
            writer.fail(e);
        }
    });
    reader
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_on_one_thread_and_read_back_on_another() {
        let text: Vec<u8> = (0..400_000u32).flat_map(|i| format!("{{\"n\":{i}}},").into_bytes()).collect();
        for compression in [Compression::Gzip, Compression::Zstd, Compression::None] {
            let bytes = std::thread::scope(|scope| {
                let (mut writer, handle) = compress_on_thread(scope, Vec::new(), compression).unwrap();
                writer.write_all(&text).unwrap();
                drop(writer);
                handle.join().unwrap().unwrap()
            });
            let back = std::thread::scope(|scope| {
                let mut plain = Vec::new();
                decompress_on_thread(scope, &bytes[..]).read_to_end(&mut plain).unwrap();
                plain
            });
            assert!(back == text, "{compression:?}");
        }
    }

    #[test]
    fn a_corrupt_stream_is_an_error_of_the_reader() {
        let mut bytes = {
            let mut sink = DumpSink::new(Vec::new(), Compression::Gzip).unwrap();
            sink.write_all(&[b'x'; 100_000]).unwrap();
            sink.finish().unwrap()
        };
        let middle = bytes.len() / 2;
        bytes.truncate(middle);
        let outcome = std::thread::scope(|scope| decompress_on_thread(scope, &bytes[..]).read_to_end(&mut Vec::new()));
        assert!(outcome.is_err());
    }
}
