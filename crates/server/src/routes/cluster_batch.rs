//! The cluster-wide form of `bulk_docs` (`"TransactionMode": "ClusterWide"`): document puts and deletes with
//! `CompareExchangePUT` / `CompareExchangeDELETE`, answered with the transaction's index.

use corvid_engine::{ClusterCommand, IncomingDocument};
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};

/// Whether a parsed batch asks for a cluster-wide transaction.
pub(super) fn is_cluster_wide(request: &Value) -> bool {
    request.get("TransactionMode").and_then(Value::as_str).is_some_and(|mode| mode.eq_ignore_ascii_case("ClusterWide"))
}

fn text_field(command: &Map<String, Value>, field: &str, index: usize) -> ApiResult<Option<String>> {
    match command.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::BadRequest(format!("Command #{index}: '{field}' must be a string"))),
    }
}

fn index_field(command: &Map<String, Value>, index: usize) -> ApiResult<u64> {
    match command.get("Index") {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v.as_u64().ok_or_else(|| ApiError::BadRequest(format!("Command #{index}: 'Index' must be a non-negative number"))),
    }
}

/// The commands of a cluster-wide batch; anything but documents and compare-exchange values is refused.
pub(super) fn parse(mut request: Value) -> ApiResult<Vec<ClusterCommand>> {
    let Some(Value::Array(commands)) = request.get_mut("Commands").map(Value::take) else {
        return Err(ApiError::BadRequest("The batch must be a JSON object with a 'Commands' array".into()));
    };
    commands.into_iter().enumerate().map(|(i, c)| parse_command(i, c)).collect()
}

fn parse_command(index: usize, command: Value) -> ApiResult<ClusterCommand> {
    let Value::Object(mut command) = command else {
        return Err(ApiError::BadRequest(format!("Command #{index} must be a JSON object")));
    };
    let kind = text_field(&command, "Type", index)?.ok_or_else(|| ApiError::BadRequest(format!("Command #{index} has no 'Type'")))?;
    let id = text_field(&command, "Id", index)?.unwrap_or_default();
    let seen_change_vector = match text_field(&command, "OriginalChangeVector", index)? {
        Some(cv) => Some(cv),
        None => text_field(&command, "ChangeVector", index)?,
    };
    match kind.as_str() {
        "PUT" => {
            let document = match command.remove("Document") {
                Some(doc @ Value::Object(_)) => IncomingDocument::from_value(doc)?,
                _ => return Err(ApiError::BadRequest(format!("Command #{index} (PUT) requires a 'Document' object"))),
            };
            Ok(ClusterCommand::Put { id, seen_change_vector, document })
        }
        "DELETE" => {
            if command.get("IdPrefixed").and_then(Value::as_bool).unwrap_or(false) {
                return Err(ApiError::BadRequest("Deleting by prefix is not supported on cluster transaction".into()));
            }
            Ok(ClusterCommand::Delete { id, seen_change_vector })
        }
        "CompareExchangePUT" => {
            let value = match command.get("Document") {
                Some(value) => corvid_engine::validate_compare_exchange_value(value)?,
                None => return Err(ApiError::BadRequest(format!("Command #{index} (CompareExchangePUT) requires a 'Document' object"))),
            };
            Ok(ClusterCommand::CompareExchangePut { key: id, value, expected: index_field(&command, index)? })
        }
        "CompareExchangeDELETE" => Ok(ClusterCommand::CompareExchangeDelete { key: id, expected: index_field(&command, index)? }),
        other => Err(ApiError::BadRequest(format!("The command type {other} is not supported in cluster transaction."))),
    }
}
