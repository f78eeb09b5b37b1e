//! The tantivy collector of facets: one [`SegmentFacets`] pass per segment, merged into one answer
//! (segments' term ordinals turned into terms, range totals and aggregates added up).

use std::collections::HashMap;

use tantivy::collector::Collector;
use tantivy::{SegmentOrdinal, SegmentReader};

use crate::facets::aggregate::{empty_aggregates, merge_aggregates, Aggregate};
use crate::facets::answer::{FacetCounts, TermCount};
use crate::facets::compile::CompiledFacet;
use crate::facets::segment::{SegmentFacetFruit, SegmentFacets, SegmentFruit};

/// Counts compiled facets over a query's matches, segment by segment, and merges the segments' counts.
pub(super) struct FacetCollector {
    pub facets: Vec<CompiledFacet>,
}

impl Collector for FacetCollector {
    type Fruit = (u64, Vec<FacetCounts>);
    type Child = SegmentFacets;

    fn for_segment(&self, _: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<SegmentFacets> {
        SegmentFacets::open(&self.facets, reader)
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
