//! Eunomia's two phases for point reads (`eunomia-contended-index.md` §4): the **index
//! phase** (the optimistic descent to the leaf, `point::point_leaf`) and the **leaf phase**
//! (the search and copy in that leaf, then its validation). A conflict in the leaf phase (a
//! writer changed the leaf while it was read) runs only the leaf phase again, on the same
//! leaf, unless the leaf may no longer be the one that holds the key; only then does the read
//! descend again from the root.
//!
//! **The structure sequence** (the paper's split sequence number) tells the two apart. It is
//! [`Events::inner_changes`](super::Events): every change of which leaf holds which keys
//! changes the leaf's parent (a separator added by a split, removed by a merge, rewritten
//! by XMerge) or the root (grown, collapsed), and all of those pass through `smo::inner`,
//! which bumps the sequence with a release increment *while the changed leaves are still
//! latched*. A leaf is freed only after the separator that named it is gone. So:
//!
//! 1. a read loads the sequence (acquire) before it descends;
//! 2. the descent finds the leaf that held the key when its parent validated, later than 1;
//! 3. when the leaf phase fails, the read takes a new snapshot of the same latch (waiting
//!    for the writer, acquire) and loads the sequence again. A change of the leaf's range
//!    after 2 bumped the sequence before the leaf's latch was released, and the new snapshot
//!    reads a version released after that, so it sees the bump: the read restarts from the
//!    root. An unchanged sequence means the page is still this tree's leaf for the key
//!    (the freeing of a page and its reuse, by this tree or another sharing its pool, come
//!    after the bump), and the leaf phase runs again on it.
//!
//! The release and acquire pair of step 1 (the bump is a release, the load an acquire) keeps
//! the sequence from showing a bump whose change the descent then missed. Changes elsewhere in
//! the tree also bump the sequence: they send a failed leaf phase back to the root, which
//! is safe, only slower. The fast path pays one load of a line that structure changes
//! write.
//!
//! Writers hold the leaf latch exclusively and do not fail in the leaf phase; point reads
//! (`get`, `get_with`, `get_into`, `contains_key`) do. [`Config::leaf_phase_restarts`]
//! (crate::Config::leaf_phase_restarts) switches the mechanism; `Stats::leaf_restarts` counts
//! the leaf phases run again, `Stats::restarts` the restarts from the root.

use super::TreeCore;
use crate::sync::seam::Ordering;
use crate::sync::{Backoff, Counter, HybridLatch, OptimisticGuard, Restart};

/// Leaf phases a read runs again on one leaf before it descends again: a leaf that a writer
/// changes faster than a read can copy it is read after a descent as well as without one,
/// so this only bounds the work of a read that keeps failing for a reason the sequence does
/// not show.
const LEAF_PHASE_TRIES: u32 = 8;

impl TreeCore {
    /// The structure sequence (see the module doc), loaded before an index phase.
    #[inline(always)]
    pub(crate) fn structure_seq(&self) -> u64 {
        self.events.inner_changes.load(Ordering::Acquire)
    }

    /// Bumps the structure sequence: called by `smo::inner` under the latches of the nodes
    /// whose ranges change (see the module doc).
    #[inline]
    pub(crate) fn structure_changed(&self) {
        self.events.inner_changes.fetch_add(1, Ordering::Release);
    }

    /// The leaf phase of a read failed for the `tries`-th time on the leaf behind `latch`,
    /// reached by an index phase that began at structure sequence `seq`: a new snapshot of
    /// the leaf to run the leaf phase again with, while the sequence stands (see the module
    /// doc); `Restart` sends the read back to the root.
    ///
    /// Out of line and given only values: the fast path of a read only branches here.
    #[cold]
    #[inline(never)]
    pub(crate) fn leaf_phase_again<'t>(
        &'t self,
        seq: u64,
        latch: &'t HybridLatch,
        tries: u32,
    ) -> Result<OptimisticGuard<'t>, Restart> {
        if !self.config().leaf_phase_restarts || tries > LEAF_PHASE_TRIES {
            return Err(Restart);
        }
        self.counters.add(Counter::LeafRestarts, 1);
        Backoff::pause(tries);
        let guard = latch.optimistic();
        if self.structure_seq() != seq {
            return Err(Restart);
        }
        Ok(guard)
    }
}
