//! The syntax tree of an RQL query.
//!
//! Every node that a later stage may reject (unknown field, wrong method arguments, bad parameter) carries the
//! [`Span`] of its text. `Display` (`display.rs`) writes the tree back as canonical RQL that
//! parses to the same tree.

use std::fmt::Write;

use crate::span::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub declared_functions: Vec<DeclaredFunction>,
    pub from: From,
    pub group_by: Vec<GroupByItem>,
    pub where_clause: Option<Expr>,
    pub order_by: Vec<OrderField>,
    pub load: Vec<LoadItem>,
    /// `filter` (exploration query): evaluated against documents, not an index.
    pub filter: Option<Expr>,
    pub select: Option<Select>,
    /// `update { … }` of a patch by query.
    pub update: Option<JsBlock>,
    pub include: Vec<IncludeItem>,
    /// Page size; `limit a, b` is stored as `offset = a`, `limit = b`. Always a `Long` or a `Parameter`.
    pub limit: Option<Value>,
    /// Number of results to skip. Always a `Long` or a `Parameter`.
    pub offset: Option<Value>,
    /// `filter_limit n`: how many documents the `filter` clause may scan.
    pub filter_limit: Option<Value>,
}

/// An identifier such as an alias or a function name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// Raw JavaScript text, braces included: a function body, an object literal or a patch script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsBlock {
    pub source: String,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeclarationKind {
    /// `declare function f(a, b) { … }`: JavaScript.
    Function,
    /// `declare timeseries f(a) { … }`: the body is time-series RQL, kept raw.
    TimeSeries,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredFunction {
    pub kind: DeclarationKind,
    pub name: Ident,
    pub params: Vec<Ident>,
    pub body: JsBlock,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct From {
    pub source: FromSource,
    pub alias: Option<Ident>,
    pub span: Span,
    /// `from Orders (Revisions = true)`: a subscription over the collection's revisions.
    pub revisions: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromSource {
    /// `from Users`, `from 'Users'`.
    Collection { name: String, span: Span },
    /// `from @all_docs`.
    AllDocs { span: Span },
    /// `from index 'Users/ByName'`.
    Index { name: String, span: Span },
}

/// A field path: `Name`, `u.Address.City`, `Lines[].Product`, `Items[0]`, `'@metadata'.'@id'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldPath {
    pub segments: Vec<PathSegment>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSegment {
    Field {
        name: String,
        quoted: bool,
    },
    /// `[]`: every element of an array.
    AllElements,
    /// `[n]`: one element.
    Index(u64),
}

impl FieldPath {
    /// The names of the `Field` segments.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            PathSegment::Field { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    /// The path as RavenDB names an index field: segments unquoted, joined with `.`, `[]` kept
    /// (`Lines[].Product`).
    pub fn dotted(&self) -> String {
        let mut out = String::new();
        for seg in &self.segments {
            match seg {
                PathSegment::Field { name, .. } => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                PathSegment::AllElements => out.push_str("[]"),
                PathSegment::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
            }
        }
        out
    }

    /// The path without its first segment when that segment is `alias` (a from- or load-alias).
    pub fn strip_alias(&self, alias: &str) -> Option<FieldPath> {
        match self.segments.first() {
            Some(PathSegment::Field { name, .. }) if name == alias && self.segments.len() > 1 => {
                Some(FieldPath { segments: self.segments[1..].to_vec(), span: self.span })
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub kind: ValueKind,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ValueKind {
    String(String),
    Long(i64),
    Double(f64),
    Bool(bool),
    Null,
    /// `$name`; the name is stored without `$`, as in `QueryParameters`.
    Parameter(String),
}

/// A method call: `search(Name, $p0)`, `spatial.within(…)`, `id()`. The name keeps its spelling; RQL method
/// names are case-insensitive, so compare with [`Call::is`].
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub name_span: Span,
    pub args: Vec<Arg>,
    pub span: Span,
}

impl Call {
    /// Case-insensitive name check: `call.is("startsWith")`.
    pub fn is(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }
}

/// A method argument.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A literal or parameter. A string argument can also name a field (`search('First Name', $p0)`);
    /// see [`Arg::as_field`].
    Value(Value),
    Field(FieldPath),
    Call(Call),
    /// A predicate: `boost(Name = $p0, 2)`, `facet(Price < $p0, …)`.
    Expr(Expr),
    /// `arg as Alias` (`facet(Brand, sum(Units) as Total)`).
    Aliased {
        arg: Box<Arg>,
        alias: Ident,
    },
}

impl Arg {
    /// The argument read as a field path: a path, or a string naming one quoted segment.
    pub fn as_field(&self) -> Option<FieldPath> {
        match self {
            Arg::Field(p) => Some(p.clone()),
            Arg::Value(Value { kind: ValueKind::String(s), span }) => {
                Some(FieldPath { segments: vec![PathSegment::Field { name: s.clone(), quoted: true }], span: *span })
            }
            _ => None,
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Arg::Value(v) => v.span,
            Arg::Field(p) => p.span,
            Arg::Call(c) => c.span,
            Arg::Expr(e) => e.span(),
            Arg::Aliased { arg, alias } => arg.span().to(alias.span),
        }
    }
}

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Field(FieldPath),
    Call(Call),
    Value(Value),
}

impl Operand {
    pub fn span(&self) -> Span {
        match self {
            Operand::Field(p) => p.span,
            Operand::Call(c) => c.span,
            Operand::Value(v) => v.span,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    /// `=` or `==`
    Eq,
    /// `!=` or `<>`
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CompareOp::Eq => "=",
            CompareOp::NotEq => "!=",
            CompareOp::Lt => "<",
            CompareOp::Le => "<=",
            CompareOp::Gt => ">",
            CompareOp::Ge => ">=",
        }
    }
}

/// A boolean expression (`where`, `filter`, predicate arguments).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// The literal `true` (`true and not X`).
    True(Span),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not {
        expr: Box<Expr>,
        span: Span,
    },
    Compare {
        left: Operand,
        op: CompareOp,
        right: Operand,
        span: Span,
    },
    /// Inclusive at both ends.
    Between {
        operand: Operand,
        low: Value,
        high: Value,
        span: Span,
    },
    /// `x in (…)`, or `x all in (…)` when `all`.
    In {
        operand: Operand,
        values: Vec<Value>,
        all: bool,
        span: Span,
    },
    /// A boolean method: `search(…)`, `exists(…)`, `boost(…)`, `spatial.within(…)`, …
    Method(Call),
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::True(s) => *s,
            Expr::And(a, b) | Expr::Or(a, b) => a.span().to(b.span()),
            Expr::Not { span, .. }
            | Expr::Compare { span, .. }
            | Expr::Between { span, .. }
            | Expr::In { span, .. }
            | Expr::Method(Call { span, .. }) => *span,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupByItem {
    /// A path, a call (`array(Lines[].Product)`) or a value.
    pub expr: Operand,
    pub alias: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderingType {
    String,
    Long,
    Double,
    AlphaNumeric,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NullsOrder {
    First,
    Last,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderField {
    /// A path or a call (`score()`, `random('seed')`, `spatial.distance(…)`, `count()`).
    pub expr: Operand,
    pub ordering: Option<OrderingType>,
    pub descending: bool,
    pub nulls: Option<NullsOrder>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadItem {
    pub path: FieldPath,
    pub alias: Ident,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub projection: Projection,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// `select *`
    All,
    /// `select { Name: u.Name }`: a JavaScript object literal.
    Js(JsBlock),
    Fields(Vec<SelectField>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectField {
    pub expr: SelectExpr,
    /// From `as Alias` or `as 'Alias'`.
    pub alias: Option<Ident>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectExpr {
    Field(FieldPath),
    /// `key()`, `count()`, `sum(f)`, `facet(…)`, `suggest(…)`, declared functions, …
    Call(Call),
    Value(Value),
    /// `timeseries(from … )`: the time-series sub-query, parentheses included, kept raw.
    TimeSeries(JsBlock),
}

#[derive(Debug, Clone, PartialEq)]
pub enum IncludeItem {
    /// A document include: `include Company`, `include 'Lines[].Product'`.
    Path(FieldPath),
    /// `counters(…)`, `timeseries(…)`, `cmpxchg(…)`, `revisions(…)`, `highlight(…)`, `explanations(…)`, `timings()`.
    Call(Call),
}
