//! Content types a browser would run or render as a page (HTML, SVG, XML, scripts): served from the API's
//! origin, an uploaded attachment of such a type would be stored cross-site scripting, so it is sent as a
//! download instead.

/// Whether a browser may execute or render `content_type` as an active document.
pub fn is_active(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence.is_empty()
        || essence.contains("html")
        || essence.contains("xml")
        || essence.contains("svg")
        || essence.contains("javascript")
        || essence.contains("ecmascript")
        || essence == "text/xsl"
        || essence == "application/pdf"
}

#[cfg(test)]
mod tests {
    use super::is_active;

    #[test]
    fn pages_and_scripts_are_active() {
        assert!(is_active("text/html; charset=utf-8"));
        assert!(is_active("image/svg+xml"));
        assert!(is_active("application/xhtml+xml"));
        assert!(is_active("text/javascript"));
        assert!(!is_active("image/png"));
        assert!(!is_active("application/json"));
        assert!(!is_active("text/plain"));
    }
}
