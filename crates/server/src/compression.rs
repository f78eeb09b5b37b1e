//! HTTP compression in both directions (decision 0024). Request bodies sent with `Content-Encoding` gzip,
//! deflate, br or zstd (the C# client gzips every JSON body) are decompressed as they stream, so every body
//! limit counts decompressed bytes and a decompression bomb meets the same 413 as a large body. Responses are
//! compressed when the client's `Accept-Encoding` asks and the body is worth it.

use std::pin::Pin;

use async_compression::tokio::bufread::{BrotliDecoder, GzipDecoder, ZlibDecoder, ZstdDecoder};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Extensions, HeaderMap, StatusCode, Version};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::TryStreamExt;
use tokio::io::AsyncRead;
use tokio_util::io::{ReaderStream, StreamReader};
use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::error::ApiError;

/// The content codings a request body may use, as `Content-Encoding` names them.
pub const REQUEST_ENCODINGS: [&str; 4] = ["gzip", "deflate", "br", "zstd"];

/// Responses smaller than this go out as they are: compressing them costs more than it saves.
const MIN_COMPRESSED_RESPONSE_BYTES: u64 = 1024;

/// Decoded request bytes are handed on in pieces of this size.
const DECODED_CHUNK_BYTES: usize = 64 << 10;

/// Compresses responses at the fastest level, as RavenDB does by default (`Http.GzipResponseCompressionLevel`
/// is `Fastest`): on a database server the CPU is worth more than the last few percent of bytes. Images and
/// event streams are left alone, as are responses with a known length under 1 KiB; `enabled` false
/// (`--http-response-compression false`) sends every response as it is.
pub fn response_compression(enabled: bool) -> CompressionLayer<impl Predicate> {
    let predicate = SizeAbove::new(MIN_COMPRESSED_RESPONSE_BYTES)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(move |_: StatusCode, _: Version, _: &HeaderMap, _: &Extensions| enabled);
    CompressionLayer::new().quality(CompressionLevel::Fastest).compress_when(predicate)
}

/// A content coding of request bodies, as `Content-Encoding` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    /// HTTP's `deflate` is the zlib format (RFC 9110 8.4.1.2), not raw deflate.
    Deflate,
    Brotli,
    Zstd,
}

impl Coding {
    /// `None` for a body sent as it is; clients spell codings differently (`GZip`, ` gzip`).
    fn parse(value: &str) -> Result<Option<Coding>, ApiError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(None),
            "gzip" | "x-gzip" => Ok(Some(Coding::Gzip)),
            "deflate" => Ok(Some(Coding::Deflate)),
            "br" => Ok(Some(Coding::Brotli)),
            "zstd" => Ok(Some(Coding::Zstd)),
            other => Err(ApiError::UnsupportedContentEncoding(format!(
                "Content-Encoding '{other}' is not supported; send the body as it is or encoded with one of: {}",
                REQUEST_ENCODINGS.join(", ")
            ))),
        }
    }
}

/// Replaces a compressed request body by its decoded stream (handlers never see `Content-Encoding`), and
/// refuses a coding the server cannot decode with RavenDB's error JSON (415) before any handler runs.
pub async fn decompress_request(request: Request, next: Next) -> Response {
    let Some(value) = request.headers().get(header::CONTENT_ENCODING) else {
        return next.run(request).await;
    };
    let coding = match value.to_str().map_err(|_| ApiError::InvalidHeader("Content-Encoding".into())).and_then(Coding::parse) {
        Ok(coding) => coding,
        Err(e) => return e.into_response(),
    };
    let (mut parts, body) = request.into_parts();
    parts.headers.remove(header::CONTENT_ENCODING);
    let Some(coding) = coding else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    // The declared length is the compressed one: the limits must see the decoded size.
    parts.headers.remove(header::CONTENT_LENGTH);
    next.run(Request::from_parts(parts, decoded(body, coding))).await
}

/// The body decoded as it streams; a corrupt stream ends the body with an error (the handler answers 400).
fn decoded(body: Body, coding: Coding) -> Body {
    let compressed = StreamReader::new(body.into_data_stream().map_err(std::io::Error::other));
    let decoder: Pin<Box<dyn AsyncRead + Send>> = match coding {
        Coding::Gzip => {
            let mut decoder = GzipDecoder::new(compressed);
            // Concatenated gzip members are one body (what `cat a.gz b.gz` and some streaming writers produce).
            decoder.multiple_members(true);
            Box::pin(decoder)
        }
        Coding::Deflate => Box::pin(ZlibDecoder::new(compressed)),
        Coding::Brotli => Box::pin(BrotliDecoder::new(compressed)),
        Coding::Zstd => {
            let mut decoder = ZstdDecoder::new(compressed);
            decoder.multiple_members(true);
            Box::pin(decoder)
        }
    };
    Body::from_stream(ReaderStream::with_capacity(decoder, DECODED_CHUNK_BYTES))
}
