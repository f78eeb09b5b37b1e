//! A database's LMDB environment, its tables and its write-ahead journal (opening runs recovery).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use corvid_types::io_metrics::{IoKind, IoMetrics, IoTimer, SlowIoThreshold};

use heed::{Env, EnvOpenOptions, WithoutTls};

use parking_lot::Mutex;

use crate::blob_store::BlobStore;
use crate::journal::{flushed_state, Journal};
use crate::journal_file::JOURNAL_DIR;
use crate::journal_recovery;
use crate::read_txn::ReadTxn;
use crate::reader_gate::ReaderGate;
use crate::tables::{self, meta_keys, Tables};
use crate::StorageError;

/// How a database's environment is opened.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Initial size of the memory map (virtual; the file grows as data is written). The merger doubles it
    /// when more than half is used (`map_growth.rs`).
    pub map_size: usize,
    /// Concurrent read transactions allowed.
    pub max_readers: u32,
    /// Size of the file kept in the database directory so deletes can commit on a full disk (`disk_space.rs`);
    /// 0 keeps none.
    pub disk_reserve_bytes: u64,
    /// The slow-I/O threshold, shared with the database's indexes.
    pub slow_io_threshold: SlowIoThreshold,
}

/// Default size of the disk reserve: room for deleting several thousand documents in one go.
pub const DEFAULT_DISK_RESERVE_BYTES: u64 = 4 << 20;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            map_size: 64 << 30,
            max_readers: 1024,
            disk_reserve_bytes: DEFAULT_DISK_RESERVE_BYTES,
            slow_io_threshold: SlowIoThreshold::default(),
        }
    }
}

/// One database's storage. Cheap to share behind an `Arc`; reads run on MVCC snapshots and never wait for
/// the writer.
pub struct Store {
    pub(crate) env: Env<WithoutTls>,
    pub(crate) tables: Tables,
    blobs: BlobStore,
    database_id: String,
    path: PathBuf,
    /// Last etag durable at open time; the merger owns the running value.
    pub(crate) last_etag_at_open: u64,
    /// Keeps read transactions out while the merger grows the map.
    pub(crate) gate: ReaderGate,
    pub(crate) options: StoreOptions,
    /// The write-ahead journal; the merger takes it while it runs and gives it back when it stops.
    pub(crate) journal: Mutex<Option<Journal>>,
    /// Recent journal writes and syncs, commits and data-file syncs (`/debug/io-metrics`).
    pub(crate) io: Arc<IoMetrics>,
}

impl Store {
    /// Opens (creating if needed) the database in `path`, upgrading an older layout and recovering from the
    /// journal (`journal_recovery.rs`); removes attachment contents no row references.
    pub fn open(path: &Path, options: &StoreOptions) -> Result<Store, StorageError> {
        std::fs::create_dir_all(path).map_err(|source| StorageError::Io { path: path.to_owned(), source })?;
        let recorded_id = journal_recovery::recorded_database_id(path)?;
        let plan = journal_recovery::scan(path, recorded_id.as_deref())?;
        if let Some(checkpoint) = &plan.checkpoint {
            journal_recovery::restore_meta_pages(path, checkpoint)?;
        }
        let mut open = EnvOpenOptions::new().read_txn_without_tls();
        // Room for the replay: LMDB takes the larger of this and the size recorded in the file.
        let data_bytes = std::fs::metadata(path.join(tables::DATA_FILE)).map(|m| m.len()).unwrap_or(0);
        let map_size = options.map_size.max((data_bytes + 4 * plan.replay_bytes) as usize * 2);
        open.map_size(map_size.next_multiple_of(1 << 16)).max_dbs(tables::TABLE_COUNT + 2).max_readers(options.max_readers);
        // SAFETY (heed's contract): the environment is opened once per path in this process (the landlord
        // guarantees it) and the file is never truncated or modified outside LMDB (recovery rewrote the meta
        // pages before this opening).
        #[allow(unsafe_code)]
        let env = unsafe { open.open(path)? };
        if let Some(checkpoint) = &plan.checkpoint {
            let found = env.info().last_txn_id as u64;
            if found != checkpoint.lmdb_txn {
                return Err(StorageError::Journal {
                    path: path.join(JOURNAL_DIR),
                    reason: format!("its checkpoint names LMDB transaction {}, the data file holds {found}", checkpoint.lmdb_txn),
                });
            }
        }
        // Recovery replays onto the checkpointed snapshot: its pages must not be reused until the new
        // checkpoint is durable (a crash during recovery starts again from the same checkpoint).
        let protected_env = env.clone();
        let protected = protected_env.read_txn()?;
        let mut wtxn = env.write_txn()?;
        let tables = Tables::create(&env, &mut wtxn)?;
        match tables.meta.get(&wtxn, meta_keys::FORMAT_VERSION)? {
            Some(v) => {
                let found =
                    u32::from_be_bytes(v.try_into().map_err(|_| StorageError::corrupted(tables::META, "format_version is not 4 bytes"))?);
                if found < tables::FORMAT_VERSION {
                    // Version 2 only added the attachment and counter tables; version 3 added the compare-exchange,
                    // revisions and time-series tables (all created empty above) and the journal, started below (a version-2
                    // file was flushed at every commit); version 4 the revisions-by-collection index (filled after the
                    // replay) and the expiration queue (documents written before it are queued by the engine's
                    // one-time backfill, `meta/expiration_backfilled`); version 5 the change log of counters and
                    // segments (filled after the replay); version 6 stopped writing `revision_counts` (emptied after
                    // the replay).
                    tables.meta.put(&mut wtxn, meta_keys::FORMAT_VERSION, &tables::FORMAT_VERSION.to_be_bytes())?;
                } else if found != tables::FORMAT_VERSION {
                    return Err(StorageError::UnsupportedFormat { found, supported: tables::FORMAT_VERSION });
                }
            }
            None => tables.meta.put(&mut wtxn, meta_keys::FORMAT_VERSION, &tables::FORMAT_VERSION.to_be_bytes())?,
        }
        let database_id = match tables.meta.get(&wtxn, meta_keys::DATABASE_ID)? {
            Some(v) => String::from_utf8(v.to_vec()).map_err(|_| StorageError::corrupted(tables::META, "database_id is not UTF-8"))?,
            None => {
                let id = corvid_types::new_database_id();
                tables.meta.put(&mut wtxn, meta_keys::DATABASE_ID, id.as_bytes())?;
                id
            }
        };
        wtxn.commit()?;
        match &recorded_id {
            Some(recorded) if *recorded != database_id => {
                return Err(StorageError::Journal {
                    path: path.join(journal_recovery::DATABASE_ID_FILE),
                    reason: format!("it names database {recorded}, the data file holds {database_id}"),
                })
            }
            Some(_) => {}
            None => journal_recovery::record_database_id(path, &database_id)?,
        }
        journal_recovery::replay(&env, &tables, &plan)?;
        crate::revisions::index_revisions_by_collection(&env, &tables)?;
        crate::revisions::drop_revision_counts(&env, &tables)?;
        crate::item_changes::backfill_item_changes(&env, &tables)?;
        let rtxn = env.read_txn()?;
        let stored_last = tables.meta.get(&rtxn, meta_keys::LAST_ETAG)?.and_then(tables::decode_etag).unwrap_or(0);
        let last_doc = tables.docs_by_etag.last(&rtxn)?.and_then(|(k, _)| tables::decode_etag(k)).unwrap_or(0);
        let last_tomb = tables.tombstones.last(&rtxn)?.and_then(|(k, _)| tables::decode_etag(k)).unwrap_or(0);
        drop(rtxn);
        let blobs = BlobStore::open(path)?;
        let mut store = Store {
            env,
            tables,
            blobs,
            database_id,
            path: path.to_owned(),
            last_etag_at_open: stored_last.max(last_doc).max(last_tomb),
            gate: ReaderGate::default(),
            options: options.clone(),
            journal: Mutex::new(None),
            io: Arc::new(IoMetrics::new(path.display().to_string(), options.slow_io_threshold.clone())),
        };
        // A fresh journal starting with a checkpoint of the data file as it is now (flushed).
        store.env.force_sync()?;
        let state = flushed_state(&store.env, &store.path)?;
        let next_id = plan.replay.last().map(|(id, _)| id + 1).or(plan.checkpoint.as_ref().map(|c| c.covers + 1)).unwrap_or(1);
        let journal = Journal::start(&path.join(JOURNAL_DIR), &store.database_id, next_id, plan.files, plan.spares, &state)?;
        drop(protected);
        *store.journal.get_mut() = Some(journal);
        // From now on the journal makes commits durable; LMDB's data file is flushed at checkpoints.
        // SAFETY: no transaction is open, and durability is the journal's (docs/storage-format.md).
        #[allow(unsafe_code)]
        unsafe {
            store.env.set_flags(heed::EnvFlags::NO_SYNC, heed::FlagSetMode::Enable)?
        };
        // Contents left behind by a crash between an upload and its commit (or after a last delete).
        let stored = store.blobs.stored_hashes()?;
        store.collect_blobs(&stored);
        Ok(store)
    }

    /// Attachment contents.
    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Removes the content files of `hashes` that no committed attachment references any more.
    pub fn collect_blobs(&self, hashes: &[String]) {
        if hashes.is_empty() {
            return;
        }
        let _pass = self.gate.enter();
        let Ok(rtxn) = self.env.read_txn() else { return };
        self.blobs.collect(hashes, |hash| Ok(self.tables.attachment_refs.get(&rtxn, hash.as_bytes())?.is_some()));
    }

    /// The database id of its change vectors.
    pub fn database_id(&self) -> &str {
        &self.database_id
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's recent I/O: journal writes and syncs, commits, data-file syncs.
    pub fn io_metrics(&self) -> &Arc<IoMetrics> {
        &self.io
    }

    /// Records a timed operation on `file` (a path in the database directory), logging it when it was slow.
    pub(crate) fn record_io(&self, timer: IoTimer, file: &Path, kind: IoKind, size: u64, file_size: u64) {
        let (start, duration) = timer.stop();
        self.record_io_at(file, kind, start, duration, size, file_size);
    }

    /// Records an operation timed elsewhere (`start` in Unix nanoseconds), logging it when it was slow.
    pub(crate) fn record_io_at(&self, file: &Path, kind: IoKind, start: i64, duration: Duration, size: u64, file_size: u64) {
        let name = file.strip_prefix(&self.path).unwrap_or(file).to_string_lossy();
        self.io.record(&name, kind, start, duration, size, file_size);
    }

    /// A consistent snapshot of the whole database.
    pub fn read(&self) -> Result<ReadTxn<'_>, StorageError> {
        let pass = self.gate.enter();
        Ok(ReadTxn { txn: self.env.read_txn()?, tables: self.tables, _pass: pass })
    }

    pub(crate) fn page_size(&self) -> Result<u64, StorageError> {
        Ok(u64::from(self.read()?.page_size()?))
    }

    /// Only on the merger thread: `mdb_env_info` reads the map the merger may resize.
    pub(crate) fn map_size(&self) -> usize {
        self.env.info().map_size
    }

    /// Bytes used by the data file.
    pub fn size_on_disk(&self) -> u64 {
        self.env.real_disk_size().unwrap_or(0)
    }
}

impl Drop for Store {
    /// A store closed without a running merger (tools, tests) checkpoints what was committed, so the next
    /// opening starts from it rather than from the last checkpoint.
    fn drop(&mut self) {
        let Some(mut journal) = self.journal.get_mut().take() else { return };
        let checkpointed = self.env.force_sync().map_err(StorageError::from).and_then(|()| {
            let state = flushed_state(&self.env, &self.path)?;
            let covered = journal.covered_now();
            journal.checkpoint(&state, covered)
        });
        if let Err(e) = checkpointed {
            tracing::error!(path = %self.path.display(), error = %e, "closing checkpoint failed; the next opening replays the journal");
        }
    }
}
