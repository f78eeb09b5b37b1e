//! Temporary files for attachment contents, created ahead on a thread of their own. On ext4, creating a file
//! (allocating its inode) is the costly part of staging a small content: 30% of an import's parsing thread
//! in its profile, with many recently deleted inodes to skip. A bulk path (an import) takes its files from a
//! supply, so its thread only writes and hashes, and the creations run on the other core.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use blake2::Digest;

use crate::blob_store::{io, BlobStore, BlobWriter, Hasher};
use crate::StorageError;

type Created = Result<(File, PathBuf), StorageError>;

/// Empty temporary files in a blob store's temporary directory, created ahead of need. Dropping it removes
/// the files it created and nobody took (a crash leaves them to the store's next opening, which empties
/// the temporary directory).
pub struct TempFileSupply {
    receiver: Receiver<Created>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl BlobStore {
    /// Starts creating temporary files, keeping up to `ahead` ready.
    pub fn temp_file_supply(&self, ahead: usize) -> Result<TempFileSupply, StorageError> {
        let (sender, receiver) = sync_channel::<Created>(ahead.max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let dir = self.temp_dir();
        let prefix = format!("{}-s{}", std::process::id(), self.next_temp_number());
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("blob-temp-files".into())
            .spawn(move || {
                for n in 0u64.. {
                    if stopped.load(Ordering::Acquire) {
                        break;
                    }
                    let path = dir.join(format!("{prefix}-{n}"));
                    let created = File::create(&path).map(|file| (file, path.clone())).map_err(io(&path));
                    let failed = created.is_err();
                    if sender.send(created).is_err() {
                        let _ = std::fs::remove_file(&path);
                        break;
                    }
                    if failed {
                        break;
                    }
                }
            })
            .map_err(|e| StorageError::WriterFailed(format!("cannot start the temporary-file thread: {e}")))?;
        Ok(TempFileSupply { receiver, stop, thread: Some(thread) })
    }

    /// Starts an upload into a file of `supply` (as [`BlobStore::writer`] does into a file it creates).
    pub fn writer_from(&self, supply: &TempFileSupply) -> Result<BlobWriter<'_>, StorageError> {
        let (file, temp_path) =
            supply.receiver.recv().map_err(|_| StorageError::WriterFailed("the temporary-file thread stopped".into()))??;
        Ok(BlobWriter { store: self, file, temp_path, hasher: Hasher::new(), size: 0, keep: false })
    }
}

impl Drop for TempFileSupply {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Taking what is queued unblocks the thread, which then sees `stop` and ends, closing the channel.
        for (_, path) in self.receiver.iter().flatten() {
            let _ = std::fs::remove_file(path);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supplied_files_stage_contents_and_the_rest_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let supply = store.temp_file_supply(8).unwrap();
        let mut staged = Vec::new();
        for i in 0..20u8 {
            let mut writer = store.writer_from(&supply).unwrap();
            writer.write(&[i; 100]).unwrap();
            staged.push(writer.finish_unsynced().unwrap());
        }
        let hashes: Vec<String> = staged.iter().map(|s| s.blob().hash.clone()).collect();
        store.settle(staged).unwrap();
        for (i, hash) in hashes.iter().enumerate() {
            assert_eq!(std::fs::read(store.path_of(hash)).unwrap(), vec![i as u8; 100]);
        }
        drop(supply);
        assert_eq!(std::fs::read_dir(store.temp_dir()).unwrap().count(), 0, "unused temporary files are removed");
    }
}
