//! The tantivy schema of a document index: every tantivy field name, analyzer name and marker term lives here.
//!
//! Field names are positional (`f{i}…` for the i-th `FieldSpec`) so document paths with dots or brackets never
//! reach tantivy's own path syntax; the paths themselves are kept in the commit payload.
//!
//! | tantivy field | content (per value of spec field i)                                  | options                 |
//! |---------------|----------------------------------------------------------------------|-------------------------|
//! | `key`         | the entry key (lower-cased document id), once per entry              | raw term, fast str      |
//! | `f{i}`        | lower-cased keyword term, or `NULL_VALUE` / `EMPTY_STRING`            | raw term                |
//! | `f{i}_x`      | the same term with case kept (only when the spec asks for `exact`)    | raw term                |
//! | `f{i}_s`      | the value through the search analyzer (only with `search`)            | positions, BM25         |
//! | `f{i}_l`      | numbers as i64 (doubles truncated); sorts `as long` read the first    | indexed, fast i64       |
//! | `f{i}_d`      | numbers as f64; sorts `as double` and aggregations read the first     | fast f64 (not indexed)  |
//! | `f{i}_ss`     | first term of the entry, for string sorts (`Search` fields: the first  | fast str, single value  |
//! |               | 32 bytes of the lower-cased value, for alphanumeric sorts too); also  |                         |
//! |               | what `exists()` checks: present exactly when the field has a value     |                         |
//! | `f{i}_sa`     | first term encoded for natural (alphanumeric) order (not `Search`)    | fast str, single value  |
//! | `f{i}_fv`     | every lower-cased term (not null/empty markers), for facet counts     | fast str, multi-valued  |
//! |               | (not `Search` fields: their facets count the `_s` postings)          |                         |
//! | `f{i}_lat`    | spatial fields: each point's latitude (degrees)                        | fast f64, multi-valued  |
//! | `f{i}_lng`    | spatial fields: each point's longitude, same order as `_lat`           | fast f64, multi-valued  |
//! | `f{i}_wkt`    | spatial fields: every other shape, as WKT                              | fast bytes, multi-valued|
//!
//! Every field with terms costs each new segment a term dictionary (tantivy builds an FST per field, with a
//! ~1 MB table whatever the segment's size): keeping up, segments hold a few dozen entries, so fields that
//! only mirror another (as an `__exists` marker field once did) are left out.

use tantivy::schema::{BytesOptions, Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, StopWordFilter, TextAnalyzer, WhitespaceTokenizer};
use tantivy::Index;

use crate::{FieldSpec, IndexSpec, SpatialOptions};

pub(crate) const KEY_FIELD: &str = "key";
pub(crate) const RAW_TOKENIZER: &str = "raw";
pub(crate) const SEARCH_TOKENIZER: &str = "corvid_search";

/// Term for an explicit JSON null (RavenDB's `NULL_VALUE`). Upper case, so it never equals a lower-cased value.
pub(crate) const NULL_TERM: &str = "NULL_VALUE";
/// Term for the empty string (RavenDB's `EMPTY_STRING`).
pub(crate) const EMPTY_TERM: &str = "EMPTY_STRING";

/// Longest term (in bytes) written to a keyword field; longer values are cut at a char boundary
/// (tantivy drops over-long tokens; Lucene's limit is 32766 bytes).
pub(crate) const MAX_TERM_BYTES: usize = 16 * 1024;
/// Search tokens longer than this are dropped (Lucene's StandardTokenizer limit).
const MAX_SEARCH_TOKEN_CHARS: usize = 255;

/// Lucene's English stop-word set, used by RavenDB's standard search analyzer.
const ENGLISH_STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such",
    "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// tantivy fields of one spec field.
#[derive(Debug, Clone)]
pub(crate) struct FieldHandles {
    pub path: String,
    pub term: Field,
    pub exact: Option<Field>,
    pub search: Option<Field>,
    /// Numbers as i64 (indexed and fast) and as f64 (fast); numeric sorts read the first value of each entry.
    pub long: Column,
    pub double: Column,
    pub sort_string: Column,
    pub sort_alnum: Column,
    /// Every term of the entry, for facets.
    pub facet: Column,
    /// Spatial fields: their points and shapes.
    pub spatial: Option<SpatialColumns>,
    /// The analyzer of the full-text form (`search`).
    pub analyzer: Analyzer,
    /// Keyword terms, sort keys and facet values keep the value's case (`Indexing: Exact`).
    pub case_sensitive: bool,
    /// Strings are indexed only as tokens of the full-text form (`Indexing: Search`).
    pub analyzed_only: bool,
}

/// The columns of a spatial field.
#[derive(Debug, Clone)]
pub(crate) struct SpatialColumns {
    /// Latitude and longitude of each point (fast f64, multi-valued, same order).
    pub lat: Column,
    pub lng: Column,
    /// Every other shape as WKT (fast bytes, multi-valued).
    pub shape: Column,
    pub options: SpatialOptions,
}

/// A single-valued fast column used for sorting.
#[derive(Debug, Clone)]
pub(crate) struct Column {
    pub name: String,
    pub field: Field,
}

#[derive(Debug, Clone)]
pub(crate) struct IndexSchema {
    pub schema: Schema,
    pub key: Field,
    pub fields: Vec<FieldHandles>,
}

impl IndexSchema {
    pub fn build(spec: &IndexSpec) -> IndexSchema {
        let mut builder = Schema::builder();
        let keyword = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default().set_tokenizer(RAW_TOKENIZER).set_index_option(IndexRecordOption::Basic).set_fieldnorms(false),
        );
        let sort_string = TextOptions::default().set_fast(RAW_TOKENIZER);
        let key = builder.add_text_field(KEY_FIELD, keyword.clone().set_fast(RAW_TOKENIZER));
        let search_options = |analyzer: Analyzer| {
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(analyzer.tokenizer_name())
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            )
        };
        // Fast as well as indexed: tantivy then answers ranges from the column instead of walking every term of
        // the range in the dictionary (the cost of a range over many distinct numbers, as in range facets).
        let numeric = NumericOptions::default().set_indexed().set_fast();
        // Doubles are not indexed: every indexed field costs each segment a term dictionary, and equality
        // on a double reads the column as ranges do (`query_builder.rs`).
        let fast_numeric = NumericOptions::default().set_fast();
        let fields = spec
            .fields
            .iter()
            .enumerate()
            .map(|(i, f): (usize, &FieldSpec)| {
                let name = format!("f{i}");
                let analyzer = f.analyzer.as_deref().and_then(Analyzer::from_name).unwrap_or(Analyzer::Standard);
                let long = column(format!("{name}_l"), |n| builder.add_i64_field(n, numeric.clone()));
                let double = column(format!("{name}_d"), |n| builder.add_f64_field(n, fast_numeric.clone()));
                let handles = FieldHandles {
                    path: f.path.clone(),
                    term: builder.add_text_field(&name, keyword.clone()),
                    exact: f.exact.then(|| builder.add_text_field(&format!("{name}_x"), keyword.clone())),
                    search: (f.search || f.analyzer.is_some())
                        .then(|| builder.add_text_field(&format!("{name}_s"), search_options(analyzer))),
                    long,
                    double,
                    sort_string: column(format!("{name}_ss"), |n| builder.add_text_field(n, sort_string.clone())),
                    sort_alnum: column(format!("{name}_sa"), |n| builder.add_text_field(n, sort_string.clone())),
                    facet: column(format!("{name}_fv"), |n| builder.add_text_field(n, sort_string.clone())),
                    analyzer,
                    case_sensitive: f.case_sensitive,
                    analyzed_only: f.analyzed_only && (f.search || f.analyzer.is_some()),
                    spatial: f.spatial.then(|| SpatialColumns {
                        lat: column(format!("{name}_lat"), |n| builder.add_f64_field(n, fast_numeric.clone())),
                        lng: column(format!("{name}_lng"), |n| builder.add_f64_field(n, fast_numeric.clone())),
                        shape: column(format!("{name}_wkt"), |n| builder.add_bytes_field(n, BytesOptions::default().set_fast())),
                        options: f.spatial_options.unwrap_or_default(),
                    }),
                };
                handles
            })
            .collect();
        IndexSchema { schema: builder.build(), key, fields }
    }

    pub fn field(&self, path: &str) -> Option<(usize, &FieldHandles)> {
        self.fields.iter().enumerate().find(|(_, f)| f.path == path)
    }
}

fn column(name: String, add: impl FnOnce(&str) -> Field) -> Column {
    let field = add(&name);
    Column { name, field }
}

/// The analyzers a field's full-text form can use (RavenDB's, after Lucene's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Analyzer {
    /// Words (letters and digits), lower-cased, English stop words dropped. Also `StopAnalyzer`.
    Standard,
    /// Words (letters and digits), lower-cased.
    Simple,
    /// Split on whitespace only, case kept.
    Whitespace,
    /// Split on whitespace only, lower-cased.
    LowerCaseWhitespace,
    /// The whole value as one term, case kept.
    Keyword,
    /// The whole value as one term, lower-cased (RavenDB's default for non-search fields).
    LowerCaseKeyword,
}

impl Analyzer {
    /// From a RavenDB analyzer name (short or with its .NET namespace); None when unknown.
    pub fn from_name(name: &str) -> Option<Analyzer> {
        let short = name.rsplit('.').next().unwrap_or(name).split(',').next().unwrap_or(name).trim();
        Some(match short.to_ascii_lowercase().as_str() {
            "standardanalyzer" | "stopanalyzer" | "ravenstandardanalyzer" => Analyzer::Standard,
            "simpleanalyzer" => Analyzer::Simple,
            "whitespaceanalyzer" => Analyzer::Whitespace,
            "lowercasewhitespaceanalyzer" => Analyzer::LowerCaseWhitespace,
            "keywordanalyzer" => Analyzer::Keyword,
            "lowercasekeywordanalyzer" => Analyzer::LowerCaseKeyword,
            _ => return None,
        })
    }

    /// The tantivy tokenizer name this analyzer is registered under.
    pub(crate) fn tokenizer_name(self) -> &'static str {
        match self {
            Analyzer::Standard => SEARCH_TOKENIZER,
            Analyzer::Simple => "corvid_simple",
            Analyzer::Whitespace => "corvid_whitespace",
            Analyzer::LowerCaseWhitespace => "corvid_lower_whitespace",
            Analyzer::Keyword => "corvid_keyword",
            Analyzer::LowerCaseKeyword => "corvid_lower_keyword",
        }
    }

    pub(crate) fn build(self) -> TextAnalyzer {
        let long = RemoveLongFilter::limit(MAX_SEARCH_TOKEN_CHARS);
        match self {
            Analyzer::Standard => TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(long)
                .filter(LowerCaser)
                .filter(StopWordFilter::remove(ENGLISH_STOP_WORDS.iter().map(|w| w.to_string())))
                .build(),
            Analyzer::Simple => TextAnalyzer::builder(SimpleTokenizer::default()).filter(long).filter(LowerCaser).build(),
            Analyzer::Whitespace => TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(long).build(),
            Analyzer::LowerCaseWhitespace => TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(long).filter(LowerCaser).build(),
            Analyzer::Keyword => TextAnalyzer::builder(RawTokenizer::default()).build(),
            Analyzer::LowerCaseKeyword => TextAnalyzer::builder(RawTokenizer::default()).filter(LowerCaser).build(),
        }
    }
}

pub(crate) fn register_analyzers(index: &Index) {
    for analyzer in [
        Analyzer::Standard,
        Analyzer::Simple,
        Analyzer::Whitespace,
        Analyzer::LowerCaseWhitespace,
        Analyzer::Keyword,
        Analyzer::LowerCaseKeyword,
    ] {
        index.tokenizers().register(analyzer.tokenizer_name(), analyzer.build());
    }
}

/// Cuts `s` to at most [`MAX_TERM_BYTES`] bytes at a char boundary.
pub(crate) fn clip_term(s: &str) -> &str {
    clip_to(s, MAX_TERM_BYTES)
}

/// Cuts `s` to at most `max` bytes at a char boundary.
pub(crate) fn clip_to(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
