//! The Changes API's wire protocol: the clients' `watch-*`/`unwatch-*` commands, the set of watches of
//! one connection and which changes it matches, and the notification JSON the clients parse.

use std::collections::HashMap;

use corvid_engine::changes::Change;
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
    /// Watches Corvid accepts but has nothing to send for (time series, topology).
    Silent(String),
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
        "all-timeseries" | "timeseries" | "all-document-timeseries" | "document-timeseries" | "topology-change" => {
            Watch::Silent(what.to_owned())
        }
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

    /// Whether any watch of this connection asks for `change`.
    pub fn matches(&self, change: &Change) -> bool {
        self.counts.keys().any(|watch| watch_matches(watch, change))
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
        (Watch::Operation(wanted), Change::Operation { id }) => id == wanted,
        _ => false,
    }
}

/// The notification object of a change; `operation_state` renders an operation's state as
/// `/operations/state` does (None when the operation is no longer known).
pub fn notification(change: &Change, operation_state: impl FnOnce(u64) -> Option<Value>) -> Option<Value> {
    Some(match change {
        Change::Document { kind, id, collection, change_vector } => json!({
            "Type": "DocumentChange",
            "Value": {"Type": kind.name(), "Id": id, "CollectionName": collection, "ChangeVector": change_vector}
        }),
        Change::Index { kind, name } => json!({"Type": "IndexChange", "Value": {"Name": name, "Type": kind.name()}}),
        Change::Operation { id } => json!({
            "Type": "OperationStatusChange",
            "Value": {"OperationId": id, "State": operation_state(*id)?}
        }),
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
