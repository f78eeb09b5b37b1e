//! Free disk space: how full the file system under a database is, and a reserve file that keeps room for
//! deletes once it is full.
//!
//! LMDB copies every page it changes, so even a delete needs free pages to commit; with the disk full, a
//! database could never shrink through the API. Each database keeps `reserve.space`, a file of zeros that
//! holds real blocks. When a commit fails for lack of space the merger removes it and enters low-space mode:
//! writes that add data are refused with [`StorageError::DiskFull`] before they run, deletes run in the room
//! the reserve left. Once the file system has room for the reserve again (checked at most every
//! [`RESTORE_EVERY`]), the reserve is written back and every write is accepted.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::StorageError;

/// File in each database directory that holds the disk reserve (zeros).
pub const RESERVE_FILE: &str = "reserve.space";
/// Below this much free space an I/O error of a commit is taken for a full disk (LMDB reports a short write
/// as EIO, and a file system can be full in all but a few blocks).
const NEARLY_FULL_BYTES: u64 = 1 << 20;
/// How often low-space mode looks whether space came back.
const RESTORE_EVERY: Duration = Duration::from_millis(200);

/// Bytes available to this process on the file system holding `path`.
pub fn available_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a valid NUL-terminated string and `stat` is written by the call before it is read.
    #[allow(unsafe_code)]
    let stat = unsafe {
        if libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        stat.assume_init()
    };
    Ok((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

/// A failed commit or flush is a full disk when it says so, or when it is an I/O error on a file system with
/// (almost) nothing left.
pub(crate) fn classify(error: StorageError, dir: &Path) -> StorageError {
    let available = available_bytes(dir).ok();
    let full = error.is_disk_full() || (error.is_io() && available.is_some_and(|a| a < NEARLY_FULL_BYTES));
    if full {
        StorageError::DiskFull { path: dir.to_owned(), available_bytes: available.unwrap_or(0) }
    } else {
        error
    }
}

/// The reserve file of one database and whether the database is in low-space mode.
pub(crate) struct DiskReserve {
    dir: PathBuf,
    size: u64,
    low: bool,
    last_restore_attempt: Option<Instant>,
}

impl DiskReserve {
    /// Writes the reserve if it is missing or short; a disk too full for it starts in low-space mode.
    pub fn open(dir: &Path, size: u64) -> DiskReserve {
        let mut reserve = DiskReserve { dir: dir.to_owned(), size, low: false, last_restore_attempt: None };
        if let Err(e) = reserve.write() {
            tracing::warn!(dir = %dir.display(), error = %e, "no room for the disk reserve; starting in low-space mode");
            reserve.remove();
            reserve.low = true;
        }
        reserve
    }

    pub fn is_low(&self) -> bool {
        self.low
    }

    /// Frees the reserve for deletes and refuses writes that add data from now on.
    pub fn enter_low_space(&mut self) {
        if self.low {
            return;
        }
        self.remove();
        self.low = true;
        self.last_restore_attempt = Some(Instant::now());
        tracing::warn!(
            dir = %self.dir.display(),
            reserve_bytes = self.size,
            "disk full: released the disk reserve; only deletes are accepted until space is freed"
        );
    }

    /// In low-space mode, leaves it when the file system has room for the reserve and a reserve more;
    /// true when it did.
    pub fn try_leave_low_space(&mut self) -> bool {
        if !self.low || self.last_restore_attempt.is_some_and(|t| t.elapsed() < RESTORE_EVERY) {
            return false;
        }
        self.last_restore_attempt = Some(Instant::now());
        match available_bytes(&self.dir) {
            Ok(available) if available >= 2 * self.size + NEARLY_FULL_BYTES => {}
            _ => return false,
        }
        if let Err(e) = self.write() {
            tracing::debug!(dir = %self.dir.display(), error = %e, "space came back but not enough for the disk reserve");
            self.remove();
            return false;
        }
        self.low = false;
        tracing::info!(dir = %self.dir.display(), "disk space is available again; accepting every write");
        true
    }

    fn path(&self) -> PathBuf {
        self.dir.join(RESERVE_FILE)
    }

    fn write(&self) -> std::io::Result<()> {
        let path = self.path();
        if self.size == 0 {
            return Ok(());
        }
        if std::fs::metadata(&path).is_ok_and(|m| m.len() >= self.size) {
            return Ok(());
        }
        // Written zeros, not a sparse length: the blocks must really be taken from the file system.
        let mut file = OpenOptions::new().create(true).write(true).truncate(true).open(&path)?;
        let zeros = vec![0u8; 256 << 10];
        let mut written = 0u64;
        while written < self.size {
            let n = zeros.len().min((self.size - written) as usize);
            file.write_all(&zeros[..n])?;
            written += n as u64;
        }
        file.sync_all()
    }

    fn remove(&self) {
        match std::fs::remove_file(self.path()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(dir = %self.dir.display(), error = %e, "could not remove the disk reserve"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_written_released_and_written_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut reserve = DiskReserve::open(dir.path(), 1 << 20);
        assert_eq!(std::fs::metadata(dir.path().join(RESERVE_FILE)).unwrap().len(), 1 << 20);
        reserve.enter_low_space();
        assert!(reserve.is_low());
        assert!(!dir.path().join(RESERVE_FILE).exists());
        // Too soon after entering: not looked at yet.
        assert!(!reserve.try_leave_low_space());
        std::thread::sleep(RESTORE_EVERY);
        assert!(reserve.try_leave_low_space());
        assert!(!reserve.is_low());
        assert_eq!(std::fs::metadata(dir.path().join(RESERVE_FILE)).unwrap().len(), 1 << 20);
    }

    #[test]
    fn an_io_error_is_a_full_disk_only_when_the_disk_is_nearly_full() {
        let dir = tempfile::tempdir().unwrap();
        let eio = StorageError::Io { path: dir.path().to_owned(), source: std::io::Error::from_raw_os_error(5) };
        assert!(!classify(eio, dir.path()).is_disk_full(), "a temp dir has room");
        let enospc = StorageError::Lmdb(heed::Error::Io(std::io::Error::from_raw_os_error(28)));
        assert!(matches!(classify(enospc, dir.path()), StorageError::DiskFull { .. }));
    }
}
