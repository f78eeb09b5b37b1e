//! Facet queries (`select facet(Brand), facet(Price < $p0, ...)`): what each facet asks for, and turning
//! the index's counts into RavenDB's facet results (sorting, paging, remaining terms, aggregations).

use corvid_index::{Aggregate, DocumentIndex, FacetCounts, FacetRequest, Filter, TermCount};
use serde_json::{json, Map, Value};

use crate::EngineError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggregationOp {
    Sum,
    Min,
    Max,
    Average,
}

impl AggregationOp {
    pub fn from_name(name: &str) -> Option<AggregationOp> {
        match name.to_ascii_lowercase().as_str() {
            "sum" => Some(AggregationOp::Sum),
            "min" => Some(AggregationOp::Min),
            "max" => Some(AggregationOp::Max),
            "avg" | "average" => Some(AggregationOp::Average),
            _ => None,
        }
    }

    fn key(self) -> &'static str {
        match self {
            AggregationOp::Sum => "Sum",
            AggregationOp::Min => "Min",
            AggregationOp::Max => "Max",
            AggregationOp::Average => "Average",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TermSort {
    ValueAsc,
    ValueDesc,
    CountAsc,
    CountDesc,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FacetOptions {
    pub start: usize,
    pub page_size: usize,
    pub sort: TermSort,
    pub include_remaining_terms: bool,
}

impl Default for FacetOptions {
    fn default() -> Self {
        FacetOptions { start: 0, page_size: usize::MAX, sort: TermSort::ValueAsc, include_remaining_terms: false }
    }
}

impl FacetOptions {
    /// FacetOptions JSON; PascalCase (C#) and camelCase keys are both accepted.
    pub fn from_json(value: &Value) -> Result<FacetOptions, EngineError> {
        let Value::Object(map) = value else {
            return Err(EngineError::InvalidQuery { message: format!("facet options must be an object, not {value}") });
        };
        let get = |key: &str| map.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v);
        let mut options = FacetOptions::default();
        if let Some(n) = get("Start").and_then(Value::as_u64) {
            options.start = n as usize;
        }
        if let Some(n) = get("PageSize").and_then(Value::as_u64) {
            options.page_size = n as usize;
        }
        if let Some(b) = get("IncludeRemainingTerms").and_then(Value::as_bool) {
            options.include_remaining_terms = b;
        }
        if let Some(mode) = get("TermSortMode").and_then(Value::as_str) {
            options.sort = match mode.to_ascii_lowercase().as_str() {
                "valueasc" => TermSort::ValueAsc,
                "valuedesc" => TermSort::ValueDesc,
                "countasc" => TermSort::CountAsc,
                "countdesc" => TermSort::CountDesc,
                other => return Err(EngineError::InvalidQuery { message: format!("unknown facet TermSortMode '{other}'") }),
            };
        }
        Ok(options)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct FacetAggregation {
    pub op: AggregationOp,
    pub field: String,
    /// Shown as the value's `Name` (the field when absent).
    pub display: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) enum FacetKind {
    Terms {
        field: String,
    },
    /// (label, filter) per range; a document counts in every range it matches.
    Ranges(Vec<(String, Filter)>),
    /// Only aggregations: one value over every result.
    AllResults,
}

#[derive(Debug, Clone)]
pub(crate) struct FacetPlan {
    pub name: String,
    pub kind: FacetKind,
    pub aggregations: Vec<FacetAggregation>,
    pub options: FacetOptions,
}

impl FacetPlan {
    fn aggregated_fields(&self) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        for a in &self.aggregations {
            if !fields.contains(&a.field) {
                fields.push(a.field.clone());
            }
        }
        fields
    }
}

fn number(value: Option<f64>) -> Value {
    value.map(|v| json!(v)).unwrap_or(Value::Null)
}

/// The `Values` entries of one group (a term or a range): just the count without aggregations, else one
/// entry per aggregated field with the asked operations.
fn values_of(plan: &FacetPlan, range: &str, count: u64, aggregates: &[Aggregate]) -> Vec<Value> {
    if plan.aggregations.is_empty() {
        return vec![json!({"Range": range, "Count": count})];
    }
    let mut out = Vec::new();
    for aggregate in aggregates {
        let mut value = Map::new();
        value.insert("Range".into(), json!(range));
        value.insert("Count".into(), json!(count));
        let asked: Vec<&FacetAggregation> = plan.aggregations.iter().filter(|a| a.field == aggregate.field).collect();
        let name = asked.iter().find_map(|a| a.display.clone()).unwrap_or_else(|| aggregate.field.clone());
        value.insert("Name".into(), json!(name));
        for op in [AggregationOp::Sum, AggregationOp::Min, AggregationOp::Max, AggregationOp::Average] {
            let result = if asked.iter().any(|a| a.op == op) {
                match op {
                    AggregationOp::Sum => Some(aggregate.sum),
                    AggregationOp::Min => aggregate.min,
                    AggregationOp::Max => aggregate.max,
                    AggregationOp::Average => aggregate.average(),
                }
            } else {
                None
            };
            value.insert(op.key().into(), number(result));
        }
        out.push(Value::Object(value));
    }
    out
}

fn sort_terms(terms: &mut [TermCount], sort: TermSort) {
    match sort {
        TermSort::ValueAsc => terms.sort_by(|a, b| a.term.cmp(&b.term)),
        TermSort::ValueDesc => terms.sort_by(|a, b| b.term.cmp(&a.term)),
        TermSort::CountAsc => terms.sort_by(|a, b| a.count.cmp(&b.count).then_with(|| a.term.cmp(&b.term))),
        TermSort::CountDesc => terms.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.term.cmp(&b.term))),
    }
}

/// Every facet's result JSON and the number of matches, counted in one pass over the index.
pub(crate) fn run_facets(index: &DocumentIndex, filter: &Filter, plans: &[FacetPlan]) -> Result<(u64, Vec<Value>), EngineError> {
    const EVERYTHING: &[Filter] = &[Filter::All];
    let fields: Vec<Vec<String>> = plans.iter().map(FacetPlan::aggregated_fields).collect();
    let ranges: Vec<Vec<Filter>> = plans
        .iter()
        .map(|plan| match &plan.kind {
            FacetKind::Ranges(ranges) => ranges.iter().map(|(_, filter)| filter.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    let requests: Vec<FacetRequest<'_>> = plans
        .iter()
        .zip(fields.iter().zip(&ranges))
        .map(|(plan, (fields, ranges))| match &plan.kind {
            FacetKind::Terms { field } => FacetRequest::Terms { field, aggregate_fields: fields },
            FacetKind::Ranges(_) => FacetRequest::Ranges { ranges, aggregate_fields: fields },
            FacetKind::AllResults => FacetRequest::Ranges { ranges: EVERYTHING, aggregate_fields: fields },
        })
        .collect();
    let answer = index.facets(filter, &requests)?;
    let results = plans.iter().zip(answer.facets).map(|(plan, counts)| facet_json(plan, counts)).collect();
    Ok((answer.total, results))
}

/// One facet's result JSON from its counts.
fn facet_json(plan: &FacetPlan, counts: FacetCounts) -> Value {
    let mut values = Vec::new();
    let mut remaining_terms = Vec::new();
    let mut remaining_hits = 0u64;
    let mut remaining_count = 0usize;
    match (&plan.kind, counts) {
        (FacetKind::Terms { .. }, FacetCounts::Terms(mut terms)) => {
            sort_terms(&mut terms, plan.options.sort);
            let end = plan.options.start.saturating_add(plan.options.page_size).min(terms.len());
            let start = plan.options.start.min(end);
            for term in &terms[start..end] {
                values.extend(values_of(plan, &term.term, term.count, &term.aggregates));
            }
            remaining_count = terms.len() - end;
            for term in &terms[end..] {
                remaining_hits += term.count;
                if plan.options.include_remaining_terms {
                    remaining_terms.push(json!(term.term));
                }
            }
        }
        (FacetKind::Ranges(ranges), FacetCounts::Ranges(counts)) => {
            for ((label, _), (count, aggregates)) in ranges.iter().zip(counts) {
                values.extend(values_of(plan, label, count, &aggregates));
            }
        }
        (FacetKind::AllResults, FacetCounts::Ranges(counts)) => {
            for (count, aggregates) in counts {
                values.extend(values_of(plan, "@AllResults", count, &aggregates));
            }
        }
        _ => unreachable!("the index answers each facet in the shape it was asked"),
    }
    json!({
        "Name": plan.name, "Values": values, "RemainingTerms": remaining_terms,
        "RemainingTermsCount": remaining_count, "RemainingHits": remaining_hits
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_accept_both_casings() {
        let o = FacetOptions::from_json(&json!({"pageSize": 2, "Start": 1, "termSortMode": "CountDesc", "IncludeRemainingTerms": true}))
            .unwrap();
        assert_eq!(o, FacetOptions { start: 1, page_size: 2, sort: TermSort::CountDesc, include_remaining_terms: true });
        assert!(FacetOptions::from_json(&json!({"TermSortMode": "Sideways"})).is_err());
    }

    #[test]
    fn counts_sort_with_value_ties() {
        let t = |term: &str, count| TermCount { term: term.into(), count, aggregates: Vec::new() };
        let mut terms = vec![t("b", 2), t("a", 2), t("c", 5)];
        sort_terms(&mut terms, TermSort::CountDesc);
        assert_eq!(terms.iter().map(|t| t.term.as_str()).collect::<Vec<_>>(), ["c", "a", "b"]);
    }
}
