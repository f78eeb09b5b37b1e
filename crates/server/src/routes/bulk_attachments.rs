//! The attachment and counter commands of `bulk_docs`, and batches sent as multipart (the JSON commands in
//! the first part, then one part per `AttachmentPUT` stream, in command order).

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::{AttachmentCommand, AttachmentReply, BatchCommand, BatchReply, CountersReply, ExpectedChangeVector, StagedBlob};
use serde_json::{json, Map, Value};

use super::counters::{parse_document, reply_json as counters_json};
use crate::error::{ApiError, ApiResult};
use crate::responses::{json_value, written};
use crate::state::AppState;

fn field(command: &Map<String, Value>, name: &str, index: usize, kind: &str) -> ApiResult<String> {
    command
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::BadRequest(format!("Command #{index} ({kind}) requires '{name}'")))
}

/// A staged stream placeholder: the multipart reader fills in the real hash and size.
fn placeholder() -> StagedBlob {
    StagedBlob { hash: String::new(), size: 0 }
}

pub(super) fn parse_command(
    index: usize,
    kind: &str,
    command: &Map<String, Value>,
    id: Option<String>,
    expected: ExpectedChangeVector,
) -> ApiResult<BatchCommand> {
    let id = id.ok_or_else(|| ApiError::BadRequest(format!("Command #{index} ({kind}) requires an 'Id'")))?;
    let attachment = match kind {
        "Counters" => {
            let counters = command.get("Counters").ok_or_else(|| ApiError::BadRequest(format!("Command #{index} requires 'Counters'")))?;
            let mut document = parse_document(counters)?;
            document.id = id;
            return Ok(BatchCommand::Counters(document));
        }
        "AttachmentPUT" => AttachmentCommand::Put {
            id,
            name: field(command, "Name", index, kind)?,
            content_type: command.get("ContentType").and_then(Value::as_str).unwrap_or_default().to_owned(),
            expected,
            blob: placeholder(),
        },
        "AttachmentDELETE" => AttachmentCommand::Delete { id, name: field(command, "Name", index, kind)?, expected },
        _ => AttachmentCommand::Copy {
            id,
            name: field(command, "Name", index, kind)?,
            destination_id: field(command, "DestinationId", index, kind)?,
            destination_name: field(command, "DestinationName", index, kind)?,
            remove_source: kind == "AttachmentMOVE",
        },
    };
    Ok(BatchCommand::Attachment(attachment))
}

pub(super) async fn multipart_batch(
    state: AppState,
    db: String,
    content_type: String,
    body: Body,
    parse_batch: fn(&[u8]) -> ApiResult<Vec<BatchCommand>>,
    reply_json: fn(BatchReply) -> Value,
) -> ApiResult<Response> {
    let bad = |e: multer::Error| ApiError::BadRequest(format!("Bad multipart batch: {e}"));
    let boundary = multer::parse_boundary(&content_type).map_err(bad)?;
    let mut multipart = multer::Multipart::new(body.into_data_stream(), boundary);
    let first = multipart.next_field().await.map_err(bad)?.ok_or_else(|| ApiError::BadRequest("The multipart batch is empty".into()))?;
    let mut json_bytes = Vec::new();
    let mut first = first;
    while let Some(chunk) = first.chunk().await.map_err(bad)? {
        if json_bytes.len() + chunk.len() > state.config.max_body_bytes {
            return Err(ApiError::BodyTooLarge { limit: state.config.max_body_bytes });
        }
        json_bytes.extend_from_slice(&chunk);
    }
    drop(first);
    let mut commands = parse_batch(&json_bytes)?;
    // Before any attachment is staged.
    for command in &commands {
        corvid_engine::validate_command(command)?;
    }
    let database = state.landlord.database(&db).await?;
    let mut staged: Vec<StagedBlob> = Vec::new();
    let mut result = Ok(());
    for command in commands.iter_mut() {
        let BatchCommand::Attachment(AttachmentCommand::Put { blob, .. }) = command else { continue };
        let next = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => {
                result = Err(ApiError::BadRequest("The batch has fewer attachment streams than AttachmentPUT commands".into()));
                break;
            }
            Err(e) => {
                result = Err(bad(e));
                break;
            }
        };
        match super::attachments::stage(&database, next, state.config.max_attachment_bytes).await {
            Ok(b) => {
                staged.push(b.clone());
                *blob = b;
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let outcome = match result {
        Ok(()) => written(|reply| database.submit_batch(commands, reply)).await,
        Err(e) => Err(e),
    };
    database.release_attachments(&staged);
    let results: Vec<Value> = outcome?.into_iter().map(reply_json).collect();
    Ok(json_value(StatusCode::CREATED, &json!({ "Results": results })))
}

pub(super) fn attachment_reply_json(reply: AttachmentReply) -> Value {
    match reply {
        AttachmentReply::Put(d) => json!({
            "Type": "AttachmentPUT", "Id": d.document_id, "Name": d.name, "ChangeVector": d.change_vector,
            "Hash": d.hash, "ContentType": d.content_type, "Size": d.size, "DocumentChangeVector": d.document_change_vector
        }),
        AttachmentReply::Delete { id, name, document_change_vector } => json!({
            "Type": "AttachmentDELETE", "@id": id, "Name": name, "DocumentChangeVector": document_change_vector
        }),
        AttachmentReply::Copy { source_id, source_name, moved, details: d } => {
            let mut v = json!({
                "Type": if moved { "AttachmentMOVE" } else { "AttachmentCOPY" }, "Id": d.document_id, "Name": d.name,
                "ChangeVector": d.change_vector, "Hash": d.hash, "ContentType": d.content_type, "Size": d.size,
                "DocumentChangeVector": d.document_change_vector
            });
            if moved {
                v["Id"] = json!(source_id);
                v["Name"] = json!(source_name);
                v["DestinationId"] = json!(d.document_id);
                v["DestinationName"] = json!(d.name);
            }
            v
        }
    }
}

pub(super) fn counters_reply_json(reply: CountersReply) -> Value {
    json!({
        "Type": "Counters", "Id": reply.id, "CountersDetail": counters_json(&reply), "DocumentChangeVector": reply.document_change_vector
    })
}
