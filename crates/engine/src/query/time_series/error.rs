//! How a time-series sub-query is refused: as an invalid query, like the rest of the RQL around it.

use crate::EngineError;

/// An invalid time-series sub-query.
pub(super) fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidQuery { message: message.into() }
}
