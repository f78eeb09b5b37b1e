//! A planned `where`: an index filter as it stands, except for `moreLikeThis` parts, whose terms come from
//! a document and the index's statistics when the query runs.

use corvid_index::Filter;

use crate::query::more_like_this::MoreLikeThisPlan;
use crate::EngineError;

/// What a query's `where` asks of its index.
#[derive(Debug, Clone)]
pub(crate) enum Condition {
    /// Answered by the index as it stands.
    Filter(Filter),
    /// Completed into a filter at execution.
    MoreLikeThis(MoreLikeThisPlan),
    And(Vec<Condition>),
    Or(Vec<Condition>),
    Not(Box<Condition>),
    Boost(Box<Condition>, f32),
}

impl Condition {
    /// Every entry.
    pub fn all() -> Condition {
        Condition::Filter(Filter::All)
    }

    /// All of `parts`; one filter when no part waits for execution.
    pub fn and(parts: Vec<Condition>) -> Condition {
        match filters(&parts) {
            Some(filters) => Condition::Filter(Filter::And(filters)),
            None => Condition::And(parts),
        }
    }

    /// Any of `parts`; one filter when no part waits for execution.
    pub fn or(parts: Vec<Condition>) -> Condition {
        match filters(&parts) {
            Some(filters) => Condition::Filter(Filter::Or(filters)),
            None => Condition::Or(parts),
        }
    }

    /// Everything but `inner`.
    pub fn not(inner: Condition) -> Condition {
        match inner {
            Condition::Filter(filter) => Condition::Filter(Filter::Not(Box::new(filter))),
            other => Condition::Not(Box::new(other)),
        }
    }

    /// `inner` with its score multiplied by `factor`.
    pub fn boost(inner: Condition, factor: f32) -> Condition {
        match inner {
            Condition::Filter(filter) => Condition::Filter(Filter::Boost(Box::new(filter), factor)),
            other => Condition::Boost(Box::new(other), factor),
        }
    }

    /// The filter, when no part waits for execution.
    pub fn as_filter(&self) -> Option<&Filter> {
        match self {
            Condition::Filter(filter) => Some(filter),
            _ => None,
        }
    }

    /// The filter, with each `moreLikeThis` completed by `complete`.
    pub fn to_filter(&self, complete: &mut dyn FnMut(&MoreLikeThisPlan) -> Result<Filter, EngineError>) -> Result<Filter, EngineError> {
        let all = |parts: &[Condition], complete: &mut dyn FnMut(&MoreLikeThisPlan) -> Result<Filter, EngineError>| {
            parts.iter().map(|p| p.to_filter(complete)).collect::<Result<Vec<_>, _>>()
        };
        Ok(match self {
            Condition::Filter(filter) => filter.clone(),
            Condition::MoreLikeThis(plan) => complete(plan)?,
            Condition::And(parts) => Filter::And(all(parts, complete)?),
            Condition::Or(parts) => Filter::Or(all(parts, complete)?),
            Condition::Not(inner) => Filter::Not(Box::new(inner.to_filter(complete)?)),
            Condition::Boost(inner, factor) => Filter::Boost(Box::new(inner.to_filter(complete)?), *factor),
        })
    }

    /// Every filter part, for walks that look for particular filters (moreLikeThis parts have none).
    pub fn filters(&self) -> Vec<&Filter> {
        match self {
            Condition::Filter(filter) => vec![filter],
            Condition::MoreLikeThis(_) => Vec::new(),
            Condition::And(parts) | Condition::Or(parts) => parts.iter().flat_map(Condition::filters).collect(),
            Condition::Not(inner) | Condition::Boost(inner, _) => inner.filters(),
        }
    }
}

/// The filters of `parts` when every part is one.
fn filters(parts: &[Condition]) -> Option<Vec<Filter>> {
    parts.iter().map(|p| p.as_filter().cloned()).collect()
}
