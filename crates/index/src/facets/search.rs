//! [`DocumentIndex::facets`]: every facet of a query counted in one pass over its matches, segments in
//! parallel; the ranges the pass cannot decide from columns then run as queries of their own.

use std::sync::OnceLock;

use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query};
use tantivy::{Executor, Searcher};

use crate::facets::aggregate::Aggregate;
use crate::facets::answer::{FacetAnswer, FacetCounts};
use crate::facets::collector::FacetCollector;
use crate::facets::compile::{aggregate_column_names, compile, CompiledFacet};
use crate::facets::ranges::RangeTest;
use crate::facets::request::FacetRequest;
use crate::query_builder::QueryBuilder;
use crate::{DocumentIndex, Filter, IndexError};

impl DocumentIndex {
    /// Counts every facet of a query over the entries `filter` matches, in one pass over them.
    pub fn facets(&self, filter: &Filter, requests: &[FacetRequest<'_>]) -> Result<FacetAnswer, IndexError> {
        let query = QueryBuilder::new(&self.schema).build(filter)?;
        let compiled = requests.iter().map(|r| compile(&self.schema, r)).collect::<Result<Vec<_>, _>>()?;
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
                aggregate_columns: aggregate_column_names(&self.schema, aggregate_fields),
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
