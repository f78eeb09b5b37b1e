//! The values of a spatial field in a document: points (objects, pairs, WKT points) and other shapes as WKT.

use serde_json::Value as Json;

use crate::field_path::values_at;
use crate::spatial::shapes::{bounding_box_wkt, check_geography, parse_wkt};
use crate::{Shape, SpatialOptions};

fn valid(lat: f64, lng: f64) -> Option<(f64, f64)> {
    ((-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lng)).then_some((lat, lng))
}

fn number(value: &Json) -> Option<f64> {
    match value {
        Json::Number(n) => n.as_f64(),
        Json::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A point from an indexed value: `{"Latitude": .., "Longitude": ..}` (any casing, `lat`/`lng`/`lon`),
/// `[lat, lng]`, or WKT `POINT(lng lat)`.
pub fn point_of(value: &Json) -> Option<(f64, f64)> {
    let (lat, lng) = point_of_any(value)?;
    valid(lat, lng)
}

/// [`point_of`] without the geography range check.
fn point_of_any(value: &Json) -> Option<(f64, f64)> {
    match value {
        Json::Object(map) => {
            let find =
                |names: &[&str]| map.iter().find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n))).and_then(|(_, v)| number(v));
            Some((find(&["Latitude", "lat"])?, find(&["Longitude", "lng", "lon", "long"])?))
        }
        Json::Array(items) if items.len() == 2 => Some((number(&items[0])?, number(&items[1])?)),
        Json::String(text) => match parse_wkt(text) {
            Ok(Shape::Circle { lat, lng, radius_km: 0.0 }) => Some((lat, lng)),
            _ => None,
        },
        _ => None,
    }
}

/// Splits `spatial.point(a, b)` into its two coordinate paths.
fn point_paths(path: &str) -> Option<(&str, &str)> {
    let inner = path.strip_prefix("spatial.point(")?.strip_suffix(')')?;
    let (lat, lng) = inner.split_once(',')?;
    Some((lat.trim(), lng.trim()))
}

/// The values of a spatial field in an entry: points, and other shapes as WKT (values that are neither are
/// skipped, as RavenDB skips them).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SpatialValues {
    pub points: Vec<(f64, f64)>,
    pub shapes: Vec<String>,
}

pub(crate) fn spatial_values_at(body: &Json, path: &str, options: SpatialOptions) -> SpatialValues {
    let coordinates = |lat: f64, lng: f64| if options.cartesian { Some((lat, lng)) } else { valid(lat, lng) };
    if let Some((lat_path, lng_path)) = point_paths(path) {
        let lats = values_at(body, lat_path);
        let lngs = values_at(body, lng_path);
        let points = lats.iter().zip(&lngs).filter_map(|(a, b)| coordinates(number(a)?, number(b)?)).collect();
        return SpatialValues { points, shapes: Vec::new() };
    }
    let path = path.strip_prefix("spatial.wkt(").and_then(|p| p.strip_suffix(')')).unwrap_or(path);
    let mut values = SpatialValues::default();
    for value in values_at(body, path) {
        let shape = match value {
            Json::String(text) => parse_wkt(text).ok(),
            other => point_of_any(other).map(|(lat, lng)| Shape::Circle { lat, lng, radius_km: 0.0 }),
        };
        match shape {
            None => {}
            Some(shape) if !options.cartesian && check_geography(&shape).is_err() => {}
            Some(Shape::Circle { lat, lng, radius_km: 0.0 }) => values.points.push((lat, lng)),
            Some(shape) if options.bounding_box => values.shapes.extend(bounding_box_wkt(&shape, options)),
            Some(_) => values.shapes.push(value.as_str().unwrap_or_default().trim().to_owned()),
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn points_from_values_and_paths() {
        assert_eq!(point_of(&json!({"Latitude": 1.5, "longitude": 2})), Some((1.5, 2.0)));
        assert_eq!(point_of(&json!("POINT(2 1)")), Some((1.0, 2.0)));
        assert_eq!(point_of(&json!([91, 0])), None);
        let geo = SpatialOptions::default();
        let body = json!({"Lat": 10, "Lng": 20, "Places": [{"P": {"lat": 1, "lng": 2}}]});
        assert_eq!(spatial_values_at(&body, "spatial.point(Lat, Lng)", geo).points, vec![(10.0, 20.0)]);
        assert_eq!(spatial_values_at(&body, "Places[].P", geo).points, vec![(1.0, 2.0)]);
        assert_eq!(spatial_values_at(&json!({"W": "POINT(2 1)"}), "spatial.wkt(W)", geo).points, vec![(1.0, 2.0)]);
        let mixed = json!({"Areas": ["POINT(2 1)", " POLYGON((0 0, 1 0, 1 1, 0 0)) ", "nowhere", 7]});
        assert_eq!(
            spatial_values_at(&mixed, "Areas[]", geo),
            SpatialValues { points: vec![(1.0, 2.0)], shapes: vec!["POLYGON((0 0, 1 0, 1 1, 0 0))".into()] }
        );
        let plane = SpatialOptions { cartesian: true, bounding_box: true };
        assert_eq!(
            spatial_values_at(&json!({"S": ["POINT(500 300)", "POLYGON((0 0, 600 0, 0 400, 0 0))"]}), "S", plane),
            SpatialValues { points: vec![(300.0, 500.0)], shapes: vec!["ENVELOPE(0, 600, 400, 0)".into()] }
        );
        assert_eq!(spatial_values_at(&json!({"S": "POINT(500 300)"}), "S", geo), SpatialValues::default());
    }
}
