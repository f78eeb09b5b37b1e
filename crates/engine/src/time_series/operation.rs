//! One `TimeSeriesOperation` on one series of a document (the `TimeSeries` batch command, `POST /timeseries`,
//! a bulk insert's `TimeSeriesBulkInsert`): range deletes, then increments, then appends, as RavenDB applies
//! them. Creating or removing a series rewrites the document's `@timeseries` (and change vector); changing
//! the values of an existing one does not.

use corvid_storage::{sorted_unique, TimeSeriesEntry, WriteTxn, MAX_VALUES};
use corvid_types::{format_date_ms, id_key, validate_name, NameKind, MAX_DATE_MS, MIN_DATE_MS};

use crate::changes::{pending, Change, TimeSeriesChangeKind};
use crate::write::metadata::refresh_document;
use crate::EngineError;

/// Series whose name starts with this (any case) are incremental: changed only by increments.
pub const INCREMENTAL_PREFIX: &str = "INC:";

/// A range delete; `None` bounds are open.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesDelete {
    /// First timestamp removed, unix milliseconds.
    pub from: Option<i64>,
    /// Last timestamp removed, unix milliseconds.
    pub to: Option<i64>,
}

/// Adds values to an incremental series' entry at a timestamp (creating it at those values).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesIncrement {
    /// Unix milliseconds.
    pub timestamp: i64,
    /// What to add to each value.
    pub values: Vec<f64>,
}

/// The changes to one series of one document.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeriesOperation {
    /// The document.
    pub document_id: String,
    /// The series (names compare case-insensitively).
    pub name: String,
    /// Entries to add or overwrite.
    pub appends: Vec<TimeSeriesEntry>,
    /// Ranges to remove.
    pub deletes: Vec<TimeSeriesDelete>,
    /// Increments of an incremental (`INC:`) series.
    pub increments: Vec<TimeSeriesIncrement>,
}

/// Whether `name` is an incremental series (`INC:` prefix, not a rollup `@` name).
pub fn is_incremental(name: &str) -> bool {
    name.get(..INCREMENTAL_PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(INCREMENTAL_PREFIX)) && !name.contains('@')
}

fn check_values(timestamp: i64, values: &[f64]) -> Result<(), EngineError> {
    if values.is_empty() {
        return Err(EngineError::BadRequest(format!(
            "Failed to append TimeSeries entry at '{}': an entry needs at least one value",
            format_date_ms(timestamp)
        )));
    }
    if values.len() > MAX_VALUES {
        return Err(EngineError::BadRequest(format!(
            "Failed to append TimeSeries entry at '{}': it has {} values, and a time series entry can have at most {MAX_VALUES}",
            format_date_ms(timestamp),
            values.len()
        )));
    }
    if values.iter().any(|v| v.is_nan()) {
        let listed: Vec<String> = values.iter().map(f64::to_string).collect();
        return Err(EngineError::BadRequest(format!(
            "Failed to append TimeSeries entry. TimeSeries entries cannot have 'double.NaN' as one of their values. Failed on Timestamp : '{}', Values : [{}]. ",
            format_date_ms(timestamp),
            listed.join(",")
        )));
    }
    if !(MIN_DATE_MS..=MAX_DATE_MS).contains(&timestamp) {
        return Err(EngineError::BadRequest(format!("Timestamp {timestamp} is outside the dates a time series can hold")));
    }
    Ok(())
}

/// Checks an operation before anything is written: the name, each entry's values (1 to 32, no NaN), tags,
/// and that appends and increments go to the right kind of series.
pub(crate) fn validate(op: &TimeSeriesOperation) -> Result<(), EngineError> {
    if op.name.trim().is_empty() {
        return Err(EngineError::BadRequest("Missing 'Name' property on 'TimeSeriesOperation'".into()));
    }
    validate_name(NameKind::TimeSeries, &op.name)?;
    let incremental = is_incremental(&op.name);
    if incremental && !op.appends.is_empty() {
        return Err(EngineError::BadRequest(format!(
            "Cannot use 'Append' on incremental time series '{}'; use 'Increment' instead",
            op.name
        )));
    }
    if !incremental && !op.increments.is_empty() {
        return Err(EngineError::BadRequest(format!(
            "Time Series name must start with '{INCREMENTAL_PREFIX}' prefix to use 'Increment', but got '{}'",
            op.name
        )));
    }
    for entry in &op.appends {
        check_values(entry.timestamp, &entry.values)?;
        if entry.tag.as_ref().is_some_and(|t| t.len() > 255) {
            return Err(EngineError::BadRequest("TimeSeries tag value cannot exceed 256 bytes".into()));
        }
    }
    for increment in &op.increments {
        check_values(increment.timestamp, &increment.values)?;
    }
    Ok(())
}

/// The entries an increment batch leaves: each timestamp's stored values plus the increments (missing values
/// count as 0), tagged with this database as RavenDB tags incremental entries.
fn incremented(txn: &WriteTxn<'_>, key: &str, name: &str, increments: &[TimeSeriesIncrement]) -> Result<Vec<TimeSeriesEntry>, EngineError> {
    let mut summed: Vec<TimeSeriesIncrement> = Vec::with_capacity(increments.len());
    let mut sorted = increments.to_vec();
    sorted.sort_by_key(|i| i.timestamp);
    for inc in sorted {
        match summed.last_mut() {
            Some(last) if last.timestamp == inc.timestamp => add_into(&mut last.values, &inc.values),
            _ => summed.push(inc),
        }
    }
    let tag = format!("TC:INC-{}", txn.database_id());
    let mut out = Vec::with_capacity(summed.len());
    for inc in summed {
        let mut values = txn.time_series_entries(key, name, inc.timestamp, inc.timestamp)?.pop().map(|e| e.values).unwrap_or_default();
        add_into(&mut values, &inc.values);
        check_values(inc.timestamp, &values)?;
        out.push(TimeSeriesEntry { timestamp: inc.timestamp, values, tag: Some(tag.clone()) });
    }
    Ok(out)
}

fn add_into(values: &mut Vec<f64>, add: &[f64]) {
    if values.len() < add.len() {
        values.resize(add.len(), 0.0);
    }
    for (v, a) in values.iter_mut().zip(add) {
        *v += a;
    }
}

/// Applies an operation in the merger's transaction. The document must exist. Returns the document's new
/// change vector when a series was created or removed.
pub(crate) fn run(txn: &mut WriteTxn<'_>, op: TimeSeriesOperation, now: i64) -> Result<Option<String>, EngineError> {
    validate(&op)?;
    let key = id_key(&op.document_id);
    if txn.document(&key)?.is_none() {
        return Err(EngineError::TimeSeriesDocumentMissing(op.document_id));
    }
    let announced = pending::gathering().then(|| touched(&op));
    let existed = txn.time_series_stats(&key, &op.name)?.is_some();
    for delete in &op.deletes {
        txn.delete_time_series_range(&key, &op.name, delete.from.unwrap_or(i64::MIN), delete.to.unwrap_or(i64::MAX))?;
    }
    if !op.increments.is_empty() {
        let entries = incremented(txn, &key, &op.name, &op.increments)?;
        txn.append_time_series(&key, &op.name, &entries)?;
    }
    if !op.appends.is_empty() {
        txn.append_time_series(&key, &op.name, &sorted_unique(op.appends))?;
    }
    let exists = txn.time_series_stats(&key, &op.name)?.is_some();
    let document_change_vector = if existed == exists { None } else { Some(refresh_document(txn, &key, now)?) };
    if let Some((kind, from_ms, to_ms)) = announced {
        let doc = txn.document(&key)?.ok_or_else(|| EngineError::DocumentDoesNotExist(op.document_id.clone()))?;
        pending::raise(|| Change::TimeSeries {
            kind,
            document_id: doc.id,
            collection: doc.collection,
            name: op.name,
            from_ms,
            to_ms,
            change_vector: doc.change_vector,
        });
    }
    Ok(document_change_vector)
}

/// What the Changes API hears of an operation: put, delete or both, and the span of time it touched (`None`: an
/// open bound of a delete).
fn touched(op: &TimeSeriesOperation) -> (TimeSeriesChangeKind, Option<i64>, Option<i64>) {
    let written = op.appends.iter().map(|e| e.timestamp).chain(op.increments.iter().map(|i| i.timestamp));
    let (mut from, mut to): (Option<Option<i64>>, Option<Option<i64>>) = (None, None);
    let mut widen = |low: Option<i64>, high: Option<i64>| {
        from = Some(match from {
            None => low,
            Some(current) => current.zip(low).map(|(a, b)| a.min(b)),
        });
        to = Some(match to {
            None => high,
            Some(current) => current.zip(high).map(|(a, b)| a.max(b)),
        });
    };
    for timestamp in written {
        widen(Some(timestamp), Some(timestamp));
    }
    for delete in &op.deletes {
        widen(delete.from, delete.to);
    }
    let writes = !op.appends.is_empty() || !op.increments.is_empty();
    let kind = match (writes, op.deletes.is_empty()) {
        (true, true) => TimeSeriesChangeKind::Put,
        (false, _) => TimeSeriesChangeKind::Delete,
        (true, false) => TimeSeriesChangeKind::Mixed,
    };
    (kind, from.flatten(), to.flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, values: Vec<f64>) -> TimeSeriesOperation {
        TimeSeriesOperation {
            document_id: "users/1".into(),
            name: name.into(),
            appends: vec![TimeSeriesEntry { timestamp: 0, values, tag: None }],
            deletes: vec![],
            increments: vec![],
        }
    }

    #[test]
    fn bad_values_and_names_are_refused() {
        assert!(validate(&op("Heart", vec![1.0])).is_ok());
        assert!(validate(&op("Heart", vec![])).is_err());
        assert!(validate(&op("Heart", vec![1.0; 33])).is_err());
        let nan = validate(&op("Heart", vec![1.0, f64::NAN])).unwrap_err().to_string();
        assert!(nan.contains("TimeSeries entries cannot have 'double.NaN' as one of their values"), "{nan}");
        assert!(validate(&op("INC:Views", vec![1.0])).is_err(), "appends to an incremental series");
        assert!(validate(&op(" ", vec![1.0])).is_err());
        assert!(is_incremental("inc:Views") && !is_incremental("INC:Views@ByHour") && !is_incremental("Views"));
    }
}
