//! Patch by query (`from Users where ... update { ... }`) and delete by query as tracked operations. The
//! query picks the ids once; then a background thread changes them in batches of merged transactions, so
//! other writers keep flowing between batches, honouring `maxOpsPerSec` and cancellation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use corvid_types::{id_key, now_nanos};

use crate::operation_result::{ByQueryDetail, ByQueryResult, OperationResult};
use crate::operations::Operation;
use crate::patch::{patch_document, PatchCommand, PatchScript, PatchStatus};
use crate::write::precondition::ExpectedChangeVector;
use crate::{Database, EngineError, QueryRequest};

/// Documents changed per transaction: large enough to amortize the commit, small enough that other
/// writes wait at most a few milliseconds.
const BATCH: usize = 512;

/// How a patch or delete by query runs (the request's query string options).
#[derive(Debug, Clone)]
pub struct ByQueryOptions {
    /// Run on a stale index instead of waiting for it to catch up.
    pub allow_stale: bool,
    /// How long to wait for a stale index before failing (the query's own timeout when None).
    pub stale_timeout: Option<Duration>,
    /// Documents changed per second at most (None: as fast as the writer allows).
    pub max_ops_per_sec: Option<u32>,
    /// Whether the result lists what happened to each document.
    pub details: bool,
}

enum Action {
    Patch { command: Box<PatchCommand>, alias: Option<String> },
    Delete,
}

/// The `update { }` script of a query, with its declared functions, and the query without it.
struct UpdateParts {
    script: String,
    alias: Option<String>,
}

fn update_parts(text: &str) -> Result<Option<UpdateParts>, EngineError> {
    let query = corvid_rql::parse(text).map_err(|e| EngineError::InvalidQuery { message: e.to_string() })?;
    let Some(update) = &query.update else { return Ok(None) };
    let mut script = String::new();
    for f in &query.declared_functions {
        let params: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        script.push_str(&format!("function {}({}) {}\n", f.name.name, params.join(", "), f.body.source));
    }
    let body = update.source.trim();
    let body = body.strip_prefix('{').and_then(|b| b.strip_suffix('}')).unwrap_or(body);
    script.push_str(body);
    Ok(Some(UpdateParts { script, alias: query.from.alias.as_ref().map(|a| a.name.clone()) }))
}

impl Database {
    /// Starts a patch by query; the query's `update { }` block is the script, query parameters are `args`.
    pub fn start_patch_by_query(self: &Arc<Self>, request: QueryRequest, options: ByQueryOptions) -> Result<Arc<Operation>, EngineError> {
        let parts = update_parts(&request.query)?
            .ok_or_else(|| EngineError::InvalidQuery { message: "A patch by query needs an 'update { ... }' clause".into() })?;
        crate::patch::validate_script_with_alias(&parts.script, parts.alias.as_deref())?;
        let command = PatchCommand {
            id: String::new(),
            expected: ExpectedChangeVector::Any,
            patch: PatchScript { script: parts.script, values: request.parameters.clone() },
            patch_if_missing: None,
            create_if_missing: None,
            skip_if_change_vector_mismatch: false,
            debug: false,
            return_document: false,
        };
        self.start_by_query("UpdateByQuery", request, options, Action::Patch { command: Box::new(command), alias: parts.alias })
    }

    /// Starts a delete by query: every document the query matches is deleted, in batches.
    pub fn start_delete_by_query(self: &Arc<Self>, request: QueryRequest, options: ByQueryOptions) -> Result<Arc<Operation>, EngineError> {
        if update_parts(&request.query)?.is_some() {
            return Err(EngineError::InvalidQuery { message: "A delete by query cannot have an 'update' clause".into() });
        }
        self.start_by_query("DeleteByQuery", request, options, Action::Delete)
    }

    fn start_by_query(
        self: &Arc<Self>,
        kind: &'static str,
        mut request: QueryRequest,
        options: ByQueryOptions,
        action: Action,
    ) -> Result<Arc<Operation>, EngineError> {
        request.for_operation = true;
        // Plan now so a bad query is refused at once, not reported later as a faulted operation.
        if crate::query::check_plan(self, &request)? {
            // A new automatic index answers from nothing until built: wait for it, as a query would.
            request.wait_for_non_stale = true;
        }
        let operation = self.operations.start(None, kind, request.query.clone());
        let database = self.clone();
        let op = operation.clone();
        std::thread::Builder::new()
            .name(format!("corvid-op-{}", operation.id))
            .spawn(move || match database.run_by_query(&op, &request, &options, &action) {
                Ok(Some(result)) => op.complete(OperationResult::ByQuery(result)),
                Ok(None) => op.mark_canceled(),
                Err(e) => op.fail(e),
            })
            .map_err(|e| EngineError::Internal(format!("could not start the operation thread: {e}")))?;
        Ok(operation)
    }

    /// Ok(None) when canceled.
    fn run_by_query(
        &self,
        op: &Operation,
        request: &QueryRequest,
        options: &ByQueryOptions,
        action: &Action,
    ) -> Result<Option<ByQueryResult>, EngineError> {
        let mut request = request.clone();
        if !options.allow_stale {
            request.wait_for_non_stale = true;
            request.wait_timeout = options.stale_timeout.or(request.wait_timeout);
        }
        let matched = self.matching_ids(&request)?;
        if matched.is_stale && !options.allow_stale {
            return Err(EngineError::Timeout(format!(
                "index '{}' is stale and the operation does not allow stale results (allowStale=false)",
                matched.index_name
            )));
        }
        op.set_total(matched.ids.len() as u64);
        let started = Instant::now();
        let mut processed = 0u64;
        let mut changed = 0u64;
        let mut details = Vec::new();
        let batch = options.max_ops_per_sec.map_or(BATCH, |n| (n as usize).clamp(1, BATCH));
        for chunk in matched.ids.chunks(batch) {
            if op.is_canceled() {
                return Ok(None);
            }
            if let Some(rate) = options.max_ops_per_sec.filter(|n| *n > 0) {
                // Stay under the rate: `processed` operations may take no less than processed/rate seconds.
                let due = Duration::from_secs_f64(processed as f64 / f64::from(rate));
                if let Some(wait) = due.checked_sub(started.elapsed()) {
                    std::thread::sleep(wait);
                }
            }
            let ids = chunk.to_vec();
            let outcomes = match action {
                Action::Patch { command, alias } => {
                    let command = command.clone();
                    let alias = alias.clone();
                    self.write_blocking(move |txn| {
                        let now = now_nanos();
                        let mut out = Vec::with_capacity(ids.len());
                        for id in &ids {
                            let outcome = patch_document(txn, id, &command, alias.as_deref(), now)?;
                            out.push(ByQueryDetail::Patched {
                                id: outcome.id,
                                change_vector: outcome.change_vector,
                                status: outcome.status,
                            });
                        }
                        Ok(out)
                    })?
                }
                Action::Delete => self.write_blocking(move |txn| {
                    let now = now_nanos();
                    let mut out = Vec::with_capacity(ids.len());
                    for id in ids {
                        if crate::revisions::writes::delete_document(txn, &id_key(&id), now)?.is_some() {
                            out.push(ByQueryDetail::Deleted { id });
                        }
                    }
                    Ok(out)
                })?,
            };
            processed += chunk.len() as u64;
            op.add_processed(chunk.len() as u64);
            for detail in outcomes {
                let counts = match &detail {
                    ByQueryDetail::Patched { status, .. } => {
                        matches!(status, PatchStatus::Patched | PatchStatus::NotModified | PatchStatus::Created)
                    }
                    ByQueryDetail::Deleted { .. } => true,
                };
                changed += u64::from(counts);
                if options.details {
                    details.push(detail);
                }
            }
        }
        Ok(Some(ByQueryResult { query: request.query, changed, details }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_clause_and_declared_functions_become_the_script() {
        let parts =
            update_parts("declare function twice(x) { return x * 2; }\nfrom Users as u where u.Age > 1 update { u.Age = twice(u.Age); }")
                .unwrap()
                .unwrap();
        assert!(parts.script.starts_with("function twice(x) { return x * 2; }"));
        assert!(parts.script.trim_end().ends_with("u.Age = twice(u.Age);"));
        assert_eq!(parts.alias.as_deref(), Some("u"));
        assert!(update_parts("from Users").unwrap().is_none());
    }
}
