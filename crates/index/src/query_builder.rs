//! [`Filter`] to tantivy query (rql-and-indexes.md 1.4, 1.5 and 7.2).

use std::ops::Bound;

use tantivy::query::{
    AllQuery, BooleanQuery, BoostQuery, EmptyQuery, ExistsQuery, FuzzyTermQuery, Occur, PhraseQuery, Query, RangeQuery, RegexQuery,
    TermQuery, TermSetQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use crate::schema::{clip_term, FieldHandles, IndexSchema, EMPTY_TERM, NULL_TERM};
use crate::{Filter, IndexError, Value};

type BoxQuery = Box<dyn Query>;

pub(crate) struct QueryBuilder<'a> {
    schema: &'a IndexSchema,
}

impl<'a> QueryBuilder<'a> {
    pub fn new(schema: &'a IndexSchema) -> Self {
        QueryBuilder { schema }
    }

    pub fn build(&self, filter: &Filter) -> Result<BoxQuery, IndexError> {
        Ok(match filter {
            Filter::All => Box::new(AllQuery),
            Filter::Equal { field, value, exact } => self.equal(self.field(field)?, value, *exact),
            Filter::Range { field, lower, upper } => self.range(field, lower.as_ref(), upper.as_ref())?,
            Filter::In { field, values, all, exact } => self.in_query(self.field(field)?, values, *all, *exact),
            Filter::StartsWith { field, prefix, exact } => {
                let (target, text) = self.keyword_target(self.field(field)?, prefix, *exact);
                regex_query(&format!("{}.*", escape_regex(&text)), target)?
            }
            Filter::EndsWith { field, suffix, exact } => {
                let (target, text) = self.keyword_target(self.field(field)?, suffix, *exact);
                regex_query(&format!(".*{}", escape_regex(&text)), target)?
            }
            Filter::Exists { field } => self.exists(field)?,
            Filter::Search { field, terms, all } => self.search(self.field(field)?, terms, *all)?,
            Filter::Regex { field, pattern } => {
                let handles = self.field(field)?;
                let target = if handles.analyzed_only { handles.search.unwrap_or(handles.term) } else { handles.term };
                regex_query(&unanchor(pattern), target)?
            }
            Filter::And(children) => self.and(children)?,
            Filter::Or(children) => {
                if children.is_empty() {
                    return Ok(Box::new(EmptyQuery));
                }
                let clauses = children.iter().map(|c| Ok((Occur::Should, self.build(c)?))).collect::<Result<Vec<_>, IndexError>>()?;
                Box::new(BooleanQuery::new(clauses))
            }
            Filter::Not(inner) => {
                Box::new(BooleanQuery::new(vec![(Occur::Must, Box::new(AllQuery)), (Occur::MustNot, self.build(inner)?)]))
            }
            Filter::Boost(inner, factor) => Box::new(BoostQuery::new(self.build(inner)?, *factor)),
            Filter::AnyTerm { field, terms } => {
                let handles = self.field(field)?;
                let target = handles.search.unwrap_or(handles.term);
                let clauses: Vec<(Occur, BoxQuery)> = terms
                    .iter()
                    .map(|(t, boost)| {
                        let query = term_query(Term::from_field_text(target, clip_term(t)));
                        (Occur::Should, Box::new(BoostQuery::new(query, *boost)) as BoxQuery)
                    })
                    .collect();
                if clauses.is_empty() {
                    Box::new(EmptyQuery)
                } else {
                    Box::new(BooleanQuery::new(clauses))
                }
            }
            Filter::Key(key) => term_query(Term::from_field_text(self.schema.key, key)),
            Filter::Fuzzy { field, term, max_edits } => {
                let handles = self.field(field)?;
                let term = Term::from_field_text(handles.term, clip_term(&term.to_lowercase()));
                Box::new(FuzzyTermQuery::new(term, (*max_edits).min(2), true))
            }
            Filter::Proximity { field, terms, slop } => {
                let handles = self.field(field)?;
                let search_field = handles.search.ok_or_else(|| {
                    IndexError::InvalidQuery(format!("proximity() needs a full-text (search) field; '{field}' is not one"))
                })?;
                let mut tokens = Vec::new();
                let mut analyzer = handles.analyzer.build();
                let mut stream = analyzer.token_stream(terms);
                while let Some(token) = stream.next() {
                    tokens.push(Term::from_field_text(search_field, &token.text));
                }
                match tokens.len() {
                    0 => Box::new(EmptyQuery),
                    1 => term_query(tokens.pop().expect("one token")),
                    _ => {
                        let mut phrase = PhraseQuery::new(tokens);
                        phrase.set_slop(*slop);
                        Box::new(phrase)
                    }
                }
            }
            Filter::Spatial { field, shape, relation } => {
                let handles = self.field(field)?;
                let columns = handles
                    .spatial
                    .as_ref()
                    .ok_or_else(|| IndexError::InvalidQuery(format!("the field '{field}' is not a spatial field")))?;
                if !columns.options.cartesian {
                    crate::spatial::check_geography(shape).map_err(|e| IndexError::InvalidQuery(e.to_string()))?;
                }
                Box::new(crate::spatial::SpatialQuery { columns: columns.clone(), shape: shape.clone(), relation: *relation })
            }
        })
    }

    fn field(&self, path: &str) -> Result<&'a FieldHandles, IndexError> {
        self.schema.field(path).map(|(_, f)| f).ok_or_else(|| IndexError::InvalidQuery(format!("the field '{path}' is not indexed")))
    }

    /// Entries where the field has a value: its sort column holds the first one (`schema.rs`); spatial
    /// fields have a point or a shape.
    fn exists(&self, path: &str) -> Result<BoxQuery, IndexError> {
        let field = self.field(path)?;
        let column = |c: &crate::schema::Column| -> BoxQuery { Box::new(ExistsQuery::new(c.name.clone(), false)) };
        Ok(match &field.spatial {
            Some(spatial) => {
                Box::new(BooleanQuery::new(vec![(Occur::Should, column(&spatial.lat)), (Occur::Should, column(&spatial.shape))]))
            }
            None => column(&field.sort_string),
        })
    }

    /// AND; negated children become MUST_NOT clauses of the same query.
    fn and(&self, children: &[Filter]) -> Result<BoxQuery, IndexError> {
        let mut clauses = Vec::with_capacity(children.len() + 1);
        for child in children {
            match child {
                Filter::Not(inner) => clauses.push((Occur::MustNot, self.build(inner)?)),
                other => clauses.push((Occur::Must, self.build(other)?)),
            }
        }
        if !clauses.iter().any(|(occur, _)| *occur == Occur::Must) {
            clauses.push((Occur::Must, Box::new(AllQuery)));
        }
        if clauses.len() == 1 {
            return Ok(clauses.pop().expect("one clause").1);
        }
        Ok(Box::new(BooleanQuery::new(clauses)))
    }

    /// The term a value is compared with on the keyword fields, or None for numbers (which use the numeric fields).
    fn keyword_term(&self, field: &FieldHandles, value: &Value, exact: bool) -> Option<Term> {
        Some(match value {
            Value::Null => Term::from_field_text(field.term, NULL_TERM),
            Value::Bool(b) => Term::from_field_text(field.term, if *b { "true" } else { "false" }),
            Value::String(s) if s.is_empty() => Term::from_field_text(field.term, EMPTY_TERM),
            Value::String(s) => {
                let (target, text) = self.keyword_target(field, s, exact);
                Term::from_field_text(target, &text)
            }
            Value::Long(_) | Value::Double(_) => return None,
        })
    }

    /// Field and text for a keyword comparison: the exact field when asked for and present; otherwise the default
    /// field, with the text lower-cased unless `exact` (RavenDB then compares the value as given).
    fn keyword_target(&self, field: &FieldHandles, text: &str, exact: bool) -> (Field, String) {
        let text = clip_term(text);
        if field.case_sensitive {
            return (field.term, text.to_owned());
        }
        // An analyzed-only field has no whole-value terms: the value is compared with its tokens, as RavenDB
        // does (`Description = 'word'` finds the word; a multi-word value finds nothing).
        if let (true, Some(search)) = (field.analyzed_only, field.search) {
            return (search, if exact { text.to_owned() } else { text.to_lowercase() });
        }
        match (exact, field.exact) {
            (true, Some(exact_field)) => (exact_field, text.to_owned()),
            (true, None) => (field.term, text.to_owned()),
            (false, _) => (field.term, text.to_lowercase()),
        }
    }

    fn equal(&self, field: &FieldHandles, value: &Value, exact: bool) -> BoxQuery {
        match value {
            Value::Long(v) => term_query(Term::from_field_i64(field.long.field, *v)),
            Value::Double(v) => {
                let term = Term::from_field_f64(field.double.field, *v);
                Box::new(RangeQuery::new(Bound::Included(term.clone()), Bound::Included(term)))
            }
            _ => term_query(self.keyword_term(field, value, exact).expect("keyword value")),
        }
    }

    fn in_query(&self, field: &FieldHandles, values: &[Value], all: bool, exact: bool) -> BoxQuery {
        if values.is_empty() {
            return if all { Box::new(AllQuery) } else { Box::new(EmptyQuery) };
        }
        if !all {
            let keyword_terms: Option<Vec<Term>> = values.iter().map(|v| self.keyword_term(field, v, exact)).collect();
            if let Some(terms) = keyword_terms {
                return Box::new(TermSetQuery::new(terms));
            }
        }
        let occur = if all { Occur::Must } else { Occur::Should };
        Box::new(BooleanQuery::new(values.iter().map(|v| (occur, self.equal(field, v, exact))).collect()))
    }

    fn range(&self, path: &str, lower: Option<&(Value, bool)>, upper: Option<&(Value, bool)>) -> Result<BoxQuery, IndexError> {
        let field = self.field(path)?;
        let kinds: Vec<&Value> = lower.iter().chain(upper.iter()).map(|(v, _)| v).collect();
        let numeric = |v: &Value| matches!(v, Value::Long(_) | Value::Double(_));
        if kinds.is_empty() {
            return self.exists(path);
        }
        if kinds.iter().all(|v| numeric(v)) {
            let any_double = kinds.iter().any(|v| matches!(v, Value::Double(_)));
            let to_term = |v: &Value| match (v, any_double) {
                (Value::Long(l), false) => Term::from_field_i64(field.long.field, *l),
                (Value::Long(l), true) => Term::from_field_f64(field.double.field, *l as f64),
                (Value::Double(d), _) => Term::from_field_f64(field.double.field, *d),
                _ => unreachable!("numeric bound"),
            };
            return Ok(Box::new(RangeQuery::new(bound(lower, to_term), bound(upper, to_term))));
        }
        if kinds.iter().any(|v| numeric(v)) {
            return Err(IndexError::InvalidQuery(format!("range on '{path}' mixes numeric and non-numeric bounds")));
        }
        let to_term = |v: &Value| self.keyword_term(field, v, false).expect("keyword bound");
        Ok(Box::new(RangeQuery::new(bound(lower, to_term), bound(upper, to_term))))
    }

    /// `search(field, terms)`: whitespace-separated terms, "quoted phrases", `*`/`?` wildcards.
    fn search(&self, field: &FieldHandles, terms: &str, all: bool) -> Result<BoxQuery, IndexError> {
        let mut clauses: Vec<(Occur, BoxQuery)> = Vec::new();
        let occur = if all { Occur::Must } else { Occur::Should };
        for (word, quoted) in split_search_terms(terms) {
            let query = match field.search {
                Some(search_field) if !quoted && (word.contains('*') || word.contains('?')) => {
                    Some(regex_query(&wildcard_regex(&word.to_lowercase()), search_field)?)
                }
                Some(search_field) => analyzed_query(search_field, field.analyzer, &word),
                // Without a search form the default field's analyzer applies: the whole term, lower-cased.
                None if !quoted && (word.contains('*') || word.contains('?')) => {
                    Some(regex_query(&wildcard_regex(&keyword_case(field, &word)), field.term)?)
                }
                None => Some(term_query(Term::from_field_text(field.term, clip_term(&keyword_case(field, &word))))),
            };
            if let Some(query) = query {
                clauses.push((occur, query));
            }
        }
        Ok(match clauses.len() {
            0 => Box::new(EmptyQuery),
            1 => clauses.pop().expect("one clause").1,
            _ => Box::new(BooleanQuery::new(clauses)),
        })
    }
}

fn term_query(term: Term) -> BoxQuery {
    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs))
}

fn regex_query(pattern: &str, field: Field) -> Result<BoxQuery, IndexError> {
    RegexQuery::from_pattern(pattern, field)
        .map(|q| Box::new(q) as BoxQuery)
        .map_err(|e| IndexError::InvalidQuery(format!("invalid regular expression '{pattern}': {e}")))
}

/// A search word compared with the keyword terms: lower-cased, unless the field keeps case (`Indexing: Exact`).
fn keyword_case(field: &FieldHandles, word: &str) -> String {
    if field.case_sensitive {
        word.to_owned()
    } else {
        word.to_lowercase()
    }
}

fn bound(b: Option<&(Value, bool)>, to_term: impl Fn(&Value) -> Term) -> Bound<Term> {
    match b {
        None => Bound::Unbounded,
        Some((v, true)) => Bound::Included(to_term(v)),
        Some((v, false)) => Bound::Excluded(to_term(v)),
    }
}

/// The analyzed tokens of one search term: none (stop words only), a term, or a phrase.
fn analyzed_query(field: Field, analyzer: crate::schema::Analyzer, text: &str) -> Option<BoxQuery> {
    let mut analyzer = analyzer.build();
    let mut stream = analyzer.token_stream(text);
    let mut tokens: Vec<(usize, Term)> = Vec::new();
    while let Some(token) = stream.next() {
        tokens.push((token.position, Term::from_field_text(field, &token.text)));
    }
    match tokens.len() {
        0 => None,
        1 => Some(term_query(tokens.pop().expect("one token").1)),
        _ => {
            let first = tokens[0].0;
            Some(Box::new(PhraseQuery::new_with_offset(tokens.into_iter().map(|(p, t)| (p - first, t)).collect())))
        }
    }
}

/// Splits search input on whitespace, keeping `"quoted phrases"` together. Returns (text, quoted).
pub(crate) fn split_search_terms(input: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let phrase: String = chars.by_ref().take_while(|&c| c != '"').collect();
            if !phrase.trim().is_empty() {
                out.push((phrase, true));
            }
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                word.push(c);
                chars.next();
            }
            out.push((word, false));
        }
    }
    out
}

/// `*` = any run of characters, `?` = one character, everything else literal.
fn wildcard_regex(word: &str) -> String {
    let mut out = String::with_capacity(word.len() + 8);
    for c in word.chars() {
        match c {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            other => push_escaped(&mut out, other),
        }
    }
    out
}

/// tantivy matches a regex against the whole term; RavenDB (Lucene's RegexQuery) finds it anywhere unless
/// anchored. Look-around assertions are unsupported by tantivy's automaton, so `^`/`$` anchors become the
/// absence of the `.*` padding.
fn unanchor(pattern: &str) -> String {
    let (start, body) = match pattern.strip_prefix('^') {
        Some(rest) => ("", rest),
        None => (".*", pattern),
    };
    let (body, end) = match body.strip_suffix('$') {
        Some(rest) if !rest.ends_with('\\') => (rest, ""),
        _ => (body, ".*"),
    };
    format!("{start}(?:{body}){end}")
}

pub(crate) fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    text.chars().for_each(|c| push_escaped(&mut out, c));
    out
}

fn push_escaped(out: &mut String, c: char) {
    // The regex meta characters; escaping anything else could turn it into an escape sequence (`\<`, `\d`).
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
    }
    out.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_terms_split_on_whitespace_and_quotes() {
        let parts = split_search_terms(r#"  quick "brown fox"  jump* "" "#);
        assert_eq!(parts, vec![("quick".into(), false), ("brown fox".into(), true), ("jump*".into(), false)]);
    }

    #[test]
    fn regex_anchors_become_padding() {
        assert_eq!(unanchor("^ab"), "(?:ab).*");
        assert_eq!(unanchor("ab$"), ".*(?:ab)");
        assert_eq!(unanchor("a|b"), ".*(?:a|b).*");
        assert_eq!(escape_regex("a.b<c"), "a\\.b<c");
    }
}
