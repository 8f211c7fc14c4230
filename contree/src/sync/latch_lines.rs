//! The hybrid latch's paths for line mode (`sync::lines`) and its insert segments
//! (`sync::segments`): the in-place updater's acquisition, the end of line mode under an
//! exclusive acquisition (which moves the segments' records into the page) and the switch
//! into it. Compiled as a child of `latch.rs` (also in the loom model, where no latch enters
//! line mode).

use super::{
    fence, flags, lines, owns, segments, ExclusiveGuard, HybridLatch, OptimisticGuard, Ordering,
    Restart, ATOMIC, COHORT, EXCLUSIVE, LINES, SHARED_MASK, VERSION_MASK,
};
use crate::sync::count_acquisition;

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

    /// Ends line mode for an evictor (`lines::evict_cold`), which holds the latch of another
    /// leaf and the eviction gate: only if the latch is in line mode and free at once (a
    /// read-modify-write; owner mode never takes a latch in line mode), and only if no
    /// in-place update holds a stretch once the latch is taken. Such an update may be
    /// running its caller's closure, which may do anything (drop another tree, whose drop
    /// waits for the gate), so the evictor releases the latch again rather than wait for it.
    /// Updates that lock a stretch after the latch is taken see it and back off (the
    /// `SeqCst` fences of the line-mode protocol, `sync::lines`). Returns whether it ended
    /// line mode.
    #[cold]
    pub(crate) fn evict_lines(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        if s & LINES == 0
            || s & (EXCLUSIVE | SHARED_MASK | COHORT) != 0
            || self
                .state
                .compare_exchange(s, s | EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        count_acquisition(false);
        // Released on return: the version moves on, `LINES` stays unless `end_lines` ran.
        let _x = ExclusiveGuard {
            latch: self,
            flags: flags(ATOMIC, false),
        };
        fence(Ordering::SeqCst);
        if lines::find(self.addr()).is_some_and(lines::busy) {
            return false;
        }
        ExclusiveGuard::end_lines(self);
        true
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
