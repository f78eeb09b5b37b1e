//! Snapshots of the error table: the status code, headers and JSON body answered for every `ApiError` kind and
//! for every `EngineError` kind as it reaches the table through `From<EngineError> for ApiError`. Clients pick
//! their exception type from these bodies, so any change to one shows up as a snapshot diff to review.
//!
//! Adding a variant to either enum breaks the build here: `api_kind` and `engine_kind` match without a
//! wildcard, and the new arm needs a name and an example in `api_examples` / `engine_examples` (the tests check
//! that every kind named in the match has exactly one example).

use crate::error::ApiError;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use corvid_engine::backup::BackupError;
use corvid_engine::{EngineError, StorageError};
use corvid_types::{IdError, NameError, NameKind};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The snapshot name of an `ApiError` kind. No wildcard: a new variant needs an arm (and an example).
fn api_kind(e: &ApiError) -> &'static str {
    match e {
        ApiError::DatabaseDoesNotExist(_) => "database_does_not_exist",
        ApiError::DatabaseLoading { .. } => "database_loading",
        ApiError::DatabaseLoadFailed { .. } => "database_load_failed",
        ApiError::DatabaseDisabled(_) => "database_disabled",
        ApiError::DatabaseAlreadyExists(_) => "database_already_exists",
        ApiError::Concurrency(_) => "concurrency",
        ApiError::ClusterTransactionConcurrency(_) => "cluster_transaction_concurrency",
        ApiError::BadRequest(_) => "bad_request",
        ApiError::DocumentDoesNotExist(_) => "document_does_not_exist",
        ApiError::TimeSeriesDocumentMissing(_) => "time_series_document_missing",
        ApiError::AttachmentDoesNotExist(_) => "attachment_does_not_exist",
        ApiError::AttachmentNotFound => "attachment_not_found",
        ApiError::InvalidHeader(_) => "invalid_header",
        ApiError::InvalidEncoding(_) => "invalid_encoding",
        ApiError::InvalidJson(_) => "invalid_json",
        ApiError::UnsupportedContentEncoding(_) => "unsupported_content_encoding",
        ApiError::BodyTooLarge { .. } => "body_too_large",
        ApiError::ServerTooBusy(_) => "server_too_busy",
        ApiError::RouteNotFound { .. } => "route_not_found",
        ApiError::IndexDoesNotExist(_) => "index_does_not_exist",
        ApiError::InvalidQuery(_) => "invalid_query",
        ApiError::OperationDoesNotExist(_) => "operation_does_not_exist",
        ApiError::Script(_) => "script",
        ApiError::IndexCompilation(_) => "index_compilation",
        ApiError::IndexErrored(_) => "index_errored",
        ApiError::NotSupported(_) => "not_supported",
        ApiError::Timeout(_) => "timeout",
        ApiError::SubscriptionDoesNotExist(_) => "subscription_does_not_exist",
        ApiError::DiskFull(_) => "disk_full",
        ApiError::MapFull(_) => "map_full",
        ApiError::InvalidOperation(_) => "invalid_operation",
        ApiError::Internal(_) => "internal",
        ApiError::Authorization(_) => "authorization",
        // The table answers client and server statuses differently: one kind each.
        ApiError::Rejected { status, .. } if status.is_client_error() => "rejected_client_error",
        ApiError::Rejected { .. } => "rejected_server_error",
    }
}

/// Every kind `api_kind` names, once each (the count is checked against the match's arms below).
const API_KIND_COUNT: usize = 35;

fn api_examples() -> Vec<ApiError> {
    vec![
        ApiError::DatabaseDoesNotExist("Northwind Ä".into()),
        ApiError::DatabaseLoading { name: "db".into(), waited_ms: 5000 },
        ApiError::DatabaseLoadFailed { name: "db".into(), reason: "storage format version 9 is not supported".into() },
        ApiError::DatabaseDisabled("db".into()),
        ApiError::DatabaseAlreadyExists("db".into()),
        ApiError::Concurrency("Document users/1 has change vector A:2-x, expected A:1-x".into()),
        ApiError::ClusterTransactionConcurrency("Failed to execute cluster transaction due to the following issues: Concurrency check failed for putting the key 'usernames/ayende'. Requested index: 0, actual index: 3".into()),
        ApiError::BadRequest("Query string parameter 'id' is mandatory".into()),
        ApiError::DocumentDoesNotExist("users/1".into()),
        ApiError::TimeSeriesDocumentMissing("users/1".into()),
        ApiError::AttachmentDoesNotExist("There is no attachment with 'photo.png' name for document 'users/1'".into()),
        ApiError::AttachmentNotFound,
        ApiError::InvalidHeader("If-Match".into()),
        ApiError::InvalidEncoding("The request body is not valid UTF-8".into()),
        ApiError::InvalidJson("expected value at line 1 column 1".into()),
        ApiError::UnsupportedContentEncoding("Unsupported Content-Encoding 'compress'".into()),
        ApiError::BodyTooLarge { limit: 1024 },
        ApiError::ServerTooBusy("the write queue of database 'db' is full; retry later".into()),
        ApiError::RouteNotFound { method: "GET".into(), path: "/databases/db/nothing".into() },
        ApiError::IndexDoesNotExist("Users/ByName".into()),
        ApiError::InvalidQuery("Expected 'from' at line 1".into()),
        ApiError::OperationDoesNotExist(42),
        ApiError::Script("ReferenceError: x is not defined".into()),
        ApiError::IndexCompilation("Failed to compile index Users/ByName".into()),
        ApiError::IndexErrored("Index 'Users/ByName' is marked as errored.".into()),
        ApiError::NotSupported("Time series are not supported".into()),
        ApiError::Timeout("Waited 15 seconds for the index to catch up".into()),
        ApiError::SubscriptionDoesNotExist("Subscription with name 'orders' was not found in server store".into()),
        ApiError::DiskFull("There is not enough space on the disk".into()),
        ApiError::MapFull("The database's storage map is full".into()),
        ApiError::InvalidOperation("Node A is already a member of database 'db'".into()),
        ApiError::Internal("storage failure: LMDB error".into()),
        ApiError::Authorization("The supplied client certificate 'alice (A1B2)' is unknown to the server.".into()),
        ApiError::Rejected { status: StatusCode::BAD_REQUEST, message: "Invalid URL: path segment is not UTF-8".into() },
        ApiError::Rejected { status: StatusCode::INTERNAL_SERVER_ERROR, message: "handler panicked".into() },
    ]
}

/// The snapshot name of an `EngineError` kind (as it reaches the table). No wildcard: a new variant needs
/// an arm (and an example). Storage errors are split where the table answers them differently.
fn engine_kind(e: &EngineError) -> &'static str {
    match e {
        EngineError::InvalidId(_) => "engine_invalid_id",
        EngineError::InvalidName(_) => "engine_invalid_name",
        EngineError::BadRequest(_) => "engine_bad_request",
        EngineError::DocumentDoesNotExist(_) => "engine_document_does_not_exist",
        EngineError::TimeSeriesDocumentMissing(_) => "engine_time_series_document_missing",
        EngineError::AttachmentDoesNotExist(_) => "engine_attachment_does_not_exist",
        EngineError::Concurrency { .. } => "engine_concurrency",
        EngineError::ClusterTransactionConcurrency { .. } => "engine_cluster_transaction_concurrency",
        EngineError::Busy { .. } => "engine_busy",
        EngineError::ShuttingDown { .. } => "engine_shutting_down",
        EngineError::Storage(StorageError::DiskFull { .. }) => "engine_storage_disk_full",
        EngineError::Storage(StorageError::MapFull) => "engine_storage_map_full",
        EngineError::Storage(_) => "engine_storage_other",
        EngineError::IndexDoesNotExist(_) => "engine_index_does_not_exist",
        EngineError::InvalidQuery { .. } => "engine_invalid_query",
        EngineError::Script { .. } => "engine_script",
        EngineError::IndexCompilation { .. } => "engine_index_compilation",
        EngineError::IndexErrored { .. } => "engine_index_errored",
        EngineError::NotSupported(_) => "engine_not_supported",
        EngineError::InvalidOperation(_) => "engine_invalid_operation",
        EngineError::Timeout(_) => "engine_timeout",
        EngineError::SubscriptionDoesNotExist(_) => "engine_subscription_does_not_exist",
        EngineError::Cancelled => "engine_cancelled",
        EngineError::Backup(e) if e.is_user_fault() => "engine_backup_refused",
        EngineError::Backup(_) => "engine_backup_failed",
        EngineError::Internal(_) => "engine_internal",
    }
}

/// Every kind `engine_kind` names, once each.
const ENGINE_KIND_COUNT: usize = 26;

fn engine_examples() -> Vec<EngineError> {
    vec![
        EngineError::InvalidId(IdError::TooLong { len: 2000, max: 1536 }),
        EngineError::InvalidName(NameError::ReservedCharacter { kind: NameKind::Counter }),
        EngineError::bad_request("Missing 'Commands' in the batch"),
        EngineError::DocumentDoesNotExist("users/1".into()),
        EngineError::TimeSeriesDocumentMissing("users/1".into()),
        EngineError::AttachmentDoesNotExist("There is no attachment with 'photo.png' name for document 'users/1'".into()),
        EngineError::Concurrency { message: "Document users/1 has change vector A:2-x, expected A:1-x".into() },
        EngineError::ClusterTransactionConcurrency { message: "Failed to execute cluster transaction due to the following issues: Concurrency check failed for putting the key 'usernames/ayende'. Requested index: 0, actual index: 3".into() },
        EngineError::Busy { database: "db".into() },
        EngineError::ShuttingDown { database: "db".into() },
        EngineError::Storage(StorageError::DiskFull { path: PathBuf::from("/data/db"), available_bytes: 4096 }),
        EngineError::Storage(StorageError::MapFull),
        EngineError::Storage(StorageError::Corrupted { table: "documents", context: "key users/1".into() }),
        EngineError::IndexDoesNotExist("Users/ByName".into()),
        EngineError::InvalidQuery { message: "field 'Name' is not in the index".into() },
        EngineError::Script { message: "ReferenceError: x is not defined".into() },
        EngineError::IndexCompilation { message: "Failed to compile index Users/ByName".into() },
        EngineError::IndexErrored { name: "Users/ByName".into(), reason: "It has 20 map errors.".into() },
        EngineError::NotSupported("Time series are not supported in a bulk insert".into()),
        EngineError::InvalidOperation("Failed to create revision for document users/1 because document doesn't exits.".into()),
        EngineError::Timeout("Waited 15 seconds for the index to catch up".into()),
        EngineError::SubscriptionDoesNotExist("Subscription with id 7 was not found in server store".into()),
        EngineError::Cancelled,
        EngineError::Backup(BackupError::Incomplete { path: PathBuf::from("/backups/2026-11-26-12-00-00.corvid-db-snapshot"), manifest: "corvid-snapshot.json" }),
        EngineError::Backup(BackupError::Io { path: PathBuf::from("/backups/x"), source: std::io::Error::other("disk failed") }),
        EngineError::Internal("the merger thread is gone".into()),
    ]
}

/// The response as a reviewable text: status line, the headers clients read, and the pretty-printed body.
async fn rendered(error: ApiError) -> String {
    let response = error.into_response();
    let mut text = format!("status: {}\n", response.status());
    for name in ["content-type", "database-missing", "retry-after"] {
        if let Some(value) = response.headers().get(name) {
            text.push_str(&format!("{name}: {}\n", value.to_str().expect("ASCII header")));
        }
    }
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    let body = if bytes.is_empty() {
        "(empty)".to_owned()
    } else {
        let json: serde_json::Value = serde_json::from_slice(&bytes).expect("error body is JSON");
        serde_json::to_string_pretty(&json).expect("JSON")
    };
    text.push_str("body:\n");
    text.push_str(&body);
    text
}

/// The names of the examples, checked to be distinct and as many as the kinds.
fn distinct_names(names: Vec<&'static str>, kinds: usize) -> Vec<&'static str> {
    let set: BTreeSet<_> = names.iter().copied().collect();
    assert_eq!(set.len(), names.len(), "two examples of one kind: {names:?}");
    assert_eq!(names.len(), kinds, "every kind needs exactly one example (update the *_KIND_COUNT too)");
    names
}

#[tokio::test]
async fn every_api_error_kind_has_a_snapshot() {
    let examples = api_examples();
    distinct_names(examples.iter().map(api_kind).collect(), API_KIND_COUNT);
    for error in examples {
        let name = api_kind(&error);
        insta::assert_snapshot!(name, rendered(error).await);
    }
}

#[tokio::test]
async fn every_engine_error_kind_has_a_snapshot() {
    let examples = engine_examples();
    distinct_names(examples.iter().map(engine_kind).collect(), ENGINE_KIND_COUNT);
    for error in examples {
        let name = engine_kind(&error);
        insta::assert_snapshot!(name, rendered(ApiError::from(error)).await);
    }
}

/// The kind counts follow the matches: each arm of `api_kind` / `engine_kind` is one `=> "` in this file.
#[test]
fn kind_counts_match_the_arms() {
    let source = include_str!("error_snapshots.rs");
    let section = |from: &str, to: &str| {
        let start = source.find(from).expect("start");
        let end = start + source[start..].find(to).expect("end");
        source[start..end].matches("=> \"").count()
    };
    assert_eq!(section("fn api_kind(", "const API_KIND_COUNT"), API_KIND_COUNT);
    assert_eq!(section("fn engine_kind(", "const ENGINE_KIND_COUNT"), ENGINE_KIND_COUNT);
}
