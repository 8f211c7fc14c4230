//! The hybrid latch's owner mode (`sync::owner`): acquisitions and release of the pages
//! a thread owns, with plain stores. Compiled as a child of `latch.rs` (also in the loom
//! model).

use super::{
    flags, ExclusiveGuard, HybridLatch, SharedGuard, COHORT, EXCLUSIVE, LINES, OWNED, PARKED,
    SHARED_MASK, VERSION_MASK, VERSION_ONE,
};
use crate::sync::{count_acquisition, fence, Ordering};

impl HybridLatch {
    /// Owner mode's exclusive acquisition (`sync::owner`): a plain store, if the word is
    /// free; `None` sends the caller to the atomic path (which waits, as always).
    #[inline]
    pub(super) fn owner_exclusive(&self, version: Option<u64>) -> Option<ExclusiveGuard<'_>> {
        let s = self.state.load(Ordering::Relaxed);
        if s & (EXCLUSIVE | PARKED | SHARED_MASK | LINES | COHORT) != 0
            || version.is_some_and(|v| s & VERSION_MASK != v)
        {
            return None;
        }
        self.state.store(s | EXCLUSIVE, Ordering::Relaxed);
        // As `ExclusiveGuard::acquired`: the store is ordered before every write the holder
        // makes (the seqlock writer protocol).
        fence(Ordering::Release);
        count_acquisition(true);
        Some(ExclusiveGuard {
            latch: self,
            flags: flags(OWNED, false),
        })
    }

    /// Owner mode's shared acquisition (`sync::owner`): nothing is written, since no other
    /// thread can hold an owned page exclusively; `None` sends the caller to the atomic path.
    #[inline]
    pub(super) fn owner_shared(
        &self,
        version: Option<u64>,
        end_lines: bool,
    ) -> Option<SharedGuard<'_>> {
        let s = self.state.load(Ordering::Relaxed);
        let lines = if end_lines { LINES } else { 0 };
        if s & (EXCLUSIVE | PARKED | SHARED_MASK | COHORT | lines) != 0
            || version.is_some_and(|v| s & (VERSION_MASK | LINES) != v)
        {
            return None;
        }
        fence(Ordering::Acquire);
        count_acquisition(true);
        Some(SharedGuard {
            latch: self,
            flags: flags(OWNED, false),
        })
    }

    /// Owner mode's release (`sync::owner`): the next version, with a plain store.
    #[inline]
    pub(super) fn owner_release(&self) {
        let s = self.state.load(Ordering::Relaxed);
        self.state.store(
            (s & !EXCLUSIVE).wrapping_add(VERSION_ONE),
            Ordering::Release,
        );
    }
}
