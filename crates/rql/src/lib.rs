//! RQL (RavenDB Query Language): lexer, parser and syntax tree. Pure: no I/O.
//!
//! [`parse`] turns query text into a [`Query`], or a [`ParseError`] with a byte position, line, column and
//! the list of what was expected. `Display` on [`Query`] writes canonical RQL back.
//!
//! # Supported
//!
//! * Lexical rules of RavenDB's `QueryScanner`: case-insensitive keywords; identifiers with `_`, `@` and `-`
//!   (`@all_docs`, `a-b`); `'…'` and `"…"` strings with doubled quotes and `\' \" \\ \t \n \r \f \b` escapes;
//!   longs (with `_` separators), doubles, negative numbers; `$param`; `//` and `/* */` comments.
//! * Clause order `declare* from [group by] [where] [order by] [load] [filter] ([select] [include] | update {…})
//!   [limit/offset] [filter_limit] [include]`, with an error naming the misplaced clause.
//! * `declare function f(a, b) { … }` and `declare timeseries f(a) { … }` (bodies kept as raw text).
//! * `from Users`, `from 'Users'`, `from @all_docs`, `from index 'Name'`, with an alias (`as u` or `u`).
//! * `group by` paths, calls (`array(Lines[].Product)`), aliases.
//! * `where`/`filter`: `= == != <> < <= > >=`, `between … and …`, `in (…)`, `all in (…)`, `and`/`or`/`not`
//!   (precedence not > and > or), parentheses, `true`, and any method call (`search`, `boost`, `exists`,
//!   `startsWith`, `spatial.within(…, spatial.circle(…))`, `moreLikeThis`, `vector.search`, …) with nested
//!   predicates as arguments (`boost(Name = $p0, 2)`, `exact(A in ($p0))`, `intersect(A = 1, B = 2)`).
//! * Field paths `a.b`, `Lines[].Product`, `Items[0]`, quoted segments (`'@metadata'.'@id'`).
//! * `order by` paths or calls, `as string|long|double|alphaNumeric`, `asc|ascending|desc|descending`,
//!   `nulls first|last`.
//! * `load path [as] alias, …`.
//! * `select [distinct]` `*`, a JavaScript object literal (raw text), or fields/calls/values with `as` aliases
//!   (names or strings), `timeseries(from …)` (raw text).
//! * `include` paths and calls (`counters(…)`, `timeseries(…)`, `cmpxchg(…)`, `highlight(…)`, `timings()`, …).
//! * `limit n`, `limit skip, take`, `limit n offset m`, `offset m`, `filter_limit n` (integers or parameters).
//! * `update { … }` (raw text).
//!
//! # Not supported, or different from RavenDB
//!
//! * The filtered `from Coll(expr)` form and graph queries (`with`, `match`) are rejected with a clear error.
//! * Time-series bodies (`declare timeseries`, `select timeseries(from …)`) are kept as raw text, not parsed.
//! * Method names and argument counts are not checked: that is the query planner's job. Method names keep
//!   their spelling; compare them with [`Call::is`] (case-insensitive).
//! * A `not` may begin an expression (RavenDB rejects `where not X`; Corvid accepts it).
//! * Nesting is limited to [`MAX_NESTING`] levels ("Query is too complex"); each `and`/`or` in a chain counts as
//!   a level, because the tree grows one level per operator.
//! * The clause keywords `select where load group order include update offset limit scale filter_limit` cannot
//!   be an unquoted alias, even after `as` (quote them: `as 'order'`).
//! * JavaScript bodies are delimited by brace matching that skips strings, template literals and comments but
//!   not regular-expression literals: a regex literal with an unbalanced brace or quote must be written with
//!   `new RegExp('…')`.
//!
//! # Example
//!
//! ```
//! use corvid_rql::{parse, Expr, FromSource};
//!
//! let query = parse("from 'Users' as u where u.Age > $p0 order by u.Name select u.Name limit 10").unwrap();
//! assert!(matches!(query.from.source, FromSource::Collection { ref name, .. } if name == "Users"));
//! assert!(matches!(query.where_clause, Some(Expr::Compare { .. })));
//! assert_eq!(query.to_string(), "from 'Users' as u where u.Age > $p0 order by u.Name select u.Name limit 10");
//!
//! let error = parse("from Users select Name where Age > 3").unwrap_err();
//! assert_eq!((error.line, error.column), (1, 24));
//! assert!(error.message.contains("the 'where' clause must come before 'select'"));
//! ```

mod ast;
mod display;
mod error;
mod keywords;
mod lexer;
mod parser;
mod span;

pub use ast::{
    Arg, Call, CompareOp, DeclarationKind, DeclaredFunction, Expr, FieldPath, From, FromSource, GroupByItem, Ident, IncludeItem, JsBlock,
    LoadItem, NullsOrder, Operand, OrderField, OrderingType, PathSegment, Projection, Query, Select, SelectExpr, SelectField, Value,
    ValueKind,
};
pub use error::ParseError;
pub use parser::{parse, MAX_NESTING};
pub use span::Span;
