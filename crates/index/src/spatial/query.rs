//! The spatial filter as a tantivy query: evaluated per segment on the spatial columns.

use tantivy::query::{BitSetDocSet, ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{BitSet, DocId, Score, SegmentReader};

use crate::schema::SpatialColumns;
use crate::spatial::segment_shapes::SegmentShapes;
use crate::spatial::shapes::{latitude_band, PreparedShape};
use crate::{Shape, SpatialRelation};

/// Entries whose points or shapes relate to a query shape; evaluated per segment on the spatial columns.
#[derive(Debug, Clone)]
pub(crate) struct SpatialQuery {
    pub columns: SpatialColumns,
    pub shape: Shape,
    pub relation: SpatialRelation,
}

impl Query for SpatialQuery {
    fn weight(&self, _: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl SpatialQuery {
    /// The entries that may relate to the query shape. Unless the relation is `disjoint` or the segment holds
    /// shapes other than points, only entries with a point in the shape's latitude band can: the latitude
    /// column finds them without reading every entry (a radius query over 500k points read them all, 12 ms).
    fn candidates(&self, reader: &SegmentReader, columns: &SegmentShapes) -> Vec<DocId> {
        let band = latitude_band(&self.shape, self.columns.options);
        let Some((low, high)) = band.filter(|_| self.relation != SpatialRelation::Disjoint && !columns.has_shapes()) else {
            return (0..reader.max_doc()).collect();
        };
        // Without a latitude column the segment holds no point, and no shape either.
        let Some(lats) = &columns.lats else { return Vec::new() };
        let mut docs = Vec::new();
        lats.get_docids_for_value_range(low..=high, 0..reader.max_doc(), &mut docs);
        // An entry with several points in the band is listed once per point.
        docs.dedup();
        docs
    }

    fn matching(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let columns = SegmentShapes::open(reader, &self.columns)?;
        let query = PreparedShape::new(&self.shape, self.columns.options);
        let mut out = Vec::new();
        for doc in self.candidates(reader, &columns) {
            // A point is within, intersects and (leniently, as RavenDB answers for points) contains the
            // shapes it lies in.
            let mut any = false;
            let mut relates = false;
            for (lat, lng) in columns.points(doc) {
                any = true;
                if query.contains_point(lat, lng) {
                    relates = true;
                    break;
                }
            }
            let keep = if self.relation == SpatialRelation::Disjoint {
                // Disjoint: the entry has a value and none of its values meets the shape.
                let shapes = columns.shapes(doc);
                (any || !shapes.is_empty()) && !relates && shapes.iter().all(|s| query.relates(s, SpatialRelation::Disjoint))
            } else {
                relates || columns.shapes(doc).iter().any(|s| query.relates(s, self.relation))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::spatial::shapes::{parse_wkt, shape_contains};
    use crate::SpatialOptions;

    #[test]
    fn radius_filters_and_distance_order_through_the_index() {
        use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, SortKey, SortKind};
        let dir = tempfile::tempdir().unwrap();
        let spec = IndexSpec { fields: vec![FieldSpec { spatial: true, ..FieldSpec::new("spatial.point(Lat,Lng)") }] };
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

    #[test]
    fn radius_and_polygon_queries_find_every_entry_a_scan_finds() {
        use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument};
        let dir = tempfile::tempdir().unwrap();
        let spec = IndexSpec { fields: vec![FieldSpec { spatial: true, ..FieldSpec::new("Where") }] };
        let index = DocumentIndex::open_or_create(dir.path(), &spec).unwrap();
        let mut state = 5u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        // Entries of one to three points around (32, 34), some without any; several commits, so several
        // segments, and updates and deletes, so deleted entries in them.
        let mut points: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
        for round in 0..4 {
            let mut docs = Vec::new();
            for _ in 0..300 {
                let key = format!("p{}", (next() * 600.0) as u32);
                let n = (next() * 4.0) as usize;
                let entry: Vec<(f64, f64)> = (0..n).map(|_| (32.0 + next() * 4.0 - 2.0, 34.0 + next() * 4.0 - 2.0)).collect();
                let wkt: Vec<String> = entry.iter().map(|(lat, lng)| format!("POINT({lng} {lat})")).collect();
                docs.retain(|d: &MappedDocument| d.key != key);
                docs.push(MappedDocument { key: key.clone(), body: json!({"Where": wkt}) });
                points.insert(key, entry);
            }
            let deleted: Vec<String> = (0..20).map(|_| format!("p{}", (next() * 600.0) as u32)).collect();
            docs.retain(|d| !deleted.contains(&d.key));
            for key in &deleted {
                points.remove(key);
            }
            index.apply(&docs, &deleted, round + 1).unwrap();
        }
        // Points only, so queries take the latitude band.
        let columns = index.schema.fields[0].spatial.clone().unwrap();
        let searcher = index.reader.searcher();
        assert!(searcher.segment_readers().len() > 1);
        for segment in searcher.segment_readers() {
            let shapes = SegmentShapes::open(segment, &columns).unwrap();
            assert!(shapes.lats.is_some() && !shapes.has_shapes());
        }
        let geo = SpatialOptions::default();
        let square = parse_wkt("POLYGON((33.5 31.5, 34.5 31.5, 34.5 32.5, 33.5 32.5, 33.5 31.5))").unwrap();
        let mut shapes: Vec<Shape> = (0..30)
            .map(|_| Shape::Circle { lat: 32.0 + next() * 2.0 - 1.0, lng: 34.0 + next() * 2.0 - 1.0, radius_km: next() * 120.0 })
            .collect();
        shapes.push(square);
        for shape in shapes {
            for relation in [SpatialRelation::Within, SpatialRelation::Intersects, SpatialRelation::Disjoint] {
                let filter = Filter::Spatial { field: "Where".into(), shape: shape.clone(), relation };
                let mut found = index.search(&filter, &[], 0, 10_000).unwrap().keys;
                found.sort();
                let inside = |e: &[(f64, f64)]| e.iter().any(|&(lat, lng)| shape_contains(&shape, lat, lng, geo));
                let expected: Vec<String> = points
                    .iter()
                    .filter(|(_, e)| if relation == SpatialRelation::Disjoint { !e.is_empty() && !inside(e) } else { inside(e) })
                    .map(|(k, _)| k.clone())
                    .collect();
                assert_eq!(found, expected, "{shape:?} {relation:?}");
            }
        }
    }

    #[test]
    fn exists_matches_entries_with_a_point_or_a_shape() {
        use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument};
        let dir = tempfile::tempdir().unwrap();
        let spec = IndexSpec { fields: vec![FieldSpec { spatial: true, ..FieldSpec::new("Where") }, FieldSpec::new("Name")] };
        let index = DocumentIndex::open_or_create(dir.path(), &spec).unwrap();
        let docs = [
            ("point", json!({"Where": "POINT(34.78 32.08)"})),
            ("shape", json!({"Where": "POLYGON((34 32, 35 32, 35 33, 34 33, 34 32))"})),
            ("invalid", json!({"Where": "POINT(500 300)", "Name": "x"})),
            ("none", json!({"Name": "y"})),
        ];
        let docs: Vec<MappedDocument> = docs.into_iter().map(|(k, body)| MappedDocument { key: k.into(), body }).collect();
        index.apply(&docs, &[], 4).unwrap();
        let mut found = index.search(&Filter::Exists { field: "Where".into() }, &[], 0, 10).unwrap().keys;
        found.sort();
        assert_eq!(found, vec!["point", "shape"]);
        let mut named = index.search(&Filter::Exists { field: "Name".into() }, &[], 0, 10).unwrap().keys;
        named.sort();
        assert_eq!(named, vec!["invalid", "none"]);
    }

    #[test]
    fn indexed_shapes_and_distance_as_a_later_sort_key() {
        use crate::{DocumentIndex, FieldSpec, Filter, IndexSpec, MappedDocument, SortKey, SortKind};
        let dir = tempfile::tempdir().unwrap();
        let field = |path: &str, spatial: bool| FieldSpec {
            path: path.into(),
            search: false,
            exact: false,
            spatial,
            analyzer: None,
            spatial_options: None,
            case_sensitive: false,
            analyzed_only: false,
        };
        let spec = IndexSpec { fields: vec![field("Area", true), field("Kind", false)] };
        let index = DocumentIndex::open_or_create(dir.path(), &spec).unwrap();
        let docs = [
            ("park", "POLYGON((1 1, 2 1, 2 2, 1 2, 1 1))", "a"),
            ("road", "LINESTRING(-1 5, 11 5)", "a"),
            ("far", "POLYGON((50 50, 51 50, 51 51, 50 51, 50 50))", "a"),
            ("spot", "POINT(3 3)", "b"),
        ];
        let docs: Vec<MappedDocument> =
            docs.iter().map(|(k, area, kind)| MappedDocument { key: (*k).into(), body: json!({"Area": area, "Kind": kind}) }).collect();
        index.apply(&docs, &[], 4).unwrap();
        let region = parse_wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))").unwrap();
        let query = |relation| Filter::Spatial { field: "Area".into(), shape: region.clone(), relation };
        let keys = |filter: &Filter, sort: &[SortKey]| {
            let mut keys = index.search(filter, sort, 0, 10).unwrap().keys;
            if sort.is_empty() {
                keys.sort();
            }
            keys
        };
        assert_eq!(keys(&query(SpatialRelation::Within), &[]), vec!["park", "spot"]);
        assert_eq!(keys(&query(SpatialRelation::Intersects), &[]), vec!["park", "road", "spot"]);
        assert_eq!(keys(&query(SpatialRelation::Disjoint), &[]), vec!["far"]);
        let inside_park =
            Filter::Spatial { field: "Area".into(), shape: parse_wkt("POINT(1.5 1.5)").unwrap(), relation: SpatialRelation::Contains };
        assert_eq!(keys(&inside_park, &[]), vec!["park"]);
        // Kind first, then the distance from (0, 0) to each entry's point or shape center.
        let origin = SortKind::Distance { lat_e7: 0, lng_e7: 0 };
        let sort = [
            SortKey { field: "Kind".into(), kind: SortKind::String, descending: false },
            SortKey { field: "Area".into(), kind: origin, descending: false },
        ];
        assert_eq!(keys(&Filter::All, &sort), vec!["park", "road", "far", "spot"]);
        let sort = [SortKey { field: "Area".into(), kind: origin, descending: true }];
        assert_eq!(keys(&Filter::All, &sort), vec!["far", "road", "spot", "park"]);
    }
}
