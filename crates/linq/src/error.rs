//! Errors with positions.

use std::fmt;

/// Whether an error was found when the index was defined or while indexing one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not in the supported grammar (rejected when the index is defined).
    Parse,
    /// The text parses but uses something outside the subset (rejected when the index is defined).
    Compile,
    /// Evaluating one document or one reduce group failed (recorded per document).
    Runtime,
    /// Evaluating one document or one reduce group went over a limit of its [`crate::Budget`] and was
    /// stopped (recorded per document, like a runtime error).
    LimitExceeded(Limit),
}

/// Which limit of a [`crate::Budget`] an evaluation went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`crate::Budget::steps`].
    Steps,
    /// [`crate::Budget::bytes`].
    Bytes,
    /// [`crate::Budget::outputs`].
    Outputs,
}

/// An error from parsing, compiling or evaluating a LINQ index definition.
///
/// `line` and `column` are 1-based (the column counts characters) and point into the map or reduce text
/// that `definition` names ("map 0", "reduce"). Runtime errors carry the position of the failing expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct LinqError {
    /// When the error was found.
    pub kind: ErrorKind,
    /// What is wrong, without the position.
    pub message: String,
    /// Which text it is in ("map 0", "reduce"); empty when none.
    pub definition: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl LinqError {
    pub(crate) fn at(kind: ErrorKind, text: &str, position: usize, message: impl Into<String>) -> LinqError {
        let (line, column) = line_column(text, position);
        LinqError { kind, message: message.into(), definition: String::new(), line, column }
    }
}

impl fmt::Display for LinqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.definition.is_empty() {
            write!(f, "{} at line {}, column {}", self.message, self.line, self.column)
        } else {
            write!(f, "{} at line {}, column {} of {}", self.message, self.line, self.column, self.definition)
        }
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
    (line, before[line_start..].chars().count() + 1)
}
