//! A segment's spatial columns of one field: the points and shapes of each entry, and distances to them.

use tantivy::columnar::{BytesColumn, Column};
use tantivy::{DocId, SegmentReader};

use crate::schema::SpatialColumns;
use crate::spatial::shapes::{center, distance, parse_wkt};
use crate::{Shape, SpatialOptions};

/// A segment's spatial columns of one field.
pub(crate) struct SegmentShapes {
    options: SpatialOptions,
    /// Latitudes of the points; none when no entry of the segment has a point.
    pub lats: Option<Column<f64>>,
    lngs: Option<Column<f64>>,
    shapes: Option<BytesColumn>,
}

impl SegmentShapes {
    pub fn open(reader: &SegmentReader, columns: &SpatialColumns) -> tantivy::Result<SegmentShapes> {
        let fast = reader.fast_fields();
        Ok(SegmentShapes {
            options: columns.options,
            lats: fast.f64(&columns.lat.name).ok(),
            lngs: fast.f64(&columns.lng.name).ok(),
            shapes: fast.bytes(&columns.shape.name)?,
        })
    }

    pub fn points(&self, doc: DocId) -> impl Iterator<Item = (f64, f64)> + '_ {
        let pairs = match (&self.lats, &self.lngs) {
            (Some(lats), Some(lngs)) => Some(lats.values_for_doc(doc).zip(lngs.values_for_doc(doc))),
            _ => None,
        };
        pairs.into_iter().flatten()
    }

    /// The document's non-point shapes (an unreadable one is skipped: it parsed when indexed).
    pub fn shapes(&self, doc: DocId) -> Vec<Shape> {
        let Some(column) = &self.shapes else { return Vec::new() };
        let mut buffer = Vec::new();
        column
            .term_ords(doc)
            .filter_map(|ord| {
                buffer.clear();
                column.ord_to_bytes(ord, &mut buffer).ok()?;
                parse_wkt(std::str::from_utf8(&buffer).ok()?).ok()
            })
            .collect()
    }

    /// Whether any entry of the segment has a shape other than a point.
    pub fn has_shapes(&self) -> bool {
        self.shapes.as_ref().is_some_and(|column| column.num_terms() > 0)
    }

    /// Distance from `origin` to the nearest point or shape center; infinite without any.
    pub fn nearest(&self, doc: DocId, origin: (f64, f64)) -> f64 {
        let from_origin = |(lat, lng): (f64, f64)| distance(self.options, origin.0, origin.1, lat, lng);
        let nearest_point = self.points(doc).map(from_origin).fold(f64::INFINITY, f64::min);
        self.shapes(doc).iter().filter_map(center).map(from_origin).fold(nearest_point, f64::min)
    }
}
