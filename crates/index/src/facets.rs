//! Facets: term counts and range counts over the entries a filter matches, with numeric aggregations.
//!
//! All the facets of a query are counted in one pass over its matches: each matching entry adds one to the
//! slot of every term it has in the multi-valued facet column (`f{i}_fv`, a dense array per segment indexed
//! by term ordinal), and tests its numeric column values against every range. Counting every term and every
//! range thus costs about what counting the matches costs; nothing runs a query per term or per range. Only
//! ranges that are not comparisons on numbers (string ranges, `exists`, `or`) run a query of their own.
//!
//! Fields indexed for full-text search (`Indexing: Search`) have no facet column: their facet values are the
//! tokens of the search field. The pass marks the matches in a bitset, and each segment then walks the
//! postings of every token once, counting the marked entries: the tokens of long texts would make a facet
//! column as costly to build as the rest of the index.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::OnceLock;

use std::sync::Arc;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};

use tantivy::index::InvertedIndexReader;
use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{BitSet, DocId, DocSet, Executor, Score, Searcher, SegmentOrdinal, SegmentReader, TERMINATED};

use crate::query_builder::QueryBuilder;
use crate::{DocumentIndex, Filter, IndexError, Value};

/// Numeric aggregates of one field over a group of entries (its first numeric value per entry).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Aggregate {
    pub field: String,
    pub sum: f64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Entries that had a number in the field.
    pub count: u64,
}

impl Aggregate {
    fn add(&mut self, value: f64) {
        self.sum += value;
        self.min = Some(self.min.map_or(value, |m| m.min(value)));
        self.max = Some(self.max.map_or(value, |m| m.max(value)));
        self.count += 1;
    }

    pub fn average(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// One term of a term facet.
#[derive(Debug, Clone, PartialEq)]
pub struct TermCount {
    pub term: String,
    pub count: u64,
    pub aggregates: Vec<Aggregate>,
}

/// One facet of a query.
#[derive(Debug, Clone, Copy)]
pub enum FacetRequest<'a> {
    /// Every term of `field`, with aggregates of `aggregate_fields` per term.
    Terms { field: &'a str, aggregate_fields: &'a [String] },
    /// How many entries fall in each range (a document counts in every range it matches); `Filter::All`
    /// stands for every match (`@AllResults`).
    Ranges { ranges: &'a [Filter], aggregate_fields: &'a [String] },
}

/// The counts of one [`FacetRequest`], in the same order.
#[derive(Debug, Clone, PartialEq)]
pub enum FacetCounts {
    /// Unordered; the caller sorts and pages.
    Terms(Vec<TermCount>),
    /// (count, aggregates) per range, in the order of the request's ranges.
    Ranges(Vec<(u64, Vec<Aggregate>)>),
}

/// Every facet of a query, and how many entries the query matched.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetAnswer {
    pub total: u64,
    pub facets: Vec<FacetCounts>,
}

/// A numeric comparison decided from a column: does any of the entry's values lie in `low..=high` (closed
/// bounds, made from the query's open or closed ones once, when the facet is compiled).
#[derive(Debug, Clone)]
enum Interval {
    Long { column: String, low: i64, high: i64 },
    Double { column: String, low: f64, high: f64 },
}

/// How one range of a range facet is decided.
#[derive(Debug, Clone)]
enum RangeTest {
    /// Every match.
    Everything,
    /// Entries with a value in each interval (a comparison, `between`, or an `and` of them).
    Intervals(Vec<Interval>),
    /// Anything else: counted by a query of its own after the pass.
    Query,
}

#[derive(Debug, Clone)]
enum CompiledFacet {
    Terms {
        column: String,
        aggregate_columns: Vec<Option<String>>,
        fields: Vec<String>,
    },
    /// Terms of an analyzed field: the tokens of its search field.
    Tokens {
        field: Field,
        aggregate_columns: Vec<Option<String>>,
        fields: Vec<String>,
    },
    Ranges {
        tests: Vec<RangeTest>,
        aggregate_columns: Vec<Option<String>>,
        fields: Vec<String>,
    },
}

impl CompiledFacet {
    /// The fields aggregated per term.
    fn aggregated_fields(&self) -> &[String] {
        match self {
            CompiledFacet::Terms { fields, .. } | CompiledFacet::Tokens { fields, .. } | CompiledFacet::Ranges { fields, .. } => fields,
        }
    }
}

fn empty_aggregates(fields: &[String]) -> Vec<Aggregate> {
    fields.iter().map(|f| Aggregate { field: f.clone(), ..Default::default() }).collect()
}

fn merge_aggregates(totals: &mut [Aggregate], parts: &[Aggregate]) {
    for (total, part) in totals.iter_mut().zip(parts) {
        total.sum += part.sum;
        total.count += part.count;
        total.min = match (total.min, part.min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        total.max = match (total.max, part.max) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

fn within<T: PartialOrd>(value: &T, low: &T, high: &T) -> bool {
    value >= low && value <= high
}

/// An interval opened on one segment; `None` columns (no entry of the segment has a number there) match nothing.
enum SegmentInterval {
    Long(Option<Column<i64>>, i64, i64),
    Double(Option<Column<f64>>, f64, f64),
}

impl SegmentInterval {
    fn matches(&self, doc: DocId) -> bool {
        match self {
            SegmentInterval::Long(Some(column), low, high) => column.values_for_doc(doc).any(|v| within(&v, low, high)),
            SegmentInterval::Double(Some(column), low, high) => column.values_for_doc(doc).any(|v| within(&v, low, high)),
            _ => false,
        }
    }
}

enum SegmentRange {
    Everything,
    Intervals(Vec<SegmentInterval>),
    Query,
}

enum SegmentFacet {
    /// Plain counts: one slot per term ordinal of the segment.
    Terms { column: Option<StrColumn>, counts: Vec<u32> },
    /// Counts with aggregates, per term ordinal seen.
    AggregatedTerms {
        column: Option<StrColumn>,
        numbers: Vec<Option<Column<f64>>>,
        per_ord: HashMap<u64, (u64, Vec<Aggregate>)>,
        fields: Vec<String>,
    },
    Ranges {
        ranges: Vec<SegmentRange>,
        numbers: Vec<Option<Column<f64>>>,
        totals: Vec<(u64, Vec<Aggregate>)>,
        /// Set when every range compares the same column: it is read once per block for all of them.
        shared: Option<SharedColumn>,
    },
    /// Tokens of an analyzed field: the matches, counted against each token's postings at harvest.
    Tokens { postings: Arc<InvertedIndexReader>, matched: BitSet, numbers: Vec<Option<Column<f64>>>, fields: Vec<String> },
}

/// Closed bounds per range (`None`: every match; an empty range has `low > high`) over the one column all
/// ranges of a facet compare.
enum SharedColumn {
    Long(Column<i64>, Vec<Option<(i64, i64)>>),
    Double(Column<f64>, Vec<Option<(f64, f64)>>),
}

/// Numbers whose open bounds can be turned into closed ones, so a range test is two comparisons without
/// branches.
trait ClosedBounds: Copy + PartialOrd {
    const EMPTY: (Self, Self);
    fn closed(lower: Bound<Self>, upper: Bound<Self>) -> (Self, Self);
}

impl ClosedBounds for i64 {
    const EMPTY: (i64, i64) = (1, 0);
    fn closed(lower: Bound<i64>, upper: Bound<i64>) -> (i64, i64) {
        let low = match lower {
            Bound::Unbounded => Some(i64::MIN),
            Bound::Included(v) => Some(v),
            Bound::Excluded(v) => v.checked_add(1),
        };
        let high = match upper {
            Bound::Unbounded => Some(i64::MAX),
            Bound::Included(v) => Some(v),
            Bound::Excluded(v) => v.checked_sub(1),
        };
        low.zip(high).unwrap_or(Self::EMPTY)
    }
}

impl ClosedBounds for f64 {
    const EMPTY: (f64, f64) = (1.0, 0.0);
    fn closed(lower: Bound<f64>, upper: Bound<f64>) -> (f64, f64) {
        let low = match lower {
            Bound::Unbounded => Some(f64::NEG_INFINITY),
            Bound::Included(v) => Some(v),
            Bound::Excluded(v) => (v != f64::INFINITY).then(|| v.next_up()),
        };
        let high = match upper {
            Bound::Unbounded => Some(f64::INFINITY),
            Bound::Included(v) => Some(v),
            Bound::Excluded(v) => (v != f64::NEG_INFINITY).then(|| v.next_down()),
        };
        low.zip(high).unwrap_or(Self::EMPTY)
    }
}

impl SharedColumn {
    /// Opens the one column every range of a facet compares, if there is one.
    fn of(tests: &[RangeTest], reader: &SegmentReader) -> Option<SharedColumn> {
        let mut column: Option<&Interval> = None;
        for test in tests {
            match test {
                RangeTest::Everything => {}
                RangeTest::Intervals(intervals) => match (intervals.as_slice(), column) {
                    ([interval], None) => column = Some(interval),
                    ([interval], Some(first)) if interval.same_column(first) => {}
                    _ => return None,
                },
                RangeTest::Query => return None,
            }
        }
        fn interval_of(test: &RangeTest) -> Option<&Interval> {
            match test {
                RangeTest::Intervals(intervals) => intervals.first(),
                _ => None,
            }
        }
        match column? {
            Interval::Long { column, .. } => {
                let bounds = tests
                    .iter()
                    .map(|t| match interval_of(t) {
                        Some(Interval::Long { low, high, .. }) => Some((*low, *high)),
                        _ => None,
                    })
                    .collect();
                Some(SharedColumn::Long(reader.fast_fields().i64(column).ok()?, bounds))
            }
            Interval::Double { column, .. } => {
                let bounds = tests
                    .iter()
                    .map(|t| match interval_of(t) {
                        Some(Interval::Double { low, high, .. }) => Some((*low, *high)),
                        _ => None,
                    })
                    .collect();
                Some(SharedColumn::Double(reader.fast_fields().f64(column).ok()?, bounds))
            }
        }
    }
}

impl Interval {
    fn same_column(&self, other: &Interval) -> bool {
        match (self, other) {
            (Interval::Long { column: a, .. }, Interval::Long { column: b, .. }) => a == b,
            (Interval::Double { column: a, .. }, Interval::Double { column: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// Counts a block of matches into ranges over one column: each value is read once and tested against every
/// range. A document with several values counts once per range (`last` holds the last document counted).
#[allow(clippy::too_many_arguments)]
fn count_shared<T>(
    column: &Column<T>,
    bounds: &[Option<(T, T)>],
    docs: &[DocId],
    value_docs: &mut Vec<DocId>,
    rows: &mut Vec<u32>,
    values: &mut Vec<T>,
    last: &mut Vec<DocId>,
    totals: &mut [(u64, Vec<Aggregate>)],
) where
    T: Copy + Default + PartialOrd + Send + Sync + std::fmt::Debug + 'static,
{
    block_values(column, docs, value_docs, rows, values);
    let single_valued = !matches!(column.get_cardinality(), tantivy::columnar::Cardinality::Multivalued);
    last.clear();
    last.resize(bounds.len(), DocId::MAX);
    for (range, (bound, total)) in bounds.iter().zip(totals.iter_mut()).enumerate() {
        match bound {
            None => total.0 += docs.len() as u64,
            Some((low, high)) if single_valued => {
                total.0 += values.iter().map(|v| u64::from(within(v, low, high))).sum::<u64>();
            }
            Some((low, high)) => {
                for (doc, value) in value_docs.iter().zip(values.iter()) {
                    if last[range] != *doc && within(value, low, high) {
                        total.0 += 1;
                        last[range] = *doc;
                    }
                }
            }
        }
    }
}

/// One pass over a segment's matches feeding every facet.
struct SegmentFacets {
    total: u64,
    facets: Vec<SegmentFacet>,
    scratch: Scratch,
}

/// Buffers reused block after block: column reads are done for a block of matches at a time.
#[derive(Default)]
struct Scratch {
    docs: Vec<DocId>,
    rows: Vec<u32>,
    ords: Vec<u64>,
    longs: Vec<i64>,
    doubles: Vec<f64>,
    hits: Vec<bool>,
    inside: Vec<bool>,
    last: Vec<DocId>,
}

/// Reads the values of `docs` in `column` into `values`, with the doc of each value in `scratch.docs` (a doc
/// appears once per value, in doc order).
fn block_values<T>(column: &Column<T>, docs: &[DocId], scratch_docs: &mut Vec<DocId>, rows: &mut Vec<u32>, values: &mut Vec<T>)
where
    T: Copy + Default + PartialOrd + Send + Sync + std::fmt::Debug + 'static,
{
    scratch_docs.clear();
    rows.clear();
    column.row_ids_for_docs(docs, scratch_docs, rows);
    values.clear();
    values.resize(rows.len(), T::default());
    column.values.get_vals(rows, values);
}

/// Marks in `inside` the positions (in `docs`) of the docs with a value between the bounds.
fn mark_inside<T: PartialOrd>(docs: &[DocId], value_docs: &[DocId], values: &[T], low: &T, high: &T, inside: &mut [bool]) {
    let mut at = 0;
    for (doc, value) in value_docs.iter().zip(values) {
        while docs[at] != *doc {
            at += 1;
        }
        if within(value, low, high) {
            inside[at] = true;
        }
    }
}

/// Per segment: the match count, and per facet either term counts by ordinal (with the column to name them)
/// or range totals.
type SegmentFruit = (u64, Vec<SegmentFacetFruit>);

enum SegmentFacetFruit {
    Terms(Option<StrColumn>, Vec<(u64, u64, Vec<Aggregate>)>),
    /// (token, count, aggregates) of every token with matches.
    Tokens(std::io::Result<Vec<(String, u64, Vec<Aggregate>)>>),
    Ranges(Vec<(u64, Vec<Aggregate>)>),
}

/// Adds each aggregated field's first number of `doc` to `aggregates`.
fn aggregate_doc(columns: &[Option<Column<f64>>], doc: DocId, aggregates: &mut [Aggregate]) {
    for (column, aggregate) in columns.iter().zip(aggregates.iter_mut()) {
        if let Some(value) = column.as_ref().and_then(|c| c.first(doc)) {
            aggregate.add(value);
        }
    }
}

fn f64_columns(reader: &SegmentReader, names: &[Option<String>]) -> Vec<Option<Column<f64>>> {
    names.iter().map(|n| n.as_ref().and_then(|n| reader.fast_fields().f64(n).ok())).collect()
}

/// Adds one matching document to one facet.
fn collect_one(facet: &mut SegmentFacet, doc: DocId) {
    match facet {
        SegmentFacet::Terms { column: Some(column), counts } => {
            for ord in column.term_ords(doc) {
                counts[ord as usize] += 1;
            }
        }
        SegmentFacet::AggregatedTerms { column: Some(column), numbers, per_ord, fields } => {
            for ord in column.term_ords(doc) {
                let slot = per_ord.entry(ord).or_insert_with(|| (0, empty_aggregates(fields)));
                slot.0 += 1;
                aggregate_doc(numbers, doc, &mut slot.1);
            }
        }
        SegmentFacet::Ranges { ranges, numbers, totals, .. } => {
            for (range, total) in ranges.iter().zip(totals.iter_mut()) {
                let hit = match range {
                    SegmentRange::Everything => true,
                    SegmentRange::Intervals(intervals) => intervals.iter().all(|i| i.matches(doc)),
                    SegmentRange::Query => false,
                };
                if hit {
                    total.0 += 1;
                    aggregate_doc(numbers, doc, &mut total.1);
                }
            }
        }
        SegmentFacet::Tokens { matched, .. } => {
            matched.insert(doc);
        }
        SegmentFacet::Terms { column: None, .. } | SegmentFacet::AggregatedTerms { column: None, .. } => {}
    }
}

/// Counts the marked entries in the postings of every token of `field` in one segment.
fn count_tokens(
    postings: &InvertedIndexReader,
    matched: &BitSet,
    numbers: &[Option<Column<f64>>],
    fields: &[String],
) -> std::io::Result<Vec<(String, u64, Vec<Aggregate>)>> {
    let mut out = Vec::new();
    if matched.len() == 0 {
        return Ok(out);
    }
    let mut terms = postings.terms().stream()?;
    while terms.advance() {
        let mut docs = postings.read_postings_from_terminfo(terms.value(), IndexRecordOption::Basic)?;
        let mut count = 0u64;
        let mut aggregates = empty_aggregates(fields);
        let mut doc = docs.doc();
        while doc != TERMINATED {
            if matched.contains(doc) {
                count += 1;
                aggregate_doc(numbers, doc, &mut aggregates);
            }
            doc = docs.advance();
        }
        if count > 0 {
            let token = String::from_utf8_lossy(terms.key()).into_owned();
            out.push((token, count, aggregates));
        }
    }
    Ok(out)
}

impl SegmentCollector for SegmentFacets {
    type Fruit = SegmentFruit;

    fn collect(&mut self, doc: DocId, _: Score) {
        self.total += 1;
        for facet in &mut self.facets {
            collect_one(facet, doc);
        }
    }

    /// The common facets (plain term counts, ranges without aggregates) read their columns a block at a time;
    /// the rest go document by document.
    fn collect_block(&mut self, docs: &[DocId]) {
        self.total += docs.len() as u64;
        let scratch = &mut self.scratch;
        for facet in &mut self.facets {
            match facet {
                SegmentFacet::Terms { column: Some(column), counts } => {
                    block_values(column.ords(), docs, &mut scratch.docs, &mut scratch.rows, &mut scratch.ords);
                    for &ord in &scratch.ords {
                        counts[ord as usize] += 1;
                    }
                }
                SegmentFacet::Ranges { numbers, totals, shared: Some(shared), .. } if numbers.is_empty() => match shared {
                    SharedColumn::Long(column, bounds) => count_shared(
                        column,
                        bounds,
                        docs,
                        &mut scratch.docs,
                        &mut scratch.rows,
                        &mut scratch.longs,
                        &mut scratch.last,
                        totals,
                    ),
                    SharedColumn::Double(column, bounds) => count_shared(
                        column,
                        bounds,
                        docs,
                        &mut scratch.docs,
                        &mut scratch.rows,
                        &mut scratch.doubles,
                        &mut scratch.last,
                        totals,
                    ),
                },
                SegmentFacet::Ranges { ranges, numbers, totals, .. } if numbers.is_empty() => {
                    for (range, total) in ranges.iter().zip(totals.iter_mut()) {
                        match range {
                            SegmentRange::Everything => total.0 += docs.len() as u64,
                            SegmentRange::Query => {}
                            SegmentRange::Intervals(intervals) => {
                                scratch.hits.clear();
                                scratch.hits.resize(docs.len(), true);
                                for interval in intervals {
                                    scratch.inside.clear();
                                    scratch.inside.resize(docs.len(), false);
                                    match interval {
                                        SegmentInterval::Long(Some(column), low, high) => {
                                            block_values(column, docs, &mut scratch.docs, &mut scratch.rows, &mut scratch.longs);
                                            mark_inside(docs, &scratch.docs, &scratch.longs, low, high, &mut scratch.inside);
                                        }
                                        SegmentInterval::Double(Some(column), low, high) => {
                                            block_values(column, docs, &mut scratch.docs, &mut scratch.rows, &mut scratch.doubles);
                                            mark_inside(docs, &scratch.docs, &scratch.doubles, low, high, &mut scratch.inside);
                                        }
                                        _ => {}
                                    }
                                    for (hit, inside) in scratch.hits.iter_mut().zip(&scratch.inside) {
                                        *hit &= *inside;
                                    }
                                }
                                total.0 += scratch.hits.iter().filter(|h| **h).count() as u64;
                            }
                        }
                    }
                }
                other => {
                    for &doc in docs {
                        collect_one(other, doc);
                    }
                }
            }
        }
    }

    fn harvest(self) -> SegmentFruit {
        let facets = self
            .facets
            .into_iter()
            .map(|facet| match facet {
                SegmentFacet::Terms { column, counts } => SegmentFacetFruit::Terms(
                    column,
                    counts.into_iter().enumerate().filter(|(_, n)| *n > 0).map(|(ord, n)| (ord as u64, u64::from(n), Vec::new())).collect(),
                ),
                SegmentFacet::AggregatedTerms { column, per_ord, .. } => {
                    SegmentFacetFruit::Terms(column, per_ord.into_iter().map(|(ord, (n, aggregates))| (ord, n, aggregates)).collect())
                }
                SegmentFacet::Ranges { totals, .. } => SegmentFacetFruit::Ranges(totals),
                SegmentFacet::Tokens { postings, matched, numbers, fields } => {
                    SegmentFacetFruit::Tokens(count_tokens(&postings, &matched, &numbers, &fields))
                }
            })
            .collect();
        (self.total, facets)
    }
}

struct FacetCollector {
    facets: Vec<CompiledFacet>,
}

impl Collector for FacetCollector {
    type Fruit = (u64, Vec<FacetCounts>);
    type Child = SegmentFacets;

    fn for_segment(&self, _: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentFacets> {
        let mut facets = Vec::with_capacity(self.facets.len());
        for facet in &self.facets {
            facets.push(match facet {
                CompiledFacet::Terms { column, aggregate_columns, fields } => {
                    let column = reader.fast_fields().str(column)?;
                    if fields.is_empty() {
                        let terms = column.as_ref().map_or(0, |c| c.dictionary().num_terms());
                        SegmentFacet::Terms { column, counts: vec![0u32; terms] }
                    } else {
                        let numbers = f64_columns(reader, aggregate_columns);
                        SegmentFacet::AggregatedTerms { column, numbers, per_ord: HashMap::new(), fields: fields.clone() }
                    }
                }
                CompiledFacet::Tokens { field, aggregate_columns, fields } => SegmentFacet::Tokens {
                    postings: reader.inverted_index(*field)?,
                    matched: BitSet::with_max_value(reader.max_doc()),
                    numbers: f64_columns(reader, aggregate_columns),
                    fields: fields.clone(),
                },
                CompiledFacet::Ranges { tests, aggregate_columns, fields } => {
                    let ranges: Vec<SegmentRange> = tests
                        .iter()
                        .map(|test| match test {
                            RangeTest::Everything => SegmentRange::Everything,
                            RangeTest::Query => SegmentRange::Query,
                            RangeTest::Intervals(intervals) => SegmentRange::Intervals(
                                intervals
                                    .iter()
                                    .map(|interval| match interval {
                                        Interval::Long { column, low, high } => {
                                            SegmentInterval::Long(reader.fast_fields().i64(column).ok(), *low, *high)
                                        }
                                        Interval::Double { column, low, high } => {
                                            SegmentInterval::Double(reader.fast_fields().f64(column).ok(), *low, *high)
                                        }
                                    })
                                    .collect(),
                            ),
                        })
                        .collect();
                    let totals = tests.iter().map(|_| (0, empty_aggregates(fields))).collect();
                    let shared = SharedColumn::of(tests, reader);
                    SegmentFacet::Ranges { ranges, numbers: f64_columns(reader, aggregate_columns), totals, shared }
                }
            });
        }
        Ok(SegmentFacets { total: 0, facets, scratch: Scratch::default() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, segments: Vec<SegmentFruit>) -> tantivy::Result<Self::Fruit> {
        let mut total = 0;
        let mut by_term: Vec<HashMap<String, TermCount>> = self.facets.iter().map(|_| HashMap::new()).collect();
        let mut range_totals: Vec<Vec<(u64, Vec<Aggregate>)>> = self
            .facets
            .iter()
            .map(|facet| match facet {
                CompiledFacet::Ranges { tests, fields, .. } => tests.iter().map(|_| (0, empty_aggregates(fields))).collect(),
                CompiledFacet::Terms { .. } | CompiledFacet::Tokens { .. } => Vec::new(),
            })
            .collect();
        let mut text = String::new();
        for (count, facets) in segments {
            total += count;
            for (i, facet) in facets.into_iter().enumerate() {
                match facet {
                    SegmentFacetFruit::Tokens(tokens) => {
                        for (token, n, aggregates) in tokens? {
                            let entry = by_term[i].entry(token.clone()).or_insert_with(|| TermCount {
                                term: token,
                                count: 0,
                                aggregates: empty_aggregates(self.facets[i].aggregated_fields()),
                            });
                            entry.count += n;
                            merge_aggregates(&mut entry.aggregates, &aggregates);
                        }
                    }
                    SegmentFacetFruit::Terms(Some(column), counts) => {
                        let fields = self.facets[i].aggregated_fields();
                        for (ord, n, aggregates) in counts {
                            text.clear();
                            if !column.ord_to_str(ord, &mut text)? {
                                continue;
                            }
                            let entry = by_term[i].entry(text.clone()).or_insert_with(|| TermCount {
                                term: text.clone(),
                                count: 0,
                                aggregates: empty_aggregates(fields),
                            });
                            entry.count += n;
                            merge_aggregates(&mut entry.aggregates, &aggregates);
                        }
                    }
                    SegmentFacetFruit::Terms(None, _) => {}
                    SegmentFacetFruit::Ranges(parts) => {
                        for (slot, (n, aggregates)) in range_totals[i].iter_mut().zip(parts) {
                            slot.0 += n;
                            merge_aggregates(&mut slot.1, &aggregates);
                        }
                    }
                }
            }
        }
        let facets = self
            .facets
            .iter()
            .zip(by_term.into_iter().zip(range_totals))
            .map(|(facet, (terms, ranges))| match facet {
                CompiledFacet::Terms { .. } | CompiledFacet::Tokens { .. } => FacetCounts::Terms(terms.into_values().collect()),
                CompiledFacet::Ranges { .. } => FacetCounts::Ranges(ranges),
            })
            .collect();
        Ok((total, facets))
    }
}

impl DocumentIndex {
    fn column_name(&self, path: &str, pick: impl Fn(&crate::schema::FieldHandles) -> &crate::schema::Column) -> Result<String, IndexError> {
        let (_, handles) =
            self.schema.field(path).ok_or_else(|| IndexError::InvalidQuery(format!("field '{path}' is not in the index")))?;
        Ok(pick(handles).name.clone())
    }

    /// The search field of an `Indexing: Search` field, whose tokens are its facet values.
    fn analyzed_search_field(&self, path: &str) -> Option<Field> {
        let (_, handles) = self.schema.field(path)?;
        handles.search.filter(|_| handles.analyzed_only)
    }

    /// Numeric columns of aggregated fields; a field the index does not have aggregates nothing (as in
    /// RavenDB, where it has no values).
    fn aggregate_column_names(&self, fields: &[String]) -> Vec<Option<String>> {
        fields.iter().map(|f| self.column_name(f, |h| &h.double).ok()).collect()
    }

    /// The comparisons of `range` as column intervals, deciding numbers exactly as the range query would (the
    /// long column unless a bound is a double); `None` when the range is something else.
    fn intervals(&self, range: &Filter) -> Option<Vec<Interval>> {
        match range {
            Filter::Range { field, lower, upper } => {
                let (_, handles) = self.schema.field(field)?;
                let bounds: Vec<&Value> = lower.iter().chain(upper.iter()).map(|(v, _)| v).collect();
                if bounds.is_empty() || !bounds.iter().all(|v| matches!(v, Value::Long(_) | Value::Double(_))) {
                    return None;
                }
                if bounds.iter().any(|v| matches!(v, Value::Double(_))) {
                    let as_f64 = |b: &Option<(Value, bool)>| match b {
                        None => Bound::Unbounded,
                        Some((Value::Long(l), inclusive)) => inclusive_or_not(*l as f64, *inclusive),
                        Some((Value::Double(d), inclusive)) => inclusive_or_not(*d, *inclusive),
                        Some(_) => unreachable!("numeric bound"),
                    };
                    let column = handles.double.name.clone();
                    let (low, high) = f64::closed(as_f64(lower), as_f64(upper));
                    Some(vec![Interval::Double { column, low, high }])
                } else {
                    let as_i64 = |b: &Option<(Value, bool)>| match b {
                        None => Bound::Unbounded,
                        Some((Value::Long(l), inclusive)) => inclusive_or_not(*l, *inclusive),
                        Some(_) => unreachable!("long bound"),
                    };
                    let column = handles.long.name.clone();
                    let (low, high) = i64::closed(as_i64(lower), as_i64(upper));
                    Some(vec![Interval::Long { column, low, high }])
                }
            }
            Filter::And(children) if !children.is_empty() => {
                let mut all = Vec::new();
                for child in children {
                    all.extend(self.intervals(child)?);
                }
                Some(all)
            }
            _ => None,
        }
    }

    fn compile_facet(&self, request: &FacetRequest<'_>) -> Result<CompiledFacet, IndexError> {
        Ok(match *request {
            FacetRequest::Terms { field, aggregate_fields } if self.analyzed_search_field(field).is_some() => CompiledFacet::Tokens {
                field: self.analyzed_search_field(field).expect("checked"),
                aggregate_columns: self.aggregate_column_names(aggregate_fields),
                fields: aggregate_fields.to_vec(),
            },
            FacetRequest::Terms { field, aggregate_fields } => CompiledFacet::Terms {
                column: self.column_name(field, |h| &h.facet)?,
                aggregate_columns: self.aggregate_column_names(aggregate_fields),
                fields: aggregate_fields.to_vec(),
            },
            FacetRequest::Ranges { ranges, aggregate_fields } => CompiledFacet::Ranges {
                tests: ranges
                    .iter()
                    .map(|range| match range {
                        Filter::All => RangeTest::Everything,
                        other => self.intervals(other).map_or(RangeTest::Query, RangeTest::Intervals),
                    })
                    .collect(),
                aggregate_columns: self.aggregate_column_names(aggregate_fields),
                fields: aggregate_fields.to_vec(),
            },
        })
    }

    /// Counts every facet of a query over the entries `filter` matches, in one pass over them.
    pub fn facets(&self, filter: &Filter, requests: &[FacetRequest<'_>]) -> Result<FacetAnswer, IndexError> {
        let query = QueryBuilder::new(&self.schema).build(filter)?;
        let compiled = requests.iter().map(|r| self.compile_facet(r)).collect::<Result<Vec<_>, _>>()?;
        let searcher = self.reader.searcher();
        let collector = FacetCollector { facets: compiled.clone() };
        // Segments are counted in parallel: a facet over a whole large index is one query's latency.
        let (total, mut facets) =
            searcher.search_with_executor(query.as_ref(), &collector, search_pool(), EnableScoring::disabled_from_searcher(&searcher))?;
        // Ranges the pass could not decide from columns run as queries of their own.
        for ((request, facet), counts) in requests.iter().zip(&compiled).zip(facets.iter_mut()) {
            if let (FacetRequest::Ranges { ranges, aggregate_fields }, CompiledFacet::Ranges { tests, .. }, FacetCounts::Ranges(slots)) =
                (request, facet, counts)
            {
                for ((range, test), slot) in ranges.iter().zip(tests).zip(slots.iter_mut()) {
                    if matches!(test, RangeTest::Query) {
                        *slot = self.range_facet_query(&searcher, filter, range, aggregate_fields)?;
                    }
                }
            }
        }
        Ok(FacetAnswer { total, facets })
    }

    /// A range counted by running `filter and range` as a query.
    fn range_facet_query(
        &self,
        searcher: &Searcher,
        filter: &Filter,
        range: &Filter,
        aggregate_fields: &[String],
    ) -> Result<(u64, Vec<Aggregate>), IndexError> {
        let builder = QueryBuilder::new(&self.schema);
        let both: Box<dyn Query> =
            Box::new(BooleanQuery::new(vec![(Occur::Must, builder.build(filter)?), (Occur::Must, builder.build(range)?)]));
        let collector = FacetCollector {
            facets: vec![CompiledFacet::Ranges {
                tests: vec![RangeTest::Everything],
                aggregate_columns: self.aggregate_column_names(aggregate_fields),
                fields: aggregate_fields.to_vec(),
            }],
        };
        match searcher.search(both.as_ref(), &collector)?.1.pop() {
            Some(FacetCounts::Ranges(mut ranges)) => Ok(ranges.pop().expect("one range asked")),
            _ => unreachable!("one range facet asked, one answered"),
        }
    }
}

/// Threads that count facets over the segments of an index in parallel, shared by every index.
fn search_pool() -> &'static Executor {
    static POOL: OnceLock<Executor> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(MAX_SEARCH_THREADS);
        Executor::multi_thread(threads, "facet-search-").unwrap_or(Executor::SingleThread)
    })
}

/// More threads than this gain little: an index rarely has more large segments.
const MAX_SEARCH_THREADS: usize = 4;

fn inclusive_or_not<T>(value: T, inclusive: bool) -> Bound<T> {
    if inclusive {
        Bound::Included(value)
    } else {
        Bound::Excluded(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Aggregate, DocumentIndex, FacetCounts, FacetRequest, FieldSpec, Filter, IndexSpec, MappedDocument, TermCount, Value};

    /// One term facet through `facets` (unordered).
    fn term_facet(index: &DocumentIndex, filter: &Filter, field: &str, aggregate_fields: &[String]) -> Vec<TermCount> {
        match index.facets(filter, &[FacetRequest::Terms { field, aggregate_fields }]).unwrap().facets.pop() {
            Some(FacetCounts::Terms(terms)) => terms,
            other => panic!("a term facet answered {other:?}"),
        }
    }

    /// One range of a range facet through `facets`.
    fn range_facet(index: &DocumentIndex, filter: &Filter, range: &Filter, aggregate_fields: &[String]) -> (u64, Vec<Aggregate>) {
        let ranges = std::slice::from_ref(range);
        match index.facets(filter, &[FacetRequest::Ranges { ranges, aggregate_fields }]).unwrap().facets.pop() {
            Some(FacetCounts::Ranges(mut counts)) => counts.pop().expect("one range asked"),
            other => panic!("a range facet answered {other:?}"),
        }
    }

    fn index(dir: &std::path::Path) -> DocumentIndex {
        let field = |p: &str| FieldSpec::new(p);
        let index = DocumentIndex::open_or_create(dir, &IndexSpec { fields: vec![field("Brand"), field("Price"), field("Tags")] }).unwrap();
        let docs = [
            ("p/1", json!({"Brand": "Canon", "Price": 100, "Tags": ["a", "b"]})),
            ("p/2", json!({"Brand": "canon", "Price": 300, "Tags": ["b"]})),
            ("p/3", json!({"Brand": "Nikon", "Price": 50.5, "Tags": []})),
            ("p/4", json!({"Brand": null, "Price": 10})),
        ];
        let upserts: Vec<MappedDocument> = docs.iter().map(|(k, b)| MappedDocument { key: (*k).into(), body: b.clone() }).collect();
        index.apply(&upserts, &[], 4).unwrap();
        index
    }

    #[test]
    fn term_facets_count_lower_cased_terms_and_aggregate() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let mut brands = term_facet(&index, &Filter::All, "Brand", &["Price".into()]);
        brands.sort_by(|a, b| a.term.cmp(&b.term));
        assert_eq!(brands.iter().map(|t| (t.term.as_str(), t.count)).collect::<Vec<_>>(), vec![("canon", 2), ("nikon", 1)]);
        assert_eq!(brands[0].aggregates[0].sum, 400.0);
        assert_eq!((brands[0].aggregates[0].min, brands[0].aggregates[0].max), (Some(100.0), Some(300.0)));
        let mut tags = term_facet(&index, &Filter::All, "Tags", &[]);
        tags.sort_by(|a, b| a.term.cmp(&b.term));
        assert_eq!(tags.iter().map(|t| (t.term.as_str(), t.count)).collect::<Vec<_>>(), vec![("a", 1), ("b", 2)]);
        // A field the index lacks aggregates nothing instead of failing the query.
        let missing = term_facet(&index, &Filter::All, "Brand", &["Nope".into()]);
        assert!(missing.iter().all(|t| t.aggregates[0].count == 0 && t.aggregates[0].sum == 0.0));
        let cheap = Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Long(200), false)) };
        let only_cheap = term_facet(&index, &cheap, "Brand", &[]);
        assert_eq!(only_cheap.iter().map(|t| t.count).sum::<u64>(), 2);
    }

    /// Facets of an `Indexing: Search` field count each entry once per distinct token, with aggregates,
    /// over the filter's matches only, across segments.
    #[test]
    fn token_facets_of_analyzed_fields_count_entries_per_token() {
        let dir = tempfile::tempdir().unwrap();
        let title = FieldSpec { search: true, analyzed_only: true, ..FieldSpec::new("Title") };
        let index = DocumentIndex::open_or_create(dir.path(), &IndexSpec { fields: vec![title, FieldSpec::new("Price")] }).unwrap();
        let doc = |k: &str, title: &str, price: i64| MappedDocument { key: k.into(), body: json!({"Title": title, "Price": price}) };
        index.apply(&[doc("p/1", "Fast fast Database", 10), doc("p/2", "fast index", 20)], &[], 2).unwrap();
        index.apply(&[doc("p/3", "the Database", 40), doc("p/2", "slow index", 30)], &[], 4).unwrap();
        let mut words = term_facet(&index, &Filter::All, "Title", &["Price".into()]);
        words.sort_by(|a, b| a.term.cmp(&b.term));
        let counts: Vec<(&str, u64, f64)> = words.iter().map(|t| (t.term.as_str(), t.count, t.aggregates[0].sum)).collect();
        // "the" is a stop word; p/2's old title is gone.
        assert_eq!(counts, vec![("database", 2, 50.0), ("fast", 1, 10.0), ("index", 1, 30.0), ("slow", 1, 30.0)]);
        let cheap = Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Long(35), false)) };
        let mut cheap_words = term_facet(&index, &cheap, "Title", &[]);
        cheap_words.sort_by(|a, b| a.term.cmp(&b.term));
        let counts: Vec<(&str, u64)> = cheap_words.iter().map(|t| (t.term.as_str(), t.count)).collect();
        assert_eq!(counts, vec![("database", 1), ("fast", 1), ("index", 1), ("slow", 1)]);
    }

    /// The one-pass counts equal what running each range as a query counts, for long and double bounds,
    /// open and closed ends, `and`ed comparisons, multi-valued fields and entries without numbers.
    #[test]
    fn one_pass_ranges_equal_range_queries() {
        let dir = tempfile::tempdir().unwrap();
        let field = |p: &str| FieldSpec::new(p);
        let index = DocumentIndex::open_or_create(dir.path(), &IndexSpec { fields: vec![field("Brand"), field("Price")] }).unwrap();
        let mut seed = 42u64;
        let mut next = move |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let brands = ["Apple", "apple", "Nokia", "Sony", "LG"];
        let mut upserts = Vec::new();
        for i in 0..600 {
            let price = match next(6) {
                0 => json!(next(1000)),
                1 => json!(next(100000) as f64 / 100.0),
                2 => json!([next(1000), next(100000) as f64 / 100.0]),
                3 => json!("cheap"),
                4 => json!(null),
                _ => json!(next(3) as i64 * 250),
            };
            let body = if i % 50 == 0 {
                json!({"Brand": brands[next(5) as usize]})
            } else {
                json!({"Brand": brands[next(5) as usize], "Price": price})
            };
            upserts.push(MappedDocument { key: format!("p/{i}"), body });
        }
        // Two commits, so the counts cross segments.
        index.apply(&upserts[..300], &[], 300).unwrap();
        index.apply(&upserts[300..], &[], 600).unwrap();
        let number = |k: u64| if k.is_multiple_of(2) { Value::Long(next_value(k)) } else { Value::Double(next_value(k) as f64 + 0.5) };
        fn next_value(k: u64) -> i64 {
            (k * 37 % 1000) as i64
        }
        let mut ranges = Vec::new();
        for k in 0..40u64 {
            let lower = (k % 3 != 0).then(|| (number(k), k % 4 == 0));
            let upper = (k % 5 != 0).then(|| (number(k * 7 + 3), k % 2 == 0));
            ranges.push(Filter::Range { field: "Price".into(), lower, upper });
        }
        ranges.push(Filter::And(vec![
            Filter::Range { field: "Price".into(), lower: Some((Value::Long(100), true)), upper: None },
            Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Double(500.5), false)) },
        ]));
        ranges.push(Filter::All);
        // Ranges that all compare one column are counted from one read of it per block: only longs, only doubles.
        let only = |double: bool| -> Vec<Filter> {
            let bound = |k: u64, inclusive: bool| {
                Some((if double { Value::Double(next_value(k) as f64) } else { Value::Long(next_value(k)) }, inclusive))
            };
            let mut ranges: Vec<Filter> = (0..12u64)
                .map(|k| Filter::Range {
                    field: "Price".into(),
                    lower: (k % 3 != 0).then(|| bound(k, k % 2 == 0)).flatten(),
                    upper: bound(k * 5 + 1, k % 4 == 0),
                })
                .collect();
            ranges.insert(3, Filter::All);
            ranges
        };
        let range_sets = [ranges, only(false), only(true)];
        let filters = [Filter::All, Filter::Equal { field: "Brand".into(), value: Value::String("apple".into()), exact: false }];
        // With aggregates the pass goes document by document; without, a block of documents at a time.
        let cases = filters.iter().flat_map(|f| [(f, vec![]), (f, vec!["Price".to_string()])]);
        for ((filter, fields), ranges) in cases.flat_map(|case| range_sets.iter().map(move |r| (case.clone(), r))) {
            let answer = index
                .facets(
                    filter,
                    &[
                        FacetRequest::Ranges { ranges, aggregate_fields: &fields },
                        FacetRequest::Terms { field: "Brand", aggregate_fields: &fields },
                    ],
                )
                .unwrap();
            let searcher = index.reader.searcher();
            let FacetCounts::Ranges(counted) = &answer.facets[0] else { panic!("ranges answered as terms") };
            for (range, (count, aggregates)) in ranges.iter().zip(counted) {
                let (expected, expected_aggregates) = index.range_facet_query(&searcher, filter, range, &fields).unwrap();
                assert_eq!((*count, aggregates), (expected, &expected_aggregates), "{range:?} under {filter:?}");
            }
            let FacetCounts::Terms(terms) = &answer.facets[1] else { panic!("terms answered as ranges") };
            assert_eq!(terms.iter().map(|t| t.count).sum::<u64>(), answer.total);
            assert_eq!(answer.total, index.search(filter, &[], 0, 0).unwrap().total as u64);
        }
    }

    #[test]
    fn range_facets_respect_the_filter() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let below_100 = Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Long(100), false)) };
        let (count, aggregates) = range_facet(&index, &Filter::All, &below_100, &["Price".into()]);
        assert_eq!(count, 2);
        assert_eq!(aggregates[0].sum, 60.5);
        let canon = Filter::Equal { field: "Brand".into(), value: Value::String("canon".into()), exact: false };
        assert_eq!(range_facet(&index, &canon, &below_100, &[]).0, 0);
    }
}
