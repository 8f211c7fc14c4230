//! Owner mode: the latch-free access of a thread that owns a set of pages (the workers of
//! the thread-per-core executor, `crate::partition::executor`).
//!
//! A thread in owner mode is the only thread that ever *writes* the latch words of the
//! pages it owns: no other thread latches them, in any mode, and no other thread waits on
//! them. So its exclusive acquisitions need no read-modify-write: it marks the word
//! exclusive with a plain store, writes, and releases with a plain store of the next
//! version (release ordering), the single-writer seqlock. Optimistic readers on other
//! threads therefore stay correct (they see the exclusive bit or a newer version), while
//! the owner pays no atomic instruction and takes no cache line away from anybody. Its
//! shared acquisitions write nothing at all: no other thread can hold the page exclusively.
//!
//! Which pages a thread owns is not recorded per page: a thread in owner mode owns every
//! page it latches except the one shared page it names on entry (a partitioned tree's
//! partition table, which every worker latches to publish a grown or collapsed partition
//! root) and the pages whose callers ask for an atomic acquisition explicitly (the blob
//! heap's pages, which every worker writes: `HybridLatch::exclusive_atomic`). The executor
//! keeps the rest true: a worker touches only the pages of the partitions it owns, and
//! ownership changes hands only while the partition is quiesced, through a channel (which
//! orders the old owner's writes before the new owner's).
//!
//! A thread in owner mode never parks on a latch word (it spins and yields instead): a
//! word it does not own may belong to another owner, which must be the only thread that
//! writes it, and a parked waiter would need its `PARKED` bit. Merges it cannot finish are
//! not deferred to other threads either (`smo::merge`): `compact` finds those nodes.
//!
//! With the `latch-stats` feature, every acquisition is counted process-wide, atomic ones
//! and owner ones apart ([`acquisitions`]).

use std::cell::Cell;

// Per thread of the model under Shuttle (`seam`).
crate::sync::seam::model_local! {
    /// 0: not in owner mode; else the address of the one shared latch word.
    static SHARED_WORD: Cell<usize> = const { Cell::new(0) };
}

/// Whether the calling thread owns the latch word at `addr` (see the module doc).
#[inline(always)]
pub(crate) fn owns(addr: usize) -> bool {
    let shared = SHARED_WORD.with(Cell::get);
    shared != 0 && shared != addr
}

/// Whether the calling thread is in owner mode.
#[inline]
pub(crate) fn active() -> bool {
    SHARED_WORD.with(Cell::get) != 0
}

/// Owner mode for the calling thread while the value lives; `shared` is the address of the
/// one latch word it still latches atomically. Not nested.
pub(crate) struct OwnerMode {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl OwnerMode {
    /// # Safety
    /// While the value lives, no other thread writes the latch word of any page the calling
    /// thread latches, except the word at `shared` and those latched with
    /// `HybridLatch::exclusive_atomic`; and no other thread waits on them.
    pub(crate) unsafe fn enter(shared: usize) -> OwnerMode {
        assert_ne!(shared, 0, "owner mode names its shared latch word");
        SHARED_WORD.with(|c| {
            assert_eq!(c.get(), 0, "owner mode does not nest");
            c.set(shared);
        });
        OwnerMode {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for OwnerMode {
    fn drop(&mut self) {
        SHARED_WORD.with(|c| c.set(0));
    }
}

/// Process-wide latch acquisitions (`latch-stats`): atomic ones (a read-modify-write on
/// the latch word) and owner ones (plain stores).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatchAcquisitions {
    /// Acquisitions, exclusive or shared, made with a read-modify-write of the latch word.
    pub atomic: u64,
    /// Acquisitions made in owner mode, without one.
    pub owner: u64,
}

/// The process-wide acquisition counters (`latch-stats`).
#[cfg(feature = "latch-stats")]
static COUNTS: super::StripedCounters = super::StripedCounters::new();

/// Counts one acquisition (`latch-stats`; nothing otherwise).
#[inline(always)]
pub(crate) fn count_acquisition(owner: bool) {
    #[cfg(feature = "latch-stats")]
    COUNTS.add(
        if owner {
            super::Counter::OwnerLatches
        } else {
            super::Counter::AtomicLatches
        },
        1,
    );
    #[cfg(not(feature = "latch-stats"))]
    let _ = owner;
}

/// The latch acquisitions of the whole process so far, counted with the `latch-stats`
/// cargo feature (zeros without it). Take the difference of two readings around a run.
///
/// ```
/// let before = contree::latch_acquisitions();
/// let tree = contree::Tree::new();
/// tree.insert(b"k", b"v").unwrap();
/// let after = contree::latch_acquisitions();
/// assert!(after.atomic >= before.atomic);
/// ```
pub fn latch_acquisitions() -> LatchAcquisitions {
    #[cfg(feature = "latch-stats")]
    {
        let sum = |c| COUNTS.sum(c).max(0) as u64;
        LatchAcquisitions {
            atomic: sum(super::Counter::AtomicLatches),
            owner: sum(super::Counter::OwnerLatches),
        }
    }
    #[cfg(not(feature = "latch-stats"))]
    LatchAcquisitions::default()
}
