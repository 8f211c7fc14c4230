//! The tree's side of the NUMA-aware latch (`numa-btree.md` §3.3; the latch's side is
//! `sync::cohort`): which leaf latches prove hot and are inflated to cohort latches, how
//! long writers waited for a leaf latch, and how often a leaf latch went from a thread on
//! one node to a thread on another.
//!
//! * **Inflation** ([`Numa::cohort`](crate::Numa::cohort)): a writer that found its leaf
//!   latch taken and waited for it records the wait in a small direct-mapped table of latch
//!   addresses; [`INFLATE_AFTER`] waits on one latch in a row, each recorded soon after the
//!   one before, inflate it, under the exclusive hold the writer has just won. *Soon* is
//!   measured against the waits themselves ([`close_after`]): within a millisecond or so,
//!   or within four times as long as the new wait lasted. So a latch that writers wait for
//!   nearly all the time proves hot however slowly the scheduler runs them (on a loaded
//!   machine their waits last tens of milliseconds and come that far apart), while short
//!   waits far apart never add up. Inflated latches stay inflated while their page keeps
//!   its memory; at most `sync::cohort::SLOTS` at once, process-wide.
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
/// Bits of an entry's clock (milliseconds; it wraps after about 17 minutes).
const CLOCK_BITS: u32 = 20;
const CLOCK_MASK: u64 = (1 << CLOCK_BITS) - 1;
/// Bits of an entry's latch tag (the address over 8).
const TAG_BITS: u32 = 64 - CLOCK_BITS - 8;

/// The most milliseconds after the last wait on a latch that a new wait of `waited_ms`
/// still counts as close to it: one (the same or the next millisecond), or four times the
/// new wait, whichever is longer. A writer that waited W found the latch taken for all of
/// W, so waits that follow each other within a few W mean the latch had waiters most of
/// the time, whatever the scheduler's pace.
pub(crate) fn close_after(waited_ms: u64) -> u64 {
    waited_ms.saturating_mul(4).clamp(1, CLOCK_MASK / 2)
}

/// One wait on the latch tagged `tag`, `waited_ms` long, recorded at `now_ms` in a table
/// entry that held `entry`: the entry's new value and the run of close waits on this latch
/// it now counts (see the module doc). Layout: `tag << 28 | clock << 8 | waits`.
pub(crate) fn record_wait(entry: u64, tag: u64, now_ms: u64, waited_ms: u64) -> (u64, u64) {
    let tag = tag & ((1 << TAG_BITS) - 1);
    let now = now_ms & CLOCK_MASK;
    let then = (entry >> 8) & CLOCK_MASK;
    let same = entry != 0 && entry >> (CLOCK_BITS + 8) == tag;
    let close = same && now.wrapping_sub(then) & CLOCK_MASK <= close_after(waited_ms);
    let waits = if close { (entry & 0xFF) + 1 } else { 1 };
    (tag << (CLOCK_BITS + 8) | now << 8 | waits.min(0xFF), waits)
}

/// The tree's cohort state: recent waits per latch (see the module doc).
pub(crate) struct Cohort {
    /// Direct-mapped by latch address; each entry as [`record_wait`] lays it out.
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

    /// Records a wait of `waited_ns` for the latch `x` holds now; inflates it if it proved
    /// hot.
    fn waited(&self, x: &ExclusiveGuard<'_>, waited_ns: u64) {
        let addr = x.latch_addr();
        let entry = &self.heat[(addr >> 6).wrapping_mul(0x9E37_79B9) % HEAT_ENTRIES];
        let (e, waits) = record_wait(
            entry.load(Ordering::Relaxed),
            addr as u64 >> 3,
            clock_ms(),
            waited_ns / 1_000_000,
        );
        if waits >= INFLATE_AFTER && !crate::sync::owner::active() && HybridLatch::inflate(x) {
            self.inflated.fetch_add(1, Ordering::Relaxed);
            entry.store(0, Ordering::Relaxed);
            return;
        }
        entry.store(e, Ordering::Relaxed);
    }
}

/// A coarse clock for the table of waits: milliseconds of line mode's clock (a constant
/// under Shuttle, whose schedules must replay).
fn clock_ms() -> u64 {
    #[cfg(not(feature = "shuttle"))]
    {
        u64::from(crate::policy::lines::clock_us() / 1000)
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
            c.waited(&x, waited);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `waits` (milliseconds after the start, milliseconds long) on the latch tagged
    /// `tag` through one entry and returns the longest run of close waits it counted.
    fn longest_run(tag: u64, waits: &[(u64, u64)]) -> u64 {
        let mut entry = 0;
        let mut longest = 0;
        for &(at, long) in waits {
            let (e, run) = record_wait(entry, tag, at, long);
            entry = e;
            longest = longest.max(run);
        }
        longest
    }

    #[test]
    fn waits_that_follow_each_other_count_at_any_pace() {
        // A fast machine: short waits in the same or the next millisecond.
        let fast: Vec<_> = (0..10).map(|i| (1_000 + i / 2, 0)).collect();
        assert_eq!(longest_run(7, &fast), 10);
        // A loaded machine: waits of 30 ms, each recorded 40 ms after the one before
        // (the waiting writers run one time slice each).
        let slow: Vec<_> = (0..10).map(|i| (1_000 + 40 * i, 30)).collect();
        assert_eq!(longest_run(7, &slow), 10);
        // Across the clock's wrap.
        let wrap: Vec<_> = (0..10).map(|i| (CLOCK_MASK - 3 + i, 1)).collect();
        assert_eq!(longest_run(7, &wrap), 10);
    }

    #[test]
    fn waits_far_apart_or_on_other_latches_do_not_add_up() {
        // Short waits 10 ms apart: a latch that is free nearly all the time.
        let sparse: Vec<_> = (0..20).map(|i| (1_000 + 10 * i, 0)).collect();
        assert_eq!(longest_run(7, &sparse), 1);
        // Waits of 2 ms, 100 ms apart.
        let rare: Vec<_> = (0..20).map(|i| (1_000 + 100 * i, 2)).collect();
        assert_eq!(longest_run(7, &rare), 1);
        // Close waits, but on two latches that share the entry, taking turns.
        let mut entry = 0;
        for i in 0..20 {
            let (e, run) = record_wait(entry, 7 + i % 2, 1_000, 0);
            assert_eq!(run, 1);
            entry = e;
        }
        // An empty entry never matches, not even tag 0.
        assert_eq!(record_wait(0, 0, 0, 0).1, 1);
    }

    #[test]
    fn the_close_window_grows_with_the_wait() {
        assert_eq!(close_after(0), 1);
        assert_eq!(close_after(1), 4);
        assert_eq!(close_after(30), 120);
        assert_eq!(close_after(u64::MAX), CLOCK_MASK / 2);
    }
}
