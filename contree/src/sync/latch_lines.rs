//! The hybrid latch's paths for line mode (`sync::lines`) and its insert segments
//! (`sync::segments`): the in-place updater's acquisition, the end of line mode under an
//! exclusive acquisition (which moves the segments' records into the page) and the switch
//! into it. Compiled as a child of `latch.rs` (also in the loom model, where no latch enters
//! line mode).

use super::{
    fence, flags, lines, owns, segments, ExclusiveGuard, HybridLatch, OptimisticGuard, Ordering,
    Restart, ATOMIC, COHORT, EXCLUSIVE, LINES, SHARED_MASK, VERSION_MASK,
};

impl HybridLatch {
    /// [`try_exclusive`](Self::try_exclusive) for an in-place updater: a free latch in line
    /// mode (`sync::lines`) gives a snapshot instead (`Err`), since such an update takes no
    /// latch. `Ok(None)` when somebody holds the latch.
    #[inline]
    pub(crate) fn try_exclusive_or_lines(
        &self,
    ) -> Result<Option<ExclusiveGuard<'_>>, OptimisticGuard<'_>> {
        if owns(self.addr()) {
            if let Some(x) = self.owner_exclusive(None) {
                return Ok(Some(x));
            }
        }
        let s = self.state.load(Ordering::Acquire);
        if s & (EXCLUSIVE | SHARED_MASK) != 0 || (s & COHORT != 0 && self.queued()) {
            return Ok(None);
        }
        if s & LINES != 0 {
            return Err(OptimisticGuard {
                latch: self,
                version: s & (VERSION_MASK | LINES),
                slow_path: false,
            });
        }
        Ok(self
            .state
            .compare_exchange(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .and_then(|_| ExclusiveGuard::try_acquired(self, s)))
    }

    /// Ends line mode for an evictor (`lines::evict_cold`): only if the latch is in line
    /// mode and can be had at once, with a read-modify-write (owner mode never takes a
    /// latch in line mode). Returns whether it ended it.
    #[cold]
    pub(crate) fn evict_lines(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LINES != 0 && self.try_exclusive_atomic().is_some()
    }

    /// Ends line mode if the latch can be had at once (an exclusive acquisition does it); a
    /// snapshot that met line mode calls it before it restarts.
    #[cold]
    pub(crate) fn end_lines(&self) {
        drop(self.try_exclusive());
    }
}

impl<'a> ExclusiveGuard<'a> {
    /// [`acquired`](Self::acquired) for an upgrade of a snapshot: `Restart` (the latch
    /// released again, its version moved) if ending line mode moved records of the leaf's
    /// insert segments into its page, which the snapshot's reader did not see.
    #[inline]
    pub(super) fn acquired_unmoved(
        latch: &'a HybridLatch,
        s: u64,
        slow_path: bool,
    ) -> Result<Self, Restart> {
        if s & LINES == 0 {
            return Ok(Self::acquired(latch, s, slow_path));
        }
        let x = Self::acquired(latch, s & !LINES, slow_path);
        match Self::end_lines(latch) {
            0 => Ok(x),
            _ => Err(Restart),
        }
    }

    /// Ends line mode under the exclusive latch just acquired (`sync::lines`): waits for
    /// the in-place updates under way (the `SeqCst` fence pairs with the one an updater
    /// issues between locking its stretches or segment and checking this latch), moves the
    /// records of the insert segments into the page (`sync::segments`), gives the table
    /// entry back and clears `LINES`. Returns how many records it moved.
    ///
    /// Takes the latch, not the guard: a reference to the guard passed to a function that
    /// is not inlined kept every acquisition's guard in memory (+25 instructions per
    /// insert, callgrind). The moves write the page through a stand-in guard of the same latch, never
    /// released: the caller's guard releases it.
    #[cold]
    #[inline(never)]
    pub(super) fn end_lines(latch: &HybridLatch) -> usize {
        fence(Ordering::SeqCst);
        let moved = match lines::find(latch.addr()) {
            Some(e) => {
                lines::quiesce(e);
                let mut x = std::mem::ManuallyDrop::new(ExclusiveGuard {
                    latch,
                    flags: flags(ATOMIC, false),
                });
                let moved = segments::drain_into(e, &mut x);
                lines::give_back(e);
                moved
            }
            None => 0,
        };
        latch.state.fetch_and(!LINES, Ordering::Relaxed);
        moved
    }

    /// Puts the leaf into line mode (`sync::lines`; the caller has taken its table entry).
    /// In-place updates stop taking the latch once it is released.
    pub(crate) fn set_lines(&mut self) {
        self.latch.state.fetch_or(LINES, Ordering::Relaxed);
    }
}
