//! An automatic map-reduce index (`Auto/Orders/ByCountReducedByCompany`, made by `group by` queries) as
//! RavenDB persists it in a dump's `Indexes` section: `Type: AutoMapReduce`, its aggregations as
//! `MapFields` (`Aggregation`: RavenDB's `AggregationOperation`, 1 = Count, 2 = Sum) and its reduce key as
//! `GroupByFields` (`GroupByArrayBehavior: ByContent` for a `group by array(path)` key).

use serde_json::{json, Value};

use crate::indexing::{array_content_path, group_by_array_content, Aggregation};
use crate::IndexInfo;

/// RavenDB's `AggregationOperation.Count`.
const COUNT: u64 = 1;
/// RavenDB's `AggregationOperation.Sum`.
const SUM: u64 = 2;
/// The name RavenDB gives the count's map field.
const COUNT_FIELD: &str = "Count";

/// The dump item of an automatic map-reduce index.
pub(crate) fn render(info: &IndexInfo) -> Value {
    let map_fields: Vec<Value> = info
        .aggregations
        .iter()
        .map(|aggregation| {
            let (name, operation) = match aggregation {
                Aggregation::Count => (COUNT_FIELD, COUNT),
                Aggregation::Sum(path) => (path.as_str(), SUM),
            };
            json!({"Name": name, "Indexing": "Default", "Aggregation": operation, "HasQuotedName": false, "HasSuggestions": false,
                   "Spatial": null})
        })
        .collect();
    let group_by_fields: Vec<Value> = info
        .group_by
        .iter()
        .map(|key| {
            let (name, behavior) = match array_content_path(key) {
                Some(path) => (path, "ByContent"),
                None => (key.as_str(), "NotApplicable"),
            };
            json!({"Name": name, "Indexing": "Default", "GroupByArrayBehavior": behavior, "HasQuotedName": false})
        })
        .collect();
    json!({
        "Type": "AutoMapReduce",
        "IndexDefinition": {"Name": info.name, "Collections": [info.collection], "MapFields": map_fields,
                            "GroupByFields": group_by_fields, "LockMode": info.lock_mode, "Priority": info.priority}
    })
}

/// An automatic map-reduce index read from its definition: (collection, reduce key, aggregations).
pub(crate) fn parse(definition: &Value) -> Result<(String, Vec<String>, Vec<Aggregation>), String> {
    let collection = definition
        .get("Collections")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(Value::as_str)
        .ok_or("an automatic map-reduce index needs 'Collections'")?;
    let mut aggregations = Vec::new();
    for field in fields_of(definition.get("MapFields")) {
        let name = field.get("Name").and_then(Value::as_str).ok_or("a map field needs a 'Name'")?;
        let operation = match field.get("Aggregation") {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(text)) if text.eq_ignore_ascii_case("Count") => Some(COUNT),
            Some(Value::String(text)) if text.eq_ignore_ascii_case("Sum") => Some(SUM),
            _ => None,
        };
        aggregations.push(match operation {
            Some(COUNT) => Aggregation::Count,
            Some(SUM) => Aggregation::Sum(name.to_owned()),
            _ => return Err(format!("map field '{name}' has an aggregation Corvid does not compute (Count and Sum are)")),
        });
    }
    let mut group_by = Vec::new();
    for field in fields_of(definition.get("GroupByFields")) {
        let name = field.get("Name").and_then(Value::as_str).ok_or("a group by field needs a 'Name'")?;
        let by_content = field.get("GroupByArrayBehavior").and_then(Value::as_str) == Some("ByContent");
        group_by.push(if by_content { group_by_array_content(name) } else { name.to_owned() });
    }
    if group_by.is_empty() {
        return Err("an automatic map-reduce index needs 'GroupByFields'".into());
    }
    Ok((collection.to_owned(), group_by, aggregations))
}

/// Fields as a list, or by name (both shapes are in dumps).
fn fields_of(value: Option<&Value>) -> Vec<&Value> {
    match value {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(Value::Object(by_name)) => by_name.values().collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ravendb_shapes() {
        let definition = json!({
            "Name": "Auto/Orders/ByCountAndTotalReducedByCompany", "Collections": ["Orders"],
            "MapFields": {"Count": {"Name": "Count", "Aggregation": 1}, "Total": {"Name": "Total", "Aggregation": 2}},
            "GroupByFields": {"Company": {"Name": "Company", "Indexing": "Default", "GroupByArrayBehavior": "NotApplicable"},
                              "Lines[].Product": {"Name": "Lines[].Product", "GroupByArrayBehavior": "ByContent"}}
        });
        let (collection, group_by, aggregations) = parse(&definition).unwrap();
        assert_eq!(collection, "Orders");
        assert_eq!(group_by, ["Company", "array(Lines[].Product)"]);
        assert_eq!(aggregations, [Aggregation::Count, Aggregation::Sum("Total".into())]);
        let average =
            json!({"Collections": ["Orders"], "MapFields": [{"Name": "Total", "Aggregation": 7}], "GroupByFields": [{"Name": "A"}]});
        assert!(parse(&average).is_err());
        assert!(parse(&json!({"Collections": ["Orders"], "MapFields": []})).is_err());
    }
}
