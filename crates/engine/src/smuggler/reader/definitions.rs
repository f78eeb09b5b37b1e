//! Items that are definitions rather than data: indexes (created once the documents are in) and
//! subscriptions (recreated from their name and query, starting from the beginning, as RavenDB does).

use serde_json::Value;

use crate::indexing::AutoIndexField;
use crate::smuggler::format::auto_map_reduce;
use crate::smuggler::smuggler_result::SmugglerResult;
use crate::subscriptions::{SubscriptionKey, SubscriptionRequest};
use crate::{Database, EngineError};

/// RavenDB's obsolete system indexes, never imported.
const OBSOLETE_INDEXES: &[&str] = &["Raven/DocumentsByEntityName", "Raven/ConflictDocuments"];

/// Creates one index from its dump item; what cannot be created is counted and noted.
pub(crate) fn import_index(db: &Database, item: &Value, result: &mut SmugglerResult) -> Result<(), EngineError> {
    let kind = item.get("Type").and_then(Value::as_str).unwrap_or("Map");
    let definition =
        item.get("IndexDefinition").or_else(|| item.get("Definition")).or_else(|| item.get("definition")).filter(|d| d.is_object());
    let Some(definition) = definition else {
        result.indexes.errored += 1;
        result.note("An index item without a definition was skipped");
        return Ok(());
    };
    let name = definition.get("Name").or_else(|| item.get("name")).and_then(Value::as_str).unwrap_or("").to_owned();
    if OBSOLETE_INDEXES.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
        result.indexes.skipped += 1;
        return Ok(());
    }
    let outcome = match kind {
        "AutoMap" => auto_map(db, definition),
        "AutoMapReduce" => auto_map_reduce(db, definition),
        _ => db.put_indexes(std::slice::from_ref(definition)).map(|_| ()),
    };
    match outcome {
        Ok(()) => result.indexes.read += 1,
        Err(e) => {
            result.indexes.errored += 1;
            result.note(format!("Index '{name}' ({kind}) was not imported: {e}"));
        }
    }
    Ok(())
}

/// An automatic map index, from RavenDB's persisted form (`Collections`, `MapFields` as a list or by name).
fn auto_map(db: &Database, definition: &Value) -> Result<(), EngineError> {
    let collection = definition
        .get("Collections")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .and_then(Value::as_str)
        .ok_or_else(|| EngineError::bad_request("an automatic index needs 'Collections'"))?;
    let fields: Vec<&Value> = match definition.get("MapFields") {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(Value::Object(by_name)) => by_name.values().collect(),
        _ => Vec::new(),
    };
    let mut needed = Vec::with_capacity(fields.len());
    for field in fields {
        let Some(path) = field.get("Name").and_then(Value::as_str) else { continue };
        let indexing = field.get("Indexing").and_then(Value::as_str).unwrap_or("Default");
        let mut spec = AutoIndexField::plain(path);
        spec.search = indexing.contains("Search");
        spec.exact = indexing.contains("Exact");
        needed.push(spec);
    }
    db.indexes.find_or_create(collection, &needed)?;
    Ok(())
}

/// An automatic map-reduce index, from RavenDB's persisted form (see `format::auto_map_reduce`).
fn auto_map_reduce(db: &Database, definition: &Value) -> Result<(), EngineError> {
    let (collection, group_by, aggregations) = auto_map_reduce::parse(definition).map_err(EngineError::bad_request)?;
    db.indexes.find_or_create_reduce(&collection, &group_by, &aggregations)?;
    Ok(())
}

/// Recreates a subscription unless one of that name exists.
pub(crate) fn import_subscription(db: &Database, item: &Value, result: &mut SmugglerResult) -> Result<(), EngineError> {
    let name = item.get("SubscriptionName").and_then(Value::as_str).map(str::to_owned);
    let query = item.get("Query").and_then(Value::as_str).map(str::to_owned);
    if let Some(name) = &name {
        if db.subscription(&SubscriptionKey::Name(name.clone()))?.is_some() {
            result.subscriptions.skipped += 1;
            return Ok(());
        }
    }
    let request = SubscriptionRequest {
        name: name.clone(),
        query,
        disabled: item.get("Disabled").and_then(Value::as_bool),
        ..SubscriptionRequest::default()
    };
    match db.create_subscription(request) {
        Ok(_) => result.subscriptions.read += 1,
        Err(e) => {
            result.subscriptions.errored += 1;
            result.note(format!("Subscription '{}' was not imported: {e}", name.unwrap_or_default()));
        }
    }
    Ok(())
}
