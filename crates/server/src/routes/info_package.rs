//! `GET /admin/debug/info-package`: one zip with what an administrator (or a bug report) needs at once:
//! server metrics, threads, memory and settings (secrets removed), and for every loaded database its
//! statistics, index statistics, errors and performance. Databases that are not loaded are listed but not
//! opened. I/O metrics have their slot (`io-metrics.json`) for when they exist.

use std::io::Write;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use zip::write::SimpleFileOptions;

use super::index_performance::batch_json;
use crate::error::{ApiError, ApiResult};
use crate::process_info;
use crate::responses::blocking;
use crate::state::AppState;

/// The parts of the package: a path inside the zip and its content.
type Parts = Vec<(String, Vec<u8>)>;

fn json_part(path: impl Into<String>, value: &Value) -> (String, Vec<u8>) {
    (path.into(), serde_json::to_vec_pretty(value).unwrap_or_default())
}

pub async fn info_package(State(state): State<AppState>) -> ApiResult<Response> {
    let mut parts: Parts = vec![
        json_part("server/metrics.json", &super::stats::metrics_json(&state)),
        json_part(
            "server/databases.json",
            &json!({"Loaded": state.landlord.loaded().iter().map(|d| d.name().to_owned()).collect::<Vec<_>>()}),
        ),
        ("server/settings.txt".into(), process_info::redacted_settings(&format!("{:#?}", state.config)).into_bytes()),
    ];
    let loaded = state.landlord.loaded();
    let zip = blocking(move || {
        parts.push(json_part("server/threads.json", &process_info::threads()));
        parts.push(json_part("server/memory.json", &process_info::memory()));
        for database in loaded {
            let dir = format!("databases/{}", database.name());
            let stats = database.stats()?;
            let infos = database.index_infos()?;
            let indexes: Vec<Value> = infos.iter().map(super::indexes::stats_json).collect();
            parts.push(json_part(format!("{dir}/stats.json"), &super::stats::stats_json(&stats, indexes.clone(), 0)));
            parts.push(json_part(format!("{dir}/indexes-stats.json"), &json!({ "Results": indexes })));
            let performance: Vec<Value> = database
                .index_performance(&[], &|_| 0)?
                .iter()
                .map(|i| json!({"Name": i.name, "Etag": i.etag, "Performance": i.batches.iter().map(|b| batch_json(b)).collect::<Vec<_>>()}))
                .collect();
            parts.push(json_part(format!("{dir}/indexes-performance.json"), &json!({ "Results": performance })));
            let errors: Vec<Value> = database
                .index_errors(None)?
                .into_iter()
                .map(|(name, errors)| json!({"Name": name, "Errors": errors.iter().map(|e| json!({"Error": e.message, "Document": e.document})).collect::<Vec<_>>()}))
                .collect();
            parts.push(json_part(format!("{dir}/indexes-errors.json"), &json!({ "Results": errors })));
            parts.push(json_part(format!("{dir}/merger.json"), &serde_json::to_value(database.merger_stats()).unwrap_or(Value::Null)));
            parts.push(json_part(format!("{dir}/io-metrics.json"), &super::io_metrics::io_metrics_json(&database)));
            parts.push(json_part(format!("{dir}/notifications.json"), &json!({ "Results": super::notifications::notifications(&database) })));
        }
        write_zip(parts)
    })
    .await?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/zip"), (header::CONTENT_DISPOSITION, "attachment; filename=\"corvid-info-package.zip\"")],
        zip,
    )
        .into_response())
}

fn write_zip(parts: Parts) -> Result<Vec<u8>, ApiError> {
    let failed = |e: &dyn std::fmt::Display| ApiError::Internal(format!("building the info package: {e}"));
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (path, content) in parts {
        zip.start_file(path, options).map_err(|e| failed(&e))?;
        zip.write_all(&content).map_err(|e| failed(&e))?;
    }
    Ok(zip.finish().map_err(|e| failed(&e))?.into_inner())
}
