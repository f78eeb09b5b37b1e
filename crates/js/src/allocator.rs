//! The sandbox's memory accounting. QuickJS enforces its own memory limit, but when it is hit while
//! QuickJS is already short of memory it may throw `null` instead of its "out of memory" error, and a
//! script can throw `null` too. So the sandbox enforces the limit itself in the allocator it gives
//! QuickJS, and remembers every refusal: an error after a refusal is out of memory, whatever was thrown.

use std::alloc::{alloc, alloc_zeroed, dealloc, realloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rquickjs::allocator::Allocator;

/// Every block starts with its payload size; QuickJS stores values up to 8-byte aligned.
const ALIGN: usize = 8;
const HEADER: usize = 8;

pub(crate) struct LimitedAllocator {
    limit: usize,
    used: usize,
    refused: Arc<AtomicBool>,
}

impl LimitedAllocator {
    /// An allocator granting at most `limit` bytes of payload; `refused` becomes true on each refusal.
    pub(crate) fn new(limit: usize, refused: Arc<AtomicBool>) -> LimitedAllocator {
        LimitedAllocator { limit, used: 0, refused }
    }

    fn grant(&mut self, more: usize) -> bool {
        if self.used.saturating_add(more) > self.limit {
            self.refused.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(HEADER)?, ALIGN).ok()
    }

    fn allocate(&mut self, size: usize, zeroed: bool) -> *mut u8 {
        let size = size.max(1).next_multiple_of(ALIGN);
        let Some(layout) = Self::layout(size) else { return std::ptr::null_mut() };
        if !self.grant(size) {
            return std::ptr::null_mut();
        }
        #[allow(unsafe_code)]
        // SAFETY: the layout is non-zero in size; the header fits in front of the payload.
        unsafe {
            let block = if zeroed { alloc_zeroed(layout) } else { alloc(layout) };
            if block.is_null() {
                return block;
            }
            self.used += size;
            block.cast::<usize>().write(size);
            block.add(HEADER)
        }
    }
}

#[allow(unsafe_code)]
// SAFETY: every pointer handed out comes from `allocate` or `realloc` below and carries its size in the
// `HEADER` bytes before it, so `dealloc`, `realloc` and `usable_size` rebuild the exact layout.
unsafe impl Allocator for LimitedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        self.allocate(size, false)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(total) => self.allocate(total, true),
            None => std::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        let block = ptr.sub(HEADER);
        let size = block.cast::<usize>().read();
        self.used -= size;
        dealloc(block, Layout::from_size_align_unchecked(size + HEADER, ALIGN));
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.allocate(new_size, false);
        }
        let new_size = new_size.max(1).next_multiple_of(ALIGN);
        let block = ptr.sub(HEADER);
        let old_size = block.cast::<usize>().read();
        if new_size > old_size && !self.grant(new_size - old_size) {
            return std::ptr::null_mut();
        }
        let Some(new_layout) = Self::layout(new_size) else { return std::ptr::null_mut() };
        let moved = realloc(block, Layout::from_size_align_unchecked(old_size + HEADER, ALIGN), new_layout.size());
        if moved.is_null() {
            return moved;
        }
        self.used = self.used - old_size + new_size;
        moved.cast::<usize>().write(new_size);
        moved.add(HEADER)
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        ptr.sub(HEADER).cast::<usize>().read()
    }
}
