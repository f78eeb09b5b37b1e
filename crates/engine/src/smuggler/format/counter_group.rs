//! A document's counters as a dump's `CounterGroups` item: per lower-cased name, a flat array of
//! `[value, etag]` pairs, one pair per database id in `@dbIds` (the counter's total is the sum of the
//! values); a string instead of an array marks a deleted counter. `@names` keeps each name's spelling.

use serde_json::{json, Map, Value};

/// One counter read from a dump: its name as first written and its total.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DumpCounter {
    pub name: String,
    pub value: i64,
}

/// The item of `doc_id`'s counters, all of them kept by this database (`database_id`) at `etag`.
pub(crate) fn render(doc_id: &str, change_vector: &str, database_id: &str, etag: u64, counters: &[(String, i64)]) -> Value {
    let mut vals = Map::new();
    let mut names = Map::new();
    for (name, value) in counters {
        let lower = name.to_lowercase();
        vals.insert(lower.clone(), json!([value, etag]));
        names.insert(lower, Value::String(name.clone()));
    }
    json!({
        "DocId": doc_id.to_lowercase(), "ChangeVector": change_vector,
        "Values": {"@dbIds": [database_id], "@vals": vals, "@names": names}
    })
}

/// The live counters of a `CounterGroups` item (deleted ones left out), or why it cannot be read.
pub(crate) fn parse(item: &Value) -> Result<(String, Vec<DumpCounter>), String> {
    let doc_id = item.get("DocId").and_then(Value::as_str).ok_or("a counter group needs a 'DocId'")?;
    let values = item.get("Values").and_then(Value::as_object).ok_or("a counter group needs a 'Values' object")?;
    let vals = values.get("@vals").and_then(Value::as_object).ok_or("a counter group needs 'Values.@vals'")?;
    let names = values.get("@names").and_then(Value::as_object);
    let mut counters = Vec::with_capacity(vals.len());
    for (lower, pairs) in vals {
        let Value::Array(pairs) = pairs else { continue };
        let mut total = 0i64;
        for value in pairs.iter().step_by(2) {
            let value = value.as_i64().ok_or_else(|| format!("counter '{lower}' has a value that is not an integer"))?;
            total = total.wrapping_add(value);
        }
        let name = names.and_then(|n| n.get(lower)).and_then(Value::as_str).unwrap_or(lower);
        counters.push(DumpCounter { name: name.to_owned(), value: total });
    }
    Ok((doc_id.to_owned(), counters))
}

/// A 4.x `Counters` item: `{"DocId", "Name", "Value"}`, one counter.
pub(crate) fn parse_legacy(item: &Value) -> Result<(String, Vec<DumpCounter>), String> {
    let doc_id = item.get("DocId").and_then(Value::as_str).ok_or("a counter needs a 'DocId'")?;
    let name = item.get("Name").and_then(Value::as_str).ok_or("a counter needs a 'Name'")?;
    let value = item.get("Value").and_then(Value::as_i64).ok_or("a counter needs an integer 'Value'")?;
    Ok((doc_id.to_owned(), vec![DumpCounter { name: name.to_owned(), value }]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_ravendb_groups() {
        let item = render("Users/1", "A:3-x", "dbid", 3, &[("Likes".into(), 5), ("Views".into(), -2)]);
        let (doc, counters) = parse(&item).unwrap();
        assert_eq!(doc, "users/1");
        assert_eq!(counters, vec![DumpCounter { name: "Likes".into(), value: 5 }, DumpCounter { name: "Views".into(), value: -2 }]);
        let ravendb = json!({"DocId":"products/1-a","ChangeVector":"A:1-x","Values":{"@dbIds":["a","b"],
            "@vals":{"⭐":[6475,12521,5,9],"gone":"A:5-x"},"@names":{"⭐":"⭐"}}});
        let (_, counters) = parse(&ravendb).unwrap();
        assert_eq!(counters, vec![DumpCounter { name: "⭐".into(), value: 6480 }], "deleted counters are left out");
    }
}
