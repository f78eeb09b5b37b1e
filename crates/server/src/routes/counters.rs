//! `/databases/{db}/counters`: counter batches and reads.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{CounterDetail, CounterOperation, CountersReply, DocumentCounters};
use serde_json::{json, Value};

use crate::body::read_json;
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

pub fn detail_json(detail: &Option<CounterDetail>) -> Value {
    match detail {
        Some(d) => json!({"DocumentId": d.document_id, "CounterName": d.name, "TotalValue": d.value, "CounterValues": null}),
        None => Value::Null,
    }
}

/// A counter with its per-database values (`full=true`, `ReplyWithAllNodesValues`): one database here.
fn full_detail_json(detail: &Option<CounterDetail>, database_id: &str) -> Value {
    let mut out = detail_json(detail);
    if let (Some(d), Value::Object(fields)) = (detail, &mut out) {
        fields.insert("CounterValues".into(), json!({ database_id: d.value }));
    }
    out
}

pub fn reply_json(reply: &CountersReply) -> Value {
    json!({"Counters": reply.counters.iter().map(detail_json).collect::<Vec<_>>()})
}

/// One `{DocumentId, Operations}` entry of a CounterBatch (also the `Counters` field of a batch command).
pub fn parse_document(value: &Value) -> ApiResult<DocumentCounters> {
    let id = value
        .get("DocumentId")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::BadRequest("Counter operations need a 'DocumentId'".into()))?;
    let mut operations = Vec::new();
    for op in value.get("Operations").and_then(Value::as_array).into_iter().flatten() {
        let name = op.get("CounterName").and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = op.get("Type").and_then(Value::as_str).unwrap_or("Increment");
        operations.push(match kind {
            "Increment" => CounterOperation::Increment { name, delta: op.get("Delta").and_then(Value::as_i64).unwrap_or(0) },
            "Delete" => CounterOperation::Delete { name },
            "Get" => CounterOperation::Get { name },
            "GetAll" => CounterOperation::GetAll,
            other => return Err(ApiError::BadRequest(format!("Unknown counter operation type '{other}'"))),
        });
    }
    Ok(DocumentCounters { id: id.to_owned(), operations })
}

pub async fn post(State(state): State<AppState>, Path(db): Path<String>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let request = read_json(body, &headers, state.config.max_body_bytes).await?;
    let documents = request
        .get("Documents")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::BadRequest("A counter batch needs a 'Documents' array".into()))?
        .iter()
        .map(parse_document)
        .collect::<ApiResult<Vec<_>>>()?;
    let full = request.get("ReplyWithAllNodesValues").and_then(Value::as_bool).unwrap_or(false);
    let database = state.landlord.database(&db).await?;
    let database_id = database.database_id().to_owned();
    let replies = blocking(move || Ok(database.counter_batch_blocking(documents)?)).await?;
    let counters: Vec<Value> = replies
        .iter()
        .flat_map(|r| r.counters.iter().map(|c| if full { full_detail_json(c, &database_id) } else { detail_json(c) }))
        .collect();
    Ok(json_value(StatusCode::OK, &json!({ "Counters": counters })))
}

pub async fn get(State(state): State<AppState>, Path(db): Path<String>, RawQuery(query): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(query.as_deref())?;
    let id =
        params.get_non_empty("docId").ok_or_else(|| ApiError::BadRequest("Query string parameter 'docId' is required".into()))?.to_owned();
    let names = params.get_all("counter");
    let full = params.get_bool("full");
    let database = state.landlord.database(&db).await?;
    let database_id = database.database_id().to_owned();
    let counters = blocking(move || Ok(database.counters(&id, &names)?)).await?;
    let counters: Vec<Value> = counters.iter().map(|c| if full { full_detail_json(c, &database_id) } else { detail_json(c) }).collect();
    Ok(json_value(StatusCode::OK, &json!({ "Counters": counters })))
}

/// `CounterIncludes` of a load: per document id, the asked counters (null where missing), or all of them
/// for `@all_counters`.
pub fn includes_json(database: &corvid_engine::Database, ids: &[String], names: &[String]) -> Result<Value, corvid_engine::EngineError> {
    let all = names.iter().any(|n| n == "@all_counters");
    let names: &[String] = if all { &[] } else { names };
    let mut out = serde_json::Map::new();
    for id in ids {
        let counters = database.counters(id, names)?;
        out.insert(id.clone(), Value::Array(counters.iter().map(detail_json).collect()));
    }
    Ok(Value::Object(out))
}
