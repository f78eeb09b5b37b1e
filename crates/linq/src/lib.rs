//! Parser and native evaluator for the C# LINQ index definitions RavenDB clients send in the `Maps` and
//! `Reduce` strings of an index definition.
//!
//! # Subset
//! * Query syntax: `from x in docs.Users` (also `docs["Users"]` and bare `docs`), further `from` clauses
//!   (fan-out), `let`, `where`, `orderby`, `select`, `group e by key into g` with a continuation.
//! * Method syntax: `docs.Users.Select(u => …)`, `Where`, `SelectMany(x => …, (x, y) => …)`, chained;
//!   reduce as `results.GroupBy(x => x.Key).Select(g => …)`.
//! * Expressions: member paths, `?.`, indexers, casts `(int)`, `(double?)`, `(decimal)`; literals
//!   (`1m`, `2.5d`, `@"verbatim"`, `'c'`); `+ - * / %`, comparisons, `&& || !`, `?:`, `??`; `new { … }`
//!   with implicit member names (`new { u.Name }` gives `Name`), `new[] { … }`, `new object[] { … }`,
//!   `new DateTime(y, m, d)`; lambdas; `date - date` is a TimeSpan, as its ticks (100 ns; time zone suffixes
//!   are not read).
//! * Methods: string (`ToLower`, `ToUpper`, `Contains`, `StartsWith`, `EndsWith`, `Substring`, `Split`,
//!   `Trim`, `IndexOf`, `Replace`, `Length`), `string.Join/IsNullOrEmpty/Concat/Format`, the LINQ operators
//!   on arrays and groups (`Sum`, `Count`, `Min`, `Max`, `Average`, `Select`, `Where`, `Any`, `All`,
//!   `First(OrDefault)`, `Distinct`, `OrderBy`, `ToList`, `ToArray`, `Contains`, `GroupBy`, …) also as
//!   `Enumerable.Sum(g, x => …)`, DateTime members (`Year`, `Month`, `Day`, `Date`, …), `DateTime.Parse`,
//!   `Math.*`, `Convert.*`.
//! * Helpers (`this.` optional): `LoadDocument(id, "Coll")` / `LoadDocument<T>(id)` (an array of ids loads
//!   each), `Id(doc)`, `doc.Id`, `MetadataFor(doc)`, `AsJson(doc)`, `CreateField(name, value[, stored,
//!   analyzed])`, `CreateSpatialField(lat, lng)` / `CreateSpatialField(wkt)`, `Recurse(x, f)`, `.Boost(n)`
//!   (ignored), `TryConvert<T>(v)`.
//!
//! Anything else (`typeof`, `join`, object initializers, unknown methods or names) is refused by
//! [`LinqIndex::compile`] with the position (line:column) of the construct. Time-series and counter
//! sources parse and compile but cannot be evaluated yet.
//!
//! # Semantics
//! Documents are dynamic: a missing member, or a member of null, is null (RavenDB's DynamicNullObject);
//! methods on null give null, LINQ operators treat null as empty. Integers stay integers (`i64`, wrapping
//! like unchecked C#; `Sum` overflow is an error as in `Enumerable.Sum`) until a double meets them; integer
//! division by zero is an error. `+` with a string
//! concatenates (null as ""). Comparisons with null are false, `==` compares numbers by value. Dates are ISO
//! 8601 strings.
//!
//! # Limits
//! One document's map (or one reduce group) is evaluated under a [`Budget`], so no definition can loop
//! forever or take the machine's memory: at most [`DEFAULT_STEP_BUDGET`] steps (expressions evaluated, rows
//! produced by `from`/`let`, comparisons made by distinct, grouping and sorting), at most
//! [`DEFAULT_BYTE_BUDGET`] bytes of values built or copied (strings, arrays, objects; counted as they are made,
//! so a string doubled in a loop stops at the limit, not at the end; the document itself is free) and at most
//! [`DEFAULT_MAX_OUTPUTS`] index entries. Going over one fails that evaluation with
//! [`ErrorKind::LimitExceeded`]. The syntax tree's depth is bounded when parsing, so evaluation cannot
//! overflow the stack.
//!
//! # Example
//! ```
//! use corvid_linq::{LinqIndex, NoDocuments};
//! use serde_json::json;
//!
//! let index = LinqIndex::compile(
//!     &["from u in docs.Users select new { u.City, Count = 1 }"],
//!     Some("from r in results group r by r.City into g select new { City = g.Key, Count = g.Sum(x => x.Count) }"),
//! )?;
//! assert_eq!(index.collections(0), Some(vec!["Users".to_string()]));
//! let entries = index.map(0, "users/1", "Users", &json!({"City": "Oslo"}), &json!({}), &mut NoDocuments)?;
//! let mapped = serde_json::Value::Object(entries[0].fields.clone());
//! assert_eq!(index.group_key(&mapped)?, json!("Oslo"));
//! assert_eq!(index.reduce(&[mapped.clone(), mapped])?, vec![json!({"City": "Oslo", "Count": 2})]);
//! # Ok::<(), corvid_linq::LinqError>(())
//! ```

mod ast;
mod error;
mod eval;
mod lexer;
mod methods;
mod parser;
mod validate;
mod value;

use std::rc::Rc;

use serde_json::{Map, Value};

use ast::{Expr, ExprKind, QueryEnd, Source};
pub use error::{ErrorKind, Limit, LinqError};
use eval::{Eval, MapInput};

/// Evaluation steps allowed for one document or one reduce group (about a tenth of a second).
pub const DEFAULT_STEP_BUDGET: u64 = 1_000_000;
/// Bytes of values one document's map or one reduce group may build or copy: far above what real maps
/// need, small enough that a few index threads at their limit cannot exhaust a server.
pub const DEFAULT_BYTE_BUDGET: u64 = 64 << 20;
/// Index entries one document's map may produce, like RavenDB's guard on outputs per document.
pub const DEFAULT_MAX_OUTPUTS: usize = 32_768;

/// What one evaluation (one document's map, one reduce group) may spend; see the crate documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub steps: u64,
    pub bytes: u64,
    pub outputs: usize,
}

impl Budget {
    /// The budget of reducing `group`: the engine reduces every map output of a key at once, and the
    /// outputs are in memory already, so the budget grows with them (each one may be read and copied a few
    /// times); a reduce that runs away from its input still stops.
    fn for_group(self, group: &[Value]) -> Budget {
        let inputs = group.len() as u64;
        let input_bytes: u64 = group.iter().map(value::heap_size).sum();
        Budget {
            steps: self.steps.saturating_add(inputs.saturating_mul(REDUCE_STEPS_PER_INPUT)),
            bytes: self.bytes.saturating_add(input_bytes.saturating_add(inputs * 256).saturating_mul(REDUCE_COPIES_PER_INPUT)),
            outputs: self.outputs,
        }
    }
}

/// Steps a reduce may spend per map output it reduces, beyond the budget of one evaluation.
const REDUCE_STEPS_PER_INPUT: u64 = 32;
/// Times a reduce may copy each map output it reduces, beyond the budget of one evaluation.
const REDUCE_COPIES_PER_INPUT: u64 = 8;

impl Default for Budget {
    fn default() -> Self {
        Budget { steps: DEFAULT_STEP_BUDGET, bytes: DEFAULT_BYTE_BUDGET, outputs: DEFAULT_MAX_OUTPUTS }
    }
}

/// Loads referenced documents for `LoadDocument`; the caller records every id asked for.
pub trait DocumentLoader {
    fn load(&mut self, id: &str) -> Option<Value>;
}

/// A loader for maps that load nothing.
pub struct NoDocuments;

impl DocumentLoader for NoDocuments {
    fn load(&mut self, _id: &str) -> Option<Value> {
        None
    }
}

/// What a map reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapSource {
    /// `docs`: every document.
    AllDocuments,
    /// `docs.Users` / `docs["Users"]` (matched case-insensitively).
    Collection(String),
    /// `timeSeries.Coll.Name` (parsed only).
    TimeSeries { collection: String, name: Option<String> },
    /// `counters.Coll.Name` (parsed only).
    Counters { collection: String, name: Option<String> },
}

/// A field made with `CreateField`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedField {
    pub name: String,
    pub value: Value,
    pub stored: Option<bool>,
    pub analyzed: Option<bool>,
    /// A `CreateFieldOptions` object when one was passed instead of the two flags.
    pub options: Option<Value>,
}

/// A field made with `CreateSpatialField`.
#[derive(Debug, Clone, PartialEq)]
pub enum SpatialValue {
    Point { lat: Value, lng: Value },
    Wkt(Value),
}

/// One index entry produced by a map: ordinary fields in output order, plus dynamic and spatial fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexEntry {
    pub fields: Map<String, Value>,
    pub created: Vec<CreatedField>,
    pub spatial: Vec<(String, SpatialValue)>,
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
        if let MapSource::Collection(c) = &self.sources[map_no] {
            if !c.eq_ignore_ascii_case(collection) {
                return Ok(Vec::new());
            }
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
            .map(|r| entry(r).map_err(|m| label_err(LinqError::at(ErrorKind::Runtime, &def.text, def.expr.pos, m), &def.label)))
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

/// Makes sure `doc["@metadata"]["@id"]` holds the document id (it backs `Id(doc)` and `doc.Id`).
pub(crate) fn with_id(doc: &mut Value, id: &str) {
    if let Value::Object(d) = doc {
        if let Value::Object(meta) = d.entry("@metadata").or_insert_with(|| Value::Object(Map::new())) {
            meta.entry("@id").or_insert_with(|| Value::String(id.to_string()));
        }
    }
}

/// Splits one map output into ordinary, created and spatial fields.
fn entry(row: Value) -> Result<IndexEntry, String> {
    let Value::Object(obj) = row else {
        return Err(format!("A map must select an object, got {row}"));
    };
    let mut e = IndexEntry::default();
    for (name, v) in obj {
        if let Some(s) = v.get(eval::SPATIAL) {
            let sv = match s.get("wkt") {
                Some(w) => SpatialValue::Wkt(w.clone()),
                None => SpatialValue::Point { lat: s["lat"].clone(), lng: s["lng"].clone() },
            };
            e.spatial.push((name, sv));
            continue;
        }
        let created: Vec<&Value> = match &v {
            Value::Object(o) if o.contains_key(eval::FIELD) => vec![&v],
            Value::Array(a) if !a.is_empty() && a.iter().all(|x| x.get(eval::FIELD).is_some()) => a.iter().collect(),
            _ => Vec::new(),
        };
        if !created.is_empty() {
            for c in created {
                let f = &c[eval::FIELD];
                e.created.push(CreatedField {
                    name: value::to_text(&f["name"]),
                    value: f["value"].clone(),
                    stored: f.get("stored").and_then(Value::as_bool),
                    analyzed: f.get("analyzed").and_then(Value::as_bool),
                    options: f.get("options").cloned(),
                });
            }
            continue;
        }
        if v.get(eval::GROUP_KEY).is_some() {
            return Err(format!("Field '{name}' holds a group; select an aggregate of it instead"));
        }
        e.fields.insert(name, v);
    }
    Ok(e)
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
