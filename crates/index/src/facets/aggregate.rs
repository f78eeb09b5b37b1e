//! Numeric aggregates (sum, min, max, count) of fields over the entries of a term or a range.

use tantivy::columnar::Column;
use tantivy::{DocId, SegmentReader};

/// Numeric aggregates of one field over a group of entries (its first numeric value per entry).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Aggregate {
    /// The aggregated field.
    pub field: String,
    /// Sum of the numbers.
    pub sum: f64,
    /// Smallest number; none without any.
    pub min: Option<f64>,
    /// Largest number; none without any.
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

    /// The mean of the numbers; none without any.
    pub fn average(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }
}

/// One empty aggregate per field.
pub(super) fn empty_aggregates(fields: &[String]) -> Vec<Aggregate> {
    fields.iter().map(|f| Aggregate { field: f.clone(), ..Default::default() }).collect()
}

/// Adds the aggregates of one part (a segment) to the totals, field by field.
pub(super) fn merge_aggregates(totals: &mut [Aggregate], parts: &[Aggregate]) {
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

/// Adds each aggregated field's first number of `doc` to `aggregates`.
pub(super) fn aggregate_doc(columns: &[Option<Column<f64>>], doc: DocId, aggregates: &mut [Aggregate]) {
    for (column, aggregate) in columns.iter().zip(aggregates.iter_mut()) {
        if let Some(value) = column.as_ref().and_then(|c| c.first(doc)) {
            aggregate.add(value);
        }
    }
}

/// The double columns of the aggregated fields in one segment (none where the field or column is missing).
pub(super) fn f64_columns(reader: &SegmentReader, names: &[Option<String>]) -> Vec<Option<Column<f64>>> {
    names.iter().map(|n| n.as_ref().and_then(|n| reader.fast_fields().f64(n).ok())).collect()
}
