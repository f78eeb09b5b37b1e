//! `order by` (sort keys for the index, or a random order) and paging (`limit` / `offset`).

use corvid_index::{SortKey, SortKind, Value as IndexValue};
use corvid_rql::{Arg, Operand, OrderingType, Query, ValueKind};
use serde_json::Value as Json;

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::EngineError;

/// `order by random()`: results shuffled with a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RandomOrder {
    /// `random('seed')`: the same order every time.
    Seeded(u64),
    /// `random()`: a new order each time the query runs (seeded from the clock then).
    Unseeded,
}

/// The sort keys of `order by` (none for `random()`); sorted fields are needed in the index.
pub(super) fn order_by(query: &Query, t: &mut Translator<'_>) -> Result<Vec<SortKey>, EngineError> {
    let mut sort = Vec::new();
    for field in &query.order_by {
        match &field.expr {
            Operand::Field(path) => {
                let path = t.path(path);
                t.need(&path, false, false);
                let kind = match field.ordering {
                    None | Some(OrderingType::String) => SortKind::String,
                    Some(OrderingType::Long) => SortKind::Long,
                    Some(OrderingType::Double) => SortKind::Double,
                    Some(OrderingType::AlphaNumeric) => SortKind::AlphaNumeric,
                };
                sort.push(SortKey { field: path, kind, descending: field.descending });
            }
            Operand::Call(call) if call.is("score") => {
                sort.push(SortKey { field: String::new(), kind: SortKind::Score, descending: field.descending })
            }
            Operand::Call(call) if call.is("random") => {} // handled by random_order()
            Operand::Call(call) if call.is("spatial.distance") => {
                let spatial = t.spatial_field(call.args.first(), call)?;
                let (lat, lng) = match call.args.get(1) {
                    Some(Arg::Call(point)) if point.is("spatial.point") => {
                        (t.number_arg(point.args.first(), "a latitude", point)?, t.number_arg(point.args.get(1), "a longitude", point)?)
                    }
                    // `order_by_distance_wkt`: the distance from the shape's center.
                    Some(Arg::Call(wkt)) if wkt.is("spatial.wkt") => {
                        let shape = corvid_index::parse_wkt(&t.string_arg(wkt.args.first(), "a WKT shape", wkt)?)
                            .map_err(|e| invalid(e.to_string()))?;
                        corvid_index::shape_center(&shape).ok_or_else(|| invalid("spatial.distance() needs a non-empty shape"))?
                    }
                    _ => {
                        return Err(invalid(format!(
                            "spatial.distance() needs spatial.point(lat, lng) or spatial.wkt(...) as its origin (at position {})",
                            call.span.start
                        )))
                    }
                };
                let kind = SortKind::Distance { lat_e7: (lat * 1e7).round() as i64, lng_e7: (lng * 1e7).round() as i64 };
                sort.push(SortKey { field: spatial, kind, descending: field.descending });
            }
            Operand::Call(call) => return Err(unsupported(&format!("order by {}()", call.name), t.text, call.span)),
            Operand::Value(v) => return Err(unsupported("order by a constant", t.text, v.span)),
        }
    }
    Ok(sort)
}

/// The order of `order by random()` / `random('seed')`, if the query orders randomly.
pub(super) fn random_order(query: &Query, t: &Translator<'_>) -> Result<Option<RandomOrder>, EngineError> {
    for field in &query.order_by {
        if let Operand::Call(call) = &field.expr {
            if call.is("random") {
                let seed = match call.args.first() {
                    Some(Arg::Value(v)) => format!("{:?}", t.value(v)?),
                    Some(other) => other.to_string(),
                    None => return Ok(Some(RandomOrder::Unseeded)),
                };
                return Ok(Some(RandomOrder::Seeded(crate::reads::VersionHasher::of(&seed) | 1)));
            }
        }
    }
    Ok(None)
}

/// `offset`/`limit` from the query. A parameter that is null or not provided means "not given", as in
/// RavenDB: the Node client sends `limit $p0, $p1` with an undefined offset (dropped from its JSON).
pub(super) fn paging(value: Option<&corvid_rql::Value>, t: &Translator<'_>, what: &str) -> Result<Option<usize>, EngineError> {
    let Some(value) = value else { return Ok(None) };
    if let ValueKind::Parameter(name) = &value.kind {
        if matches!(t.parameters.get(name.as_str()), None | Some(Json::Null)) {
            return Ok(None);
        }
    }
    match t.value(value)? {
        IndexValue::Null => Ok(None),
        IndexValue::Long(n) if n >= 0 => Ok(Some(n as usize)),
        _ => Err(invalid(format!("'{what}' must be a non-negative integer (at position {})", value.span.start))),
    }
}
