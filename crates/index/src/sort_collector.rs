//! Top-k by any number of sort keys, with the count of matches.
//!
//! Per segment every key is a `Option<u64>` that orders like the final value: a term ordinal for string columns
//! (ordinal order is byte order within a segment), the order-preserving u64 image of i64/f64 columns, or of the
//! score. The segment keeps at most about twice the page size, pruning with a linear-time selection, and
//! turns only its winners' ordinals into strings, so cross-segment merging compares real values.
//! Ties go to the lower (segment, doc), the same rule as tantivy's `TopDocs`.

use std::cmp::Ordering;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::{Column, StrColumn};
use tantivy::{DocAddress, DocId, Score, SegmentOrdinal, SegmentReader};

use crate::schema::SpatialColumns;
use crate::spatial::SegmentShapes;

/// Where one sort key comes from.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// A fast string column (compared by term).
    Str(String),
    /// A fast i64 / f64 column (compared numerically).
    Numeric(String),
    /// The relevance score.
    Score,
    /// Distance of the nearest point (or shape center) of a spatial field from `origin` (lat, lng).
    Distance { columns: SpatialColumns, origin: (f64, f64) },
}

#[derive(Debug, Clone)]
pub(crate) struct KeySpec {
    pub source: KeySource,
    /// Missing values sort first when ascending, last when descending.
    pub descending: bool,
}

/// A key value comparable across segments.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum GlobalKey {
    Num(Option<u64>),
    Str(Option<String>),
}

pub(crate) struct Hit {
    pub keys: Vec<GlobalKey>,
    pub address: DocAddress,
    pub score: Score,
}

pub(crate) struct MultiKeyCollector {
    pub keys: Vec<KeySpec>,
    /// skip + take.
    pub limit: usize,
    /// With one segment, string keys stay ordinals.
    pub single_segment: bool,
}

pub(crate) struct SegmentFruit {
    hits: Vec<Hit>,
    count: usize,
}

enum SegmentColumn {
    Str(Option<StrColumn>),
    Numeric(Option<Column<u64>>),
    Score,
    /// Entries without a point sort as infinitely far.
    Distance(Box<SegmentShapes>, (f64, f64)),
}

pub(crate) struct MultiKeySegmentCollector {
    segment_ord: SegmentOrdinal,
    columns: Vec<SegmentColumn>,
    descending: Vec<bool>,
    limit: usize,
    single_segment: bool,
    docs: Vec<DocId>,
    scores: Vec<Score>,
    /// `columns.len()` values per entry of `docs`.
    values: Vec<Option<u64>>,
    count: usize,
}

/// Order-preserving image of a score in u64.
fn score_to_u64(score: Score) -> u64 {
    let bits = score.to_bits();
    let mapped = if bits & 0x8000_0000 != 0 { !bits } else { bits | 0x8000_0000 };
    u64::from(mapped)
}

fn compare_keys<T: Ord>(a: &[T], b: &[T], descending: &[bool]) -> Ordering {
    for ((x, y), desc) in a.iter().zip(b).zip(descending) {
        let ord = x.cmp(y);
        if ord != Ordering::Equal {
            return if *desc { ord.reverse() } else { ord };
        }
    }
    Ordering::Equal
}

impl Collector for MultiKeyCollector {
    type Fruit = (Vec<Hit>, usize);
    type Child = MultiKeySegmentCollector;

    fn for_segment(&self, segment_ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<Self::Child> {
        let fast = reader.fast_fields();
        let columns = self
            .keys
            .iter()
            .map(|k| {
                Ok(match &k.source {
                    KeySource::Str(name) => SegmentColumn::Str(fast.str(name)?),
                    KeySource::Numeric(name) => SegmentColumn::Numeric(fast.u64_lenient(name)?.map(|(c, _)| c)),
                    KeySource::Score => SegmentColumn::Score,
                    KeySource::Distance { columns, origin } => {
                        SegmentColumn::Distance(Box::new(SegmentShapes::open(reader, columns)?), *origin)
                    }
                })
            })
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(MultiKeySegmentCollector {
            segment_ord,
            columns,
            descending: self.keys.iter().map(effective_descending).collect(),
            limit: self.limit,
            single_segment: self.single_segment,
            docs: Vec::new(),
            scores: Vec::new(),
            values: Vec::new(),
            count: 0,
        })
    }

    fn requires_scoring(&self) -> bool {
        self.keys.iter().any(|k| matches!(k.source, KeySource::Score))
    }

    fn merge_fruits(&self, fruits: Vec<SegmentFruit>) -> tantivy::Result<Self::Fruit> {
        let count = fruits.iter().map(|f| f.count).sum();
        let mut hits: Vec<Hit> = fruits.into_iter().flat_map(|f| f.hits).collect();
        let descending: Vec<bool> = self.keys.iter().map(effective_descending).collect();
        hits.sort_by(|a, b| compare_keys(&a.keys, &b.keys, &descending).then(a.address.cmp(&b.address)));
        hits.truncate(self.limit);
        Ok((hits, count))
    }
}

/// A score sort is "best first" when ascending, so its raw value runs the other way.
fn effective_descending(k: &KeySpec) -> bool {
    match k.source {
        KeySource::Score => !k.descending,
        _ => k.descending,
    }
}

impl MultiKeySegmentCollector {
    fn width(&self) -> usize {
        self.columns.len()
    }

    /// Keeps the best `limit` entries, in order.
    fn prune(&mut self, sort: bool) {
        let width = self.width();
        let mut order: Vec<u32> = (0..self.docs.len() as u32).collect();
        let cmp = |a: &u32, b: &u32| {
            let (a, b) = (*a as usize, *b as usize);
            compare_keys(&self.values[a * width..(a + 1) * width], &self.values[b * width..(b + 1) * width], &self.descending)
                .then(self.docs[a].cmp(&self.docs[b]))
        };
        if order.len() > self.limit {
            order.select_nth_unstable_by(self.limit, cmp);
            order.truncate(self.limit);
        }
        if sort {
            order.sort_unstable_by(cmp);
        }
        let docs = order.iter().map(|&i| self.docs[i as usize]).collect();
        let scores = order.iter().map(|&i| self.scores[i as usize]).collect();
        let values = order.iter().flat_map(|&i| self.values[i as usize * width..(i as usize + 1) * width].iter().copied()).collect();
        self.docs = docs;
        self.scores = scores;
        self.values = values;
    }
}

impl SegmentCollector for MultiKeySegmentCollector {
    type Fruit = SegmentFruit;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.count += 1;
        if self.limit == 0 {
            return;
        }
        if self.width() == 0 {
            // Docs arrive in increasing order, so the first `limit` are the answer.
            if self.docs.len() < self.limit {
                self.docs.push(doc);
                self.scores.push(score);
            }
            return;
        }
        self.docs.push(doc);
        self.scores.push(score);
        for column in &self.columns {
            let value = match column {
                SegmentColumn::Str(c) => c.as_ref().and_then(|c| c.ords().first(doc)),
                SegmentColumn::Numeric(c) => c.as_ref().and_then(|c| c.first(doc)),
                SegmentColumn::Score => Some(score_to_u64(score)),
                SegmentColumn::Distance(shapes, origin) => Some(tantivy::f64_to_u64(shapes.nearest(doc, *origin))),
            };
            self.values.push(value);
        }
        if self.docs.len() >= (2 * self.limit).max(1024) {
            self.prune(false);
        }
    }

    fn harvest(mut self) -> SegmentFruit {
        if self.width() > 0 {
            self.prune(true);
        }
        let width = self.width();
        let mut keys: Vec<Vec<GlobalKey>> = vec![Vec::with_capacity(width); self.docs.len()];
        for (j, column) in self.columns.iter().enumerate() {
            let values = (0..self.docs.len()).map(|n| self.values[n * width + j]);
            match column {
                SegmentColumn::Str(Some(c)) if !self.single_segment => {
                    for (n, key) in resolve_ords(c, values).into_iter().enumerate() {
                        keys[n].push(GlobalKey::Str(key));
                    }
                }
                // Alone, a segment's ordinals already are the final order.
                _ => values.zip(keys.iter_mut()).for_each(|(v, k)| k.push(GlobalKey::Num(v))),
            }
        }
        let hits = keys
            .into_iter()
            .enumerate()
            .map(|(n, keys)| Hit { keys, address: DocAddress::new(self.segment_ord, self.docs[n]), score: self.scores[n] })
            .collect();
        SegmentFruit { hits, count: self.count }
    }
}

/// Term of each ordinal, looked up in one ordered pass over the dictionary (a lookup per ordinal would decompress
/// a dictionary block each time).
pub(crate) fn resolve_ords(column: &StrColumn, ords: impl Iterator<Item = Option<u64>>) -> Vec<Option<String>> {
    let ords: Vec<Option<u64>> = ords.collect();
    let mut wanted: Vec<u64> = ords.iter().flatten().copied().collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut terms: Vec<String> = Vec::with_capacity(wanted.len());
    let complete = column.dictionary().sorted_ords_to_term_cb(&wanted, |bytes| terms.push(String::from_utf8_lossy(bytes).into_owned()));
    if !matches!(complete, Ok(true)) || terms.len() != wanted.len() {
        // Unreadable ordinals sort as missing rather than failing the query.
        tracing::warn!("sort column dictionary lookup failed");
        return vec![None; ords.len()];
    }
    ords.iter().map(|o| o.and_then(|o| wanted.binary_search(&o).ok().map(|i| terms[i].clone()))).collect()
}
