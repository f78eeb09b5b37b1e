//! A minimal blocking HTTP/1.1 client for the command-line tools (`corvid backup`, `corvid restore`): one JSON
//! request per connection to a running server over plain `http://` (HTTPS comes with the security work).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A server's address, from `http://host:port`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerUrl {
    host: String,
    port: u16,
}

/// Why a request got no HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL is not `http://host[:port]`.
    #[error("{0}")]
    BadUrl(String),
    /// The server could not be reached or the connection broke.
    #[error("cannot reach {url}: {source}")]
    Unreachable {
        /// The server.
        url: String,
        /// What the socket said.
        source: std::io::Error,
    },
    /// The answer is not HTTP as expected.
    #[error("unexpected answer from the server: {0}")]
    Malformed(String),
}

impl ServerUrl {
    /// Parses `http://host[:port][/]`.
    pub fn parse(url: &str) -> Result<ServerUrl, HttpError> {
        if url.starts_with("https://") {
            return Err(HttpError::BadUrl("https:// URLs are not supported by the command line yet; use the server's http:// URL".into()));
        }
        let rest = url.strip_prefix("http://").ok_or_else(|| HttpError::BadUrl(format!("'{url}' is not an http:// URL")))?;
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) => (host, port.parse().map_err(|_| HttpError::BadUrl(format!("'{port}' is not a port")))?),
            None => (authority, 80),
        };
        if host.is_empty() {
            return Err(HttpError::BadUrl(format!("'{url}' names no host")));
        }
        Ok(ServerUrl { host: host.to_owned(), port })
    }

    fn display(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// Sends one request and returns the status code and the body.
    pub fn request(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> Result<(u16, String), HttpError> {
        let unreachable = |source| HttpError::Unreachable { url: self.display(), source };
        let mut stream = TcpStream::connect((self.host.as_str(), self.port)).map_err(unreachable)?;
        stream.set_read_timeout(Some(Duration::from_secs(120))).map_err(unreachable)?;
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}:{}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.host,
            self.port,
            payload.len()
        );
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(payload.as_bytes())).map_err(unreachable)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(unreachable)?;
        parse_response(&answer)
    }
}

/// Splits a whole HTTP/1.1 response into status and body (a chunked body decoded).
fn parse_response(answer: &[u8]) -> Result<(u16, String), HttpError> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| HttpError::Malformed("no end of headers".into()))?;
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Malformed("no status line".into()))?;
    let chunked = lines.any(|line| {
        let lower = line.to_ascii_lowercase();
        lower.starts_with("transfer-encoding:") && lower.contains("chunked")
    });
    let raw = &answer[end + 4..];
    let body = if chunked { dechunk(raw)? } else { raw.to_vec() };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|w| w == b"\r\n").ok_or_else(|| HttpError::Malformed("cut chunk".into()))?;
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)
            .map_err(|_| HttpError::Malformed(format!("bad chunk size '{size_text}'")))?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        if raw.len() < size {
            return Err(HttpError::Malformed("cut chunk".into()));
        }
        body.extend_from_slice(&raw[..size]);
        raw = raw.get(size + 2..).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_responses_parse() {
        assert_eq!(ServerUrl::parse("http://127.0.0.1:8080/").unwrap(), ServerUrl { host: "127.0.0.1".into(), port: 8080 });
        assert!(ServerUrl::parse("https://x").unwrap_err().to_string().contains("https"));
        assert!(ServerUrl::parse("ftp://x").is_err());
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(plain).unwrap(), (200, "{}".to_owned()));
        let chunked = b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap(), (400, "{\"a\":1}".to_owned()));
    }
}
