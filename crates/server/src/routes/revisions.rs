//! Revisions: the record's configuration (`/admin/revisions/config`, `/admin/revisions/conflicts/config`),
//! reading revisions (`/revisions` by id, change vector or date, `/revisions/count`, `/revisions/bin`),
//! reverting (`/revisions/revert` as an operation, `/revisions/revert/docs`) and deleting them
//! (`DELETE /admin/revisions`).

use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{CollectionRevisions, ForcedRevision, RevertRequest, RevisionsConfig, RevisionsDeletion};
use corvid_types::{format_date, metadata as meta, NODE_TAG};
use serde_json::{json, Value};
use time::format_description::well_known::Iso8601;
use time::PrimitiveDateTime;

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json, json_value};
use crate::state::AppState;

/// RavenDB's default page of revisions.
const DEFAULT_PAGE_SIZE: usize = 25;

/// A client's date (`2024-05-01T10:00:00.1234567`, with or without `Z`, always UTC) in unix nanoseconds.
fn parse_date(text: &str, what: &str) -> ApiResult<i64> {
    let trimmed = text.trim().trim_end_matches('Z');
    PrimitiveDateTime::parse(trimmed, &Iso8601::DEFAULT)
        .ok()
        .and_then(|dt| i64::try_from(dt.assume_utc().unix_timestamp_nanos()).ok())
        .ok_or_else(|| ApiError::BadRequest(format!("Could not parse '{what}' as a date: '{text}'")))
}

/// Makes `config` the database's revisions configuration: first in the database (what writes obey), then in
/// the record.
pub(super) async fn apply_config(state: &AppState, db: &str, config: RevisionsConfig) -> ApiResult<()> {
    let database = state.landlord.database(db).await?;
    let landlord = state.landlord.clone();
    let db = db.to_owned();
    blocking(move || {
        let rendered = (!config.is_empty()).then(|| config.to_json());
        database.set_revisions_config(Some(config))?;
        landlord.update(&db, |entry| entry.revisions = rendered)?;
        Ok(())
    })
    .await
}

fn raft_index_reply(state: &AppState) -> Response {
    let index = state.raft_index.fetch_add(1, Ordering::Relaxed);
    json_value(StatusCode::OK, &json!({ "RaftCommandIndex": index }))
}

/// `POST /databases/{db}/admin/revisions/config` with a `RevisionsConfiguration`.
pub async fn post_config(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let sent = read_json(body, &headers, state.config.max_body_bytes).await?;
    let config = RevisionsConfig::from_json(&sent)?;
    apply_config(&state, &db, config).await?;
    Ok(raft_index_reply(&state))
}

/// `POST /databases/{db}/admin/revisions/conflicts/config` with a `RevisionsCollectionConfiguration`. Kept in
/// the record; a single node has no conflicts to keep revisions of.
pub async fn post_conflicts_config(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let sent = read_json(body, &headers, state.config.max_body_bytes).await?;
    let rendered = CollectionRevisions::from_json(&sent, "conflicting documents")?.to_json();
    let landlord = state.landlord.clone();
    blocking(move || landlord.update(&db, |entry| entry.revisions_for_conflicts = Some(rendered)).map(|_| ())).await?;
    Ok(raft_index_reply(&state))
}

/// `GET /databases/{db}/revisions/config`: 404 when not configured.
pub async fn get_config(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    Ok(match entry.revisions {
        Some(config) => json_value(StatusCode::OK, &config),
        None => StatusCode::NOT_FOUND.into_response(),
    })
}

/// `GET /databases/{db}/revisions/conflicts/config`: 404 when not configured.
pub async fn get_conflicts_config(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let entry = state.landlord.entry(&db).ok_or_else(|| ApiError::DatabaseDoesNotExist(db.clone()))?;
    Ok(match entry.revisions_for_conflicts {
        Some(config) => json_value(StatusCode::OK, &config),
        None => StatusCode::NOT_FOUND.into_response(),
    })
}

/// `{"Results": [..]}` (with `TotalResults` when given), spliced from the revisions' stored JSON.
fn results_response(results: &[Option<String>], total: Option<u64>, etag: &str) -> Response {
    let mut body = String::from("{\"Results\":[");
    for (i, result) in results.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(result.as_deref().unwrap_or("null"));
    }
    body.push(']');
    if let Some(total) = total {
        body.push_str(&format!(",\"TotalResults\":{total}"));
    }
    body.push('}');
    let mut response = json(StatusCode::OK, body);
    if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        response.headers_mut().insert("ETag", value);
    }
    response
}

/// `GET /databases/{db}/revisions`: by `changeVector` (one or more), else by `id` (paged, newest first, or
/// the one at `before`).
pub async fn get(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let metadata_only = query.get_bool("metadataOnly");
    // The Python client sends change vectors unescaped, so the `+` of a base64 database id arrives as a space;
    // a change vector never holds a space.
    let change_vectors: Vec<String> = query.get_all("changeVector").into_iter().map(|cv| cv.replace(' ', "+")).collect();
    let database = state.landlord.database(&db).await?;
    if !change_vectors.is_empty() {
        let single = change_vectors.len() == 1;
        let found = blocking(move || Ok(database.revisions_by_change_vectors(&change_vectors, metadata_only)?)).await?;
        if single && found[0].is_none() {
            return Ok(StatusCode::NOT_FOUND.into_response());
        }
        return Ok(results_response(&found, None, ""));
    }
    let id =
        query.get_non_empty("id").ok_or_else(|| ApiError::BadRequest("Query string 'id' is mandatory, but wasn't specified.".into()))?;
    let id = id.to_owned();
    let before = match query.get_non_empty("before").or_else(|| query.glued_value("before")) {
        Some(text) => Some(parse_date(text, "before")?),
        None => None,
    };
    if let Some(at) = before {
        let found = blocking(move || Ok(database.revision_before(&id, at)?)).await?;
        let (results, total, etag) = match found {
            Some((json, cv)) => (vec![Some(json)], 1, cv),
            None => (Vec::new(), 0, String::new()),
        };
        return Ok(results_response(&results, Some(total), &etag));
    }
    let start = query.get_usize("start", 0);
    let page_size = query.get_usize("pageSize", DEFAULT_PAGE_SIZE);
    let page = blocking(move || Ok(database.revisions_of(&id, start, page_size, metadata_only)?)).await?;
    let results: Vec<Option<String>> = page.results.into_iter().map(Some).collect();
    Ok(results_response(&results, Some(page.total), &page.first_change_vector))
}

/// `GET /databases/{db}/revisions/count?id=`: `{"RevisionsCount": n}`.
pub async fn count(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id =
        query.get_non_empty("id").ok_or_else(|| ApiError::BadRequest("Query string 'id' is mandatory, but wasn't specified.".into()))?;
    let id = id.to_owned();
    let database = state.landlord.database(&db).await?;
    let count = blocking(move || Ok(database.revision_count(&id)?)).await?;
    Ok(json_value(StatusCode::OK, &json!({ "RevisionsCount": count })))
}

/// `GET /databases/{db}/revisions/bin?start=&pageSize=`: delete revisions of documents still deleted.
pub async fn bin(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let start = query.get_usize("start", 0);
    let page_size = query.get_usize("pageSize", usize::MAX);
    let database = state.landlord.database(&db).await?;
    let bin = blocking(move || Ok(database.revisions_bin(start, page_size)?)).await?;
    let results: Vec<Option<String>> = bin.into_iter().map(Some).collect();
    Ok(results_response(&results, None, ""))
}

/// `POST /databases/{db}/revisions/revert` with `{"Time", "WindowInSec", "Collections"}`: an operation.
pub async fn revert(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let time = request.get("Time").and_then(Value::as_str).ok_or_else(|| ApiError::BadRequest("'Time' is required".into()))?;
    let time = parse_date(time, "Time")?;
    let collections = match request.get("Collections") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(_) => return Err(ApiError::BadRequest("'Collections' must be an array of collection names".into())),
    };
    let database = state.landlord.database(&db).await?;
    let operation = database.start_revert(RevertRequest { time, collections })?;
    Ok(json_value(StatusCode::OK, &json!({"OperationId": operation.id, "OperationNodeTag": NODE_TAG})))
}

/// `POST /databases/{db}/revisions/revert/docs` with `{"IdToChangeVector": {id: cv}}`.
pub async fn revert_docs(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let Some(Value::Object(pairs)) = request.get("IdToChangeVector") else {
        return Err(ApiError::BadRequest("'IdToChangeVector' must be an object of document ids and change vectors".into()));
    };
    let mut targets = Vec::with_capacity(pairs.len());
    for (id, cv) in pairs {
        let cv = cv.as_str().ok_or_else(|| ApiError::BadRequest(format!("The change vector of '{id}' must be a string")))?;
        targets.push((id.clone(), cv.to_owned()));
    }
    let database = state.landlord.database(&db).await?;
    blocking(move || Ok(database.revert_to_revisions(targets)?)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `DELETE /databases/{db}/admin/revisions` with `DeleteRevisionsOperation.Parameters`.
pub async fn delete(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let strings = |field: &str| -> Vec<String> {
        request
            .get(field)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let date = |field: &str| -> ApiResult<Option<i64>> {
        match request.get(field).and_then(Value::as_str) {
            Some(text) => Ok(Some(parse_date(text, field)?)),
            None => Ok(None),
        }
    };
    let deletion = RevisionsDeletion {
        document_ids: strings("DocumentIds"),
        change_vectors: strings("RevisionsChangeVectors"),
        from: date("From")?,
        to: date("To")?,
        remove_force_created: request.get("RemoveForceCreatedRevisions").and_then(Value::as_bool).unwrap_or(false),
    };
    let database = state.landlord.database(&db).await?;
    let deleted = blocking(move || Ok(database.delete_revisions(deletion)?)).await?;
    Ok(json_value(StatusCode::OK, &json!({ "TotalDeletes": deleted })))
}

/// The batch reply of a `ForceRevisionCreation` command.
pub(super) fn forced_revision_reply(forced: &ForcedRevision) -> Value {
    if !forced.created {
        return json!({"RevisionCreated": false, "Type": "ForceRevisionCreation"});
    }
    json!({
        "RevisionCreated": true, "Type": "ForceRevisionCreation", meta::ID: forced.id,
        meta::CHANGE_VECTOR: forced.change_vector, meta::LAST_MODIFIED: format_date(forced.last_modified),
        meta::FLAGS: corvid_engine::flags_text(forced.flags),
    })
}
