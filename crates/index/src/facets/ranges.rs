//! Ranges of a range facet decided from numeric columns: a query range's comparisons become closed intervals
//! on the long or double column, tested without running a query.

use std::ops::Bound;

use crate::schema::IndexSchema;
use crate::{Filter, Value};

/// A numeric comparison decided from a column: does any of the entry's values lie in `low..=high` (closed
/// bounds, made from the query's open or closed ones once, when the facet is compiled).
#[derive(Debug, Clone)]
pub(super) enum Interval {
    /// On a long column.
    Long { column: String, low: i64, high: i64 },
    /// On a double column.
    Double { column: String, low: f64, high: f64 },
}

/// How one range of a range facet is decided.
#[derive(Debug, Clone)]
pub(super) enum RangeTest {
    /// Every match.
    Everything,
    /// Entries with a value in each interval (a comparison, `between`, or an `and` of them).
    Intervals(Vec<Interval>),
    /// Anything else: counted by a query of its own after the pass.
    Query,
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

impl Interval {
    /// Whether both compare the same column.
    pub(super) fn same_column(&self, other: &Interval) -> bool {
        match (self, other) {
            (Interval::Long { column: a, .. }, Interval::Long { column: b, .. }) => a == b,
            (Interval::Double { column: a, .. }, Interval::Double { column: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// Whether `value` lies in the closed interval `low..=high`.
pub(super) fn within<T: PartialOrd>(value: &T, low: &T, high: &T) -> bool {
    value >= low && value <= high
}

/// A bound of a query range as a `Bound`.
fn inclusive_or_not<T>(value: T, inclusive: bool) -> Bound<T> {
    if inclusive {
        Bound::Included(value)
    } else {
        Bound::Excluded(value)
    }
}

/// The comparisons of `range` as column intervals, deciding numbers exactly as the range query would (the
/// long column unless a bound is a double); `None` when the range is something else.
pub(super) fn intervals(schema: &IndexSchema, range: &Filter) -> Option<Vec<Interval>> {
    match range {
        Filter::Range { field, lower, upper } => {
            let (_, handles) = schema.field(field)?;
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
                all.extend(intervals(schema, child)?);
            }
            Some(all)
        }
        _ => None,
    }
}
