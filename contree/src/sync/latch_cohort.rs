//! The hybrid latch's paths for an inflated word (`COHORT` set; the slot and its lanes are
//! `sync::cohort`'s): exclusive acquisition through the thread's lane and release that
//! passes the word within the lane, shared holders counted in their lane, inflation, and
//! the reader checks of exclusive acquisitions. Compiled as a child of `latch.rs` (also in
//! the loom model, which stubs `sync::cohort`).

use super::{flags, ExclusiveGuard, HybridLatch, ATOMIC, COHORT, EXCLUSIVE, LINES, VERSION_ONE};
use crate::sync::cohort::{self, Held};
use crate::sync::{count_acquisition, fence, Ordering};

impl HybridLatch {
    /// [`exclusive`](Self::exclusive)'s wait for an inflated latch (`sync::cohort`): queues
    /// on the lane of the thread's node first; the word is then either passed on by the
    /// previous holder of the lane, or competed for as ever. The guard keeps the lane
    /// locked until it releases the word (and decides there whether to pass it on).
    #[cold]
    #[inline(never)]
    pub(super) fn exclusive_cohort(&self, held: Held) -> ExclusiveGuard<'_> {
        let lane = cohort::lane(held);
        cohort::arrive(held);
        if lane.queue() {
            cohort::depart(held);
            // Passed on: the word stayed exclusive from the previous holder's acquisition
            // (which drained the readers) to here. The fence orders this holder's writes
            // after it, as `ExclusiveGuard::acquired` does for a CAS.
            fence(Ordering::Release);
            count_acquisition(false);
            return ExclusiveGuard {
                latch: self,
                flags: flags(held, true),
            };
        }
        let s = self.take_word();
        cohort::depart(held);
        let mut x = ExclusiveGuard::acquired(self, s, true);
        x.flags = flags(held, true);
        x
    }

    /// Releases an exclusive hold taken through lane `held` (`sync::cohort`): passes the
    /// word to a waiter of the same node if the lane allows, else releases it to all.
    #[cold]
    #[inline(never)]
    pub(super) fn release_cohort(&self, held: Held) {
        let lane = cohort::lane(held);
        if lane.should_pass() && self.state.load(Ordering::Relaxed) & LINES == 0 {
            // The version moves on as on every release; `EXCLUSIVE` stays set.
            self.state.fetch_add(VERSION_ONE, Ordering::Release);
            lane.pass();
        } else {
            self.release_exclusive();
            lane.unlock_released();
        }
    }

    /// A shared holder of an inflated latch counts itself in its lane, then checks (after a
    /// `SeqCst` fence, see `sync::cohort`) that no writer holds the word and that the bits
    /// under `mask` still equal those of `s`; else it backs out and returns `false`.
    pub(super) fn enter_cohort_reader(&self, held: Held, mask: u64, s: u64) -> bool {
        cohort::lane(held).enter_reader();
        fence(Ordering::SeqCst);
        let now = self.state.load(Ordering::Acquire);
        if now & EXCLUSIVE == 0 && now & mask == s & mask && now & COHORT != 0 {
            count_acquisition(false);
            return true;
        }
        self.leave_cohort_reader(held);
        false
    }

    /// A shared holder of an inflated latch leaves its lane, and wakes a writer that waits
    /// for the readers to drain.
    pub(super) fn leave_cohort_reader(&self, held: Held) {
        cohort::lane(held).leave_reader();
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0 {
            cohort::wake_writer(held);
        }
    }

    /// Inflates the latch to a cohort latch (`sync::cohort`), held exclusively by `x`:
    /// later waiting writers queue per node, and shared holders count themselves per node.
    /// `false` if it is inflated already, `x` holds it in owner mode, or no slot is free.
    pub(crate) fn inflate(x: &ExclusiveGuard<'_>) -> bool {
        let latch = x.latch;
        if x.flags >> 1 != ATOMIC || latch.state.load(Ordering::Relaxed) & COHORT != 0 {
            return false;
        }
        if !cohort::claim(latch.addr()) {
            return false;
        }
        // Shared holders count themselves in the word until they see the bit, and none is
        // in now (the exclusive hold waited for them).
        latch.state.fetch_or(COHORT, Ordering::Release);
        true
    }

    /// Whether writers queue for this inflated latch (`sync::cohort::queued`): then an
    /// acquisition that did not queue leaves the word to them.
    #[cold]
    #[inline(never)]
    pub(super) fn queued(&self) -> bool {
        cohort::queued(self.addr())
    }

    /// Whether the latch is inflated to a cohort latch.
    pub(crate) fn is_cohort(&self) -> bool {
        self.state.load(Ordering::Relaxed) & COHORT != 0
    }
}

impl ExclusiveGuard<'_> {
    #[cold]
    #[inline(never)]
    pub(super) fn drain_cohort_readers(latch: &HybridLatch) {
        fence(Ordering::SeqCst);
        if let Some(held) = cohort::held(latch.addr()) {
            cohort::drain_readers(held);
        }
    }

    /// [`try_acquired`](Self::try_acquired) of an inflated latch: releases the word again
    /// (`true`) if a shared holder is counted in a lane.
    #[cold]
    #[inline(never)]
    pub(super) fn backed_out(latch: &HybridLatch) -> bool {
        fence(Ordering::SeqCst);
        let readers = cohort::held(latch.addr()).is_some_and(cohort::readers_in);
        if readers {
            latch.release_exclusive();
        }
        readers
    }
}
