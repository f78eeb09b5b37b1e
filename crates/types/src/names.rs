//! Attachment and counter names: case-insensitive like ids, and part of a storage key after the document id
//! (`<id> 0x1E <name>`), so their length is limited like an id's.

/// Longest attachment or counter name accepted, in UTF-8 bytes as written. With an id of at most
/// `MAX_ID_BYTES`, the lower-cased key stays well under LMDB's key limit (1,982 bytes with 4 KiB pages).
pub const MAX_NAME_BYTES: usize = 512;

/// What a name names, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Attachment,
    Counter,
    TimeSeries,
}

impl std::fmt::Display for NameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameKind::Attachment => "Attachment",
            NameKind::Counter => "Counter",
            NameKind::TimeSeries => "Time series",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{kind} name is {len} bytes long; the limit is {max} bytes")]
    TooLong { kind: NameKind, len: usize, max: usize },
    #[error("{kind} name must not contain the NUL or U+001E characters")]
    ReservedCharacter { kind: NameKind },
}

/// Checks that a name can be part of a storage key. (Empty names are refused by each command, with its own
/// message.)
pub fn validate_name(kind: NameKind, name: &str) -> Result<(), NameError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(NameError::TooLong { kind, len: name.len(), max: MAX_NAME_BYTES });
    }
    // U+001E separates the id from the name in keys: a name holding it could read as another document's row.
    if name.contains(['\0', '\u{1e}']) {
        return Err(NameError::ReservedCharacter { kind });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_and_separators_are_refused() {
        assert_eq!(validate_name(NameKind::Counter, &"é".repeat(256)), Ok(()));
        let err = validate_name(NameKind::Attachment, &"a".repeat(2000)).unwrap_err();
        assert_eq!(err.to_string(), "Attachment name is 2000 bytes long; the limit is 512 bytes");
        assert!(validate_name(NameKind::Counter, "a\u{1e}b").is_err());
    }
}
