//! The tree's side of the NUMA-aware latch (`numa-btree.md` §3.3; the latch's side is
//! `sync::cohort`): which leaf latches prove hot and are inflated to cohort latches, how
//! long writers waited for a leaf latch, and how often a leaf latch went from a thread on
//! one node to a thread on another.
//!
//! * **Inflation** ([`Numa::cohort`](crate::Numa::cohort)): a writer that found its leaf
//!   latch taken and waited for it records the wait in a small direct-mapped table of latch
//!   addresses; [`INFLATE_AFTER`] waits on one latch within about two milliseconds inflate
//!   it, under the exclusive hold the writer has just won. Inflated latches stay inflated
//!   while their page keeps its memory; at most `sync::cohort::SLOTS` at once, process-wide.
//! * **Waits**: with any NUMA part on, a writer's wait for a leaf latch is timed, and the
//!   longest is kept ([`Stats::numa_latch_max_wait_ns`](crate::Stats::numa_latch_max_wait_ns)):
//!   the evidence that the cohort's bound starves no thread.
//! * **Handoffs**: with any NUMA part on, every exclusive acquisition of a leaf latch by a
//!   writer records its thread and node in the leaf's policy area (`policy`); an
//!   acquisition by another thread than the last holder is a handoff, counted as same-node
//!   or cross-node ([`Stats::numa_cross_node_handoffs`](crate::Stats::numa_cross_node_handoffs)).

use super::NumaState;
use crate::engine::TreeCore;
use crate::sync::{cohort, ExclusiveGuard, HybridLatch};
use std::sync::atomic::{AtomicU64, Ordering};

/// Waits on one latch, close together, that inflate it (see the module doc).
#[cfg(not(feature = "shuttle"))]
pub(crate) const INFLATE_AFTER: u64 = 8;
/// Under Shuttle, where a model runs a few dozen operations, two waits inflate a latch.
#[cfg(feature = "shuttle")]
pub(crate) const INFLATE_AFTER: u64 = 2;
/// Entries of the table of recent waits.
const HEAT_ENTRIES: usize = 256;

/// The tree's cohort state: recent waits per latch (see the module doc).
pub(crate) struct Cohort {
    /// Direct-mapped by latch address: `(address >> 3) << 16 | epoch << 8 | waits`.
    heat: Box<[AtomicU64]>,
    /// Latches this tree inflated.
    pub(crate) inflated: AtomicU64,
}

impl Cohort {
    pub(crate) fn new() -> Cohort {
        Cohort {
            heat: (0..HEAT_ENTRIES).map(|_| AtomicU64::new(0)).collect(),
            inflated: AtomicU64::new(0),
        }
    }

    /// Records a wait for the latch `x` holds now; inflates it if it proved hot.
    fn waited(&self, x: &ExclusiveGuard<'_>) {
        let addr = x.latch_addr();
        let tag = (addr as u64 >> 3) << 16;
        let entry = &self.heat[(addr >> 6).wrapping_mul(0x9E37_79B9) % HEAT_ENTRIES];
        let now = epoch();
        let e = entry.load(Ordering::Relaxed);
        let close = e & !0xFFFF == tag && now.wrapping_sub((e >> 8) & 0xFF) & 0xFF <= 1;
        let waits = if close { (e & 0xFF) + 1 } else { 1 };
        if waits >= INFLATE_AFTER && !crate::sync::owner::active() && HybridLatch::inflate(x) {
            self.inflated.fetch_add(1, Ordering::Relaxed);
            entry.store(0, Ordering::Relaxed);
            return;
        }
        entry.store(tag | now << 8 | waits.min(0xFF), Ordering::Relaxed);
    }
}

/// A coarse clock for the table of waits: milliseconds of line mode's clock, modulo 256 (a
/// constant under Shuttle, whose schedules must replay).
fn epoch() -> u64 {
    #[cfg(not(feature = "shuttle"))]
    {
        u64::from(crate::policy::lines::clock_us() / 1000) & 0xFF
    }
    #[cfg(feature = "shuttle")]
    0
}

impl NumaState {
    /// A writer's wait for the leaf latch `latch`, found taken: records the thread's node
    /// for the latch's cohort lanes, times the wait, and lets the cohort policy look at it.
    fn wait_exclusive<'t>(&self, latch: &'t HybridLatch) -> ExclusiveGuard<'t> {
        cohort::set_node(self.topology.node());
        let start = std::time::Instant::now();
        let x = latch.exclusive();
        let waited = start.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
        self.max_wait_ns.fetch_max(waited, Ordering::Relaxed);
        if let Some(c) = &self.cohort {
            c.waited(&x);
        }
        x
    }
}

impl TreeCore {
    /// A writer's wait for a leaf latch found taken: [`HybridLatch::exclusive`], seen by the
    /// NUMA parts if any is on (see the module doc).
    #[inline]
    pub(crate) fn wait_exclusive<'t>(&'t self, latch: &'t HybridLatch) -> ExclusiveGuard<'t> {
        match &self.numa {
            None => latch.exclusive(),
            Some(numa) => numa.wait_exclusive(latch),
        }
    }
}
