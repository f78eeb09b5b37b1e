//! The Changes API's wire protocol: the clients' `watch-*`/`unwatch-*` commands, the set of watches of
//! one connection and which changes it matches, and the notification JSON the clients parse.

use std::collections::HashMap;

use corvid_engine::changes::Change;
use corvid_types::format_date_ms;
use serde_json::{json, Value};

/// What a connection watches. Names and ids are kept lower-cased: RavenDB matches them case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Watch {
    AllDocuments,
    Document(String),
    Prefix(String),
    Collection(String),
    AllIndexes,
    Index(String),
    AllOperations,
    Operation(u64),
    AllCounters,
    Counter(String),
    DocumentCounters(String),
    DocumentCounter(String, String),
    AllTimeSeries,
    TimeSeries(String),
    DocumentTimeSeries(String),
    DocumentTimeSeriesNamed(String, String),
    /// `watch-topology-change`: accepted, but a single node's topology never changes.
    Topology,
}

/// One command a client sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Command {
    /// Echoed back in the `Confirm` frame.
    pub id: Option<i64>,
    /// True for `watch-*`, false for `unwatch-*`.
    pub watch: bool,
    pub target: Watch,
}

/// Why a command was refused; sent back as an `Error` frame, the connection stays open.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("Could not parse the command: {0}")]
    Malformed(String),
    #[error("Command argument is mandatory for command '{0}'")]
    MissingParameter(String),
    #[error("Unknown command: {0}")]
    Unknown(String),
}

/// The `CommandId` of a frame, even of one whose command is refused (so it can still be confirmed).
pub fn command_id(text: &str) -> Option<i64> {
    serde_json::from_str::<Value>(text).ok()?.get("CommandId")?.as_i64()
}

/// Parses one text frame.
pub fn parse_command(text: &str) -> Result<Command, CommandError> {
    let value: Value = serde_json::from_str(text).map_err(|e| CommandError::Malformed(e.to_string()))?;
    let object = value.as_object().ok_or_else(|| CommandError::Malformed("a command is a JSON object".into()))?;
    let id = object.get("CommandId").and_then(Value::as_i64);
    let name = object
        .get("Command")
        .and_then(Value::as_str)
        .ok_or_else(|| CommandError::Malformed("the command has no 'Command' string".into()))?;
    let param = object.get("Param").and_then(Value::as_str).map(str::to_lowercase);
    let params: Vec<String> = object
        .get("Params")
        .and_then(Value::as_array)
        .map(|all| all.iter().filter_map(Value::as_str).map(str::to_lowercase).collect())
        .unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let (watch, what) = match (lower.strip_prefix("watch-"), lower.strip_prefix("unwatch-")) {
        (Some(what), _) => (true, what),
        (_, Some(what)) => (false, what),
        _ => return Err(CommandError::Unknown(name.to_owned())),
    };
    let required = || param.clone().filter(|p| !p.is_empty()).ok_or_else(|| CommandError::MissingParameter(name.to_owned()));
    let target = match what {
        "docs" => Watch::AllDocuments,
        "doc" => Watch::Document(required()?),
        "prefix" => Watch::Prefix(required()?),
        "collection" => Watch::Collection(required()?),
        "indexes" => Watch::AllIndexes,
        "index" => Watch::Index(required()?),
        "operations" => Watch::AllOperations,
        "operation" => {
            let id = required()?;
            Watch::Operation(id.trim().parse().map_err(|_| CommandError::Malformed(format!("'{id}' is not an operation id")))?)
        }
        "counters" => Watch::AllCounters,
        "counter" => Watch::Counter(required()?),
        "document-counters" => Watch::DocumentCounters(required()?),
        "document-counter" => match <[String; 2]>::try_from(params) {
            Ok([document, counter]) => Watch::DocumentCounter(document, counter),
            Err(_) => return Err(CommandError::MissingParameter(name.to_owned())),
        },
        "all-timeseries" => Watch::AllTimeSeries,
        "timeseries" => Watch::TimeSeries(required()?),
        "all-document-timeseries" => Watch::DocumentTimeSeries(required()?),
        "document-timeseries" => match <[String; 2]>::try_from(params) {
            Ok([document, name]) => Watch::DocumentTimeSeriesNamed(document, name),
            Err(_) => return Err(CommandError::MissingParameter(name.to_owned())),
        },
        "topology-change" => Watch::Topology,
        _ => return Err(CommandError::Unknown(name.to_owned())),
    };
    Ok(Command { id, watch, target })
}

/// The watches of one connection, counted: n `watch-docs` need n `unwatch-docs`.
#[derive(Debug, Default)]
pub struct Watches {
    counts: HashMap<Watch, usize>,
}

impl Watches {
    /// Applies a watch or unwatch command.
    pub fn apply(&mut self, command: Command) {
        if command.watch {
            *self.counts.entry(command.target).or_default() += 1;
        } else if let Some(count) = self.counts.get_mut(&command.target) {
            *count -= 1;
            if *count == 0 {
                self.counts.remove(&command.target);
            }
        }
    }

    /// What `/changes/debug` shows of the watches, under RavenDB's names (ids and names lower-cased).
    pub fn debug_json(&self) -> serde_json::Map<String, Value> {
        let all = |wanted: Watch| Value::Bool(self.counts.contains_key(&wanted));
        let list = |pick: &dyn Fn(&Watch) -> Option<Value>| {
            let mut items: Vec<Value> = self.counts.keys().filter_map(pick).collect();
            items.sort_by_key(Value::to_string);
            Value::Array(items)
        };
        let pair = |document: &str, name: &str| json!({"DocumentId": document, "Name": name});
        let mut out = serde_json::Map::new();
        out.insert("WatchAllDocuments".into(), all(Watch::AllDocuments));
        out.insert("WatchAllIndexes".into(), all(Watch::AllIndexes));
        out.insert("WatchAllCounters".into(), all(Watch::AllCounters));
        out.insert("WatchAllTimeSeries".into(), all(Watch::AllTimeSeries));
        out.insert("WatchAllOperations".into(), all(Watch::AllOperations));
        out.insert("WatchTopology".into(), all(Watch::Topology));
        out.insert("WatchDocumentPrefixes".into(), list(&|w| matches!(w, Watch::Prefix(_)).then(|| text(w))));
        out.insert("WatchDocumentsInCollection".into(), list(&|w| matches!(w, Watch::Collection(_)).then(|| text(w))));
        out.insert("WatchIndexes".into(), list(&|w| matches!(w, Watch::Index(_)).then(|| text(w))));
        out.insert("WatchDocuments".into(), list(&|w| matches!(w, Watch::Document(_)).then(|| text(w))));
        out.insert("WatchOperations".into(), list(&|w| if let Watch::Operation(id) = w { Some(json!(id)) } else { None }));
        out.insert("WatchCounters".into(), list(&|w| matches!(w, Watch::Counter(_)).then(|| text(w))));
        out.insert("WatchCounterOfDocument".into(), list(&|w| if let Watch::DocumentCounter(d, n) = w { Some(pair(d, n)) } else { None }));
        out.insert("WatchCountersOfDocument".into(), list(&|w| matches!(w, Watch::DocumentCounters(_)).then(|| text(w))));
        out.insert("WatchTimeSeries".into(), list(&|w| matches!(w, Watch::TimeSeries(_)).then(|| text(w))));
        out.insert(
            "WatchTimeSeriesOfDocument".into(),
            list(&|w| if let Watch::DocumentTimeSeriesNamed(d, n) = w { Some(pair(d, n)) } else { None }),
        );
        out.insert("WatchAllTimeSeriesOfDocument".into(), list(&|w| matches!(w, Watch::DocumentTimeSeries(_)).then(|| text(w))));
        out
    }

    /// Whether any watch of this connection asks for `change`.
    pub fn matches(&self, change: &Change) -> bool {
        self.counts.keys().any(|watch| watch_matches(watch, change))
    }
}

/// The one parameter of a single-parameter watch, as JSON.
fn text(watch: &Watch) -> Value {
    match watch {
        Watch::Document(p)
        | Watch::Prefix(p)
        | Watch::Collection(p)
        | Watch::Index(p)
        | Watch::Counter(p)
        | Watch::DocumentCounters(p)
        | Watch::TimeSeries(p)
        | Watch::DocumentTimeSeries(p) => Value::String(p.clone()),
        _ => Value::Null,
    }
}

fn watch_matches(watch: &Watch, change: &Change) -> bool {
    match (watch, change) {
        (Watch::AllDocuments, Change::Document { .. }) => true,
        (Watch::Document(wanted), Change::Document { id, .. }) => id.to_lowercase() == *wanted,
        (Watch::Prefix(prefix), Change::Document { id, .. }) => id.to_lowercase().starts_with(prefix.as_str()),
        (Watch::Collection(wanted), Change::Document { collection, .. }) => collection.to_lowercase() == *wanted,
        (Watch::AllIndexes, Change::Index { .. }) => true,
        (Watch::Index(wanted), Change::Index { name, .. }) => name.to_lowercase() == *wanted,
        (Watch::AllOperations, Change::Operation { .. }) => true,
        (Watch::Operation(wanted), Change::Operation { id, .. }) => id == wanted,
        (Watch::AllCounters, Change::Counter { .. }) => true,
        (Watch::Counter(wanted), Change::Counter { name, .. }) => name.to_lowercase() == *wanted,
        (Watch::DocumentCounters(wanted), Change::Counter { document_id, .. }) => document_id.to_lowercase() == *wanted,
        (Watch::DocumentCounter(document, counter), Change::Counter { document_id, name, .. }) => {
            document_id.to_lowercase() == *document && name.to_lowercase() == *counter
        }
        (Watch::AllTimeSeries, Change::TimeSeries { .. }) => true,
        (Watch::TimeSeries(wanted), Change::TimeSeries { name, .. }) => name.to_lowercase() == *wanted,
        (Watch::DocumentTimeSeries(wanted), Change::TimeSeries { document_id, .. }) => document_id.to_lowercase() == *wanted,
        (Watch::DocumentTimeSeriesNamed(document, series), Change::TimeSeries { document_id, name, .. }) => {
            document_id.to_lowercase() == *document && name.to_lowercase() == *series
        }
        _ => false,
    }
}

/// The notification object of a change; `operation_state` renders an operation's state as
/// `/operations/state` does, and tells whether it is still running (None when it is no longer known). A
/// progress report of an operation that has ended since is not sent: its end follows.
pub fn notification(change: &Change, operation_state: impl FnOnce(u64) -> Option<(Value, bool)>) -> Option<Value> {
    Some(match change {
        Change::Document { kind, id, collection, change_vector } => json!({
            "Type": "DocumentChange",
            "Value": {"Type": kind.name(), "Id": id, "CollectionName": collection, "ChangeVector": change_vector}
        }),
        Change::Index { kind, name } => json!({"Type": "IndexChange", "Value": {"Name": name, "Type": kind.name()}}),
        Change::Counter { kind, document_id, collection, name, value, change_vector } => json!({
            "Type": "CounterChange",
            "Value": {
                "Type": kind.name(), "DocumentId": document_id, "CollectionName": collection, "Name": name, "Value": value,
                "ChangeVector": change_vector
            }
        }),
        Change::TimeSeries { kind, document_id, collection, name, from_ms, to_ms, change_vector } => json!({
            "Type": "TimeSeriesChange",
            "Value": {
                "Type": kind.name(), "DocumentId": document_id, "CollectionName": collection, "Name": name,
                // An open bound of a delete is .NET's DateTime.MinValue / MaxValue, as RavenDB sends it.
                "From": from_ms.map_or_else(|| "0001-01-01T00:00:00.0000000".to_owned(), format_date_ms),
                "To": to_ms.map_or_else(|| "9999-12-31T23:59:59.9999999".to_owned(), format_date_ms),
                "ChangeVector": change_vector
            }
        }),
        Change::Operation { id, finished } => {
            let (state, running) = operation_state(*id)?;
            if !finished && !running {
                return None;
            }
            json!({"Type": "OperationStatusChange", "Value": {"OperationId": id, "State": state}})
        }
    })
}

/// The frame confirming a command.
pub fn confirm(command_id: i64) -> Value {
    json!({"Type": "Confirm", "CommandId": command_id})
}

/// The frame reporting an error to every observer of the connection.
pub fn error(message: &str) -> Value {
    json!({"Type": "Error", "Exception": message})
}

#[cfg(test)]
mod tests {
    use super::*;
    use corvid_engine::changes::DocumentChangeKind;

    fn put(id: &str, collection: &str) -> Change {
        Change::Document { kind: DocumentChangeKind::Put, id: id.into(), collection: collection.into(), change_vector: "A:1-x".into() }
    }

    #[test]
    fn commands_parse_with_their_parameters() {
        let c = parse_command(r#"{"CommandId":3,"Command":"watch-doc","Param":"Users/1"}"#).unwrap();
        assert_eq!(c, Command { id: Some(3), watch: true, target: Watch::Document("users/1".into()) });
        let c = parse_command(r#"{"CommandId":4,"Command":"unwatch-document-counter","Param":null,"Params":["u/1","Likes"]}"#).unwrap();
        assert_eq!(c.target, Watch::DocumentCounter("u/1".into(), "likes".into()));
        assert!(!c.watch);
        assert_eq!(parse_command(r#"{"CommandId":5,"Command":"watch-operation","Param":"42"}"#).unwrap().target, Watch::Operation(42));
    }

    #[test]
    fn bad_commands_are_refused_with_a_reason() {
        assert!(matches!(parse_command("{nope"), Err(CommandError::Malformed(_))));
        assert!(matches!(parse_command(r#"{"CommandId":1,"Command":"explode"}"#), Err(CommandError::Unknown(_))));
        assert!(matches!(parse_command(r#"{"CommandId":1,"Command":"watch-doc"}"#), Err(CommandError::MissingParameter(_))));
        assert!(matches!(
            parse_command(r#"{"CommandId":1,"Command":"watch-document-counter","Params":["a"]}"#),
            Err(CommandError::MissingParameter(_))
        ));
        assert_eq!(command_id(r#"{"CommandId":7,"Command":"explode"}"#), Some(7));
    }

    #[test]
    fn watches_match_case_insensitively_and_are_counted() {
        let mut watches = Watches::default();
        watches.apply(parse_command(r#"{"Command":"watch-collection","Param":"USERS"}"#).unwrap());
        watches.apply(parse_command(r#"{"Command":"watch-prefix","Param":"orders/"}"#).unwrap());
        assert!(watches.matches(&put("users/1", "Users")));
        assert!(watches.matches(&put("Orders/7", "Orders")));
        assert!(!watches.matches(&put("items/1", "Items")));
        watches.apply(parse_command(r#"{"Command":"watch-docs"}"#).unwrap());
        watches.apply(parse_command(r#"{"Command":"watch-docs"}"#).unwrap());
        watches.apply(parse_command(r#"{"Command":"unwatch-docs"}"#).unwrap());
        assert!(watches.matches(&put("items/1", "Items")));
        watches.apply(parse_command(r#"{"Command":"unwatch-docs"}"#).unwrap());
        assert!(!watches.matches(&put("items/1", "Items")));
    }
}
