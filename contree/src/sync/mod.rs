//! Synchronisation: the hybrid latch and its guards ([`latch`]), the off-page cohort
//! extension of a hot latch ([`cohort`]), the line locks of hot leaves in line mode ([`lines`]), the waiting primitives they are built on (`parking`), and
//! the tree's striped counters (`striped`).
//!
//! `latch` imports everything it shares between threads from this module (atomics, fences,
//! parking), so that the loom model (`tests/loom_latch.rs`) compiles the very same file
//! (with its two children, `latch_owner.rs` and `latch_cohort.rs`) against loom's atomics.

// The latch is a complete primitive, private to the crate: a few of its methods
// (`version`, `is_exclusive`, `upgrade_shared`, the shared guard's `slow_path` and
// `latch_addr`) serve the loom model, which compiles this file on its own
// (`tests/loom_latch.rs`), and not the tree.
mod backoff;
pub(crate) mod ccm;
pub(crate) mod cohort;
#[allow(dead_code)]
pub(crate) mod latch;
#[cfg(test)]
mod latch_tests;
pub(crate) mod lines;
pub(crate) mod owner;
mod parking;
pub(crate) mod reentry;
pub(crate) mod seam;
pub(crate) mod segments;
mod striped;

pub(crate) use backoff::Backoff;
pub(crate) use latch::{ExclusiveGuard, HybridLatch, OptimisticGuard, Restart};
pub(crate) use parking::{
    count_acquisition, fence, owns, park, spin_hint, unpark_all, yield_now, AtomicU64, Ordering,
};
pub(crate) use striped::{Counter, StripedCounters};
