//! Grows LMDB's memory map before it fills. `--map-size-bytes` is where a database starts; between
//! transactions the merger doubles the map while less than half of it (or less than [`MIN_HEADROOM`]) is
//! free, up to [`MAX_MAP_SIZE`]. Only a single write bigger than the headroom, or readers that never let
//! go (see `reader_gate.rs`), still meet a full map: that write fails with `StorageError::MapFull`, which
//! names the setting.

use std::time::{Duration, Instant};

use crate::store::Store;
use crate::StorageError;

/// Free map kept ahead of the data at least: room for the largest request body (64 MiB by default) and more.
const MIN_HEADROOM: usize = 256 << 20;
/// The map never grows past this (or past the configured size, if larger): virtual address space is
/// plentiful but not unbounded, and many databases share it.
pub const MAX_MAP_SIZE: usize = 1 << 40;
/// How long the merger waits for open read transactions to end before a resize.
const PATIENCE: Duration = Duration::from_millis(50);
/// After readers kept it from resizing, the merger tries again this much later.
const RETRY_AFTER: Duration = Duration::from_millis(500);
/// Map sizes are kept a multiple of this (a multiple of every page size in use).
const GRANULE: usize = 1 << 16;

pub(crate) struct MapGrowth {
    retry_at: Option<Instant>,
    page_size: usize,
}

/// The map size to grow to, or `None` when the map has its headroom (or is at its limit).
fn wanted_size(map_size: usize, used: usize, limit: usize) -> Option<usize> {
    let headroom = |size: usize| (size / 2).max(MIN_HEADROOM);
    if map_size.saturating_sub(used) >= headroom(map_size) || map_size >= limit {
        return None;
    }
    let mut size = map_size.max(GRANULE);
    while size.saturating_sub(used) < headroom(size) && size < limit {
        size = size.saturating_mul(2);
    }
    Some(size.min(limit) / GRANULE * GRANULE)
}

impl MapGrowth {
    pub fn new(store: &Store) -> MapGrowth {
        MapGrowth { retry_at: None, page_size: store.page_size().unwrap_or(4096) as usize }
    }

    /// Whether [`MapGrowth::grow_if_needed`] would try to grow the map now.
    pub fn wanted(&self, store: &Store) -> bool {
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return false;
        }
        let info = store.env.info();
        let used = (info.last_page_number + 1).saturating_mul(self.page_size);
        wanted_size(info.map_size, used, MAX_MAP_SIZE.max(store.options.map_size)).is_some()
    }

    /// Grows the map if it is getting full; the new size when it did. Only on the merger thread, with no
    /// write transaction open.
    pub fn grow_if_needed(&mut self, store: &Store) -> Result<Option<usize>, StorageError> {
        if self.retry_at.is_some_and(|t| Instant::now() < t) {
            return Ok(None);
        }
        let info = store.env.info();
        let used = (info.last_page_number + 1).saturating_mul(self.page_size);
        let limit = MAX_MAP_SIZE.max(store.options.map_size);
        let Some(new_size) = wanted_size(info.map_size, used, limit) else { return Ok(None) };
        // SAFETY (heed's contract for `resize`): no transaction of this process is open: the merger's own are
        // closed between batches (its checkpoint reader too, checkpoint.rs), and the gate holds every reader
        // out while the map is remapped.
        #[allow(unsafe_code)]
        let resized = store.gate.exclusive(PATIENCE, || unsafe { store.env.resize(new_size) });
        match resized {
            Some(result) => {
                result?;
                self.retry_at = None;
                tracing::info!(path = %store.path().display(), from = info.map_size, to = new_size, used, "grew the LMDB map");
                Ok(Some(new_size))
            }
            None => {
                self.retry_at = Some(Instant::now() + RETRY_AFTER);
                tracing::debug!(path = %store.path().display(), "long-running readers kept the map from growing; retrying later");
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_doubles_until_half_of_it_or_the_minimum_headroom_is_free() {
        let limit = MAX_MAP_SIZE;
        assert_eq!(wanted_size(64 << 30, 1 << 30, limit), None);
        assert_eq!(wanted_size(1 << 20, 1 << 19, limit), Some(512 << 20));
        assert_eq!(wanted_size(1 << 30, 600 << 20, limit), Some(2 << 30));
        assert_eq!(wanted_size(limit, limit - 1, limit), None, "at the limit: writes fail with MapFull");
        assert_eq!(wanted_size(limit / 2 + (1 << 20), limit / 2, limit), Some(limit));
    }
}
