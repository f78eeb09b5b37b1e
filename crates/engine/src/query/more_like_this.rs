//! `moreLikeThis`: the most telling words of a source document (term frequency x inverse document frequency
//! in the index), any of which a result must contain. Planned from the query; the words are picked when it
//! runs, from the document in the query's snapshot and the index's statistics.

use std::collections::BTreeMap;

use corvid_index::{DocumentIndex, Filter};
use corvid_storage::ReadTxn;
use serde_json::Value as Json;

use crate::EngineError;

/// A field and the words picked from it, each with its weight.
type FieldTerms = (String, Vec<(String, f32)>);

/// Where the words come from.
#[derive(Debug, Clone)]
pub(crate) enum MoreLikeThisSource {
    /// `moreLikeThis(id() = 'x')`: a stored document, itself left out of the results.
    Document { id: String },
    /// `moreLikeThis($json)`: a document given with the query.
    Given(Json),
}

/// RavenDB's `MoreLikeThisOptions`.
#[derive(Debug, Clone)]
pub(crate) struct MoreLikeThisOptions {
    pub min_term_frequency: f64,
    pub min_doc_frequency: f64,
    pub max_doc_frequency: f64,
    pub min_word_length: usize,
    /// 0: no maximum.
    pub max_word_length: usize,
    pub max_query_terms: usize,
    /// Weigh each word by its score (relative to the best one) times `boost_factor`.
    pub boost: bool,
    pub boost_factor: f32,
    /// The fields to take words from; None: every field of the index.
    pub fields: Option<Vec<String>>,
}

impl MoreLikeThisOptions {
    /// The options object (number keys case-insensitive, as clients send either case); anything else means
    /// the defaults.
    pub fn from_json(options: &Json) -> MoreLikeThisOptions {
        let number = |key: &str, default: f64| -> f64 {
            options
                .as_object()
                .and_then(|o| o.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
                .and_then(|(_, v)| v.as_f64())
                .unwrap_or(default)
        };
        MoreLikeThisOptions {
            min_term_frequency: number("MinimumTermFrequency", 2.0),
            min_doc_frequency: number("MinimumDocumentFrequency", 5.0),
            max_doc_frequency: number("MaximumDocumentFrequency", f64::MAX),
            min_word_length: number("MinimumWordLength", 0.0) as usize,
            max_word_length: number("MaximumWordLength", 0.0) as usize,
            max_query_terms: number("MaximumQueryTerms", 25.0) as usize,
            boost: options.get("Boost").and_then(Json::as_bool).unwrap_or(false),
            boost_factor: number("BoostFactor", 1.0) as f32,
            fields: options
                .get("Fields")
                .and_then(Json::as_array)
                .map(|list| list.iter().filter_map(Json::as_str).map(str::to_owned).collect()),
        }
    }
}

/// One `moreLikeThis(...)` of a query.
#[derive(Debug, Clone)]
pub(crate) struct MoreLikeThisPlan {
    pub source: MoreLikeThisSource,
    pub options: MoreLikeThisOptions,
}

impl MoreLikeThisPlan {
    /// The filter this stands for: any of the best words of the source document (read from `snapshot`),
    /// without the source document itself.
    pub fn filter(&self, snapshot: &ReadTxn<'_>, index: &DocumentIndex) -> Result<Filter, EngineError> {
        let (source_key, document) = match &self.source {
            MoreLikeThisSource::Document { id } => {
                let key = corvid_types::id_key(id);
                let document = match snapshot.document(&key)? {
                    Some(r) => corvid_types::json::parse(&r.body).map_err(|e| EngineError::Internal(e.to_string()))?,
                    None => Json::Null,
                };
                (Some(key), document)
            }
            MoreLikeThisSource::Given(document) => (None, document.clone()),
        };
        let any =
            Filter::Or(self.best_terms(&document, index)?.into_iter().map(|(field, terms)| Filter::AnyTerm { field, terms }).collect());
        Ok(match source_key {
            Some(key) => Filter::And(vec![any, Filter::Not(Box::new(Filter::Key(key)))]),
            None => any,
        })
    }

    /// The best words of `document` per field, each with its weight.
    fn best_terms(&self, document: &Json, index: &DocumentIndex) -> Result<Vec<FieldTerms>, EngineError> {
        let o = &self.options;
        let fields = match &o.fields {
            Some(fields) => fields.clone(),
            None => index.field_paths(),
        };
        let total = index.entries_count() as f64;
        let mut scored: Vec<(f64, String, String)> = Vec::new();
        for field in &fields {
            let mut frequencies: BTreeMap<String, usize> = BTreeMap::new();
            for text in super::highlight::texts(&super::projection::value_at(document, field)) {
                for term in index.analyze(field, text)? {
                    let len = term.chars().count();
                    if len < o.min_word_length || (o.max_word_length > 0 && len > o.max_word_length) {
                        continue;
                    }
                    *frequencies.entry(term).or_default() += 1;
                }
            }
            for (term, tf) in frequencies {
                if (tf as f64) < o.min_term_frequency {
                    continue;
                }
                let df = index.doc_freq(field, &term)? as f64;
                if df < o.min_doc_frequency || df > o.max_doc_frequency || df == 0.0 {
                    continue;
                }
                let idf = (total / (df + 1.0)).ln() + 1.0;
                scored.push((tf as f64 * idf, field.clone(), term));
            }
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
        scored.truncate(o.max_query_terms);
        let top = scored.first().map(|s| s.0).unwrap_or(1.0);
        let mut by_field: Vec<FieldTerms> = Vec::new();
        for (score, field, term) in scored {
            let weight = if o.boost { (score / top) as f32 * o.boost_factor } else { 1.0 };
            match by_field.iter_mut().find(|(f, _)| *f == field) {
                Some((_, terms)) => terms.push((term, weight)),
                None => by_field.push((field, vec![(term, weight)])),
            }
        }
        Ok(by_field)
    }
}
