//! What an empty tree costs: at most 16 KiB of heap, counted by a counting allocator (the
//! only test of this binary, so no other test allocates meanwhile).

use contree::{Config, Tree};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator with the caller's arguments and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn an_empty_tree_costs_at_most_16_kib() {
    // The first tree starts the shared space-manager thread; that is a process cost.
    let first = Tree::new();
    for space_manager in [true, false] {
        let before = LIVE.load(Ordering::Relaxed);
        let t = Tree::with_config(Config {
            space_manager,
            ..Config::default()
        })
        .unwrap();
        let cost = LIVE.load(Ordering::Relaxed) - before;
        assert!(cost <= 16 << 10, "an empty tree took {cost} bytes");
        // It still grows as usual.
        for i in 0..10_000u64 {
            t.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        assert_eq!(t.len(), 10_000);
        t.check_invariants().unwrap();
        drop(t);
        assert!(LIVE.load(Ordering::Relaxed) - before < 16 << 10);
    }
    drop(first);
}
