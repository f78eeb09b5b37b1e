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
//!
//! With [`RecentSegments::InMemory`] (search indexes), files written since the last checkpoint do not even reach
//! the file system until then: small new segments, tantivy's file list and `meta.json` live in memory, readers
//! read them from there, and most are merged away before they would ever be written (Lucene's
//! NRTCachingDirectory does the same). Under a steady write load the commit path then does no file I/O at all:
//! on these disks a buffered write or a rename behind a busy fsync stalls for milliseconds (decision 0015).
//! A checkpoint ("flush") writes the files held in memory, then the metadata that names them, then deletes the
//! files tantivy dropped before that metadata; so the metadata on disk only ever names files on disk, and a
//! killed process resumes from its last checkpoint. Files too big to hold ("spilled") go to disk as written.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, FileSlice, Lock, MmapDirectory, OwnedBytes, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
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

/// Where the files written since the last checkpoint are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecentSegments {
    /// In memory until the next checkpoint; a killed process resumes from its last checkpoint.
    InMemory,
    /// Written to the file system at once (not fsynced); a killed process resumes from its last commit.
    OnDisk,
}

/// A file bigger than this goes to disk as it is written instead of waiting in memory (bulk segments, big merges).
const SPILL_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
struct SyncState {
    dirty: bool,
    /// Counts metadata replacements, so a checkpoint sees whether one happened while it synced.
    generation: u64,
    /// Files finished or replaced on disk since the last checkpoint (relative paths).
    unsynced: HashSet<PathBuf>,
    /// Finished files held in memory (`RecentSegments::InMemory`), and their total size.
    recent: HashMap<PathBuf, OwnedBytes>,
    recent_bytes: usize,
    /// The latest `meta.json` and file list, when newer than the copies on disk.
    metas: HashMap<PathBuf, Vec<u8>>,
    /// Files on disk that tantivy dropped: deleted once metadata newer than the drop is on disk.
    dropped: Vec<PathBuf>,
}

#[derive(Debug)]
struct Shared {
    root: PathBuf,
    boot_id: String,
    mode: RecentSegments,
    state: Mutex<SyncState>,
    /// One flush at a time: each writes metadata newer than the previous one's.
    flushing: Mutex<()>,
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
    pub(crate) fn open(
        root: &Path,
        boot_id: String,
        mode: RecentSegments,
    ) -> Result<Result<SoftSyncDirectory, LostUnsyncedWrites>, OpenDirectoryError> {
        let inner = MmapDirectory::open(root)?;
        remove_stale_temporaries(root);
        remove_unlisted_segment_files(root);
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
            mode,
            // Files left unsynced by a crashed process of this boot are unknown by name: the next checkpoint
            // syncs the whole directory's files.
            state: Mutex::new(SyncState { dirty, unsynced: if dirty { all_files(root) } else { HashSet::new() }, ..SyncState::default() }),
            flushing: Mutex::new(()),
        });
        Ok(Ok(SoftSyncDirectory { inner, shared }))
    }

    /// Writes what is held in memory (`flush`), fsyncs every file written since the last checkpoint and the
    /// directory, then marks the index clean. The fsyncs run without the state lock, so commits go on
    /// meanwhile; with `RecentSegments::OnDisk` only the files of metadata published during that pass are
    /// synced under the lock, before the marker turns clean.
    pub(crate) fn checkpoint(&self) -> io::Result<bool> {
        let _flushing = self.shared.flushing.lock().unwrap_or_else(PoisonError::into_inner);
        self.flush()?;
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
        if self.shared.mode == RecentSegments::InMemory {
            // The metadata on disk changes only in `flush`, which this checkpoint holds back, and every file it
            // names was in `files`: nothing here needs the state lock (holding it across fsyncs stalled every
            // commit and every file opened by readers for seconds while merged segments were synced).
            sync_dir(&self.shared.root)?;
            write_marker(&self.shared.root, &Marker { state: Durability::Clean, boot_id: self.shared.boot_id.clone() })?;
            self.shared.lock().dirty = false;
            return Ok(true);
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

    /// Whether commits since the last checkpoint are not yet durable.
    pub(crate) fn is_dirty(&self) -> bool {
        let state = self.shared.lock();
        state.dirty || !state.metas.is_empty()
    }

    /// Bytes of finished files held in memory.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.shared.lock().recent_bytes
    }

    #[cfg(test)]
    pub(crate) fn recent_files(&self) -> Vec<PathBuf> {
        self.shared.lock().recent.keys().cloned().collect()
    }

    /// Writes the files held in memory, then the metadata as it was when they were taken, then deletes the
    /// files dropped before that metadata. Nothing is fsynced here. The state lock is held only to take and
    /// record, never across file I/O, so commits go on meanwhile. Callers hold `shared.flushing`.
    fn flush(&self) -> io::Result<()> {
        let (files, metas, generation, dropped) = {
            let mut state = self.shared.lock();
            let files: Vec<(PathBuf, OwnedBytes)> = state.recent.iter().map(|(p, b)| (p.clone(), b.clone())).collect();
            // Every file these metas name is on disk already or among `files`.
            let metas: Vec<(PathBuf, Vec<u8>)> = state.metas.iter().map(|(p, m)| (p.clone(), m.clone())).collect();
            (files, metas, state.generation, std::mem::take(&mut state.dropped))
        };
        if files.is_empty() && metas.is_empty() && dropped.is_empty() {
            return Ok(());
        }
        // Files are written one by one; on a failure (a full disk) the rest stay in memory, where readers
        // and the next flush find them, and the partly written one is removed.
        let mut count_written = 0;
        let written = (|| -> io::Result<()> {
            for (path, bytes) in &files {
                let target = self.shared.root.join(path);
                if let Err(e) = std::fs::write(&target, bytes.as_slice()) {
                    let _ = std::fs::remove_file(&target);
                    return Err(e);
                }
                count_written += 1;
            }
            Ok(())
        })();
        {
            let mut state = self.shared.lock();
            for (path, bytes) in &files[..count_written] {
                state.unsynced.insert(path.clone());
                match state.recent.remove(path) {
                    Some(_) => state.recent_bytes -= bytes.len(),
                    // Dropped while it was being written: deleted after the next flush's metadata.
                    None => state.dropped.push(path.clone()),
                }
            }
            if let Err(e) = written {
                // Nothing newer is on disk: the drops wait for the next flush.
                state.dropped.extend(dropped);
                return Err(e);
            }
        }
        if !metas.is_empty() {
            let dirty = self.shared.lock().dirty;
            if !dirty {
                // Not under the state lock: only flushes write metadata in this mode, and they take turns.
                write_marker(&self.shared.root, &Marker { state: Durability::Dirty, boot_id: self.shared.boot_id.clone() })?;
                self.shared.lock().dirty = true;
            }
            for (path, content) in &metas {
                replace_file(&self.shared.root.join(path), content)?;
            }
            let mut state = self.shared.lock();
            state.unsynced.extend(metas.iter().map(|(p, _)| p.clone()));
            if state.generation == generation {
                state.metas.clear();
            }
        }
        for path in dropped {
            match std::fs::remove_file(self.shared.root.join(&path)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not delete a dropped index file"),
            }
            self.shared.lock().unsynced.remove(&path);
        }
        Ok(())
    }
}

/// Segment files a killed process wrote (spilled) but never listed in the file list on disk; tantivy only
/// collects files it lists. Segment files are named by a 32-digit hex id.
fn remove_unlisted_segment_files(root: &Path) {
    let Ok(listed) = std::fs::read(root.join(".managed.json")) else { return };
    let Ok(listed) = serde_json::from_slice::<HashSet<PathBuf>>(&listed) else { return };
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let segment_file = name.len() > 33 && name.as_bytes()[32] == b'.' && name[..32].bytes().all(|b| b.is_ascii_hexdigit());
        if segment_file && !listed.contains(Path::new(&name)) {
            let _ = std::fs::remove_file(entry.path());
        }
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
    let replaced = std::fs::write(&temp, content).and_then(|()| std::fs::rename(&temp, path));
    if replaced.is_err() {
        // A full disk must not keep the space of a half-written copy.
        let _ = std::fs::remove_file(&temp);
    }
    replaced
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

/// A new file held in memory until it is finished, or until it grows past [`SPILL_BYTES`] and goes to disk.
struct MemoryFile {
    buffer: Vec<u8>,
    spilled: Option<UnsyncedFile>,
    relative: PathBuf,
    shared: Arc<Shared>,
}

impl Write for MemoryFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(file) = &mut self.spilled {
            return file.write(buf);
        }
        if self.buffer.len() + buf.len() > SPILL_BYTES {
            let mut file = UnsyncedFile {
                file: create_new(&self.shared.root, &self.relative).map_err(io::Error::other)?,
                relative: self.relative.clone(),
                shared: self.shared.clone(),
            };
            file.file.write_all(&self.buffer)?;
            self.buffer = Vec::new();
            self.spilled = Some(file);
            return self.write(buf);
        }
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for MemoryFile {
    fn terminate_ref(&mut self, token: AntiCallToken) -> io::Result<()> {
        if let Some(file) = &mut self.spilled {
            return file.terminate_ref(token);
        }
        let bytes = OwnedBytes::new(std::mem::take(&mut self.buffer));
        let mut state = self.shared.lock();
        state.recent_bytes += bytes.len();
        if let Some(replaced) = state.recent.insert(self.relative.clone(), bytes) {
            state.recent_bytes -= replaced.len();
        }
        Ok(())
    }
}

fn create_new(root: &Path, path: &Path) -> Result<File, OpenWriteError> {
    OpenOptions::new().write(true).create_new(true).open(root.join(path)).map_err(|e| {
        if e.kind() == io::ErrorKind::AlreadyExists {
            OpenWriteError::FileAlreadyExists(path.to_path_buf())
        } else {
            OpenWriteError::wrap_io_error(e, path.to_path_buf())
        }
    })
}

impl Directory for SoftSyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        if let Some(bytes) = self.shared.lock().recent.get(path) {
            return Ok(Arc::new(FileSlice::new(Arc::new(bytes.clone()))));
        }
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        if self.shared.mode == RecentSegments::InMemory {
            let mut state = self.shared.lock();
            match state.recent.remove(path) {
                Some(bytes) => state.recent_bytes -= bytes.len(),
                // The metadata on disk may still name it (see `flush`).
                None => state.dropped.push(path.to_path_buf()),
            }
            return Ok(());
        }
        self.inner.delete(path)?;
        self.shared.lock().unsynced.remove(path);
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        {
            let state = self.shared.lock();
            if state.recent.contains_key(path) || state.metas.contains_key(path) {
                return Ok(true);
            }
        }
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.shared.mode == RecentSegments::InMemory {
            if self.shared.lock().recent.contains_key(path) {
                return Err(OpenWriteError::FileAlreadyExists(path.to_path_buf()));
            }
            let file = MemoryFile { buffer: Vec::new(), spilled: None, relative: path.to_path_buf(), shared: self.shared.clone() };
            return Ok(BufWriter::new(Box::new(file)));
        }
        let file = create_new(&self.shared.root, path)?;
        Ok(BufWriter::new(Box::new(UnsyncedFile { file, relative: path.to_path_buf(), shared: self.shared.clone() })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        if let Some(content) = self.shared.lock().metas.get(path) {
            return Ok(content.clone());
        }
        self.inner.atomic_read(path)
    }

    /// `meta.json` and tantivy's file list: the changes that can make a torn index, so the marker turns dirty
    /// first. In memory until the next flush with `RecentSegments::InMemory`.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut state = self.shared.lock();
        state.generation += 1;
        if self.shared.mode == RecentSegments::InMemory {
            state.metas.insert(path.to_path_buf(), data.to_vec());
            return Ok(());
        }
        self.shared.mark_dirty(&mut state)?;
        replace_file(&self.shared.root.join(path), data)?;
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
