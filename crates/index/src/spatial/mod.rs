//! Spatial fields and queries: points kept as two fast columns (latitude, longitude), other shapes as WKT
//! in a bytes column; shape filters are evaluated against them segment by segment, and distances are on a
//! sphere of the Earth's mean radius (what RavenDB's spatial queries use).

mod earth;
mod query;
mod segment_shapes;
mod shapes;
mod values;

pub use earth::{distance_km, EARTH_RADIUS_KM};
pub(crate) use query::SpatialQuery;
pub(crate) use segment_shapes::SegmentShapes;
pub(crate) use shapes::check_geography;
pub use shapes::{center as shape_center, parse_wkt, ShapeError};
pub use values::point_of;
pub(crate) use values::spatial_values_at;
