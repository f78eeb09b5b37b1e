//! Writing a JSON string literal straight into a buffer, for the responses built by splicing stored text.

/// Appends `value` as a JSON string literal.
pub fn push_json_string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_requires() {
        let mut out = String::new();
        push_json_string(&mut out, "a \"b\" \\ \n\r\t\u{1} é");
        assert_eq!(out, r#""a \"b\" \\ \n\r\t\u0001 é""#);
        assert_eq!(serde_json::from_str::<String>(&out).unwrap(), "a \"b\" \\ \n\r\t\u{1} é");
    }
}
