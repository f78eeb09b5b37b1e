//! The syntax tree of an RQL query.
//!
//! Every node that a later stage may reject (unknown field, wrong method arguments, bad parameter) carries the
//! [`Span`] of its text. `Display` writes the tree back as canonical RQL that parses to the same tree.

use std::fmt::{self, Display, Formatter, Write};

/// Byte range `start..end` in the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The text this span covers.
    pub fn text(self, query: &str) -> &str {
        query.get(self.start..self.end).unwrap_or("")
    }
}

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

// ---------------------------------------------------------------------------------------------------------
// Display: canonical RQL.

fn write_quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\'")?,
            '\\' => f.write_str("\\\\")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

fn is_plain_ident(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else { return false };
    (first.is_alphabetic() || first == '_' || (first == '@' && !s[1..].starts_with('@') && s.len() > 1))
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && !(first == '_' && s.contains('@'))
}

fn write_name(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    if is_plain_ident(s) && !crate::parser::is_reserved_word(s) {
        f.write_str(s)
    } else {
        write_quoted(f, s)
    }
}

fn write_list<T: Display>(f: &mut Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        item.fmt(f)?;
    }
    Ok(())
}

impl Display for Ident {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_name(f, &self.name)
    }
}

impl Display for FieldPath {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segments.iter().enumerate() {
            match seg {
                PathSegment::Field { name, quoted } => {
                    if i > 0 {
                        f.write_char('.')?;
                    }
                    // A bare keyword in first position would be read as the keyword.
                    if *quoted || !is_plain_ident(name) || (i == 0 && crate::parser::is_reserved_word(name)) {
                        write_quoted(f, name)?;
                    } else {
                        f.write_str(name)?;
                    }
                }
                PathSegment::AllElements => f.write_str("[]")?,
                PathSegment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl Display for Value {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ValueKind::String(s) => write_quoted(f, s),
            ValueKind::Long(n) => write!(f, "{n}"),
            ValueKind::Double(d) => {
                let s = d.to_string();
                if s.contains('.') {
                    f.write_str(&s)
                } else {
                    write!(f, "{s}.0")
                }
            }
            ValueKind::Bool(b) => write!(f, "{b}"),
            ValueKind::Null => f.write_str("null"),
            ValueKind::Parameter(p) => write!(f, "${p}"),
        }
    }
}

impl Display for Call {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{}(", self.name)?;
        write_list(f, &self.args)?;
        f.write_char(')')
    }
}

impl Display for Arg {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Value(v) => v.fmt(f),
            Arg::Field(p) => p.fmt(f),
            Arg::Call(c) => c.fmt(f),
            Arg::Expr(e) => e.fmt(f),
            Arg::Aliased { arg, alias } => write!(f, "{arg} as {alias}"),
        }
    }
}

impl Display for Operand {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Field(p) => p.fmt(f),
            Operand::Call(c) => c.fmt(f),
            Operand::Value(v) => v.fmt(f),
        }
    }
}

impl Display for Expr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        // Parenthesize a child whose operator binds more loosely than its parent.
        fn child(f: &mut Formatter<'_>, e: &Expr, parent_and: bool) -> fmt::Result {
            match e {
                Expr::Or(..) if parent_and => write!(f, "({e})"),
                _ => e.fmt(f),
            }
        }
        match self {
            Expr::True(_) => f.write_str("true"),
            Expr::And(a, b) => {
                child(f, a, true)?;
                f.write_str(" and ")?;
                // The parser folds `a and b and c` to the left; a right-hand `and` needs parentheses.
                match **b {
                    Expr::And(..) | Expr::Or(..) => write!(f, "({b})"),
                    _ => b.fmt(f),
                }
            }
            Expr::Or(a, b) => {
                a.fmt(f)?;
                f.write_str(" or ")?;
                match **b {
                    Expr::Or(..) => write!(f, "({b})"),
                    _ => b.fmt(f),
                }
            }
            Expr::Not { expr, .. } => match **expr {
                Expr::And(..) | Expr::Or(..) => write!(f, "not ({expr})"),
                _ => write!(f, "not {expr}"),
            },
            Expr::Compare { left, op, right, .. } => write!(f, "{left} {} {right}", op.as_str()),
            Expr::Between { operand, low, high, .. } => write!(f, "{operand} between {low} and {high}"),
            Expr::In { operand, values, all, .. } => {
                write!(f, "{operand} {}in (", if *all { "all " } else { "" })?;
                write_list(f, values)?;
                f.write_char(')')
            }
            Expr::Method(c) => c.fmt(f),
        }
    }
}

impl Display for OrderField {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        if let Some(t) = self.ordering {
            f.write_str(match t {
                OrderingType::String => " as string",
                OrderingType::Long => " as long",
                OrderingType::Double => " as double",
                OrderingType::AlphaNumeric => " as alphaNumeric",
            })?;
        }
        if self.descending {
            f.write_str(" desc")?;
        }
        match self.nulls {
            Some(NullsOrder::First) => f.write_str(" nulls first"),
            Some(NullsOrder::Last) => f.write_str(" nulls last"),
            None => Ok(()),
        }
    }
}

impl Display for GroupByItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)?;
        match &self.alias {
            Some(a) => write!(f, " as {a}"),
            None => Ok(()),
        }
    }
}

impl Display for LoadItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} as {}", self.path, self.alias)
    }
}

impl Display for SelectField {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match &self.expr {
            SelectExpr::Field(p) => p.fmt(f)?,
            SelectExpr::Call(c) => c.fmt(f)?,
            SelectExpr::Value(v) => v.fmt(f)?,
            SelectExpr::TimeSeries(raw) => write!(f, "timeseries{}", raw.source)?,
        }
        match &self.alias {
            Some(a) => {
                f.write_str(" as ")?;
                write_quoted(f, &a.name)
            }
            None => Ok(()),
        }
    }
}

impl Display for IncludeItem {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            IncludeItem::Path(p) => p.fmt(f),
            IncludeItem::Call(c) => c.fmt(f),
        }
    }
}

impl Display for Query {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        for d in &self.declared_functions {
            let kind = match d.kind {
                DeclarationKind::Function => "function",
                DeclarationKind::TimeSeries => "timeseries",
            };
            write!(f, "declare {kind} {}(", d.name.name)?;
            let params: Vec<&str> = d.params.iter().map(|p| p.name.as_str()).collect();
            f.write_str(&params.join(", "))?;
            writeln!(f, ") {}", d.body.source)?;
        }
        f.write_str("from ")?;
        match &self.from.source {
            FromSource::Collection { name, .. } => write_quoted(f, name)?,
            FromSource::AllDocs { .. } => f.write_str("@all_docs")?,
            FromSource::Index { name, .. } => {
                f.write_str("index ")?;
                write_quoted(f, name)?;
            }
        }
        if let Some(a) = &self.from.alias {
            write!(f, " as {a}")?;
        }
        if !self.group_by.is_empty() {
            f.write_str(" group by ")?;
            write_list(f, &self.group_by)?;
        }
        if let Some(w) = &self.where_clause {
            write!(f, " where {w}")?;
        }
        if !self.order_by.is_empty() {
            f.write_str(" order by ")?;
            write_list(f, &self.order_by)?;
        }
        if !self.load.is_empty() {
            f.write_str(" load ")?;
            write_list(f, &self.load)?;
        }
        if let Some(w) = &self.filter {
            write!(f, " filter {w}")?;
        }
        if let Some(s) = &self.select {
            f.write_str(" select ")?;
            if s.distinct {
                f.write_str("distinct ")?;
            }
            match &s.projection {
                Projection::All => f.write_char('*')?,
                Projection::Js(js) => f.write_str(&js.source)?,
                Projection::Fields(fields) => write_list(f, fields)?,
            }
        }
        if let Some(u) = &self.update {
            write!(f, " update {}", u.source)?;
        }
        if !self.include.is_empty() {
            f.write_str(" include ")?;
            write_list(f, &self.include)?;
        }
        if let Some(l) = &self.limit {
            write!(f, " limit {l}")?;
        }
        if let Some(o) = &self.offset {
            write!(f, " offset {o}")?;
        }
        if let Some(l) = &self.filter_limit {
            write!(f, " filter_limit {l}")?;
        }
        Ok(())
    }
}
