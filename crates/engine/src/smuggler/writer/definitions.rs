//! The sections that are not documents: `DatabaseRecord`, `Indexes`, `Identities`, `CompareExchange` and
//! `Subscriptions`.

use std::io::Write;

use serde_json::{json, Value};

use super::{io_error, ExportRun};
use crate::smuggler::format::{auto_map_reduce, sections};
use crate::smuggler::item_types::ItemType;
use crate::{EngineError, IndexInfo};

/// Compare-exchange values are read in pages of this many.
const COMPARE_EXCHANGE_PAGE: usize = 1024;

pub(super) fn database_record<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    let mut record = json!({"DatabaseName": run.db.name(), "Encrypted": false, "UnusedDatabaseIds": []});
    if let Value::Object(parts) = &mut record {
        crate::smuggler::record_config::export_parts(run.db, parts)?;
        parts.insert("TimeSeries".into(), run.options.time_series_config.clone().unwrap_or(Value::Null));
    }
    // Corvid writes these sections whole in every dump (an incremental backup too); a restore replaying a
    // backup chain may then take them as the database's complete state at that point (deletes included).
    // RavenDB ignores the property.
    if run.options.collections.is_empty() {
        let complete: Vec<&str> =
            [(ItemType::CompareExchange, sections::COMPARE_EXCHANGE), (ItemType::CounterGroups, sections::COUNTER_GROUPS)]
                .into_iter()
                .filter(|(t, _)| run.options.types.contains(*t))
                .map(|(_, name)| name)
                .collect();
        record[sections::COMPLETE_SECTIONS] = json!(complete);
    }
    run.out.object_section(sections::DATABASE_RECORD, &record.to_string()).map_err(io_error)?;
    run.result.database_record.processed = true;
    Ok(())
}

/// RavenDB's item of one index: static definitions as the client sent them, automatic ones as RavenDB
/// persists them (`Collections`, `MapFields`).
pub(crate) fn index_item(info: &IndexInfo) -> Option<Value> {
    if let Some(Value::Object(definition)) = &info.static_definition {
        let mut definition = definition.clone();
        definition.insert("Name".into(), json!(info.name));
        definition.insert("Type".into(), json!(info.index_type));
        return Some(json!({"Type": info.index_type, "IndexDefinition": definition}));
    }
    if info.index_type == "AutoMapReduce" {
        return Some(auto_map_reduce::render(info));
    }
    if info.index_type != "AutoMap" {
        return None;
    }
    let fields: Vec<Value> = info
        .fields
        .iter()
        .map(|f| {
            let indexing = match (f.search, f.exact) {
                (true, true) => "Search, Exact",
                (true, false) => "Search",
                (false, true) => "Exact",
                (false, false) => "Default",
            };
            json!({"Name": f.path, "Indexing": indexing, "HasSuggestions": false, "Spatial": null})
        })
        .collect();
    Some(json!({
        "Type": "AutoMap",
        "IndexDefinition": {"Name": info.name, "Collections": [info.collection], "MapFields": fields,
                            "LockMode": info.lock_mode, "Priority": info.priority}
    }))
}

pub(super) fn indexes<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::INDEXES).map_err(io_error)?;
    run.result.indexes.processed = true;
    for info in run.db.index_infos()? {
        // A replacement being built side by side is the index's next version, not an index of its own.
        if info.name.starts_with("ReplacementOf/") {
            continue;
        }
        match index_item(&info) {
            Some(item) => {
                run.out.item(&item.to_string()).map_err(io_error)?;
                run.result.indexes.read += 1;
            }
            None => {
                run.result.indexes.skipped += 1;
                run.result.note(format!(
                    "Index '{}' ({}) was not exported: Corvid exports this index type's definition not yet",
                    info.name, info.index_type
                ));
            }
        }
    }
    run.out.end_section().map_err(io_error)
}

pub(super) fn identities<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::IDENTITIES).map_err(io_error)?;
    run.result.identities.processed = true;
    for (name, value) in run.txn.identities()? {
        // RavenDB writes the value as a string.
        let item = json!({"Key": name, "Value": value.to_string()});
        run.out.item(&item.to_string()).map_err(io_error)?;
        run.result.identities.read += 1;
    }
    run.out.end_section().map_err(io_error)
}

pub(super) fn compare_exchange<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::COMPARE_EXCHANGE).map_err(io_error)?;
    run.result.compare_exchange.processed = true;
    let mut start = 0;
    loop {
        let page = run.txn.compare_exchange_with_prefix("", start, COMPARE_EXCHANGE_PAGE)?;
        for record in &page {
            // The value is the stored JSON object as a string, as RavenDB writes it.
            let item = json!({"Key": record.key, "Value": record.value});
            run.out.item(&item.to_string()).map_err(io_error)?;
            run.result.compare_exchange.read += 1;
        }
        if page.len() < COMPARE_EXCHANGE_PAGE {
            break;
        }
        start += page.len();
        run.advance()?;
    }
    run.out.end_section().map_err(io_error)
}

pub(super) fn subscriptions<W: Write>(run: &mut ExportRun<'_, '_, W>) -> Result<(), EngineError> {
    run.out.begin_section(sections::SUBSCRIPTIONS).map_err(io_error)?;
    run.result.subscriptions.processed = true;
    for definition in run.db.subscriptions()? {
        run.out.item(&definition.state_json().to_string()).map_err(io_error)?;
        run.result.subscriptions.read += 1;
    }
    run.out.end_section().map_err(io_error)
}
