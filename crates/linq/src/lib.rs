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
mod budget;
mod document_loader;
mod error;
mod eval;
mod index_entry;
mod lexer;
mod linq_index;
mod metadata;
mod methods;
mod parser;
mod reserved_keys;
mod validate;
mod value;

pub use budget::{Budget, DEFAULT_BYTE_BUDGET, DEFAULT_MAX_OUTPUTS, DEFAULT_STEP_BUDGET};
pub use document_loader::{DocumentLoader, NoDocuments};
pub use error::{ErrorKind, Limit, LinqError};
pub use index_entry::{CreatedField, IndexEntry, SpatialValue};
pub use linq_index::{LinqIndex, MapSource};
