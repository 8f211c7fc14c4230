//! Leaf-level combining: a writer that finds its leaf's exclusive latch taken hands its
//! operation to the latch holder instead of waiting for the latch, and the holder applies
//! every operation handed to it in its own critical section. One latch handoff then serves
//! many operations: where appends from several threads meet on the rightmost leaf, the
//! holder inserts the keys of all waiting writers while they sleep.
//!
//! **Protocol.** A [`Request`] lives on its writer's stack. The writer, having found the
//! latch at address `addr` taken and still taken after a short spin (a holder about to
//! release is not worth handing over to), publishes a pointer to it in the queue of `addr`'s
//! slot ([`Combining::publish`]) and sleeps on the latch while the latch stays taken and the
//! request is not done. A holder that applied its own operation
//! looks at its slot ([`Combining::has_waiters`]: one relaxed load, the only cost an
//! uncontended leaf pays), takes the requests published for its latch under the slot's mutex
//! ([`Combining::take`]), applies each one and marks it done ([`Taken::complete`]) before
//! it releases the latch; the release wakes the sleepers. A writer that wakes to a latch
//! released without its request done withdraws it under the same mutex
//! ([`Combining::withdraw`]) and takes the latch itself; if the request is gone from the
//! queue, a holder took it and is applying it: the writer waits for it to be done, which
//! happens before that holder releases the latch. So a request is either withdrawn by its
//! writer or completed by exactly one holder, and the writer never leaves while a holder may
//! still touch it.
//!
//! **What a holder applies.** Only operations without a user closure whose key and value
//! stay inline: inserts and removals (`ops::write`). The holder applies a request only if its
//! key lies inside the leaf's fences (the leaf may have split since the writer found it) and
//! the change fits without a split or an out-of-line value; otherwise it hands the request
//! back unapplied ([`Outcome::Bounced`]) and the writer takes the latch and the ordinary path,
//! where it meets any error (`OutOfSpace` of a split, say) itself. Each applied request is a
//! linearizable step of its key: it happens under the leaf's latch, after the writer
//! published it and before the writer returns.
//!
//! **No starvation.** A writer waits for one release of the latch at most before it takes
//! the ordinary path, and a holder serves a bounded number of rounds.

use crate::sync::seam::{AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::sync::HybridLatch;
use std::cell::UnsafeCell;

/// Queues per tree; a latch's queue is picked by its address.
const SLOTS: usize = 16;

/// Rounds of the exponential spin (`2^round` spin hints after each look at the latch) an
/// appending writer waits on the rightmost leaf's latch before it hands its append over:
/// rounds 3 to 10, 8 looks 8 to 1,024 hints apart (2,040 hints in all). Other writers spin
/// rounds `0..sync::latch::SPIN_ROUNDS` (6 looks, 63 hints). See [`Combining::hand_over`].
///
/// Starting at round 3: every look pulls the latch's line from the holder, whose release
/// (a locked add) then waits for it, and at 2 appending writers 43% of `insert`'s samples
/// sat on that release. With the first look 8 hints in, `seq-insert` at 2 writers went from
/// 0.76-1.02x bbtree to 0.86-1.17x (five alternating pairs of runs) and at 8 writers from
/// 1.01-1.16x to 1.09-1.42x (`bench/results/append-spin-s64.txt`).
const APPEND_SPIN: std::ops::Range<u32> = 3..11;

/// Rounds of taking and applying requests that one holder serves before it releases the
/// latch: requests published while it applied one batch are served in the next round.
pub(crate) const ROUNDS: usize = 4;

/// What a request asks for.
#[derive(Clone, Copy)]
pub(crate) enum Kind<'a> {
    /// Insert or replace the value.
    Insert(&'a [u8]),
    /// Remove the key.
    Remove,
}

/// What became of a request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Not (yet) handled.
    Pending,
    /// Handed back: the writer takes the ordinary path.
    Bounced,
    /// Applied: the key's old value, and for a removal whether it left the leaf underfull.
    Applied {
        old: Option<Vec<u8>>,
        underfull: bool,
    },
}

impl Outcome {
    /// The old value of an applied request (`None` otherwise).
    pub(crate) fn old(self) -> Option<Vec<u8>> {
        match self {
            Outcome::Applied { old, .. } => old,
            _ => None,
        }
    }

    /// Whether an applied removal left the leaf underfull.
    pub(crate) fn underfull(&self) -> bool {
        matches!(
            self,
            Outcome::Applied {
                underfull: true,
                ..
            }
        )
    }
}

/// A writer's operation, published for the latch holder (see the module doc).
pub(crate) struct Request<'a> {
    pub key: &'a [u8],
    pub kind: Kind<'a>,
    done: AtomicBool,
    /// Written by the holder that took the request, before `done`; read by the writer after
    /// it saw `done`.
    outcome: UnsafeCell<Outcome>,
}

// SAFETY: the request is shared between its writer and at most one holder, which hand its
// `outcome` over through `done` (release/acquire); `key` and `kind` are read-only.
unsafe impl Sync for Request<'_> {}

impl<'a> Request<'a> {
    pub(crate) fn new(key: &'a [u8], kind: Kind<'a>) -> Request<'a> {
        Request {
            key,
            kind,
            done: AtomicBool::new(false),
            outcome: UnsafeCell::new(Outcome::Pending),
        }
    }

    /// Whether a holder completed the request.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Takes the outcome of a done request and makes it pending again (for the next
    /// attempt of its writer).
    pub(crate) fn take_outcome(&self) -> Outcome {
        debug_assert!(self.is_done());
        self.done.store(false, Ordering::Relaxed);
        // SAFETY: the request is done and out of every queue: no holder touches it any more.
        std::mem::replace(unsafe { &mut *self.outcome.get() }, Outcome::Pending)
    }
}

/// A pointer to a published request (a queue entry).
#[derive(Clone, Copy)]
pub(crate) struct Taken(*const ());

// SAFETY: the pointee is `Sync`, and it outlives the entry: its writer does not return before
// it withdrew the entry or saw the request done (module doc).
unsafe impl Send for Taken {}

impl Taken {
    /// The request.
    ///
    /// # Safety
    ///
    /// Only before [`complete`](Self::complete): the request was taken from its queue by
    /// [`Combining::take`] while the caller held the latch it was published for.
    pub(crate) unsafe fn request(&self) -> &Request<'_> {
        // SAFETY: the caller's contract: the writer still waits for this request.
        unsafe { &*self.0.cast::<Request<'_>>() }
    }

    /// Records `outcome` and marks the request done; its writer may leave at once, so the
    /// request must not be touched afterwards.
    ///
    /// # Safety
    ///
    /// As for [`request`](Self::request), and at most once per taking.
    pub(crate) unsafe fn complete(self, outcome: Outcome) {
        // SAFETY: only this holder writes the outcome of a taken request, and its writer
        // reads it only after it saw `done` (set below with release ordering).
        unsafe {
            let request = &*self.0.cast::<Request<'_>>();
            *request.outcome.get() = outcome;
            request.done.store(true, Ordering::Release);
        }
    }
}

/// One queue: the requests published for latches whose address falls in this slot.
#[repr(align(128))]
struct Slot {
    /// Entries in `queue` (read by holders without the mutex).
    waiting: AtomicUsize,
    queue: Mutex<Vec<(usize, Taken)>>,
}

/// The combining queues of one tree (`None` when [`Config::combining`] is off).
///
/// [`Config::combining`]: crate::Config::combining
pub(crate) struct Combining {
    slots: Option<Box<[Slot]>>,
}

impl std::fmt::Debug for Combining {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Combining")
            .field("on", &self.slots.is_some())
            .finish()
    }
}

#[inline]
fn slot_of(addr: usize) -> usize {
    // Latches sit at the start of pages: the bits above the smallest page size differ.
    (addr >> 9) % SLOTS
}

impl Combining {
    pub(crate) fn new(on: bool) -> Combining {
        Combining {
            slots: on.then(|| {
                (0..SLOTS)
                    .map(|_| Slot {
                        waiting: AtomicUsize::new(0),
                        queue: Mutex::new(Vec::new()),
                    })
                    .collect()
            }),
        }
    }

    fn slot(&self, addr: usize) -> Option<&Slot> {
        self.slots.as_ref().map(|s| &s[slot_of(addr)])
    }

    /// Whether requests may wait for the latch at `addr` (a holder then calls
    /// [`take`](Self::take)). A relaxed look: a request published just after it is served by
    /// the next holder or withdrawn by its writer.
    #[inline(always)]
    pub(crate) fn has_waiters(&self, addr: usize) -> bool {
        match &self.slots {
            Some(s) => s[slot_of(addr)].waiting.load(Ordering::Relaxed) != 0,
            None => false,
        }
    }

    /// Moves the requests published for the latch at `addr` into `out`. The caller holds
    /// that latch exclusively and completes every request it took before releasing it.
    pub(crate) fn take(&self, addr: usize, out: &mut Vec<Taken>) {
        let Some(slot) = self.slot(addr) else {
            return;
        };
        let mut queue = slot.queue.lock().unwrap_or_else(|e| e.into_inner());
        queue.retain(|&(a, t)| {
            if a == addr {
                out.push(t);
                false
            } else {
                true
            }
        });
        slot.waiting.store(queue.len(), Ordering::Relaxed);
    }

    fn publish(&self, slot: &Slot, addr: usize, request: &Request) {
        let mut queue = slot.queue.lock().unwrap_or_else(|e| e.into_inner());
        // The lifetime is erased: the entry leaves the queue before the request is dropped
        // (module doc).
        queue.push((addr, Taken(std::ptr::from_ref(request).cast::<()>())));
        slot.waiting.store(queue.len(), Ordering::Relaxed);
    }

    /// Removes `request`'s entry from the queue; false if a holder took it.
    fn withdraw(&self, slot: &Slot, request: &Request) -> bool {
        let mut queue = slot.queue.lock().unwrap_or_else(|e| e.into_inner());
        let me = std::ptr::from_ref(request).cast::<()>();
        let Some(i) = queue.iter().position(|&(_, t)| std::ptr::eq(t.0, me)) else {
            return false;
        };
        queue.swap_remove(i);
        slot.waiting.store(queue.len(), Ordering::Relaxed);
        true
    }

    /// The writer's side (module doc): publishes `request` for `latch`, which it found
    /// taken, and waits until the holder completed it or released the latch. True when the
    /// holder applied it (the outcome is then in the request: [`Request::take_outcome`]);
    /// false, with the request pending again, when the writer must take the latch itself:
    /// the request was handed back or withdrawn, no writer held the latch (readers in shared
    /// mode do not combine), or combining is off.
    ///
    /// `append`: the writer waits for the rightmost leaf's latch to append. It spins longer
    /// first, and looks at the latch less often ([`APPEND_SPIN`]): a holder's append is
    /// short, and the leaf's lines move
    /// to the next writer whether it appends itself or the holder appends for it, while a
    /// hand-over costs the queue's mutex and the wait for the outcome. Other writers (an
    /// update of a hot leaf) gain from being applied by the holder, which a longer spin
    /// makes rarer (`bench/results/spin-length-s62.txt`).
    pub(crate) fn hand_over(&self, latch: &HybridLatch, request: &Request, append: bool) -> bool {
        let addr = latch as *const HybridLatch as usize;
        let Some(slot) = self.slot(addr) else {
            return false;
        };
        let rounds = if append {
            APPEND_SPIN
        } else {
            0..crate::sync::latch::SPIN_ROUNDS
        };
        if !latch.spin_while_exclusive(rounds) {
            // Released (or only read-latched) within a short spin: the writer takes it.
            return false;
        }
        self.publish(slot, addr, request);
        latch.wait_while_exclusive(|| !request.done.load(Ordering::Relaxed));
        if !request.is_done() {
            if self.withdraw(slot, request) {
                return false;
            }
            // Taken: its holder completes it before it releases the latch.
            while !request.is_done() {
                latch.wait_while_exclusive(|| !request.done.load(Ordering::Relaxed));
            }
        }
        // SAFETY: done, and out of every queue: no holder writes the outcome any more.
        let outcome = unsafe { &*request.outcome.get() };
        if matches!(outcome, Outcome::Applied { .. }) {
            return true;
        }
        request.take_outcome();
        false
    }
}
