//! Change vectors: `A:<etag>-<database id>`. Clients treat them as opaque strings that change on every write.

use base64::Engine as _;

/// The tag of this (single) node, as it appears in topology and change vectors.
pub const NODE_TAG: &str = "A";

/// A new random database id: 16 random bytes as 22 characters of unpadded base64, like RavenDB's.
pub fn new_database_id() -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(uuid::Uuid::new_v4().as_bytes())
}

/// A new random id for a document stored without one (RavenDB makes up a GUID).
pub fn new_guid() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

pub fn format_change_vector(etag: u64, database_id: &str) -> String {
    format!("{NODE_TAG}:{etag}-{database_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_ids_are_22_chars_and_unique() {
        let a = new_database_id();
        let b = new_database_id();
        assert_eq!(a.len(), 22);
        assert_ne!(a, b);
    }

    #[test]
    fn change_vector_names_node_etag_and_database() {
        assert_eq!(format_change_vector(42, "abc"), "A:42-abc");
    }
}
