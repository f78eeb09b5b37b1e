//! Syntax tree of the C# subset. Every node keeps the byte offset where it starts.

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expr {
    pub pos: usize,
    pub kind: ExprKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Coalesce,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnOp {
    Not,
    Neg,
}

/// Where a map reads its documents from: `docs`, `docs.Users`, `docs["Users"]`, `results` (reduce),
/// or the time-series / counters sources, which parse but are not evaluated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    AllDocs,
    Collection(String),
    Results,
    TimeSeries(String, Option<String>),
    Counters(String, Option<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExprKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Ident(String),
    Source(Source),
    /// `target.name` or `target?.name`.
    Member(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    /// A call: `name(args)` (helpers and static methods have their receiver in `target`).
    Call {
        target: Option<Box<Expr>>,
        name: String,
        generic: Option<String>,
        args: Vec<Expr>,
    },
    Lambda(Vec<String>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(String, Box<Expr>),
    Anon(Vec<(String, Expr)>),
    Array(Vec<Expr>),
    /// `new DateTime(...)` and friends.
    NewObject(String, Vec<Expr>),
    Query(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    pub var: String,
    pub source: Expr,
    pub body: QueryBody,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QueryBody {
    pub clauses: Vec<Clause>,
    pub end: QueryEnd,
    /// `into g` followed by another query body.
    pub into: Option<(String, Box<QueryBody>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clause {
    From(String, Expr),
    Let(String, Expr),
    Where(Expr),
    OrderBy(Vec<(Expr, bool)>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum QueryEnd {
    Select(Expr),
    Group { element: Expr, key: Expr },
}
