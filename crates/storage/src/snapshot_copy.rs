//! A consistent copy of an open database's store, for snapshot backups, taken while writes go on.
//!
//! The data file is LMDB's compacting copy, which reads one read transaction: it holds exactly the commits
//! made before it started and is a complete data file on its own (no journal needed: a journal only carries
//! commits the data file may lack, and the copy lacks none of the snapshot's). Attachment contents are files
//! named after their hash, written before the commit that references them; removals are held from before
//! the snapshot until the files are copied, so every content the snapshot references is copied. Contents
//! written after the snapshot may be copied too: the restored store removes them at its first opening.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use heed::CompactionOption;

use crate::blob_store::BLOB_DIR;
use crate::tables::DATA_FILE;
use crate::writeback::start_writeback;
use crate::{StorageError, Store};

/// Copied attachment files kept open until they are synced together.
const SYNC_GROUP: usize = 256;
/// How often the data file's writeback is started while LMDB copies into it.
const FLUSH_BEHIND: Duration = Duration::from_millis(50);

/// What a snapshot copy wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotCopy {
    /// Size of the copied data file.
    pub data_bytes: u64,
    /// Attachment content files copied.
    pub attachment_files: u64,
    /// Their total size.
    pub attachment_bytes: u64,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |source| StorageError::Io { path: path.to_owned(), source }
}

/// Runs `copy` (which writes `file`) while a thread starts the writeback of what it wrote every
/// [`FLUSH_BEHIND`]: a data file of gigabytes otherwise sits dirty in the page cache until the final sync,
/// and that one large flush delays the fsyncs of the writes going on meanwhile (on ext4 a journal commit
/// waits for the data it orders).
fn copy_flushing_behind<T>(file: &File, copy: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                start_writeback(file);
                std::thread::sleep(FLUSH_BEHIND);
            }
        });
        let outcome = copy();
        done.store(true, Ordering::Relaxed);
        outcome
    })
}

/// Syncs each file of the group (their writeback started already) and empties it.
fn sync_group(group: &mut Vec<(File, PathBuf)>) -> Result<(), StorageError> {
    for (file, path) in group.drain(..) {
        file.sync_all().map_err(io(&path))?;
    }
    Ok(())
}

/// Flushes a directory's entries (renames and new files in it).
pub fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

impl Store {
    /// Copies the store into `target` (an empty or new directory): `data.mdb` and `attachments/`, every file
    /// flushed. `copied` is told each file's path relative to `target` and its size as it is written.
    pub fn copy_snapshot(&self, target: &Path, mut copied: impl FnMut(&str, u64)) -> Result<SnapshotCopy, StorageError> {
        std::fs::create_dir_all(target.join(BLOB_DIR)).map_err(io(target))?;
        let hold = self.blobs().hold_collection();
        let data = target.join(DATA_FILE);
        let mut file = File::create(&data).map_err(io(&data))?;
        {
            // The copy is a read transaction of its own: the map must not be resized under it.
            let _pass = self.gate.enter();
            let flusher = file.try_clone().map_err(io(&data))?;
            copy_flushing_behind(&flusher, || self.env.copy_to_file(&mut file, CompactionOption::Enabled))?;
        }
        file.sync_all().map_err(io(&data))?;
        let data_bytes = file.metadata().map_err(io(&data))?.len();
        drop(file);
        copied(DATA_FILE, data_bytes);
        let mut summary = SnapshotCopy { data_bytes, ..SnapshotCopy::default() };
        let source_dir = self.blobs().dir().to_owned();
        // Copied files are synced in groups, their writeback started as each is copied: one sync per file
        // as it is copied costs a journal commit each (most of a snapshot's time with many attachments).
        let mut unsynced: Vec<(File, PathBuf)> = Vec::with_capacity(SYNC_GROUP);
        for entry in std::fs::read_dir(&source_dir).map_err(io(&source_dir))? {
            let entry = entry.map_err(io(&source_dir))?;
            // Skips the directory of uploads in progress.
            if !entry.file_type().map_err(io(&source_dir))?.is_file() {
                continue;
            }
            let name = entry.file_name();
            let destination = target.join(BLOB_DIR).join(&name);
            let bytes = std::fs::copy(entry.path(), &destination).map_err(io(&destination))?;
            let file = File::open(&destination).map_err(io(&destination))?;
            start_writeback(&file);
            unsynced.push((file, destination));
            if unsynced.len() >= SYNC_GROUP {
                sync_group(&mut unsynced)?;
            }
            summary.attachment_files += 1;
            summary.attachment_bytes += bytes;
            copied(&format!("{BLOB_DIR}/{}", name.to_string_lossy()), bytes);
        }
        sync_group(&mut unsynced)?;
        drop(hold);
        sync_dir(&target.join(BLOB_DIR))?;
        sync_dir(target)?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[test]
    fn a_snapshot_copy_opens_as_a_store_with_the_committed_data() {
        let source = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let options = StoreOptions { map_size: 64 << 20, disk_reserve_bytes: 0, ..StoreOptions::default() };
        let store = Store::open(source.path(), &options).unwrap();
        {
            let mut wtxn = store.env.write_txn().unwrap();
            for i in 0..1_000u32 {
                store.tables.identities.put(&mut wtxn, format!("k{i:05}").as_bytes(), b"v").unwrap();
            }
            wtxn.commit().unwrap();
        }
        std::fs::write(store.blobs().dir().join("abc"), b"content").unwrap();
        let mut files = Vec::new();
        let copy = store.copy_snapshot(&target.path().join("snap"), |path, _| files.push(path.to_owned())).unwrap();
        assert_eq!(copy.attachment_files, 1);
        assert_eq!(files, ["data.mdb", "attachments/abc"]);
        // Writes after the copy are not in it.
        {
            let mut wtxn = store.env.write_txn().unwrap();
            store.tables.identities.put(&mut wtxn, b"later", b"v").unwrap();
            wtxn.commit().unwrap();
        }
        let database_id = store.database_id().to_owned();
        drop(store);
        let restored = Store::open(&target.path().join("snap"), &options).unwrap();
        assert_eq!(restored.database_id(), database_id);
        let rtxn = restored.env.read_txn().unwrap();
        assert_eq!(restored.tables.identities.len(&rtxn).unwrap(), 1_000);
    }
}
