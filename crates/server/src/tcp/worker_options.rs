//! The options a subscription worker sends after the header (`SubscriptionWorkerOptions`): which
//! subscription, how to share it, how big a batch may be. Null reads as the default; unknown keys are
//! ignored (Python sends buffer sizes, Node `false` for unset booleans).

use std::time::Duration;

use corvid_engine::subscriptions::Strategy;
use corvid_types::parse_time_span;
use serde_json::Value;

use crate::error::TcpError;

/// RavenDB's default `MaxDocsPerBatch`.
const DEFAULT_MAX_DOCS: usize = 4096;

/// What Corvid honours of a worker's options.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerOptions {
    pub subscription_name: String,
    pub strategy: Strategy,
    pub max_docs_per_batch: usize,
    /// How long the client waits between reconnects; `WaitForFree` retries at half of it.
    pub time_to_wait_before_retry: Duration,
    /// End the connection with `Closed` + `NoDocsLeft` once everything was delivered.
    pub close_when_no_docs_left: bool,
    /// `WorkerId` (RavenDB 6), or a new id when the client sends none: what a drop of one worker names.
    pub worker_id: String,
}

impl WorkerOptions {
    pub fn parse(value: &Value) -> Result<WorkerOptions, TcpError> {
        let invalid = |why: String| TcpError::InvalidOptions(why);
        let subscription_name = match value.get("SubscriptionName") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => return Err(invalid("'SubscriptionName' is required".into())),
        };
        let strategy = match value.get("Strategy") {
            None | Some(Value::Null) => Strategy::OpenIfFree,
            Some(Value::String(name)) => Strategy::parse(name).ok_or_else(|| invalid(format!("unknown strategy '{name}'")))?,
            Some(other) => return Err(invalid(format!("'Strategy' must be a string, not {other}"))),
        };
        let max_docs_per_batch = match value.get("MaxDocsPerBatch") {
            None | Some(Value::Null) => DEFAULT_MAX_DOCS,
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
                _ => return Err(invalid(format!("'MaxDocsPerBatch' must be a positive number, not {v}"))),
            },
        };
        let time_to_wait_before_retry = match value.get("TimeToWaitBeforeConnectionRetry") {
            Some(Value::String(text)) => parse_time_span(text).ok_or_else(|| invalid(format!("'{text}' is not a time span")))?,
            _ => Duration::from_secs(5),
        };
        let close_when_no_docs_left = value.get("CloseWhenNoDocsLeft").and_then(Value::as_bool).unwrap_or(false);
        let worker_id = match value.get("WorkerId") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            None | Some(Value::Null) | Some(Value::String(_)) => uuid::Uuid::new_v4().to_string(),
            Some(other) => return Err(invalid(format!("'WorkerId' must be a string, not {other}"))),
        };
        Ok(WorkerOptions { subscription_name, strategy, max_docs_per_batch, time_to_wait_before_retry, close_when_no_docs_left, worker_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_of_both_clients_parse() {
        let python = json!({"SubscriptionName":"orders","Strategy":"OpenIfFree","MaxDocsPerBatch":4096,"TimeToWaitBeforeConnectionRetry":"00:00:05",
            "MaxErroneousPeriod":"00:05:00","ReceiveBufferSize":32768,"SendBufferSize":32768,"IgnoreSubscriberErrors":null,"CloseWhenNoDocsLeft":null});
        let options = WorkerOptions::parse(&python).unwrap();
        assert_eq!(options.strategy, Strategy::OpenIfFree);
        assert_eq!(options.time_to_wait_before_retry, Duration::from_secs(5));
        assert!(!options.close_when_no_docs_left);
        let node = json!({"SubscriptionName":"o","Strategy":"TakeOver","MaxDocsPerBatch":10,"TimeToWaitBeforeConnectionRetry":"00:00:00.5000000",
            "CloseWhenNoDocsLeft":true});
        let options = WorkerOptions::parse(&node).unwrap();
        assert_eq!((options.strategy, options.max_docs_per_batch), (Strategy::TakeOver, 10));
        assert_eq!(options.time_to_wait_before_retry, Duration::from_millis(500));
        assert_eq!(parse_time_span("1.00:00:01"), Some(Duration::from_secs(86401)));
        assert!(WorkerOptions::parse(&json!({"Strategy":"OpenIfFree"})).is_err());
        let concurrent = WorkerOptions::parse(&json!({"SubscriptionName":"o","Strategy":"Concurrent","WorkerId":"w1"})).unwrap();
        assert_eq!((concurrent.strategy, concurrent.worker_id.as_str()), (Strategy::Concurrent, "w1"));
        assert_eq!(options.worker_id.len(), 36, "a worker without an id gets one");
        assert!(WorkerOptions::parse(&json!({"SubscriptionName":"o","WorkerId":7})).is_err());
        assert!(WorkerOptions::parse(&json!({"SubscriptionName":"o","Strategy":"Sometimes"})).is_err());
    }
}
