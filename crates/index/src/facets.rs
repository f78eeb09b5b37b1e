//! Facets: term counts and range counts over the entries a filter matches, with numeric aggregations. One
//! pass over the matching documents reads the multi-valued facet column (`f{i}_fv`), so counting every
//! term costs the same as counting the matches; a range facet runs one count per range, never one per term.

use std::collections::HashMap;

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::query::{BooleanQuery, Occur, Query};
use tantivy::{DocId, Score, Searcher, SegmentOrdinal, SegmentReader};

use crate::query_builder::QueryBuilder;
use crate::{DocumentIndex, Filter, IndexError};

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

/// Matching documents per segment.
struct Matches;

struct SegmentMatches {
    segment: SegmentOrdinal,
    docs: Vec<DocId>,
}

impl Collector for Matches {
    type Fruit = Vec<(SegmentOrdinal, Vec<DocId>)>;
    type Child = SegmentMatches;

    fn for_segment(&self, segment: SegmentOrdinal, _: &SegmentReader) -> tantivy::Result<SegmentMatches> {
        Ok(SegmentMatches { segment, docs: Vec::new() })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<(SegmentOrdinal, Vec<DocId>)>) -> tantivy::Result<Self::Fruit> {
        Ok(fruits)
    }
}

impl SegmentCollector for SegmentMatches {
    type Fruit = (SegmentOrdinal, Vec<DocId>);

    fn collect(&mut self, doc: DocId, _: Score) {
        self.docs.push(doc);
    }

    fn harvest(self) -> Self::Fruit {
        (self.segment, self.docs)
    }
}

impl DocumentIndex {
    fn matches(&self, searcher: &Searcher, query: &dyn Query) -> Result<Vec<(SegmentOrdinal, Vec<DocId>)>, IndexError> {
        Ok(searcher.search(query, &Matches)?)
    }

    fn column_name(&self, path: &str, pick: impl Fn(&crate::schema::FieldHandles) -> &crate::schema::Column) -> Result<String, IndexError> {
        let (_, handles) =
            self.schema.field(path).ok_or_else(|| IndexError::InvalidQuery(format!("field '{path}' is not in the index")))?;
        Ok(pick(handles).name.clone())
    }

    /// Adds each aggregated field's first number of `doc` to `aggregates`.
    fn aggregate_doc(columns: &[Option<tantivy::columnar::Column<f64>>], doc: DocId, aggregates: &mut [Aggregate]) {
        for (column, aggregate) in columns.iter().zip(aggregates.iter_mut()) {
            if let Some(value) = column.as_ref().and_then(|c| c.first(doc)) {
                aggregate.add(value);
            }
        }
    }

    fn aggregate_columns(
        &self,
        reader: &SegmentReader,
        names: &[Option<String>],
    ) -> Result<Vec<Option<tantivy::columnar::Column<f64>>>, IndexError> {
        Ok(names.iter().map(|n| n.as_ref().and_then(|n| reader.fast_fields().f64(n).ok())).collect())
    }

    /// Numeric columns of aggregated fields; a field the index does not have aggregates nothing (as in
    /// RavenDB, where it has no values).
    fn aggregate_column_names(&self, fields: &[String]) -> Vec<Option<String>> {
        fields.iter().map(|f| self.column_name(f, |h| &h.sort_double).ok()).collect()
    }

    /// Every term of `field` among the entries `filter` matches, with how many entries have it and the
    /// aggregates of `aggregate_fields` per term. Unordered; the caller sorts and pages.
    pub fn term_facet(&self, filter: &Filter, field: &str, aggregate_fields: &[String]) -> Result<Vec<TermCount>, IndexError> {
        let query = QueryBuilder::new(&self.schema).build(filter)?;
        let searcher = self.reader.searcher();
        let facet_column = self.column_name(field, |h| &h.facet)?;
        let aggregate_columns = self.aggregate_column_names(aggregate_fields);
        let mut by_term: HashMap<String, TermCount> = HashMap::new();
        for (segment, docs) in self.matches(&searcher, query.as_ref())? {
            let reader = searcher.segment_reader(segment);
            let Some(terms) = reader.fast_fields().str(&facet_column)? else { continue };
            let numbers = self.aggregate_columns(reader, &aggregate_columns)?;
            // Count per term ordinal first; resolve ordinals to text once per segment.
            let mut per_ord: HashMap<u64, (u64, Vec<Aggregate>)> = HashMap::new();
            if aggregate_fields.is_empty() {
                // Plain counts (the common case): one array slot per term of the segment, no hashing per document.
                let mut counts = vec![0u32; terms.dictionary().num_terms()];
                for doc in docs {
                    for ord in terms.term_ords(doc) {
                        counts[ord as usize] += 1;
                    }
                }
                per_ord.extend(
                    counts.into_iter().enumerate().filter(|(_, n)| *n > 0).map(|(ord, n)| (ord as u64, (u64::from(n), Vec::new()))),
                );
            } else {
                for doc in docs {
                    for ord in terms.term_ords(doc) {
                        let slot = per_ord.entry(ord).or_insert_with(|| {
                            (0, aggregate_fields.iter().map(|f| Aggregate { field: f.clone(), ..Default::default() }).collect())
                        });
                        slot.0 += 1;
                        Self::aggregate_doc(&numbers, doc, &mut slot.1);
                    }
                }
            }
            let mut text = String::new();
            for (ord, (count, aggregates)) in per_ord {
                text.clear();
                if !terms.ord_to_str(ord, &mut text)? {
                    continue;
                }
                let entry = by_term.entry(text.clone()).or_insert_with(|| TermCount {
                    term: text.clone(),
                    count: 0,
                    aggregates: aggregate_fields.iter().map(|f| Aggregate { field: f.clone(), ..Default::default() }).collect(),
                });
                entry.count += count;
                for (total, part) in entry.aggregates.iter_mut().zip(aggregates) {
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
        }
        Ok(by_term.into_values().collect())
    }

    /// How many entries match both `filter` and `range`, with the aggregates of `aggregate_fields`.
    pub fn range_facet(&self, filter: &Filter, range: &Filter, aggregate_fields: &[String]) -> Result<(u64, Vec<Aggregate>), IndexError> {
        let builder = QueryBuilder::new(&self.schema);
        let both: Box<dyn Query> =
            Box::new(BooleanQuery::new(vec![(Occur::Must, builder.build(filter)?), (Occur::Must, builder.build(range)?)]));
        let searcher = self.reader.searcher();
        let aggregate_columns = self.aggregate_column_names(aggregate_fields);
        let mut aggregates: Vec<Aggregate> =
            aggregate_fields.iter().map(|f| Aggregate { field: f.clone(), ..Default::default() }).collect();
        let mut count = 0u64;
        for (segment, docs) in self.matches(&searcher, both.as_ref())? {
            let numbers = self.aggregate_columns(searcher.segment_reader(segment), &aggregate_columns)?;
            count += docs.len() as u64;
            for doc in docs {
                Self::aggregate_doc(&numbers, doc, &mut aggregates);
            }
        }
        Ok((count, aggregates))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, Value};

    fn index(dir: &std::path::Path) -> DocumentIndex {
        let field =
            |p: &str| FieldSpec { path: p.into(), search: false, exact: false, spatial: false, analyzer: None, spatial_options: None };
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
        let mut brands = index.term_facet(&Filter::All, "Brand", &["Price".into()]).unwrap();
        brands.sort_by(|a, b| a.term.cmp(&b.term));
        assert_eq!(brands.iter().map(|t| (t.term.as_str(), t.count)).collect::<Vec<_>>(), vec![("canon", 2), ("nikon", 1)]);
        assert_eq!(brands[0].aggregates[0].sum, 400.0);
        assert_eq!((brands[0].aggregates[0].min, brands[0].aggregates[0].max), (Some(100.0), Some(300.0)));
        let mut tags = index.term_facet(&Filter::All, "Tags", &[]).unwrap();
        tags.sort_by(|a, b| a.term.cmp(&b.term));
        assert_eq!(tags.iter().map(|t| (t.term.as_str(), t.count)).collect::<Vec<_>>(), vec![("a", 1), ("b", 2)]);
        // A field the index lacks aggregates nothing instead of failing the query.
        let missing = index.term_facet(&Filter::All, "Brand", &["Nope".into()]).unwrap();
        assert!(missing.iter().all(|t| t.aggregates[0].count == 0 && t.aggregates[0].sum == 0.0));
        let cheap = Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Long(200), false)) };
        let only_cheap = index.term_facet(&cheap, "Brand", &[]).unwrap();
        assert_eq!(only_cheap.iter().map(|t| t.count).sum::<u64>(), 2);
    }

    #[test]
    fn range_facets_respect_the_filter() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let below_100 = Filter::Range { field: "Price".into(), lower: None, upper: Some((Value::Long(100), false)) };
        let (count, aggregates) = index.range_facet(&Filter::All, &below_100, &["Price".into()]).unwrap();
        assert_eq!(count, 2);
        assert_eq!(aggregates[0].sum, 60.5);
        let canon = Filter::Equal { field: "Brand".into(), value: Value::String("canon".into()), exact: false };
        assert_eq!(index.range_facet(&canon, &below_100, &[]).unwrap().0, 0);
    }
}
