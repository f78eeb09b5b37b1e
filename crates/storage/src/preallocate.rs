//! Keeps zero-filled space ahead of LMDB's data file. A commit that appends pages to a file that must grow
//! also makes the file system journal the new size, which costs a second, slower flush; writing into space
//! that already exists does not (measured: about 20% more durable commits per second).
//!
//! Runs only on the merger thread between transactions, when LMDB is not writing, and only ever writes past
//! the last page LMDB uses, so it can never overwrite data.

use std::fs::OpenOptions;
use std::path::PathBuf;

use crate::store::Store;
use crate::zero_fill;

/// Free space kept ahead of the last used page grows with the database, so the many small databases of a
/// test suite stay small: a quarter of the used size, between these bounds.
const MIN_AHEAD: u64 = 1 << 20;
const MAX_AHEAD: u64 = 16 << 20;

pub(crate) struct Preallocator {
    path: PathBuf,
    page_size: u64,
    disabled: bool,
}

impl Preallocator {
    pub fn new(store: &Store) -> Preallocator {
        let page_size = store.page_size().unwrap_or(4096);
        Preallocator { path: store.env.path().join("data.mdb"), page_size, disabled: false }
    }

    /// Tops up the free space ahead of the used pages; failures only disable it (it is an optimisation)
    /// until [`Preallocator::resume`] (the disk had room again).
    pub fn top_up(&mut self, store: &Store) {
        if self.disabled {
            return;
        }
        if let Err(e) = self.try_top_up(store) {
            tracing::warn!(path = %self.path.display(), error = %e, "preallocation failed; continuing without it");
            self.disabled = true;
        }
    }

    pub fn resume(&mut self) {
        self.disabled = false;
    }

    fn try_top_up(&self, store: &Store) -> std::io::Result<()> {
        let used = (store.env.info().last_page_number as u64 + 1) * self.page_size;
        let file = OpenOptions::new().write(true).open(&self.path)?;
        let len = file.metadata()?.len();
        let ahead = (used / 4).clamp(MIN_AHEAD, MAX_AHEAD);
        // Top up once less than half of the wanted space is left, in one step of a few milliseconds.
        if len >= used + ahead / 2 || used + ahead > store.map_size() as u64 {
            return Ok(());
        }
        // Whole 64 KiB steps: the file's length stays a multiple of the page size (a copy or a compaction
        // sizes its map from it).
        zero_fill::write_zeros(&file, len.max(used), (used + ahead).next_multiple_of(1 << 16))?;
        file.sync_data()?;
        drop(file);
        Ok(())
    }
}
