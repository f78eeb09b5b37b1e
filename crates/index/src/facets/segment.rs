//! The pass over one segment's matches that feeds every facet of a query: term counts per ordinal of the
//! facet column, range totals (from one read of a shared column where the ranges allow), the matches of
//! token facets in a bitset, counted against each token's postings at harvest.

use std::collections::HashMap;
use std::sync::Arc;

use tantivy::collector::SegmentCollector;
use tantivy::columnar::{Column, StrColumn};
use tantivy::index::InvertedIndexReader;
use tantivy::schema::IndexRecordOption;
use tantivy::{BitSet, DocId, DocSet, Score, SegmentReader, TERMINATED};

use crate::facets::aggregate::{aggregate_doc, empty_aggregates, f64_columns, Aggregate};
use crate::facets::compile::CompiledFacet;
use crate::facets::ranges::{within, Interval, RangeTest};

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

/// A [`RangeTest`] opened on one segment.
enum SegmentRange {
    Everything,
    Intervals(Vec<SegmentInterval>),
    Query,
}

/// One facet's state during the pass over a segment.
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
    /// Totals per range, with aggregates.
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
pub(super) struct SegmentFacets {
    total: u64,
    facets: Vec<SegmentFacet>,
    scratch: Scratch,
}

impl SegmentFacets {
    /// Opens the columns and postings every facet reads in one segment.
    pub(super) fn open(compiled: &[CompiledFacet], reader: &SegmentReader) -> tantivy::Result<SegmentFacets> {
        let mut facets = Vec::with_capacity(compiled.len());
        for facet in compiled {
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
pub(super) type SegmentFruit = (u64, Vec<SegmentFacetFruit>);

/// One facet's counts in one segment.
pub(super) enum SegmentFacetFruit {
    Terms(Option<StrColumn>, Vec<(u64, u64, Vec<Aggregate>)>),
    /// (token, count, aggregates) of every token with matches.
    Tokens(std::io::Result<Vec<(String, u64, Vec<Aggregate>)>>),
    Ranges(Vec<(u64, Vec<Aggregate>)>),
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
