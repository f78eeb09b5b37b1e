//! The few HTTP requests `corvid export`/`import` send to a running server, over a plain TCP connection:
//! HTTP/1.0 with `Connection: close`, so a response body simply runs to the end of the connection and no
//! client library is needed. Plain `http://` only.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Where the server listens: `host:port` and the path prefix before `/databases`.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    authority: String,
}

impl ServerUrl {
    /// Parses `http://host:port`; `https://` is refused (this client speaks no TLS).
    pub fn parse(url: &str) -> Result<ServerUrl, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            if url.starts_with("https://") {
                "https URLs are not supported by the command line yet; use the server's http endpoint".to_owned()
            } else {
                format!("'{url}' is not an http:// URL")
            }
        })?;
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') {
            return Err(format!("'{url}' must be the server's base URL (http://host:port)"));
        }
        let authority = if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
        Ok(ServerUrl { authority })
    }
}

/// A response whose headers were read; the body is the rest of the connection.
pub struct Response {
    pub status: u16,
    pub body: BufReader<TcpStream>,
}

impl Response {
    /// The whole body as text.
    pub fn text(mut self) -> io::Result<String> {
        let mut text = String::new();
        self.body.read_to_string(&mut text)?;
        Ok(text)
    }
}

/// Sends a request with a body of `length` bytes written by `write_body`, and reads the response's head.
pub fn send(
    server: &ServerUrl,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    length: u64,
    write_body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<Response> {
    let stream = TcpStream::connect(&server.authority)?;
    stream.set_read_timeout(Some(Duration::from_secs(600)))?;
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {}\r\nConnection: close\r\nContent-Length: {length}\r\n", server.authority);
    if let Some(content_type) = content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    let mut writer = io::BufWriter::with_capacity(256 * 1024, &stream);
    writer.write_all(head.as_bytes())?;
    write_body(&mut writer)?;
    writer.flush()?;
    drop(writer);
    let mut body = BufReader::with_capacity(256 * 1024, stream);
    let mut status_line = String::new();
    body.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| io::Error::other(format!("the server answered '{}', not HTTP", status_line.trim())))?;
    loop {
        let mut line = String::new();
        if body.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    Ok(Response { status, body })
}

/// A request without a body.
pub fn get(server: &ServerUrl, path: &str) -> io::Result<Response> {
    send(server, "GET", path, None, 0, |_| Ok(()))
}

/// Percent-encodes a database name for a path segment.
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
