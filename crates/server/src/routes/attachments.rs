//! `/databases/{db}/attachments`: upload, download (streamed from the content file), delete.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{
    AttachmentCommand, AttachmentDetails, AttachmentReply, BatchCommand, BatchReply, Database, ExpectedChangeVector, StagedBlob,
};
use futures_util::{Stream, StreamExt};
use serde_json::json;

use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::request_headers;
use crate::responses::{blocking, json_value, no_content, written};
use crate::state::AppState;

type Params = RawQuery;

fn param<'a>(params: &'a QueryParams, name: &str) -> ApiResult<&'a str> {
    params.get_non_empty(name).ok_or_else(|| ApiError::BadRequest(format!("Query string parameter '{name}' is required")))
}

/// Streams a body into the attachment store without holding more than a few chunks in memory; refuses
/// more than `limit` bytes.
pub async fn stage<S, E>(database: &Arc<Database>, mut body: S, limit: u64) -> ApiResult<StagedBlob>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, corvid_engine::EngineError>>(8);
    let db = database.clone();
    let writer = tokio::task::spawn_blocking(move || db.stage_attachment(|| rx.blocking_recv()));
    let mut total = 0u64;
    let mut failure = None;
    while let Some(chunk) = body.next().await {
        let item = match chunk {
            Ok(bytes) => {
                total += bytes.len() as u64;
                if total > limit {
                    failure = Some(ApiError::BodyTooLarge { limit: limit as usize });
                    Err(corvid_engine::EngineError::bad_request("attachment too large"))
                } else {
                    Ok(bytes)
                }
            }
            Err(e) => {
                failure = Some(ApiError::BadRequest(format!("Could not read the attachment stream: {e}")));
                Err(corvid_engine::EngineError::bad_request("upload interrupted"))
            }
        };
        let stop = item.is_err();
        if tx.send(item).await.is_err() || stop {
            break;
        }
    }
    drop(tx);
    let staged = writer.await.map_err(|e| ApiError::Internal(format!("upload task failed: {e}")))?;
    match (failure, staged) {
        (Some(e), Ok(blob)) => {
            database.release_attachments(&[blob]);
            Err(e)
        }
        (Some(e), Err(_)) => Err(e),
        (None, staged) => Ok(staged?),
    }
}

pub fn details_json(d: &AttachmentDetails) -> serde_json::Value {
    json!({"ChangeVector": d.change_vector, "ContentType": d.content_type, "DocumentId": d.document_id, "Hash": d.hash, "Name": d.name, "Size": d.size})
}

pub async fn put(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(query): Params,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let id = param(&params, "id")?.to_owned();
    let name = param(&params, "name")?.to_owned();
    // Before the upload is staged: a name that cannot be stored fails at once.
    corvid_types::validate_name(corvid_types::NameKind::Attachment, &name)?;
    let mut content_type = params.get("contentType").unwrap_or_default().to_owned();
    let expected = ExpectedChangeVector::from_wire(request_headers::tag(&headers, "if-match")?.as_deref());
    let database = state.landlord.database(&db).await?;
    let limit = state.config.max_attachment_bytes;
    let request_type = request_headers::text(&headers, "content-type")?.unwrap_or("").to_owned();
    // The Python client sends bytes as a multipart form with one file part; others send the raw body.
    let blob = if request_type.starts_with("multipart/form-data") {
        let boundary = multer::parse_boundary(&request_type).map_err(|e| ApiError::BadRequest(format!("Bad multipart request: {e}")))?;
        let mut multipart = multer::Multipart::new(body.into_data_stream(), boundary);
        let field = multipart
            .next_field()
            .await
            .map_err(|e| ApiError::BadRequest(format!("Bad multipart request: {e}")))?
            .ok_or_else(|| ApiError::BadRequest("The multipart request has no attachment part".into()))?;
        if content_type.is_empty() {
            content_type = field.content_type().map(|m| m.to_string()).unwrap_or_default();
        }
        stage(&database, field, limit).await?
    } else {
        stage(&database, body.into_data_stream(), limit).await?
    };
    let staged = [blob.clone()];
    let command = BatchCommand::Attachment(AttachmentCommand::Put { id, name, content_type, expected, blob });
    let result = written(|reply| database.submit_batch(vec![command], reply)).await;
    database.release_attachments(&staged);
    match result?.pop() {
        Some(BatchReply::Attachment(AttachmentReply::Put(d))) => Ok(json_value(StatusCode::CREATED, &details_json(&d))),
        _ => Err(ApiError::Internal("unexpected reply to an attachment upload".into())),
    }
}

/// `GET`, `HEAD`, and `POST` with a type (the client's GetAttachmentOperation): the content, streamed.
pub async fn get(
    State(state): State<AppState>,
    method: Method,
    Path(db): Path<String>,
    RawQuery(query): Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let id = param(&params, "id")?.to_owned();
    let name = param(&params, "name")?.to_owned();
    let database = state.landlord.database(&db).await?;
    let found = blocking(move || Ok(database.attachment(&id, &name)?)).await?;
    let Some((details, file)) = found else {
        return Err(ApiError::AttachmentNotFound);
    };
    let etag = format!("\"{}\"", details.change_vector);
    if method == Method::HEAD && request_headers::tag(&headers, "if-none-match")?.is_some_and(|t| t == details.change_vector) {
        return Ok(StatusCode::NOT_MODIFIED.into_response());
    }
    let body = if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from_stream(tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 64 * 1024))
    };
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    let content_type = if details.content_type.is_empty() { "application/octet-stream" } else { details.content_type.as_str() };
    for (key, value) in [
        ("content-type", content_type.to_owned()),
        ("attachment-hash", details.hash.clone()),
        ("attachment-size", details.size.to_string()),
        ("etag", etag),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(key, v);
        }
    }
    if method != Method::HEAD {
        h.insert("content-length", HeaderValue::from(details.size));
    }
    // The uploader chose the type: never let a browser guess another, nor render a page from the API's origin.
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    if crate::security::active_content::is_active(content_type) {
        h.insert("content-disposition", HeaderValue::from_static("attachment"));
    }
    Ok(response)
}

pub async fn delete(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(query): Params,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let id = param(&params, "id")?.to_owned();
    let name = param(&params, "name")?.to_owned();
    let expected = ExpectedChangeVector::from_wire(request_headers::tag(&headers, "if-match")?.as_deref());
    let database = state.landlord.database(&db).await?;
    let command = BatchCommand::Attachment(AttachmentCommand::Delete { id, name, expected });
    written(|reply| database.submit_batch(vec![command], reply)).await?;
    Ok(no_content())
}
