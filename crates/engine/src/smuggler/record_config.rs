//! The configuration a dump's `DatabaseRecord` carries and Corvid keeps per database: `Revisions`,
//! `Expiration` and `Refresh` (and `TimeSeries`, kept by the server's catalog only). Export writes them;
//! import applies each part the options select (`OperateOnDatabaseRecordTypes`, RavenDB's semantics: only
//! when `DatabaseRecord` is among the item types, and a part absent or null in the dump changes nothing),
//! and lists what it applied in [`SmugglerResult::record_config`] for the caller's catalog.
//!
//! [`SmugglerResult::record_config`]: super::SmugglerResult::record_config

use serde_json::{Map, Value};

use super::smuggler_result::SmugglerResult;
use crate::expiration::SweepConfig;
use crate::revisions::RevisionsConfig;
use crate::{Database, EngineError};

/// The parts of the record an import applies (`OperateOnDatabaseRecordTypes`), by RavenDB's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordTypes {
    names: Vec<String>,
}

/// The parts the clients select by default that Corvid knows.
const DEFAULT_PARTS: &[&str] = &["Revisions", "Expiration", "Refresh", "TimeSeries"];

impl Default for RecordTypes {
    fn default() -> Self {
        RecordTypes { names: DEFAULT_PARTS.iter().map(|s| s.to_string()).collect() }
    }
}

impl RecordTypes {
    /// Reads the flags string the clients send (`"Revisions, Expiration"`; null or absent: the defaults).
    pub fn from_options(json: &Value) -> RecordTypes {
        match json.get("OperateOnDatabaseRecordTypes").and_then(Value::as_str) {
            None => RecordTypes::default(),
            Some(text) => RecordTypes { names: text.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect() },
        }
    }

    /// Whether the part named `name` is applied.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }
}

/// Adds the database's configuration to the record being exported.
pub(crate) fn export_parts(db: &Database, record: &mut Map<String, Value>) -> Result<(), EngineError> {
    let revisions = db.revisions_config()?.map(|c| c.to_json()).unwrap_or(Value::Null);
    record.insert("Revisions".into(), revisions);
    for (name, refresh) in [("Expiration", false), ("Refresh", true)] {
        let config = db.expiration_config(refresh)?.map(|c| c.to_json(refresh)).unwrap_or(Value::Null);
        record.insert(name.into(), config);
    }
    Ok(())
}

/// Applies the selected parts of an imported record; a part that cannot be read is noted and skipped, as
/// RavenDB skips it. The revisions configuration is handed back, to be set once the import's documents
/// are in: set before them, a document's attachments would make revisions the dump does not have.
pub(crate) fn apply(
    db: &Database,
    record: &Value,
    types: &RecordTypes,
    result: &mut SmugglerResult,
) -> Result<Option<RevisionsConfig>, EngineError> {
    result.database_record.processed = true;
    let part = |name: &str| record.get(name).filter(|v| !v.is_null() && types.contains(name));
    let mut applied = Map::new();
    let mut revisions = None;
    if let Some(value) = part("Revisions") {
        match RevisionsConfig::from_json(value) {
            Ok(config) => {
                let rendered = if config.is_empty() { Value::Null } else { config.to_json() };
                revisions = Some(config);
                applied.insert("Revisions".into(), rendered);
            }
            Err(e) => note_bad(result, "Revisions", &e),
        }
    }
    for (name, refresh) in [("Expiration", false), ("Refresh", true)] {
        if let Some(value) = part(name) {
            match SweepConfig::from_json(value, refresh) {
                Ok(config) => {
                    db.set_expiration_config(refresh, &config)?;
                    applied.insert(name.into(), config.to_json(refresh));
                }
                Err(e) => note_bad(result, name, &e),
            }
        }
    }
    if let Some(value) = part("TimeSeries").filter(|v| v.is_object()) {
        applied.insert("TimeSeries".into(), value.clone());
    }
    if applied.is_empty() {
        result.database_record.skipped += 1;
    } else {
        result.database_record.read += 1;
        let names: Vec<&str> = applied.keys().map(String::as_str).collect();
        result.note(format!("The DatabaseRecord's configuration was applied: {}", names.join(", ")));
    }
    result.record_config = applied;
    Ok(revisions)
}

fn note_bad(result: &mut SmugglerResult, part: &str, e: &EngineError) {
    result.database_record.errored += 1;
    result.note(format!("The DatabaseRecord's '{part}' configuration was skipped: {e}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_clients_flags() {
        assert!(RecordTypes::from_options(&json!({})).contains("revisions"));
        let types = RecordTypes::from_options(&json!({"OperateOnDatabaseRecordTypes": "Expiration, Refresh"}));
        assert!(types.contains("Expiration") && types.contains("Refresh") && !types.contains("Revisions"));
        assert!(!RecordTypes::from_options(&json!({"OperateOnDatabaseRecordTypes": "None"})).contains("TimeSeries"));
    }
}
