//! A counting global allocator shared by the examples (included with `#[path]`): live heap
//! bytes (and contree's mapped bytes), for bytes per entry. Install it with
//! `#[global_allocator] static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

pub struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// Live heap bytes allocated through [`Counting`], plus the bytes contree holds in memory
/// mappings (its page pools' segments on Linux, which never pass through an allocator; see
/// [`contree::mapped_bytes`]).
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed) + contree::mapped_bytes() as isize
}

// SAFETY: forwards to the system allocator and only counts the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
}
