//! What a client asks of a query: its RQL text, parameters and paging, and how long it may wait.

use std::time::Duration;

use corvid_rql::Query;
use serde_json::{Map, Value};

use crate::{Cancellation, EngineError};

/// One query as the server received it.
#[derive(Debug, Clone, Default)]
pub struct QueryRequest {
    /// The RQL text.
    pub query: String,
    /// Values of the `$name` parameters.
    pub parameters: Map<String, Value>,
    /// Results to skip when the query has no `offset`.
    pub start: Option<usize>,
    /// Results to return when the query has no `limit`.
    pub page_size: Option<usize>,
    /// Wait until the index has caught up with the writes committed when the query started.
    pub wait_for_non_stale: bool,
    /// How long such a wait may last (15 seconds when absent).
    pub wait_timeout: Option<Duration>,
    /// Results carry only their `@metadata`.
    pub metadata_only: bool,
    /// The query selects documents for a patch or delete by query (`update { }` allowed, no projection).
    pub for_operation: bool,
    /// Stops the query between results (and its JavaScript at once) when its client has gone away.
    pub cancel: Cancellation,
}

impl QueryRequest {
    /// The parsed RQL; a syntax error is an invalid query (with its position).
    pub(crate) fn parse(&self) -> Result<Query, EngineError> {
        corvid_rql::parse(&self.query).map_err(|e| EngineError::InvalidQuery { message: e.to_string() })
    }
}
