//! Reading RavenDB's TCP framing: JSON objects sent back to back, with no delimiter and no length prefix
//! (one read may hold several objects or part of one), and writing objects.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::error::TcpError;

/// A client that stops reading gets its connection closed after this long, instead of holding a task.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The reading half of a connection, with the bytes received but not yet parsed.
pub struct JsonReader<R> {
    inner: R,
    buffer: Vec<u8>,
}

impl<R: AsyncRead + Unpin> JsonReader<R> {
    pub fn new(inner: R) -> JsonReader<R> {
        JsonReader { inner, buffer: Vec::new() }
    }

    /// The next JSON object, waiting at most `timeout` for it and refusing one longer than `max_bytes`.
    pub async fn next_object(&mut self, max_bytes: usize, timeout: Duration) -> Result<Value, TcpError> {
        tokio::time::timeout(timeout, self.read_object(max_bytes)).await.map_err(|_| TcpError::ReadTimeout(timeout))?
    }

    async fn read_object(&mut self, max_bytes: usize) -> Result<Value, TcpError> {
        loop {
            if let Some(value) = self.parse_buffered()? {
                return Ok(value);
            }
            if self.buffer.len() > max_bytes {
                return Err(TcpError::MessageTooLarge(max_bytes));
            }
            self.buffer.reserve(4096);
            let read = self.inner.read_buf(&mut self.buffer).await.map_err(TcpError::Io)?;
            if read == 0 {
                return Err(TcpError::Closed);
            }
        }
    }

    /// Takes one whole object off the front of the buffer, if it holds one. Whitespace between objects
    /// (heartbeats) is skipped.
    fn parse_buffered(&mut self) -> Result<Option<Value>, TcpError> {
        let start = self.buffer.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(self.buffer.len());
        self.buffer.drain(..start);
        if self.buffer.is_empty() {
            return Ok(None);
        }
        let mut values = serde_json::Deserializer::from_slice(&self.buffer).into_iter::<Value>();
        match values.next() {
            Some(Ok(value @ Value::Object(_))) => {
                let used = values.byte_offset();
                self.buffer.drain(..used);
                Ok(Some(value))
            }
            Some(Ok(_)) => Err(TcpError::Malformed("expected a JSON object".into())),
            Some(Err(e)) if e.is_eof() => Ok(None),
            Some(Err(e)) => Err(TcpError::Malformed(e.to_string())),
            None => Ok(None),
        }
    }
}

/// Writes one JSON object in its own write (the Python client cannot parse a heartbeat glued to an object).
pub async fn write_object<W: AsyncWrite + Unpin>(writer: &mut W, value: &Value) -> Result<(), TcpError> {
    let bytes = serde_json::to_vec(value).map_err(|e| TcpError::Malformed(e.to_string()))?;
    write_bytes(writer, &bytes).await
}

/// Writes bytes already laid out as objects back to back (a whole batch) in one write.
pub async fn write_bytes<W: AsyncWrite + Unpin>(writer: &mut W, bytes: &[u8]) -> Result<(), TcpError> {
    let write = async {
        writer.write_all(bytes).await?;
        writer.flush().await
    };
    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
        Ok(result) => result.map_err(TcpError::Io),
        Err(_) => Err(TcpError::WriteTimeout(WRITE_TIMEOUT)),
    }
}

/// The heartbeat, `\r\n`, in a write of its own (see `write_object`).
pub async fn write_heartbeat<W: AsyncWrite + Unpin>(writer: &mut W) -> Result<(), TcpError> {
    write_bytes(writer, b"\r\n").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn objects_back_to_back_and_split_across_reads_are_read_one_by_one() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = JsonReader::new(server);
        tokio::spawn(async move {
            client.write_all(br#"{"a":1}{"b":"#).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            client.write_all(b"2}\r\n{\"c\":3}").await.unwrap();
        });
        let second = Duration::from_secs(1);
        assert_eq!(reader.next_object(100, second).await.unwrap()["a"], 1);
        assert_eq!(reader.next_object(100, second).await.unwrap()["b"], 2);
        assert_eq!(reader.next_object(100, second).await.unwrap()["c"], 3);
        assert!(matches!(reader.next_object(100, second).await, Err(TcpError::Closed)));
    }

    #[tokio::test]
    async fn garbage_and_oversized_messages_are_errors() {
        let (mut client, server) = tokio::io::duplex(4096);
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let mut reader = JsonReader::new(server);
        assert!(matches!(reader.next_object(100, Duration::from_secs(1)).await, Err(TcpError::Malformed(_))));
        let (mut client, server) = tokio::io::duplex(4096);
        client.write_all(format!("{{\"a\":\"{}", "x".repeat(300)).as_bytes()).await.unwrap();
        let mut reader = JsonReader::new(server);
        assert!(matches!(reader.next_object(100, Duration::from_secs(1)).await, Err(TcpError::MessageTooLarge(100))));
    }
}
