//! `POST /databases/{db}/bulk_insert?id={operationId}`: a streamed (optionally compressed) JSON array
//! of commands, parsed on a blocking thread as it arrives. Answers 201 with an empty body, as the clients
//! expect; a failure is answered as an error and recorded as the operation's fault.

use std::io::BufReader;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use corvid_engine::{BulkInsertOptions, BulkInsertSummary, OperationResult};
use serde_json::{json, Value};

use crate::body::BodyReader;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::blocking;
use crate::state::AppState;

const READ_BUFFER: usize = 256 * 1024;

pub async fn bulk_insert(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let options = BulkInsertOptions {
        skip_overwrite_if_unchanged: query.get_bool("skipOverwriteIfUnchanged"),
        max_attachment_bytes: Some(state.config.max_attachment_bytes),
    };
    let database = state.landlord.database(&db).await?;
    let operation = database.operations().start(query.get_u64("id"), "BulkInsert", format!("Bulk insert into '{db}'"));
    let reader = BodyReader::spawn(body);
    let op = operation.clone();
    let outcome = blocking(move || {
        // A compressed body arrives here decoded (crate::compression).
        let input = BufReader::with_capacity(READ_BUFFER, reader);
        Ok(database.bulk_insert(input, options, &op))
    })
    .await?;
    match outcome {
        Ok(summary) => {
            tracing::info!(database = %db, documents = summary.documents, counters = summary.counters, attachments = summary.attachments, bytes = summary.bytes, batches = summary.batches, "bulk insert done");
            operation.complete(OperationResult::BulkInsert(summary));
            Ok(StatusCode::CREATED.into_response())
        }
        Err(e) => {
            let error = ApiError::logged(&e);
            operation.fail(e);
            Err(error)
        }
    }
}

/// RavenDB's `BulkInsertResult`, the result of a completed bulk insert operation.
pub(super) fn summary_json(summary: &BulkInsertSummary) -> Value {
    json!({
        "$type": "Raven.Client.Documents.Operations.BulkInsert.BulkInsertOperation+BulkInsertResult, Raven.Client",
        "Total": summary.documents + summary.counters + summary.attachments, "DocumentsProcessed": summary.documents,
        "CountersProcessed": summary.counters, "AttachmentsProcessed": summary.attachments, "TimeSeriesProcessed": summary.time_series,
        "SkippedUnchanged": summary.skipped_unchanged, "Bytes": summary.bytes
    })
}
