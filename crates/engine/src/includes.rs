//! Include paths: `friendId`, `Address.CompanyId`, `Lines[].Product`, `Tags` (an array of ids). Every string
//! found at the path is the id of a document to include.

use serde_json::Value;

pub fn referenced_ids(document: &Value, path: &str, out: &mut Vec<String>) {
    let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
    collect(document, &segments, out);
}

fn collect(value: &Value, segments: &[&str], out: &mut Vec<String>) {
    let Some((first, rest)) = segments.split_first() else {
        match value {
            Value::String(id) => out.push(id.clone()),
            Value::Array(items) => items.iter().for_each(|item| collect(item, &[], out)),
            _ => {}
        }
        return;
    };
    let (name, over_array) = match first.strip_suffix("[]") {
        Some(name) => (name, true),
        None => (*first, false),
    };
    let child = if name.is_empty() { Some(value) } else { value.get(name) };
    match (child, over_array) {
        (Some(Value::Array(items)), true) => items.iter().for_each(|item| collect(item, rest, out)),
        (Some(Value::Array(items)), false) if !rest.is_empty() => items.iter().for_each(|item| collect(item, rest, out)),
        (Some(child), _) => collect(child, rest, out),
        (None, _) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(doc: &Value, path: &str) -> Vec<String> {
        let mut out = Vec::new();
        referenced_ids(doc, path, &mut out);
        out
    }

    #[test]
    fn follows_paths_and_arrays() {
        let doc = json!({"friendId": "users/2", "Address": {"CompanyId": "companies/1"},
                         "Lines": [{"Product": "products/1"}, {"Product": "products/2"}], "Tags": ["t/1", "t/2"], "n": 3});
        assert_eq!(ids(&doc, "friendId"), ["users/2"]);
        assert_eq!(ids(&doc, "Address.CompanyId"), ["companies/1"]);
        assert_eq!(ids(&doc, "Lines[].Product"), ["products/1", "products/2"]);
        assert_eq!(ids(&doc, "Lines.Product"), ["products/1", "products/2"]);
        assert_eq!(ids(&doc, "Tags"), ["t/1", "t/2"]);
        assert!(ids(&doc, "n").is_empty());
        assert!(ids(&doc, "missing.path").is_empty());
    }
}
