//! A subscription's RQL query, checked once when the subscription is created and evaluated per document:
//! which collection it reads, whether a document passes its `where` (the engine's document filter, as
//! exploration queries use it), what is sent (the document, or a `select` projection: fields, or a
//! JavaScript object literal with `load`s and `declare function`s) and which documents are included.

use corvid_js::{Limits, Sandbox};
use corvid_rql::{FieldPath, FromSource, IncludeItem, Projection, Query, SelectExpr};
use corvid_storage::{DocumentRecord, ReadTxn};
use corvid_types::{format_date, id_key};
use serde_json::{Map, Value};

use super::extra_includes::ExtraIncludes;
use crate::document_json::DocumentJson;
use crate::query::document_filter::DocumentFilter;
use crate::query::projection::{included_ids, project, value_at, ProjectedField};
use crate::EngineError;

/// Name of the projection function in a criteria's sandbox.
const PROJECT: &str = "__corvid_subscription_project";

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidQuery { message: message.into() }
}

/// What a subscription reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Collection {
    /// One collection (lower-cased name).
    Named(String),
    /// `from @all_docs`.
    All,
}

/// How a document is turned into what is sent.
enum Select {
    /// The document as stored.
    Document,
    /// `select Name, Address.City as City`.
    Fields(Vec<ProjectedField>),
    /// `select { … }`: the source of a function of the document and its loaded documents.
    Script(String),
}

/// A parsed and checked subscription query.
pub struct SubscriptionCriteria {
    pub(crate) collection: Collection,
    /// `from Orders (Revisions = true)`: each item is a revision with its predecessor (`Current`/`Previous`).
    pub(crate) revisions: bool,
    filter: Option<DocumentFilter>,
    /// `load <path> as <alias>`: the paths (relative to the document) of the ids to load.
    loads: Vec<(String, String)>,
    select: Select,
    /// `declare function` sources, run before the projection.
    functions: Vec<String>,
    /// Document include paths (relative to the document).
    includes: Vec<String>,
    /// Counters and time series included with each document sent.
    pub(crate) extra_includes: ExtraIncludes,
}

impl std::fmt::Debug for SubscriptionCriteria {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionCriteria").field("collection", &self.collection).field("includes", &self.includes).finish()
    }
}

/// What one document gives a batch.
pub(crate) enum Outcome {
    /// Filtered out.
    Skip,
    /// Send this JSON object (with `@metadata`) and include these ids.
    Send { data: String, include_ids: Vec<String> },
    /// The projection failed for this document: send its metadata with the error, as RavenDB does.
    Failed { metadata: String, error: String },
}

impl SubscriptionCriteria {
    /// Parses and checks `text`, refusing what RavenDB refuses in a subscription (A.10 of the notes).
    pub fn parse(text: &str) -> Result<SubscriptionCriteria, EngineError> {
        let query = corvid_rql::parse(text).map_err(|e| invalid(e.to_string()))?;
        refuse_unsupported(&query)?;
        let collection = match &query.from.source {
            FromSource::Collection { name, .. } => Collection::Named(id_key(name)),
            FromSource::AllDocs { .. } => Collection::All,
            FromSource::Index { .. } => return Err(invalid("A subscription cannot query an index ('from index')")),
        };
        let revisions = query.from.revisions;
        if revisions && collection == Collection::All {
            return Err(invalid("A revisions subscription reads one collection, not @all_docs"));
        }
        let alias = query.from.alias.as_ref().map(|a| a.name.clone());
        let relative = |path: &FieldPath| alias.as_deref().and_then(|a| path.strip_alias(a)).unwrap_or_else(|| path.clone()).dotted();
        if alias.is_none() && (!query.load.is_empty() || matches!(query.select.as_ref().map(|s| &s.projection), Some(Projection::Js(_)))) {
            return Err(invalid("A subscription query with 'load' or a JavaScript 'select' needs an alias ('from Orders as o')"));
        }
        let loads: Vec<(String, String)> = query.load.iter().map(|l| (l.alias.name.clone(), relative(&l.path))).collect();
        let declared: Vec<String> = query.declared_functions.iter().map(|f| f.name.name.clone()).collect();
        let filter = match &query.where_clause {
            Some(expr) => Some(DocumentFilter::new(expr.clone(), text, alias.clone(), loads.clone(), Map::new(), None, &declared)?),
            None => None,
        };
        let select = match query.select.as_ref().map(|s| &s.projection) {
            None | Some(Projection::All) => Select::Document,
            Some(Projection::Js(block)) => {
                let mut params = vec![alias.clone().unwrap_or_default()];
                params.extend(loads.iter().map(|(a, _)| a.clone()));
                Select::Script(format!("(function({}) {{ return ({}); }})", params.join(", "), block.source))
            }
            Some(Projection::Fields(fields)) => {
                let mut projected = Vec::new();
                for field in fields {
                    let SelectExpr::Field(path) = &field.expr else {
                        return Err(invalid(format!(
                            "A subscription's 'select' takes fields or a JavaScript object literal (at position {})",
                            field.span.start
                        )));
                    };
                    let path = relative(path);
                    let name =
                        field.alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| path.rsplit('.').next().unwrap_or(&path).to_owned());
                    projected.push(ProjectedField { path, alias: name });
                }
                Select::Fields(projected)
            }
        };
        let mut includes = Vec::new();
        let mut extra_includes = ExtraIncludes::default();
        for item in &query.include {
            match item {
                IncludeItem::Path(path) => includes.push(relative(path)),
                IncludeItem::Call(call) if call.is("counters") => extra_includes.add_counters(call)?,
                IncludeItem::Call(call) if call.is("timeseries") => extra_includes.add_time_series(call)?,
                IncludeItem::Call(call) => return Err(invalid(format!("A subscription cannot include {}()", call.name))),
            }
        }
        let functions = query
            .declared_functions
            .iter()
            .filter(|f| f.kind == corvid_rql::DeclarationKind::Function)
            .map(|f| {
                format!(
                    "function {}({}) {}",
                    f.name.name,
                    f.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", "),
                    f.body.source
                )
            })
            .collect();
        Ok(SubscriptionCriteria { collection, revisions, filter, loads, select, functions, includes, extra_includes })
    }

    /// The collection a revisions subscription reads (as written in the query's lower-cased form), or None
    /// for a subscription over documents.
    pub fn revisions_collection(&self) -> Option<&str> {
        match (&self.collection, self.revisions) {
            (Collection::Named(name), true) => Some(name),
            _ => None,
        }
    }

    /// The sandbox a batch evaluates projections in (None when the query has no JavaScript). Made per batch:
    /// a sandbox belongs to the thread that made it.
    pub(crate) fn sandbox(&self) -> Result<Option<Sandbox>, EngineError> {
        let Select::Script(function) = &self.select else { return Ok(None) };
        let script = |e: corvid_js::JsError| EngineError::Script { message: e.to_string() };
        let sandbox = Sandbox::new(Limits::default()).map_err(script)?;
        for f in &self.functions {
            sandbox.run(f).map_err(script)?;
        }
        sandbox.define(PROJECT, function).map_err(script)?;
        Ok(Some(sandbox))
    }

    /// What `record` gives the batch. `sandbox` is this criteria's [`Self::sandbox`].
    pub(crate) fn evaluate(
        &self,
        record: &DocumentRecord,
        snapshot: &ReadTxn<'_>,
        sandbox: Option<&Sandbox>,
    ) -> Result<Outcome, EngineError> {
        let plain = self.filter.is_none() && self.includes.is_empty() && matches!(self.select, Select::Document);
        if plain {
            return Ok(Outcome::Send { data: record.to_json_string(false), include_ids: Vec::new() });
        }
        let body: Value = corvid_types::json::parse(&record.body)
            .map_err(|e| EngineError::Internal(format!("stored document {} is not JSON: {e}", record.id)))?;
        let mut load = |id: &str| -> Result<Option<Value>, EngineError> {
            Ok(snapshot.document(&id_key(id))?.and_then(|d| corvid_types::json::parse(&d.body).ok()))
        };
        if let Some(filter) = &self.filter {
            if !filter.matches(&record.id, &body, &mut load)? {
                return Ok(Outcome::Skip);
            }
        }
        let include_ids = included_ids(&body, &self.includes);
        let data = match &self.select {
            Select::Document => record.to_json_string(false),
            Select::Fields(fields) => {
                let mut projected = project(&body, fields);
                projected.insert("@metadata".into(), projection_metadata(record));
                Value::Object(projected).to_string()
            }
            Select::Script(_) => {
                let sandbox = sandbox.ok_or_else(|| EngineError::Internal("a script projection without its sandbox".into()))?;
                let document = record.to_json_string(false);
                let mut loaded = Vec::with_capacity(self.loads.len());
                for (_, path) in &self.loads {
                    loaded.push(match value_at(&body, path) {
                        Value::String(id) => snapshot.document(&id_key(&id))?.map(|d| d.to_json_string(false)),
                        _ => None,
                    });
                }
                let mut arguments: Vec<&str> = vec![&document];
                arguments.extend(loaded.iter().map(|l| l.as_deref().unwrap_or("null")));
                match sandbox.call_with_documents(PROJECT, &arguments) {
                    Ok(output) => match corvid_types::json::parse::<Value>(&output) {
                        Ok(Value::Object(mut projected)) => {
                            projected.insert("@metadata".into(), projection_metadata(record));
                            Value::Object(projected).to_string()
                        }
                        // RavenDB: `true` sends the document, anything else (false, null) skips it.
                        Ok(Value::Bool(true)) => record.to_json_string(false),
                        Ok(_) => return Ok(Outcome::Skip),
                        Err(e) => return Err(EngineError::Internal(format!("projection output is not JSON: {e}"))),
                    },
                    Err(e) => {
                        return Ok(Outcome::Failed { metadata: projection_metadata(record).to_string(), error: e.to_string() });
                    }
                }
            }
        };
        Ok(Outcome::Send { data, include_ids })
    }
}

/// `@metadata` of a projection: the source's id and change vector, which the clients require.
fn projection_metadata(record: &DocumentRecord) -> Value {
    let mut metadata = Map::new();
    metadata.insert("@id".into(), Value::String(record.id.clone()));
    metadata.insert("@change-vector".into(), Value::String(record.change_vector.clone()));
    metadata.insert("@projection".into(), Value::Bool(true));
    metadata.insert("@collection".into(), Value::String(record.collection.clone()));
    metadata.insert("@last-modified".into(), Value::String(format_date(record.last_modified)));
    Value::Object(metadata)
}

/// The clauses a subscription cannot have (RavenDB refuses them too).
fn refuse_unsupported(query: &Query) -> Result<(), EngineError> {
    let refused = [
        (!query.group_by.is_empty(), "group by"),
        (!query.order_by.is_empty(), "order by"),
        (query.update.is_some(), "update"),
        (query.filter.is_some(), "filter"),
        (query.limit.is_some() || query.offset.is_some(), "limit/offset"),
        (query.select.as_ref().is_some_and(|s| s.distinct), "select distinct"),
    ];
    match refused.iter().find(|(present, _)| *present) {
        Some((_, clause)) => Err(invalid(format!("A subscription query cannot use '{clause}'"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_the_clients_send_and_refuses_what_ravendb_refuses() {
        assert_eq!(SubscriptionCriteria::parse("from 'Orders' as doc").unwrap().collection, Collection::Named("orders".into()));
        assert_eq!(SubscriptionCriteria::parse("from @all_docs").unwrap().collection, Collection::All);
        let with_include = SubscriptionCriteria::parse("from 'Orders' as doc\ninclude doc.Company").unwrap();
        assert_eq!(with_include.includes, vec!["Company".to_owned()]);
        SubscriptionCriteria::parse("from Orders as o where o.Total > 10 select { Total: o.Total }").unwrap();
        SubscriptionCriteria::parse("declare function f(o) { return o.A; } from Orders as o select { A: f(o) }").unwrap();
        for bad in [
            "from Orders where",
            "from index 'X'",
            "from Orders order by Name",
            "from Orders group by Name",
            "from Orders select { A: 1 }",
            "from Orders as o where search(o.Name, 'x')",
        ] {
            assert!(matches!(SubscriptionCriteria::parse(bad), Err(EngineError::InvalidQuery { .. })), "{bad}");
        }
    }
}
