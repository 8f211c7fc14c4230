//! Cohort latches: the off-page extension of a hot latch word (`numa-btree.md` §3.3, lock
//! cohorting; issue "NUMA", part 4).
//!
//! A latch word that proves hot (`numa::cohort` decides) is *inflated*: it takes a slot of
//! a process-wide table, found by hashing the word's address, and the word's `COHORT` bit
//! says so. The word keeps its meaning: its `EXCLUSIVE` bit is the cohort lock's global
//! lock and its version is what optimistic readers validate, so snapshots, upgrades and
//! every other path stay as they are. The slot adds one *lane* per NUMA node (nodes fold
//! onto [`LANES`] lanes), on its own cache line:
//!
//! * **A local lock** that a waiting writer of that node queues on before it competes for
//!   the word. The holder of the word that releases it looks at its own lane first: if a
//!   writer of its node waits there and fewer than [`PASS_BOUND`] handoffs in a row stayed
//!   on the node, it *passes* the word (the version moves on, `EXCLUSIVE` stays set) and
//!   unlocks the lane; the waiter that takes the lane finds the word passed to it. Else it
//!   releases the word as ever, and the writers at the heads of all lanes (and any thread
//!   that arrives meanwhile) compete for it. So the word, and the page's cache lines behind
//!   it, stay on one node for up to `PASS_BOUND + 1` writers in a row, and no node waits
//!   more than that many handoffs behind one that keeps writing.
//! * **A reader indicator**: shared holders of an inflated latch count themselves in their
//!   lane instead of in the word, so that readers on different nodes write different cache
//!   lines. A reader increments its lane, issues a `SeqCst` fence and checks the word's
//!   `EXCLUSIVE` bit (backing out if it is set); a writer sets the bit, issues a `SeqCst`
//!   fence and waits until every lane's count is 0 (the fences make sure one of the two
//!   sees the other). A reader that leaves while a writer holds the word wakes it.
//!
//! A slot belongs to its word for the life of the word's memory: the bit is never cleared
//! while the page keeps its memory (the pool does not give an inflated page's memory back,
//! `HybridLatch::try_retire`), and a pool gives its pages' slots back when it is dropped
//! ([`forget_range`]). When every slot a word may use is taken, the word stays a one-word
//! latch.

use crate::sync::parking::{park, spin_hint, unpark_all};
use crate::sync::seam::{fence, AtomicU64, AtomicUsize, Ordering};
use std::cell::Cell;

/// Slots of the table: inflated latches at once, over all trees.
pub(crate) const SLOTS: usize = 128;
/// Lanes per slot: NUMA nodes fold onto them (`node % LANES`).
pub(crate) const LANES: usize = 8;
/// Handoffs in a row that stay on one node before the word is released to every node.
pub(crate) const PASS_BOUND: u64 = 64;
/// Slots probed from an address's home slot.
const PROBE: usize = 4;
/// Busy-wait rounds before a waiter of a lane lock or of the readers parks.
const SPINS: u32 = 64;

/// What a guard of an inflated latch holds: `slot * LANES + lane + 1` (0: nothing).
pub(crate) type Held = u16;

/// One node's lane of a slot (see the module doc).
#[repr(align(64))]
pub(crate) struct Lane {
    /// The local lock: 0 free, 1 locked, 2 locked with sleepers.
    lock: AtomicU64,
    /// Writers queued on the local lock (counted before they lock it).
    waiters: AtomicU64,
    /// 1: the last holder of the local lock passed the word on (read and written under it).
    inherited: AtomicU64,
    /// Handoffs in a row within this lane (under the local lock).
    passes: AtomicU64,
    /// Shared holders of this node.
    readers: AtomicU64,
}

impl Lane {
    const fn new() -> Lane {
        Lane {
            lock: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            inherited: AtomicU64::new(0),
            passes: AtomicU64::new(0),
            readers: AtomicU64::new(0),
        }
    }

    /// Queues on the local lock and takes it (spin, then sleep); returns whether the
    /// previous holder passed the word on to this node (the caller then holds it).
    pub(crate) fn queue(&self) -> bool {
        self.waiters.fetch_add(1, Ordering::Relaxed);
        if self
            .lock
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_slow();
        }
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        self.inherited.swap(0, Ordering::Relaxed) == 1
    }

    #[cold]
    fn lock_slow(&self) {
        let mut spins = 0;
        loop {
            let s = self.lock.load(Ordering::Relaxed);
            if s == 0
                && self
                    .lock
                    .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            if spins < SPINS {
                spins += 1;
                spin_hint();
                continue;
            }
            // Sleep with the lock marked so that the holder's unlock wakes us; taking it from
            // 0 here marks it too (a sleeper may remain: the next unlock wakes it).
            if self.lock.swap(2, Ordering::Acquire) == 0 {
                return;
            }
            park(self.addr(), || self.lock.load(Ordering::Relaxed) == 2);
        }
    }

    fn addr(&self) -> usize {
        &self.lock as *const AtomicU64 as usize
    }

    /// Unlocks the local lock, waking its sleepers if any.
    pub(crate) fn unlock(&self) {
        if self.lock.swap(0, Ordering::Release) == 2 {
            unpark_all(self.addr());
        }
    }

    /// Under the local lock, before the word is released: whether to pass it to a waiter
    /// of this lane instead (one waits, and the bound allows another handoff in a row).
    pub(crate) fn should_pass(&self) -> bool {
        self.waiters.load(Ordering::Relaxed) > 0 && self.passes.load(Ordering::Relaxed) < PASS_BOUND
    }

    /// Passes the word (still held) to the next holder of the local lock and unlocks it.
    pub(crate) fn pass(&self) {
        let passes = self.passes.load(Ordering::Relaxed);
        self.passes.store(passes + 1, Ordering::Relaxed);
        self.inherited.store(1, Ordering::Relaxed);
        self.unlock();
    }

    /// Unlocks the local lock after the word was released to every node.
    pub(crate) fn unlock_released(&self) {
        self.passes.store(0, Ordering::Relaxed);
        self.unlock();
    }

    /// A shared holder of this node arrives (the caller fences and checks the word next).
    pub(crate) fn enter_reader(&self) {
        self.readers.fetch_add(1, Ordering::Relaxed);
    }

    /// A shared holder of this node leaves (the caller fences and checks the word next).
    pub(crate) fn leave_reader(&self) {
        self.readers.fetch_sub(1, Ordering::Release);
    }
}

/// A slot: the latch that owns it and its lanes.
struct Slot {
    /// The address of the latch word that owns the slot (0: free).
    owner: AtomicUsize,
    /// Writers queued on any lane that do not hold the word yet (see [`queued`]).
    queued: Queued,
    lanes: [Lane; LANES],
}

/// A count on its own cache line.
#[repr(align(64))]
struct Queued(AtomicU64);

/// The table. Untouched slots cost no memory: the static is zero pages until used.
static TABLE: [Slot; SLOTS] = [const {
    Slot {
        owner: AtomicUsize::new(0),
        queued: Queued(AtomicU64::new(0)),
        lanes: [const { Lane::new() }; LANES],
    }
}; SLOTS];

// Per thread of the model under Shuttle (`seam`).
crate::sync::seam::model_local! {
    /// The lane of the calling thread ([`set_node`]); 0 until set.
    static LANE: Cell<usize> = const { Cell::new(0) };
}

/// Records the calling thread's NUMA node (the tree does, before it waits for a latch).
#[inline]
pub(crate) fn set_node(node: usize) {
    LANE.with(|l| l.set(node % LANES));
}

/// The slot a latch address hashes to first.
#[inline]
fn home(addr: usize) -> usize {
    ((addr as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as usize % SLOTS
}

/// What a guard of the inflated latch at `addr` holds for the calling thread's lane, if
/// the latch has a slot.
#[inline]
pub(crate) fn held(addr: usize) -> Option<Held> {
    fence(Ordering::Acquire);
    let h = home(addr);
    let slot = (0..PROBE)
        .map(|i| (h + i) % SLOTS)
        .find(|&s| TABLE[s].owner.load(Ordering::Acquire) == addr)?;
    let lane = LANE.with(Cell::get);
    Some((slot * LANES + lane + 1) as Held)
}

/// Handoffs in a row within the calling thread's lane of the latch at `addr` (tests).
#[cfg(test)]
pub(crate) fn passes(addr: usize) -> u64 {
    held(addr).map_or(0, |h| lane(h).passes.load(Ordering::Relaxed))
}

/// The lane a guard holds.
#[inline]
pub(crate) fn lane(held: Held) -> &'static Lane {
    let i = usize::from(held) - 1;
    &TABLE[i / LANES].lanes[i % LANES]
}

/// The address a writer that waits for the readers of `held`'s slot sleeps on.
fn readers_addr(held: Held) -> usize {
    &slot_of(held).owner as *const AtomicUsize as usize
}

/// A writer of `held`'s lane starts waiting for the word ([`queued`] counts it).
pub(crate) fn arrive(held: Held) {
    slot_of(held).queued.0.fetch_add(1, Ordering::Relaxed);
}

/// The writer that [`arrive`]d holds the word now.
pub(crate) fn depart(held: Held) {
    slot_of(held).queued.0.fetch_sub(1, Ordering::Relaxed);
}

/// Whether writers queue for the inflated latch at `addr`: then an acquisition that did not
/// queue (a `try_` acquisition, an upgrade, the fast path of `exclusive`) does not take
/// the word from under them, but queues (or restarts) too, so that the word goes from node
/// to node only where a lane decides it.
pub(crate) fn queued(addr: usize) -> bool {
    held(addr).is_some_and(|h| slot_of(h).queued.0.load(Ordering::Relaxed) != 0)
}

fn slot_of(held: Held) -> &'static Slot {
    &TABLE[(usize::from(held) - 1) / LANES]
}

/// Whether any shared holder of the slot of `held` is in (after the caller's `SeqCst`
/// fence, for a writer that holds the word).
pub(crate) fn readers_in(held: Held) -> bool {
    slot_of(held)
        .lanes
        .iter()
        .any(|l| l.readers.load(Ordering::Acquire) != 0)
}

/// Waits (spin, then sleep) until no shared holder of the slot of `held` is in; the caller
/// holds the word exclusively and has issued a `SeqCst` fence.
pub(crate) fn drain_readers(held: Held) {
    let mut spins = 0;
    while readers_in(held) {
        if spins < SPINS {
            spins += 1;
            spin_hint();
            continue;
        }
        park(readers_addr(held), || readers_in(held));
    }
}

/// Wakes a writer that waits for the readers of `held`'s slot.
pub(crate) fn wake_writer(held: Held) {
    unpark_all(readers_addr(held));
}

/// Takes a slot for the latch word at `addr`; the caller holds it exclusively and sets its
/// `COHORT` bit after. `false` when every slot the address may use is taken.
pub(crate) fn claim(addr: usize) -> bool {
    let h = home(addr);
    (0..PROBE).map(|i| (h + i) % SLOTS).any(|s| {
        TABLE[s]
            .owner
            .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    })
}

/// Gives back the slots of latch words in `start..start + len`: memory that is being freed
/// (a page pool that nobody uses any more).
pub(crate) fn forget_range(start: usize, len: usize) {
    for slot in &TABLE {
        let owner = slot.owner.load(Ordering::Relaxed);
        if owner >= start && owner < start + len {
            for lane in &slot.lanes {
                lane.passes.store(0, Ordering::Relaxed);
                lane.inherited.store(0, Ordering::Relaxed);
            }
            slot.owner.store(0, Ordering::Release);
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn claims_find_and_forget() {
        // Addresses no page has (odd): slots of the test only.
        let addr = 0x5555_0041usize;
        assert_eq!(held(addr), None);
        assert!(claim(addr));
        set_node(9);
        let h = held(addr).expect("claimed");
        assert_eq!((usize::from(h) - 1) % LANES, 1, "node 9 folds onto lane 1");
        assert!(!readers_in(h));
        lane(h).enter_reader();
        assert!(readers_in(h));
        lane(h).leave_reader();
        drain_readers(h);
        // The lane lock: a pass hands the word to the next holder, a bound stops it.
        let l = lane(h);
        assert!(!l.queue(), "nothing was passed");
        assert!(!l.should_pass(), "nobody waits");
        l.unlock_released();
        forget_range(addr, 1);
        assert_eq!(held(addr), None);
        set_node(0);
    }
}
