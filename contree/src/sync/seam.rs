//! The seam between the tree and the threads that run it: every atomic, mutex, fence,
//! yield and thread-local that takes part in the tree's concurrency protocols comes from
//! here. A normal build re-exports std's. With the `shuttle` feature they are Shuttle's, so
//! that `tests/shuttle.rs` runs the whole tree (descents, splits, merges, XMerge,
//! Contention Split, the blob heap, scans) under Shuttle's scheduler: every operation on
//! them is a point where the scheduler may switch threads, and a schedule is replayed
//! exactly from its seed. [`parking`](super::parking) does the same for waiting.
//!
//! Left on std on purpose: the process-wide counters that only hand out identities (stripe
//! indexes), the statistics stripes (no decision reads them during an operation), the page
//! table lookups (written once per chunk of pages, before the page is published) and the
//! space manager, which is a thread of its own outside any model; a model turns it off
//! (`Config::space_manager = false`).
//!
//! A tree built with the `shuttle` feature works only inside a Shuttle test
//! (`shuttle::check_random` and friends): Shuttle's primitives need its scheduler.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread::yield_now;
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread_local as model_local;

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::thread;

#[cfg(feature = "shuttle")]
pub(crate) use model::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread;

/// The channels of the thread-per-core executor (`partition::executor`): crossbeam's, or
/// under Shuttle its std-like channels, so that a model runs the executor's workers,
/// clients and ownership changes under Shuttle's scheduler.
#[cfg(not(feature = "shuttle"))]
pub(crate) mod channel {
    pub(crate) use crossbeam_channel::{bounded, unbounded, Receiver, RecvTimeoutError, Sender};
}

/// Shuttle's channels behind crossbeam's names. The executor's bounded channels carry one
/// answer each (or none: the rebalancer's stop signal is a drop), so an unbounded channel
/// stands in for them.
/// Receives from `rx` (`None` once every sender is gone), polling it for up to `poll`
/// first, yielding the CPU between polls, before parking on it: the executor's workers and
/// waiting clients (`ExecutorConfig::poll`). A thread woken from a park pays the
/// scheduler's wake-up (tens of microseconds on a virtual machine whose other cores
/// idle); a poll that finds the answer pays nothing, and the yields let the threads that
/// share its core run. Returns also whether it parked.
#[cfg(not(feature = "shuttle"))]
pub(crate) fn recv_polling<T>(
    rx: &channel::Receiver<T>,
    poll: std::time::Duration,
) -> (Option<T>, bool) {
    use crossbeam_channel::TryRecvError;
    if !poll.is_zero() {
        // The clock is read only once the queue was found empty: a worker that finds its
        // next batch waiting pays one `try_recv`.
        let mut start = None;
        loop {
            match rx.try_recv() {
                Ok(m) => return (Some(m), false),
                Err(TryRecvError::Disconnected) => return (None, false),
                Err(TryRecvError::Empty) => {}
            }
            if start.get_or_insert_with(std::time::Instant::now).elapsed() >= poll {
                break;
            }
            std::thread::yield_now();
        }
    }
    (rx.recv().ok(), true)
}

/// Under Shuttle a receive parks at once: the polls would only add schedule points that
/// decide nothing (a poll that finds nothing changes no state).
#[cfg(feature = "shuttle")]
pub(crate) fn recv_polling<T>(
    rx: &channel::Receiver<T>,
    _poll: std::time::Duration,
) -> (Option<T>, bool) {
    (rx.recv().ok(), true)
}

#[cfg(feature = "shuttle")]
pub(crate) mod channel {
    pub(crate) use shuttle::sync::mpsc::{Receiver, RecvTimeoutError, Sender};

    pub(crate) fn unbounded<T>() -> (Sender<T>, Receiver<T>) {
        shuttle::sync::mpsc::channel()
    }

    pub(crate) fn bounded<T>(_cap: usize) -> (Sender<T>, Receiver<T>) {
        shuttle::sync::mpsc::channel()
    }
}
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread::yield_now;
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::thread_local as model_local;

/// A non-zero 32-bit seed for a per-thread random generator. Normal builds derive it from
/// `salt` (an address distinct per thread); under Shuttle it comes from the scheduler's
/// random source, so that the draws, and with them the sampling decisions of Contention
/// Split, replay with the schedule.
#[inline]
pub(crate) fn seed(salt: usize) -> u32 {
    #[cfg(not(feature = "shuttle"))]
    {
        (salt as u32) | 1
    }
    #[cfg(feature = "shuttle")]
    {
        let _ = salt;
        use shuttle::rand::RngCore;
        shuttle::rand::thread_rng().next_u32() | 1
    }
}

/// Shuttle's scheduling point in front of std's atomics.
///
/// Shuttle's own atomics carry bookkeeping (a vector clock, a resource signature) beside the
/// value, but the tree keeps latch words inside its pages, where a latch is the page's first
/// eight bytes and is formed over zeroed memory. So the model's atomics are std's, one
/// `#[repr(transparent)]` wrapper each (the same size, alignment and bit validity), and
/// every operation first gives Shuttle's scheduler the choice of which thread runs next.
/// Shuttle runs one model thread at a time, so each operation is sequentially consistent,
/// as Shuttle models its own atomics; weak-memory behaviour is loom's part
/// (`tests/loom_latch.rs`).
#[cfg(feature = "shuttle")]
mod model {
    use shuttle_engine::runtime::thread::switch;
    pub(crate) use std::sync::atomic::Ordering;

    /// A fence: no scheduling point (Shuttle treats fences as no-ops as well).
    #[inline]
    pub(crate) fn fence(order: Ordering) {
        std::sync::atomic::fence(order);
    }

    macro_rules! model_atomic {
        ($name:ident, $std:ty, $int:ty) => {
            #[repr(transparent)]
            #[derive(Debug, Default)]
            pub(crate) struct $name($std);

            #[allow(dead_code)]
            impl $name {
                pub(crate) const fn new(v: $int) -> Self {
                    Self(<$std>::new(v))
                }
                pub(crate) fn load(&self, order: Ordering) -> $int {
                    switch();
                    self.0.load(order)
                }
                pub(crate) fn store(&self, v: $int, order: Ordering) {
                    switch();
                    self.0.store(v, order)
                }
                pub(crate) fn swap(&self, v: $int, order: Ordering) -> $int {
                    switch();
                    self.0.swap(v, order)
                }
                pub(crate) fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    switch();
                    self.0.compare_exchange(current, new, success, failure)
                }
                pub(crate) fn compare_exchange_weak(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    switch();
                    self.0.compare_exchange_weak(current, new, success, failure)
                }
            }
        };
    }

    macro_rules! model_int_ops {
        ($name:ident, $int:ty) => {
            #[allow(dead_code)]
            impl $name {
                pub(crate) fn fetch_add(&self, v: $int, order: Ordering) -> $int {
                    switch();
                    self.0.fetch_add(v, order)
                }
                pub(crate) fn fetch_sub(&self, v: $int, order: Ordering) -> $int {
                    switch();
                    self.0.fetch_sub(v, order)
                }
                pub(crate) fn fetch_and(&self, v: $int, order: Ordering) -> $int {
                    switch();
                    self.0.fetch_and(v, order)
                }
                pub(crate) fn fetch_or(&self, v: $int, order: Ordering) -> $int {
                    switch();
                    self.0.fetch_or(v, order)
                }
            }
        };
    }

    model_atomic!(AtomicBool, std::sync::atomic::AtomicBool, bool);
    model_atomic!(AtomicU32, std::sync::atomic::AtomicU32, u32);
    model_atomic!(AtomicU64, std::sync::atomic::AtomicU64, u64);
    model_atomic!(AtomicUsize, std::sync::atomic::AtomicUsize, usize);
    model_int_ops!(AtomicU32, u32);
    model_int_ops!(AtomicU64, u64);
    model_int_ops!(AtomicUsize, usize);
}
