//! Parse errors with positions.

use std::fmt;

/// A query that could not be parsed.
///
/// `position` is a byte offset into the query text; `line` and `column` are 1-based (the column counts
/// characters, not bytes). `expected` lists what the parser would have accepted at that point, when known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    pub message: String,
    pub position: usize,
    pub line: usize,
    pub column: usize,
    pub expected: Vec<String>,
}

impl ParseError {
    pub(crate) fn new(text: &str, position: usize, message: impl Into<String>, expected: Vec<String>) -> ParseError {
        let position = position.min(text.len());
        let (line, column) = line_column(text, position);
        ParseError { message: message.into(), position, line, column, expected }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {}, column {}", self.message, self.line, self.column)
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(text: &str, position: usize) -> (usize, usize) {
    let mut pos = position.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &text[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("abc\ndef", 5), (2, 2));
        assert_eq!(line_column("é\nxy", 4), (2, 2));
        assert_eq!(line_column("éa", 2), (1, 2));
    }

    #[test]
    fn display_has_position() {
        let e = ParseError::new("from Users foo bar", 15, "Expected 'where' but got 'bar'", vec!["'where'".into()]);
        assert_eq!(e.to_string(), "Expected 'where' but got 'bar' at line 1, column 16");
    }
}
