//! Striped counters: a sum spread over cache-line-sized cells so that no single word is
//! written by every thread on the data path.
//!
//! Each thread is given a stripe index once (round robin) and adds to that cell with a
//! relaxed atomic; a read sums all cells. With more threads than stripes, threads share
//! cells, which costs cache traffic but never correctness.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

const STRIPES: usize = 32;

#[repr(align(128))]
#[derive(Default)]
struct Cell128(AtomicI64);

/// A signed counter split into per-thread stripes.
pub(crate) struct StripedCounter {
    cells: Box<[Cell128]>,
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

#[inline]
fn stripe() -> usize {
    STRIPE.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
        s.set(v);
        v
    })
}

impl StripedCounter {
    pub(crate) fn new() -> Self {
        StripedCounter {
            cells: (0..STRIPES).map(|_| Cell128::default()).collect(),
        }
    }

    /// Adds `delta` to this thread's stripe.
    #[inline]
    pub(crate) fn add(&self, delta: i64) {
        self.cells[stripe()].0.fetch_add(delta, Ordering::Relaxed);
    }

    /// The sum over all stripes; exact when no thread adds concurrently.
    pub(crate) fn sum(&self) -> i64 {
        self.cells.iter().map(|c| c.0.load(Ordering::Relaxed)).sum()
    }
}
