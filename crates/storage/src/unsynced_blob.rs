//! Attachment contents made durable as a group. A bulk path (an import) stages thousands of contents, and
//! syncing each file and the directory as it is written costs two journal commits per content (measured:
//! 20 s of a 27 s import of 120k documents with 10k attachments). Here each content's writeback starts as
//! soon as it is written; [`BlobStore::settle`] later syncs the group's files (the first sync commits the
//! journal transaction holding the others' allocations, so the rest are cheap), moves each under its hash
//! and syncs the directory once. The rule of [`BlobWriter::finish`] stays: a content is durable under its
//! hash before the transaction that references it commits. The group's syncs run from several threads at
//! once: each `fdatasync` waits for a device cache flush, and concurrent ones share flushes (measured on
//! the benchmark machine: 1000 syncs of 4 KB files took 4.3 s one after the other, 0.17 s from 8 threads).

use std::fs::File;
use std::path::PathBuf;

use base64::Engine as _;
use blake2::Digest;

use crate::blob_store::{io, BlobStore, BlobWriter, StagedBlob};
use crate::writeback::start_writeback;
use crate::StorageError;

/// A content written and hashed, still under its temporary name and not durable: pass it to
/// [`BlobStore::settle`] before committing a transaction that references it. Dropped unsettled, its
/// temporary file is removed.
pub struct UnsyncedBlob {
    file: File,
    temp_path: PathBuf,
    blob: StagedBlob,
    settled: bool,
}

impl UnsyncedBlob {
    /// Its hash and size; the hash is pinned already (unpin it as for [`BlobWriter::finish`]).
    pub fn blob(&self) -> &StagedBlob {
        &self.blob
    }
}

impl Drop for UnsyncedBlob {
    fn drop(&mut self) {
        if !self.settled {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

impl BlobWriter<'_> {
    /// Ends the upload without syncing it: its writeback starts, and the hash is pinned now (so a
    /// collection cannot remove a content of that hash before the group is settled).
    pub fn finish_unsynced(mut self) -> Result<UnsyncedBlob, StorageError> {
        start_writeback(&self.file);
        let temp_path = self.temp_path.clone();
        let file = self.file.try_clone().map_err(io(&temp_path))?;
        let hash = base64::engine::general_purpose::STANDARD.encode(std::mem::take(&mut self.hasher).finalize());
        let blob = StagedBlob { hash, size: self.size };
        *self.store.pins.lock().entry(blob.hash.clone()).or_insert(0) += 1;
        // The temporary file now belongs to the UnsyncedBlob.
        self.keep = true;
        drop(self);
        Ok(UnsyncedBlob { file, temp_path, blob, settled: false })
    }
}

impl BlobStore {
    /// Makes a group of contents durable under their hashes: every file synced, each moved into place (or
    /// dropped when that content is stored already), then the directory synced once.
    pub fn settle(&self, mut blobs: Vec<UnsyncedBlob>) -> Result<(), StorageError> {
        if blobs.is_empty() {
            return Ok(());
        }
        sync_all_data(&blobs)?;
        {
            let _pins = self.pins.lock();
            for unsynced in &mut blobs {
                let target = self.path_of(&unsynced.blob.hash);
                if target.exists() {
                    std::fs::remove_file(&unsynced.temp_path).map_err(io(&unsynced.temp_path))?;
                } else {
                    std::fs::rename(&unsynced.temp_path, &target).map_err(io(&target))?;
                }
                unsynced.settled = true;
            }
        }
        self.sync_dir()
    }
}

/// Threads syncing a group's files at most (their syncs wait on the device, not the CPU).
const SYNC_THREADS: usize = 16;
/// Below this many files a group is synced by the calling thread alone.
const SYNC_INLINE_BELOW: usize = 4;

/// Syncs the data of every file of the group, from up to [`SYNC_THREADS`] threads; the first error wins.
fn sync_all_data(blobs: &[UnsyncedBlob]) -> Result<(), StorageError> {
    let sync = |group: &[UnsyncedBlob]| -> Result<(), StorageError> {
        for unsynced in group {
            unsynced.file.sync_data().map_err(io(&unsynced.temp_path))?;
        }
        Ok(())
    };
    if blobs.len() < SYNC_INLINE_BELOW {
        return sync(blobs);
    }
    let per_thread = blobs.len().div_ceil(SYNC_THREADS);
    std::thread::scope(|scope| {
        let workers: Vec<_> = blobs.chunks(per_thread).map(|group| scope.spawn(move || sync(group))).collect();
        workers.into_iter().try_for_each(|worker| worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settled_group_is_stored_under_its_hashes_and_an_unsettled_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let mut group = Vec::new();
        let many: Vec<Vec<u8>> = (0..40u32).map(|n| n.to_le_bytes().to_vec()).collect();
        for content in [&b"one"[..], b"two", b"one"].into_iter().chain(many.iter().map(Vec::as_slice)) {
            let mut writer = store.writer().unwrap();
            writer.write(content).unwrap();
            group.push(writer.finish_unsynced().unwrap());
        }
        let hashes: Vec<String> = group.iter().map(|u| u.blob().hash.clone()).collect();
        assert_eq!(hashes[0], crate::hash_of(b"one"));
        assert!(!store.path_of(&hashes[0]).exists(), "not in place before it is settled");
        store.settle(group).unwrap();
        assert_eq!(std::fs::read(store.path_of(&hashes[0])).unwrap(), b"one");
        assert_eq!(std::fs::read(store.path_of(&hashes[1])).unwrap(), b"two");
        // A group large enough to be synced from several threads lands whole.
        for (content, hash) in many.iter().zip(&hashes[3..]) {
            assert_eq!(&std::fs::read(store.path_of(hash)).unwrap(), content);
        }

        let mut writer = store.writer().unwrap();
        writer.write(b"three").unwrap();
        let unsettled = writer.finish_unsynced().unwrap();
        let hash = unsettled.blob().hash.clone();
        drop(unsettled);
        assert!(!store.path_of(&hash).exists());
        let temp_files = std::fs::read_dir(store.dir().join("tmp")).unwrap().count();
        assert_eq!(temp_files, 0, "no temporary file is left behind");
    }
}
