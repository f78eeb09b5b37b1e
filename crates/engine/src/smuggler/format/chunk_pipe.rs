//! Byte chunks handed between two threads through a small bounded queue, so an export compresses on a
//! thread of its own while the documents are read and rendered, and an import decompresses while the
//! items are parsed: two cores instead of one, and memory bounded by the queue (a few chunks). The reader
//! hands each chunk it finished back to the writer, which refills it: a fresh 256 KB buffer per chunk was
//! faulted in and zeroed by the kernel each time (~5% of an import's CPU, measured with perf).

use std::io::{self, BufRead, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};

/// Bytes per chunk.
pub const CHUNK: usize = 256 * 1024;
/// Chunks queued between the threads (besides the one each side holds).
const QUEUE: usize = 4;

/// Read chunks waiting to be refilled (more are dropped).
const SPARE: usize = QUEUE + 2;

/// A pipe's two ends.
pub fn chunk_pipe() -> (PipeWriter, PipeReader) {
    let (sender, receiver) = sync_channel(QUEUE);
    let (spare_sender, spare) = sync_channel(SPARE);
    (
        PipeWriter { buffer: Vec::with_capacity(CHUNK), sender, spare },
        PipeReader { receiver, spare: spare_sender, chunk: Vec::new(), at: 0, done: false },
    )
}

/// The writing end: collects bytes into chunks and queues each full one (blocking while the queue is full).
pub struct PipeWriter {
    buffer: Vec<u8>,
    sender: SyncSender<io::Result<Vec<u8>>>,
    /// Chunks the reader is done with, to refill.
    spare: Receiver<Vec<u8>>,
}

impl PipeWriter {
    fn send(&mut self, chunk: io::Result<Vec<u8>>) -> io::Result<()> {
        self.sender.send(chunk).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the other end of the pipe stopped"))
    }

    /// Passes an error to the reader (after the bytes written before it).
    pub fn fail(mut self, error: io::Error) {
        let _ = self.flush();
        let _ = self.send(Err(error));
    }
}

impl Write for PipeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.buffer.len();
        let n = room.min(buf.len());
        self.buffer.extend_from_slice(&buf[..n]);
        if self.buffer.len() >= CHUNK {
            self.flush()?;
        }
        Ok(n)
    }

    /// Queues what is collected (the reader sees it; nothing is made durable).
    fn flush(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let next = match self.spare.try_recv() {
            Ok(mut spare) => {
                spare.clear();
                spare
            }
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => Vec::with_capacity(CHUNK),
        };
        let chunk = std::mem::replace(&mut self.buffer, next);
        self.send(Ok(chunk))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The reading end: the chunks in order, then end of stream once the writer is dropped.
pub struct PipeReader {
    receiver: Receiver<io::Result<Vec<u8>>>,
    /// Where finished chunks go back to the writer.
    spare: SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    done: bool,
}

impl BufRead for PipeReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at >= self.chunk.len() && !self.done {
            match self.receiver.recv() {
                Ok(Ok(chunk)) => {
                    let finished = std::mem::replace(&mut self.chunk, chunk);
                    if finished.capacity() > 0 {
                        // Full or gone writer: the chunk is simply dropped.
                        let _ = self.spare.try_send(finished);
                    }
                    self.at = 0;
                }
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => self.done = true,
            }
        }
        Ok(&self.chunk[self.at.min(self.chunk.len())..])
    }

    fn consume(&mut self, amount: usize) {
        self.at += amount;
    }
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_in_order_and_errors_follow_them() {
        let (mut writer, mut reader) = chunk_pipe();
        let data: Vec<u8> = (0..(3 * CHUNK + 17)).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let thread = std::thread::spawn(move || {
            for piece in sent.chunks(1000) {
                writer.write_all(piece).unwrap();
            }
            writer.fail(io::Error::other("boom"));
        });
        let mut got = vec![0u8; data.len()];
        reader.read_exact(&mut got).unwrap();
        assert_eq!(got, data);
        assert_eq!(reader.read(&mut [0u8; 8]).unwrap_err().to_string(), "boom");
        thread.join().unwrap();
    }

    #[test]
    fn finished_chunks_are_refilled_instead_of_allocated() {
        let (mut writer, mut reader) = chunk_pipe();
        writer.write_all(&vec![1u8; CHUNK]).unwrap();
        writer.write_all(&vec![2u8; CHUNK]).unwrap();
        let mut got = vec![0u8; CHUNK + 1];
        reader.read_exact(&mut got).unwrap();
        assert!(got[..CHUNK].iter().all(|&b| b == 1) && got[CHUNK] == 2);
        // The first chunk went back; the writer's next buffer is that one, emptied.
        let spare = writer.spare.try_recv().unwrap();
        assert!(spare.capacity() >= CHUNK);
        assert_eq!(spare[0], 1);
    }

    #[test]
    fn a_dropped_reader_stops_the_writer() {
        let (mut writer, reader) = chunk_pipe();
        drop(reader);
        let err = (0..QUEUE + 2).try_for_each(|_| writer.write_all(&vec![0u8; CHUNK])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);
    }
}
