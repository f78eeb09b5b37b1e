//! `/databases/{db}/timeseries`: appends, deletes and increments of one series (`POST`), range reads (`GET`,
//! `GET /ranges`) with RavenDB's paging and document includes, per-document stats (`GET /stats`); and the
//! parsing of a `TimeSeriesOperation` shared with the `TimeSeries` batch command.

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use corvid_engine::{
    TimeSeriesDelete, TimeSeriesEntry, TimeSeriesInclude, TimeSeriesIncrement, TimeSeriesOperation, TimeSeriesRange, TimeSeriesRangeRequest,
};
use corvid_types::{format_date_ms, parse_date_ms, MAX_DATE_MS, MIN_DATE_MS};
use serde_json::{json, Map, Value};

use crate::body::{parse_json, read_body};
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value, no_content, not_found};
use crate::state::AppState;

/// A date of the protocol as unix milliseconds; .NET's `DateTime.MinValue`/`MaxValue` become open bounds.
fn parse_bound(text: &str, what: &str) -> ApiResult<Option<i64>> {
    let ms = parse_date_ms(text).ok_or_else(|| ApiError::BadRequest(format!("Unable to parse {what} '{text}' as a date")))?;
    Ok((MIN_DATE_MS < ms && ms < MAX_DATE_MS).then_some(ms))
}

fn timestamp(value: Option<&Value>, index: usize) -> ApiResult<i64> {
    let text =
        value.and_then(Value::as_str).ok_or_else(|| ApiError::BadRequest(format!("Missing 'Timestamp' property (entry #{index})")))?;
    parse_date_ms(text).ok_or_else(|| ApiError::BadRequest(format!("Unable to parse timestamp '{text}' of entry #{index} as a date")))
}

fn values(value: Option<&Value>, index: usize) -> ApiResult<Vec<f64>> {
    let Some(Value::Array(items)) = value else {
        return Err(ApiError::BadRequest(format!("Missing 'Values' property (entry #{index})")));
    };
    items
        .iter()
        .map(|v| v.as_f64().ok_or_else(|| ApiError::BadRequest(format!("Entry #{index}: every value must be a number, got {v}"))))
        .collect()
}

fn objects<'a>(op: &'a Value, field: &str) -> ApiResult<&'a [Value]> {
    match op.get(field) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(ApiError::BadRequest(format!("'{field}' of a TimeSeriesOperation must be an array"))),
    }
}

/// A `TimeSeriesOperation` (`Name`, `Appends`, `Deletes`, `Increments`) on the document `id`.
pub fn parse_operation(id: String, op: &Value) -> ApiResult<TimeSeriesOperation> {
    let name = op
        .get("Name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::BadRequest("Missing 'Name' property on 'TimeSeriesOperation'".into()))?
        .to_owned();
    let mut appends = Vec::new();
    for (i, a) in objects(op, "Appends")?.iter().enumerate() {
        let tag = a.get("Tag").and_then(Value::as_str).map(str::to_owned);
        appends.push(TimeSeriesEntry { timestamp: timestamp(a.get("Timestamp"), i)?, values: values(a.get("Values"), i)?, tag });
    }
    let mut deletes = Vec::new();
    for d in objects(op, "Deletes")? {
        let bound = |field: &str| -> ApiResult<Option<i64>> {
            match d.get(field).and_then(Value::as_str) {
                None => Ok(None),
                Some(text) => parse_bound(text, field),
            }
        };
        deletes.push(TimeSeriesDelete { from: bound("From")?, to: bound("To")? });
    }
    let mut increments = Vec::new();
    for (i, inc) in objects(op, "Increments")?.iter().enumerate() {
        increments.push(TimeSeriesIncrement { timestamp: timestamp(inc.get("Timestamp"), i)?, values: values(inc.get("Values"), i)? });
    }
    Ok(TimeSeriesOperation { document_id: id, name, appends, deletes, increments })
}

/// Whether JSON text holds a bare `NaN` token (outside strings), as Python's `json` writes a NaN value.
fn has_bare_nan(bytes: &[u8]) -> bool {
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in bytes.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if *b == b'"' {
            in_string = true;
        } else if bytes[i..].starts_with(b"NaN") {
            return true;
        }
    }
    false
}

/// A body that is not JSON because a value is NaN gets RavenDB's time-series answer (its parser reads NaN,
/// then the append refuses it); any other parse error stays as it is.
pub fn explain_nan(bytes: &[u8], error: ApiError) -> ApiError {
    if matches!(error, ApiError::InvalidJson(_)) && has_bare_nan(bytes) {
        return ApiError::BadRequest(
            "Failed to append TimeSeries entry. TimeSeries entries cannot have 'double.NaN' as one of their values.".into(),
        );
    }
    error
}

/// `POST /timeseries?docId=`: one operation, answered 204 once durable (404 for a missing document).
pub async fn post(
    State(state): State<AppState>,
    Path(db): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let id = required_doc_id(&params)?;
    let bytes = read_body(body, &headers, state.config.max_body_bytes).await?;
    let request = parse_json(&bytes).map_err(|e| explain_nan(&bytes, e))?;
    let op = parse_operation(id, &request)?;
    let database = state.landlord.database(&db).await?;
    blocking(move || Ok(database.time_series_blocking(op)?)).await?;
    Ok(no_content())
}

fn required_doc_id(params: &QueryParams) -> ApiResult<String> {
    params
        .get_non_empty("docId")
        .map(str::to_owned)
        .ok_or_else(|| ApiError::BadRequest("Query string parameter 'docId' is required and must not be empty".into()))
}

/// An entry as RavenDB lists it; entries of a rollup series (`<series>@<policy>`) are `IsRollup`.
fn entry_json(entry: &TimeSeriesEntry, rollup: bool) -> Value {
    json!({"Timestamp": format_date_ms(entry.timestamp), "Tag": entry.tag, "Values": entry.values, "IsRollup": rollup})
}

fn range_json(range: &TimeSeriesRange, includes: Option<&Value>) -> Value {
    let mut out = Map::new();
    out.insert("From".into(), range.from.map(format_date_ms).into());
    out.insert("To".into(), range.to.map(format_date_ms).into());
    out.insert("Entries".into(), Value::Array(range.entries.iter().map(|e| entry_json(e, range.name.contains('@'))).collect()));
    if let Some(total) = range.total_results {
        out.insert("TotalResults".into(), total.into());
    }
    if let Some(includes) = includes {
        out.insert("Includes".into(), includes.clone());
    }
    Value::Object(out)
}

/// The `Includes` of a range read: the document itself (`includeDocument`) and the documents its entries'
/// tags name (`includeTags`), by id.
fn includes_json(
    database: &corvid_engine::Database,
    id: &str,
    ranges: &[TimeSeriesRange],
    document: bool,
    tags: bool,
) -> ApiResult<Option<Value>> {
    if !document && !tags {
        return Ok(None);
    }
    let mut ids: Vec<String> = Vec::new();
    if document {
        ids.push(id.to_owned());
    }
    if tags {
        for tag in ranges.iter().flat_map(|r| r.entries.iter().filter_map(|e| e.tag.clone())) {
            if !ids.iter().any(|known| known.eq_ignore_ascii_case(&tag)) {
                ids.push(tag);
            }
        }
    }
    let loaded = database.load(&ids, &[], false)?;
    let mut out = Map::new();
    for (id, doc) in ids.iter().zip(loaded.results) {
        if let Some(doc) = doc {
            out.insert(id.clone(), corvid_types::json::parse(&doc).map_err(|e| ApiError::Internal(e.to_string()))?);
        }
    }
    Ok(Some(Value::Object(out)))
}

/// The series a document load includes: `timeseries` with `from`/`to`, `timeseriestime` with `timeType`,
/// `timeValue`, `timeUnit`, `timeseriescount` with `countType`, `countValue` (each list in request order).
pub fn load_includes(params: &QueryParams) -> ApiResult<Vec<TimeSeriesInclude>> {
    let mut out = Vec::new();
    for request in range_requests(params, params.get_all("timeseries"))? {
        out.push(TimeSeriesInclude::Range(request));
    }
    let (units, values) = (params.get_all("timeUnit"), params.get_all("timeValue"));
    for (i, name) in params.get_all("timeseriestime").into_iter().enumerate() {
        let value: i64 = values
            .get(i)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| ApiError::BadRequest(format!("Time series include '{name}' needs a numeric 'timeValue'")))?;
        out.push(match units.get(i).map(String::as_str) {
            Some("Month") => TimeSeriesInclude::LastMonths { name, months: value },
            Some("Second") => TimeSeriesInclude::LastSeconds { name, seconds: value },
            other => return Err(ApiError::BadRequest(format!("Time series include '{name}': unsupported time unit {other:?}"))),
        });
    }
    let counts = params.get_all("countValue");
    for (i, name) in params.get_all("timeseriescount").into_iter().enumerate() {
        let count = counts
            .get(i)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| ApiError::BadRequest(format!("Time series include '{name}' needs a numeric 'countValue'")))?;
        out.push(TimeSeriesInclude::LastCount { name, count });
    }
    Ok(out)
}

/// `TimeSeriesIncludes` of a load: per document id, per series name, its ranges.
pub fn load_includes_json(
    database: &corvid_engine::Database,
    ids: &[String],
    includes: &[TimeSeriesInclude],
) -> Result<Value, corvid_engine::EngineError> {
    Ok(series_includes_json(&database.time_series_includes(ids, includes)?))
}

/// `TimeSeriesIncludes`: by document id, by series name, the included ranges (also sent by subscription batches).
pub fn series_includes_json(series: &[(String, Vec<TimeSeriesRange>)]) -> Value {
    let mut out = Map::new();
    for (id, ranges) in series {
        let mut by_name: Map<String, Value> = Map::new();
        for range in ranges {
            let slot = by_name.entry(range.name.clone()).or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = slot {
                list.push(range_json(range, None));
            }
        }
        out.insert(id.clone(), Value::Object(by_name));
    }
    Value::Object(out)
}

/// The ranges of a request: each `name` with its `from`/`to` (empty = open), and the paging.
fn range_requests(params: &QueryParams, names: Vec<String>) -> ApiResult<Vec<TimeSeriesRangeRequest>> {
    let (froms, tos) = (params.get_all("from"), params.get_all("to"));
    if froms.len() > names.len() || tos.len() > names.len() {
        return Err(ApiError::BadRequest(
            "Length of query string values 'from' must be equal to the length of query string values 'to'".into(),
        ));
    }
    let bound = |list: &[String], i: usize, what: &str| -> ApiResult<Option<i64>> {
        match list.get(i).filter(|s| !s.is_empty()) {
            None => Ok(None),
            Some(text) => parse_bound(text, what),
        }
    };
    let mut out = Vec::with_capacity(names.len());
    for (i, name) in names.into_iter().enumerate() {
        if name.trim().is_empty() {
            return Err(ApiError::BadRequest("Query string parameter 'name' is required and must not be empty".into()));
        }
        out.push(TimeSeriesRangeRequest { name, from: bound(&froms, i, "from")?, to: bound(&tos, i, "to")? });
    }
    Ok(out)
}

/// `GET /timeseries?docId=&name=&from=&to=&start=&pageSize=`: one range (`TimeSeriesRangeResult`).
pub async fn get(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let id = required_doc_id(&params)?;
    let name = params.get_non_empty("name").ok_or_else(|| ApiError::BadRequest("Query string parameter 'name' is required".into()))?;
    let requests = range_requests(&params, vec![name.to_owned()])?;
    let (start, page_size) = (params.get_usize("start", 0), params.get_usize("pageSize", usize::MAX));
    let (document, tags) = (params.get_bool("includeDocument"), params.get_bool("includeTags"));
    let database = state.landlord.database(&db).await?;
    let answer = blocking(move || {
        let Some(ranges) = database.time_series_ranges(&id, &requests, start, page_size)? else { return Ok(None) };
        let includes = includes_json(&database, &id, &ranges, document, tags)?;
        // A page size of 0 reads nothing: an empty range.
        let empty = || TimeSeriesRange { name: String::new(), from: None, to: None, entries: Vec::new(), total_results: None };
        Ok(Some(range_json(ranges.first().unwrap_or(&empty()), includes.as_ref())))
    })
    .await?;
    match answer {
        None => Ok(not_found()),
        Some(body) => Ok(json_value(StatusCode::OK, &body)),
    }
}

/// `GET /timeseries/ranges?docId=&name=&from=&to=...`: several ranges paged together (`TimeSeriesDetails`).
pub async fn get_ranges(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let id = required_doc_id(&params)?;
    let requests = range_requests(&params, params.get_all("name"))?;
    if requests.is_empty() {
        return Err(ApiError::BadRequest("Query string parameter 'name' is required".into()));
    }
    let (start, page_size) = (params.get_usize("start", 0), params.get_usize("pageSize", usize::MAX));
    let (document, tags) = (params.get_bool("includeDocument"), params.get_bool("includeTags"));
    let database = state.landlord.database(&db).await?;
    let answer = blocking(move || {
        let Some(ranges) = database.time_series_ranges(&id, &requests, start, page_size)? else { return Ok(None) };
        let includes = includes_json(&database, &id, &ranges, document, tags)?;
        // Ranges of the same series (any case) are listed together, under the first spelling asked for.
        let mut values: Vec<(String, Vec<Value>)> = Vec::new();
        for range in &ranges {
            let json = range_json(range, includes.as_ref());
            match values.iter_mut().find(|(name, _)| name.eq_ignore_ascii_case(&range.name)) {
                Some((_, list)) => list.push(json),
                None => values.push((range.name.clone(), vec![json])),
            }
        }
        let values: Map<String, Value> = values.into_iter().map(|(name, list)| (name, Value::Array(list))).collect();
        Ok(Some(json!({"Id": id, "Values": values})))
    })
    .await?;
    match answer {
        None => Ok(not_found()),
        Some(body) => Ok(json_value(StatusCode::OK, &body)),
    }
}

/// `GET /timeseries/stats?docId=`: each series of the document with its entry count and first and last
/// timestamps (`TimeSeriesStatistics`); 404 for a missing document.
pub async fn stats(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let params = QueryParams::parse(raw.as_deref())?;
    let id = required_doc_id(&params)?;
    let database = state.landlord.database(&db).await?;
    let Some((_, series)) = blocking(move || Ok(database.time_series_stats(&id)?)).await? else {
        return Ok(not_found());
    };
    let id = params.get_non_empty("docId").unwrap_or_default();
    let list: Vec<Value> = series
        .iter()
        .map(
            |s| json!({"Name": s.name, "NumberOfEntries": s.count, "StartDate": format_date_ms(s.start), "EndDate": format_date_ms(s.end)}),
        )
        .collect();
    Ok(json_value(StatusCode::OK, &json!({"DocumentId": id, "TimeSeries": list})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_nan_tokens_are_found_outside_strings_only() {
        assert!(has_bare_nan(br#"{"Values":[1,NaN]}"#));
        assert!(!has_bare_nan(br#"{"Tag":"NaN \" NaN","Values":[1]}"#));
        assert!(!has_bare_nan(br#"{"Values":[1]}"#));
    }
}
