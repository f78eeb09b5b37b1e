//! One process per data directory. Two servers on one directory would both write its databases' journals and
//! LMDB files and corrupt them (and each would serve a catalog the other changes behind it), so `serve` and
//! `check` take an exclusive lock on `<data-dir>/corvid.lock` first. The lock is the kernel's (`flock`): it
//! goes away with the process, even after `kill -9`, so a crashed server never leaves a stale lock behind.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside the data directory.
const LOCK_FILE: &str = "corvid.lock";

/// Held for as long as the process uses the data directory.
pub struct DataDirLock {
    _file: File,
}

/// Why the data directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum DataDirLockError {
    /// Another process holds the lock.
    #[error("the data directory {dir} is in use by another Corvid process{holder}; stop it first or choose another --data-dir")]
    InUse {
        /// The data directory.
        dir: PathBuf,
        /// " (pid N)" when the holder wrote its pid.
        holder: String,
    },
    /// The directory or its lock file could not be created or locked.
    #[error("cannot lock the data directory {dir}: {source}")]
    Io {
        /// The data directory.
        dir: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Creates `dir` if needed and locks it for this process.
pub fn lock(dir: &Path) -> Result<DataDirLock, DataDirLockError> {
    let io = |source| DataDirLockError::Io { dir: dir.to_owned(), source };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(dir.join(LOCK_FILE)).map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            let holder = if pid.is_empty() { String::new() } else { format!(" (pid {pid})") };
            return Err(DataDirLockError::InUse { dir: dir.to_owned(), holder });
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    // Only for the message a second process prints; the lock itself is what counts.
    file.set_len(0).and_then(|()| file.seek(SeekFrom::Start(0))).and_then(|_| write!(file, "{}", std::process::id())).map_err(io)?;
    Ok(DataDirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let first = lock(&data).unwrap();
        let refused = lock(&data).err().expect("a second lock must be refused");
        let message = refused.to_string();
        assert!(message.contains("in use by another Corvid process"), "{message}");
        assert!(message.contains(&format!("pid {}", std::process::id())), "{message}");
        drop(first);
        lock(&data).expect("free again once the first holder is gone");
    }
}
