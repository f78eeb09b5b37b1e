//! Spatial shapes: WKT parsing and how an indexed shape relates to a query shape.
//!
//! Geometry is planar on (longitude, latitude), as with RavenDB's geography fields at the scale of cities
//! and countries; distances and circles are on the sphere. Circles (`CIRCLE(lng lat d=km)`, a spatial4j
//! extension RavenDB accepts, and `spatial.circle(...)`) stay exact against points and become a 64-sided
//! polygon of their true radius against other shapes. Shapes crossing the antimeridian or a pole are not
//! handled specially.

use geo::{BoundingRect, Centroid, Contains, Coord, Geometry, Intersects, LineString, Point, Polygon, Relate};
use wkt::TryFromWkt;

use crate::spatial::{distance_km, EARTH_RADIUS_KM};
use crate::{Shape, SpatialRelation};

/// Sides of the polygon that stands for a circle against non-point shapes.
const CIRCLE_SIDES: usize = 64;

/// A query or indexed shape written in WKT: `POINT`, `LINESTRING`, `POLYGON` (with holes), their `MULTI`
/// forms, `GEOMETRYCOLLECTION`, `ENVELOPE(minX, maxX, maxY, minY)` and `CIRCLE(lng lat d=radiusKm)`. A point
/// is a zero-radius circle. X is the longitude.
pub fn parse_wkt(text: &str) -> Result<Shape, String> {
    let trimmed = text.trim();
    if let Some(body) = wkt_body(trimmed, "CIRCLE") {
        let (center, radius) = body.split_once("d=").ok_or("CIRCLE needs a radius: CIRCLE(lng lat d=radius)")?;
        let (lat, lng) = single_pair(center).ok_or("CIRCLE needs a center: CIRCLE(lng lat d=radius)")?;
        let radius_km: f64 = radius.trim().parse().map_err(|_| "the CIRCLE radius must be a number".to_owned())?;
        if !(radius_km.is_finite() && radius_km >= 0.0) {
            return Err("the CIRCLE radius must be a positive number of kilometres".into());
        }
        return checked(Shape::Circle { lat, lng, radius_km });
    }
    if let Some(body) = wkt_body(trimmed, "ENVELOPE") {
        let numbers: Vec<f64> = body.split(',').map(|n| n.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| envelope_help())?;
        let [min_x, max_x, max_y, min_y] = numbers[..] else { return Err(envelope_help()) };
        let ring = vec![(min_x, min_y), (max_x, min_y), (max_x, max_y), (min_x, max_y), (min_x, min_y)];
        return checked(Shape::Geometry(Geometry::Polygon(Polygon::new(LineString::from(ring), vec![]))));
    }
    let geometry = Geometry::<f64>::try_from_wkt_str(trimmed).map_err(|e| {
        format!(
            "invalid WKT shape '{}': {e} (POINT, LINESTRING, POLYGON, their MULTI forms, ENVELOPE and CIRCLE are supported)",
            trimmed.chars().take(60).collect::<String>()
        )
    })?;
    if let Geometry::Polygon(polygon) = &geometry {
        if polygon.exterior().0.len() < 4 {
            return Err("a POLYGON needs at least three points".into());
        }
    }
    match geometry {
        Geometry::Point(p) => checked(Shape::Circle { lat: p.y(), lng: p.x(), radius_km: 0.0 }),
        other => checked(Shape::Geometry(other)),
    }
}

fn envelope_help() -> String {
    "ENVELOPE needs four numbers: ENVELOPE(minX, maxX, maxY, minY)".into()
}

fn wkt_body<'a>(text: &'a str, kind: &str) -> Option<&'a str> {
    let head = text.get(..kind.len())?;
    if !head.eq_ignore_ascii_case(kind) {
        return None;
    }
    text[kind.len()..].trim().strip_prefix('(')?.strip_suffix(')')
}

/// `x y` as (lat, lng).
fn single_pair(text: &str) -> Option<(f64, f64)> {
    let mut parts = text.split_whitespace();
    let lng = parts.next()?.parse().ok()?;
    let lat = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((lat, lng))
}

/// Refuses coordinates off the globe: in WKT the longitude comes first, an easy mistake to make.
fn checked(shape: Shape) -> Result<Shape, String> {
    let valid = |lat: f64, lng: f64| (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lng);
    let ok = match &shape {
        Shape::Circle { lat, lng, .. } => valid(*lat, *lng),
        Shape::Geometry(g) => g.bounding_rect().is_none_or(|r| valid(r.min().y, r.min().x) && valid(r.max().y, r.max().x)),
    };
    if ok {
        Ok(shape)
    } else {
        Err("shape coordinates must be longitude (-180..180) then latitude (-90..90)".into())
    }
}

/// The geometry of a shape; circles become polygons of their radius on the sphere.
fn to_geometry(shape: &Shape) -> Geometry<f64> {
    match shape {
        Shape::Circle { lat, lng, radius_km } if *radius_km <= 0.0 => Geometry::Point(Point::new(*lng, *lat)),
        Shape::Circle { lat, lng, radius_km } => Geometry::Polygon(circle_polygon(*lat, *lng, *radius_km)),
        Shape::Geometry(g) => g.clone(),
    }
}

/// Points at `radius_km` from the center in every direction (the spherical destination formula).
fn circle_polygon(lat: f64, lng: f64, radius_km: f64) -> Polygon<f64> {
    let (phi, lambda) = (lat.to_radians(), lng.to_radians());
    let delta = radius_km / EARTH_RADIUS_KM;
    let mut ring: Vec<Coord<f64>> = (0..CIRCLE_SIDES)
        .map(|i| {
            let theta = 2.0 * std::f64::consts::PI * i as f64 / CIRCLE_SIDES as f64;
            let phi2 = (phi.sin() * delta.cos() + phi.cos() * delta.sin() * theta.cos()).asin();
            let lambda2 = lambda + (theta.sin() * delta.sin() * phi.cos()).atan2(delta.cos() - phi.sin() * phi2.sin());
            Coord { x: lambda2.to_degrees(), y: phi2.to_degrees() }
        })
        .collect();
    ring.push(ring[0]);
    Polygon::new(LineString::new(ring), vec![])
}

/// Whether a point is in (or on) a query shape.
pub(crate) fn shape_contains(shape: &Shape, lat: f64, lng: f64) -> bool {
    match shape {
        Shape::Circle { lat: clat, lng: clng, radius_km } => distance_km(*clat, *clng, lat, lng) <= *radius_km,
        Shape::Geometry(g) => g.intersects(&Point::new(lng, lat)),
    }
}

/// A query shape prepared once per query.
pub(crate) struct PreparedShape<'a> {
    shape: &'a Shape,
    geometry: Geometry<f64>,
}

impl<'a> PreparedShape<'a> {
    pub fn new(shape: &'a Shape) -> PreparedShape<'a> {
        PreparedShape { shape, geometry: to_geometry(shape) }
    }

    pub fn contains_point(&self, lat: f64, lng: f64) -> bool {
        shape_contains(self.shape, lat, lng)
    }

    /// How an indexed (non-point) shape relates to the query shape.
    pub fn relates(&self, indexed: &Shape, relation: SpatialRelation) -> bool {
        let indexed = to_geometry(indexed);
        match relation {
            SpatialRelation::Intersects => indexed.intersects(&self.geometry),
            SpatialRelation::Disjoint => !indexed.intersects(&self.geometry),
            SpatialRelation::Within => self.geometry.relate(&indexed).is_contains(),
            SpatialRelation::Contains => match &self.geometry {
                Geometry::Point(p) => indexed.intersects(p),
                query => indexed.contains(query),
            },
        }
    }
}

/// Where distances to an indexed shape are measured from: its centroid.
pub fn center(shape: &Shape) -> Option<(f64, f64)> {
    match shape {
        Shape::Circle { lat, lng, .. } => Some((*lat, *lng)),
        Shape::Geometry(g) => g.centroid().map(|c| (c.y(), c.x())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relates(indexed: &str, query: &str, relation: SpatialRelation) -> bool {
        let query = parse_wkt(query).unwrap();
        PreparedShape::new(&query).relates(&parse_wkt(indexed).unwrap(), relation)
    }

    #[test]
    fn parses_the_supported_forms() {
        assert_eq!(parse_wkt("CIRCLE(34.7 32.1 d=5)").unwrap(), Shape::Circle { lat: 32.1, lng: 34.7, radius_km: 5.0 });
        assert_eq!(parse_wkt(" point(2 1) ").unwrap(), Shape::Circle { lat: 1.0, lng: 2.0, radius_km: 0.0 });
        assert!(matches!(parse_wkt("LINESTRING(0 0, 1 1)").unwrap(), Shape::Geometry(Geometry::LineString(_))));
        assert!(matches!(parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 3 2, 3 3, 2 2))").unwrap(), Shape::Geometry(_)));
        assert!(matches!(parse_wkt("MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))").unwrap(), Shape::Geometry(Geometry::MultiPolygon(_))));
        assert!(matches!(parse_wkt("ENVELOPE(0, 10, 10, 0)").unwrap(), Shape::Geometry(Geometry::Polygon(_))));
    }

    #[test]
    fn refuses_bad_shapes_with_a_reason() {
        assert!(parse_wkt("TRIANGLE(0 0)").unwrap_err().contains("invalid WKT shape"));
        assert!(parse_wkt("POLYGON((0 0, 1 1))").is_err());
        assert!(parse_wkt("POINT(200 10)").unwrap_err().contains("longitude"));
        assert!(parse_wkt("CIRCLE(1 2 d=-3)").is_err());
        assert!(parse_wkt("ENVELOPE(0, 1)").unwrap_err().contains("ENVELOPE"));
    }

    #[test]
    fn points_in_shapes() {
        let square = parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (4 4, 6 4, 6 6, 4 6, 4 4))").unwrap();
        assert!(shape_contains(&square, 2.0, 2.0));
        assert!(!shape_contains(&square, 5.0, 5.0), "in the hole");
        assert!(!shape_contains(&square, 5.0, 11.0));
        assert!(shape_contains(&square, 0.0, 5.0), "on the boundary");
    }

    #[test]
    fn indexed_shapes_against_query_shapes() {
        let big = "POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))";
        let small = "POLYGON((2 2, 3 2, 3 3, 2 3, 2 2))";
        let apart = "POLYGON((20 20, 21 20, 21 21, 20 21, 20 20))";
        let crossing = "LINESTRING(-5 5, 5 5)";
        use SpatialRelation::*;
        assert!(relates(small, big, Within) && !relates(big, small, Within));
        assert!(relates(big, small, Contains) && !relates(small, big, Contains));
        assert!(relates(crossing, big, Intersects) && !relates(crossing, big, Within));
        assert!(relates(apart, big, Disjoint) && !relates(apart, big, Intersects));
        assert!(relates(big, "POINT(5 5)", Contains));
        // A circle of 200 km around (5, 5) is inside the 10-degree square (about 1,100 km wide).
        assert!(relates("CIRCLE(5 5 d=200)", big, Within));
        assert!(relates(big, "CIRCLE(5 5 d=200)", Contains));
        assert!(!relates(apart, "CIRCLE(5 5 d=200)", Intersects));
        assert!(relates(apart, "CIRCLE(5 5 d=3000)", Intersects));
    }

    #[test]
    fn circle_polygon_has_the_radius() {
        let polygon = circle_polygon(32.0, 34.0, 50.0);
        for c in polygon.exterior().coords() {
            let d = distance_km(32.0, 34.0, c.y, c.x);
            assert!((d - 50.0).abs() < 0.01, "{d}");
        }
    }

    #[test]
    fn centers() {
        assert_eq!(center(&parse_wkt("POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))").unwrap()), Some((1.0, 1.0)));
    }
}
