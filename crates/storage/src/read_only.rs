//! Opening an environment without writing to it, for offline checks of a closed database or catalog.

use std::path::Path;

use heed::{Env, EnvFlags, EnvOpenOptions, WithoutTls};

use crate::StorageError;

/// Opens the existing environment in `path` (its data file must exist) read-only, with room for `max_dbs`
/// tables. Only LMDB's lock file is written (its reader table).
pub(crate) fn open_read_only_env(path: &Path, max_dbs: u32) -> Result<Env<WithoutTls>, StorageError> {
    let mut open = EnvOpenOptions::new().read_txn_without_tls();
    open.max_dbs(max_dbs);
    // SAFETY: READ_ONLY is none of the flags heed calls unsafe (NO_SYNC, NO_META_SYNC, NO_LOCK).
    #[allow(unsafe_code)]
    unsafe {
        open.flags(EnvFlags::READ_ONLY)
    };
    // SAFETY (heed's contract): the caller opens each path once in this process, and nothing truncates the
    // file while it is open.
    #[allow(unsafe_code)]
    let env = unsafe { open.open(path)? };
    Ok(env)
}
