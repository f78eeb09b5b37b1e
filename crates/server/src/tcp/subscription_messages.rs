//! The objects a subscription connection sends (`SubscriptionConnectionServerMessage`): connection
//! statuses, batches (`Data`…, `Includes`, `CounterIncludes`, `TimeSeriesIncludes`, `EndOfBatch`) and `Confirm`.

use corvid_engine::subscriptions::{EndReason, SubscriptionBatch};
use serde_json::{json, Map, Value};

use crate::routes::counters::detail_json;
use crate::routes::time_series::series_includes_json;

const IN_USE: &str = "Raven.Client.Exceptions.Documents.Subscriptions.SubscriptionInUseException";
const DOES_NOT_EXIST: &str = "Raven.Client.Exceptions.Documents.Subscriptions.SubscriptionDoesNotExistException";
const CLOSED: &str = "Raven.Client.Exceptions.Documents.Subscriptions.SubscriptionClosedException";
const INVALID_STATE: &str = "Raven.Client.Exceptions.Documents.Subscriptions.SubscriptionInvalidStateException";

fn status(status: &str, exception: &str, message: &str) -> Value {
    json!({"Type": "ConnectionStatus", "Status": status, "Message": message, "Exception": format!("{exception}: {message}")})
}

pub fn accepted() -> Value {
    json!({"Type": "ConnectionStatus", "Status": "Accepted"})
}

pub fn in_use(message: &str) -> Value {
    status("InUse", IN_USE, message)
}

pub fn not_found(name: &str) -> Value {
    status("NotFound", DOES_NOT_EXIST, &format!("Subscription '{name}' does not exist"))
}

pub fn invalid(message: &str) -> Value {
    status("Invalid", INVALID_STATE, message)
}

/// `Closed`; both clients read `Data.CanReconnect`, so `Data` is always there.
pub fn closed(message: &str, can_reconnect: bool, no_docs_left: bool) -> Value {
    let mut value = status("Closed", CLOSED, message);
    value["Data"] = json!({"CanReconnect": can_reconnect, "NoDocsLeft": no_docs_left});
    value
}

/// What a worker is told when the server ends its connection. A deleted subscription's worker is told it
/// is closed for good (a `NotFound` would make the Python worker retry for minutes).
pub fn ended(reason: EndReason, name: &str) -> Value {
    match reason {
        EndReason::Dropped => closed(&format!("Subscription '{name}': the connection was dropped"), false, false),
        EndReason::Deleted => closed(&format!("Subscription '{name}' was deleted"), false, false),
        EndReason::Disabled => closed(&format!("Subscription '{name}' was disabled"), false, false),
        EndReason::Modified => closed(&format!("Subscription '{name}' was modified; reconnect to continue"), true, false),
        EndReason::TakenOver => in_use(&format!("Subscription '{name}': closed by a worker with the TakeOver strategy")),
    }
}

pub fn confirm() -> Value {
    json!({"Type": "Confirm"})
}

/// A whole batch as bytes: the objects back to back with nothing between them (the clients parse
/// concatenated JSON; only heartbeats must be written on their own).
pub fn batch_bytes(batch: &SubscriptionBatch) -> Vec<u8> {
    let size: usize =
        batch.items.iter().map(|i| i.data.len() + 32).sum::<usize>() + batch.includes.iter().map(|(_, d)| d.len() + 8).sum::<usize>();
    let mut out = Vec::with_capacity(size + 64);
    for item in &batch.items {
        out.extend_from_slice(b"{\"Type\":\"Data\",\"Data\":");
        out.extend_from_slice(item.data.as_bytes());
        if let Some(exception) = &item.exception {
            out.extend_from_slice(b",\"Exception\":");
            out.extend_from_slice(Value::from(exception.as_str()).to_string().as_bytes());
        }
        out.push(b'}');
    }
    if !batch.includes.is_empty() {
        out.extend_from_slice(b"{\"Type\":\"Includes\",\"Includes\":{");
        for (i, (id, document)) in batch.includes.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(Value::from(id.as_str()).to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(document.as_bytes());
        }
        out.extend_from_slice(b"}}");
    }
    if let Some(counters) = &batch.counter_includes {
        let mut includes = Map::new();
        let mut names = Map::new();
        for (id, list, asked) in counters {
            includes.insert(id.clone(), Value::Array(list.iter().map(detail_json).collect()));
            names.insert(id.clone(), Value::from(asked.clone()));
        }
        let message = json!({"Type": "CounterIncludes", "CounterIncludes": includes, "IncludedCounterNames": names});
        out.extend_from_slice(message.to_string().as_bytes());
    }
    if let Some(series) = &batch.time_series_includes {
        let message = json!({"Type": "TimeSeriesIncludes", "TimeSeriesIncludes": series_includes_json(series)});
        out.extend_from_slice(message.to_string().as_bytes());
    }
    out.extend_from_slice(b"{\"Type\":\"EndOfBatch\"}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_engine::subscriptions::BatchItem;

    #[test]
    fn a_batch_is_data_then_includes_then_end_of_batch_back_to_back() {
        let batch = SubscriptionBatch {
            items: vec![
                BatchItem { data: r#"{"A":1,"@metadata":{"@id":"a/1"}}"#.into(), exception: None },
                BatchItem { data: r#"{"@metadata":{"@id":"a/2"}}"#.into(), exception: Some("boom \"x\"".into()) },
            ],
            includes: vec![("c/1".into(), r#"{"@metadata":{"@id":"c/1"}}"#.into())],
            ..Default::default()
        };
        let bytes = batch_bytes(&batch);
        let values: Vec<Value> = serde_json::Deserializer::from_slice(&bytes).into_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(values.len(), 4);
        assert_eq!(values[0]["Data"]["A"], 1);
        assert_eq!(values[1]["Exception"], "boom \"x\"");
        assert_eq!(values[2]["Includes"]["c/1"]["@metadata"]["@id"], "c/1");
        assert_eq!(values[3]["Type"], "EndOfBatch");
        assert_eq!(closed("x", true, false)["Data"]["CanReconnect"], true);
    }
}
