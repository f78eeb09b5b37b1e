//! Compiling a static index definition as a client sends it (`PUT /admin/indexes`): what Corvid derives from
//! it (source language, collections, fields) and the checks made at definition time, so a definition that
//! cannot work is refused with a clear error instead of failing in the background.

use corvid_linq::LinqError;
use serde_json::{Map, Value};

use super::all_docs::ALL_DOCS;
use super::definition::AutoIndexDefinition;
use super::field::AutoIndexField;
use super::js_map::{JsMapCompileError, JsMapProgram};
use super::linq_map::{compile_linq, linq_collections_and_fields, linq_spatial_fields};
use super::output_collection::{output_collection_of, reference_pattern_of};
use super::output_references::ReferencePatternError;
use super::static_index::{IndexSource, SourceLanguage, StaticIndex};
use crate::EngineError;

/// Why an index definition sent by a client is refused.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionError {
    /// The definition is not a JSON object.
    #[error("Every index definition must be a JSON object")]
    NotAnObject,
    /// `Name` is missing or blank.
    #[error("An index definition needs a non-empty 'Name'")]
    NoName,
    /// The definition of the index `name` cannot work.
    #[error("Index '{name}': {problem}")]
    Invalid {
        /// The index's name as sent (trimmed).
        name: String,
        /// What is wrong with it.
        problem: DefinitionProblem,
    },
}

/// What is wrong with the definition of a named index.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionProblem {
    /// A static index named like an automatic one.
    #[error("names starting with 'Auto/' are reserved for automatic indexes")]
    ReservedName,
    /// `key` is a list with something other than strings in it.
    #[error("every entry of '{key}' must be a string")]
    EntryNotAString {
        /// The definition's key (`Maps`).
        key: &'static str,
    },
    /// `key` is not a list.
    #[error("'{key}' must be a list of strings")]
    NotAList {
        /// The definition's key (`Maps`).
        key: &'static str,
    },
    /// `Maps` is missing, empty or holds only blank maps.
    #[error("the definition has no map ('Maps' is empty)")]
    NoMap,
    /// Some maps are JavaScript, others C#.
    #[error("maps mix JavaScript and C#; use one language per index")]
    MixedLanguages,
    /// The JavaScript maps or reduce do not compile.
    #[error(transparent)]
    JavaScript(#[from] JsMapCompileError),
    /// The C# maps or reduce do not compile (the error names the construct and its line:column).
    #[error(transparent)]
    CSharp(#[from] LinqError),
    /// `OutputReduceToCollection` on an index without a reduce.
    #[error("OutputReduceToCollection is only for map-reduce indexes (the definition has no 'Reduce')")]
    OutputWithoutReduce,
    /// The output collection of an index that reads every collection would be indexed by it.
    #[error("it reads every collection, so it cannot output reduce results to collection '{output}' (an infinite indexing loop)")]
    OutputOfEveryCollection {
        /// The output (or reference) collection.
        output: String,
    },
    /// The output collection is one the index reads.
    #[error("it cannot output reduce results to collection '{output}', which it indexes (an infinite indexing loop)")]
    OutputIntoIndexed {
        /// The output (or reference) collection.
        output: String,
    },
    /// The output collection is one the maps load documents from.
    #[error("it cannot output reduce results to collection '{output}', which it loads documents from (an infinite indexing loop)")]
    OutputIntoLoaded {
        /// The output (or reference) collection.
        output: String,
    },
    /// `PatternForOutputReduceToCollectionReferences` cannot be used.
    #[error("PatternForOutputReduceToCollectionReferences {0}")]
    ReferencePattern(#[from] ReferencePatternError),
    /// `Fields[field].Analyzer` names an analyzer this server does not have.
    #[error(
        "field '{field}' uses analyzer '{analyzer}', which this server does not have (StandardAnalyzer, StopAnalyzer, \
         SimpleAnalyzer, WhitespaceAnalyzer, LowerCaseWhitespaceAnalyzer, KeywordAnalyzer, LowerCaseKeywordAnalyzer)"
    )]
    UnknownAnalyzer {
        /// The field whose options name it.
        field: String,
        /// The analyzer as named.
        analyzer: String,
    },
}

impl From<DefinitionError> for EngineError {
    /// A definition without a name is a bad request; a named one that cannot work fails to compile.
    fn from(e: DefinitionError) -> Self {
        match e {
            DefinitionError::NotAnObject | DefinitionError::NoName => EngineError::BadRequest(e.to_string()),
            DefinitionError::Invalid { .. } => EngineError::IndexCompilation { message: e.to_string() },
        }
    }
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

/// What the maps read: `SourceType` as the client sent it, else what the maps start from
/// (`counters.map(...)`, `from c in counters.Users`, `timeSeries.map(...)`, `from ts in timeSeries.Users...`).
fn source_of(object: &Map<String, Value>, maps: &[String]) -> IndexSource {
    match object.get("SourceType").and_then(Value::as_str) {
        Some(s) if s.eq_ignore_ascii_case("Counters") => return IndexSource::Counters,
        Some(s) if s.eq_ignore_ascii_case("TimeSeries") => return IndexSource::TimeSeries,
        Some(s) if s.eq_ignore_ascii_case("Documents") => return IndexSource::Documents,
        _ => {}
    }
    let reads = |source: &str| {
        maps.iter().any(|m| {
            let code = m.trim_start();
            code.starts_with(&format!("{source}.")) || code.contains(&format!("in {source}.")) || code.contains(&format!("{source}.map("))
        })
    };
    if reads("counters") {
        IndexSource::Counters
    } else if reads("timeSeries") {
        IndexSource::TimeSeries
    } else {
        IndexSource::Documents
    }
}

fn string_list(value: Option<&Value>, key: &'static str) -> Result<Vec<String>, DefinitionProblem> {
    match value {
        Some(Value::Array(items)) => {
            items.iter().map(|v| v.as_str().map(str::to_owned).ok_or(DefinitionProblem::EntryNotAString { key })).collect()
        }
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(_) => Err(DefinitionProblem::NotAList { key }),
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
fn check_output_collection(output: &str, map_reduce: bool, collections: &[String], maps: &[String]) -> Result<(), DefinitionProblem> {
    if !map_reduce {
        return Err(DefinitionProblem::OutputWithoutReduce);
    }
    if collections.is_empty() {
        return Err(DefinitionProblem::OutputOfEveryCollection { output: output.to_owned() });
    }
    if collections.iter().any(|c| c.eq_ignore_ascii_case(output)) {
        return Err(DefinitionProblem::OutputIntoIndexed { output: output.to_owned() });
    }
    let quoted = [format!("'{output}'"), format!("\"{output}\"")];
    let loads = maps.iter().any(|m| {
        let lower = m.to_ascii_lowercase();
        (lower.contains("load(") || lower.contains("loaddocument")) && quoted.iter().any(|q| m.contains(q.as_str()))
    });
    if loads {
        return Err(DefinitionProblem::OutputIntoLoaded { output: output.to_owned() });
    }
    Ok(())
}

/// Validates a client's IndexDefinition and compiles it; returns the definition the registry runs.
pub fn compile_definition(raw: &Value) -> Result<AutoIndexDefinition, DefinitionError> {
    let Value::Object(object) = raw else {
        return Err(DefinitionError::NotAnObject);
    };
    let name = match object.get("Name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_owned(),
        _ => return Err(DefinitionError::NoName),
    };
    compile_named(&name, object, raw).map_err(|problem| DefinitionError::Invalid { name, problem })
}

/// Compiles the definition of the index `name` (`object` is `raw`).
fn compile_named(name: &str, object: &Map<String, Value>, raw: &Value) -> Result<AutoIndexDefinition, DefinitionProblem> {
    if name.to_ascii_lowercase().starts_with("auto/") {
        return Err(DefinitionProblem::ReservedName);
    }
    let maps: Vec<String> = string_list(object.get("Maps"), "Maps")?.into_iter().filter(|m| !m.trim().is_empty()).collect();
    if maps.is_empty() {
        return Err(DefinitionProblem::NoMap);
    }
    let reduce = object.get("Reduce").and_then(Value::as_str).filter(|r| !r.trim().is_empty()).map(str::to_owned);
    let languages: Vec<SourceLanguage> = maps.iter().map(|m| language_of(m)).collect();
    let language = languages[0];
    if languages.iter().any(|l| *l != language) {
        return Err(DefinitionProblem::MixedLanguages);
    }
    let source = source_of(object, &maps);
    let spatial_fields;
    let (collections, mut field_names) = match language {
        SourceLanguage::JavaScript => {
            let sources = object.get("AdditionalSources").and_then(Value::as_object).cloned().unwrap_or_else(Map::new);
            let program = JsMapProgram::compile(&maps, reduce.as_deref(), &sources)?;
            spatial_fields = JsMapProgram::spatial_fields(&maps);
            (program.collections().to_vec(), program.field_names().to_vec())
        }
        SourceLanguage::CSharp => {
            let program = compile_linq(&maps, reduce.as_deref())?;
            spatial_fields = linq_spatial_fields(&maps);
            linq_collections_and_fields(&program, &spatial_fields)
        }
    };
    if let Some(output) = output_collection_of(raw) {
        check_output_collection(&output, reduce.is_some(), &collections, &maps)?;
        if let Some(pattern) = reference_pattern_of(raw) {
            check_output_collection(&pattern?.collection, true, &collections, &maps)?;
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
                return Err(DefinitionProblem::UnknownAnalyzer { field: field.clone(), analyzer: analyzer.to_owned() });
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
        name: name.to_owned(),
        collection,
        fields,
        group_by: Vec::new(),
        aggregations: Vec::new(),
        static_index: Some(StaticIndex { language, source, maps, reduce, collections, definition: raw.clone() }),
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
    fn counters_and_time_series_sources_are_recognised() {
        let source = |v: Value| compile_definition(&v).unwrap().static_index.unwrap().source;
        assert_eq!(source(json!({"Name": "A", "Maps": ["counters.map('Users', 'Likes', c => ({ v: c.Value }))"]})), IndexSource::Counters);
        assert_eq!(source(json!({"Name": "A", "Maps": ["timeSeries.map('Users', ts => ({ n: ts.Name }))"]})), IndexSource::TimeSeries);
        let linq = "from ts in timeSeries.Users.HeartRate from e in ts.Entries select new { v = e.Value }";
        assert_eq!(source(json!({"Name": "A", "Maps": [linq]})), IndexSource::TimeSeries);
        assert_eq!(
            source(json!({"Name": "A", "SourceType": "Counters", "Maps": ["from c in counters.Users select new { c.Value }"]})),
            IndexSource::Counters
        );
        assert_eq!(source(json!({"Name": "A", "Maps": ["map('Users', u => ({ n: counterNamesFor(u) }))"]})), IndexSource::Documents);
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
        let err = |r: Result<AutoIndexDefinition, DefinitionError>| r.unwrap_err().to_string();
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
