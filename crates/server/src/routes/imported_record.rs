//! The configuration an import or a dump restore applied from a dump's `DatabaseRecord`, kept in the
//! database's catalog entry as the configuration routes keep it (the engine applied its own part already).

use corvid_engine::CatalogEntry;
use serde_json::{Map, Value};

use super::time_series_config::has_policies;

/// Writes the applied parts into `entry`; returns notes on parts left out (rollup or retention policies,
/// which `POST /admin/timeseries/config` refuses too).
pub(crate) fn keep_in_entry(entry: &mut CatalogEntry, parts: &Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, value) in parts {
        let value = (!value.is_null()).then(|| value.clone());
        match name.as_str() {
            "Revisions" => entry.revisions = value,
            "Expiration" => entry.expiration = value,
            "Refresh" => entry.refresh = value,
            "TimeSeries" => {
                let collections = parts[name].get("Collections").and_then(Value::as_object);
                if collections.is_some_and(|c| c.values().any(has_policies)) {
                    notes
                        .push("The DatabaseRecord's time-series configuration was not applied: it has rollup or retention policies".into());
                } else {
                    entry.time_series = value;
                }
            }
            _ => {}
        }
    }
    notes
}
