//! The configuration an import or a dump restore applied from a dump's `DatabaseRecord`, kept in the
//! database's catalog entry as the configuration routes keep it (the engine applied its own part already).

use corvid_engine::CatalogEntry;
use serde_json::{Map, Value};

use corvid_engine::time_series_policy::parse_configuration;

/// Writes the applied parts into `entry`; returns notes on parts left out (a time-series configuration that
/// `POST /admin/timeseries/config` would refuse). The caller hands the entry's policies to the runner.
pub(crate) fn keep_in_entry(entry: &mut CatalogEntry, parts: &Map<String, Value>) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, value) in parts {
        let value = (!value.is_null()).then(|| value.clone());
        match name.as_str() {
            "Revisions" => entry.revisions = value,
            "Expiration" => entry.expiration = value,
            "Refresh" => entry.refresh = value,
            "TimeSeries" => match value.as_ref().map(parse_configuration).transpose() {
                Ok(checked) => entry.time_series = checked.map(|(config, _)| config),
                Err(e) => notes.push(format!("The DatabaseRecord's time-series configuration was not applied: {e}")),
            },
            _ => {}
        }
    }
    notes
}
