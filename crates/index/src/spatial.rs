//! Spatial fields and queries: points kept as two fast columns (latitude, longitude), shape filters
//! evaluated against them segment by segment, and distances on a sphere of the Earth's mean radius (what
//! RavenDB's spatial queries use). Indexed values are points; query shapes are circles and polygons.

use serde_json::Value as Json;
use tantivy::columnar::Column;
use tantivy::query::{BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{BitSet, DocId, Score, SegmentReader};

use crate::entry::values_at;
use crate::{Shape, SpatialRelation};

/// Lucene's / RavenDB's mean Earth radius.
pub const EARTH_RADIUS_KM: f64 = 6371.0087714;

/// Great-circle distance in kilometres (haversine).
pub fn distance_km(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = (lat2 - lat1).to_radians();
    let dl = (lng2 - lng1).to_radians();
    let a = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_KM * a.sqrt().min(1.0).asin()
}

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

/// WKT numbers `x y` (longitude first).
fn wkt_pairs(text: &str) -> Option<Vec<(f64, f64)>> {
    text.split(',')
        .map(|pair| {
            let mut parts = pair.split_whitespace();
            let lng: f64 = parts.next()?.parse().ok()?;
            let lat: f64 = parts.next()?.parse().ok()?;
            Some((lat, lng))
        })
        .collect()
}

fn wkt_body<'a>(text: &'a str, kind: &str) -> Option<&'a str> {
    let trimmed = text.trim();
    let head = trimmed.get(..kind.len())?;
    if !head.eq_ignore_ascii_case(kind) {
        return None;
    }
    let rest = trimmed[kind.len()..].trim();
    rest.strip_prefix('(')?.strip_suffix(')')
}

/// A query shape written in WKT: `POLYGON((lng lat, ...))`, `CIRCLE(lng lat d=radiusKm)`, `POINT(lng lat)` (a
/// point is a zero-radius circle). Units of circles are kilometres.
pub fn parse_wkt(text: &str) -> Result<Shape, String> {
    if let Some(body) = wkt_body(text, "POLYGON") {
        let ring = body.trim().strip_prefix('(').and_then(|b| b.split(')').next()).ok_or("POLYGON needs a ring: POLYGON((x y, ...))")?;
        let points = wkt_pairs(ring).ok_or("POLYGON coordinates must be numbers: POLYGON((lng lat, ...))")?;
        if points.len() < 3 {
            return Err("a POLYGON needs at least three points".into());
        }
        return Ok(Shape::Polygon(points));
    }
    if let Some(body) = wkt_body(text, "CIRCLE") {
        let (center, radius) = body.split_once("d=").ok_or("CIRCLE needs a radius: CIRCLE(lng lat d=radius)")?;
        let (lat, lng) =
            *wkt_pairs(center).and_then(|p| p.first().copied().map(|x| vec![x])).ok_or("bad CIRCLE center")?.first().expect("one");
        let radius: f64 = radius.trim().parse().map_err(|_| "the CIRCLE radius must be a number".to_owned())?;
        return Ok(Shape::Circle { lat, lng, radius_km: radius });
    }
    if let Some(body) = wkt_body(text, "POINT") {
        let (lat, lng) = *wkt_pairs(body).ok_or("POINT coordinates must be numbers")?.first().ok_or("POINT needs coordinates")?;
        return Ok(Shape::Circle { lat, lng, radius_km: 0.0 });
    }
    Err(format!("unsupported WKT shape '{}' (POINT, CIRCLE and POLYGON are supported)", text.chars().take(40).collect::<String>()))
}

/// A point from an indexed value: `{"Latitude": .., "Longitude": ..}` (any casing, `lat`/`lng`/`lon`),
/// `[lat, lng]`, or WKT `POINT(lng lat)`.
pub fn point_of(value: &Json) -> Option<(f64, f64)> {
    match value {
        Json::Object(map) => {
            let find =
                |names: &[&str]| map.iter().find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n))).and_then(|(_, v)| number(v));
            valid(find(&["Latitude", "lat"])?, find(&["Longitude", "lng", "lon", "long"])?)
        }
        Json::Array(items) if items.len() == 2 => valid(number(&items[0])?, number(&items[1])?),
        Json::String(text) => match parse_wkt(text) {
            Ok(Shape::Circle { lat, lng, radius_km: 0.0 }) => valid(lat, lng),
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

/// The points of a spatial field in an entry.
pub(crate) fn points_at(body: &Json, path: &str) -> Vec<(f64, f64)> {
    if let Some((lat_path, lng_path)) = point_paths(path) {
        let lats = values_at(body, lat_path);
        let lngs = values_at(body, lng_path);
        return lats.iter().zip(&lngs).filter_map(|(a, b)| valid(number(a)?, number(b)?)).collect();
    }
    values_at(body, path).into_iter().filter_map(point_of).collect()
}

/// Ray casting on (lng, lat) as plane coordinates: fine for the polygons of city or country scale that
/// spatial queries use.
fn in_polygon(lat: f64, lng: f64, ring: &[(f64, f64)]) -> bool {
    let mut inside = false;
    let mut j = ring.len() - 1;
    for i in 0..ring.len() {
        let (yi, xi) = ring[i];
        let (yj, xj) = ring[j];
        if (yi > lat) != (yj > lat) && lng < (xj - xi) * (lat - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        j = i;
    }
    inside
}

pub(crate) fn shape_contains(shape: &Shape, lat: f64, lng: f64) -> bool {
    match shape {
        Shape::Circle { lat: clat, lng: clng, radius_km } => distance_km(*clat, *clng, lat, lng) <= *radius_km,
        Shape::Polygon(ring) => in_polygon(lat, lng, ring),
    }
}

/// Entries whose points relate to a shape; evaluated per segment on the point columns.
#[derive(Debug, Clone)]
pub(crate) struct SpatialQuery {
    pub lat_column: String,
    pub lng_column: String,
    pub shape: Shape,
    pub relation: SpatialRelation,
}

impl Query for SpatialQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl SpatialQuery {
    fn matching(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let lats: Option<Column<f64>> = reader.fast_fields().f64(&self.lat_column).ok();
        let lngs: Option<Column<f64>> = reader.fast_fields().f64(&self.lng_column).ok();
        let mut out = Vec::new();
        for doc in 0..reader.max_doc() {
            let inside = match (&lats, &lngs) {
                (Some(lats), Some(lngs)) => {
                    lats.values_for_doc(doc).zip(lngs.values_for_doc(doc)).any(|(lat, lng)| shape_contains(&self.shape, lat, lng))
                }
                _ => false,
            };
            let has_point = lats.as_ref().is_some_and(|c| c.values_for_doc(doc).next().is_some());
            let keep = match self.relation {
                SpatialRelation::Disjoint => has_point && !inside,
                _ => inside,
            };
            if keep {
                out.push(doc);
            }
        }
        Ok(out)
    }
}

impl Weight for SpatialQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let mut docs = BitSet::with_max_value(reader.max_doc());
        for doc in self.matching(reader)? {
            docs.insert(doc);
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let matched = self.matching(reader)?.binary_search(&doc).is_ok();
        Ok(Explanation::new(if matched { "spatial match" } else { "no spatial match" }, if matched { 1.0 } else { 0.0 }))
    }
}

impl crate::DocumentIndex {
    /// Every match ordered by the distance of its nearest point from `origin` (entries without a point
    /// last), then paged; `descending` reverses it.
    pub(crate) fn collect_by_distance(
        &self,
        searcher: &tantivy::Searcher,
        query: &dyn Query,
        key: &crate::SortKey,
        origin: (f64, f64),
        skip: usize,
        take: usize,
    ) -> Result<(Vec<(tantivy::DocAddress, f32)>, usize), crate::IndexError> {
        let (_, handles) = self.schema.field(&key.field).ok_or_else(|| {
            crate::IndexError::InvalidQuery(format!("cannot sort by distance on '{}': the field is not indexed", key.field))
        })?;
        let (lat, lng) =
            handles.spatial.as_ref().ok_or_else(|| crate::IndexError::InvalidQuery(format!("'{}' is not a spatial field", key.field)))?;
        let matches = searcher.search(query, &tantivy::collector::DocSetCollector)?;
        let mut by_segment: std::collections::BTreeMap<u32, Vec<DocId>> = std::collections::BTreeMap::new();
        for address in matches {
            by_segment.entry(address.segment_ord).or_default().push(address.doc_id);
        }
        let mut scored: Vec<(f64, tantivy::DocAddress)> = Vec::new();
        for (segment, docs) in by_segment {
            let reader = searcher.segment_reader(segment);
            let lats: Option<Column<f64>> = reader.fast_fields().f64(&lat.name).ok();
            let lngs: Option<Column<f64>> = reader.fast_fields().f64(&lng.name).ok();
            for doc in docs {
                let nearest = match (&lats, &lngs) {
                    (Some(a), Some(b)) => a
                        .values_for_doc(doc)
                        .zip(b.values_for_doc(doc))
                        .map(|(la, ln)| distance_km(origin.0, origin.1, la, ln))
                        .fold(f64::INFINITY, f64::min),
                    _ => f64::INFINITY,
                };
                scored.push((nearest, tantivy::DocAddress::new(segment, doc)));
            }
        }
        scored.sort_by(|a, b| {
            let order = a.0.total_cmp(&b.0);
            (if key.descending { order.reverse() } else { order }).then(a.1.cmp(&b.1))
        });
        let total = scored.len();
        Ok((scored.into_iter().skip(skip).take(take).map(|(_, address)| (address, 0.0)).collect(), total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn distances_and_shapes() {
        // Tel Aviv -> Jerusalem is about 54 km.
        let d = distance_km(32.0853, 34.7818, 31.7683, 35.2137);
        assert!((d - 54.0).abs() < 2.0, "{d}");
        let circle = Shape::Circle { lat: 32.0853, lng: 34.7818, radius_km: 60.0 };
        assert!(shape_contains(&circle, 31.7683, 35.2137));
        let square = parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))").unwrap();
        assert!(shape_contains(&square, 5.0, 5.0) && !shape_contains(&square, 5.0, 11.0));
        assert_eq!(parse_wkt("CIRCLE(34.7 32.1 d=5)").unwrap(), Shape::Circle { lat: 32.1, lng: 34.7, radius_km: 5.0 });
        assert!(parse_wkt("LINESTRING(0 0, 1 1)").is_err());
    }

    #[test]
    fn points_from_values_and_paths() {
        assert_eq!(point_of(&json!({"Latitude": 1.5, "longitude": 2})), Some((1.5, 2.0)));
        assert_eq!(point_of(&json!("POINT(2 1)")), Some((1.0, 2.0)));
        assert_eq!(point_of(&json!([91, 0])), None);
        let body = json!({"Lat": 10, "Lng": 20, "Places": [{"P": {"lat": 1, "lng": 2}}]});
        assert_eq!(points_at(&body, "spatial.point(Lat, Lng)"), vec![(10.0, 20.0)]);
        assert_eq!(points_at(&body, "Places[].P"), vec![(1.0, 2.0)]);
    }

    #[test]
    fn radius_filters_and_distance_order_through_the_index() {
        use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, SortKey, SortKind};
        let dir = tempfile::tempdir().unwrap();
        let spec = IndexSpec {
            fields: vec![FieldSpec { path: "spatial.point(Lat,Lng)".into(), search: false, exact: false, spatial: true, analyzer: None }],
        };
        let index = DocumentIndex::open_or_create(dir.path(), &spec).unwrap();
        let places = [("tlv", 32.0853, 34.7818), ("jlm", 31.7683, 35.2137), ("hfa", 32.7940, 34.9896), ("nyc", 40.7128, -74.0060)];
        let docs: Vec<MappedDocument> =
            places.iter().map(|(k, lat, lng)| MappedDocument { key: (*k).into(), body: json!({"Lat": lat, "Lng": lng}) }).collect();
        index.apply(&docs, &[], 4).unwrap();
        let field = "spatial.point(Lat,Lng)".to_owned();
        let near_tlv = Filter::Spatial {
            field: field.clone(),
            shape: Shape::Circle { lat: 32.0853, lng: 34.7818, radius_km: 100.0 },
            relation: SpatialRelation::Within,
        };
        let by_distance =
            [SortKey { field: field.clone(), kind: SortKind::Distance { lat_e7: 320_853_000, lng_e7: 347_818_000 }, descending: false }];
        let found = index.search(&near_tlv, &by_distance, 0, 10).unwrap();
        assert_eq!(found.keys, vec!["tlv", "jlm", "hfa"]);
        let far = Filter::Spatial {
            field: field.clone(),
            shape: Shape::Circle { lat: 32.0853, lng: 34.7818, radius_km: 100.0 },
            relation: SpatialRelation::Disjoint,
        };
        assert_eq!(index.search(&far, &[], 0, 10).unwrap().keys, vec!["nyc"]);
    }
}
