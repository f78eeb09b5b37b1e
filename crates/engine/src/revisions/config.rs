//! The database record's revisions configuration (`RevisionsConfiguration`: a default and per-collection
//! `RevisionsCollectionConfiguration`), parsed from what `ConfigureRevisionsOperation` sends and rendered
//! back with every field, as RavenDB's record carries it.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::time_span;
use crate::EngineError;

/// How revisions are kept for one collection (or by default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CollectionRevisions {
    /// Revisions kept at least (older ones beyond it are deleted on the next write); None keeps all.
    pub minimum_revisions_to_keep: Option<u64>,
    /// Revisions younger than this are kept whatever their number; None sets no age.
    pub minimum_revision_age_to_keep: Option<Duration>,
    /// No revisions are written for the collection.
    pub disabled: bool,
    /// Deleting a document deletes its revisions (and writes no delete revision).
    pub purge_on_delete: bool,
    /// At most this many old revisions are deleted by one write; None has no bound.
    pub maximum_revisions_to_delete_upon_document_update: Option<u64>,
}

/// The whole configuration: a default for every non-system collection, and per-collection entries that
/// take precedence (collection names compare case-insensitively).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RevisionsConfig {
    /// Applies to collections without an entry of their own (not to system collections, `@...`).
    pub default: Option<CollectionRevisions>,
    /// Per collection, as written.
    pub collections: Vec<(String, CollectionRevisions)>,
}

fn field<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

fn optional_count(object: &Map<String, Value>, name: &str) -> Result<Option<u64>, EngineError> {
    match field(object, name) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0 && f.fract() == 0.0).map(|f| f as u64))
            .map(Some)
            .ok_or_else(|| EngineError::BadRequest(format!("'{name}' must be a non-negative integer or null, not {v}"))),
    }
}

fn flag(object: &Map<String, Value>, name: &str) -> Result<bool, EngineError> {
    match field(object, name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(EngineError::BadRequest(format!("'{name}' must be true or false, not {v}"))),
    }
}

impl CollectionRevisions {
    /// Reads one `RevisionsCollectionConfiguration` object.
    pub fn from_json(value: &Value, what: &str) -> Result<CollectionRevisions, EngineError> {
        let Value::Object(object) = value else {
            return Err(EngineError::BadRequest(format!("The revisions configuration of {what} must be an object, not {value}")));
        };
        let age = match field(object, "MinimumRevisionAgeToKeep") {
            None => None,
            Some(Value::String(text)) => Some(time_span::parse(text).ok_or_else(|| {
                EngineError::BadRequest(format!("'MinimumRevisionAgeToKeep' of {what} is not a time span ([d.]hh:mm:ss): '{text}'"))
            })?),
            Some(v) => {
                return Err(EngineError::BadRequest(format!("'MinimumRevisionAgeToKeep' of {what} must be a time span text, not {v}")))
            }
        };
        Ok(CollectionRevisions {
            minimum_revisions_to_keep: optional_count(object, "MinimumRevisionsToKeep")?,
            minimum_revision_age_to_keep: age,
            disabled: flag(object, "Disabled")?,
            purge_on_delete: flag(object, "PurgeOnDelete")?,
            maximum_revisions_to_delete_upon_document_update: optional_count(object, "MaximumRevisionsToDeleteUponDocumentUpdate")?,
        })
    }

    /// The object with all five fields, as RavenDB renders it.
    pub fn to_json(&self) -> Value {
        json!({
            "Disabled": self.disabled,
            "MinimumRevisionsToKeep": self.minimum_revisions_to_keep,
            "MinimumRevisionAgeToKeep": self.minimum_revision_age_to_keep.map(time_span::format),
            "PurgeOnDelete": self.purge_on_delete,
            "MaximumRevisionsToDeleteUponDocumentUpdate": self.maximum_revisions_to_delete_upon_document_update,
        })
    }
}

impl RevisionsConfig {
    /// Reads a `RevisionsConfiguration` object (`Default` and `Collections`, either null or missing).
    pub fn from_json(value: &Value) -> Result<RevisionsConfig, EngineError> {
        let Value::Object(object) = value else {
            return Err(EngineError::BadRequest(format!("The revisions configuration must be an object, not {value}")));
        };
        let default = field(object, "Default").map(|d| CollectionRevisions::from_json(d, "the default")).transpose()?;
        let mut collections: Vec<(String, CollectionRevisions)> = Vec::new();
        match field(object, "Collections") {
            None => {}
            Some(Value::Object(entries)) => {
                for (name, entry) in entries {
                    if collections.iter().any(|(seen, _)| seen.eq_ignore_ascii_case(name)) {
                        return Err(EngineError::InvalidOperation(format!(
                            "Cannot have two different revision configurations on the same collection. Collection name : '{name}'"
                        )));
                    }
                    collections.push((name.clone(), CollectionRevisions::from_json(entry, &format!("collection '{name}'"))?));
                }
            }
            Some(v) => return Err(EngineError::BadRequest(format!("'Collections' must be an object of collection names, not {v}"))),
        }
        Ok(RevisionsConfig { default, collections })
    }

    /// `{"Default": ..., "Collections": {...}}` with every field.
    pub fn to_json(&self) -> Value {
        let collections: Map<String, Value> = self.collections.iter().map(|(name, c)| (name.clone(), c.to_json())).collect();
        json!({ "Default": self.default.as_ref().map(CollectionRevisions::to_json), "Collections": collections })
    }

    /// Whether it configures nothing (RavenDB then treats revisions as not configured at all).
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.collections.is_empty()
    }

    /// What applies to `collection`: its own entry, else the default for a non-system collection. None
    /// (like a disabled entry) writes no revisions.
    pub fn for_collection(&self, collection: &str) -> Option<&CollectionRevisions> {
        if let Some((_, own)) = self.collections.iter().find(|(name, _)| name.eq_ignore_ascii_case(collection)) {
            return Some(own);
        }
        if collection.starts_with('@') {
            return None;
        }
        self.default.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_shape_round_trips_and_collections_win_over_the_default() {
        let sent = json!({
            "Default": {"MinimumRevisionsToKeep": 5, "MinimumRevisionAgeToKeep": null, "Disabled": false, "PurgeOnDelete": false,
                        "MaximumRevisionsToDeleteUponDocumentUpdate": null},
            "Collections": {"Users": {"MinimumRevisionsToKeep": null, "MinimumRevisionAgeToKeep": "1.00:00:00", "Disabled": true,
                                      "PurgeOnDelete": true, "MaximumRevisionsToDeleteUponDocumentUpdate": 3}}
        });
        let config = RevisionsConfig::from_json(&sent).unwrap();
        assert_eq!(config.for_collection("users").unwrap().minimum_revision_age_to_keep, Some(Duration::from_secs(86_400)));
        assert_eq!(config.for_collection("Orders").unwrap().minimum_revisions_to_keep, Some(5));
        assert!(config.for_collection("@hilo").is_none());
        assert_eq!(config.to_json(), sent);
        assert_eq!(RevisionsConfig::from_json(&config.to_json()).unwrap(), config);
    }

    #[test]
    fn bad_shapes_are_refused() {
        for bad in [
            json!([]),
            json!({"Default": 3}),
            json!({"Default": {"MinimumRevisionsToKeep": -1}}),
            json!({"Default": {"MinimumRevisionsToKeep": "many"}}),
            json!({"Default": {"MinimumRevisionAgeToKeep": "soon"}}),
            json!({"Default": {"Disabled": "yes"}}),
            json!({"Collections": []}),
            json!({"Collections": {"Users": {}, "users": {}}}),
        ] {
            assert!(RevisionsConfig::from_json(&bad).is_err(), "{bad}");
        }
    }
}
