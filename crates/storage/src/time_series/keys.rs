//! Keys of the time-series tables. A series is named by the document key and its lower-cased name, joined by
//! `NAME_SEPARATOR` (neither may contain it); a segment key adds the separator and its start as 8 bytes
//! that sort like the signed milliseconds (big-endian, sign bit flipped).

use crate::tables::NAME_SEPARATOR;

/// `doc key 0x1E name` (a `time_series_stats` key); with an empty name plus the separator, see [`document_prefix`].
pub(crate) fn series_key(doc_key: &str, name_lower: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(doc_key.len() + name_lower.len() + 10);
    key.extend_from_slice(doc_key.as_bytes());
    key.push(NAME_SEPARATOR);
    key.extend_from_slice(name_lower.as_bytes());
    key
}

/// Prefix of every row of one document in either table.
pub(crate) fn document_prefix(doc_key: &str) -> Vec<u8> {
    let mut key = doc_key.as_bytes().to_vec();
    key.push(NAME_SEPARATOR);
    key
}

/// Prefix of every segment of one series.
pub(crate) fn segment_prefix(doc_key: &str, name_lower: &str) -> Vec<u8> {
    let mut key = series_key(doc_key, name_lower);
    key.push(NAME_SEPARATOR);
    key
}

/// The key of the segment of a series that starts at `start` (unix milliseconds).
pub(crate) fn segment_key(prefix: &[u8], start: i64) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 8);
    key.extend_from_slice(prefix);
    key.extend_from_slice(&((start as u64) ^ (1 << 63)).to_be_bytes());
    key
}

/// The start of a segment from its key (the last 8 bytes).
pub(crate) fn segment_start(key: &[u8]) -> Option<i64> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some((u64::from_be_bytes(tail) ^ (1 << 63)) as i64)
}

/// Splits a segment key into the series key (document key, separator, name) and the start.
pub(crate) fn split_segment_key(key: &[u8]) -> Option<(&[u8], i64)> {
    let series_len = key.len().checked_sub(9)?;
    (key[series_len] == NAME_SEPARATOR).then_some(())?;
    Some((&key[..series_len], segment_start(key)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_keys_sort_by_signed_start() {
        let prefix = segment_prefix("users/1", "heartrate");
        let keys: Vec<_> = [-5i64, -1, 0, 1, 1_700_000_000_000].iter().map(|s| segment_key(&prefix, *s)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(split_segment_key(&keys[0]), Some((&series_key("users/1", "heartrate")[..], -5)));
    }
}
