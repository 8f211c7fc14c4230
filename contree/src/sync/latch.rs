//! The hybrid latch: one 64-bit word per node with three modes.
//!
//! * **Optimistic**: a reader records the version, reads the node without writing anything
//!   to shared memory, and validates afterwards that the version did not change
//!   ([`OptimisticGuard::validate`]). Readers never block writers.
//! * **Shared**: a reader count, for scans and for `get_with` closures that must see a
//!   stable node.
//! * **Exclusive**: one writer. Releasing it increments the version, so every optimistic
//!   reader that overlapped the write fails validation.
//!
//! Word layout (low to high): bit 0 `EXCLUSIVE`, bit 1 `PARKED` (some thread sleeps on this
//! latch), bits 2..16 the shared count, bit 16 `COHORT` (the latch is inflated to a cohort
//! latch: writers queue per NUMA node and shared holders count themselves per node, off
//! the page, see `sync::cohort`), bit 17 `LINES` (the leaf is in line mode: in-place
//! updates take stretch locks instead of the latch, see `sync::lines`), bits 18..64 the
//! version. The version only ever grows,
//! which is what lets a page be freed and reused while optimistic readers still hold its id.
//!
//! A thread that cannot acquire a mode at once spins briefly and then parks on the latch's
//! address (`parking_lot_core`); a releaser that sees `PARKED` clears it and wakes every
//! sleeper. Such an acquisition is a *slow path*, and every guard reports whether it took one
//! ([`ExclusiveGuard::slow_path`]): contention detection is built on that bit.
//!
//! A thread in owner mode (`sync::owner`: the workers of the thread-per-core executor)
//! acquires the latches of the pages it owns with plain stores instead; its guards remember
//! it and release the same way.
//!
//! The guards carry the mode in their type: node writes need an `ExclusiveGuard`, so an
//! optimistic or shared holder cannot modify a node by mistake.

use crate::sync::cohort::{self, Held};
use crate::sync::{
    count_acquisition, fence, lines, owns, park, segments, spin_hint, unpark_all, yield_now,
    AtomicU64, Ordering,
};

// Owner mode's, inflated words' and line mode's paths, each in a file of its own beside this
// one.
#[path = "latch_cohort.rs"]
mod cohort_paths;
#[path = "latch_lines.rs"]
mod lines_paths;
#[path = "latch_owner.rs"]
mod owner_paths;

const EXCLUSIVE: u64 = 1;
const PARKED: u64 = 1 << 1;
const SHARED_SHIFT: u32 = 2;
const SHARED_ONE: u64 = 1 << SHARED_SHIFT;
const SHARED_MASK: u64 = 0x3FFF << SHARED_SHIFT;
/// A guard's mode: taken with a read-modify-write of the word (any other mode but
/// [`OWNED`] is the lane of an inflated latch, `sync::cohort::Held`).
const ATOMIC: Held = 0;
/// A guard's mode: taken in owner mode (`sync::owner`).
const OWNED: Held = Held::MAX >> 1;

/// A guard's `flags`: its mode and whether the acquisition waited.
#[inline(always)]
const fn flags(mode: Held, slow_path: bool) -> u16 {
    mode << 1 | slow_path as u16
}
/// Inflated to a cohort latch (`sync::cohort`): set under the exclusive latch, never cleared
/// while the page keeps its memory.
const COHORT: u64 = 1 << 16;
/// Line mode (`sync::lines`): set and cleared under the exclusive latch.
const LINES: u64 = 1 << 17;
const VERSION_ONE: u64 = 1 << 18;
const VERSION_MASK: u64 = !(VERSION_ONE - 1);
/// Busy-wait rounds before a waiter parks. Short: on an oversubscribed machine the holder is
/// often descheduled, and spinning would only take its core away.
pub(crate) const SPIN_ROUNDS: u32 = 6;

/// Why an operation has to start again: a version it relied on changed, or a latch could not
/// be had without risking a deadlock. Only the public operations loop on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart;

/// A latch word; it is `repr(transparent)` so that it can live in the first eight bytes of
/// a page.
#[repr(transparent)]
#[derive(Debug)]
pub struct HybridLatch {
    state: AtomicU64,
}

impl Default for HybridLatch {
    fn default() -> Self {
        Self::new()
    }
}

/// Round `round` of an exponential busy wait: `2^round` spin hints.
#[inline]
fn spin_round(round: u32) {
    for _ in 0..(1u32 << round) {
        spin_hint();
    }
}

/// Exponential busy wait, then park until `blocked(state)` turns false.
/// Returns after the condition was seen false at least once (the caller retries its CAS).
#[inline(never)]
fn wait_while(latch: &HybridLatch, blocked: impl Fn(u64) -> bool) {
    let mut round = 0;
    loop {
        let s = latch.state.load(Ordering::Relaxed);
        if !blocked(s) {
            return;
        }
        if round < SPIN_ROUNDS {
            spin_round(round);
            round += 1;
            continue;
        }
        if owns(latch.addr()) {
            // Owner mode never writes a word it waits on (`sync::owner`).
            yield_now();
            continue;
        }
        if s & PARKED == 0
            && latch
                .state
                .compare_exchange_weak(s, s | PARKED, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            continue;
        }
        let addr = latch as *const HybridLatch as usize;
        park(addr, || {
            let s = latch.state.load(Ordering::Relaxed);
            s & PARKED != 0 && blocked(s)
        });
    }
}

impl HybridLatch {
    /// A free latch with version 0.
    pub const fn new() -> Self {
        HybridLatch {
            state: AtomicU64::new(0),
        }
    }

    /// The current version (for tests and diagnostics).
    pub fn version(&self) -> u64 {
        self.state.load(Ordering::Relaxed) >> VERSION_ONE.trailing_zeros()
    }

    /// Whether a writer holds the latch right now.
    pub fn is_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0
    }

    /// Whether a thread sleeps on the latch right now (the `PARKED` bit; for tests).
    #[cfg(test)]
    pub(crate) fn has_parked(&self) -> bool {
        self.state.load(Ordering::Relaxed) & PARKED != 0
    }

    /// Starts an optimistic read, waiting (spin, then sleep) while a writer holds the latch.
    #[inline]
    pub fn optimistic(&self) -> OptimisticGuard<'_> {
        let s = self.state.load(Ordering::Acquire);
        let (s, slow_path) = match s & EXCLUSIVE == 0 {
            true => (s, false),
            false => (self.wait_unlatched(), true),
        };
        OptimisticGuard {
            latch: self,
            version: s & (VERSION_MASK | LINES),
            slow_path,
        }
    }

    /// The slow path of [`optimistic`](Self::optimistic): waits until no writer holds the
    /// latch and returns the state word it then read. It returns the word, not the guard:
    /// a guard returned from a call goes through memory, and every descent kept its guards
    /// on the stack for it, 8 instructions of moves per level (callgrind).
    #[cold]
    #[inline(never)]
    fn wait_unlatched(&self) -> u64 {
        loop {
            wait_while(self, |s| s & EXCLUSIVE != 0);
            let s = self.state.load(Ordering::Acquire);
            if s & EXCLUSIVE == 0 {
                return s;
            }
        }
    }

    /// Starts an optimistic read only if no writer holds the latch.
    pub fn try_optimistic(&self) -> Option<OptimisticGuard<'_>> {
        let s = self.state.load(Ordering::Acquire);
        (s & EXCLUSIVE == 0).then_some(OptimisticGuard {
            latch: self,
            version: s & (VERSION_MASK | LINES),
            slow_path: false,
        })
    }

    /// Acquires the latch in shared mode, waiting while a writer holds it. Ends line mode
    /// (`sync::lines`) first: the holder may read any byte of a stable node.
    pub fn shared(&self) -> SharedGuard<'_> {
        self.shared_inner(true)
    }

    /// [`shared`](Self::shared) that leaves line mode on: for a holder that reads the
    /// node's structure and keys only, never inline value bytes, which in-place updaters
    /// of a leaf in line mode write without the latch (`Tree::stats`).
    pub(crate) fn shared_keeping_lines(&self) -> SharedGuard<'_> {
        self.shared_inner(false)
    }

    fn shared_inner(&self, end_lines: bool) -> SharedGuard<'_> {
        if owns(self.addr()) {
            if let Some(g) = self.owner_shared(None, end_lines) {
                return g;
            }
        }
        let mut slow_path = false;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if end_lines && s & LINES != 0 {
                // A shared holder expects a stable leaf: line mode ends first.
                drop(self.exclusive());
                continue;
            }
            if s & (COHORT | EXCLUSIVE) == COHORT {
                if let Some(held) = cohort::held(self.addr()) {
                    let lines = if end_lines { LINES } else { 0 };
                    if self.enter_cohort_reader(held, lines, s) {
                        return SharedGuard {
                            latch: self,
                            flags: flags(held, slow_path),
                        };
                    }
                    slow_path = true;
                    wait_while(self, |s| s & EXCLUSIVE != 0);
                    continue;
                }
            }
            if s & EXCLUSIVE == 0 && s & SHARED_MASK != SHARED_MASK {
                if self
                    .state
                    .compare_exchange_weak(s, s + SHARED_ONE, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    count_acquisition(false);
                    return SharedGuard {
                        latch: self,
                        flags: flags(ATOMIC, slow_path),
                    };
                }
                continue;
            }
            slow_path = true;
            wait_while(self, |s| {
                s & EXCLUSIVE != 0 || s & SHARED_MASK == SHARED_MASK
            });
        }
    }

    /// The latch word's address (owner mode's test, `sync::owner`).
    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const HybridLatch as usize
    }

    /// Acquires the latch exclusively, waiting while anybody else holds it. In owner mode
    /// (`sync::owner`) the latch of an owned page is taken with a plain store.
    #[inline]
    pub fn exclusive(&self) -> ExclusiveGuard<'_> {
        if owns(self.addr()) {
            if let Some(x) = self.owner_exclusive(None) {
                return x;
            }
        }
        self.exclusive_atomic()
    }

    /// [`exclusive`](Self::exclusive) with a read-modify-write even in owner mode: for pages
    /// that every thread writes (the blob heap's).
    pub fn exclusive_atomic(&self) -> ExclusiveGuard<'_> {
        let s = self.state.load(Ordering::Relaxed);
        if s & (EXCLUSIVE | SHARED_MASK) == 0
            && (s & COHORT == 0 || !self.queued())
            && self
                .state
                .compare_exchange_weak(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return ExclusiveGuard::acquired(self, s, false);
        }
        self.exclusive_slow()
    }

    #[cold]
    fn exclusive_slow(&self) -> ExclusiveGuard<'_> {
        if self.state.load(Ordering::Relaxed) & COHORT != 0 && !owns(self.addr()) {
            if let Some(held) = cohort::held(self.addr()) {
                return self.exclusive_cohort(held);
            }
        }
        ExclusiveGuard::acquired(self, self.take_word(), true)
    }

    /// Sets `EXCLUSIVE`, waiting (spin, then sleep) while anybody holds the latch; returns
    /// the word it replaced.
    fn take_word(&self) -> u64 {
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & (EXCLUSIVE | SHARED_MASK) == 0 {
                if self
                    .state
                    .compare_exchange_weak(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return s;
                }
                continue;
            }
            wait_while(self, |s| s & (EXCLUSIVE | SHARED_MASK) != 0);
        }
    }

    /// Waits (spin, then sleep) while a writer holds the latch and `pending()` holds;
    /// returns once either was seen false. Whatever the holder wrote before it released the
    /// latch is visible afterwards. A sleeper is woken by the next release only, so `pending`
    /// turning false alone does not wake it (leaf combining: the holder completes the
    /// requests it serves before it releases the latch).
    pub(crate) fn wait_while_exclusive(&self, pending: impl Fn() -> bool) {
        wait_while(self, |s| s & EXCLUSIVE != 0 && pending());
        fence(Ordering::Acquire);
    }

    /// Spins briefly (the `rounds` of the exponential spin, `2^round` spin hints after each
    /// look at the latch; the spin phase of a wait is rounds `0..`[`SPIN_ROUNDS`]) while a
    /// writer holds the latch; returns whether one still holds it, i.e. the holder takes
    /// long (leaf combining hands an operation over only then: a holder that is about to
    /// release serves nobody better than a waiter that takes the latch itself).
    pub(crate) fn spin_while_exclusive(&self, rounds: std::ops::Range<u32>) -> bool {
        for round in rounds {
            if self.state.load(Ordering::Relaxed) & EXCLUSIVE == 0 {
                return false;
            }
            spin_round(round);
        }
        self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0
    }

    /// Acquires the latch exclusively only if that is possible at once.
    #[inline]
    pub fn try_exclusive(&self) -> Option<ExclusiveGuard<'_>> {
        if owns(self.addr()) {
            if let Some(x) = self.owner_exclusive(None) {
                return Some(x);
            }
        }
        self.try_exclusive_atomic()
    }

    /// [`try_exclusive`](Self::try_exclusive) with a read-modify-write even in owner mode.
    #[inline]
    fn try_exclusive_atomic(&self) -> Option<ExclusiveGuard<'_>> {
        let s = self.state.load(Ordering::Relaxed);
        if s & (EXCLUSIVE | SHARED_MASK) != 0 || (s & COHORT != 0 && self.queued()) {
            return None;
        }
        self.state
            .compare_exchange(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .and_then(|_| ExclusiveGuard::try_acquired(self, s))
    }

    /// Takes the latch of a free page whose memory is about to be given back to the system
    /// (which zeroes the word): exclusively, only if nobody holds it now. Returns the version
    /// bits, the floor that [`renew`](Self::renew) must exceed when the page is reused. The
    /// latch is never released: zeroing the memory ends the hold, and
    /// [`wake_all`](Self::wake_all) then wakes whoever waited. [`abandon_retire`]
    /// (Self::abandon_retire) undoes it if the memory could not be given back.
    pub(crate) fn try_retire(&self) -> Option<u64> {
        let x = self.try_exclusive_atomic()?;
        if self.is_cohort() {
            // An inflated latch keeps its memory (and its slot, `sync::cohort`).
            return None;
        }
        // Held for good: the guard is forgotten, not released.
        std::mem::forget(x);
        Some(self.state.load(Ordering::Relaxed) & VERSION_MASK)
    }

    /// Releases a latch taken by [`try_retire`](Self::try_retire) whose page kept its memory.
    pub(crate) fn abandon_retire(&self) {
        self.release_exclusive();
    }

    /// Wakes every thread parked on this latch (after its word was zeroed under them).
    pub(crate) fn wake_all(&self) {
        unpark_all(self as *const HybridLatch as usize);
    }

    /// Prepares the latch of a page that is handed out again after its memory was given back
    /// (or for the first time): the version moves past `floor` and past whatever it reads
    /// now, so that no snapshot taken before (of the page's previous life, or of the zeroed
    /// word by a reader holding a stale id) validates against it. Fails, changing nothing, if
    /// a thread holding a stale id has latched the word right now.
    ///
    /// A word that reads 0 with a floor of 0 (a page handed out for the first time) is
    /// claimed by a compare-exchange from 0 first: it is the page's first touch, and a write
    /// faults the page in once, where a load would map the kernel's shared zero page and the
    /// exchange after it fault again to replace it (and flush the other CPUs' TLBs).
    pub(crate) fn renew(&self, floor: u64) -> bool {
        if floor & VERSION_MASK == 0
            && self
                .state
                .compare_exchange(0, VERSION_ONE, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        {
            return true;
        }
        let s = self.state.load(Ordering::Relaxed);
        if s & (EXCLUSIVE | SHARED_MASK) != 0 {
            return false;
        }
        // `LINES` is gone: the page's last exclusive holder ended line mode.
        let version = (s & VERSION_MASK).max(floor & VERSION_MASK);
        let new = version.wrapping_add(VERSION_ONE) | (s & (PARKED | COHORT));
        self.state
            .compare_exchange(s, new, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    fn release_exclusive(&self) {
        // Bump the version, clear EXCLUSIVE and PARKED in one step.
        let prev = self
            .state
            .fetch_add(VERSION_ONE.wrapping_sub(EXCLUSIVE), Ordering::Release);
        if prev & PARKED != 0 {
            self.state.fetch_and(!PARKED, Ordering::Relaxed);
            unpark_all(self as *const HybridLatch as usize);
        }
    }

    fn release_shared(&self) {
        let prev = self.state.fetch_sub(SHARED_ONE, Ordering::Release);
        if prev & PARKED != 0 && prev & SHARED_MASK == SHARED_ONE {
            self.state.fetch_and(!PARKED, Ordering::Relaxed);
            unpark_all(self as *const HybridLatch as usize);
        }
    }
}

/// An optimistic read in progress: a version snapshot to validate against.
#[derive(Debug)]
#[must_use]
pub struct OptimisticGuard<'a> {
    latch: &'a HybridLatch,
    version: u64,
    slow_path: bool,
}

impl<'a> OptimisticGuard<'a> {
    /// Succeeds if no writer has held the latch since the snapshot was taken: everything
    /// read in between is consistent.
    ///
    /// A snapshot taken in line mode never validates here: in-place updates changed value
    /// bytes without the latch, and this check cannot tell which the reader read. The
    /// failure ends line mode if the latch is free (see `sync::lines`), so that the retry
    /// finds an ordinary leaf. Point reads check the stretches they read instead
    /// ([`validate_keys`](Self::validate_keys) plus `sync::lines`).
    #[inline]
    pub fn validate(&self) -> Result<(), Restart> {
        if self.unchanged() {
            Ok(())
        } else {
            Err(Self::failed(self.latch, self.version))
        }
    }

    /// A failed validation of a snapshot of `latch` at `version`: ends line mode first if
    /// the snapshot found it on. Takes copies: a reference to the guard would keep every
    /// descent's guards in memory (+40 instructions per update).
    #[cold]
    #[inline(never)]
    fn failed(latch: &HybridLatch, version: u64) -> Restart {
        if version & LINES != 0 {
            latch.end_lines();
        }
        Restart
    }

    /// [`validate`](Self::validate)'s test.
    #[inline]
    fn unchanged(&self) -> bool {
        fence(Ordering::Acquire);
        let s = self.latch.state.load(Ordering::Relaxed);
        s & (VERSION_MASK | EXCLUSIVE) == self.version
    }

    /// The version the snapshot holds (which never comes back once a writer took the latch:
    /// an equal version later means unchanged bytes). For upper-level replicas
    /// (`crate::numa`), which copy a page again only when its version moved.
    pub(crate) fn snapshot_version(&self) -> u64 {
        self.version
    }

    /// Whether the snapshot found the leaf in line mode (`sync::lines`).
    #[inline]
    pub fn lines(&self) -> bool {
        self.version & LINES != 0
    }

    /// [`validate`](Self::validate) for a snapshot taken in line mode: succeeds if no writer
    /// latched the leaf since. The leaf's keys, slots and layout are then as read; value
    /// bytes may have changed in place, so a reader of values checks the stretches it read
    /// too (`sync::lines`).
    #[inline]
    pub fn validate_keys(&self) -> Result<(), Restart> {
        fence(Ordering::Acquire);
        let s = self.latch.state.load(Ordering::Relaxed);
        if s & (VERSION_MASK | EXCLUSIVE) == self.version & !LINES {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Whether taking the snapshot had to wait for a writer.
    pub fn slow_path(&self) -> bool {
        self.slow_path
    }

    /// The latch this snapshot was taken of.
    pub fn latch(&self) -> &'a HybridLatch {
        self.latch
    }

    /// Turns the read into an exclusive latch if nothing changed since the snapshot; waits
    /// for shared holders to leave. Fails with `Restart` if a writer came in between.
    // Inline: the append finger's upgrade was a call, 765 -> 739 instructions per append
    // inlined (callgrind).
    #[inline]
    pub fn upgrade_exclusive(self) -> Result<ExclusiveGuard<'a>, Restart> {
        let latch = self.latch;
        let mut slow_path = self.slow_path;
        // The latch ends line mode when it is acquired, as any exclusive acquisition does.
        let version = self.version & !LINES;
        if owns(latch.addr()) {
            if let Some(x) = latch.owner_exclusive(Some(version)) {
                return Ok(x);
            }
        }
        loop {
            let s = latch.state.load(Ordering::Relaxed);
            if s & (VERSION_MASK | EXCLUSIVE) != version || (s & COHORT != 0 && latch.queued()) {
                // Changed, or writers queue for the inflated latch (`sync::cohort`): the
                // caller restarts, and queues if it still finds the latch taken.
                return Err(Restart);
            }
            if s & SHARED_MASK == 0 {
                if latch
                    .state
                    .compare_exchange_weak(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return ExclusiveGuard::acquired_unmoved(latch, s, slow_path);
                }
                // Another thread may have latched it; look again.
                slow_path = true;
                continue;
            }
            slow_path = true;
            wait_while(latch, |s| {
                s & SHARED_MASK != 0 && s & (VERSION_MASK | EXCLUSIVE) == version
            });
        }
    }

    /// Like [`upgrade_exclusive`](Self::upgrade_exclusive) but never waits.
    #[inline]
    pub fn try_upgrade_exclusive(self) -> Result<Option<ExclusiveGuard<'a>>, Restart> {
        if owns(self.latch.addr()) {
            if let Some(x) = self.latch.owner_exclusive(Some(self.version & !LINES)) {
                return Ok(Some(x));
            }
        }
        let s = self.latch.state.load(Ordering::Relaxed);
        if s & (VERSION_MASK | EXCLUSIVE) != self.version & !LINES {
            return Err(Restart);
        }
        if s & SHARED_MASK != 0 || (s & COHORT != 0 && self.latch.queued()) {
            return Ok(None);
        }
        match self.latch.state.compare_exchange(
            s,
            s | EXCLUSIVE,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) if s & COHORT != 0 && ExclusiveGuard::backed_out(self.latch) => Ok(None),
            Ok(_) => ExclusiveGuard::acquired_unmoved(self.latch, s, false).map(Some),
            Err(_) => Err(Restart),
        }
    }

    /// Turns the read into a shared latch if nothing changed since the snapshot.
    pub fn upgrade_shared(self) -> Result<SharedGuard<'a>, Restart> {
        let latch = self.latch;
        if self.version & LINES != 0 {
            // As `validate`: a shared holder expects a stable leaf.
            latch.end_lines();
            return Err(Restart);
        }
        if owns(latch.addr()) {
            if let Some(g) = latch.owner_shared(Some(self.version), true) {
                return Ok(g);
            }
        }
        loop {
            let s = latch.state.load(Ordering::Relaxed);
            if s & (VERSION_MASK | EXCLUSIVE) != self.version || s & SHARED_MASK == SHARED_MASK {
                return Err(Restart);
            }
            if s & COHORT != 0 {
                if let Some(held) = cohort::held(latch.addr()) {
                    if !latch.enter_cohort_reader(held, VERSION_MASK, s) {
                        return Err(Restart);
                    }
                    return Ok(SharedGuard {
                        latch,
                        flags: flags(held, self.slow_path),
                    });
                }
            }
            if latch
                .state
                .compare_exchange_weak(s, s + SHARED_ONE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                count_acquisition(false);
                return Ok(SharedGuard {
                    latch,
                    flags: flags(ATOMIC, self.slow_path),
                });
            }
        }
    }
}

/// A shared latch; released on drop.
#[derive(Debug)]
#[must_use]
pub struct SharedGuard<'a> {
    latch: &'a HybridLatch,
    /// Whether the acquisition waited (bit 0), and how it was taken (the rest):
    /// [`ATOMIC`] (counted in the word), [`OWNED`] (in owner mode, `sync::owner`: nothing
    /// to release), or else the lane of an inflated latch it is counted in
    /// (`sync::cohort`). One field, so that the guard moves in two registers.
    flags: u16,
}

impl SharedGuard<'_> {
    /// Whether the acquisition had to wait.
    pub fn slow_path(&self) -> bool {
        self.flags & 1 != 0
    }

    /// The address of the latch this guard holds (to check that it covers a given page).
    pub fn latch_addr(&self) -> usize {
        self.latch as *const HybridLatch as usize
    }
}

impl Drop for SharedGuard<'_> {
    fn drop(&mut self) {
        let mode = self.flags >> 1;
        if mode == ATOMIC {
            self.latch.release_shared();
        } else if mode != OWNED {
            self.latch.leave_cohort_reader(mode);
        }
    }
}

/// An exclusive latch; released on drop, which also bumps the version.
#[derive(Debug)]
#[must_use]
pub struct ExclusiveGuard<'a> {
    latch: &'a HybridLatch,
    /// Whether the acquisition waited (bit 0), and how it was taken (the rest):
    /// [`ATOMIC`] (a read-modify-write of the word), [`OWNED`] (in owner mode,
    /// `sync::owner`: released with a plain store), or else through that lane of an
    /// inflated latch, whose local lock it holds (`sync::cohort`). One field, so that the
    /// guard moves in two registers.
    flags: u16,
}

impl<'a> ExclusiveGuard<'a> {
    /// Wraps a successful exclusive CAS. The release fence orders the CAS before every write
    /// the holder makes: an optimistic reader that sees any of those writes and then runs
    /// its acquire fence (in `validate`) is guaranteed to see the exclusive bit or a newer
    /// version, and fails validation (the seqlock writer protocol). Without it a reader could
    /// validate a torn read on weakly ordered CPUs; the loom model found this.
    ///
    /// `s` is the word the acquiring CAS replaced: with `LINES` set, line mode ends here,
    /// before the holder reads or writes anything (`sync::lines`).
    ///
    /// With `COHORT` set, it waits for the shared holders counted off the page to leave
    /// (`sync::cohort`).
    #[inline]
    fn acquired(latch: &'a HybridLatch, s: u64, slow_path: bool) -> Self {
        fence(Ordering::Release);
        count_acquisition(false);
        if s & COHORT != 0 {
            Self::drain_cohort_readers(latch);
        }
        if s & LINES != 0 {
            Self::end_lines(latch);
        }
        ExclusiveGuard {
            latch,
            flags: flags(ATOMIC, slow_path),
        }
    }

    /// [`acquired`](Self::acquired) for an acquisition that must not wait: with shared
    /// holders counted off the page of an inflated latch, the word is released again
    /// (`None`).
    #[inline(always)]
    fn try_acquired(latch: &'a HybridLatch, s: u64) -> Option<Self> {
        if s & COHORT != 0 && Self::backed_out(latch) {
            return None;
        }
        Some(Self::acquired(latch, s, false))
    }

    /// Whether the acquisition had to wait (spin or sleep) for another holder.
    pub fn slow_path(&self) -> bool {
        self.flags & 1 != 0
    }

    /// Records that the holder waited for this latch although the acquisition itself did
    /// not: it waited for a snapshot of the same latch just before (a descent whose root is
    /// the leaf it latches).
    pub fn mark_slow_path(&mut self) {
        self.flags |= 1;
    }

    /// The address of the latch this guard holds (to check that it covers a given page).
    pub fn latch_addr(&self) -> usize {
        self.latch as *const HybridLatch as usize
    }
}

impl Drop for ExclusiveGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let mode = self.flags >> 1;
        if mode == ATOMIC {
            self.latch.release_exclusive();
        } else if mode == OWNED {
            self.latch.owner_release();
        } else {
            self.latch.release_cohort(mode);
        }
    }
}
