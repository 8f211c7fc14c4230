//! Synchronisation: the hybrid latch and its guards ([`latch`]), the waiting primitives it
//! is built on (`parking`), and the tree's striped counters (`striped`).
//!
//! `latch` imports everything it shares between threads from this module (atomics, fences,
//! parking), so that the loom model (`tests/loom_latch.rs`) compiles the very same file
//! against loom's atomics.

pub mod latch;
mod parking;
pub(crate) mod reentry;
mod striped;

pub use latch::{ExclusiveGuard, HybridLatch, OptimisticGuard, Restart};
pub(crate) use parking::{fence, park, spin_hint, unpark_all, AtomicU64, Ordering};
pub(crate) use striped::{Counter, StripedCounters};
