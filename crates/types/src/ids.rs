//! Document ids: case-insensitive for lookups, stored with the case the client wrote.

/// Longest id accepted, in UTF-8 bytes as written (RavenDB's limit).
pub const MAX_ID_BYTES: usize = 512;
/// Longest lookup key; lower-casing can lengthen an id. Storage keys allow this (LMDB built with
/// `longer-keys`).
const MAX_KEY_BYTES: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("Document id must not be empty")]
    Empty,
    #[error("Document id is {len} bytes long; the limit is {max} bytes")]
    TooLong { len: usize, max: usize },
    #[error("Document id must not contain the NUL character")]
    ControlCharacter,
}

/// The lookup key of an id: its lower-case form (RavenDB compares ids case-insensitively).
pub fn id_key(id: &str) -> String {
    if id.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        id.to_owned()
    } else {
        id.to_lowercase()
    }
}

/// Checks that an id can be stored; returns its lookup key.
pub fn validate_id(id: &str) -> Result<String, IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    // RavenDB accepts other control characters (U+0001..U+000D appear in client tests).
    if id.contains('\0') {
        return Err(IdError::ControlCharacter);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong { len: id.len(), max: MAX_ID_BYTES });
    }
    let key = id_key(id);
    if key.len() > MAX_KEY_BYTES {
        return Err(IdError::TooLong { len: key.len(), max: MAX_KEY_BYTES });
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_and_keep_ascii_lowercase_as_is() {
        assert_eq!(id_key("Users/1-A"), "users/1-a");
        assert_eq!(id_key("users/1-a"), "users/1-a");
        assert_eq!(id_key("ÜSERS/Ä"), "üsers/ä");
    }

    #[test]
    fn validation_rejects_empty_long_and_control_ids() {
        assert_eq!(validate_id(""), Err(IdError::Empty));
        assert!(matches!(validate_id(&"x".repeat(513)), Err(IdError::TooLong { len: 513, .. })));
        assert_eq!(validate_id("a\0b"), Err(IdError::ControlCharacter));
        assert!(validate_id("Test\u{1}Cars/1").is_ok());
        assert_eq!(validate_id(&"X".repeat(512)).unwrap().len(), 512);
        assert_eq!(validate_id("Orders/7").unwrap(), "orders/7");
    }
}
