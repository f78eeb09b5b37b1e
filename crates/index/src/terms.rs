//! The terms of a field across segments with their document frequencies: what suggestions pick from and
//! what `/indexes/terms` lists.

use std::collections::BTreeMap;

use crate::schema::{EMPTY_TERM, NULL_TERM};
use crate::{DocumentIndex, IndexError};

impl DocumentIndex {
    /// Every term of `field` in order with how many entries hold it: the analyzed words of a full-text
    /// (`search`) field, else the lower-cased values; marker terms for null and the empty string are left
    /// out. Deleted entries not yet merged away may still be counted.
    pub fn field_terms(&self, field: &str) -> Result<Vec<(String, u64)>, IndexError> {
        let (_, handles) =
            self.schema.field(field).ok_or_else(|| IndexError::InvalidQuery(format!("field '{field}' is not in the index")))?;
        let searcher = self.reader.searcher();
        let mut terms: BTreeMap<String, u64> = BTreeMap::new();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(handles.search.unwrap_or(handles.term))?;
            let mut stream = inverted.terms().stream()?;
            while stream.advance() {
                let Ok(term) = std::str::from_utf8(stream.key()) else { continue };
                if term == NULL_TERM || term == EMPTY_TERM {
                    continue;
                }
                *terms.entry(term.to_owned()).or_default() += u64::from(stream.value().doc_freq);
            }
        }
        Ok(terms.into_iter().collect())
    }
}

impl DocumentIndex {
    /// The terms `text` gives in `field`: its analyzer's tokens for a full-text field, else the
    /// lower-cased value.
    pub fn analyze(&self, field: &str, text: &str) -> Result<Vec<String>, IndexError> {
        let (_, handles) =
            self.schema.field(field).ok_or_else(|| IndexError::InvalidQuery(format!("field '{field}' is not in the index")))?;
        if handles.search.is_none() {
            return Ok(vec![text.to_lowercase()]);
        }
        let mut analyzer = handles.analyzer.build();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        Ok(out)
    }

    /// How many entries hold `term` in `field` (full-text form when it has one).
    pub fn doc_freq(&self, field: &str, term: &str) -> Result<u64, IndexError> {
        let (_, handles) =
            self.schema.field(field).ok_or_else(|| IndexError::InvalidQuery(format!("field '{field}' is not in the index")))?;
        let target = handles.search.unwrap_or(handles.term);
        Ok(self.reader.searcher().doc_freq(&tantivy::Term::from_field_text(target, term))?)
    }

    /// The paths of the index's fields.
    pub fn field_paths(&self) -> Vec<String> {
        self.spec_fields().iter().map(|f| f.path.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{DocumentIndex, FieldSpec, IndexSpec, MappedDocument};

    #[test]
    fn lists_terms_with_frequencies() {
        let dir = tempfile::tempdir().unwrap();
        let spec = IndexSpec { fields: vec![FieldSpec::new("Name")] };
        let index = DocumentIndex::open_or_create(dir.path(), &spec).unwrap();
        let docs = [json!({"Name": "John"}), json!({"Name": "john"}), json!({"Name": "Jon"}), json!({"Name": null}), json!({"Name": ""})];
        let upserts: Vec<MappedDocument> =
            docs.iter().enumerate().map(|(i, b)| MappedDocument { key: format!("u/{i}"), body: b.clone() }).collect();
        index.apply(&upserts, &[], 5).unwrap();
        assert_eq!(index.field_terms("Name").unwrap(), vec![("john".to_owned(), 2), ("jon".to_owned(), 1)]);
        assert!(index.field_terms("Missing").is_err());
    }
}
