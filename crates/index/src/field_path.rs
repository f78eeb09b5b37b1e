//! Reading the values at a field path: dots step into objects, arrays met on the way (with or without `[]`
//! in the path) are iterated, and an array at the end of the path gives one value per element. A missing
//! property or a null met before the end of the path gives no value; a null at the end is one value.

use serde_json::Value as Json;

/// Values of `body` at `path`, in document order.
pub(crate) fn values_at<'a>(body: &'a Json, path: &str) -> Vec<&'a Json> {
    let segments: Vec<&str> = path.split('.').map(|s| s.trim_end_matches("[]")).filter(|s| !s.is_empty()).collect();
    let mut out = Vec::new();
    collect(body, &segments, &mut out);
    out
}

fn collect<'a>(value: &'a Json, path: &[&str], out: &mut Vec<&'a Json>) {
    match (value, path.split_first()) {
        (Json::Array(items), _) => items.iter().for_each(|item| collect(item, path, out)),
        (_, None) => out.push(value),
        (Json::Object(map), Some((name, rest))) => {
            if let Some(child) = map.get(*name) {
                collect(child, rest, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_iterate_arrays_and_skip_missing() {
        let body = json!({"Name": "A", "Lines": [{"P": "x"}, {"P": "y"}, {"Q": 1}], "Tags": ["a", ["b"]], "Addr": null});
        assert_eq!(values_at(&body, "Lines[].P"), vec![&json!("x"), &json!("y")]);
        assert_eq!(values_at(&body, "Lines.P"), vec![&json!("x"), &json!("y")]);
        assert_eq!(values_at(&body, "Tags"), vec![&json!("a"), &json!("b")]);
        assert!(values_at(&body, "Addr.City").is_empty());
        assert_eq!(values_at(&body, "Addr"), vec![&Json::Null]);
        assert!(values_at(&body, "Missing").is_empty());
    }
}
