//! Running a parsed time-series sub-query on one document's series: the entries in range that pass `where`,
//! either as they are (`TimeSeriesRawResult`: `Count`, `Results` of `Timestamp`, `Tag`, `Values`,
//! `IsRollup`) or aggregated per bucket (`TimeSeriesAggregationResult`: `Count`, `Results` of `From`, `To`
//! and one array per aggregation, one item per value position).

use std::cmp::Ordering;
use std::collections::HashMap;

use corvid_storage::{ReadTxn, TimeSeriesEntry};
use corvid_types::{format_date_ms, id_key};
use serde_json::{json, Map, Value as Json};

use super::parse::{Aggregation, Comparison, Filter, Operand, TimeSeriesQuery};
use crate::reads::VersionHasher;
use crate::EngineError;

/// Every aggregation, for a `group by` without `select`.
const ALL: [Aggregation; 7] =
    [Aggregation::First, Aggregation::Last, Aggregation::Min, Aggregation::Max, Aggregation::Sum, Aggregation::Count, Aggregation::Average];

/// The documents named by entries' tags (`load Tag as alias`), each read once per query.
struct TagDocuments<'s, 't> {
    snapshot: &'s ReadTxn<'t>,
    read: HashMap<String, Option<Json>>,
}

impl TagDocuments<'_, '_> {
    fn field(&mut self, tag: Option<&str>, path: &[String]) -> Result<Json, EngineError> {
        let Some(tag) = tag else { return Ok(Json::Null) };
        if !self.read.contains_key(tag) {
            let body = match self.snapshot.document(&id_key(tag))? {
                Some(doc) => Some(corvid_types::json::parse(&doc.body).map_err(|e| EngineError::Internal(format!("document {tag}: {e}")))?),
                None => None,
            };
            self.read.insert(tag.to_owned(), body);
        }
        let mut value = self.read.get(tag).and_then(Option::as_ref);
        for field in path {
            value = value.and_then(|v| v.get(field));
        }
        Ok(value.cloned().unwrap_or(Json::Null))
    }
}

fn operand_value(operand: &Operand, entry: &TimeSeriesEntry, tags: &mut TagDocuments<'_, '_>) -> Result<Json, EngineError> {
    Ok(match operand {
        Operand::Tag => entry.tag.clone().map_or(Json::Null, Json::String),
        Operand::Value(i) => entry.values.get(*i).copied().and_then(serde_json::Number::from_f64).map_or(Json::Null, Json::Number),
        Operand::Timestamp => Json::String(format_date_ms(entry.timestamp)),
        Operand::Literal(value) => value.clone(),
        Operand::Loaded(path) => tags.field(entry.tag.as_deref(), path)?,
    })
}

fn compare(left: &Json, right: &Json) -> Option<Ordering> {
    match (left, right) {
        (Json::Number(a), Json::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Json::String(a), Json::String(b)) => {
            // Timestamps compare as instants, everything else as text ignoring case.
            match (corvid_types::parse_date_ms(a), corvid_types::parse_date_ms(b)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => Some(a.to_lowercase().cmp(&b.to_lowercase())),
            }
        }
        (Json::Null, Json::Null) => Some(Ordering::Equal),
        (Json::Bool(a), Json::Bool(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn passes(filter: &Filter, entry: &TimeSeriesEntry, tags: &mut TagDocuments<'_, '_>) -> Result<bool, EngineError> {
    Ok(match filter {
        Filter::And(a, b) => passes(a, entry, tags)? && passes(b, entry, tags)?,
        Filter::Or(a, b) => passes(a, entry, tags)? || passes(b, entry, tags)?,
        Filter::Not(inner) => !passes(inner, entry, tags)?,
        Filter::In(operand, values) => {
            let value = operand_value(operand, entry, tags)?;
            values.iter().any(|v| compare(&value, v) == Some(Ordering::Equal))
        }
        Filter::Compare(left, op, right) => {
            let order = compare(&operand_value(left, entry, tags)?, &operand_value(right, entry, tags)?);
            match op {
                Comparison::Equal => order == Some(Ordering::Equal),
                Comparison::NotEqual => order != Some(Ordering::Equal),
                Comparison::Less => order == Some(Ordering::Less),
                Comparison::LessOrEqual => matches!(order, Some(Ordering::Less | Ordering::Equal)),
                Comparison::Greater => order == Some(Ordering::Greater),
                Comparison::GreaterOrEqual => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
            }
        }
    })
}

/// One bucket's running aggregation, per value position.
#[derive(Default)]
struct Accumulator {
    from: i64,
    to: i64,
    count: Vec<u64>,
    min: Vec<f64>,
    max: Vec<f64>,
    sum: Vec<f64>,
    first: Vec<f64>,
    last: Vec<f64>,
}

impl Accumulator {
    fn add(&mut self, values: &[f64]) {
        for (i, value) in values.iter().copied().enumerate() {
            if i >= self.count.len() {
                self.count.push(0);
                self.min.push(value);
                self.max.push(value);
                self.sum.push(0.0);
                self.first.push(value);
                self.last.push(value);
            }
            self.count[i] += 1;
            self.min[i] = self.min[i].min(value);
            self.max[i] = self.max[i].max(value);
            self.sum[i] += value;
            self.last[i] = value;
        }
    }

    fn render(&self, aggregations: &[Aggregation]) -> Json {
        let numbers = |values: Vec<f64>| Json::Array(values.into_iter().map(|v| json!(v)).collect());
        let mut out = Map::new();
        out.insert("From".into(), Json::String(format_date_ms(self.from)));
        out.insert("To".into(), Json::String(format_date_ms(self.to)));
        // The clients read `Count` whatever was selected.
        out.insert("Count".into(), json!(self.count));
        for aggregation in aggregations {
            let value = match aggregation {
                Aggregation::Min => numbers(self.min.clone()),
                Aggregation::Max => numbers(self.max.clone()),
                Aggregation::Sum => numbers(self.sum.clone()),
                Aggregation::First => numbers(self.first.clone()),
                Aggregation::Last => numbers(self.last.clone()),
                Aggregation::Count => continue,
                Aggregation::Average => numbers(self.sum.iter().zip(&self.count).map(|(s, c)| s / *c as f64).collect()),
            };
            out.insert(aggregation.field().into(), value);
        }
        Json::Object(out)
    }
}

/// Runs `query` on the series of the document whose lower-cased id is `doc_key`, adding every value it
/// read to `hasher` (the query's etag). Aggregations are computed while the entries stream by: a year of
/// per-minute values is never held in memory.
pub(crate) fn run(snapshot: &ReadTxn<'_>, doc_key: &str, query: &TimeSeriesQuery, hasher: &mut VersionHasher) -> Result<Json, EngineError> {
    let (from, to) = (query.from.unwrap_or(i64::MIN), query.to.unwrap_or(i64::MAX));
    let raw = query.group_by.is_none() && query.aggregations.is_empty();
    let mut entries = Vec::new();
    let mut buckets: Vec<Accumulator> = Vec::new();
    let (mut count, mut first_at, mut last_at) = (0usize, 0i64, 0i64);
    let mut tags = TagDocuments { snapshot, read: HashMap::new() };
    let mut failed = None;
    snapshot.visit_time_series(doc_key, &query.series, from, to, |mut entry| {
        if let Some(filter) = &query.filter {
            match passes(filter, &entry, &mut tags) {
                Ok(true) => {}
                Ok(false) => return true,
                Err(e) => {
                    failed = Some(e);
                    return false;
                }
            }
        }
        // `offset`: results (and their buckets) in local time; `between` and `where` saw UTC.
        entry.timestamp += query.offset_ms;
        if let Some(scale) = query.scale {
            entry.values.iter_mut().for_each(|v| *v *= scale);
        }
        for value in &entry.values {
            hasher.add(&value.to_be_bytes());
        }
        if count == 0 {
            first_at = entry.timestamp;
        }
        last_at = entry.timestamp;
        count += 1;
        if raw {
            entries.push(entry);
            return true;
        }
        // Without `group by`, one bucket whose bounds are set once every entry is in.
        let current = buckets.last().filter(|b| query.group_by.is_none() || (b.from <= entry.timestamp && entry.timestamp < b.to));
        if current.is_none() {
            let (start, end) = query.group_by.map_or((0, 0), |bucket| bucket.range_of(entry.timestamp));
            buckets.push(Accumulator { from: start, to: end, ..Accumulator::default() });
        }
        buckets.last_mut().expect("pushed above").add(&entry.values);
        true
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    if raw {
        // Entries of a rollup series (`<series>@<policy>`) are rollups.
        let rollup = query.series.contains('@');
        let results: Vec<Json> = entries
            .into_iter()
            .map(|e| json!({"Timestamp": format_date_ms(e.timestamp), "Tag": e.tag, "Values": e.values, "IsRollup": rollup}))
            .collect();
        return Ok(json!({"Count": count, "Results": results}));
    }
    if query.group_by.is_none() {
        // One bucket over the whole range asked for (or the entries found).
        if let Some(only) = buckets.first_mut() {
            only.from = query.from.map_or(first_at, |from| from + query.offset_ms);
            only.to = query.to.map_or(last_at, |to| to + query.offset_ms);
        }
    }
    let aggregations: &[Aggregation] = if query.aggregations.is_empty() { &ALL } else { &query.aggregations };
    let results: Vec<Json> = buckets.iter().map(|b| b.render(aggregations)).collect();
    Ok(json!({"Count": count, "Results": results}))
}
