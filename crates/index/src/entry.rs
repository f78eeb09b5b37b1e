//! Turning a mapped document into one tantivy document (rql-and-indexes.md 7.3).
//!
//! Values are read at the field path (`field_path.rs`); a null at the end of the path is `NULL_VALUE`.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value as Json;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::TantivyDocument;

use crate::field_path::values_at;
use crate::schema::{clip_term, clip_to, Analyzer, FieldHandles, IndexSchema, EMPTY_TERM, NULL_TERM};
use crate::spatial::spatial_values_at;
use crate::MappedDocument;

/// Bytes of an analyzed (`Indexing: Search`) value kept as its sort key.
pub(crate) const ANALYZED_SORT_BYTES: usize = 32;

/// The keyword term of a value (before lower-casing): what `Name = '…'` compares with.
pub(crate) fn raw_term(value: &Json) -> Cow<'_, str> {
    match value {
        Json::Null => Cow::Borrowed(NULL_TERM),
        Json::Bool(true) => Cow::Borrowed("true"),
        Json::Bool(false) => Cow::Borrowed("false"),
        Json::Number(n) => Cow::Owned(n.to_string()),
        Json::String(s) if s.is_empty() => Cow::Borrowed(EMPTY_TERM),
        Json::String(s) => Cow::Borrowed(clip_term(s)),
        Json::Array(_) | Json::Object(_) => {
            let text = value.to_string();
            Cow::Owned(clip_term(&text).to_owned())
        }
    }
}

/// Lower-cases a user value the way the default (LowerCaseKeyword) analyzer does. Marker terms stay as they are.
pub(crate) fn default_term(value: &Json) -> Cow<'_, str> {
    match value {
        Json::String(s) if !s.is_empty() => lower(raw_term(value)),
        Json::Array(_) | Json::Object(_) => lower(raw_term(value)),
        _ => raw_term(value),
    }
}

pub(crate) fn lower(s: Cow<'_, str>) -> Cow<'_, str> {
    if s.chars().any(|c| c.is_uppercase()) {
        Cow::Owned(s.to_lowercase())
    } else {
        s
    }
}

/// The numeric forms of a JSON number: (i64, f64). Doubles are truncated (saturating) for the i64 form.
pub(crate) fn numeric(value: &Json) -> Option<(i64, f64)> {
    let Json::Number(n) = value else { return None };
    if let Some(i) = n.as_i64() {
        Some((i, i as f64))
    } else if let Some(u) = n.as_u64() {
        Some((i64::MAX, u as f64))
    } else {
        let d = n.as_f64()?;
        Some((d as i64, d))
    }
}

/// Text fed to the search analyzer; nulls are skipped.
fn search_text(value: &Json) -> Option<Cow<'_, str>> {
    match value {
        Json::Null => None,
        Json::String(s) => Some(Cow::Borrowed(s.as_str())),
        _ => Some(raw_term(value)),
    }
}

/// Encodes a term so that byte order is natural order: each ASCII digit run becomes `'0'`, its significant
/// length as three digits, then the digits without leading zeros. The run starts with `'0'`, so against any
/// non-digit it compares as a digit would.
pub(crate) fn alphanumeric_key(term: &str) -> String {
    let bytes = term.as_bytes();
    let mut out = String::with_capacity(term.len() + 8);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = term[start..i].trim_start_matches('0');
            out.push('0');
            out.push_str(&format!("{:03}", digits.len().min(999)));
            out.push_str(digits);
        } else {
            let start = i;
            while i < bytes.len() && !bytes[i].is_ascii_digit() {
                i += 1;
            }
            out.push_str(&term[start..i]);
        }
    }
    out
}

/// Builds the tantivy document of one entry.
pub(crate) fn build_document(schema: &IndexSchema, entry: &MappedDocument) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_text(schema.key, &entry.key);
    for field in &schema.fields {
        if let Some(columns) = &field.spatial {
            let values = spatial_values_at(&entry.body, &field.path, columns.options);
            for (lat, lng) in values.points {
                doc.add_f64(columns.lat.field, lat);
                doc.add_f64(columns.lng.field, lng);
            }
            for shape in values.shapes {
                doc.add_bytes(columns.shape.field, shape.as_bytes());
            }
            continue;
        }
        let values = values_at(&entry.body, &field.path);
        if values.is_empty() {
            continue;
        }
        for (n, value) in values.iter().enumerate() {
            if field.analyzed_only {
                if let Json::String(text) = value {
                    if !text.is_empty() {
                        add_analyzed_only(&mut doc, field, text, n == 0);
                        continue;
                    }
                }
            }
            let term = if field.case_sensitive { raw_term(value) } else { default_term(value) };
            if n == 0 {
                doc.add_text(field.sort_string.field, &term);
                doc.add_text(field.sort_alnum.field, alphanumeric_key(&term));
            }
            doc.add_text(field.term, &term);
            // Facets of analyzed fields count the tokens of the search field instead.
            if !field.analyzed_only && !matches!(value, Json::Null) && term != EMPTY_TERM {
                doc.add_text(field.facet.field, &term);
            }
            if let Some(exact) = field.exact {
                doc.add_text(exact, raw_term(value));
            }
            if let Some(search) = field.search {
                if let Some(text) = search_text(value) {
                    doc.add_text(search, text);
                }
            }
            if let Some((l, d)) = numeric(value) {
                doc.add_i64(field.long.field, l);
                doc.add_f64(field.double.field, d);
            }
        }
    }
    doc
}

/// A string of an `Indexing: Search` field: its tokens, for search, equality and facets (counted from the
/// search field's postings, see `facets/segment.rs`). Its sort key is the start of the lower-cased value
/// ([`ANALYZED_SORT_BYTES`]), for string and alphanumeric sorts alike: sorting a full text has no better
/// meaning, and whole long texts as sort keys were a large share of the cost of indexing them.
fn add_analyzed_only(doc: &mut TantivyDocument, field: &FieldHandles, text: &str, first: bool) {
    if first {
        doc.add_text(field.sort_string.field, lower(Cow::Borrowed(clip_to(text, ANALYZED_SORT_BYTES))));
    }
    if let Some(search) = field.search {
        doc.add_text(search, text);
    }
}

thread_local! {
    /// Analyzers are costly to build (stop-word sets): one of each per indexing thread.
    static ANALYZERS: RefCell<HashMap<Analyzer, TextAnalyzer>> = RefCell::new(HashMap::new());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphanumeric_keys_sort_naturally() {
        let mut words = vec!["a10", "a2", "a", "a02b", "b1", "10", "9", "a2a", "a-1", "z"];
        words.sort_by_key(|w| alphanumeric_key(w));
        assert_eq!(words, vec!["9", "10", "a", "a-1", "a2", "a2a", "a02b", "a10", "b1", "z"]);
    }
}
