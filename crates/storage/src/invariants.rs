//! Checks a database's storage layout against the invariants of docs/storage-format.md on one snapshot: the
//! three document tables agree, tombstones, attachments and counters point at live documents, reference
//! counts and flags match their rows, no etag is above `meta/last_etag`. Every violation is reported; a
//! broken entry never stops the check.

use std::collections::BTreeMap;
use std::path::Path;

use corvid_types::{format_change_vector, id_key};
use heed::RoTxn;
use serde_json::{json, Map, Value};

use crate::attachments::AttachmentRecord;
use crate::blob_store::{content_path, BLOB_DIR};
use crate::compare_exchange::CompareExchangeRecord;
use crate::counters::{self, CounterValue};
use crate::read_only::open_read_only_env;
use crate::record::{flags, DocumentRecord, Tombstone};
use crate::tables::{self, decode_etag, meta_keys, Tables};
use crate::time_series;
use crate::violation::{InvariantReport, Violation};
use crate::{ReadTxn, StorageError, Store};

mod item_change_rows;
mod revision_rows;

/// Length of a database id: 16 random bytes in base64 without padding.
const DATABASE_ID_LEN: usize = 22;

impl ReadTxn<'_> {
    /// Checks this snapshot against the layout's invariants. Attachment content files are not looked at
    /// (see [`Store::check_invariants`]).
    pub fn check_invariants(&self) -> Result<InvariantReport, StorageError> {
        check(&self.txn, self.tables, None)
    }
}

impl Store {
    /// Checks a snapshot of this database against the layout's invariants, attachment content files included.
    pub fn check_invariants(&self) -> Result<InvariantReport, StorageError> {
        let read = self.read()?;
        check(&read.txn, read.tables, Some(&self.path().join(BLOB_DIR)))
    }
}

/// Checks the closed database in `dir` without writing to it (LMDB only records the reader in its lock file);
/// None when `dir` holds no database yet. Its `Store` must not be open in this process.
pub fn check_closed_store(dir: &Path) -> Result<Option<InvariantReport>, StorageError> {
    if !dir.join(tables::DATA_FILE).is_file() {
        return Ok(None);
    }
    let env = open_read_only_env(dir, tables::TABLE_COUNT + 2)?;
    let opening = env.read_txn()?;
    let tables = match Tables::open_existing(&env, &opening)? {
        Ok(tables) => tables,
        Err(missing) => {
            let violations = missing.into_iter().map(|table| Violation::MissingTable { table }).collect();
            return Ok(Some(InvariantReport { violations, ..InvariantReport::default() }));
        }
    };
    // Committing the opening transaction keeps the table handles for the next one (heed's rule for
    // environments another process wrote).
    opening.commit()?;
    let rtxn = env.read_txn()?;
    check(&rtxn, tables, Some(&dir.join(BLOB_DIR))).map(Some)
}

fn check(txn: &RoTxn<'_>, tables: Tables, blob_dir: Option<&Path>) -> Result<InvariantReport, StorageError> {
    let mut checker = Checker { txn, tables, database_id: None, last_etag: 0, report: InvariantReport::default() };
    checker.meta()?;
    checker.documents()?;
    checker.docs_by_etag()?;
    checker.collection_etags()?;
    checker.tombstones()?;
    let hashes = checker.attachments()?;
    checker.attachment_refs(hashes, blob_dir)?;
    checker.counters()?;
    checker.compare_exchange()?;
    checker.time_series()?;
    checker.identities()?;
    checker.revisions()?;
    checker.item_changes()?;
    Ok(checker.report)
}

struct Checker<'a> {
    txn: &'a RoTxn<'a>,
    tables: Tables,
    /// `meta/database_id` when readable: change vectors are checked against it.
    database_id: Option<String>,
    last_etag: u64,
    report: InvariantReport,
}

/// Why a record does not decode (the table is named by the violation already).
fn decode_failure(e: StorageError) -> String {
    match e {
        StorageError::Corrupted { context, .. } => context,
        other => other.to_string(),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// How an attachment or counter row is named in a report: document key, `#`, lower-cased name.
fn named_key_text(doc_key: &[u8], name: &[u8]) -> String {
    format!("{}#{}", text(doc_key), text(name))
}

impl Checker<'_> {
    fn violation(&mut self, violation: Violation) {
        self.report.violations.push(violation);
    }

    fn unreadable(&mut self, table: &'static str, key: String, reason: impl Into<String>) {
        self.violation(Violation::Unreadable { table, key, reason: reason.into() });
    }

    fn etag_at_most_last(&mut self, table: &'static str, key: &str, etag: u64) {
        if etag > self.last_etag {
            self.violation(Violation::EtagAboveLast { table, key: key.to_owned(), etag, last_etag: self.last_etag });
        }
    }

    fn change_vector(&mut self, table: &'static str, key: &str, etag: u64, found: &str) {
        let Some(database_id) = &self.database_id else { return };
        let expected = format_change_vector(etag, database_id);
        if found != expected {
            self.violation(Violation::ChangeVector { table, key: key.to_owned(), found: found.to_owned(), expected });
        }
    }

    fn document(&self, key: &[u8]) -> Result<Option<DocumentRecord>, StorageError> {
        // An undecodable document is reported by the pass over `docs`.
        Ok(self.tables.docs.get(self.txn, key)?.and_then(|bytes| DocumentRecord::decode(bytes).ok()))
    }

    fn document_exists(&self, key: &[u8]) -> Result<bool, StorageError> {
        Ok(!key.is_empty() && self.tables.docs.get(self.txn, key)?.is_some())
    }

    /// Format version, database id and the last etag handed out.
    fn meta(&mut self) -> Result<(), StorageError> {
        let meta = self.tables.meta;
        match meta.get(self.txn, meta_keys::FORMAT_VERSION)? {
            None => self.violation(Violation::FormatVersion { found: "missing".into(), expected: tables::FORMAT_VERSION }),
            Some(bytes) => match <[u8; 4]>::try_from(bytes) {
                Ok(be) if u32::from_be_bytes(be) == tables::FORMAT_VERSION => {}
                Ok(be) => {
                    self.violation(Violation::FormatVersion { found: u32::from_be_bytes(be).to_string(), expected: tables::FORMAT_VERSION })
                }
                Err(_) => self.unreadable(tables::META, "format_version".into(), "value is not 4 bytes"),
            },
        }
        match meta.get(self.txn, meta_keys::DATABASE_ID)? {
            None => self.violation(Violation::DatabaseId { found: "missing".into() }),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(id) => {
                    let base64 = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
                    if id.len() != DATABASE_ID_LEN || !id.bytes().all(base64) {
                        self.violation(Violation::DatabaseId { found: id.to_owned() });
                    }
                    self.database_id = Some(id.to_owned());
                }
                Err(_) => self.violation(Violation::DatabaseId { found: "not UTF-8".into() }),
            },
        }
        match meta.get(self.txn, meta_keys::LAST_ETAG)? {
            None => {}
            Some(bytes) => match decode_etag(bytes) {
                Some(etag) => self.last_etag = etag,
                None => self.unreadable(tables::META, "last_etag".into(), "value is not 8 bytes"),
            },
        }
        Ok(())
    }

    /// Each document has its `docs_by_etag` and `collection_etags` entries, the change vector of its etag,
    /// and flags and server-kept metadata that match its attachment and counter rows.
    fn documents(&mut self) -> Result<(), StorageError> {
        for entry in self.tables.docs.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.documents += 1;
            let key_text = text(key);
            let record = match DocumentRecord::decode(value) {
                Ok(record) => record,
                Err(e) => {
                    self.unreadable(tables::DOCS, key_text, decode_failure(e));
                    continue;
                }
            };
            if id_key(&record.id).as_bytes() != key {
                self.violation(Violation::KeyMismatch { table: tables::DOCS, key: key_text.clone(), found: record.id.clone() });
            }
            if self.tables.docs_by_etag.get(self.txn, &tables::etag_key(record.etag))? != Some(key) {
                let table = tables::DOCS_BY_ETAG;
                self.violation(Violation::MissingIndexEntry { table, key: key_text.clone(), etag: record.etag });
            }
            let collection_key = tables::collection_etag_key(&id_key(&record.collection), record.etag);
            if self.tables.collection_etags.get(self.txn, &collection_key)? != Some(key) {
                let table = tables::COLLECTION_ETAGS;
                self.violation(Violation::MissingIndexEntry { table, key: key_text.clone(), etag: record.etag });
            }
            self.etag_at_most_last(tables::DOCS, &key_text, record.etag);
            self.change_vector(tables::DOCS, &key_text, record.etag, &record.change_vector);
            self.server_kept_metadata(key, &key_text, &record)?;
        }
        Ok(())
    }

    /// The `HasAttachments` / `HasCounters` flags and the `@attachments` / `@counters` lists of the client
    /// metadata, as the engine writes them from the rows (attachments in key order, counter names sorted
    /// case-insensitively).
    fn server_kept_metadata(&mut self, key: &[u8], key_text: &str, record: &DocumentRecord) -> Result<(), StorageError> {
        let mut prefix = key.to_vec();
        prefix.push(tables::NAME_SEPARATOR);
        let mut attachments: Vec<AttachmentRecord> = Vec::new();
        for entry in self.tables.attachments.prefix_iter(self.txn, &prefix)? {
            // Undecodable rows are reported by the pass over `attachments`.
            attachments.extend(AttachmentRecord::decode(entry?.1).ok());
        }
        let mut counters: Vec<CounterValue> = Vec::new();
        for entry in self.tables.counters.prefix_iter(self.txn, &prefix)? {
            counters.extend(counters::decode(entry?.1).ok());
        }
        let mut series: Vec<String> = Vec::new();
        for entry in self.tables.time_series_stats.prefix_iter(self.txn, &prefix)? {
            series.extend(time_series::decode_stats(entry?.1).ok().map(|s| s.name));
        }
        let checks = [
            (flags::HAS_ATTACHMENTS, "HasAttachments", tables::ATTACHMENTS, attachments.len()),
            (flags::HAS_COUNTERS, "HasCounters", tables::COUNTERS, counters.len()),
            (flags::HAS_TIME_SERIES, "HasTimeSeries", tables::TIME_SERIES_STATS, series.len()),
        ];
        for (bit, flag, table, rows) in checks {
            let set = record.flags & bit != 0;
            if set != (rows > 0) {
                self.violation(Violation::Flag { key: key_text.to_owned(), flag, set, table, rows });
            }
        }
        let listed = |field: &str| record.client_metadata.contains(&format!("\"{field}\""));
        if attachments.is_empty()
            && counters.is_empty()
            && series.is_empty()
            && !listed("@attachments")
            && !listed("@counters")
            && !listed("@timeseries")
        {
            return Ok(());
        }
        let Ok(metadata) = corvid_types::json::parse::<Map<String, Value>>(&record.client_metadata) else {
            self.unreadable(tables::DOCS, key_text.to_owned(), "client metadata is not a JSON object");
            return Ok(());
        };
        let expected_attachments = (!attachments.is_empty()).then(|| {
            let list = attachments.iter().map(|a| json!({"Name": a.name, "Hash": a.hash, "ContentType": a.content_type, "Size": a.size}));
            Value::Array(list.collect())
        });
        if metadata.get("@attachments") != expected_attachments.as_ref() {
            self.violation(Violation::ServerMetadata { key: key_text.to_owned(), field: "@attachments", table: tables::ATTACHMENTS });
        }
        let mut names: Vec<String> = counters.into_iter().map(|c| c.name).collect();
        names.sort_by_key(|n| n.to_lowercase());
        let expected_counters = (!names.is_empty()).then(|| json!(names));
        if metadata.get("@counters") != expected_counters.as_ref() {
            self.violation(Violation::ServerMetadata { key: key_text.to_owned(), field: "@counters", table: tables::COUNTERS });
        }
        series.sort_by_key(|n| n.to_lowercase());
        let expected_series = (!series.is_empty()).then(|| json!(series));
        if metadata.get("@timeseries") != expected_series.as_ref() {
            self.violation(Violation::ServerMetadata { key: key_text.to_owned(), field: "@timeseries", table: tables::TIME_SERIES_STATS });
        }
        Ok(())
    }

    /// Each `docs_by_etag` entry points to a document with that etag.
    fn docs_by_etag(&mut self) -> Result<(), StorageError> {
        let table = tables::DOCS_BY_ETAG;
        for entry in self.tables.docs_by_etag.iter(self.txn)? {
            let (key, target) = entry?;
            let Some(etag) = decode_etag(key) else {
                self.unreadable(table, text(key), "key is not 8 bytes");
                continue;
            };
            let (key, target_text) = (etag.to_string(), text(target));
            if !self.document_exists(target)? {
                self.violation(Violation::Dangling { table, key, target: target_text });
            } else if let Some(doc) = self.document(target)?.filter(|doc| doc.etag != etag) {
                let (etag, collection) = (doc.etag, doc.collection);
                self.violation(Violation::StaleEntry { table, key, target: target_text, etag, collection });
            }
        }
        Ok(())
    }

    /// Each `collection_etags` entry points to a document of that collection with that etag.
    fn collection_etags(&mut self) -> Result<(), StorageError> {
        let table = tables::COLLECTION_ETAGS;
        for entry in self.tables.collection_etags.iter(self.txn)? {
            let (key, target) = entry?;
            let Some((collection, etag)) = tables::split_collection_etag_key(key) else {
                self.unreadable(table, text(key), "key is not u16 length + collection + u64 etag");
                continue;
            };
            let (key, target_text) = (format!("{}#{etag}", text(collection)), text(target));
            let elsewhere = |doc: &DocumentRecord| doc.etag != etag || id_key(&doc.collection).as_bytes() != collection;
            if !self.document_exists(target)? {
                self.violation(Violation::Dangling { table, key, target: target_text });
            } else if let Some(doc) = self.document(target)?.filter(elsewhere) {
                let (etag, collection) = (doc.etag, doc.collection);
                self.violation(Violation::StaleEntry { table, key, target: target_text, etag, collection });
            }
        }
        Ok(())
    }

    /// Tombstones have their own etags (no live document shares one, none is newer than a live document of
    /// the same id) and the change vector of their etag.
    fn tombstones(&mut self) -> Result<(), StorageError> {
        let table = tables::TOMBSTONES;
        for entry in self.tables.tombstones.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.tombstones += 1;
            let Some(etag) = decode_etag(key) else {
                self.unreadable(table, text(key), "key is not 8 bytes");
                continue;
            };
            let key_text = etag.to_string();
            let tombstone = match Tombstone::decode(etag, value) {
                Ok(tombstone) => tombstone,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            self.etag_at_most_last(table, &key_text, etag);
            self.change_vector(table, &key_text, etag, &tombstone.change_vector);
            if self.tables.docs_by_etag.get(self.txn, key)?.is_some() {
                self.violation(Violation::EtagShared { etag });
            }
            let doc_key = id_key(&tombstone.id);
            if let Some(doc) = self.document(doc_key.as_bytes())? {
                if doc.etag < etag {
                    self.violation(Violation::TombstoneAfterDocument { key: doc_key, etag, document_etag: doc.etag });
                }
            }
        }
        Ok(())
    }

    /// Attachment rows belong to live documents, sit under their own name and carry the change vector of
    /// their etag. Returns how many rows reference each content hash.
    fn attachments(&mut self) -> Result<BTreeMap<String, u64>, StorageError> {
        let table = tables::ATTACHMENTS;
        let mut references: BTreeMap<String, u64> = BTreeMap::new();
        for entry in self.tables.attachments.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.attachments += 1;
            let Some((doc_key, name)) = tables::split_named_key(key) else {
                self.unreadable(table, text(key), "key has no name separator");
                continue;
            };
            let key_text = named_key_text(doc_key, name);
            let record = match AttachmentRecord::decode(value) {
                Ok(record) => record,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            if id_key(&record.name).as_bytes() != name {
                self.violation(Violation::KeyMismatch { table, key: key_text.clone(), found: record.name.clone() });
            }
            if !self.document_exists(doc_key)? {
                self.violation(Violation::Dangling { table, key: key_text.clone(), target: text(doc_key) });
            }
            self.etag_at_most_last(table, &key_text, record.etag);
            self.change_vector(table, &key_text, record.etag, &record.change_vector);
            *references.entry(record.hash).or_default() += 1;
        }
        Ok(references)
    }

    /// `attachment_refs[h]` is the number of rows with hash `h`, never 0, and the content file exists.
    fn attachment_refs(&mut self, mut references: BTreeMap<String, u64>, blob_dir: Option<&Path>) -> Result<(), StorageError> {
        for entry in self.tables.attachment_refs.iter(self.txn)? {
            let (key, value) = entry?;
            let hash = text(key);
            let counted = references.remove(&hash).unwrap_or(0);
            let Some(stored) = decode_etag(value) else {
                self.unreadable(tables::ATTACHMENT_REFS, hash, "value is not 8 bytes");
                continue;
            };
            if stored == 0 || stored != counted {
                self.violation(Violation::ReferenceCount { hash: hash.clone(), stored, counted });
            }
            if let Some(dir) = blob_dir {
                let path = content_path(dir, &hash);
                if !path.is_file() {
                    self.violation(Violation::MissingContent { hash, path });
                }
            }
        }
        for (hash, counted) in references {
            self.violation(Violation::ReferenceCount { hash, stored: 0, counted });
        }
        Ok(())
    }

    /// Counter rows belong to live documents and sit under their own name.
    fn counters(&mut self) -> Result<(), StorageError> {
        let table = tables::COUNTERS;
        for entry in self.tables.counters.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.counters += 1;
            let Some((doc_key, name)) = tables::split_named_key(key) else {
                self.unreadable(table, text(key), "key has no name separator");
                continue;
            };
            let key_text = named_key_text(doc_key, name);
            let counter = match counters::decode(value) {
                Ok(counter) => counter,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            if id_key(&counter.name).as_bytes() != name {
                self.violation(Violation::KeyMismatch { table, key: key_text.clone(), found: counter.name });
            }
            if !self.document_exists(doc_key)? {
                self.violation(Violation::Dangling { table, key: key_text, target: text(doc_key) });
            }
        }
        Ok(())
    }

    /// Compare-exchange rows decode, sit under their lower-cased key, hold a JSON object and have an index no
    /// higher than `meta/compare_exchange_last_index`.
    fn compare_exchange(&mut self) -> Result<(), StorageError> {
        let table = tables::COMPARE_EXCHANGE;
        let last_index = self.tables.meta.get(self.txn, meta_keys::COMPARE_EXCHANGE_LAST_INDEX)?.and_then(decode_etag).unwrap_or(0);
        for entry in self.tables.compare_exchange.iter(self.txn)? {
            let (key, value) = entry?;
            let key_text = text(key);
            let record = match CompareExchangeRecord::decode(value) {
                Ok(record) => record,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            if id_key(&record.key).as_bytes() != key {
                self.violation(Violation::KeyMismatch { table, key: key_text.clone(), found: record.key.clone() });
            }
            if !matches!(serde_json::from_str::<Value>(&record.value), Ok(Value::Object(_))) {
                self.unreadable(table, key_text.clone(), "value is not a JSON object");
            }
            if record.index > last_index {
                self.violation(Violation::EtagAboveLast { table, key: key_text, etag: record.index, last_etag: last_index });
            }
        }
        Ok(())
    }

    /// Segments belong to live documents and to a series with a stats row, decode, and hold strictly increasing
    /// timestamps from their key's start; each stats row matches its segments' count, first and last timestamp.
    fn time_series(&mut self) -> Result<(), StorageError> {
        let table = tables::TIME_SERIES;
        // Per series key: (entries, first timestamp, last timestamp) counted from the segments.
        let mut counted: BTreeMap<Vec<u8>, (u64, i64, i64)> = BTreeMap::new();
        for entry in self.tables.time_series.iter(self.txn)? {
            let (key, value) = entry?;
            self.report.time_series_segments += 1;
            let Some((series, start)) = time_series::split_segment_key(key) else {
                self.unreadable(table, text(key), "key is not a series key and a start");
                continue;
            };
            let key_text = format!("{}@{start}", text(series).replace(tables::NAME_SEPARATOR as char, "#"));
            let entries = match time_series::decode_segment(start, value) {
                Ok(entries) => entries,
                Err(e) => {
                    self.unreadable(table, key_text, decode_failure(e));
                    continue;
                }
            };
            if time_series::entry_count(value).ok() != Some(entries.len()) || entries.is_empty() {
                self.violation(Violation::SegmentOrder { key: key_text.clone(), reason: "segment has no entries".into() });
            }
            if entries.first().is_some_and(|e| e.timestamp != start) {
                self.violation(Violation::SegmentOrder { key: key_text.clone(), reason: "first entry is not at the key's start".into() });
            }
            if entries.windows(2).any(|w| w[0].timestamp >= w[1].timestamp) {
                self.violation(Violation::SegmentOrder { key: key_text.clone(), reason: "timestamps do not increase".into() });
            }
            if let Some((doc_key, _)) = tables::split_named_key(series) {
                if !self.document_exists(doc_key)? {
                    self.violation(Violation::Dangling { table, key: key_text, target: text(doc_key) });
                }
            }
            if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
                let slot = counted.entry(series.to_vec()).or_insert((0, first.timestamp, last.timestamp));
                slot.0 += entries.len() as u64;
                slot.1 = slot.1.min(first.timestamp);
                slot.2 = slot.2.max(last.timestamp);
            }
        }
        for entry in self.tables.time_series_stats.iter(self.txn)? {
            let (key, value) = entry?;
            let key_text = text(key).replace(tables::NAME_SEPARATOR as char, "#");
            let stats = match time_series::decode_stats(value) {
                Ok(stats) => stats,
                Err(e) => {
                    self.unreadable(tables::TIME_SERIES_STATS, key_text, decode_failure(e));
                    continue;
                }
            };
            if let Some((doc_key, name)) = tables::split_named_key(key) {
                if id_key(&stats.name).as_bytes() != name {
                    self.violation(Violation::KeyMismatch {
                        table: tables::TIME_SERIES_STATS,
                        key: key_text.clone(),
                        found: stats.name.clone(),
                    });
                }
                if !self.document_exists(doc_key)? {
                    self.violation(Violation::Dangling { table: tables::TIME_SERIES_STATS, key: key_text.clone(), target: text(doc_key) });
                }
            }
            let stored = format!("{} {}..{}", stats.count, stats.start, stats.end);
            match counted.remove(key) {
                Some((count, start, end)) if (count, start, end) == (stats.count, stats.start, stats.end) => {}
                Some((count, start, end)) => {
                    self.violation(Violation::SeriesStats { key: key_text, stored, counted: format!("{count} {start}..{end}") })
                }
                None => self.violation(Violation::SeriesStats { key: key_text, stored, counted: "nothing".into() }),
            }
        }
        for (series, (count, start, end)) in counted {
            let key = text(&series).replace(tables::NAME_SEPARATOR as char, "#");
            self.violation(Violation::SeriesStats { key, stored: "missing".into(), counted: format!("{count} {start}..{end}") });
        }
        Ok(())
    }

    /// Identity values are u64.
    fn identities(&mut self) -> Result<(), StorageError> {
        for entry in self.tables.identities.iter(self.txn)? {
            let (key, value) = entry?;
            if decode_etag(value).is_none() {
                self.unreadable(tables::IDENTITIES, text(key), "value is not 8 bytes");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tables::named_key;
    use crate::{StoreOptions, TransactionMerger};

    fn options() -> StoreOptions {
        StoreOptions { map_size: 64 << 20, max_readers: 16, disk_reserve_bytes: 0, ..Default::default() }
    }

    /// A store with two documents, a tombstone, an attachment and a counter, written as the engine writes
    /// them (the document rewritten with its flags and server-kept metadata after its rows changed).
    fn populated(dir: &Path) -> (Arc<Store>, String) {
        let store = Arc::new(Store::open(dir, &options()).unwrap());
        let merger = TransactionMerger::start("t", store.clone(), 16, |_| {}).unwrap();
        let mut writer = store.blobs().writer().unwrap();
        writer.write(b"content").unwrap();
        let blob = writer.finish().unwrap();
        let hash = blob.hash.clone();
        merger
            .write_blocking(move |txn| -> Result<(), StorageError> {
                txn.put_document("Users/1", "Users", r#"{"n":1}"#.into(), "{}".into(), 0, 1)?;
                txn.put_document("Users/2", "Users", "{}".into(), "{}".into(), 0, 1)?;
                txn.put_document("Orders/1", "Orders", "{}".into(), "{}".into(), 0, 1)?;
                txn.delete_document("users/2", 2)?;
                txn.put_attachment("users/1", "Photo.png", &hash, "image/png", 7)?;
                txn.increment_counter("users/1", "Likes", 3)?;
                let metadata = json!({
                    "@attachments": [{"Name": "Photo.png", "Hash": hash, "ContentType": "image/png", "Size": 7}],
                    "@counters": ["Likes"],
                });
                let both = flags::HAS_ATTACHMENTS | flags::HAS_COUNTERS;
                txn.put_document("Users/1", "Users", r#"{"n":1}"#.into(), metadata.to_string(), both, 3)?;
                Ok(())
            })
            .unwrap();
        store.blobs().unpin(&blob.hash);
        merger.stop();
        (store, blob.hash)
    }

    /// Changes the raw tables behind the merger's back.
    fn corrupt(store: &Store, change: impl FnOnce(&Tables, &mut heed::RwTxn<'_>) -> heed::Result<()>) {
        let mut wtxn = store.env.write_txn().unwrap();
        change(&store.tables, &mut wtxn).unwrap();
        wtxn.commit().unwrap();
    }

    #[test]
    fn a_store_written_through_the_merger_is_sound() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = populated(dir.path());
        let report = store.check_invariants().unwrap();
        assert!(report.is_sound(), "{:?}", report.violations);
        assert_eq!((report.documents, report.tombstones, report.attachments, report.counters), (2, 1, 1, 1));
        assert_eq!(store.read().unwrap().check_invariants().unwrap(), report);
        drop(store);
        assert_eq!(check_closed_store(dir.path()).unwrap(), Some(report));
    }

    #[test]
    fn a_deleted_etag_index_entry_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = populated(dir.path());
        let etag = store.read().unwrap().document("orders/1").unwrap().unwrap().etag;
        corrupt(&store, |t, w| t.docs_by_etag.delete(w, &tables::etag_key(etag)).map(|_| ()));
        let report = store.check_invariants().unwrap();
        let expected = Violation::MissingIndexEntry { table: tables::DOCS_BY_ETAG, key: "orders/1".into(), etag };
        assert_eq!(report.violations, [expected]);
        assert_eq!(report.violations[0].to_string(), format!("document orders/1 (etag {etag}) has no `docs_by_etag` entry"));
        drop(store);
        assert_eq!(check_closed_store(dir.path()).unwrap().unwrap().violations, report.violations);
    }

    #[test]
    fn dangling_rows_wrong_counts_and_missing_content_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (store, hash) = populated(dir.path());
        let orders = store.read().unwrap().document("orders/1").unwrap().unwrap();
        corrupt(&store, |t, w| {
            t.docs.delete(w, b"orders/1")?;
            t.attachment_refs.put(w, hash.as_bytes(), &2u64.to_be_bytes())?;
            t.counters.put(w, &named_key("orders/1", "views"), &[0, 0, 0, 0, 0, 0, 0, 1, 0, 5, b'V', b'i', b'e', b'w', b's'])?;
            Ok(())
        });
        std::fs::remove_file(store.blobs().path_of(&hash)).unwrap();
        let violations = store.check_invariants().unwrap().violations;
        let orders_etag = orders.etag;
        let expected = [
            Violation::Dangling { table: tables::DOCS_BY_ETAG, key: orders_etag.to_string(), target: "orders/1".into() },
            Violation::Dangling { table: tables::COLLECTION_ETAGS, key: format!("orders#{orders_etag}"), target: "orders/1".into() },
            Violation::ReferenceCount { hash: hash.clone(), stored: 2, counted: 1 },
            Violation::MissingContent { hash: hash.clone(), path: store.blobs().path_of(&hash) },
            Violation::Dangling { table: tables::COUNTERS, key: "orders/1#views".into(), target: "orders/1".into() },
            // Written behind the merger's back, the counter has no row in the change log either.
            Violation::MissingIndexEntry { table: tables::ITEM_CHANGES, key: "orders/1\u{1e}views".into(), etag: 0 },
        ];
        assert_eq!(violations, expected);
    }

    #[test]
    fn etags_above_the_last_one_and_flags_without_rows_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = populated(dir.path());
        let users = store.read().unwrap().document("users/1").unwrap().unwrap();
        corrupt(&store, |t, w| {
            t.meta.put(w, meta_keys::LAST_ETAG, &tables::etag_key(users.etag - 1))?;
            t.counters.delete(w, &named_key("users/1", "likes")).map(|_| ())
        });
        let violations = store.check_invariants().unwrap().violations;
        let key = "users/1".to_owned();
        let expected = [
            Violation::EtagAboveLast { table: tables::DOCS, key: key.clone(), etag: users.etag, last_etag: users.etag - 1 },
            Violation::Flag { key: key.clone(), flag: "HasCounters", set: true, table: tables::COUNTERS, rows: 0 },
            Violation::ServerMetadata { key, field: "@counters", table: tables::COUNTERS },
        ];
        assert_eq!(violations, expected);
    }

    #[test]
    fn a_closed_store_without_its_tables_is_reported_and_an_absent_one_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let env = crate::index_env::open_index_env(dir.path(), 1 << 20, 2).unwrap();
        env.write_txn().unwrap().commit().unwrap();
        drop(env);
        let report = check_closed_store(dir.path()).unwrap().unwrap();
        assert_eq!(report.violations.len(), tables::TABLE_COUNT as usize);
        assert!(matches!(report.violations[0], Violation::MissingTable { table: tables::DOCS }));
        assert_eq!(check_closed_store(&dir.path().join("nothing")).unwrap(), None, "no database there yet");
    }
}
