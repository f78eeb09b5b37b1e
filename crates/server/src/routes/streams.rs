//! `/streams/queries` and `/streams/docs`: results of any size written as they are read. A blocking thread
//! renders results into 64 KiB chunks and hands them to the response body through a small bounded
//! channel, so memory stays flat and a slow client slows the reader instead of filling memory. Errors
//! found before the first byte (bad query, unknown index) are answered as usual.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use corvid_engine::{PageRequest, QueryResponse};
use corvid_types::format_date;
use serde_json::json;

use super::queries::{request_from_body, request_from_query_string};
use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::state::AppState;

const CHUNK_BYTES: usize = 64 * 1024;

#[derive(Clone, Copy, PartialEq)]
enum Format {
    /// Query results, one JSON object per line: `{"Stats":…}`, then `{"Item":…}` per result.
    QueryLines,
    /// Documents by prefix, one per line as it is (RavenDB's `StreamJsonlResultsWriter`; the Node client
    /// reads each line as the document).
    DocumentLines,
    /// `{"Results":[…]}`.
    Json,
}

impl Format {
    fn of(query: &QueryParams, lines: Format) -> Format {
        match query.get("format") {
            Some(f) if f.eq_ignore_ascii_case("json") => Format::Json,
            _ => lines,
        }
    }
}

/// Writes rendered results into chunks for the response body.
struct ChunkWriter {
    format: Format,
    buffer: Vec<u8>,
    items: u64,
    sender: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    open: bool,
}

impl ChunkWriter {
    fn push(&mut self, bytes: &[u8]) -> bool {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK_BYTES {
            return self.flush();
        }
        self.open
    }

    fn flush(&mut self) -> bool {
        if self.open && !self.buffer.is_empty() {
            let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES + 4096)));
            self.open = self.sender.blocking_send(Ok(chunk)).is_ok();
        }
        self.open
    }

    fn start(&mut self, stats: Option<&QueryResponse>) -> bool {
        match (self.format, stats) {
            (Format::QueryLines, Some(s)) => {
                let line = json!({"Stats": {
                    "ResultEtag": s.result_etag, "IsStale": s.is_stale, "IndexName": s.index_name,
                    "TotalResults": s.total_results, "IndexTimestamp": format_date(s.index_timestamp)
                }});
                self.push(line.to_string().as_bytes()) && self.push(b"\n")
            }
            (Format::QueryLines | Format::DocumentLines, _) => true,
            (Format::Json, _) => self.push(b"{\"Results\":["),
        }
    }

    fn item(&mut self, json: &str) -> bool {
        self.items += 1;
        match self.format {
            Format::QueryLines => self.push(b"{\"Item\":") && self.push(json.as_bytes()) && self.push(b"}\n"),
            Format::DocumentLines => self.push(json.as_bytes()) && self.push(b"\n"),
            Format::Json => (self.items == 1 || self.push(b",")) && self.push(json.as_bytes()),
        }
    }

    fn end(&mut self) {
        if self.format == Format::Json {
            self.push(b"]}");
        }
        self.flush();
    }

    /// Ends the body with an I/O error, so the client sees a broken stream rather than a short one.
    fn fail(&mut self, message: String) {
        self.flush();
        let _ = self.sender.blocking_send(Err(std::io::Error::other(message)));
    }
}

/// Runs `produce` on a blocking thread; answers its early error, or streams what it writes.
async fn stream(
    format: Format,
    produce: impl FnOnce(&mut ChunkWriter, &mut Option<tokio::sync::oneshot::Sender<ApiResult<()>>>) -> ApiResult<()> + Send + 'static,
) -> ApiResult<Response> {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<ApiResult<()>>();
    tokio::task::spawn_blocking(move || {
        let mut writer = ChunkWriter { format, buffer: Vec::with_capacity(CHUNK_BYTES + 4096), items: 0, sender, open: true };
        let mut started = Some(started_tx);
        let result = produce(&mut writer, &mut started);
        match (result, started.take()) {
            // Failed before anything was sent: the handler answers the error.
            (Err(e), Some(started)) => {
                let _ = started.send(Err(e));
            }
            (Err(e), None) => writer.fail(e.to_string()),
            (Ok(()), started) => {
                if let Some(started) = started {
                    let _ = started.send(Ok(()));
                }
                writer.end();
            }
        }
    });
    started_rx.await.map_err(|_| ApiError::Internal("the stream producer stopped".into()))??;
    // Fused: a compressing body polls once more after the end, which a bare `unfold` answers with a panic.
    let chunks = futures_util::StreamExt::fuse(futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    }));
    let body = Body::from_stream(chunks);
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let content_type = if format == Format::Json { "application/json; charset=utf-8" } else { "application/jsonl; charset=utf-8" };
    response.headers_mut().insert("content-type", content_type.parse().expect("valid header"));
    Ok(response)
}

/// Signals the handler that the stream has started (headers can go out).
fn started(slot: &mut Option<tokio::sync::oneshot::Sender<ApiResult<()>>>) {
    if let Some(tx) = slot.take() {
        let _ = tx.send(Ok(()));
    }
}

pub async fn stream_query_post(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = request_from_body(&read_json(body, &headers, state.config.max_body_bytes).await?, &query)?;
    stream_query(state, db, Format::of(&query, Format::QueryLines), request).await
}

pub async fn stream_query_get(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = request_from_query_string(&query)?;
    stream_query(state, db, Format::of(&query, Format::QueryLines), request).await
}

async fn stream_query(state: AppState, db: String, format: Format, request: corvid_engine::QueryRequest) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    stream(format, move |writer, slot| {
        // Both callbacks write; they never run at the same time.
        let writer = std::cell::RefCell::new(writer);
        database.stream_query(
            &request,
            |stats| {
                started(slot);
                writer.borrow_mut().start(Some(stats))
            },
            |item| writer.borrow_mut().item(&item),
        )?;
        Ok(())
    })
    .await
}

/// `GET /databases/{db}/streams/docs?startsWith=&matches=&exclude=&startAfter=&start=&pageSize=`.
pub async fn stream_docs(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let request = PageRequest {
        starts_with: query.get("startsWith").map(str::to_owned),
        matches: query.get_non_empty("matches").map(str::to_owned),
        exclude: query.get_non_empty("exclude").map(str::to_owned),
        start_after: query.get_non_empty("startAfter").map(str::to_owned),
        start: query.get_usize("start", 0),
        page_size: query.get_usize("pageSize", usize::MAX),
        metadata_only: query.get_bool("metadataOnly"),
    };
    let database = state.landlord.database(&db).await?;
    stream(Format::of(&query, Format::DocumentLines), move |writer, slot| {
        started(slot);
        if writer.start(None) {
            database.stream_page(&request, |item| writer.item(&item))?;
        }
        Ok(())
    })
    .await
}
