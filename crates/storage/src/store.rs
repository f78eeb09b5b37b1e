//! A database's LMDB environment and its tables.

use std::path::{Path, PathBuf};

use heed::{Env, EnvOpenOptions, WithoutTls};

use crate::blob_store::BlobStore;
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
}

/// Default size of the disk reserve: room for deleting several thousand documents in one go.
pub const DEFAULT_DISK_RESERVE_BYTES: u64 = 4 << 20;

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions { map_size: 64 << 30, max_readers: 1024, disk_reserve_bytes: DEFAULT_DISK_RESERVE_BYTES }
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
}

impl Store {
    /// Opens (creating if needed) the database in `path`, upgrading an older layout; removes attachment
    /// contents no row references.
    pub fn open(path: &Path, options: &StoreOptions) -> Result<Store, StorageError> {
        std::fs::create_dir_all(path).map_err(|source| StorageError::Io { path: path.to_owned(), source })?;
        let mut open = EnvOpenOptions::new().read_txn_without_tls();
        open.map_size(options.map_size).max_dbs(tables::TABLE_COUNT + 2).max_readers(options.max_readers);
        // SAFETY (heed's contract): the environment is opened once per path in this process (the landlord
        // guarantees it) and the file is never truncated or modified outside LMDB.
        #[allow(unsafe_code)]
        let env = unsafe { open.open(path)? };
        let mut wtxn = env.write_txn()?;
        let tables = Tables::create(&env, &mut wtxn)?;
        match tables.meta.get(&wtxn, meta_keys::FORMAT_VERSION)? {
            Some(v) => {
                let found =
                    u32::from_be_bytes(v.try_into().map_err(|_| StorageError::corrupted(tables::META, "format_version is not 4 bytes"))?);
                if found == 1 || found == 2 {
                    // Versions 2 and 3 only added tables (attachments and counters, time series), created empty
                    // above.
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
        let stored_last = tables.meta.get(&wtxn, meta_keys::LAST_ETAG)?.and_then(tables::decode_etag).unwrap_or(0);
        let last_doc = tables.docs_by_etag.last(&wtxn)?.and_then(|(k, _)| tables::decode_etag(k)).unwrap_or(0);
        let last_tomb = tables.tombstones.last(&wtxn)?.and_then(|(k, _)| tables::decode_etag(k)).unwrap_or(0);
        wtxn.commit()?;
        let blobs = BlobStore::open(path)?;
        let store = Store {
            env,
            tables,
            blobs,
            database_id,
            path: path.to_owned(),
            last_etag_at_open: stored_last.max(last_doc).max(last_tomb),
            gate: ReaderGate::default(),
            options: options.clone(),
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

    /// A consistent snapshot of the whole database.
    pub fn read(&self) -> Result<ReadTxn<'_>, StorageError> {
        let pass = self.gate.enter();
        Ok(ReadTxn { txn: self.env.read_txn()?, tables: self.tables, _pass: pass })
    }

    /// With `deferred`, the next commit flushes its data pages but writes the meta page without a flush: the
    /// merger must not acknowledge it before a later flush (see docs/decisions/0005-deferred-acknowledgement.md).
    pub(crate) fn set_deferred_meta_sync(&self, deferred: bool) -> Result<(), StorageError> {
        let mode = if deferred { heed::FlagSetMode::Enable } else { heed::FlagSetMode::Disable };
        // SAFETY: only the merger thread calls this, between its transactions.
        #[allow(unsafe_code)]
        unsafe {
            self.env.set_flags(heed::EnvFlags::NO_META_SYNC, mode)?
        };
        Ok(())
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
