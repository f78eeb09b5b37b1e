//! JavaScript patches on the wire: `PATCH /docs?id=` and the patch parts of `bulk_docs` commands.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use corvid_engine::{validate_script, ExpectedChangeVector, PatchCommand, PatchOutcome, PatchScript, PatchStatus};
use corvid_types::format_date;
use serde_json::{json, Map, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::request_headers;
use crate::responses::{blocking, json_value, written};
use crate::state::AppState;

/// `{"Script": "...", "Values": {...}}`; `what` names the field in errors.
pub fn parse_script(value: Option<&Value>, what: &str) -> ApiResult<Option<PatchScript>> {
    let object = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(ApiError::BadRequest(format!("'{what}' must be an object with a 'Script'"))),
    };
    let script = match object.get("Script") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        _ => return Err(ApiError::BadRequest(format!("'{what}.Script' must be a non-empty string"))),
    };
    let values = match object.get("Values") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(values)) => values.clone(),
        Some(_) => return Err(ApiError::BadRequest(format!("'{what}.Values' must be an object"))),
    };
    validate_script(&script)?;
    Ok(Some(PatchScript { script, values }))
}

/// A patch command from its JSON fields (`Patch`, `PatchIfMissing`, `CreateIfMissing`).
pub fn parse_patch_fields(id: String, expected: ExpectedChangeVector, fields: &Map<String, Value>) -> ApiResult<PatchCommand> {
    let patch =
        parse_script(fields.get("Patch"), "Patch")?.ok_or_else(|| ApiError::BadRequest("A patch requires a 'Patch' script".into()))?;
    let create_if_missing = match fields.get("CreateIfMissing") {
        None | Some(Value::Null) => None,
        Some(doc @ Value::Object(_)) => Some(doc.clone()),
        Some(_) => return Err(ApiError::BadRequest("'CreateIfMissing' must be a document (an object)".into())),
    };
    Ok(PatchCommand {
        id,
        expected,
        patch,
        patch_if_missing: parse_script(fields.get("PatchIfMissing"), "PatchIfMissing")?,
        create_if_missing,
        skip_if_change_vector_mismatch: false,
        debug: false,
        return_document: fields.get("ReturnDocument").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn parse_json_text(text: Option<&String>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
}

/// The reply of a `PATCH` command in a batch.
pub fn batch_reply(outcome: &PatchOutcome) -> Value {
    let mut reply = json!({"Id": outcome.id, "Type": "PATCH", "PatchStatus": outcome.status.as_str()});
    if let Some(cv) = &outcome.change_vector {
        reply["ChangeVector"] = json!(cv);
    }
    if let Some(lm) = outcome.last_modified {
        reply["LastModified"] = json!(format_date(lm));
    }
    if outcome.modified_document.is_some() {
        reply["ModifiedDocument"] = parse_json_text(outcome.modified_document.as_ref());
    }
    if !outcome.debug_output.is_empty() {
        reply["Debug"] = json!({ "Info": outcome.debug_output });
    }
    reply
}

/// The reply of a `BatchPATCH` command: one entry per document.
pub fn batch_patch_reply(outcomes: &[PatchOutcome]) -> Value {
    let results: Vec<Value> =
        outcomes.iter().map(|o| json!({"Id": o.id, "ChangeVector": o.change_vector, "PatchStatus": o.status.as_str()})).collect();
    json!({"Type": "BatchPATCH", "Results": results})
}

/// `PATCH /databases/{db}/docs?id=[&skipPatchIfChangeVectorMismatch=true][&debug=true][&test=true]`.
pub async fn patch_doc(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = super::docs::required_id(&query)?;
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let Value::Object(fields) = request else {
        return Err(ApiError::BadRequest("The body must be a JSON object with a 'Patch'".into()));
    };
    let expected = ExpectedChangeVector::from_wire(request_headers::tag(&headers, "if-match")?.as_deref());
    let mut command = parse_patch_fields(id, expected, &fields)?;
    command.skip_if_change_vector_mismatch = query.get_bool("skipPatchIfChangeVectorMismatch");
    command.debug = query.get_bool("debug");
    command.return_document = true;
    let database = state.landlord.database(&db).await?;
    let test = query.get_bool("test");
    let outcome = if test {
        // Runs in the writer's transaction and is rolled back: nothing is written.
        blocking(move || Ok(database.test_patch_blocking(command)?)).await?
    } else {
        written(|reply| database.submit_patch(command, reply)).await?
    };
    let status = match outcome.status {
        PatchStatus::DocumentDoesNotExist => return Ok(StatusCode::NOT_FOUND.into_response()),
        PatchStatus::Skipped => return Ok(StatusCode::NOT_MODIFIED.into_response()),
        PatchStatus::Created => StatusCode::CREATED,
        PatchStatus::Patched | PatchStatus::NotModified => StatusCode::OK,
    };
    let mut body = json!({
        "Status": outcome.status.as_str(),
        "ModifiedDocument": parse_json_text(outcome.modified_document.as_ref()),
        "ChangeVector": outcome.change_vector,
        "Collection": outcome.collection,
    });
    if let Some(lm) = outcome.last_modified {
        body["LastModified"] = json!(format_date(lm));
    }
    if outcome.original_document.is_some() {
        body["OriginalDocument"] = parse_json_text(outcome.original_document.as_ref());
    }
    if test || command_has_debug(&outcome) {
        body["Debug"] = json!({ "Info": outcome.debug_output });
    }
    Ok(json_value(status, &body))
}

fn command_has_debug(outcome: &PatchOutcome) -> bool {
    !outcome.debug_output.is_empty() || outcome.original_document.is_some()
}

/// `PATCH /databases/{db}/json-patch?id=` with `{"Operations": [RFC 6902 operations]}`.
pub async fn json_patch(
    State(state): State<AppState>,
    Path(db): Path<String>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    body: Body,
) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let id = super::docs::required_id(&query)?;
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let ops = corvid_engine::parse_json_patch(&request)?;
    let database = state.landlord.database(&db).await?;
    let outcome = written(|reply| database.submit_json_patch(id, ops, reply)).await?;
    if outcome.status == PatchStatus::DocumentDoesNotExist {
        return Ok(StatusCode::NOT_FOUND.into_response());
    }
    let mut body = json!({"Status": outcome.status.as_str(), "ModifiedDocument": parse_json_text(outcome.modified_document.as_ref()),
                          "ChangeVector": outcome.change_vector, "Collection": outcome.collection});
    if let Some(lm) = outcome.last_modified {
        body["LastModified"] = json!(format_date(lm));
    }
    Ok(json_value(StatusCode::OK, &body))
}
