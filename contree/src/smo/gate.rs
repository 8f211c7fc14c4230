//! Split gates: one splitter per node at a time
//! ([`Config::split_gate`](crate::Config::split_gate)).
//!
//! An insert that finds its leaf full releases the leaf and splits it (`split`). Where many
//! writers fill one leaf (appends from several threads on the rightmost leaf), each of them
//! that finds it full goes to split it: each descends, takes a page from the pool, tries to
//! upgrade the parent's and the leaf's latches, and restarts when another writer's insert
//! changed the leaf meanwhile, which under such traffic is nearly every time; the writer
//! whose attempt gets through splits wherever its own key lies, so a late key of the append
//! stream splits the leaf in the middle. A gate lets one of them split and parks the others
//! until that split is over; then each looks at the leaf again and splits it only if it
//! still lacks room (mostly it has room, and the writer retries its insert). Measured on
//! `seq-insert` and `hot-insert` (`docs/design.md`, "Split gates and one fault per fresh
//! page").
//!
//! **Protocol.** A tree has [`GATES`] gates, each a mutex and the tag of the page it is
//! held for (id + 1; 0 when free); the gate of a page is the one its id hashes to. A
//! splitter that reached the node to split (by its optimistic descent, before it takes
//! pages or latches) tries the node's gate. Free, it takes it and keeps it across the
//! restarts of its attempt, until its split is over or it moves to another node (the
//! descent led elsewhere). Held for the same page, it waits on the mutex (a spin, then a
//! futex sleep); once it has the gate, the node was split meanwhile, and it splits only if
//! the node still lacks the room it needs (or lets the caller retry where that is not known).
//! The mutex hands the gate to one waiter at a time, so the writers that found the leaf full
//! come back to it one after another rather than all at once (where they collide on the
//! leaf's latch again). Held for another page (two hot nodes hashing alike), the splitter
//! goes on without a gate. The tag is read without the mutex, so a splitter may now and
//! then wait behind another page's split or go on without a gate it could have had; gates
//! are advisory, the split's latches guard the tree. Waiting holds no latch and no page,
//! and a splitter only ever takes gates going up the tree (a leaf's, then its parent's
//! while the leaf's is kept across a parent split), so no cycle of waits can form.

use crate::page::PageId;
use crate::sync::seam::{AtomicU64, Mutex, MutexGuard, Ordering};

/// Gates per tree.
pub(crate) const GATES: usize = 16;

/// One gate: held while `lock` is.
#[derive(Debug, Default)]
struct Gate {
    /// The tag of the page it is held for, 0 when free (written by its holder).
    tag: AtomicU64,
    lock: Mutex<()>,
}

/// The gates of one tree.
#[derive(Debug)]
pub(crate) struct SplitGates {
    gates: Option<Box<[Gate]>>,
}

/// What [`GateHold::enter`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The caller splits the node (holding its gate, or without one).
    Split,
    /// Another thread split the node while this one waited for its gate, which it holds
    /// now.
    Waited,
}

/// The gate a splitter holds, if any; let go when dropped.
pub(crate) struct GateHold<'t> {
    gates: &'t SplitGates,
    /// The gate held, its index and tag.
    held: Option<(MutexGuard<'t, ()>, usize, u64)>,
    /// Whether the gate held came after a wait for another splitter of its page.
    waited: bool,
}

impl SplitGates {
    /// Gates that are on or off (every [`GateHold::enter`] then answers `Split`).
    pub(crate) fn new(on: bool) -> SplitGates {
        SplitGates {
            gates: on.then(|| (0..GATES).map(|_| Gate::default()).collect()),
        }
    }

    /// A hold of no gate yet.
    pub(crate) fn hold(&self) -> GateHold<'_> {
        GateHold {
            gates: self,
            held: None,
            waited: false,
        }
    }
}

/// The gate of `pid`, and the tag its holder writes there (never 0).
fn gate_of(pid: PageId) -> (usize, u64) {
    // A multiplicative hash: neighbouring ids land on different gates.
    let i = (pid as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
    (i as usize % GATES, pid as u64 + 1)
}

impl<'t> GateHold<'t> {
    /// Before a split of page `pid`: takes its gate (keeping it if this hold has it
    /// already), or waits for it while another splitter of `pid` holds it (see the module
    /// doc).
    pub(crate) fn enter(&mut self, pid: PageId) -> Entry {
        let gates: &'t SplitGates = self.gates;
        let Some(gates) = &gates.gates else {
            return Entry::Split;
        };
        let (i, tag) = gate_of(pid);
        if matches!(&self.held, Some((_, j, t)) if (*j, *t) == (i, tag)) {
            return Entry::Split;
        }
        self.release();
        self.waited = false;
        let gate = &gates[i];
        let guard = match gate.lock.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if gate.tag.load(Ordering::Relaxed) != tag {
                    // Another page's gate: no gate for this split.
                    return Entry::Split;
                }
                self.waited = true;
                gate.lock.lock().unwrap_or_else(|e| e.into_inner())
            }
        };
        gate.tag.store(tag, Ordering::Relaxed);
        self.held = Some((guard, i, tag));
        if self.waited {
            Entry::Waited
        } else {
            Entry::Split
        }
    }

    /// Whether this hold has a gate.
    #[cfg(test)]
    pub(crate) fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// Whether the gate held came after a wait for another splitter of the same node: that
    /// node was split meanwhile.
    pub(crate) fn waited(&self) -> bool {
        self.waited
    }

    /// Lets the held gate go (the mutex wakes one waiter).
    fn release(&mut self) {
        if let (Some(gates), Some((guard, i, _))) = (&self.gates.gates, self.held.take()) {
            gates[i].tag.store(0, Ordering::Relaxed);
            drop(guard);
        }
    }
}

impl Drop for GateHold<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn splitters_of_one_page_wait_and_come_back_one_at_a_time() {
        let gates = Arc::new(SplitGates::new(true));
        let mut first = gates.hold();
        assert_eq!(first.enter(7), Entry::Split);
        // The same hold keeps its gate across attempts.
        assert_eq!(first.enter(7), Entry::Split);
        let inside = Arc::new(AtomicUsize::new(0));
        let passed = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (gates, inside, passed) =
                    (Arc::clone(&gates), Arc::clone(&inside), Arc::clone(&passed));
                std::thread::spawn(move || {
                    let mut hold = gates.hold();
                    let entry = hold.enter(7);
                    assert!(hold.holds() && hold.waited());
                    // Alone with the gate until the hold drops.
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                    std::thread::sleep(Duration::from_millis(5));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    passed.fetch_add(1, Ordering::SeqCst);
                    entry
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            passed.load(Ordering::SeqCst),
            0,
            "a waiter went past a held gate"
        );
        drop(first);
        for w in waiters {
            assert_eq!(w.join().unwrap(), Entry::Waited);
        }
        assert_eq!(passed.load(Ordering::SeqCst), 3);
        let (i, _) = gate_of(7);
        assert_eq!(
            gates.gates.as_ref().unwrap()[i].tag.load(Ordering::Relaxed),
            0
        );
    }

    #[test]
    fn other_pages_and_gates_that_are_off_let_the_splitter_go() {
        let gates = SplitGates::new(true);
        let mut a = gates.hold();
        assert_eq!(a.enter(3), Entry::Split);
        // A page whose gate another page holds: no gate, no wait.
        let (i, _) = gate_of(3);
        let other = (0..10_000).find(|&p| p != 3 && gate_of(p).0 == i).unwrap();
        let mut b = gates.hold();
        assert_eq!(b.enter(other), Entry::Split);
        assert!(!b.holds());
        // Moving to another page lets the first gate go.
        let free = (0..10_000).find(|&p| gate_of(p).0 != i).unwrap();
        assert_eq!(a.enter(free), Entry::Split);
        assert_eq!(b.enter(other), Entry::Split);
        assert!(b.holds() && !b.waited());
        let off = SplitGates::new(false);
        let (mut x, mut y) = (off.hold(), off.hold());
        assert_eq!(x.enter(3), Entry::Split);
        assert_eq!(y.enter(3), Entry::Split);
        assert!(!x.holds());
    }
}
