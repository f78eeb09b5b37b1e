//! Statistics: per database (`/stats`), per collection, and server metrics (`/admin/metrics`).

use std::sync::atomic::Ordering;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::DatabaseStats;
use corvid_types::format_date;
use serde_json::{json, Map, Value};

use crate::error::ApiResult;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

pub fn humane(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} Bytes")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

fn size(bytes: u64) -> Value {
    json!({"SizeInBytes": bytes, "HumaneSize": humane(bytes)})
}

/// `last_indexing_time`: the latest batch of any index (RavenDB's database-level `LastIndexingTime`).
pub(crate) fn stats_json(stats: &DatabaseStats, indexes: Vec<Value>, last_indexing_time: i64) -> Value {
    json!({
        "CountOfIndexes": indexes.len(), "CountOfDocuments": stats.count_of_documents, "CountOfRevisionDocuments": stats.count_of_revision_documents,
        "CountOfDocumentsConflicts": 0, "CountOfTombstones": stats.count_of_tombstones, "CountOfConflicts": 0,
        "CountOfAttachments": stats.count_of_attachments, "CountOfUniqueAttachments": stats.count_of_unique_attachments,
        "CountOfCounterEntries": stats.count_of_counter_entries, "CountOfTimeSeriesSegments": stats.count_of_time_series_segments,
        "Indexes": indexes,
        "DatabaseChangeVector": if stats.last_database_etag > 0 { corvid_types::format_change_vector(stats.last_database_etag, &stats.database_id) } else { String::new() },
        "DatabaseId": stats.database_id, "Is64Bit": true, "Pager": "LMDB",
        "LastDocEtag": stats.last_doc_etag, "LastDatabaseEtag": stats.last_database_etag,
        "LastIndexingTime": super::indexes::date_or_null(last_indexing_time),
        "SizeOnDisk": size(stats.size_on_disk), "TempBuffersSizeOnDisk": size(0),
        "NumberOfTransactionMergerQueueOperations": stats.queued_writes
    })
}

pub async fn database_stats(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let stats = blocking(move || Ok(database.stats()?)).await?;
    let (indexes, last_indexing_time) = super::indexes::stats_summaries(&state, &db).await?;
    Ok(json_value(StatusCode::OK, &stats_json(&stats, indexes, last_indexing_time)))
}

pub async fn detailed_stats(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let stats = blocking(move || Ok(database.stats()?)).await?;
    let (indexes, last_indexing_time) = super::indexes::stats_summaries(&state, &db).await?;
    let mut body = stats_json(&stats, indexes, last_indexing_time);
    body["CountOfIdentities"] = json!(stats.count_of_identities);
    body["CountOfCompareExchange"] = json!(stats.count_of_compare_exchange);
    body["CountOfCompareExchangeTombstones"] = json!(0);
    Ok(json_value(StatusCode::OK, &body))
}

pub async fn collection_stats(State(state): State<AppState>, Path(db): Path<String>) -> ApiResult<Response> {
    let database = state.landlord.database(&db).await?;
    let stats = blocking(move || Ok(database.collection_stats()?)).await?;
    let collections: Map<String, Value> = stats.collections.into_iter().map(|(name, n)| (name, json!(n))).collect();
    Ok(json_value(
        StatusCode::OK,
        &json!({"CountOfDocuments": stats.count_of_documents, "CountOfConflicts": 0, "Collections": collections}),
    ))
}

/// Server metrics: requests, and the transaction merger of every open database. Opens nothing.
pub async fn metrics(State(state): State<AppState>) -> Response {
    json_value(StatusCode::OK, &metrics_json(&state))
}

/// The body of `/admin/metrics` (also a part of the debug info package).
pub(crate) fn metrics_json(state: &AppState) -> Value {
    let databases: Map<String, Value> = state
        .landlord
        .loaded()
        .into_iter()
        .map(|db| (db.name().to_owned(), serde_json::to_value(db.merger_stats()).unwrap_or(Value::Null)))
        .collect();
    let subscription_workers: usize = state.landlord.loaded().iter().map(|db| db.subscription_connections().count()).sum();
    let available = state.request_slots.available_permits();
    let queries = state.queries.stats();
    json!({
            "Time": format_date(corvid_types::now_nanos()),
            "Requests": {
                "Total": state.request_counter.load(Ordering::Relaxed),
                "Active": state.config.max_concurrent_requests.saturating_sub(available),
                "RejectedTooBusy": state.rejected_requests.load(Ordering::Relaxed),
                "MaxConcurrent": state.config.max_concurrent_requests
            },
            "Queries": {
                "Running": queries.running,
                "Queued": queries.queued,
                "RejectedTooBusy": queries.rejected,
                "CancelledClientGone": queries.cancelled,
                "MaxConcurrent": queries.max_running
            },
            "MemoryBudget": state.memory_budget.stats(),
            "Changes": {
                "Connected": state.changes_clients.load(Ordering::Relaxed),
                "DroppedTooSlow": state.changes_dropped.load(Ordering::Relaxed)
            },
            "Subscriptions": {"ConnectedWorkers": subscription_workers},
            "IdleUnloading": {
                "MaxIdleTimeInSec": state.config.max_idle_time.as_secs(),
                "Unloads": state.landlord.idle.unloads.load(Ordering::Relaxed),
                "KeptOpenForRunningWork": state.landlord.idle.kept_busy.load(Ordering::Relaxed),
                "UnloadingNow": state.landlord.idle.unloading.load(Ordering::Relaxed)
            },
            "Security": crate::security::metrics(state),
            "Databases": databases,
            // Requests per database since start, loaded or not (the Studio's traffic per database).
            "DatabaseRequests": state.database_traffic.snapshot().into_iter().map(|(name, count)| (name, Value::from(count))).collect::<Map<String, Value>>()
    })
}
