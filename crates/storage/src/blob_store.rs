//! Attachment contents: one file per distinct content, named after its hash, under `<database>/attachments/`.
//! Uploads stream into a temporary file while hashing; the file is synced and renamed into place before
//! the transaction that references it commits. A file is removed only when no committed row references its
//! hash and no upload in flight has pinned it.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use base64::Engine as _;
use blake2::digest::consts::U32;
use blake2::{Blake2b, Digest};
use parking_lot::Mutex;

use crate::StorageError;

pub(crate) type Hasher = Blake2b<U32>;

/// Directory (inside the database directory) holding attachment contents.
pub const BLOB_DIR: &str = "attachments";
const TEMP_DIR: &str = "tmp";

/// A database's attachment contents on disk, with the pins of uploads not answered yet.
pub struct BlobStore {
    dir: PathBuf,
    /// Uploads that renamed (or found) their file and have not been answered yet, by hash.
    pub(crate) pins: Mutex<HashMap<String, usize>>,
    next_temp: AtomicU64,
    /// Snapshot backups running: while any copies this directory, no file is removed (what a backup's
    /// snapshot references must still be there when it is copied; the next opening removes leftovers).
    collection_holds: AtomicUsize,
}

/// Keeps [`BlobStore::collect`] from removing files while held (see [`BlobStore::hold_collection`]).
pub struct CollectionHold<'s> {
    store: &'s BlobStore,
}

impl Drop for CollectionHold<'_> {
    fn drop(&mut self) {
        self.store.collection_holds.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A synced upload: its content is at `path` under its hash and pinned until `BlobStore::unpin`.
#[derive(Debug, Clone, PartialEq)]
pub struct StagedBlob {
    /// Base64 of the 32-byte BLAKE2b hash, as RavenDB reports it in `Attachment-Hash`.
    pub hash: String,
    /// Length in bytes.
    pub size: u64,
}

/// Streams one upload to a temporary file while hashing it.
pub struct BlobWriter<'s> {
    pub(crate) store: &'s BlobStore,
    pub(crate) file: File,
    pub(crate) temp_path: PathBuf,
    pub(crate) hasher: Hasher,
    pub(crate) size: u64,
    /// Set by finish(): the temporary file is moved into place instead of removed on drop.
    pub(crate) keep: bool,
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io { path: path.to_owned(), source }
}

/// The file name of a hash: URL-safe base64, since standard base64 may contain `/`.
fn file_name(hash: &str) -> String {
    hash.replace('/', "_").replace('+', "-")
}

/// Where the content of `hash` is kept in the blob directory `blob_dir`.
pub(crate) fn content_path(blob_dir: &Path, hash: &str) -> PathBuf {
    blob_dir.join(file_name(hash))
}

/// The hash of a content, as `StagedBlob::hash` gives it.
pub fn hash_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Hasher::digest(bytes))
}

impl BlobStore {
    /// Opens the directory and removes leftovers of interrupted uploads.
    pub fn open(database_dir: &Path) -> Result<BlobStore, StorageError> {
        let dir = database_dir.join(BLOB_DIR);
        let temp = dir.join(TEMP_DIR);
        if temp.exists() {
            std::fs::remove_dir_all(&temp).map_err(io(&temp))?;
        }
        std::fs::create_dir_all(&temp).map_err(io(&temp))?;
        Ok(BlobStore { dir, pins: Mutex::new(HashMap::new()), next_temp: AtomicU64::new(0), collection_holds: AtomicUsize::new(0) })
    }

    /// Where the content of `hash` is kept.
    pub fn path_of(&self, hash: &str) -> PathBuf {
        content_path(&self.dir, hash)
    }

    /// The directory of uploads in progress (emptied at open).
    pub(crate) fn temp_dir(&self) -> PathBuf {
        self.dir.join(TEMP_DIR)
    }

    /// A number no other temporary file of this process has used.
    pub(crate) fn next_temp_number(&self) -> u64 {
        self.next_temp.fetch_add(1, Ordering::Relaxed)
    }

    /// Starts an upload into a temporary file.
    pub fn writer(&self) -> Result<BlobWriter<'_>, StorageError> {
        let temp_path = self.temp_dir().join(format!("{}-{}", std::process::id(), self.next_temp_number()));
        let file = File::create(&temp_path).map_err(io(&temp_path))?;
        Ok(BlobWriter { store: self, file, temp_path, hasher: Hasher::new(), size: 0, keep: false })
    }

    /// Forgets one pin of `hash` (the upload's transaction was answered).
    pub fn unpin(&self, hash: &str) {
        let mut pins = self.pins.lock();
        if let Some(n) = pins.get_mut(hash) {
            *n -= 1;
            if *n == 0 {
                pins.remove(hash);
            }
        }
    }

    /// Removes the files of `hashes` that no committed row references (`referenced` reads the committed
    /// state) and no upload has pinned.
    pub fn collect(&self, hashes: &[String], referenced: impl Fn(&str) -> Result<bool, StorageError>) {
        let pins = self.pins.lock();
        if self.collection_holds.load(Ordering::SeqCst) > 0 {
            return;
        }
        for hash in hashes {
            if pins.contains_key(hash) {
                continue;
            }
            match referenced(hash) {
                Ok(true) => {}
                Ok(false) => {
                    let path = self.path_of(hash);
                    if let Err(e) = std::fs::remove_file(&path) {
                        if e.kind() != std::io::ErrorKind::NotFound {
                            tracing::warn!(path = %path.display(), error = %e, "cannot remove an unreferenced attachment");
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot check attachment references"),
            }
        }
    }

    /// Stops removals until the hold is dropped. Taken under the pins lock, so a collection running now
    /// finishes before this returns.
    pub fn hold_collection(&self) -> CollectionHold<'_> {
        let _pins = self.pins.lock();
        self.collection_holds.fetch_add(1, Ordering::SeqCst);
        CollectionHold { store: self }
    }

    /// The directory of the content files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Hashes of every content file, for the cleanup at open.
    pub fn stored_hashes(&self) -> Result<Vec<String>, StorageError> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(io(&self.dir))? {
            let entry = entry.map_err(io(&self.dir))?;
            if entry.file_type().map_err(io(&self.dir))?.is_file() {
                out.push(entry.file_name().to_string_lossy().replace('_', "/").replace('-', "+"));
            }
        }
        Ok(out)
    }

    pub(crate) fn sync_dir(&self) -> Result<(), StorageError> {
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io(&self.dir))
    }
}

impl BlobWriter<'_> {
    /// Appends a chunk of the upload.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), StorageError> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.file.write_all(chunk).map_err(io(&self.temp_path))
    }

    /// Syncs the content, moves it under its hash (or drops it when that content is already stored) and
    /// pins the hash. The caller must `unpin` once the transaction referencing it is answered.
    pub fn finish(mut self) -> Result<StagedBlob, StorageError> {
        let temp_path = self.temp_path.clone();
        self.file.sync_all().map_err(io(&temp_path))?;
        let (store, size) = (self.store, self.size);
        let hash = base64::engine::general_purpose::STANDARD.encode(std::mem::take(&mut self.hasher).finalize());
        self.keep = true;
        drop(self);
        let target = store.path_of(&hash);
        let mut pins = store.pins.lock();
        if target.exists() {
            std::fs::remove_file(&temp_path).map_err(io(&temp_path))?;
        } else {
            std::fs::rename(&temp_path, &target).map_err(io(&target))?;
            store.sync_dir()?;
        }
        *pins.entry(hash.clone()).or_insert(0) += 1;
        Ok(StagedBlob { hash, size })
    }
}

impl Drop for BlobWriter<'_> {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}
