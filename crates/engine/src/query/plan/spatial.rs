//! Spatial conditions and sorts: the spatial field (a static index's field, or `spatial.point(lat, lng)` /
//! `spatial.wkt(path)` of an automatic index) and the query shape.

use corvid_index::Shape;
use corvid_rql::{Arg, Call};

use super::error::{invalid, unsupported};
use super::where_clause::Translator;
use crate::indexing::AutoIndexField;
use crate::EngineError;

impl Translator<'_> {
    /// The spatial field of `spatial.within(field, …)`: a field name (static indexes),
    /// `spatial.point(LatPath, LngPath)` or `spatial.wkt(WktPath)` (automatic indexes).
    pub(super) fn spatial_field(&mut self, arg: Option<&Arg>, call: &Call) -> Result<String, EngineError> {
        let path = match arg {
            Some(Arg::Call(point)) if point.is("spatial.point") => {
                let (Some(lat), Some(lng)) = (point.args.first().and_then(Arg::as_field), point.args.get(1).and_then(Arg::as_field)) else {
                    return Err(invalid(format!("spatial.point() needs two field paths (at position {})", point.span.start)));
                };
                format!("spatial.point({},{})", self.path(&lat), self.path(&lng))
            }
            // A document field holding WKT (the client's `WktField`).
            Some(Arg::Call(wkt)) if wkt.is("spatial.wkt") => {
                let Some(path) = wkt.args.first().and_then(Arg::as_field) else {
                    return Err(invalid(format!("spatial.wkt() needs a field path here (at position {})", wkt.span.start)));
                };
                format!("spatial.wkt({})", self.path(&path))
            }
            Some(arg) => match arg.as_field() {
                Some(path) => self.path(&path),
                None => return Err(unsupported("This spatial field", self.text, arg.span())),
            },
            None => return Err(invalid(format!("{}() needs a spatial field (at position {})", call.name, call.span.start))),
        };
        self.needed.push(AutoIndexField { spatial: true, ..AutoIndexField::plain(&path) });
        Ok(path)
    }

    /// `spatial.circle(radius, lat, lng[, 'miles'|'kilometers'])` or `spatial.wkt('POLYGON((…))')`.
    pub(super) fn shape(&self, arg: Option<&Arg>, call: &Call) -> Result<Shape, EngineError> {
        let Some(Arg::Call(shape)) = arg else {
            return Err(invalid(format!(
                "{}() needs a shape: spatial.circle(...) or spatial.wkt(...) (at position {})",
                call.name, call.span.start
            )));
        };
        if shape.is("spatial.circle") {
            let radius = self.number_arg(shape.args.first(), "a radius", shape)?;
            let lat = self.number_arg(shape.args.get(1), "a latitude", shape)?;
            let lng = self.number_arg(shape.args.get(2), "a longitude", shape)?;
            let units = match shape.args.get(3) {
                None => "kilometers".to_owned(),
                Some(arg) => self.string_arg(Some(arg), "units ('kilometers' or 'miles')", shape)?.to_ascii_lowercase(),
            };
            let radius_km = match units.as_str() {
                "kilometers" | "km" => radius,
                "miles" | "mi" => radius * 1.609_344,
                other => return Err(invalid(format!("unknown distance units '{other}' (use 'kilometers' or 'miles')"))),
            };
            return Ok(Shape::Circle { lat, lng, radius_km });
        }
        if shape.is("spatial.wkt") {
            let text = self.string_arg(shape.args.first(), "a WKT shape", shape)?;
            return corvid_index::parse_wkt(&text).map_err(|e| invalid(e.to_string()));
        }
        Err(unsupported(&format!("The shape {}()", shape.name), self.text, shape.span))
    }
}
