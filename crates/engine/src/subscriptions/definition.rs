//! What a data subscription is: its name, its RQL query and its position (the etag up to which documents
//! were delivered and acknowledged), stored as JSON in the database and rendered as RavenDB's
//! `SubscriptionState`.

use corvid_types::{format_change_vector, format_date};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A stored subscription. Serialized as the row the storage keeps (field names are Corvid's own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubscriptionDefinition {
    /// Positive and increasing; never reused.
    pub id: u64,
    /// Unique in the database, compared case-insensitively.
    pub name: String,
    /// The RQL text, as the client sent it.
    pub query: String,
    /// The change vector the client asked to start from, kept to answer the state until a batch moves it.
    pub start_change_vector: Option<String>,
    /// Every document with an etag up to this one was delivered and acknowledged (or filtered out).
    pub position: u64,
    /// Change vector of the document at `position`, once a batch moved it.
    pub position_change_vector: Option<String>,
    /// A disabled subscription refuses workers.
    pub disabled: bool,
    /// Unix nanoseconds of the last acknowledgement.
    pub last_batch_ack_time: Option<i64>,
    /// Unix nanoseconds of the last admitted worker.
    pub last_client_connection_time: Option<i64>,
    /// The change vector the client sent with its last acknowledgement.
    pub last_change_vector_acknowledged: Option<String>,
}

impl SubscriptionDefinition {
    /// The stored form.
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a definition always serializes")
    }

    /// Reads a stored row.
    pub(crate) fn decode(bytes: &[u8]) -> Result<SubscriptionDefinition, crate::EngineError> {
        serde_json::from_slice(bytes).map_err(|e| crate::EngineError::Internal(format!("a stored subscription is not readable: {e}")))
    }

    /// `ChangeVectorForNextBatchStartingPoint`: null for a subscription that starts from the beginning and
    /// has not moved yet.
    pub fn next_batch_change_vector(&self) -> Option<String> {
        self.position_change_vector.clone().or_else(|| self.start_change_vector.clone())
    }

    /// RavenDB's `SubscriptionState` (every key the clients index is present).
    pub fn state_json(&self) -> Value {
        let date = |t: Option<i64>| t.map(format_date);
        json!({
            "SubscriptionId": self.id, "SubscriptionName": self.name, "Query": self.query,
            "ChangeVectorForNextBatchStartingPoint": self.next_batch_change_vector(),
            "MentorNode": null, "NodeTag": null, "PinToMentorNode": false, "ArchivedDataProcessingBehavior": null,
            "LastBatchAckTime": date(self.last_batch_ack_time),
            "LastClientConnectionTime": date(self.last_client_connection_time),
            "LastChangeVectorAcknowledged": self.last_change_vector_acknowledged,
            "Disabled": self.disabled,
        })
    }
}

/// The body of a create (`PUT /subscriptions`) or update (`POST /subscriptions/update`) request; keys as the
/// clients send them. Unknown keys (`MentorNode`, `Includes`, ...) are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SubscriptionRequest {
    /// The name; a create without one is named after its id.
    pub name: Option<String>,
    /// The RQL query; an update without one keeps the old query.
    pub query: Option<String>,
    /// Where to start: null or `BeginningOfTime`, `LastDocument`, `DoNotChange` (update), or a change vector.
    pub change_vector: Option<String>,
    /// Create it disabled, or disable it (update).
    pub disabled: Option<bool>,
    /// Update: the id to look up first (the name otherwise).
    pub id: Option<u64>,
    /// Update: create the subscription when it does not exist (null: no).
    pub create_new: Option<bool>,
}

/// Where a subscription starts, from the `ChangeVector` of a create or update.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StartPoint {
    /// From the first document (null or `BeginningOfTime`).
    Beginning,
    /// After the current last document of the collection.
    LastDocument,
    /// Keep the stored position (`DoNotChange`).
    Unchanged,
    /// After the etag this database has in the change vector (0 when it names other databases only).
    ChangeVector(String),
}

impl StartPoint {
    pub(crate) fn of(change_vector: Option<&str>) -> StartPoint {
        match change_vector {
            None | Some("") | Some("BeginningOfTime") => StartPoint::Beginning,
            Some("LastDocument") => StartPoint::LastDocument,
            Some("DoNotChange") => StartPoint::Unchanged,
            Some(cv) => StartPoint::ChangeVector(cv.to_owned()),
        }
    }
}

/// The etag of `database_id`'s entry in a change vector (`A:12-<id>, B:7-<other>`), or 0.
pub(crate) fn etag_in_change_vector(change_vector: &str, database_id: &str) -> u64 {
    change_vector
        .split(',')
        .filter_map(|entry| {
            let (_, rest) = entry.trim().split_once(':')?;
            let (etag, id) = rest.split_once('-')?;
            (id == database_id).then(|| etag.parse::<u64>().ok()).flatten()
        })
        .max()
        .unwrap_or(0)
}

/// The change vector of position `etag` in this database.
pub(crate) fn position_change_vector(etag: u64, database_id: &str) -> Option<String> {
    (etag > 0).then(|| format_change_vector(etag, database_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_points_and_change_vector_etags() {
        assert_eq!(StartPoint::of(None), StartPoint::Beginning);
        assert_eq!(StartPoint::of(Some("LastDocument")), StartPoint::LastDocument);
        assert_eq!(StartPoint::of(Some("DoNotChange")), StartPoint::Unchanged);
        assert_eq!(etag_in_change_vector("A:12-abc, B:99-other", "abc"), 12);
        assert_eq!(etag_in_change_vector("B:99-other", "abc"), 0);
        assert_eq!(etag_in_change_vector("garbage", "abc"), 0);
    }

    #[test]
    fn a_new_subscription_has_a_null_change_vector_and_every_state_key() {
        let definition = SubscriptionDefinition {
            id: 3,
            name: "s".into(),
            query: "from Orders".into(),
            start_change_vector: None,
            position: 0,
            position_change_vector: None,
            disabled: false,
            last_batch_ack_time: None,
            last_client_connection_time: None,
            last_change_vector_acknowledged: None,
        };
        let state = definition.state_json();
        for key in [
            "Query",
            "ChangeVectorForNextBatchStartingPoint",
            "SubscriptionId",
            "SubscriptionName",
            "LastBatchAckTime",
            "LastClientConnectionTime",
            "Disabled",
        ] {
            assert!(state.get(key).is_some(), "{key}");
        }
        assert!(state["ChangeVectorForNextBatchStartingPoint"].is_null());
        assert_eq!(SubscriptionDefinition::decode(&definition.encode()).unwrap(), definition);
    }
}
