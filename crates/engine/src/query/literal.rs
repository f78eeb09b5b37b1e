//! The value of an RQL literal or `$parameter` where a query compares documents itself (the `filter`
//! clause, `group by` result filters) rather than through an index.

use corvid_rql::ValueKind;
use serde_json::{Map, Value};

use crate::EngineError;

pub(crate) fn literal_value(kind: &ValueKind, parameters: &Map<String, Value>) -> Result<Value, EngineError> {
    Ok(match kind {
        ValueKind::String(s) => Value::from(s.clone()),
        ValueKind::Long(n) => Value::from(*n),
        ValueKind::Double(d) => Value::from(*d),
        ValueKind::Bool(b) => Value::from(*b),
        ValueKind::Null => Value::Null,
        ValueKind::Parameter(p) => parameters
            .get(p)
            .cloned()
            .ok_or_else(|| EngineError::InvalidQuery { message: format!("Query parameter '{p}' was not provided") })?,
    })
}
