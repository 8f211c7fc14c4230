//! A counting global allocator: live heap bytes, for bytes per entry.
//!
//! It forwards to the system allocator and adds each allocation's size to a counter (and
//! subtracts it on free). To keep the counting off the hot path of multi-threaded runs it
//! uses striped counters: each thread adds to its own cache-line-sized cell (assigned round
//! robin on its first allocation), and a read sums the cells. Sizes are the sizes requested,
//! not what the system allocator rounds them up to.
//!
//! The binary installs it with `#[global_allocator]`; a test binary may too. Without it
//! [`is_counting`] is false and bytes per entry are reported as null.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};

const STRIPES: usize = 64;

#[repr(align(128))]
struct Stripe(AtomicIsize);

static LIVE: [Stripe; STRIPES] = [const { Stripe(AtomicIsize::new(0)) }; STRIPES];
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    // `const` and without a destructor: usable from inside the allocator.
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn add(delta: isize) {
    let i = STRIPE
        .try_with(|s| {
            let v = s.get();
            if v != usize::MAX {
                return v;
            }
            let v = NEXT_STRIPE.fetch_add(1, Relaxed) % STRIPES;
            s.set(v);
            v
        })
        .unwrap_or(0);
    LIVE[i].0.fetch_add(delta, Relaxed);
}

/// The counting allocator; install it with `#[global_allocator]`.
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// updates counters besides, so `System`'s guarantees carry over.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (valid, non-zero-size) layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (hence `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; `new_size` is the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Live heap bytes counted so far (all threads), plus the bytes contree holds in memory
/// mappings ([`contree::mapped_bytes`]: its page pools' segments on Linux), which come from
/// `mmap` and never pass through this allocator.
pub fn live_bytes() -> isize {
    heap_bytes() + contree::mapped_bytes() as isize
}

/// Live heap bytes counted so far (all threads).
fn heap_bytes() -> isize {
    LIVE.iter().map(|s| s.0.load(Relaxed)).sum()
}

/// Whether the counting allocator is installed (an allocation moves the counter). Decided
/// once per process: another thread freeing memory between the two reads of a probe could
/// hide the probe's allocation, so up to three probes are tried and one that shows it is
/// enough (without the allocator the counter never moves, so no probe can show it falsely).
pub fn is_counting() -> bool {
    static COUNTING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *COUNTING.get_or_init(|| {
        (0..3).any(|_| {
            let before = heap_bytes();
            let probe = std::hint::black_box(vec![0u8; 1 << 16]);
            let during = heap_bytes();
            drop(probe);
            during - before >= 1 << 16
        })
    })
}
