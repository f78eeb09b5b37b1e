//! Lenient query-string parsing: RavenDB clients send bare keys, leading `&`, doubled `?`, Python booleans
//! and garbage keys; unknown keys are ignored by the handlers. The one thing refused is a key or value that
//! is not UTF-8 once percent-decoded: decoding it lossily would make `bad/%FF` and `bad/%FE` the same id.

use percent_encoding::percent_decode_str;

use crate::error::ApiError;

#[derive(Debug, Default, Clone)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

fn decode(part: &str) -> Result<String, ApiError> {
    let spaced = part.replace('+', " ");
    match percent_decode_str(&spaced).decode_utf8() {
        Ok(text) => Ok(text.into_owned()),
        Err(_) => Err(ApiError::InvalidEncoding(format!("The query string part '{part}' is not valid UTF-8 once percent-decoded"))),
    }
}

impl QueryParams {
    pub fn parse(raw: Option<&str>) -> Result<QueryParams, ApiError> {
        let raw = raw.unwrap_or("");
        let pairs = raw
            .split('&')
            .map(|piece| piece.trim_start_matches('?').trim())
            .filter(|piece| !piece.is_empty())
            .map(|piece| {
                let (key, value) = piece.split_once('=').unwrap_or((piece, ""));
                Ok((decode(key)?, decode(value)?))
            })
            .collect::<Result<_, ApiError>>()?;
        Ok(QueryParams { pairs })
    }

    /// The first value of `key` (keys compare case-insensitively, like RavenDB's).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.as_str())
    }

    /// The first non-empty value of `key`.
    pub fn get_non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    pub fn get_all(&self, key: &str) -> Vec<String> {
        self.pairs.iter().filter(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v.clone()).collect()
    }

    /// `true`/`True`/`1` are true; a bare key is true; anything else false.
    pub fn get_bool(&self, key: &str) -> bool {
        match self.get(key) {
            Some(v) => v.is_empty() || v.eq_ignore_ascii_case("true") || v == "1",
            None => false,
        }
    }

    /// A non-negative integer, or `default` when absent or unparsable.
    pub fn get_usize(&self, key: &str, default: usize) -> usize {
        self.get(key).and_then(|v| v.trim().parse().ok()).unwrap_or(default)
    }

    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// The rest of the first value-less key that starts with `prefix` (case-insensitively): the Python
    /// client writes `&before<date>` without its `=`.
    pub fn glued_value(&self, prefix: &str) -> Option<&str> {
        self.pairs
            .iter()
            .filter(|(k, v)| v.is_empty() && k.len() > prefix.len() && k.is_char_boundary(prefix.len()))
            .find(|(k, _)| k[..prefix.len()].eq_ignore_ascii_case(prefix))
            .map(|(k, _)| &k[prefix.len()..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_what_clients_send() {
        let q = QueryParams::parse(Some("&id=users%2F1-a&id=Users/2&first-topology-update&?raft-request-id=x&pageSize10 &allowStale=True"))
            .unwrap();
        assert_eq!(q.get_all("id"), ["users/1-a", "Users/2"]);
        assert!(q.get_bool("first-topology-update"));
        assert_eq!(q.get("raft-request-id"), Some("x"));
        assert!(q.get_bool("allowstale"));
        assert_eq!(q.get_usize("pageSize", 7), 7);
        assert_eq!(QueryParams::parse(None).unwrap().get("x"), None);
        assert_eq!(QueryParams::parse(Some("?&name=a+b")).unwrap().get("name"), Some("a b"));
        assert_eq!(QueryParams::parse(Some("id=%C3%BC%25")).unwrap().get("id"), Some("ü%"));
    }

    #[test]
    fn refuses_what_is_not_utf8_once_decoded() {
        for raw in ["id=bad/%FF", "id=bad/%FE", "%FF=1", "id=ok&name=%C3"] {
            assert!(matches!(QueryParams::parse(Some(raw)), Err(ApiError::InvalidEncoding(_))), "{raw}");
        }
    }
}
