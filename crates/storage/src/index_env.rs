//! The LMDB environment an index keeps beside its tantivy files (reduce results, map-reduce entries,
//! references): one place for how such an environment is opened.

use std::path::Path;

use corvid_types::io_metrics::{IoKind, IoMetrics, IoTimer};
use heed::{Env, EnvOpenOptions, WithoutTls};

use crate::StorageError;

/// Opens (creating the directory if needed) an index-private environment with room for `max_dbs` tables.
pub(crate) fn open_index_env(path: &Path, map_size: usize, max_dbs: u32) -> Result<Env<WithoutTls>, StorageError> {
    std::fs::create_dir_all(path).map_err(|source| StorageError::Io { path: path.to_owned(), source })?;
    let mut open = EnvOpenOptions::new().read_txn_without_tls();
    open.map_size(map_size).max_dbs(max_dbs);
    // SAFETY (heed's contract): each index directory is opened once per process (the registry owns it).
    #[allow(unsafe_code)]
    let env = unsafe { open.open(path)? };
    Ok(env)
}

/// Records a durable commit of an index environment (a data sync of `data.mdb`), logging it when slow.
pub(crate) fn record_commit(io: &IoMetrics, timer: IoTimer) {
    let (start, duration) = timer.stop();
    io.record("data.mdb", IoKind::DataSync, start, duration, 0, 0);
}
