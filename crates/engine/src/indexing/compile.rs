//! Compiling a static index definition as a client sends it (`PUT /admin/indexes`): what Corvid derives from
//! it (source language, collections, fields) and the checks made at definition time, so a definition that
//! cannot work is refused with a clear error instead of failing in the background.

use serde_json::{Map, Value};

use super::all_docs::ALL_DOCS;
use super::definition::AutoIndexDefinition;
use super::field::AutoIndexField;
use super::js_map::JsMapProgram;
use super::linq_map::{compile_linq, linq_collections_and_fields, linq_spatial_fields};
use super::output_collection::{output_collection_of, reference_pattern_of};
use super::static_index::{SourceLanguage, StaticIndex};
use crate::EngineError;

fn invalid(name: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::IndexCompilation { message: format!("Index '{name}': {message}") }
}

/// JavaScript maps start with `map(`; everything else is C# LINQ (`from doc in docs...`, `docs.X.Select(...)`).
fn language_of(map: &str) -> SourceLanguage {
    let trimmed = map.trim_start();
    let code = trimmed.trim_start_matches(|c: char| c == '(' || c.is_whitespace());
    if code.starts_with("map(")
        || code.starts_with("map (")
        || trimmed.starts_with("function")
        || trimmed.contains("map('")
        || trimmed.contains("map(\"")
    {
        SourceLanguage::JavaScript
    } else {
        SourceLanguage::CSharp
    }
}

fn string_list(value: Option<&Value>, what: &str, name: &str) -> Result<Vec<String>, EngineError> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| invalid(name, format!("every entry of '{what}' must be a string"))))
            .collect(),
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(invalid(name, format!("'{what}' must be a list of strings"))),
    }
}

/// `Fields[x].Spatial`: `{"Type": "Geography"|"Cartesian", "Strategy": "BoundingBox"|"GeohashPrefixTree"|...}`.
/// Tree strategies and their levels only tune RavenDB's approximations; shapes are kept exactly here.
fn spatial_options(json: &Value) -> corvid_index::SpatialOptions {
    let text = |key: &str| json.get(key).and_then(Value::as_str).unwrap_or("");
    corvid_index::SpatialOptions {
        cartesian: text("Type").eq_ignore_ascii_case("Cartesian"),
        bounding_box: text("Strategy").eq_ignore_ascii_case("BoundingBox"),
    }
}

/// An index may not write its results into a collection it reads or loads from: every output would
/// re-index the index itself, without end.
fn check_output_collection(name: &str, output: &str, map_reduce: bool, collections: &[String], maps: &[String]) -> Result<(), EngineError> {
    if !map_reduce {
        return Err(invalid(name, "OutputReduceToCollection is only for map-reduce indexes (the definition has no 'Reduce')"));
    }
    if collections.is_empty() {
        return Err(invalid(
            name,
            format!("it reads every collection, so it cannot output reduce results to collection '{output}' (an infinite indexing loop)"),
        ));
    }
    if collections.iter().any(|c| c.eq_ignore_ascii_case(output)) {
        return Err(invalid(
            name,
            format!("it cannot output reduce results to collection '{output}', which it indexes (an infinite indexing loop)"),
        ));
    }
    let quoted = [format!("'{output}'"), format!("\"{output}\"")];
    let loads = maps.iter().any(|m| {
        let lower = m.to_ascii_lowercase();
        (lower.contains("load(") || lower.contains("loaddocument")) && quoted.iter().any(|q| m.contains(q.as_str()))
    });
    if loads {
        return Err(invalid(
            name,
            format!("it cannot output reduce results to collection '{output}', which it loads documents from (an infinite indexing loop)"),
        ));
    }
    Ok(())
}

/// Validates a client's IndexDefinition and compiles it; returns the definition the registry runs.
pub fn compile_definition(raw: &Value) -> Result<AutoIndexDefinition, EngineError> {
    let Value::Object(object) = raw else {
        return Err(EngineError::bad_request("Every index definition must be a JSON object"));
    };
    let name = match object.get("Name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_owned(),
        _ => return Err(EngineError::bad_request("An index definition needs a non-empty 'Name'")),
    };
    if name.to_ascii_lowercase().starts_with("auto/") {
        return Err(invalid(&name, "names starting with 'Auto/' are reserved for automatic indexes"));
    }
    let maps: Vec<String> = string_list(object.get("Maps"), "Maps", &name)?.into_iter().filter(|m| !m.trim().is_empty()).collect();
    if maps.is_empty() {
        return Err(invalid(&name, "the definition has no map ('Maps' is empty)"));
    }
    let reduce = object.get("Reduce").and_then(Value::as_str).filter(|r| !r.trim().is_empty()).map(str::to_owned);
    let languages: Vec<SourceLanguage> = maps.iter().map(|m| language_of(m)).collect();
    let language = languages[0];
    if languages.iter().any(|l| *l != language) {
        return Err(invalid(&name, "maps mix JavaScript and C#; use one language per index"));
    }
    let spatial_fields;
    let (collections, mut field_names) = match language {
        SourceLanguage::JavaScript => {
            let sources = object.get("AdditionalSources").and_then(Value::as_object).cloned().unwrap_or_else(Map::new);
            let program = JsMapProgram::compile(&maps, reduce.as_deref(), &sources).map_err(|e| invalid(&name, e))?;
            spatial_fields = JsMapProgram::spatial_fields(&maps);
            (program.collections().to_vec(), program.field_names().to_vec())
        }
        SourceLanguage::CSharp => {
            let program = compile_linq(&maps, reduce.as_deref()).map_err(|e| invalid(&name, e))?;
            spatial_fields = linq_spatial_fields(&maps);
            linq_collections_and_fields(&program, &spatial_fields)
        }
    };
    if let Some(output) = output_collection_of(raw) {
        check_output_collection(&name, &output, reduce.is_some(), &collections, &maps)?;
        if let Some(pattern) = reference_pattern_of(raw) {
            let pattern = pattern.map_err(|e| invalid(&name, format!("PatternForOutputReduceToCollectionReferences {e}")))?;
            check_output_collection(&name, &pattern.collection, true, &collections, &maps)?;
        }
    }
    let options = object.get("Fields").and_then(Value::as_object).cloned().unwrap_or_default();
    for key in options.keys() {
        if key != "__all_fields" && !field_names.contains(key) {
            field_names.push(key.clone());
        }
    }
    for (field, option) in &options {
        if let Some(analyzer) = option.get("Analyzer").and_then(Value::as_str) {
            if corvid_index::Analyzer::from_name(analyzer).is_none() {
                return Err(invalid(
                    &name,
                    format!(
                        "field '{field}' uses analyzer '{analyzer}', which this server does not have (StandardAnalyzer, StopAnalyzer, \
                         SimpleAnalyzer, WhitespaceAnalyzer, LowerCaseWhitespaceAnalyzer, KeywordAnalyzer, LowerCaseKeywordAnalyzer)"
                    ),
                ));
            }
        }
    }
    let fields: Vec<AutoIndexField> = field_names
        .iter()
        .map(|f| {
            // `__all_fields` options apply to every field without its own.
            let option = |key: &str| {
                options
                    .get(f)
                    .and_then(|o| o.get(key))
                    .filter(|v| !v.is_null())
                    .or_else(|| options.get("__all_fields").and_then(|o| o.get(key)))
            };
            let indexing = option("Indexing").and_then(Value::as_str).unwrap_or("Default");
            let spatial_json = options.get(f).and_then(|o| o.get("Spatial")).filter(|s| !s.is_null());
            let spatial = spatial_fields.contains(f) || spatial_json.is_some();
            let spatial_options = spatial_json.map(spatial_options);
            let analyzer = option("Analyzer").and_then(Value::as_str).map(str::to_owned);
            AutoIndexField {
                path: f.clone(),
                search: indexing.eq_ignore_ascii_case("Search"),
                exact: false,
                spatial,
                analyzer,
                spatial_options,
                case_sensitive: indexing.eq_ignore_ascii_case("Exact"),
                analyzed_only: indexing.eq_ignore_ascii_case("Search"),
            }
        })
        .collect();
    let collection = match collections.as_slice() {
        [one] => one.clone(),
        _ => ALL_DOCS.to_owned(),
    };
    Ok(AutoIndexDefinition {
        name,
        collection,
        fields,
        group_by: Vec::new(),
        aggregations: Vec::new(),
        static_index: Some(StaticIndex { language, maps, reduce, collections, definition: raw.clone() }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn javascript_maps_compile_into_fields_and_collections() {
        let def = compile_definition(&json!({
            "Name": "Users/ByName",
            "Maps": ["map('Users', function (u) { return { Name: u.Name, 'Age': u.Age }; })"],
            "Fields": {"Name": {"Indexing": "Search"}}
        }))
        .unwrap();
        assert_eq!(def.collection, "Users");
        let names: Vec<&str> = def.fields.iter().map(|f| f.path.as_str()).collect();
        assert!(names.contains(&"Name") && names.contains(&"Age"), "{names:?}");
        assert!(def.fields.iter().any(|f| f.path == "Name" && f.search));
        assert_eq!(def.static_index.unwrap().type_name(), "JavaScriptMap");
    }

    #[test]
    fn bad_definitions_are_refused_with_the_reason() {
        let err = |v: Value| compile_definition(&v).unwrap_err().to_string();
        assert!(err(json!({"Name": "", "Maps": ["x"]})).contains("Name"));
        assert!(err(json!({"Name": "A", "Maps": []})).contains("no map"));
        assert!(err(json!({"Name": "A", "Maps": ["map('Users', function (u) { return { ; })"]})).contains("Index 'A'"));
        assert!(err(json!({"Name": "Auto/X", "Maps": ["map('Users', u => u)"]})).contains("reserved"));
    }

    #[test]
    fn output_collections_that_would_loop_are_refused() {
        let reduce = "groupBy(x => x.a).aggregate(g => ({ a: g.key, n: g.values.length }))";
        let with = |maps: &str, output: &str, reduce: Option<&str>| {
            compile_definition(&json!({"Name": "A", "Maps": [maps], "Reduce": reduce, "OutputReduceToCollection": output}))
        };
        assert!(with("map('Orders', o => ({ a: o.a, n: 1 }))", "Totals", Some(reduce)).is_ok());
        let err = |r: Result<AutoIndexDefinition, EngineError>| r.unwrap_err().to_string();
        assert!(err(with("map('Orders', o => ({ a: o.a, n: 1 }))", "orders", Some(reduce))).contains("which it indexes"));
        assert!(err(with("map('Orders', o => ({ a: o.a, n: 1 }))", "Totals", None)).contains("only for map-reduce"));
        let loading = "map('Orders', o => { var t = load(o.t, 'Totals'); return { a: o.a, n: 1 }; })";
        assert!(err(with(loading, "Totals", Some(reduce))).contains("loads documents"));
        let all = "from d in docs select new { a = d.a, n = 1 }";
        let linq_reduce = "from r in results group r by r.a into g select new { a = g.Key, n = g.Sum(x => x.n) }";
        assert!(err(with(all, "Totals", Some(linq_reduce))).contains("reads every collection"));
        let pattern = |p: &str, c: &str| {
            compile_definition(&json!({"Name": "A", "Maps": ["map('Orders', o => ({ a: o.a, n: 1 }))"], "Reduce": reduce,
                "OutputReduceToCollection": "Totals", "PatternForOutputReduceToCollectionReferences": p,
                "PatternReferencesCollectionName": c}))
        };
        assert!(pattern("totals/{a}", "TotalRefs").is_ok());
        assert!(err(pattern("totals/all", "TotalRefs")).contains("names no field"));
        assert!(err(pattern("totals/{a}", "Orders")).contains("which it indexes"));
    }
}
