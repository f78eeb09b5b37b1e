//! [`SoftSyncDirectory`]: tantivy's `MmapDirectory` with its fsyncs moved off the commit path.
//!
//! A tantivy commit fsyncs every new segment file, `meta.json` and the directory; on these disks that is most
//! of the time between a write and its visibility in queries (decision 0011). Here a commit only writes the
//! files (they sit in the page cache, so a killed process loses nothing), and [`SoftSyncDirectory::checkpoint`]
//! later fsyncs every file written since the previous checkpoint at once.
//!
//! Power loss between checkpoints can leave `meta.json` pointing at files that never reached the disk, so a
//! marker file says whether the index is durable: before the first metadata change after a checkpoint it is
//! durably set to `dirty` with the machine's boot id, and a checkpoint sets it back to `clean`. On open, a
//! dirty marker written in an earlier boot means the machine went down with unsynced files: the index must be
//! rebuilt. A dirty marker from the current boot only means the process died, and the page cache still holds
//! every file.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback, WatchHandle, WritePtr,
};

/// The marker file, next to tantivy's files (tantivy leaves files it did not create alone).
pub(crate) const MARKER_FILE: &str = "corvid-durability.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Durability {
    /// Every file the current `meta.json` names is on disk.
    Clean,
    /// Files written since the last checkpoint may exist only in the page cache.
    Dirty,
}

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    state: Durability,
    boot_id: String,
}

/// Why an index directory cannot be trusted after a machine restart.
#[derive(Debug)]
pub(crate) struct LostUnsyncedWrites {
    pub written_in_boot: String,
}

/// The running kernel's boot id: it changes with every boot, so it tells a process crash from a machine crash.
pub(crate) fn current_boot_id() -> String {
    static BOOT_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BOOT_ID
        .get_or_init(|| {
            // Without a boot id every dirty index is treated as possibly damaged by a reboot.
            std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_owned()).unwrap_or_default()
        })
        .clone()
}

#[derive(Debug, Default)]
struct SyncState {
    dirty: bool,
    /// Counts metadata replacements, so a checkpoint sees whether one happened while it synced.
    generation: u64,
    /// Files finished or replaced since the last checkpoint (relative paths).
    unsynced: HashSet<PathBuf>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    boot_id: String,
    state: Mutex<SyncState>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes the marker durably dirty before anything that a power loss could tear.
    fn mark_dirty(&self, state: &mut SyncState) -> io::Result<()> {
        if !state.dirty {
            write_marker(&self.root, &Marker { state: Durability::Dirty, boot_id: self.boot_id.clone() })?;
            state.dirty = true;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub(crate) struct SoftSyncDirectory {
    inner: MmapDirectory,
    shared: Arc<Shared>,
}

impl SoftSyncDirectory {
    /// Opens `root`. Fails with [`LostUnsyncedWrites`] when the marker is dirty from another boot.
    pub(crate) fn open(root: &Path, boot_id: String) -> Result<Result<SoftSyncDirectory, LostUnsyncedWrites>, OpenDirectoryError> {
        let inner = MmapDirectory::open(root)?;
        remove_stale_temporaries(root);
        // No marker: an index written before soft commits existed, or a new one; both are durable.
        let dirty = match std::fs::read(root.join(MARKER_FILE)) {
            Ok(bytes) => match serde_json::from_slice::<Marker>(&bytes) {
                Ok(marker) if marker.state == Durability::Clean => false,
                Ok(marker) if marker.boot_id == boot_id && !boot_id.is_empty() => true,
                Ok(marker) => return Ok(Err(LostUnsyncedWrites { written_in_boot: marker.boot_id })),
                // The marker is written by rename after an fsync, so it is never torn; treat garbage as lost.
                Err(_) => return Ok(Err(LostUnsyncedWrites { written_in_boot: "unreadable marker".into() })),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(OpenDirectoryError::IoError { io_error: Arc::new(e), directory_path: root.to_path_buf() }),
        };
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            boot_id,
            // Files left unsynced by a crashed process of this boot are unknown by name: the next checkpoint
            // syncs the whole directory's files.
            state: Mutex::new(SyncState { dirty, generation: 0, unsynced: if dirty { all_files(root) } else { HashSet::new() } }),
        });
        Ok(Ok(SoftSyncDirectory { inner, shared }))
    }

    /// Fsyncs every file written since the last checkpoint and the directory, then marks the index clean.
    /// The bulk of the fsyncs runs without the state lock, so commits go on meanwhile; only the files of
    /// metadata published during that pass are synced under the lock, before the marker turns clean.
    pub(crate) fn checkpoint(&self) -> io::Result<bool> {
        let (files, generation) = {
            let mut state = self.shared.lock();
            if !state.dirty {
                return Ok(false);
            }
            (std::mem::take(&mut state.unsynced), state.generation)
        };
        if let Err(e) = sync_files(&self.shared.root, &files) {
            self.shared.lock().unsynced.extend(files);
            return Err(e);
        }
        let mut state = self.shared.lock();
        if state.generation != generation {
            // New metadata may name files finished after the first pass: they are all in `unsynced` now.
            let late = std::mem::take(&mut state.unsynced);
            if let Err(e) = sync_files(&self.shared.root, &late) {
                state.unsynced.extend(late);
                return Err(e);
            }
        }
        sync_dir(&self.shared.root)?;
        write_marker(&self.shared.root, &Marker { state: Durability::Clean, boot_id: self.shared.boot_id.clone() })?;
        state.dirty = false;
        Ok(true)
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.shared.lock().dirty
    }
}

fn all_files(root: &Path) -> HashSet<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return HashSet::new() };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
        .map(|e| PathBuf::from(e.file_name()))
        .filter(|p| p.as_os_str() != MARKER_FILE)
        .collect()
}

/// Temporary files of replacements a crash interrupted (see `replace_file`).
fn remove_stale_temporaries(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && name.ends_with(".tmp") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn sync_files(root: &Path, files: &HashSet<PathBuf>) -> io::Result<()> {
    for path in files {
        match File::open(root.join(path)) {
            Ok(file) => file.sync_data()?,
            // Replaced by a merge and collected since: nothing to keep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn sync_dir(root: &Path) -> io::Result<()> {
    File::open(root)?.sync_all()
}

/// Writes `content` under a temporary name and renames it over `path`, without fsync.
fn replace_file(path: &Path, content: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.{}.tmp", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&temp, content)?;
    std::fs::rename(&temp, path)
}

/// The marker is replaced durably: written, fsynced, renamed, and the directory fsynced.
fn write_marker(root: &Path, marker: &Marker) -> io::Result<()> {
    let path = root.join(MARKER_FILE);
    let temp = root.join(format!(".{MARKER_FILE}.tmp"));
    let mut file = File::create(&temp)?;
    file.write_all(&serde_json::to_vec(marker).expect("marker serializes"))?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&temp, &path)?;
    sync_dir(root)
}

/// A new segment file: its writes go to the page cache; finishing it only records it for the next checkpoint.
struct UnsyncedFile {
    file: File,
    relative: PathBuf,
    shared: Arc<Shared>,
}

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.shared.lock().unsynced.insert(self.relative.clone());
        Ok(())
    }
}

impl Directory for SoftSyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)?;
        self.shared.lock().unsynced.remove(path);
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full_path = self.shared.root.join(path);
        let file = OpenOptions::new().write(true).create_new(true).open(full_path).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_path_buf())
            } else {
                OpenWriteError::wrap_io_error(e, path.to_path_buf())
            }
        })?;
        Ok(BufWriter::new(Box::new(UnsyncedFile { file, relative: path.to_path_buf(), shared: self.shared.clone() })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// `meta.json` and tantivy's file list: the changes that can make a torn index, so the marker turns dirty first.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut state = self.shared.lock();
        self.shared.mark_dirty(&mut state)?;
        replace_file(&self.shared.root.join(path), data)?;
        state.generation += 1;
        state.unsynced.insert(path.to_path_buf());
        Ok(())
    }

    /// Deferred to the next checkpoint.
    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
