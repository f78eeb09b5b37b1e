//! Spatial shapes: WKT parsing and how an indexed shape relates to a query shape.
//!
//! Geometry is planar on (x, y) = (longitude, latitude), as with RavenDB's geography fields at the scale of
//! cities and countries; on geography fields distances and circles are on the sphere (km), on cartesian ones
//! in the plane (coordinate units). Circles (`CIRCLE(x y d=radius)`, a spatial4j extension RavenDB accepts,
//! and `spatial.circle(...)`) stay exact against points and become a 64-sided polygon of their true radius
//! against other shapes. Shapes crossing the antimeridian or a pole are not handled specially.

use geo::{BoundingRect, Centroid, Contains, Coord, Geometry, Intersects, LineString, Point, Polygon};
use wkt::TryFromWkt;

use crate::spatial::earth::{distance_km, EARTH_RADIUS_KM};
use crate::{Shape, SpatialOptions, SpatialRelation};

/// Sides of the polygon that stands for a circle against non-point shapes.
const CIRCLE_SIDES: usize = 64;

/// Why a shape was refused; the messages are what the client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// `CIRCLE(…)` without `d=`.
    #[error("CIRCLE needs a radius: CIRCLE(lng lat d=radius)")]
    CircleWithoutRadius,
    /// `CIRCLE(…)` whose center is not two numbers.
    #[error("CIRCLE needs a center: CIRCLE(lng lat d=radius)")]
    CircleWithoutCenter,
    /// `CIRCLE(… d=x)` where x is not a number.
    #[error("the CIRCLE radius must be a number")]
    CircleRadiusNotANumber,
    /// A negative or infinite radius.
    #[error("the CIRCLE radius must be a positive number of kilometres")]
    NegativeCircleRadius,
    /// `ENVELOPE(…)` without four numbers.
    #[error("ENVELOPE needs four numbers: ENVELOPE(minX, maxX, maxY, minY)")]
    BadEnvelope,
    /// Text the WKT reader refused; `start` is its first 60 characters.
    #[error("invalid WKT shape '{start}': {reason} (POINT, LINESTRING, POLYGON, their MULTI forms, ENVELOPE and CIRCLE are supported)")]
    InvalidWkt {
        /// The first 60 characters of the text.
        start: String,
        /// The WKT reader's explanation.
        reason: String,
    },
    /// A polygon of fewer than three points.
    #[error("a POLYGON needs at least three points")]
    PolygonTooSmall,
    /// Coordinates off the globe on a geography field.
    #[error("shape coordinates must be longitude (-180..180) then latitude (-90..90)")]
    OffTheGlobe,
}

/// Callers that carry errors as messages keep the message.
/// A query or indexed shape written in WKT: `POINT`, `LINESTRING`, `POLYGON` (with holes), their `MULTI`
/// forms, `GEOMETRYCOLLECTION`, `ENVELOPE(minX, maxX, maxY, minY)`, `CIRCLE(x y d=radius)` and spatial4j's
/// rectangle shorthand `minX minY maxX maxY`. A point is a zero-radius circle. X is the longitude.
pub fn parse_wkt(text: &str) -> Result<Shape, ShapeError> {
    let trimmed = text.trim();
    if let Some([min_x, min_y, max_x, max_y]) = rectangle_shorthand(trimmed) {
        return Ok(rectangle(min_x, min_y, max_x, max_y));
    }
    if let Some(body) = wkt_body(trimmed, "CIRCLE") {
        let (center, radius) = body.split_once("d=").ok_or(ShapeError::CircleWithoutRadius)?;
        let (lat, lng) = single_pair(center).ok_or(ShapeError::CircleWithoutCenter)?;
        let radius_km: f64 = radius.trim().parse().map_err(|_| ShapeError::CircleRadiusNotANumber)?;
        if !(radius_km.is_finite() && radius_km >= 0.0) {
            return Err(ShapeError::NegativeCircleRadius);
        }
        return Ok(Shape::Circle { lat, lng, radius_km });
    }
    if let Some(body) = wkt_body(trimmed, "ENVELOPE") {
        let numbers: Vec<f64> =
            body.split(',').map(|n| n.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| ShapeError::BadEnvelope)?;
        let [min_x, max_x, max_y, min_y] = numbers[..] else { return Err(ShapeError::BadEnvelope) };
        return Ok(rectangle(min_x, min_y, max_x, max_y));
    }
    let geometry = Geometry::<f64>::try_from_wkt_str(trimmed)
        .map_err(|e| ShapeError::InvalidWkt { start: trimmed.chars().take(60).collect(), reason: e.to_string() })?;
    if let Geometry::Polygon(polygon) = &geometry {
        if polygon.exterior().0.len() < 4 {
            return Err(ShapeError::PolygonTooSmall);
        }
    }
    Ok(match geometry {
        Geometry::Point(p) => Shape::Circle { lat: p.y(), lng: p.x(), radius_km: 0.0 },
        other => Shape::Geometry(other),
    })
}

fn rectangle_shorthand(text: &str) -> Option<[f64; 4]> {
    let numbers: Vec<f64> = text.split_whitespace().map(|n| n.parse().ok()).collect::<Option<_>>()?;
    <[f64; 4]>::try_from(numbers).ok()
}

fn rectangle(min_x: f64, min_y: f64, max_x: f64, max_y: f64) -> Shape {
    let ring = vec![(min_x, min_y), (max_x, min_y), (max_x, max_y), (min_x, max_y), (min_x, min_y)];
    Shape::Geometry(Geometry::Polygon(Polygon::new(LineString::from(ring), vec![])))
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

/// Refuses coordinates off the globe on geography fields: in WKT the longitude comes first, an easy mistake.
pub fn check_geography(shape: &Shape) -> Result<(), ShapeError> {
    let valid = |lat: f64, lng: f64| (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lng);
    let ok = match shape {
        Shape::Circle { lat, lng, .. } => valid(*lat, *lng),
        Shape::Geometry(g) => g.bounding_rect().is_none_or(|r| valid(r.min().y, r.min().x) && valid(r.max().y, r.max().x)),
    };
    if ok {
        Ok(())
    } else {
        Err(ShapeError::OffTheGlobe)
    }
}

/// The distance between two points: km on the sphere, or plane units on cartesian fields.
pub(crate) fn distance(options: SpatialOptions, lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    if options.cartesian {
        (lat2 - lat1).hypot(lng2 - lng1)
    } else {
        distance_km(lat1, lng1, lat2, lng2)
    }
}

/// The geometry of a shape; circles become polygons of their radius.
fn to_geometry(shape: &Shape, options: SpatialOptions) -> Geometry<f64> {
    match shape {
        Shape::Circle { lat, lng, radius_km } if *radius_km <= 0.0 => Geometry::Point(Point::new(*lng, *lat)),
        Shape::Circle { lat, lng, radius_km } => Geometry::Polygon(circle_polygon(*lat, *lng, *radius_km, options)),
        Shape::Geometry(g) => g.clone(),
    }
}

/// Points at `radius` from the center in every direction (on geography fields, the spherical destination formula).
fn circle_polygon(lat: f64, lng: f64, radius: f64, options: SpatialOptions) -> Polygon<f64> {
    let (phi, lambda) = (lat.to_radians(), lng.to_radians());
    let delta = radius / EARTH_RADIUS_KM;
    let mut ring: Vec<Coord<f64>> = (0..CIRCLE_SIDES)
        .map(|i| {
            let theta = 2.0 * std::f64::consts::PI * i as f64 / CIRCLE_SIDES as f64;
            if options.cartesian {
                return Coord { x: lng + radius * theta.sin(), y: lat + radius * theta.cos() };
            }
            let phi2 = (phi.sin() * delta.cos() + phi.cos() * delta.sin() * theta.cos()).asin();
            let lambda2 = lambda + (theta.sin() * delta.sin() * phi.cos()).atan2(delta.cos() - phi.sin() * phi2.sin());
            Coord { x: lambda2.to_degrees(), y: phi2.to_degrees() }
        })
        .collect();
    ring.push(ring[0]);
    Polygon::new(LineString::new(ring), vec![])
}

/// Whether a point is in (or on) a query shape.
pub(crate) fn shape_contains(shape: &Shape, lat: f64, lng: f64, options: SpatialOptions) -> bool {
    match shape {
        Shape::Circle { lat: clat, lng: clng, radius_km } => {
            // A great-circle distance is at least the distance along the meridian, R·|Δlat|: this rejects most
            // far points of a radius query without the haversine's trigonometry (the margin absorbs rounding).
            if !options.cartesian && (lat - clat).abs().to_radians() * EARTH_RADIUS_KM > radius_km * (1.0 + 1e-9) + 1e-9 {
                return false;
            }
            distance(options, *clat, *clng, lat, lng) <= *radius_km
        }
        Shape::Geometry(g) => g.intersects(&Point::new(lng, lat)),
    }
}

/// The latitudes (degrees) a point must lie between to be in (or on) a query shape: the circle's extent along
/// its meridian (a great-circle distance is at least R·|Δlat|), or the shape's bounding rectangle. Widened by
/// a margin that absorbs rounding, so it never rejects a point [`shape_contains`] accepts.
pub(crate) fn latitude_band(shape: &Shape, options: SpatialOptions) -> Option<(f64, f64)> {
    let (low, high) = match shape {
        Shape::Circle { lat, radius_km, .. } => {
            let half = if options.cartesian { *radius_km } else { (radius_km / EARTH_RADIUS_KM).to_degrees() };
            (lat - half.max(0.0), lat + half.max(0.0))
        }
        Shape::Geometry(g) => {
            let r = g.bounding_rect()?;
            (r.min().y, r.max().y)
        }
    };
    let margin = 1e-9 * (1.0 + low.abs().max(high.abs()));
    Some((low - margin, high + margin))
}

/// The bounding rectangle of a shape as WKT (what a `BoundingBox` strategy field indexes).
pub(crate) fn bounding_box_wkt(shape: &Shape, options: SpatialOptions) -> Option<String> {
    let r = to_geometry(shape, options).bounding_rect()?;
    Some(format!("ENVELOPE({}, {}, {}, {})", r.min().x, r.max().x, r.max().y, r.min().y))
}

/// A query shape prepared once per query.
pub(crate) struct PreparedShape<'a> {
    shape: &'a Shape,
    geometry: Geometry<f64>,
    options: SpatialOptions,
}

impl<'a> PreparedShape<'a> {
    pub fn new(shape: &'a Shape, options: SpatialOptions) -> PreparedShape<'a> {
        PreparedShape { shape, geometry: to_geometry(shape, options), options }
    }

    pub fn contains_point(&self, lat: f64, lng: f64) -> bool {
        shape_contains(self.shape, lat, lng, self.options)
    }

    /// How an indexed (non-point) shape relates to the query shape.
    pub fn relates(&self, indexed: &Shape, relation: SpatialRelation) -> bool {
        let indexed = to_geometry(indexed, self.options);
        match relation {
            SpatialRelation::Intersects => indexed.intersects(&self.geometry),
            SpatialRelation::Disjoint => !indexed.intersects(&self.geometry),
            SpatialRelation::Within => self.geometry.contains(&indexed),
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
        PreparedShape::new(&query, SpatialOptions::default()).relates(&parse_wkt(indexed).unwrap(), relation)
    }

    #[test]
    fn parses_the_supported_forms() {
        assert_eq!(parse_wkt("CIRCLE(34.7 32.1 d=5)").unwrap(), Shape::Circle { lat: 32.1, lng: 34.7, radius_km: 5.0 });
        assert_eq!(parse_wkt(" point(2 1) ").unwrap(), Shape::Circle { lat: 1.0, lng: 2.0, radius_km: 0.0 });
        assert!(matches!(parse_wkt("LINESTRING(0 0, 1 1)").unwrap(), Shape::Geometry(Geometry::LineString(_))));
        assert!(matches!(parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (2 2, 3 2, 3 3, 2 2))").unwrap(), Shape::Geometry(_)));
        assert!(matches!(parse_wkt("MULTIPOLYGON(((0 0, 1 0, 1 1, 0 0)))").unwrap(), Shape::Geometry(Geometry::MultiPolygon(_))));
        assert_eq!(parse_wkt("ENVELOPE(0, 10, 10, 0)").unwrap(), parse_wkt("0 0 10 10").unwrap());
        assert_eq!(parse_wkt("0 0 10 10").unwrap(), parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))").unwrap());
    }

    #[test]
    fn refuses_bad_shapes_with_a_reason() {
        assert!(parse_wkt("TRIANGLE(0 0)").unwrap_err().to_string().contains("invalid WKT shape"));
        assert!(parse_wkt("POLYGON((0 0, 1 1))").is_err());
        assert!(check_geography(&parse_wkt("POINT(200 10)").unwrap()).unwrap_err().to_string().contains("longitude"));
        assert!(check_geography(&parse_wkt("POINT(20 10)").unwrap()).is_ok());
        assert!(parse_wkt("CIRCLE(1 2 d=-3)").is_err());
        assert!(parse_wkt("ENVELOPE(0, 1)").unwrap_err().to_string().contains("ENVELOPE"));
    }

    #[test]
    fn points_in_shapes() {
        let square = parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0), (4 4, 6 4, 6 6, 4 6, 4 4))").unwrap();
        let geo = SpatialOptions::default();
        assert!(shape_contains(&square, 2.0, 2.0, geo));
        assert!(!shape_contains(&square, 5.0, 5.0, geo), "in the hole");
        assert!(!shape_contains(&square, 5.0, 11.0, geo));
        assert!(shape_contains(&square, 0.0, 5.0, geo), "on the boundary");
        // Cartesian circles are Euclidean: (3, 4) is 5 units from the origin.
        let plane = SpatialOptions { cartesian: true, bounding_box: false };
        assert!(shape_contains(&Shape::Circle { lat: 0.0, lng: 0.0, radius_km: 5.0 }, 3.0, 4.0, plane));
        assert!(!shape_contains(&Shape::Circle { lat: 0.0, lng: 0.0, radius_km: 4.9 }, 3.0, 4.0, plane));
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
        let polygon = circle_polygon(32.0, 34.0, 50.0, SpatialOptions::default());
        for c in polygon.exterior().coords() {
            let d = distance_km(32.0, 34.0, c.y, c.x);
            assert!((d - 50.0).abs() < 0.01, "{d}");
        }
    }

    #[test]
    fn the_latitude_band_never_rejects_a_point_inside_the_circle() {
        let geo = SpatialOptions::default();
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..20_000 {
            let (clat, clng) = (next() * 170.0 - 85.0, next() * 360.0 - 180.0);
            let (lat, lng) = (clat + next() * 4.0 - 2.0, clng + next() * 4.0 - 2.0);
            let radius_km = next() * 300.0;
            let exact = distance_km(clat, clng, lat, lng) <= radius_km;
            assert_eq!(shape_contains(&Shape::Circle { lat: clat, lng: clng, radius_km }, lat, lng, geo), exact);
        }
        // Exactly on the circle along a meridian.
        let north = 32.0 + (50.0 / EARTH_RADIUS_KM).to_degrees();
        assert!(shape_contains(&Shape::Circle { lat: 32.0, lng: 34.0, radius_km: distance_km(32.0, 34.0, north, 34.0) }, north, 34.0, geo));
    }

    #[test]
    fn no_point_of_a_shape_lies_outside_its_latitude_band() {
        let mut state = 11u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let triangle = parse_wkt("POLYGON((10 10, 14 10, 12 13, 10 10))").unwrap();
        for options in [SpatialOptions::default(), SpatialOptions { cartesian: true, ..SpatialOptions::default() }] {
            for _ in 0..20_000 {
                let (clat, clng) = (next() * 170.0 - 85.0, next() * 360.0 - 180.0);
                let radius = next() * 300.0 * if options.cartesian { 0.01 } else { 1.0 };
                let (lat, lng) = (clat + next() * 6.0 - 3.0, clng + next() * 6.0 - 3.0);
                let circle = Shape::Circle { lat: clat, lng: clng, radius_km: radius };
                for (shape, lat, lng) in [(&circle, lat, lng), (&triangle, 9.0 + next() * 5.0, 9.0 + next() * 7.0)] {
                    let (low, high) = latitude_band(shape, options).unwrap();
                    if shape_contains(shape, lat, lng, options) {
                        assert!(low <= lat && lat <= high, "{shape:?} contains ({lat}, {lng}) outside {low}..{high}");
                    }
                }
            }
            // Exactly on the circle, due north and due south.
            let half = if options.cartesian { 0.5 } else { (50.0 / EARTH_RADIUS_KM).to_degrees() };
            let radius = if options.cartesian { 0.5 } else { distance_km(32.0, 34.0, 32.0 + half, 34.0) };
            let circle = Shape::Circle { lat: 32.0, lng: 34.0, radius_km: radius };
            let (low, high) = latitude_band(&circle, options).unwrap();
            for lat in [32.0 + half, 32.0 - half] {
                assert!(!shape_contains(&circle, lat, 34.0, options) || (low <= lat && lat <= high));
            }
        }
        assert_eq!(latitude_band(&triangle, SpatialOptions::default()).map(|(l, h)| (l.round(), h.round())), Some((10.0, 13.0)));
    }

    #[test]
    fn bounding_boxes() {
        let u_shape = parse_wkt("POLYGON ((0 0, 0 5, 1 5, 1 1, 5 1, 5 5, 6 5, 6 0, 0 0))").unwrap();
        let bbox = bounding_box_wkt(&u_shape, SpatialOptions::default()).unwrap();
        assert_eq!(parse_wkt(&bbox).unwrap(), parse_wkt("0 0 6 5").unwrap());
        // The U's opening does not meet the square inside it; its bounding box does.
        let inside = parse_wkt("2 2 4 4").unwrap();
        let prepared = PreparedShape::new(&inside, SpatialOptions::default());
        assert!(!prepared.relates(&u_shape, SpatialRelation::Intersects));
        assert!(prepared.relates(&parse_wkt(&bbox).unwrap(), SpatialRelation::Intersects));
    }

    #[test]
    fn centers() {
        assert_eq!(center(&parse_wkt("POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))").unwrap()), Some((1.0, 1.0)));
    }

    #[test]
    fn distances_and_shapes() {
        // Tel Aviv -> Jerusalem is about 54 km.
        let d = distance_km(32.0853, 34.7818, 31.7683, 35.2137);
        assert!((d - 54.0).abs() < 2.0, "{d}");
        let circle = Shape::Circle { lat: 32.0853, lng: 34.7818, radius_km: 60.0 };
        assert!(shape_contains(&circle, 31.7683, 35.2137, SpatialOptions::default()));
    }
}
