//! `GET|POST /databases/{db}/admin/smuggler/import-dir?dir=` (RavenDB's server-side import of a folder):
//! every dump and backup file of a folder on the server's disk imported in order (see
//! `corvid_engine::backup::import_directory`), tracked as an operation; answers the summed counts.
//! Options come in the query as RavenDB's admin import takes them (`OperateOnTypes`, `TransformScript`,
//! `MaxStepsForTransformScript`, `SkipRevisionCreation`, `collection`).

use std::path::PathBuf;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use corvid_engine::smuggler::{ImportOptions, SmugglerResult};
use corvid_engine::OperationResult;
use serde_json::{json, Map, Value};

use super::smuggler::{copy_form_options, keep_record_config, result_json};
use crate::error::{ApiError, ApiResult};
use crate::query::QueryParams;
use crate::responses::{blocking, json_value};
use crate::state::AppState;

/// The import options the query carries.
fn options_of(query: &QueryParams) -> ApiResult<ImportOptions> {
    let mut json = Map::new();
    copy_form_options(query, &["OperateOnTypes", "TransformScript"], &mut json)?;
    json.insert("SkipRevisionCreation".into(), json!(query.get_bool("SkipRevisionCreation")));
    json.insert("Collections".into(), json!(query.get_all("collection")));
    Ok(ImportOptions::from_json(&Value::Object(json))?)
}

/// `GET|POST /databases/{db}/admin/smuggler/import-dir?dir=&operationId=`.
pub async fn import_dir(State(state): State<AppState>, Path(db): Path<String>, RawQuery(raw): RawQuery) -> ApiResult<Response> {
    let query = QueryParams::parse(raw.as_deref())?;
    let dir = PathBuf::from(query.get_non_empty("dir").ok_or_else(|| ApiError::BadRequest("Query string value 'dir' is required".into()))?);
    let options = options_of(&query)?;
    let database = state.landlord.database(&db).await?;
    let operation = database.operations().start(
        query.get_u64("operationId"),
        "DatabaseImport",
        format!("Import of folder '{}' into '{db}'", dir.display()),
    );
    let op = operation.clone();
    let outcome = blocking(move || {
        let mut imported_before = 0;
        let mut current = String::new();
        let mut progress = |file: &str, so_far: &SmugglerResult| {
            if file != current {
                // A new file's counts start at zero: what the earlier files moved stays counted.
                imported_before = op.snapshot().processed;
                current = file.to_owned();
            }
            let seen = op.snapshot().processed;
            op.add_processed((imported_before + so_far.total_items()).saturating_sub(seen));
            !op.is_canceled()
        };
        Ok(corvid_engine::backup::import_directory(&database, &dir, &options, &mut progress))
    })
    .await?;
    match outcome {
        Ok(mut result) => {
            keep_record_config(&state, &db, &mut result).await?;
            tracing::info!(database = %db, summary = %result.summary(), "import of a folder done");
            let json = result_json(&result);
            operation.complete(OperationResult::Smuggler(Box::new(result)));
            Ok(json_value(StatusCode::OK, &json))
        }
        Err(e) => {
            let error = ApiError::logged(&e);
            operation.fail(e);
            Err(error)
        }
    }
}
