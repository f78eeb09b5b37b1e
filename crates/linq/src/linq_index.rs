//! [`LinqIndex`]: a static index's maps and reduce, compiled once and evaluated per document and per group.

use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ast::{Expr, ExprKind, QueryEnd, Source};
use crate::budget::Budget;
use crate::document_loader::DocumentLoader;
use crate::error::{ErrorKind, Limit, LinqError};
use crate::eval::{Eval, MapInput};
use crate::index_entry::IndexEntry;
use crate::metadata::with_id;
use crate::{parser, validate};

/// What a map reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapSource {
    /// `docs`: every document.
    AllDocuments,
    /// `docs.Users` / `docs["Users"]` (matched case-insensitively).
    Collection(String),
    /// `timeSeries.Coll.Name`: the segments of a collection's series (of one name, when named).
    TimeSeries {
        /// The collection.
        collection: String,
        /// The time series, when named.
        name: Option<String>,
    },
    /// `counters.Coll.Name`: the counters of a collection's documents (of one name, when named).
    Counters {
        /// The collection.
        collection: String,
        /// The counter, when named.
        name: Option<String>,
    },
}

struct Definition {
    text: String,
    label: String,
    expr: Expr,
}

/// A compiled static index: its maps and optional reduce.
pub struct LinqIndex {
    maps: Vec<Definition>,
    sources: Vec<MapSource>,
    fields: Vec<Vec<String>>,
    reduce: Option<Definition>,
    /// The reduce's group key: the variable it binds and the key expression.
    group_key: Option<(String, Expr)>,
    budget: Budget,
    /// Whether a map can see the document's metadata (`MetadataFor`, `AsJson`, `doc["@metadata"]`); if
    /// not, callers need not build it.
    reads_metadata: bool,
}

fn label_err(mut e: LinqError, label: &str) -> LinqError {
    e.definition = label.to_string();
    e
}

impl LinqIndex {
    /// Parses and checks every map and the reduce.
    pub fn compile(maps: &[&str], reduce: Option<&str>) -> Result<LinqIndex, LinqError> {
        if maps.is_empty() {
            return Err(LinqError {
                kind: ErrorKind::Compile,
                message: "An index needs at least one map".into(),
                definition: String::new(),
                line: 1,
                column: 1,
            });
        }
        let mut defs = Vec::new();
        let mut sources = Vec::new();
        let mut fields = Vec::new();
        for (i, text) in maps.iter().enumerate() {
            let label = format!("map {i}");
            let expr = parser::parse(text).map_err(|e| label_err(e, &label))?;
            validate::check(&expr, text, false).map_err(|e| label_err(e, &label))?;
            let source = match root_source(&expr) {
                Some(Source::AllDocs) => MapSource::AllDocuments,
                Some(Source::Collection(c)) => MapSource::Collection(c.clone()),
                Some(Source::TimeSeries(c, n)) => MapSource::TimeSeries { collection: c.clone(), name: n.clone() },
                Some(Source::Counters(c, n)) => MapSource::Counters { collection: c.clone(), name: n.clone() },
                _ => {
                    return Err(label_err(
                        LinqError::at(
                            ErrorKind::Compile,
                            text,
                            expr.pos,
                            "A map must start from 'docs', 'docs.Collection', 'timeSeries' or 'counters'",
                        ),
                        &label,
                    ))
                }
            };
            sources.push(source);
            fields.push(output_fields(&expr));
            defs.push(Definition { text: text.to_string(), label, expr });
        }
        let (reduce, group_key) = match reduce {
            Some(text) if !text.trim().is_empty() => {
                let label = "reduce".to_string();
                let expr = parser::parse(text).map_err(|e| label_err(e, &label))?;
                validate::check(&expr, text, true).map_err(|e| label_err(e, &label))?;
                if root_source(&expr) != Some(&Source::Results) {
                    return Err(label_err(LinqError::at(ErrorKind::Compile, text, expr.pos, "A reduce must start from 'results'"), &label));
                }
                let key = find_group_key(&expr).ok_or_else(|| {
                    label_err(
                        LinqError::at(ErrorKind::Compile, text, expr.pos, "A reduce must group its results ('group … by' or 'GroupBy')"),
                        &label,
                    )
                })?;
                (Some(Definition { text: text.to_string(), label, expr }), Some(key))
            }
            _ => (None, None),
        };
        let reads_metadata = defs.iter().any(|d| {
            let text = d.text.to_ascii_lowercase();
            text.contains("metadata") || text.contains("asjson")
        });
        Ok(LinqIndex { maps: defs, sources, fields, reduce, group_key, budget: Budget::default(), reads_metadata })
    }

    /// Changes the evaluation step budget (per document and per reduce group).
    pub fn with_step_budget(mut self, steps: u64) -> LinqIndex {
        self.budget.steps = steps;
        self
    }

    /// Changes every limit of an evaluation (per document and per reduce group).
    pub fn with_budget(mut self, budget: Budget) -> LinqIndex {
        self.budget = budget;
        self
    }

    /// How many maps the index has.
    pub fn map_count(&self) -> usize {
        self.maps.len()
    }

    /// What map `map_no` reads.
    pub fn source(&self, map_no: usize) -> &MapSource {
        &self.sources[map_no]
    }

    /// The collections map `map_no` reads, or `None` for all documents.
    pub fn collections(&self, map_no: usize) -> Option<Vec<String>> {
        match &self.sources[map_no] {
            MapSource::AllDocuments => None,
            MapSource::Collection(c) | MapSource::TimeSeries { collection: c, .. } | MapSource::Counters { collection: c, .. } => {
                Some(vec![c.clone()])
            }
        }
    }

    /// Field names of the anonymous object map `map_no` selects (empty when not statically known).
    pub fn output_fields(&self, map_no: usize) -> &[String] {
        &self.fields[map_no]
    }

    /// Field names of the reduce output (empty when not map-reduce or not statically known).
    pub fn reduce_fields(&self) -> Vec<String> {
        self.reduce.as_ref().map(|d| output_fields(&d.expr)).unwrap_or_default()
    }

    /// Whether the index has a reduce.
    pub fn is_map_reduce(&self) -> bool {
        self.reduce.is_some()
    }

    /// The group-by fields of the reduce when the key is a member (`r.Name`) or an anonymous object of
    /// members (`new { r.A, r.B }`).
    pub fn group_by_fields(&self) -> Vec<String> {
        let Some((var, key)) = &self.group_key else { return Vec::new() };
        let field = |e: &Expr| match &e.kind {
            ExprKind::Member(t, n) if matches!(&t.kind, ExprKind::Ident(v) if v == var) => Some(n.clone()),
            _ => None,
        };
        match &key.kind {
            ExprKind::Anon(members) => {
                members.iter().map(|(n, e)| field(e).map(|_| n.clone())).collect::<Option<Vec<_>>>().unwrap_or_default()
            }
            _ => field(key).into_iter().collect(),
        }
    }

    /// The reduce key of one map output (or reduce output): map results with equal keys are reduced together.
    pub fn group_key(&self, output: &Value) -> Result<Value, LinqError> {
        let (Some(def), Some((var, key))) = (&self.reduce, &self.group_key) else {
            return Err(LinqError {
                kind: ErrorKind::Compile,
                message: "The index has no reduce".into(),
                definition: String::new(),
                line: 1,
                column: 1,
            });
        };
        let mut ev = Eval::new(&def.text, self.budget);
        ev.scopes.push((var.clone(), Rc::new(output.clone())));
        ev.eval(key).map_err(|e| label_err(e, &def.label))
    }

    /// Whether any map can read the document's metadata; when none can, `map` may be given `Value::Null`.
    pub fn reads_metadata(&self) -> bool {
        self.reads_metadata
    }

    /// Applies map `map_no` to one document. `metadata` supplies `@id` and the other metadata when the
    /// document body has no `@metadata`. Documents of another collection give no entries.
    pub fn map(
        &self,
        map_no: usize,
        doc_id: &str,
        collection: &str,
        doc: &Value,
        metadata: &Value,
        loader: &mut dyn DocumentLoader,
    ) -> Result<Vec<IndexEntry>, LinqError> {
        self.map_owned(map_no, doc_id, collection, doc.clone(), metadata, loader)
    }

    /// [`LinqIndex::map`] taking the document by value (no copy of it).
    pub fn map_owned(
        &self,
        map_no: usize,
        doc_id: &str,
        collection: &str,
        mut doc: Value,
        metadata: &Value,
        loader: &mut dyn DocumentLoader,
    ) -> Result<Vec<IndexEntry>, LinqError> {
        let def = &self.maps[map_no];
        let (wanted_collection, wanted_name) = match &self.sources[map_no] {
            MapSource::AllDocuments => (None, None),
            MapSource::Collection(c) => (Some(c), None),
            MapSource::TimeSeries { collection, name } | MapSource::Counters { collection, name } => (Some(collection), name.as_ref()),
        };
        if wanted_collection.is_some_and(|c| !c.eq_ignore_ascii_case(collection)) {
            return Ok(Vec::new());
        }
        // A named counter or series: the item's `Name` must match (names compare case-insensitively).
        if wanted_name.is_some_and(|n| !doc.get("Name").and_then(Value::as_str).is_some_and(|item| item.eq_ignore_ascii_case(n))) {
            return Ok(Vec::new());
        }
        if let (Value::Object(d), Value::Object(m)) = (&mut doc, metadata) {
            let meta = d.entry("@metadata").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                for (k, v) in m {
                    meta.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        with_id(&mut doc, doc_id);
        let mut ev = Eval::new(&def.text, self.budget);
        ev.input = Some(MapInput { doc: &doc });
        ev.loader = Some(loader);
        let out = ev.eval(&def.expr).map_err(|e| label_err(e, &def.label))?;
        let rows = match out {
            Value::Array(a) => a,
            v => vec![v],
        };
        if rows.len() > self.budget.outputs {
            let message =
                format!("The map produced {} index entries for one document, over the limit of {}", rows.len(), self.budget.outputs);
            let mut e = LinqError::at(ErrorKind::LimitExceeded(Limit::Outputs), &def.text, def.expr.pos, message);
            e.definition = def.label.clone();
            return Err(e);
        }
        rows.into_iter()
            .map(|r| {
                IndexEntry::from_row(r).map_err(|m| label_err(LinqError::at(ErrorKind::Runtime, &def.text, def.expr.pos, m), &def.label))
            })
            .collect()
    }

    /// Applies the reduce to a group of map (or reduce) outputs that share a key.
    pub fn reduce(&self, group: &[Value]) -> Result<Vec<Value>, LinqError> {
        let Some(def) = &self.reduce else {
            return Err(LinqError {
                kind: ErrorKind::Compile,
                message: "The index has no reduce".into(),
                definition: String::new(),
                line: 1,
                column: 1,
            });
        };
        let mut ev = Eval::new(&def.text, self.budget.for_group(group));
        ev.results = Some(group);
        match ev.eval(&def.expr).map_err(|e| label_err(e, &def.label))? {
            Value::Array(a) => Ok(a),
            v => Ok(vec![v]),
        }
    }
}

/// The collection source a map or reduce starts from.
fn root_source(e: &Expr) -> Option<&Source> {
    match &e.kind {
        ExprKind::Source(s) => Some(s),
        ExprKind::Query(q) => root_source(&q.source),
        ExprKind::Call { target: Some(t), .. } => root_source(t),
        ExprKind::Call { target: None, name, args, .. } if name == "Enumerable" => args.first().and_then(root_source),
        _ => None,
    }
}

/// Field names of the final `new { … }` of a map or reduce.
fn output_fields(e: &Expr) -> Vec<String> {
    let anon = |e: &Expr| match &e.kind {
        ExprKind::Anon(m) => m.iter().map(|(n, _)| n.clone()).filter(|n| n != "_").collect(),
        _ => Vec::new(),
    };
    match &e.kind {
        ExprKind::Query(q) => {
            let mut body = &q.body;
            while let Some((_, next)) = &body.into {
                body = next;
            }
            match &body.end {
                QueryEnd::Select(s) => anon(s),
                QueryEnd::Group { .. } => Vec::new(),
            }
        }
        ExprKind::Call { target: Some(t), name, args, .. } => match (name.as_str(), args.last()) {
            ("Select" | "SelectMany", Some(Expr { kind: ExprKind::Lambda(_, body), .. })) => anon(body),
            ("Where" | "OrderBy" | "OrderByDescending" | "Distinct" | "ToList" | "ToArray", _) => output_fields(t),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// The reduce's grouping: (variable, key expression).
fn find_group_key(e: &Expr) -> Option<(String, Expr)> {
    match &e.kind {
        ExprKind::Query(q) => match &q.body.end {
            QueryEnd::Group { key, .. } => Some((q.var.clone(), key.clone())),
            QueryEnd::Select(_) => None,
        },
        ExprKind::Call { target: Some(t), name, args, .. } => {
            if name == "GroupBy" {
                if let Some(Expr { kind: ExprKind::Lambda(p, body), .. }) = args.first() {
                    if p.len() == 1 {
                        return Some((p[0].clone(), (**body).clone()));
                    }
                }
            }
            find_group_key(t)
        }
        _ => None,
    }
}
