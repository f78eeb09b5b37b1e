//! RQL's keywords: the clause order, the words that cannot be a bare name, and those that cannot be a bare alias.

/// Clause keywords in the order a query must use them (`include` may also follow the paging clause).
pub(crate) const CLAUSE_ORDER: &[&str] =
    &["declare", "from", "group", "where", "order", "load", "filter", "select", "update", "include", "limit", "offset", "filter_limit"];

/// Words that end a field or alias (section 1.1), plus the other keywords that would be misread when written
/// bare where a name is expected.
const RESERVED: &[&str] = &[
    "as",
    "select",
    "where",
    "load",
    "group",
    "order",
    "include",
    "update",
    "offset",
    "limit",
    "scale",
    "filter",
    "filter_limit",
    "from",
    "declare",
    "and",
    "or",
    "not",
    "between",
    "in",
    "all",
    "true",
    "false",
    "null",
    "index",
    "by",
    "asc",
    "desc",
    "ascending",
    "descending",
    "distinct",
    "nulls",
];

/// Words that cannot be a bare alias (`from Users as u`, `from Users u`).
pub(crate) const ALIAS_GUARD: &[&str] =
    &["as", "select", "where", "load", "group", "order", "include", "update", "offset", "limit", "scale", "filter_limit"];

/// Whether `word` is a keyword (any case) that must be quoted where a name is written.
pub(crate) fn is_reserved_word(word: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(word))
}
