//! The request headers the server reads. A value that is not visible ASCII is a 400, never read as absent:
//! an `If-Match` that silently disappeared would turn a conditional write into an unconditional one.

use axum::http::HeaderMap;

use crate::error::ApiError;

/// The value of `name`, or `None` when the request has no such header.
pub fn text<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| ApiError::InvalidHeader(name.to_owned())),
    }
}

/// An `If-None-Match`/`If-Match` value without quotes (clients send both forms).
pub fn tag(headers: &HeaderMap, name: &str) -> Result<Option<String>, ApiError> {
    let Some(value) = text(headers, name)? else { return Ok(None) };
    let value = value.trim();
    let value = value.strip_prefix("W/").unwrap_or(value);
    Ok(Some(value.trim_matches('"').to_owned()))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn non_ascii_values_are_errors_not_absent() {
        let mut headers = HeaderMap::new();
        headers.insert("if-match", HeaderValue::from_bytes("ü:1-€".as_bytes()).unwrap());
        headers.insert("if-none-match", HeaderValue::from_static("W/\"A:1-x\""));
        assert!(matches!(tag(&headers, "if-match"), Err(ApiError::InvalidHeader(name)) if name == "if-match"));
        assert_eq!(tag(&headers, "if-none-match").unwrap().as_deref(), Some("A:1-x"));
        assert_eq!(tag(&headers, "content-type").unwrap(), None);
    }
}
