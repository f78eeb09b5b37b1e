//! `POST /databases/{db}/smuggler/export` and `/smuggler/import` (the clients' `DatabaseSmuggler`): the dump
//! streams out of, or into, `corvid_engine::smuggler` on a blocking thread, tracked as an operation under
//! the id the client took from `/operations/next-operation-id`, which it polls for the result afterwards.

use std::io::{BufReader, Write};

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::smuggler::{self, Counts, ExportOptions, ImportOptions, SmugglerResult};
use corvid_engine::OperationResult;
use serde_json::{json, Map, Value};

use crate::body::BodyReader;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// Bytes of the dump sent to the client at a time.
const CHUNK_BYTES: usize = 64 * 1024;

/// RavenDB's `SmugglerResult` (also its progress: the same counts so far).
pub(crate) fn result_json(result: &SmugglerResult) -> Value {
    let counts = |c: &Counts| -> Value {
        json!({"StartTime": null, "Processed": c.processed, "ReadCount": c.read, "Skipped": false,
               "ErroredCount": c.errored, "SizeInBytes": 0})
    };
    let with = |c: &Counts, extra: &[(&str, Value)]| -> Value {
        let mut value = counts(c);
        let object = value.as_object_mut().expect("an object");
        for (key, v) in extra {
            object.insert((*key).to_owned(), v.clone());
        }
        value
    };
    let attachments = |c: &Counts| {
        json!({"StartTime": null, "Processed": c.attachments > 0, "ReadCount": c.attachments,
        "Skipped": false, "ErroredCount": 0, "SizeInBytes": 0})
    };
    let mut out = Map::new();
    out.insert("$type".into(), json!("Raven.Client.Documents.Smuggler.SmugglerResult, Raven.Client"));
    out.insert("Messages".into(), json!(result.messages));
    out.insert("DatabaseRecord".into(), counts(&result.database_record));
    for (key, c) in [("Documents", &result.documents), ("RevisionDocuments", &result.revision_documents)] {
        out.insert(key.into(), with(c, &[("SkippedCount", json!(c.skipped)), ("LastEtag", json!(0)), ("Attachments", attachments(c))]));
    }
    for (key, c) in [
        ("Tombstones", &result.tombstones),
        ("Conflicts", &result.conflicts),
        ("Identities", &result.identities),
        ("CompareExchange", &result.compare_exchange),
    ] {
        out.insert(key.into(), with(c, &[("LastEtag", json!(0))]));
    }
    out.insert("Indexes".into(), counts(&result.indexes));
    out.insert("Subscriptions".into(), counts(&result.subscriptions));
    for (key, c) in [("Counters", &result.counters), ("TimeSeries", &result.time_series)] {
        out.insert(key.into(), with(c, &[("SkippedCount", json!(c.skipped)), ("LastEtag", json!(0))]));
    }
    let empty = Counts::default();
    out.insert("CompareExchangeTombstones".into(), counts(&empty));
    out.insert("ReplicationHubCertificates".into(), counts(&empty));
    out.insert("TimeSeriesDeletedRanges".into(), with(&empty, &[("SkippedCount", json!(0)), ("LastEtag", json!(0))]));
    Value::Object(out)
}

/// The export's bytes, handed to the response body a chunk at a time (back-pressure: a bounded channel).
struct ChannelWriter {
    buffer: Vec<u8>,
    sender: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
}

impl ChannelWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES)));
        self.sender
            .blocking_send(Ok(chunk))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client stopped reading the export"))
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        if self.buffer.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// The options of an export: a JSON body, a form (the Python client posts its options dict as one; C#
/// sends a `DownloadOptions` field from Studio), or nothing for the defaults.
async fn export_options(state: &AppState, headers: &HeaderMap, body: Body) -> ApiResult<ExportOptions> {
    let bytes = crate::body::read_body(body, headers, state.config.max_body_bytes).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(ExportOptions::default());
    }
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.starts_with("application/x-www-form-urlencoded") {
        return Ok(ExportOptions::from_json(&crate::body::parse_json(&bytes)?)?);
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| ApiError::BadRequest("The export form is not UTF-8".into()))?;
    let form = QueryParams::parse(Some(text))?;
    if let Some(options) = form.get_non_empty("DownloadOptions") {
        return Ok(ExportOptions::from_json(&crate::body::parse_json(options.as_bytes())?)?);
    }
    let mut json = Map::new();
    copy_form_options(&form, &["OperateOnTypes", "CompressionAlgorithm", "CompressionLevel", "TransformScript"], &mut json)?;
    if let Some(value) = form.get_non_empty("IncludeArtificial") {
        json.insert("IncludeArtificial".into(), json!(value.eq_ignore_ascii_case("true")));
    }
    json.insert("Collections".into(), json!(form.get_all("Collections")));
    Ok(ExportOptions::from_json(&Value::Object(json))?)
}

/// Copies the text options `keys` and `MaxStepsForTransformScript` (a number) of a form or query into the
/// options JSON the engine reads.
pub(super) fn copy_form_options(form: &QueryParams, keys: &[&str], json: &mut Map<String, Value>) -> ApiResult<()> {
    for key in keys {
        if let Some(value) = form.get_non_empty(key) {
            json.insert((*key).into(), json!(value));
        }
    }
    if let Some(steps) = form.get_non_empty("MaxStepsForTransformScript") {
        let steps: u64 =
            steps.parse().map_err(|_| ApiError::BadRequest(format!("MaxStepsForTransformScript '{steps}' is not a number")))?;
        json.insert("MaxStepsForTransformScript".into(), json!(steps));
    }
    Ok(())
}

/// `POST /databases/{db}/smuggler/export?operationId=`.
pub async fn export(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let mut options = export_options(&state, &headers, body).await?;
    // A script that does not compile is answered as an error, not as a download cut short.
    if let Some(script) = options.transform.clone() {
        blocking(move || Ok(script.check()?)).await?;
    }
    let database = state.landlord.database(&db).await?;
    options.time_series_config = state.landlord.entry(&db).and_then(|entry| entry.time_series);
    let operation = database.operations().start(query.get_u64("operationId"), "DatabaseExport", format!("Export of database '{db}'"));
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let name = db.clone();
    tokio::task::spawn_blocking(move || {
        let writer = ChannelWriter { buffer: Vec::with_capacity(CHUNK_BYTES), sender: sender.clone() };
        let op = operation.clone();
        let mut progress = |so_far: &SmugglerResult| {
            op.set_total(0);
            let done = so_far.total_items();
            let seen = op.snapshot().processed;
            op.add_processed(done.saturating_sub(seen));
            !op.is_canceled()
        };
        match smuggler::export(&database, &options, writer, &mut progress) {
            Ok((result, _)) => {
                tracing::info!(database = %name, summary = %result.summary(), bytes = result.bytes, "export done");
                operation.complete(OperationResult::Smuggler(Box::new(result)));
            }
            Err(e) => {
                let message = e.to_string();
                tracing::warn!(database = %name, error = %message, "export failed");
                operation.fail(e);
                // A broken body: the client sees a failed download, not a short dump.
                let _ = sender.blocking_send(Err(std::io::Error::other(message)));
            }
        }
    });
    let chunks = futures_util::StreamExt::fuse(futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
    let mut response = Response::new(Body::from_stream(chunks));
    *response.status_mut() = StatusCode::OK;
    let stamp = time::OffsetDateTime::now_utc();
    let file = format!(
        "Dump of {db} {:04}-{:02}-{:02} {:02}-{:02}.ravendbdump",
        stamp.year(),
        u8::from(stamp.month()),
        stamp.day(),
        stamp.hour(),
        stamp.minute()
    );
    let headers = response.headers_mut();
    headers.insert("content-type", "application/octet-stream".parse().expect("valid header"));
    if let Ok(value) = format!("attachment; filename=\"{}\"", file.replace('"', "")).parse() {
        headers.insert("content-disposition", value);
    }
    Ok(response)
}

/// `POST /databases/{db}/smuggler/import?operationId=`: multipart, an `importOptions` JSON part, then the
/// dump. Answers the result once the import is done (the client then reads it from the operation).
pub async fn import(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let boundary = multer::parse_boundary(&content_type)
        .map_err(|_| ApiError::BadRequest("This endpoint requires form content type (multipart/form-data)".into()))?;
    let bad = |e: multer::Error| ApiError::BadRequest(format!("Bad multipart import: {e}"));
    let mut multipart = multer::Multipart::new(body.into_data_stream(), boundary);
    let mut options = ImportOptions::default();
    let file = loop {
        let field = multipart.next_field().await.map_err(bad)?.ok_or_else(|| ApiError::BadRequest("The import has no file part".into()))?;
        if field.name() == Some("importOptions") {
            let bytes = field.bytes().await.map_err(bad)?;
            if bytes.len() > state.config.max_body_bytes {
                return Err(ApiError::BodyTooLarge { limit: state.config.max_body_bytes });
            }
            options = ImportOptions::from_json(&crate::body::parse_json(&bytes)?)?;
            continue;
        }
        break field;
    };
    let database = state.landlord.database(&db).await?;
    let operation = database.operations().start(query.get_u64("operationId"), "DatabaseImport", format!("Import into database '{db}'"));
    let reader = BodyReader::spawn(Body::from_stream(file));
    let op = operation.clone();
    let outcome = blocking(move || {
        let mut progress = |so_far: &SmugglerResult| {
            let done = so_far.total_items();
            let seen = op.snapshot().processed;
            op.add_processed(done.saturating_sub(seen));
            !op.is_canceled()
        };
        Ok(smuggler::import(&database, &options, BufReader::new(reader), &mut progress))
    })
    .await?;
    drop(multipart);
    match outcome {
        Ok(mut result) => {
            keep_record_config(&state, &db, &mut result).await?;
            tracing::info!(database = %db, summary = %result.summary(), bytes = result.bytes, "import done");
            let json = result_json(&result);
            operation.complete(OperationResult::Smuggler(Box::new(result)));
            Ok(json_value(StatusCode::OK, &json))
        }
        Err(e) => {
            let error = ApiError::logged(&e);
            operation.fail(e);
            Err(error)
        }
    }
}

/// Keeps the parts of an imported `DatabaseRecord` in the server's catalog (the engine applied its own).
pub(crate) async fn keep_record_config(state: &AppState, db: &str, result: &mut SmugglerResult) -> ApiResult<()> {
    if result.record_config.is_empty() {
        return Ok(());
    }
    let (landlord, name, parts) = (state.landlord.clone(), db.to_owned(), std::mem::take(&mut result.record_config));
    let database = state.landlord.database(db).await?;
    let notes = blocking(move || {
        let (mut notes, mut time_series) = (Vec::new(), None);
        landlord.update(&name, |entry| {
            notes = super::imported_record::keep_in_entry(entry, &parts);
            time_series = entry.time_series.clone();
        })?;
        // Rollup and retention policies of the imported configuration start running now.
        database.set_time_series_policies(corvid_engine::time_series_policy::policies_of(time_series.as_ref()));
        Ok(notes)
    })
    .await?;
    result.messages.extend(notes);
    Ok(())
}
