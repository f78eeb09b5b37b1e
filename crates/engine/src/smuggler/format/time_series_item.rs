//! The JSON around time series in a dump: a `TimeSeries` item is a header
//! `{"@raven-data":{"DocId","Name","ChangeVector","Collection","Baseline"},"@raven-blob-size":n}` followed by
//! the segment's `n` bytes; a `TimeSeriesDeletedRanges` item names a range of a series removed.

use corvid_types::{format_date_ms, parse_date_ms, MAX_DATE_MS, MIN_DATE_MS};
use serde_json::{json, Value};

use super::sections::BLOB_SIZE;

/// `@raven-data`: the key of a time-series item's description.
pub(crate) const RAVEN_DATA: &str = "@raven-data";

/// What a `TimeSeries` item says of the segment after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SegmentHeader {
    pub doc_id: String,
    pub name: String,
    pub collection: String,
    pub change_vector: String,
    /// The segment's start, unix milliseconds.
    pub baseline: i64,
    pub blob_size: u64,
}

/// The header item of a segment.
pub(crate) fn render_header(header: &SegmentHeader) -> Value {
    json!({
        RAVEN_DATA: {
            "DocId": header.doc_id.to_lowercase(), "Name": header.name, "ChangeVector": header.change_vector,
            "Collection": header.collection, "Baseline": format_date_ms(header.baseline)
        },
        BLOB_SIZE: header.blob_size
    })
}

/// Reads a header item. `Err` when the blob's size is missing (the dump cannot be read on); `Ok(Err)`
/// when the description is incomplete (the blob is skipped, as RavenDB skips it).
pub(crate) fn parse_header(item: &Value) -> Result<Result<SegmentHeader, (u64, String)>, String> {
    let blob_size = item.get(BLOB_SIZE).and_then(Value::as_u64).ok_or("a time-series item needs a numeric '@raven-blob-size'")?;
    let data = item.get(RAVEN_DATA);
    let text = |key: &str| data.and_then(|d| d.get(key)).and_then(Value::as_str);
    let (Some(doc_id), Some(name), Some(collection), Some(baseline)) = (text("DocId"), text("Name"), text("Collection"), text("Baseline"))
    else {
        return Ok(Err((blob_size, "a time-series item lacks one of DocId, Name, Collection, Baseline".into())));
    };
    let Some(baseline) = parse_date_ms(baseline) else {
        return Ok(Err((blob_size, format!("the baseline '{baseline}' is not a date"))));
    };
    Ok(Ok(SegmentHeader {
        doc_id: doc_id.to_owned(),
        name: name.to_owned(),
        collection: collection.to_owned(),
        change_vector: text("ChangeVector").unwrap_or_default().to_owned(),
        baseline,
        blob_size,
    }))
}

/// A range of a series deleted (bounds in unix milliseconds, inclusive).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeletedRange {
    pub doc_id: String,
    pub name: String,
    pub from: i64,
    pub to: i64,
}

/// The item of a deleted range; `None` bounds are the whole time line.
pub(crate) fn render_deleted_range(doc_id: &str, name: &str, collection: &str, change_vector: &str) -> Value {
    json!({
        "DocId": doc_id.to_lowercase(), "Name": name, "Collection": collection, "ChangeVector": change_vector,
        "From": format_date_ms(MIN_DATE_MS), "To": format_date_ms(MAX_DATE_MS)
    })
}

/// Reads a `TimeSeriesDeletedRanges` item.
pub(crate) fn parse_deleted_range(item: &Value) -> Result<DeletedRange, String> {
    let text = |key: &str| item.get(key).and_then(Value::as_str);
    let doc_id = text("DocId").ok_or("a deleted range needs a 'DocId'")?;
    let name = text("Name").ok_or("a deleted range needs a 'Name'")?;
    // Dates beyond what Corvid parses (`0001-01-01`, `9999-12-31T23:59:59.9999999`) are the open ends.
    let bound = |key: &str, open: i64| text(key).and_then(parse_date_ms).unwrap_or(open);
    Ok(DeletedRange { doc_id: doc_id.to_owned(), name: name.to_owned(), from: bound("From", i64::MIN), to: bound("To", i64::MAX) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_read_ravendbs() {
        let header = SegmentHeader {
            doc_id: "Users/1".into(),
            name: "HeartRate@ByHour".into(),
            collection: "Users".into(),
            change_vector: "A:1-x".into(),
            baseline: 1_576_540_800_000,
            blob_size: 99,
        };
        let item = render_header(&header);
        assert_eq!(item["@raven-data"]["Baseline"], "2019-12-17T00:00:00.0000000Z");
        assert_eq!(parse_header(&item).unwrap().unwrap(), SegmentHeader { doc_id: "users/1".into(), ..header });
        let ravendb = json!({"@raven-data":{"DocId":"companies/1-a","Name":"StockPrices","ChangeVector":"A:2568-x",
            "Collection":"Companies","Baseline":"2019-12-17T00:00:00.0000000Z"},"@raven-blob-size":1051});
        assert_eq!(parse_header(&ravendb).unwrap().unwrap().blob_size, 1051);
        assert!(parse_header(&json!({"@raven-data": {}})).is_err(), "no size: the dump cannot be read on");
        assert_eq!(parse_header(&json!({"@raven-blob-size": 5})).unwrap().unwrap_err().0, 5);
        let range = parse_deleted_range(&render_deleted_range("Users/1", "HR", "Users", "A:1-x")).unwrap();
        assert_eq!((range.from <= MIN_DATE_MS, range.to >= MAX_DATE_MS), (true, true));
        let ravendb = json!({"DocId":"u/1","Name":"HR","From":"0001-01-01T00:00:00.0000000Z","To":"9999-12-31T23:59:59.9999999Z"});
        let range = parse_deleted_range(&ravendb).unwrap();
        assert!(range.from <= MIN_DATE_MS && range.to >= MAX_DATE_MS);
    }
}
