//! The limits every JSON a client writes must meet, and parsing without serde_json's fixed depth limit.
//!
//! Numbers are kept as the text the client sent (serde_json's `arbitrary_precision`, decision 0018), so a
//! document reads back exactly as written. Two things are refused at every write path, through one check:
//! - nesting deeper than the configured maximum (`--max-json-depth`): readers parse stored JSON without a
//!   depth limit, so the write side is what keeps their recursion bounded;
//! - numbers outside a double's range (`1e400`): no client serializer produces them, and indexes, sorting
//!   and JavaScript would only see infinity.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde::Deserialize;
use serde_json::Value;

/// Default nesting limit of a stored document (objects and arrays, the document itself being level 1).
pub const DEFAULT_MAX_DEPTH: usize = 256;
/// The highest nesting limit that may be configured: every thread that reads documents (the async runtime's,
/// the merger's, the indexes') parses, converts and drops values recursively within its stack.
pub const MAX_CONFIGURABLE_DEPTH: usize = 1024;
/// Levels a request may add around the documents it carries (`{"Commands":[{"Document":{...}}]}`).
pub const ENVELOPE_DEPTH: usize = 8;

static MAX_DEPTH: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_DEPTH);

/// Sets the process-wide nesting limit (from the server's settings, once at start).
pub fn set_max_depth(depth: usize) {
    MAX_DEPTH.store(depth.clamp(1, MAX_CONFIGURABLE_DEPTH), Ordering::Relaxed);
}

/// The configured nesting limit of a stored document.
pub fn max_depth() -> usize {
    MAX_DEPTH.load(Ordering::Relaxed)
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonLimitError {
    #[error(
        "the JSON nests deeper than {limit} levels (objects and arrays); the limit is the server setting \
         max_json_depth (--max-json-depth, at most {MAX_CONFIGURABLE_DEPTH})"
    )]
    TooDeep { limit: usize },
    #[error("the number {0} is outside the range of a double (about ±1.8e308)")]
    NumberOutOfRange(String),
}

/// Checks a value against the document limits: nesting at most `limit` levels, every number finite.
pub fn check_value(value: &Value, limit: usize) -> Result<(), JsonLimitError> {
    fn walk(value: &Value, depth: usize, limit: usize) -> Result<(), JsonLimitError> {
        match value {
            Value::Number(n) => check_number_text(n.as_str()),
            Value::Array(_) | Value::Object(_) if depth + 1 > limit => Err(JsonLimitError::TooDeep { limit }),
            Value::Array(items) => items.iter().try_for_each(|v| walk(v, depth + 1, limit)),
            Value::Object(fields) => fields.values().try_for_each(|v| walk(v, depth + 1, limit)),
            Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
        }
    }
    walk(value, 0, limit)
}

/// Checks JSON text against the document limits without building values (a byte scan; the text must be
/// valid JSON, which the caller's parser has established or will establish).
pub fn check_text(text: &str, limit: usize) -> Result<(), JsonLimitError> {
    scan(text, limit, true)
}

/// The byte scan behind `check_text`; numbers are checked only when `numbers` is set.
fn scan(text: &str, limit: usize, numbers: bool) -> Result<(), JsonLimitError> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = end_of_string(bytes, i + 1),
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Err(JsonLimitError::TooDeep { limit });
                }
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'-' | b'0'..=b'9' if numbers => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                check_number_text(&text[start..i])?;
            }
            _ => i += 1,
        }
    }
    Ok(())
}

/// Index just past the closing quote of a string whose contents start at `i`.
fn end_of_string(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// A number's text must name a finite double. Only texts that can overflow are parsed: those with an
/// exponent or with more digits than the largest double has before its point.
fn check_number_text(text: &str) -> Result<(), JsonLimitError> {
    let may_overflow = text.len() > 300 || text.bytes().any(|b| b == b'e' || b == b'E');
    if may_overflow && !text.parse::<f64>().is_ok_and(f64::is_finite) {
        return Err(JsonLimitError::NumberOutOfRange(abbreviate(text)));
    }
    Ok(())
}

fn abbreviate(text: &str) -> String {
    if text.len() <= 40 {
        text.to_owned()
    } else {
        format!("{}...({} characters)", &text[..24], text.len())
    }
}

/// Parses JSON without serde_json's fixed limit of 128 levels: for JSON whose depth a write path has
/// already bounded (stored documents, definitions), or after `check_text` on a client's request.
pub fn parse<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Parses a client's request body: nesting is checked first (the documents it carries are checked
/// against the exact limit where they become documents, numbers included), then the text is parsed.
pub fn parse_request(text: &str) -> Result<Value, RequestJsonError> {
    let limit = max_depth();
    scan(text, limit + ENVELOPE_DEPTH, false).map_err(|_| RequestJsonError::Limit(JsonLimitError::TooDeep { limit }))?;
    parse(text).map_err(|e| RequestJsonError::Syntax(e.to_string()))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestJsonError {
    #[error("{0}")]
    Limit(JsonLimitError),
    #[error("{0}")]
    Syntax(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_is_counted_from_the_outermost_value() {
        assert_eq!(check_text(&nested(3), 3), Ok(()));
        assert_eq!(check_text(&nested(4), 3), Err(JsonLimitError::TooDeep { limit: 3 }));
        let value: Value = parse(&nested(4)).unwrap();
        assert_eq!(check_value(&value, 4), Ok(()));
        assert_eq!(check_value(&value, 3), Err(JsonLimitError::TooDeep { limit: 3 }));
    }

    #[test]
    fn brackets_and_quotes_inside_strings_do_not_count() {
        let text = r#"{"a":"[[[[\"{{{{","b":["\\",{"c":"]]]"}]}"#;
        assert_eq!(check_text(text, 3), Ok(()));
        assert_eq!(check_text(text, 2), Err(JsonLimitError::TooDeep { limit: 2 }));
    }

    #[test]
    fn numbers_outside_a_double_are_refused_wherever_they_are() {
        for bad in ["1e400", "-1E309", "[1,{\"a\":2e999}]"] {
            assert!(matches!(check_text(bad, 10), Err(JsonLimitError::NumberOutOfRange(_))), "{bad}");
            let value: Value = parse(bad).unwrap();
            assert!(matches!(check_value(&value, 10), Err(JsonLimitError::NumberOutOfRange(_))), "{bad}");
        }
        let huge_integer = "9".repeat(400);
        assert!(check_text(&huge_integer, 1).is_err());
        for good in ["1e308", "-1.7976931348623157e308", "5e-324", "1e-400", "79228162514264337593543950335", "-0"] {
            assert_eq!(check_text(good, 1), Ok(()), "{good}");
            assert_eq!(check_value(&parse::<Value>(good).unwrap(), 1), Ok(()), "{good}");
        }
    }

    #[test]
    fn numbers_keep_their_text() {
        let text = r#"{"a":-99.15168890000001,"b":79228162514264337593543950335,"c":-0,"d":1.10,"e":1E-7,"f":5e+3,"g":2e5}"#;
        let value: Value = parse(text).unwrap();
        assert_eq!(value.to_string(), text);
    }

    #[test]
    fn deep_json_parses_beyond_serde_json_default_limit() {
        let text = nested(MAX_CONFIGURABLE_DEPTH);
        assert!(serde_json::from_str::<Value>(&text).is_err());
        let value: Value = parse(&text).unwrap();
        assert_eq!(check_value(&value, MAX_CONFIGURABLE_DEPTH), Ok(()));
    }

    #[test]
    fn requests_are_checked_before_parsing() {
        let limit = max_depth();
        assert!(parse_request(&nested(limit + ENVELOPE_DEPTH)).is_ok());
        assert_eq!(parse_request(&nested(limit + ENVELOPE_DEPTH + 1)), Err(RequestJsonError::Limit(JsonLimitError::TooDeep { limit })));
        assert!(matches!(parse_request("{"), Err(RequestJsonError::Syntax(_))));
    }
}
