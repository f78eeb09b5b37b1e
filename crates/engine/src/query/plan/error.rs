//! The two ways planning refuses a query: it is invalid, or it uses a construct this server does not
//! implement yet (quoted where it stands).

use crate::EngineError;

/// An invalid query.
pub(super) fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidQuery { message: message.into() }
}

/// A construct the server does not implement, quoting the query where it stands.
pub(super) fn unsupported(what: &str, query: &str, span: corvid_rql::Span) -> EngineError {
    invalid(format!("{what} is not supported yet (at position {}: '{}')", span.start, span.text(query)))
}
