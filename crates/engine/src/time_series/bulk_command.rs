//! The `TimeSeriesBulkInsert` command of a bulk insert stream: `{"Name", "TimeFormat", "Appends": [[time,
//! count, value..., tag?], ...]}`, times in .NET ticks (the default), unix milliseconds or nanoseconds.

use corvid_storage::TimeSeriesEntry;
use serde_json::Value;

use super::operation::TimeSeriesOperation;
use crate::EngineError;

/// .NET ticks (100 ns since year 1) of the unix epoch.
const EPOCH_TICKS: i64 = 621_355_968_000_000_000;

/// The `TimeSeries` object of a bulk insert command.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct TimeSeriesBulkBody {
    #[serde(rename = "Name", default)]
    name: Option<String>,
    #[serde(rename = "TimeFormat", default)]
    time_format: Option<String>,
    #[serde(rename = "Appends", default)]
    appends: Option<Vec<Vec<Value>>>,
}

fn number(value: Option<&Value>, what: &str, context: &str) -> Result<f64, EngineError> {
    value.and_then(Value::as_f64).ok_or_else(|| EngineError::bad_request(format!("{context}: {what} must be a number")))
}

/// The operation of a `TimeSeriesBulkInsert` command for document `id`; `context` names the command in errors.
pub(crate) fn parse(id: String, body: TimeSeriesBulkBody, context: &str) -> Result<TimeSeriesOperation, EngineError> {
    let name = body
        .name
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| EngineError::bad_request(format!("{context}: Missing 'Name' property on 'TimeSeriesOperation'")))?;
    let appends =
        body.appends.ok_or_else(|| EngineError::bad_request(format!("{context}: Missing 'Appends' property on 'TimeSeriesOperation'")))?;
    let to_ms: fn(i64) -> i64 = match body.time_format.as_deref().unwrap_or("DotNetTicks") {
        "DotNetTicks" => |t| (t - EPOCH_TICKS).div_euclid(10_000),
        "UnixTimeInMs" => |t| t,
        "UnixTimeInNs" => |t| t.div_euclid(1_000_000),
        other => return Err(EngineError::bad_request(format!("{context}: Unknown time-format '{other}'"))),
    };
    let mut entries = Vec::with_capacity(appends.len());
    for append in appends {
        let time = append.first().and_then(Value::as_i64).ok_or_else(|| {
            EngineError::bad_request(format!("{context}: Not supported type. Was expecting number, but got '{:?}'.", append.first()))
        })?;
        let count = number(append.get(1), "the number of values", context)? as usize;
        if append.len() < 2 + count {
            return Err(EngineError::bad_request(format!("{context}: an append says it has {count} values but has fewer")));
        }
        // A null value (the Python client writes None so) is 0, as RavenDB's `Convert.ToDouble(null)` makes it.
        let value = |v: Option<&Value>| if v.is_some_and(Value::is_null) { Ok(0.0) } else { number(v, "every value", context) };
        let values = (0..count).map(|i| value(append.get(2 + i))).collect::<Result<Vec<_>, _>>()?;
        let tag = match append.get(2 + count) {
            None | Some(Value::Null) => None,
            Some(Value::String(tag)) => Some(tag.clone()),
            Some(other) => return Err(EngineError::bad_request(format!("{context}: Expected a string but got: {other}"))),
        };
        entries.push(TimeSeriesEntry { timestamp: to_ms(time), values, tag });
    }
    Ok(TimeSeriesOperation { document_id: id, name, appends: entries, deletes: Vec::new(), increments: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_in_each_time_format_are_read() {
        let body: TimeSeriesBulkBody =
            serde_json::from_str(r#"{"Name":"Heart","TimeFormat":"UnixTimeInMs","Appends":[[1000,2,1.5,2,"watches/1"],[2000,1,3]]}"#)
                .unwrap();
        let op = parse("users/1".into(), body, "cmd").unwrap();
        assert_eq!(op.appends[0], TimeSeriesEntry { timestamp: 1000, values: vec![1.5, 2.0], tag: Some("watches/1".into()) });
        assert_eq!(op.appends[1].values, vec![3.0]);
        let ticks: TimeSeriesBulkBody =
            serde_json::from_str(&format!(r#"{{"Name":"H","Appends":[[{},1,1]]}}"#, EPOCH_TICKS + 10_000)).unwrap();
        assert_eq!(parse("u".into(), ticks, "cmd").unwrap().appends[0].timestamp, 1);
        let bad: TimeSeriesBulkBody = serde_json::from_str(r#"{"Name":"H","Appends":[[1,3,1]]}"#).unwrap();
        assert!(parse("u".into(), bad, "cmd").is_err());
    }
}
