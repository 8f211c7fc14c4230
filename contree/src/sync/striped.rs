//! Striped counters: every counter of a tree that the data path bumps, spread over
//! cache-line-sized stripes so that no single word is written by every thread.
//!
//! Each thread is given a stripe index once and adds to its stripe; a read sums all
//! stripes. The first [`OWNED`] stripes are owned by one thread each while it lives
//! (claimed on its first add, given back when it exits), and their owner adds with a
//! relaxed load and store: no locked instruction on the data path, where a `lock add`
//! took about 5% of a single-threaded append's time (perf, `seq-insert`, one writer).
//! Threads that find every owned stripe taken share the other stripes, round robin, and
//! add with a relaxed atomic read-modify-write: cache traffic, never a lost count.
//!
//! All of a tree's counters live in one block of `STRIPES` cache-line pairs, allocated on the
//! first change, so that a tree that is never written costs one pointer here.

use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;

const STRIPES: usize = 32;
/// Stripes owned by one thread each (the rest are shared); at most 32, one bit each in
/// [`OWNERS`].
const OWNED: usize = 24;
const _: () = assert!(OWNED < STRIPES && OWNED <= 32);

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
    /// Merge attempts of an underfull leaf skipped because this thread's last attempt at
    /// it was declined and the leaf has not shrunk by a step since (`smo::merge`).
    MergesSkipped,
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

/// Owned stripes taken, one bit each.
static OWNERS: AtomicU32 = AtomicU32::new(0);
/// Round robin over the shared stripes.
static NEXT_SHARED: AtomicUsize = AtomicUsize::new(0);

/// The calling thread's stripe: its index, and whether the thread owns it.
struct ThreadStripe(Cell<(usize, bool)>);

impl Drop for ThreadStripe {
    fn drop(&mut self) {
        let (i, owned) = self.0.get();
        if owned {
            // Release: the next owner's claim (acquire) sees this thread's last stores.
            OWNERS.fetch_and(!(1 << i), Ordering::Release);
        }
    }
}

thread_local! {
    static STRIPE: ThreadStripe = const { ThreadStripe(Cell::new((usize::MAX, false))) };
}

/// The calling thread's stripe (see the module doc), claimed on first use; a shared one
/// while the thread exits (its stripe already given back).
#[inline]
fn stripe() -> (usize, bool) {
    STRIPE
        .try_with(|s| {
            let v = s.0.get();
            if v.0 != usize::MAX {
                return v;
            }
            let v = claim();
            s.0.set(v);
            v
        })
        .unwrap_or_else(|_| (shared(), false))
}

/// A free owned stripe, or else a shared one.
#[cold]
fn claim() -> (usize, bool) {
    let mut bits = OWNERS.load(Ordering::Relaxed);
    loop {
        let free = (!bits).trailing_zeros() as usize;
        if free >= OWNED {
            return (shared(), false);
        }
        match OWNERS.compare_exchange_weak(
            bits,
            bits | 1 << free,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return (free, true),
            Err(now) => bits = now,
        }
    }
}

fn shared() -> usize {
    OWNED + NEXT_SHARED.fetch_add(1, Ordering::Relaxed) % (STRIPES - OWNED)
}

impl StripedCounters {
    /// Adds `delta` to this thread's stripe of `counter`.
    #[inline(always)]
    pub(crate) fn add(&self, counter: Counter, delta: i64) {
        let block = self
            .block
            .get_or_init(|| (0..STRIPES).map(|_| Stripe::default()).collect());
        let (i, owned) = stripe();
        let cell = &block[i].0[counter as usize];
        if owned {
            // Only this thread writes an owned stripe: no read-modify-write needed.
            cell.store(
                cell.load(Ordering::Relaxed).wrapping_add(delta),
                Ordering::Relaxed,
            );
        } else {
            cell.fetch_add(delta, Ordering::Relaxed);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// More threads than owned stripes add at once, several generations of them (exited
    /// threads' stripes are claimed again): no count is lost, owned or shared.
    #[test]
    fn counts_from_owned_and_shared_stripes_add_up() {
        let counters = Arc::new(StripedCounters::default());
        for _ in 0..3 {
            let threads: Vec<_> = (0..OWNED + 8)
                .map(|_| {
                    let counters = Arc::clone(&counters);
                    std::thread::spawn(move || {
                        for _ in 0..1_000 {
                            counters.add(Counter::Len, 1);
                            counters.add(Counter::Removals, 2);
                        }
                        stripe()
                    })
                })
                .collect();
            let stripes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            assert!(stripes.iter().all(|&(i, owned)| owned == (i < OWNED)));
        }
        let n = 3 * (OWNED as i64 + 8) * 1_000;
        assert_eq!(counters.sum(Counter::Len), n);
        assert_eq!(counters.sum(Counter::Removals), 2 * n);
    }
}
