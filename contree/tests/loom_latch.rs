//! Loom model of the hybrid latch protocol (`contree/src/sync/latch.rs`).
//!
//! The very same `latch.rs` the library uses is compiled into this test crate against a
//! loom-backed `mod sync` (loom atomics and fences; by default spinning and parking become
//! `loom::thread::yield_now` and `unpark_all` does nothing). Loom then explores the thread
//! interleavings and the weak-memory behaviours of the C11 model and checks:
//!
//! * (a) two writers under `exclusive()` never lose an increment of an unsynchronised counter;
//! * (b) an optimistic reader whose `validate()` succeeds saw a consistent pair of values
//!   written together by an exclusive writer (the seqlock property);
//! * (c) `shared()` and `exclusive()` exclude each other (no data race on a loom
//!   `UnsafeCell`), while shared holders overlap;
//! * (d) `upgrade_exclusive()` from an optimistic guard fails with `Restart` when a writer
//!   held the latch since the snapshot, and succeeds when none did (also `upgrade_shared`,
//!   `try_upgrade_exclusive`, `try_exclusive`, `try_optimistic`);
//! * (e) with a parking lot modelled on loom's `Mutex` and `Condvar` (`check_parking`),
//!   waiters that go to sleep are always woken: a lost wake-up is a loom deadlock;
//! * (g) owner mode (`contree/src/sync/owner.rs`): an owner's plain-store acquisitions keep
//!   the seqlock property for optimistic readers on other threads;
//! * (f) the blob heap's read protocol (`contree/src/heap.rs`): a reader that validates the
//!   heap page's latch never accepts a chunk torn by a pack that moves it, and a reader that
//!   validates the leaf's latch never accepts the bytes of a chunk that was freed after the
//!   stub left the leaf and then reused by another thread, which writes them after a release
//!   fence (as `heap_alloc` does).
//!
//! Each model uses a preemption bound (`LOOM_MAX_PREEMPTIONS` overrides it) so that the
//! whole file finishes in seconds. Run: `cargo test -p contree --test loom_latch`.

#[allow(dead_code, unused_imports)]
#[path = "../src/sync/latch.rs"]
mod latch;

/// The loom stand-in for `contree/src/sync/` (`mod.rs` and `parking.rs`): the same names, backed by loom.
#[allow(dead_code)]
mod sync {
    pub(crate) use loom::sync::atomic::{fence, Ordering};
    use std::sync::OnceLock;

    /// A loom `AtomicU64` behind a `const fn new`.
    ///
    /// `HybridLatch::new` is a `const fn`, but loom 0.7's `AtomicU64::new` is not `const`
    /// (a loom atomic registers itself with the running model when it is created). The
    /// wrapper stores the initial value and creates the loom atomic on first use; the
    /// models below touch every latch right after creating it, on the model's main thread,
    /// so the loom object always exists before any other thread can see the latch.
    #[derive(Debug)]
    pub(crate) struct AtomicU64 {
        init: u64,
        cell: OnceLock<loom::sync::atomic::AtomicU64>,
    }

    impl AtomicU64 {
        pub(crate) const fn new(v: u64) -> Self {
            AtomicU64 {
                init: v,
                cell: OnceLock::new(),
            }
        }

        fn get(&self) -> &loom::sync::atomic::AtomicU64 {
            self.cell
                .get_or_init(|| loom::sync::atomic::AtomicU64::new(self.init))
        }

        pub(crate) fn load(&self, order: Ordering) -> u64 {
            self.get().load(order)
        }

        pub(crate) fn store(&self, v: u64, order: Ordering) {
            self.get().store(v, order)
        }

        pub(crate) fn fetch_add(&self, v: u64, order: Ordering) -> u64 {
            self.get().fetch_add(v, order)
        }

        pub(crate) fn fetch_sub(&self, v: u64, order: Ordering) -> u64 {
            self.get().fetch_sub(v, order)
        }

        pub(crate) fn fetch_and(&self, v: u64, order: Ordering) -> u64 {
            self.get().fetch_and(v, order)
        }

        pub(crate) fn fetch_or(&self, v: u64, order: Ordering) -> u64 {
            self.get().fetch_or(v, order)
        }

        pub(crate) fn compare_exchange(
            &self,
            current: u64,
            new: u64,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u64, u64> {
            self.get().compare_exchange(current, new, success, failure)
        }

        pub(crate) fn compare_exchange_weak(
            &self,
            current: u64,
            new: u64,
            success: Ordering,
            failure: Ordering,
        ) -> Result<u64, u64> {
            self.get()
                .compare_exchange_weak(current, new, success, failure)
        }
    }

    std::thread_local! {
        /// Whether the current model parks for real (see [`park`]). Loom runs every thread
        /// of a model as a coroutine on the thread that called `check`, so one
        /// thread-local covers the whole model.
        static REAL_PARKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    pub(crate) fn set_real_parking(on: bool) {
        REAL_PARKING.with(|c| c.set(on));
    }

    pub(crate) fn real_parking() -> bool {
        REAL_PARKING.with(|c| c.get())
    }

    /// One parking lot for the whole model: a generation number under a loom mutex and a
    /// condition variable. Like `parking_lot_core`, `park` checks `still_blocked` under the
    /// lot's lock and `unpark_all` takes the same lock, so loom can find lost wake-ups (they
    /// show up as a deadlock). All latches share the lot; a spurious wake-up only makes a
    /// waiter look at its latch again, which the latch tolerates.
    struct Lot {
        generation: loom::sync::Mutex<u64>,
        wake: loom::sync::Condvar,
    }

    loom::lazy_static! {
        static ref LOT: Lot = Lot {
            generation: loom::sync::Mutex::new(0),
            wake: loom::sync::Condvar::new(),
        };
    }

    /// One step of a busy wait: let loom run another thread. With real parking the spin is
    /// bounded by the latch itself (it parks after a few rounds), so it is a no-op.
    pub(crate) fn spin_hint() {
        if !real_parking() {
            loom::thread::yield_now();
        }
    }

    /// By default parking becomes a yield (the waiter re-checks its condition when it runs
    /// again). With real parking, the thread sleeps on the lot until an `unpark_all`.
    pub(crate) fn park(_addr: usize, still_blocked: impl FnOnce() -> bool) {
        if real_parking() {
            let mut generation = LOT.generation.lock().unwrap();
            if !still_blocked() {
                return;
            }
            let mine = *generation;
            while *generation == mine {
                generation = LOT.wake.wait(generation).unwrap();
            }
        } else if still_blocked() {
            loom::thread::yield_now();
        }
    }

    std::thread_local! {
        /// Owner mode (`contree/src/sync/owner.rs`): the latch address the model's owner
        /// thread owns (0: none). Loom runs every thread on one OS thread, so the model
        /// keeps the owner's loom thread id beside it.
        static OWNED: std::cell::Cell<(usize, Option<loom::thread::ThreadId>)> =
            const { std::cell::Cell::new((0, None)) };
    }

    /// Makes the calling model thread the owner of the latch at `addr`.
    pub(crate) fn set_owner(addr: usize) {
        OWNED.with(|c| c.set((addr, Some(loom::thread::current().id()))));
    }

    /// Owner mode's test: the calling thread owns the latch at `addr`.
    pub(crate) fn owns(addr: usize) -> bool {
        let (owned, owner) = OWNED.with(|c| c.get());
        owned == addr && owner == Some(loom::thread::current().id())
    }

    /// A yield of the model.
    pub(crate) fn yield_now() {
        loom::thread::yield_now();
    }

    /// Counting is the `latch-stats` feature's, not modelled.
    pub(crate) fn count_acquisition(_owner: bool) {}

    /// Line mode (`contree/src/sync/lines.rs`) and its insert segments
    /// (`contree/src/sync/segments.rs`) are not part of these models: no latch here ever
    /// enters it, so ending it finds no entry. Their protocols are modelled under Shuttle
    /// with the whole tree (the models `line_mode` and `insert_segments` of
    /// `tests/shuttle/main.rs`).
    pub(crate) mod lines {
        pub(crate) fn find(_addr: usize) -> Option<usize> {
            None
        }
        pub(crate) fn quiesce(_e: usize) {}
        pub(crate) fn give_back(_e: usize) {}
        pub(crate) fn busy(_e: usize) -> bool {
            false
        }
    }

    /// See [`lines`].
    pub(crate) mod segments {
        pub(crate) fn drain_into(_e: usize, _x: &mut crate::latch::ExclusiveGuard<'_>) -> usize {
            0
        }
    }

    /// Wakes every sleeper (real parking only; otherwise nobody sleeps).
    pub(crate) fn unpark_all(_addr: usize) {
        if real_parking() {
            let mut generation = LOT.generation.lock().unwrap();
            *generation += 1;
            LOT.wake.notify_all();
        }
    }

    /// Cohort latches (`contree/src/sync/cohort.rs`) are not part of these models: no latch
    /// here is ever inflated, so no slot is ever found. Their protocol is modelled under
    /// Shuttle with the whole tree (`tests/shuttle/main.rs`, `cohort_latch`).
    pub(crate) mod cohort {
        pub(crate) type Held = u16;

        pub(crate) struct Lane;

        impl Lane {
            pub(crate) fn queue(&self) -> bool {
                unreachable!("no latch is inflated")
            }
            pub(crate) fn should_pass(&self) -> bool {
                unreachable!("no latch is inflated")
            }
            pub(crate) fn pass(&self) {}
            pub(crate) fn unlock_released(&self) {}
            pub(crate) fn enter_reader(&self) {}
            pub(crate) fn leave_reader(&self) {}
        }

        pub(crate) fn held(_addr: usize) -> Option<Held> {
            None
        }
        pub(crate) fn lane(_held: Held) -> &'static Lane {
            unreachable!("no latch is inflated")
        }
        pub(crate) fn claim(_addr: usize) -> bool {
            false
        }
        pub(crate) fn readers_in(_held: Held) -> bool {
            false
        }
        pub(crate) fn drain_readers(_held: Held) {}
        pub(crate) fn arrive(_held: Held) {}
        pub(crate) fn depart(_held: Held) {}
        pub(crate) fn queued(_addr: usize) -> bool {
            false
        }
        pub(crate) fn wake_writer(_held: Held) {}
    }
}

use latch::{HybridLatch, Restart};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Runs `f` under loom with a small preemption bound (unless `LOOM_MAX_PREEMPTIONS` is set).
fn check(f: impl Fn() + Sync + Send + 'static) {
    check_with(3, f)
}

/// Like [`check`] with an explicit preemption bound. The latch spins up to 63 rounds
/// before it parks, and every spin round is a loom yield (a branch), so the branch limit
/// is raised above loom's default of 1000.
fn check_with(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder.max_branches = builder.max_branches.max(100_000);
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        sync::set_real_parking(false);
        f()
    });
    assert_explored(&runs);
}

/// A model that explores a single execution checks no interleaving: every model here must
/// make loom branch (the audit of issue 17 found four that did not).
fn assert_explored(runs: &std::sync::atomic::AtomicUsize) {
    let n = runs.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        n > 1,
        "the model explored {n} execution(s): it checks no interleaving"
    );
}

/// Runs `f` under loom with waiters that really sleep (see `sync::park`): a lost wake-up
/// leaves every thread blocked, which loom reports as a deadlock.
fn check_parking(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        sync::set_real_parking(true);
        f();
        sync::set_real_parking(false);
    });
    assert_explored(&runs);
}

/// A latch whose loom atomic is created now, on the current (model main) thread.
fn new_latch() -> HybridLatch {
    let latch = HybridLatch::new();
    assert_eq!(latch.version(), 0);
    assert!(!latch.is_exclusive());
    latch
}

/// (a) Two writers increment a plain counter under `exclusive()`: no lost update, and loom's
/// `UnsafeCell` reports any access that the latch failed to order.
#[test]
fn exclusive_writers_lose_no_update() {
    check(|| {
        struct Shared {
            latch: HybridLatch,
            counter: UnsafeCell<u64>,
        }
        // SAFETY (test): the counter is only accessed under the exclusive latch, which is
        // exactly what loom verifies.
        unsafe impl Sync for Shared {}

        let shared = Arc::new(Shared {
            latch: new_latch(),
            counter: UnsafeCell::new(0),
        });
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let s = shared.clone();
                thread::spawn(move || {
                    let _g = s.latch.exclusive();
                    s.counter.with_mut(|p| unsafe { *p += 1 });
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let _g = shared.latch.exclusive();
        assert_eq!(shared.counter.with(|p| unsafe { *p }), 2, "lost update");
        drop(_g);
        // Every exclusive release bumps the version exactly once.
        assert_eq!(shared.latch.version(), 3);
    });
}

/// Two values that a writer changes together under `exclusive()`, for the seqlock models.
struct Pair {
    latch: HybridLatch,
    a: AtomicU64,
    b: AtomicU64,
}

impl Pair {
    /// A pair `(0, 0)`, created on the model's main thread.
    fn new() -> Arc<Pair> {
        Arc::new(Pair {
            latch: new_latch(),
            a: AtomicU64::new(0),
            b: AtomicU64::new(0),
        })
    }

    /// Writes `(v, v)` under the exclusive latch, with Relaxed stores, as the tree writes
    /// plain bytes.
    fn write(&self, v: u64) {
        let _g = self.latch.exclusive();
        self.a.store(v, Ordering::Relaxed);
        self.b.store(v, Ordering::Relaxed);
    }

    /// Reads `a` then `b` (Relaxed), under whatever guard the caller holds.
    fn read(&self) -> (u64, u64) {
        (
            self.a.load(Ordering::Relaxed),
            self.b.load(Ordering::Relaxed),
        )
    }
}

/// (b) The seqlock property: an optimistic reader reads two values that a writer changes
/// together under `exclusive()`; whenever `validate()` succeeds, the pair is consistent.
///
/// This needs a release fence between the writer's exclusive CAS and its data writes (or
/// the reader may see new data together with the old version); without it loom finds a
/// torn pair here.
#[test]
fn optimistic_reader_validates_only_consistent_pairs() {
    check(|| {
        let shared = Pair::new();

        let w = shared.clone();
        let writer = thread::spawn(move || w.write(1));

        let guard = shared.latch.optimistic();
        let a = shared.a.load(Ordering::Relaxed);
        let b = shared.b.load(Ordering::Relaxed);
        if guard.validate().is_ok() {
            assert_eq!(a, b, "validate() succeeded after a torn read: a={a} b={b}");
        }
        writer.join().unwrap();
    });
}

/// An optimistic reader of `shared` that reads b first, then a (the opposite order of the
/// writes): a validated read saw a consistent pair.
fn read_backwards_and_validate(shared: &Pair) {
    let guard = shared.latch.optimistic();
    let b = shared.b.load(Ordering::Relaxed);
    let a = shared.a.load(Ordering::Relaxed);
    if guard.validate().is_ok() {
        assert_eq!(a, b, "validate() succeeded after a torn read: a={a} b={b}");
    }
}

/// (g) Owner mode (`contree/src/sync/owner.rs`): an owner that latches with plain stores
/// (no read-modify-write) still publishes its writes as a seqlock writer, so an optimistic
/// reader on another thread validates only consistent pairs, and the version counts every
/// write; the owner's shared acquisitions write nothing.
#[test]
fn owner_writes_keep_optimistic_readers_correct() {
    check(|| {
        let shared = Pair::new();
        let w = shared.clone();
        let writer = thread::spawn(move || {
            sync::set_owner(&w.latch as *const HybridLatch as usize);
            for v in 1..=2 {
                w.write(v);
            }
            drop(w.latch.shared());
            let g = w.latch.optimistic();
            drop(g.upgrade_exclusive().expect("nobody else writes"));
        });
        read_backwards_and_validate(&shared);
        writer.join().unwrap();
        assert_eq!(shared.latch.version(), 3);
        assert!(!shared.latch.is_exclusive());
    });
}

/// (b') The same property with two readers of one pair and a writer that writes it twice.
#[test]
fn optimistic_reader_two_writes() {
    check(|| {
        let shared = Pair::new();
        let w = shared.clone();
        let writer = thread::spawn(move || {
            for v in 1..=2 {
                w.write(v);
            }
        });
        read_backwards_and_validate(&shared);
        writer.join().unwrap();
        assert_eq!(shared.latch.version(), 2);
    });
}

/// (c) Shared holders and an exclusive holder exclude each other: a reader under `shared()`
/// and a writer under `exclusive()` access one `UnsafeCell`; loom flags any overlap, and the
/// reader must see the value unchanged while it holds the latch.
#[test]
fn shared_and_exclusive_exclude_each_other() {
    check(|| {
        struct Shared {
            latch: HybridLatch,
            data: UnsafeCell<u64>,
        }
        // SAFETY (test): what loom verifies.
        unsafe impl Sync for Shared {}

        let shared = Arc::new(Shared {
            latch: new_latch(),
            data: UnsafeCell::new(0),
        });
        let w = shared.clone();
        let writer = thread::spawn(move || {
            let _g = w.latch.exclusive();
            w.data.with_mut(|p| unsafe { *p += 1 });
            w.data.with_mut(|p| unsafe { *p += 1 });
        });

        {
            let _g = shared.latch.shared();
            let first = shared.data.with(|p| unsafe { *p });
            thread::yield_now();
            let second = shared.data.with(|p| unsafe { *p });
            assert_eq!(first, second, "value changed under a shared latch");
            assert!(first == 0 || first == 2, "saw a half-done write: {first}");
        }
        writer.join().unwrap();
        assert_eq!(
            shared.latch.version(),
            1,
            "shared latches must not bump the version"
        );
    });
}

/// (c') Shared holders do not exclude each other, and a waiting writer does not stop new
/// shared holders: the main thread holds a shared latch while a writer waits for it and a
/// second thread takes a shared latch and reads; the main thread waits for that reader
/// before it lets go (if the writer's wait blocked shared holders, loom reports a deadlock),
/// then the writer gets in.
#[test]
fn shared_holders_overlap() {
    check(|| {
        struct Shared {
            latch: HybridLatch,
            data: UnsafeCell<u64>,
        }
        // SAFETY (test): what loom verifies.
        unsafe impl Sync for Shared {}

        let shared = Arc::new(Shared {
            latch: new_latch(),
            data: UnsafeCell::new(7),
        });
        let held = shared.latch.shared();
        let s = shared.clone();
        let writer = thread::spawn(move || {
            let _x = s.latch.exclusive();
            s.data.with_mut(|p| unsafe { *p = 9 });
        });
        let s = shared.clone();
        let seen = thread::spawn(move || {
            let _g = s.latch.shared();
            s.data.with(|p| unsafe { *p })
        })
        .join()
        .unwrap();
        assert_eq!(seen, 7, "the writer got in beside a shared holder");
        assert_eq!(shared.data.with(|p| unsafe { *p }), 7);
        drop(held);
        writer.join().unwrap();
        let _g = shared.latch.shared();
        assert_eq!(shared.data.with(|p| unsafe { *p }), 9);
        assert_eq!(shared.latch.version(), 1);
    });
}

/// (d) `upgrade_exclusive()` succeeds only if no writer held the latch since the optimistic
/// snapshot: what the reader read before upgrading is still the current value.
#[test]
fn upgrade_fails_after_intervening_writer() {
    check(|| {
        struct Shared {
            latch: HybridLatch,
            data: AtomicU64,
        }
        let shared = Arc::new(Shared {
            latch: new_latch(),
            data: AtomicU64::new(0),
        });
        let w = shared.clone();
        let writer = thread::spawn(move || {
            let _g = w.latch.exclusive();
            w.data.store(1, Ordering::Relaxed);
        });

        let guard = shared.latch.optimistic();
        let seen = shared.data.load(Ordering::Relaxed);
        match guard.upgrade_exclusive() {
            Ok(g) => {
                // Under the exclusive latch the current value is visible (Acquire on the
                // CAS synchronises with the writer's release, if the writer came first).
                let now = shared.data.load(Ordering::Relaxed);
                assert_eq!(
                    seen, now,
                    "upgrade succeeded although a writer changed the data since the snapshot"
                );
                // Increment under our exclusive latch; the writer must not overlap.
                shared.data.store(now + 10, Ordering::Relaxed);
                drop(g);
            }
            Err(Restart) => {
                // A writer intervened: it holds the latch right now or it has released it
                // (then the version moved). Checked in this order: once the latch is seen
                // free after having been held, coherence guarantees the newer version.
                assert!(
                    shared.latch.is_exclusive() || shared.latch.version() >= 1,
                    "spurious Restart"
                );
            }
        }
        writer.join().unwrap();
        let fin = shared.data.load(Ordering::Relaxed);
        assert!(fin == 1 || fin == 11, "final value {fin}");
    });
}

/// (d') The other upgrades race a writer that changes a pair under `exclusive()`: whatever
/// the interleaving, `upgrade_shared` and `try_upgrade_exclusive` succeed only if the pair
/// read optimistically before them is consistent (they validate like `validate()`), and
/// while the upgraded guard is held the pair does not change. (Their deterministic cases
/// are unit tests in `contree/src/sync/latch_tests.rs`.)
#[test]
fn upgrades_validate_like_validate() {
    check(|| {
        let shared = Pair::new();
        let w = shared.clone();
        let writer = thread::spawn(move || w.write(1));

        let g = shared.latch.optimistic();
        let (a, b) = shared.read();
        if let Ok(held) = g.upgrade_shared() {
            assert_eq!(a, b, "upgrade_shared succeeded after a torn read");
            assert_eq!(
                shared.read(),
                (a, b),
                "the pair changed under a shared latch"
            );
            drop(held);
        }
        let g = shared.latch.optimistic();
        let (a, b) = shared.read();
        // Ok(None): a holder is inside (no wait); Err: a writer came in between.
        if let Ok(Some(x)) = g.try_upgrade_exclusive() {
            assert_eq!(a, b, "try_upgrade_exclusive succeeded after a torn read");
            assert_eq!(
                shared.read(),
                (a, b),
                "the pair changed under an exclusive latch"
            );
            drop(x);
        }
        writer.join().unwrap();
        assert_eq!(shared.read(), (1, 1));
    });
}

/// Shared state of the parking models.
struct Parked {
    latch: HybridLatch,
    data: UnsafeCell<u64>,
}
// SAFETY (test): `data` is only touched under the latch, which is what loom verifies.
unsafe impl Sync for Parked {}

/// The main thread holds the latch exclusively while `waiters` try to get it (true:
/// exclusive, false: shared), so they spin and go to sleep; then it releases. Everybody
/// must finish (loom reports a lost wake-up as a deadlock), and the sections never overlap.
fn parked_waiters_model(waiters: &'static [bool]) {
    let shared = Arc::new(Parked {
        latch: new_latch(),
        data: UnsafeCell::new(0),
    });
    let held = shared.latch.exclusive();
    let handles: Vec<_> = waiters
        .iter()
        .map(|&exclusive| {
            let s = shared.clone();
            thread::spawn(move || {
                // The waiters must really sleep, or the model checks no wake-up.
                assert!(sync::real_parking(), "a model thread does not park");
                if exclusive {
                    let _g = s.latch.exclusive();
                    s.data.with_mut(|p| unsafe { *p += 1 });
                    None
                } else {
                    let _g = s.latch.shared();
                    Some(s.data.with(|p| unsafe { *p }))
                }
            })
        })
        .collect();
    // Let the waiters run into the latch before it is released.
    thread::yield_now();
    shared.data.with_mut(|p| unsafe { *p += 10 });
    drop(held);
    for h in handles {
        if let Some(seen) = h.join().unwrap() {
            assert!(
                seen >= 10,
                "a shared waiter got in before the writer left: {seen}"
            );
        }
    }
    let writers = waiters.iter().filter(|&&x| x).count() as u64;
    let _g = shared.latch.shared();
    assert_eq!(shared.data.with(|p| unsafe { *p }), 10 + writers);
}

/// (e) No lost wake-up for a writer that sleeps while another writer holds the latch.
#[test]
fn parked_writer_is_woken() {
    check_parking(3, || parked_waiters_model(&[true]));
}

/// (e) No lost wake-up for a reader that sleeps while a writer holds the latch.
#[test]
fn parked_reader_is_woken() {
    check_parking(3, || parked_waiters_model(&[false]));
}

/// (e) Two sleepers, a writer and a reader: the first one woken must not leave the
/// other asleep (the `PARKED` bit is shared by all waiters of a latch).
#[test]
fn two_parked_waiters_are_woken() {
    check_parking(1, || parked_waiters_model(&[true, false]));
}

/// (e') No lost wake-up when the writer waits for shared holders to leave, including an
/// `upgrade_exclusive` that waits for them.
#[test]
fn parked_writer_is_woken_by_last_reader() {
    check_parking(2, || {
        let latch = Arc::new(new_latch());
        let s1 = latch.shared();
        let l = latch.clone();
        let upgrader = thread::spawn(move || {
            let g = l.optimistic();
            // Waits for the shared holder; nobody writes, so it must succeed.
            let x = g.upgrade_exclusive();
            assert!(x.is_ok(), "upgrade failed although nobody wrote");
        });
        let l = latch.clone();
        let reader = thread::spawn(move || {
            let _s2 = l.shared();
        });
        drop(s1);
        upgrader.join().unwrap();
        reader.join().unwrap();
        assert_eq!(latch.version(), 1);
        assert!(!latch.is_exclusive());
    });
}

/// The blob heap's shared state in the models of (f): a leaf whose latch guards the stub
/// (the slot it names, or `NONE`), and a heap page whose latch guards chunk moves, with its
/// slot offsets and four data cells (a chunk is two cells). Heap changes (packs, frees,
/// allocations) are serialised by `mutex`, as by the tree's heap mutex.
struct Heap {
    leaf: HybridLatch,
    stub: AtomicU64,
    page: HybridLatch,
    slot: AtomicU64,
    cells: [AtomicU64; 4],
    mutex: loom::sync::Mutex<bool>,
}

const NONE: u64 = u64::MAX;

impl Heap {
    /// Slot 0 at cells 0..2 holding the chunk `(7, 7)`, named by the leaf.
    fn new() -> Arc<Heap> {
        Arc::new(Heap {
            leaf: new_latch(),
            stub: AtomicU64::new(0),
            page: new_latch(),
            slot: AtomicU64::new(0),
            cells: [7, 7, 0, 0].map(AtomicU64::new),
            mutex: loom::sync::Mutex::new(false),
        })
    }

    /// An optimistic read of the chunk the leaf names, as `heap::read` under a leaf read:
    /// `Some(cells)` only if both latches validate.
    fn read(&self) -> Option<(u64, u64)> {
        let leaf = self.leaf.optimistic();
        if self.stub.load(Ordering::Relaxed) == NONE {
            return None;
        }
        let page = self.page.try_optimistic()?;
        let off = self.slot.load(Ordering::Relaxed) as usize;
        if off > 2 {
            return None; // bounds-checked: a garbage offset restarts
        }
        let a = self.cells[off].load(Ordering::Relaxed);
        let b = self.cells[off + 1].load(Ordering::Relaxed);
        page.validate().ok()?;
        leaf.validate().ok()?;
        Some((a, b))
    }

    /// Reads the chunk the leaf names: a read that validates saw `(7, 7)`, whatever `what`
    /// (the other thread's change) did meanwhile.
    fn read_sees_the_first_chunk(&self, what: &str) {
        if let Some(cells) = self.read() {
            assert_eq!(
                cells,
                (7, 7),
                "a validated read saw a chunk changed by {what}"
            );
        }
    }
}

/// (f) A pack moves the chunk to cells 2..4 under the page's latch: a reader that validates
/// saw it whole, at either place.
#[test]
fn heap_reader_never_accepts_a_chunk_torn_by_a_pack() {
    check(|| {
        let heap = Heap::new();
        let h = heap.clone();
        let packer = thread::spawn(move || {
            let _m = h.mutex.lock().unwrap();
            let _x = h.page.exclusive();
            for i in 0..2 {
                let v = h.cells[i].load(Ordering::Relaxed);
                h.cells[2 + i].store(v, Ordering::Relaxed);
            }
            h.slot.store(2, Ordering::Relaxed);
            // The old cells are free space now: a later chunk may take them.
            h.cells[0].store(9, Ordering::Relaxed);
        });
        heap.read_sees_the_first_chunk("a pack");
        packer.join().unwrap();
    });
}

/// (f') The stub leaves the leaf under its latch and the chunk is freed after the unlatch;
/// another thread then allocates the freed bytes and writes `(9, 9)` after a release fence.
/// A reader that validates both latches saw the old chunk whole.
#[test]
fn heap_reader_never_accepts_a_freed_and_reused_chunk() {
    check(|| {
        let heap = Heap::new();
        let h = heap.clone();
        let remover = thread::spawn(move || {
            {
                let _x = h.leaf.exclusive();
                h.stub.store(NONE, Ordering::Relaxed);
            }
            *h.mutex.lock().unwrap() = true; // the chunk is free
        });
        let h = heap.clone();
        let reuser = thread::spawn(move || {
            let free = h.mutex.lock().unwrap();
            if *free {
                loom::sync::atomic::fence(Ordering::Release);
                h.cells[0].store(9, Ordering::Relaxed);
                h.cells[1].store(9, Ordering::Relaxed);
            }
        });
        heap.read_sees_the_first_chunk("a reuse");
        remover.join().unwrap();
        reuser.join().unwrap();
    });
}
