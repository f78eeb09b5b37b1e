//! Distances on the Earth: the sphere of its mean radius, which RavenDB's spatial queries use.

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
