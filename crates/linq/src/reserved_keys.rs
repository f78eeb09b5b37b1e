//! Reserved object keys that mark values JSON cannot express: a group (`g` in a reduce) and the fields made
//! by `CreateField` / `CreateSpatialField`. Documents never carry these keys.

/// The key of a group.
pub(crate) const GROUP_KEY: &str = "@corvid-group-key";
/// The items of a group.
pub(crate) const GROUP_ITEMS: &str = "@corvid-group-items";
/// A field made by `CreateField`.
pub(crate) const FIELD: &str = "@corvid-field";
/// A field made by `CreateSpatialField`.
pub(crate) const SPATIAL: &str = "@corvid-spatial";
