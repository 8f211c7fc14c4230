//! The waiting primitives the latch is built on: std atomics and the address-keyed parking
//! lot of `parking_lot_core`.
//!
//! The latch imports everything it needs to share between threads from this module, so that
//! the loom model (`tests/loom_latch.rs`) can compile the very same `latch.rs` against loom's
//! atomics and a yielding stand-in for parking.

pub(crate) use std::sync::atomic::{fence, AtomicU64, Ordering};

/// One step of a short busy wait.
#[inline]
pub(crate) fn spin_hint() {
    std::hint::spin_loop();
}

/// Puts the calling thread to sleep on `addr` if `still_blocked` returns true when checked
/// under the parking lot's queue lock; returns when woken by [`unpark_all`] on the same
/// address (or at once if `still_blocked` was false).
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

/// Wakes every thread parked on `addr`.
pub(crate) fn unpark_all(addr: usize) {
    // SAFETY: `unpark_all` only requires that no parking lot function is called from within
    // a parking lot callback, which never happens here.
    unsafe {
        parking_lot_core::unpark_all(addr, parking_lot_core::DEFAULT_UNPARK_TOKEN);
    }
}
