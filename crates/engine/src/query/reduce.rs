//! `group by` queries: rows from a map-reduce index's reduce results, then `where`, `order by` and paging
//! over those rows (they are one per reduce key, so this runs in memory).

use std::cmp::Ordering;
use std::sync::Arc;

use corvid_rql::{Call, CompareOp, Expr, Operand, OrderingType, ValueKind};
use serde_json::{Map, Value};

use super::literal::literal_value;
use crate::indexing::{Aggregation, AutoIndexDefinition, IndexHandle};
use crate::EngineError;

#[derive(Debug, Clone)]
pub(crate) enum OutputSource {
    /// The n-th group-by value (in the definition's order).
    Group(usize),
    /// The n-th value of the reduce row (0 = count).
    Value(usize),
}

#[derive(Debug, Clone)]
pub(crate) struct OutputField {
    pub name: String,
    pub source: OutputSource,
    /// Counts are integers on the wire.
    pub integer: bool,
}

pub(crate) struct ReducePlan {
    pub handle: Arc<IndexHandle>,
    pub outputs: Vec<OutputField>,
    pub filter: Option<Expr>,
    pub sort: Vec<(Operand, Option<OrderingType>, bool)>,
    pub parameters: Map<String, Value>,
}

pub(crate) struct Row {
    pub groups: Vec<Value>,
    pub values: Vec<f64>,
}

fn number(v: f64, integer: bool) -> Value {
    if integer || (v.fract() == 0.0 && v.abs() < 9.0e15) {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

impl ReducePlan {
    fn definition(&self) -> &AutoIndexDefinition {
        &self.handle.definition
    }

    /// The value an operand names in a row: an output name, a group-by path, `count()` or `sum(path)`.
    fn resolve(&self, row: &Row, operand: &Operand) -> Result<Value, EngineError> {
        match operand {
            Operand::Field(path) => {
                let name = path.dotted();
                if let Some(out) = self.outputs.iter().find(|o| o.name.eq_ignore_ascii_case(&name)) {
                    return Ok(self.output_value(row, out));
                }
                let names_key = |g: &String| {
                    g.eq_ignore_ascii_case(&name) || crate::indexing::array_content_path(g).is_some_and(|p| p.eq_ignore_ascii_case(&name))
                };
                if let Some(i) = self.definition().group_by.iter().position(names_key) {
                    return Ok(row.groups.get(i).cloned().unwrap_or(Value::Null));
                }
                Err(EngineError::InvalidQuery { message: format!("'{name}' is neither a group-by field nor a selected aggregation") })
            }
            Operand::Call(call) => {
                let aggregation = aggregation_of(call)?;
                let position = self
                    .definition()
                    .value_position(&aggregation)
                    .ok_or_else(|| EngineError::Internal("aggregation missing from index".into()))?;
                Ok(number(row.values.get(position).copied().unwrap_or(0.0), position == 0))
            }
            Operand::Value(v) => self.literal(&v.kind),
        }
    }

    fn literal(&self, kind: &ValueKind) -> Result<Value, EngineError> {
        literal_value(kind, &self.parameters)
    }

    fn output_value(&self, row: &Row, out: &OutputField) -> Value {
        match out.source {
            OutputSource::Group(i) => row.groups.get(i).cloned().unwrap_or(Value::Null),
            OutputSource::Value(i) => number(row.values.get(i).copied().unwrap_or(0.0), out.integer),
        }
    }

    pub fn matches(&self, row: &Row, expr: &Expr) -> Result<bool, EngineError> {
        Ok(match expr {
            Expr::True(_) => true,
            Expr::And(a, b) => self.matches(row, a)? && self.matches(row, b)?,
            Expr::Or(a, b) => self.matches(row, a)? || self.matches(row, b)?,
            Expr::Not { expr, .. } => !self.matches(row, expr)?,
            Expr::Compare { left, op, right, .. } => {
                let ordering = compare(&self.resolve(row, left)?, &self.resolve(row, right)?);
                match op {
                    CompareOp::Eq => ordering == Some(Ordering::Equal),
                    CompareOp::NotEq => ordering != Some(Ordering::Equal),
                    CompareOp::Lt => ordering == Some(Ordering::Less),
                    CompareOp::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
                    CompareOp::Gt => ordering == Some(Ordering::Greater),
                    CompareOp::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
                }
            }
            Expr::Between { operand, low, high, .. } => {
                let v = self.resolve(row, operand)?;
                matches!(compare(&v, &self.literal(&low.kind)?), Some(Ordering::Greater | Ordering::Equal))
                    && matches!(compare(&v, &self.literal(&high.kind)?), Some(Ordering::Less | Ordering::Equal))
            }
            Expr::In { operand, values, .. } => {
                let v = self.resolve(row, operand)?;
                let mut any = false;
                for value in values {
                    let candidates = match self.literal(&value.kind)? {
                        Value::Array(items) => items,
                        other => vec![other],
                    };
                    any |= candidates.iter().any(|c| compare(&v, c) == Some(Ordering::Equal));
                }
                any
            }
            Expr::Method(call) => {
                return Err(EngineError::InvalidQuery { message: format!("{}() cannot filter the results of a group by", call.name) })
            }
        })
    }

    /// The result object of a row.
    pub fn render(&self, row: &Row) -> Value {
        let mut object = Map::new();
        for out in &self.outputs {
            object.insert(out.name.clone(), self.output_value(row, out));
        }
        let mut metadata = Map::new();
        metadata.insert("@projection".into(), Value::Bool(true));
        object.insert("@metadata".into(), Value::Object(metadata));
        Value::Object(object)
    }

    pub fn sort_rows(&self, rows: Vec<Row>) -> Result<Vec<Row>, EngineError> {
        if self.sort.is_empty() {
            return Ok(rows);
        }
        let mut keyed = Vec::with_capacity(rows.len());
        for row in rows {
            let keys = self.sort.iter().map(|(operand, _, _)| self.resolve(&row, operand)).collect::<Result<Vec<_>, _>>()?;
            keyed.push((keys, row));
        }
        keyed.sort_by(|(a, _), (b, _)| {
            for (k, (_, ordering, descending)) in self.sort.iter().enumerate() {
                let mut o = sort_compare(&a[k], &b[k], *ordering);
                if *descending {
                    o = o.reverse();
                }
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        Ok(keyed.into_iter().map(|(_, row)| row).collect())
    }
}

pub(crate) fn aggregation_of(call: &Call) -> Result<Aggregation, EngineError> {
    if call.is("count") && call.args.is_empty() {
        return Ok(Aggregation::Count);
    }
    if call.is("sum") && call.args.len() == 1 {
        if let Some(path) = call.args[0].as_field() {
            return Ok(Aggregation::Sum(path.dotted()));
        }
    }
    Err(EngineError::InvalidQuery { message: format!("{}() is not supported in a group by (count() and sum(field) are)", call.name) })
}

/// JSON values compared the way RQL compares them: numbers numerically, strings case-insensitively.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64()?.partial_cmp(&y.as_f64()?),
        (Value::String(x), Value::String(y)) => Some(x.to_lowercase().cmp(&y.to_lowercase())),
        (Value::Number(x), Value::String(y)) | (Value::String(y), Value::Number(x)) => {
            let parsed: f64 = y.trim().parse().ok()?;
            let o = x.as_f64()?.partial_cmp(&parsed)?;
            Some(if matches!(a, Value::String(_)) { o.reverse() } else { o })
        }
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        _ => None,
    }
}

fn sort_compare(a: &Value, b: &Value, ordering: Option<OrderingType>) -> Ordering {
    match ordering {
        Some(OrderingType::Long | OrderingType::Double) => {
            let (x, y) = (a.as_f64().unwrap_or(f64::MIN), b.as_f64().unwrap_or(f64::MIN));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        _ => match (a, b) {
            (Value::Number(_), Value::Number(_)) => compare(a, b).unwrap_or(Ordering::Equal),
            _ => value_text(a).to_lowercase().cmp(&value_text(b).to_lowercase()),
        },
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
