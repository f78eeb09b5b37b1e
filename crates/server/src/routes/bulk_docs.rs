//! `POST /databases/{db}/bulk_docs`: a session's `save_changes`. The whole batch is one transaction.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{BatchCommand, BatchReply, ExpectedChangeVector, IncomingDocument};
use corvid_types::{format_date, metadata as meta};
use serde_json::{json, Map, Value};

use crate::body::{parse_json, read_body};
use crate::error::{ApiError, ApiResult};
use crate::responses::{blocking, json_value, written};
use crate::state::AppState;

/// Command types of the protocol that Corvid does not execute yet; they are refused, never ignored.
const NOT_YET_SUPPORTED: &[&str] = &["BatchTrackChanges"];

/// Bodies larger than this are parsed on the blocking pool.
const INLINE_PARSE_LIMIT: usize = 64 * 1024;

pub async fn bulk_docs(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    if let Some(ct) = crate::request_headers::text(&headers, "content-type")?.filter(|ct| ct.starts_with("multipart/")) {
        return super::bulk_attachments::multipart_batch(state, db, ct.to_owned(), body, parse_batch, reply_json).await;
    }
    let bytes = read_body(body, &headers, state.config.max_body_bytes).await?;
    let batch = if bytes.len() > INLINE_PARSE_LIMIT { blocking(move || parse_request(&bytes)).await? } else { parse_request(&bytes)? };
    let database = state.landlord.database(&db).await?;
    let commands = match batch {
        ParsedBatch::Single(commands) => commands,
        ParsedBatch::ClusterWide(commands) => {
            let params = crate::query::QueryParams::parse(query.as_deref())?;
            let atomic = !params.get_bool("disableAtomicDocumentWrites");
            let reply = written(|reply| database.submit_cluster_transaction(commands, atomic, reply)).await?;
            // Document replies as a single-node batch gives them, then `{Type, Key, Index}` per value.
            let results: Vec<Value> = reply.results.into_iter().map(reply_json).collect();
            return Ok(json_value(StatusCode::CREATED, &json!({ "Results": results, "TransactionIndex": reply.transaction_index })));
        }
    };
    let replies = written(|reply| database.submit_batch(commands, reply)).await?;
    let results: Vec<Value> = replies.into_iter().map(reply_json).collect();
    Ok(json_value(StatusCode::CREATED, &json!({ "Results": results })))
}

/// A batch as parsed: single-node commands, or a cluster-wide transaction.
enum ParsedBatch {
    Single(Vec<BatchCommand>),
    ClusterWide(Vec<corvid_engine::ClusterCommand>),
}

fn parse_request(bytes: &[u8]) -> ApiResult<ParsedBatch> {
    let request = parse_json(bytes).map_err(|e| super::time_series::explain_nan(bytes, e))?;
    if super::cluster_batch::is_cluster_wide(&request) {
        return Ok(ParsedBatch::ClusterWide(super::cluster_batch::parse(request)?));
    }
    Ok(ParsedBatch::Single(commands_of(request)?))
}

pub(super) fn parse_batch(bytes: &[u8]) -> ApiResult<Vec<BatchCommand>> {
    commands_of(parse_json(bytes).map_err(|e| super::time_series::explain_nan(bytes, e))?)
}

fn commands_of(mut request: Value) -> ApiResult<Vec<BatchCommand>> {
    let Some(Value::Array(commands)) = request.get_mut("Commands").map(Value::take) else {
        return Err(ApiError::BadRequest("The batch must be a JSON object with a 'Commands' array".into()));
    };
    commands.into_iter().enumerate().map(|(i, c)| parse_command(i, c)).collect()
}

fn string_field(command: &Map<String, Value>, field: &str, index: usize) -> ApiResult<Option<String>> {
    match command.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("Command #{index}: '{field}' must be a string"))),
    }
}

fn parse_command(index: usize, command: Value) -> ApiResult<BatchCommand> {
    let Value::Object(mut command) = command else {
        return Err(ApiError::BadRequest(format!("Command #{index} must be a JSON object")));
    };
    let kind = string_field(&command, "Type", index)?.ok_or_else(|| ApiError::BadRequest(format!("Command #{index} has no 'Type'")))?;
    let id = string_field(&command, "Id", index)?;
    let expected = ExpectedChangeVector::from_wire(string_field(&command, "ChangeVector", index)?.as_deref());
    let require_id = || id.clone().ok_or_else(|| ApiError::BadRequest(format!("Command #{index} ({kind}) requires an 'Id'")));
    match kind.as_str() {
        "PUT" => {
            let document = match command.remove("Document") {
                Some(doc @ Value::Object(_)) => IncomingDocument::from_value(doc)?,
                _ => return Err(ApiError::BadRequest(format!("Command #{index} (PUT) requires a 'Document' object"))),
            };
            // A PUT without an id gets one made up by the server.
            let id = id.clone().unwrap_or_default();
            match string_field(&command, "ForceRevisionCreationStrategy", index)?.as_deref() {
                None | Some("None") => Ok(BatchCommand::Put { id, expected, document }),
                Some("Before") => Ok(BatchCommand::PutForcingRevision { id, expected, document }),
                Some(other) => {
                    Err(ApiError::BadRequest(format!("Command #{index} (PUT): unknown ForceRevisionCreationStrategy '{other}'")))
                }
            }
        }
        "DELETE" => {
            let id = require_id()?;
            match id.strip_suffix('*') {
                Some(prefix) if command.get("IdPrefixed").and_then(Value::as_bool).unwrap_or(true) => {
                    Ok(BatchCommand::DeletePrefix { prefix: prefix.to_owned() })
                }
                _ => Ok(BatchCommand::Delete { id, expected }),
            }
        }
        "JsonPatch" => {
            let ops = corvid_engine::parse_json_patch(command.get("JsonPatch").unwrap_or(&Value::Null))?;
            let return_document = command.get("ReturnDocument").and_then(Value::as_bool).unwrap_or(false);
            Ok(BatchCommand::JsonPatch { id: require_id()?, ops, return_document })
        }
        "PATCH" => Ok(BatchCommand::Patch(Box::new(super::patch::parse_patch_fields(require_id()?, expected, &command)?))),
        "BatchPATCH" => {
            let Some(Value::Array(entries)) = command.get("Ids") else {
                return Err(ApiError::BadRequest(format!("Command #{index} (BatchPATCH) requires an 'Ids' array")));
            };
            let mut ids = Vec::with_capacity(entries.len());
            for entry in entries {
                let id = entry.get("Id").and_then(Value::as_str).filter(|s| !s.is_empty());
                let id =
                    id.ok_or_else(|| ApiError::BadRequest(format!("Command #{index} (BatchPATCH): every entry of 'Ids' needs an 'Id'")))?;
                let expected = ExpectedChangeVector::from_wire(entry.get("ChangeVector").and_then(Value::as_str));
                ids.push((id.to_owned(), expected));
            }
            let patch = super::patch::parse_patch_fields(String::new(), ExpectedChangeVector::Any, &command)?;
            Ok(BatchCommand::BatchPatch { ids, patch: Box::new(patch) })
        }
        "ForceRevisionCreation" => Ok(BatchCommand::ForceRevisionCreation { id: require_id()? }),
        "AttachmentPUT" | "AttachmentDELETE" | "AttachmentMOVE" | "AttachmentCOPY" | "Counters" => {
            super::bulk_attachments::parse_command(index, &kind, &command, id, expected)
        }
        "CompareExchangePUT" | "CompareExchangeDELETE" => Err(ApiError::BadRequest(format!(
            "Command #{index}: {kind} is only supported in a cluster-wide transaction (TransactionMode: ClusterWide)"
        ))),
        "TimeSeries" | "TimeSeriesWithIncrements" => {
            let op = command
                .get("TimeSeries")
                .filter(|v| v.is_object())
                .ok_or_else(|| ApiError::BadRequest(format!("Command #{index} ({kind}) requires a 'TimeSeries' object")))?;
            Ok(BatchCommand::TimeSeries(super::time_series::parse_operation(require_id()?, op)?))
        }
        other if NOT_YET_SUPPORTED.contains(&other) => {
            Err(ApiError::BadRequest(format!("Command #{index}: command type '{other}' is not supported by this server yet")))
        }
        other => Err(ApiError::BadRequest(format!("Command #{index}: unknown command type '{other}'"))),
    }
}

pub(super) fn reply_json(reply: BatchReply) -> Value {
    match reply {
        BatchReply::Patch(outcome) => super::patch::batch_reply(&outcome),
        BatchReply::JsonPatch(outcome) => {
            let mut reply = super::patch::batch_reply(&outcome);
            reply["Type"] = Value::from("JsonPatch");
            reply
        }
        BatchReply::BatchPatch(outcomes) => super::patch::batch_patch_reply(&outcomes),
        BatchReply::Put { id, collection, change_vector, last_modified, flags: _ } => json!({
            "Type": "PUT", meta::ID: id, meta::COLLECTION: collection, meta::CHANGE_VECTOR: change_vector,
            meta::LAST_MODIFIED: format_date(last_modified)
        }),
        BatchReply::Delete { id, deleted, change_vector } => {
            let mut reply = json!({"Id": id, "Type": "DELETE", "Deleted": deleted});
            if let Some(cv) = change_vector {
                reply["ChangeVector"] = json!(cv);
            }
            reply
        }
        BatchReply::Attachment(reply) => super::bulk_attachments::attachment_reply_json(reply),
        BatchReply::Counters(reply) => super::bulk_attachments::counters_reply_json(reply),
        BatchReply::CompareExchange { key, index, deleted } => {
            json!({"Type": if deleted { "CompareExchangeDELETE" } else { "CompareExchangePUT" }, "Key": key, "Index": index})
        }
        BatchReply::ForceRevisionCreation(forced) => super::revisions::forced_revision_reply(&forced),
        BatchReply::TimeSeries { id, document_change_vector } => {
            json!({"Id": id, "Type": "TimeSeries", "ChangeVector": document_change_vector})
        }
    }
}
