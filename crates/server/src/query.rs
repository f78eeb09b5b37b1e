//! Lenient query-string parsing: RavenDB clients send bare keys, leading `&`, doubled `?`, Python booleans
//! and garbage keys. Nothing here ever fails; unknown keys are ignored by the handlers.

use percent_encoding::percent_decode_str;

#[derive(Debug, Default, Clone)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

fn decode(part: &str) -> String {
    let spaced = part.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

impl QueryParams {
    pub fn parse(raw: Option<&str>) -> QueryParams {
        let raw = raw.unwrap_or("");
        let pairs = raw
            .split('&')
            .filter_map(|piece| {
                let piece = piece.trim_start_matches('?').trim();
                if piece.is_empty() {
                    return None;
                }
                let (key, value) = piece.split_once('=').unwrap_or((piece, ""));
                Some((decode(key), decode(value)))
            })
            .collect();
        QueryParams { pairs }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_what_clients_send() {
        let q = QueryParams::parse(Some("&id=users%2F1-a&id=Users/2&first-topology-update&?raft-request-id=x&pageSize10 &allowStale=True"));
        assert_eq!(q.get_all("id"), ["users/1-a", "Users/2"]);
        assert!(q.get_bool("first-topology-update"));
        assert_eq!(q.get("raft-request-id"), Some("x"));
        assert!(q.get_bool("allowstale"));
        assert_eq!(q.get_usize("pageSize", 7), 7);
        assert_eq!(QueryParams::parse(None).get("x"), None);
        assert_eq!(QueryParams::parse(Some("?&name=a+b")).get("name"), Some("a b"));
    }
}
