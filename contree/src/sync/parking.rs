//! The waiting primitives the latch is built on: the atomics of [`seam`](super::seam) and
//! the address-keyed parking lot of `parking_lot_core`.
//!
//! The latch imports everything it needs to share between threads from this module, so that
//! the loom model (`tests/loom_latch.rs`) can compile the very same `latch.rs` against loom's
//! atomics and a yielding stand-in for parking. Under the `shuttle` feature waiting is a
//! yield to Shuttle's scheduler (a thread parked outside the scheduler would stop the
//! model), and waking has nothing to do.

pub(crate) use super::owner::{count_acquisition, owns};
pub(crate) use super::seam::{fence, yield_now, AtomicU64, Ordering};

/// One step of a short busy wait.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(feature = "shuttle"))]
    std::hint::spin_loop();
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
}

/// Puts the calling thread to sleep on `addr` if `still_blocked` returns true when checked
/// under the parking lot's queue lock; returns when woken by [`unpark_all`] on the same
/// address (or at once if `still_blocked` was false). Callers re-check their condition
/// after it returns.
#[cfg(not(feature = "shuttle"))]
pub(crate) fn park(addr: usize, still_blocked: impl FnOnce() -> bool) {
    // SAFETY: the callbacks neither panic nor call back into the parking lot, which is what
    // `parking_lot_core::park` requires; `addr` is the address of a latch word that lives
    // as long as the waiting thread holds a reference to it.
    unsafe {
        parking_lot_core::park(
            addr,
            still_blocked,
            || {},
            |_, _| {},
            parking_lot_core::DEFAULT_PARK_TOKEN,
            None,
        );
    }
}

// Calls of `unpark_all` made by this thread (unit tests only: a release that wakes nobody
// must not make one, which no result of the latch shows).
#[cfg(all(test, not(feature = "shuttle")))]
thread_local! {
    pub(crate) static UNPARK_CALLS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Wakes every thread parked on `addr`.
#[cfg(not(feature = "shuttle"))]
pub(crate) fn unpark_all(addr: usize) {
    #[cfg(test)]
    UNPARK_CALLS.with(|c| c.set(c.get() + 1));
    // SAFETY: `unpark_all` only requires that no parking lot function is called from within
    // a parking lot callback, which never happens here.
    unsafe {
        parking_lot_core::unpark_all(addr, parking_lot_core::DEFAULT_UNPARK_TOKEN);
    }
}

/// Shuttle: lets another thread run if `still_blocked`; the caller re-checks.
#[cfg(feature = "shuttle")]
pub(crate) fn park(_addr: usize, still_blocked: impl FnOnce() -> bool) {
    if still_blocked() {
        shuttle::thread::yield_now();
    }
}

/// Shuttle: nothing sleeps, so nothing needs waking.
#[cfg(feature = "shuttle")]
pub(crate) fn unpark_all(_addr: usize) {}
