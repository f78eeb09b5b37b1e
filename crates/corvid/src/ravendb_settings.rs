//! RavenDB's own settings file (`--config-path settings.json`, as its test drivers pass it): a JSON object
//! whose keys are RavenDB setting names (`"ServerUrl"`, `"Logs.Mode"`), possibly nested
//! (`{"Logs": {"Mode": "None"}}` is `Logs.Mode`).

use serde_json::Value;

/// The file's settings as `(name, value)` pairs in file order, nested objects flattened with dots.
pub fn read_file(path: &str) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read settings file {path}: {e}"))?;
    parse(&text).map_err(|e| format!("settings file {path}: {e}"))
}

pub fn parse(text: &str) -> Result<Vec<(String, String)>, String> {
    // An empty file is what some launchers write when they have nothing to set.
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("must hold a JSON object of setting names and values".into());
    };
    let mut out = Vec::new();
    flatten("", &map, &mut out)?;
    Ok(out)
}

fn flatten(prefix: &str, map: &serde_json::Map<String, Value>, out: &mut Vec<(String, String)>) -> Result<(), String> {
    for (key, value) in map {
        let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(inner) => flatten(&name, inner, out)?,
            Value::String(s) => out.push((name, s.clone())),
            Value::Bool(_) | Value::Number(_) => out.push((name, value.to_string())),
            // RavenDB reads a null as "not set".
            Value::Null => {}
            // Lists (several URLs, several paths) are passed on semicolon-separated, as RavenDB writes them.
            Value::Array(items) => {
                let parts: Vec<String> = items.iter().map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())).collect();
                out.push((name, parts.join(";")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_and_nested_names() {
        let pairs =
            parse(r#"{"ServerUrl": "http://127.0.0.1:0", "RunInMemory": true, "Logs": {"Mode": "None"}, "X": null, "N": 5}"#).unwrap();
        let expected = [("ServerUrl", "http://127.0.0.1:0"), ("RunInMemory", "true"), ("Logs.Mode", "None"), ("N", "5")];
        assert_eq!(pairs, expected.map(|(k, v)| (k.to_owned(), v.to_owned())));
    }

    #[test]
    fn empty_file_and_bad_files() {
        assert!(parse("  \n").unwrap().is_empty());
        assert!(parse("[1]").is_err());
        assert!(parse("{").is_err());
    }
}
