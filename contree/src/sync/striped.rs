//! Striped counters: every counter of a tree that the data path bumps, spread over
//! cache-line-sized stripes so that no single word is written by every thread.
//!
//! Each thread is given a stripe index once (round robin) and adds to its stripe with a
//! relaxed atomic; a read sums all stripes. With more threads than stripes, threads share
//! stripes, which costs cache traffic but never correctness.
//!
//! All of a tree's counters live in one block of `STRIPES` cache-line pairs, allocated on the
//! first change, so that a tree that is never written costs one pointer here.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::OnceLock;

const STRIPES: usize = 32;

/// The counters of one tree.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counter {
    /// Entries (inserts of new keys minus removals).
    Len,
    /// Operation attempts restarted from the root (the index phase and the leaf phase
    /// again).
    Restarts,
    /// Leaf phases of point reads run again on the same leaf, without a new descent
    /// (`Config::leaf_phase_restarts`).
    LeafRestarts,
    /// Removals, which the reclaiming sweep compares to decide whether to run.
    Removals,
    /// Exclusive leaf-latch acquisitions that waited (`latch-stats`).
    LatchSlowPaths,
    /// Exclusive leaf-latch acquisitions from another thread than the last (`latch-stats`).
    LatchHandoffs,
    /// Operations a latch holder applied for a waiting writer (leaf combining).
    OpsCombined,
    /// Critical sections in which a holder applied at least one waiting writer's operation.
    CombineBatches,
    /// Inserts and removals the side structure took instead of the tree (`side`).
    SideDiverted,
    /// Leaves switched to line mode (`sync::lines`).
    LineSwitches,
    /// In-place updates made in line mode, without the leaf latch.
    LineUpdates,
    /// Updates in line mode that waited for a stretch another updater held.
    LineConflicts,
    /// Cold leaves whose line mode a writer ended to take their table entry
    /// (`lines::evict_cold`).
    LineEvictions,
    /// Updates in line mode that waited for the advisory lock of their key (`sync::ccm`).
    CcmWaits,
    /// Reads and updates of a leaf in line mode answered "absent" by its mark bits.
    MarkRejections,
    /// Inserts into an insert segment of a leaf in line mode (`sync::segments`).
    SegmentInserts,
    /// Records moved from insert segments into their leaves when line mode ended.
    SegmentMoves,
    /// Segment inserts that waited for their segment, held by another inserter.
    SegmentWaits,
    /// Latch acquisitions with a read-modify-write (`latch-stats`, process-wide:
    /// `sync::owner`).
    #[cfg_attr(not(feature = "latch-stats"), allow(dead_code))]
    AtomicLatches,
    /// Latch acquisitions in owner mode (`latch-stats`, process-wide: `sync::owner`).
    #[cfg_attr(not(feature = "latch-stats"), allow(dead_code))]
    OwnerLatches,
    /// Point reads that took the NUMA-aware index phase (`crate::numa`) down the tree's own
    /// inner nodes (those through a replica count in `ReplicaReads`).
    NumaReads,
    /// Inner-node pages those reads read (the tree's or a replica's).
    NumaInnerReads,
    /// Inner-node pages of the tree those reads read on another node than the reader's.
    NumaRemoteInner,
    /// Leaf pages those reads and the replica reads read on another node than the reader's.
    NumaRemoteLeaf,
    /// Point reads that found their leaf through their node's replica.
    ReplicaReads,
    /// Point reads that found their node's replica stale and descended the tree.
    ReplicaFallbacks,
    /// Exclusive leaf-latch acquisitions by a writer from another thread than the last
    /// holder, on the same NUMA node (`crate::numa::cohort`).
    NumaSameHandoffs,
    /// The same, from a thread on another node than the last holder's.
    NumaCrossHandoffs,
}

const COUNTERS: usize = Counter::NumaCrossHandoffs as usize + 1;

/// One stripe: a cell of every counter, on its own two cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Stripe([AtomicI64; COUNTERS]);

/// Every striped counter of a tree, allocated on first use.
#[derive(Default)]
pub(crate) struct StripedCounters {
    block: OnceLock<Box<[Stripe]>>,
}

impl StripedCounters {
    /// No counter block yet (for a `static`).
    #[allow(dead_code)] // the `latch-stats` feature's process-wide counters
    pub(crate) const fn new() -> Self {
        StripedCounters {
            block: OnceLock::new(),
        }
    }
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

impl StripedCounters {
    /// Adds `delta` to this thread's stripe of `counter`.
    #[inline]
    pub(crate) fn add(&self, counter: Counter, delta: i64) {
        let block = self
            .block
            .get_or_init(|| (0..STRIPES).map(|_| Stripe::default()).collect());
        block[stripe()].0[counter as usize].fetch_add(delta, Ordering::Relaxed);
    }

    /// The sum of `counter` over all stripes; exact when no thread adds concurrently.
    pub(crate) fn sum(&self, counter: Counter) -> i64 {
        self.block.get().map_or(0, |block| {
            block
                .iter()
                .map(|s| s.0[counter as usize].load(Ordering::Relaxed))
                .sum()
        })
    }

    /// Bytes the block takes (0 before the first change).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.block
            .get()
            .map_or(0, |_| STRIPES * std::mem::size_of::<Stripe>())
    }
}
