//! The deterministic cases of the hybrid latch's upgrades and non-waiting acquisitions, on
//! the library's own atomics. (The interleavings are loom's: `tests/loom_latch.rs`, which
//! compiles `latch.rs` alone, so these tests live beside it rather than in it.)

use super::latch::{HybridLatch, Restart};
use super::parking::UNPARK_CALLS;
use std::time::Duration;

/// An uncontended release wakes nobody: no call into the parking lot (found by mutation
/// testing: a release that always called `unpark_all` passed every other test). A release
/// with a parked waiter wakes it.
#[test]
fn releases_unpark_only_when_a_thread_is_parked() {
    let unparks = || UNPARK_CALLS.with(|c| c.get());
    let latch = HybridLatch::new();
    let before = unparks();
    for _ in 0..3 {
        drop(latch.exclusive());
        drop(latch.shared());
        let s = latch.shared();
        drop(latch.shared());
        drop(s);
        drop(latch.optimistic().upgrade_exclusive().unwrap());
    }
    assert_eq!(
        unparks(),
        before,
        "an uncontended release called unpark_all"
    );

    let x = latch.exclusive();
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| drop(latch.exclusive()));
        // The waiter spins a few rounds, then parks; wait until it has.
        while !waiter.is_finished() && !latch.has_parked() {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(x);
    });
    assert_eq!(
        unparks(),
        before + 1,
        "the release did not wake the parked waiter"
    );
}

/// Each guard tells whether its acquisition waited (contention detection is built on it):
/// not when the latch was free, yes when a writer held it (found by mutation testing: a
/// shared guard that always reported a wait passed every other test).
#[test]
fn guards_report_whether_they_waited() {
    let latch = HybridLatch::new();
    assert!(!latch.shared().slow_path());
    assert!(!latch.exclusive().slow_path());
    for shared in [true, false] {
        let x = latch.exclusive();
        let waited = std::thread::scope(|scope| {
            let waiter = scope.spawn(|| match shared {
                true => latch.shared().slow_path(),
                false => latch.exclusive().slow_path(),
            });
            while !latch.has_parked() {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(x);
            waiter.join().unwrap()
        });
        assert!(
            waited,
            "a {} acquisition behind a writer did not report its wait",
            if shared { "shared" } else { "exclusive" }
        );
    }
}

#[test]
fn upgrade_exclusive_fails_after_a_writer_and_bumps_the_version() {
    let latch = HybridLatch::new();
    let g = latch.optimistic();
    drop(latch.exclusive());
    assert_eq!(g.upgrade_exclusive().err(), Some(Restart));
    assert_eq!(latch.version(), 1);

    let g = latch.optimistic();
    let x = g.upgrade_exclusive().expect("no writer intervened");
    assert!(latch.is_exclusive());
    drop(x);
    assert_eq!(latch.version(), 2);

    // A shared holder does not change the version: the snapshot stays valid.
    let g = latch.optimistic();
    drop(latch.shared());
    assert!(g.validate().is_ok());
    assert!(g.upgrade_exclusive().is_ok());
    assert_eq!(latch.version(), 3);
}

#[test]
fn shared_and_try_upgrades() {
    let latch = HybridLatch::new();
    // upgrade_shared: fails after a writer, succeeds otherwise, and blocks writers.
    let g = latch.optimistic();
    drop(latch.exclusive());
    assert_eq!(g.upgrade_shared().err(), Some(Restart));
    let g = latch.optimistic();
    let s = g.upgrade_shared().expect("no writer intervened");
    assert!(
        latch.try_exclusive().is_none(),
        "exclusive beside a shared holder"
    );
    assert!(
        latch.try_optimistic().is_some(),
        "a shared holder blocks optimistic reads"
    );
    // try_upgrade_exclusive: no wait while a shared holder is inside.
    let g = latch.optimistic();
    assert!(matches!(g.try_upgrade_exclusive(), Ok(None)));
    drop(s);
    let g = latch.optimistic();
    let x = g.try_upgrade_exclusive().expect("unchanged").expect("free");
    assert!(
        latch.try_optimistic().is_none(),
        "optimistic beside a writer"
    );
    assert!(latch.try_exclusive().is_none());
    drop(x);
    let g = latch.optimistic();
    drop(latch.exclusive());
    assert_eq!(g.try_upgrade_exclusive().err(), Some(Restart));
    assert_eq!(latch.version(), 3);
}

/// An inflated latch (`sync::cohort`) on a heap allocation of its own, whose slot goes back
/// when the test ends.
struct Inflated(Box<HybridLatch>);

impl Inflated {
    fn new() -> Inflated {
        let latch = Box::new(HybridLatch::new());
        let x = latch.exclusive();
        assert!(HybridLatch::inflate(&x), "a free slot");
        assert!(!HybridLatch::inflate(&x), "inflated once");
        drop(x);
        assert!(latch.is_cohort());
        Inflated(latch)
    }
}

impl Drop for Inflated {
    fn drop(&mut self) {
        let addr = &*self.0 as *const HybridLatch as usize;
        super::cohort::forget_range(addr, 8);
    }
}

/// A cohort latch excludes as the one-word latch does: writers on four nodes (lanes)
/// increment a plain counter without losing an update, shared holders (counted in their
/// lanes) never see a writer inside, optimistic readers validate only consistent pairs,
/// and a same-node waiter is passed the latch while it is held (the version moves on,
/// the word stays exclusive).
#[test]
fn a_cohort_latch_excludes_across_lanes_and_passes_within_one() {
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    struct Shared(UnsafeCell<(u64, u64)>);
    // SAFETY: the test reads and writes the cell only as the latch allows (plain accesses
    // under the exclusive or shared latch; optimistic reads copy and validate).
    unsafe impl Sync for Shared {}
    let latch = Inflated::new();
    let latch = &*latch.0;
    let data = Shared(UnsafeCell::new((0, 0)));
    let inside = AtomicBool::new(false);
    let validated = AtomicU64::new(0);
    const WRITERS: usize = 8;
    const ROUNDS: u64 = 2_000;
    std::thread::scope(|scope| {
        for t in 0..WRITERS {
            let (data, inside) = (&data, &inside);
            scope.spawn(move || {
                super::cohort::set_node(t % 4);
                for _ in 0..ROUNDS {
                    let x = latch.exclusive();
                    assert!(!inside.swap(true, Ordering::Relaxed), "two holders");
                    // SAFETY: under the exclusive latch.
                    unsafe {
                        let d = &mut *data.0.get();
                        d.0 += 1;
                        d.1 = d.0 * 2;
                    }
                    inside.store(false, Ordering::Relaxed);
                    drop(x);
                }
            });
        }
        for t in 0..2 {
            let (data, inside, validated) = (&data, &inside, &validated);
            scope.spawn(move || {
                super::cohort::set_node(t);
                for _ in 0..ROUNDS {
                    let s = latch.shared();
                    assert!(!inside.load(Ordering::Relaxed), "a writer beside a reader");
                    // SAFETY: under the shared latch.
                    let (a, b) = unsafe { *data.0.get() };
                    assert_eq!(b, a * 2);
                    drop(s);
                    let g = latch.optimistic();
                    // SAFETY: a racy copy of plain integers, validated before use.
                    let (a, b) = unsafe { std::ptr::read_volatile(data.0.get()) };
                    if g.validate().is_ok() {
                        assert_eq!(b, a * 2, "a validated torn read");
                        validated.fetch_add(1, Ordering::Relaxed);
                    }
                    if let Ok(s) = latch.optimistic().upgrade_shared() {
                        assert!(!inside.load(Ordering::Relaxed));
                        drop(s);
                    }
                }
            });
        }
    });
    // SAFETY: every thread has ended.
    assert_eq!(unsafe { (*data.0.get()).0 }, WRITERS as u64 * ROUNDS);
    assert!(validated.load(Ordering::Relaxed) > 0);
    assert!(!latch.is_exclusive());

    // A pass: a holder that took the latch through its lane releases it with a writer of
    // the same lane queued; the word stays exclusive (the version moves on) and the waiter
    // is handed it. W1 queues first and waits for the word, W2 queues behind it on the lane.
    let before = latch.version();
    let x0 = latch.exclusive();
    std::thread::scope(|scope| {
        let w1 = scope.spawn(|| {
            super::cohort::set_node(2);
            let x = latch.exclusive();
            std::thread::sleep(Duration::from_millis(60));
            drop(x);
        });
        std::thread::sleep(Duration::from_millis(30));
        let w2 = scope.spawn(|| {
            super::cohort::set_node(2);
            let x = latch.exclusive();
            let passes = super::cohort::passes(latch as *const HybridLatch as usize);
            drop(x);
            passes
        });
        std::thread::sleep(Duration::from_millis(30));
        drop(x0);
        w1.join().unwrap();
        assert_eq!(w2.join().unwrap(), 1, "W1 passed the latch to W2");
    });
    assert_eq!(latch.version(), before + 3);
    assert!(!latch.is_exclusive());
    super::cohort::set_node(2);
    assert_eq!(
        super::cohort::passes(latch as *const HybridLatch as usize),
        0,
        "a release to all ends the run"
    );
    super::cohort::set_node(0);
}

/// Non-waiting acquisitions of a cohort latch back out while a shared holder is counted in
/// a lane; a page whose latch is inflated keeps its memory.
#[test]
fn a_cohort_latch_refuses_try_acquisitions_beside_readers_and_retirement() {
    let latch = Inflated::new();
    let latch = &*latch.0;
    let s = latch.shared();
    assert!(latch.try_exclusive().is_none());
    assert!(latch.optimistic().try_upgrade_exclusive().is_err() || !latch.is_exclusive());
    assert!(latch.try_retire().is_none());
    assert!(!latch.is_exclusive(), "backed out");
    drop(s);
    assert!(latch.try_exclusive().is_some());
    assert!(
        latch.try_retire().is_none(),
        "an inflated latch is not retired"
    );
    assert!(!latch.is_exclusive());
    assert!(latch.renew(0) && latch.is_cohort(), "renewal keeps the bit");
}

/// Renewal (a page handed out again, or for the first time) moves the version past the
/// floor and past the word: from a zeroed word (fresh memory) and from a used one; a
/// snapshot from before fails validation; a latched word is refused and left alone.
#[test]
fn renewal_moves_the_version_past_the_floor_and_the_word() {
    // A floor: the raw word of a latch at version 5 (`version()` counts in units of
    // 2^18, the version's lowest bit).
    let floor = 5u64 << 18;
    let fresh = HybridLatch::new();
    assert!(fresh.renew(floor));
    assert_eq!(fresh.version(), 6, "one past the floor");
    let used = HybridLatch::new();
    for _ in 0..9 {
        drop(used.exclusive());
    }
    let before = used.optimistic();
    assert!(used.renew(floor));
    assert_eq!(used.version(), 10, "one past the word, above the floor");
    assert!(before.validate().is_err());
    let zero = HybridLatch::new();
    assert!(zero.renew(0));
    assert_eq!(zero.version(), 1, "a fresh page never shows version 0");
    let x = used.exclusive();
    assert!(!used.renew(0), "a latched word is refused");
    drop(x);
    assert_eq!(
        used.version(),
        11,
        "and left alone: only the release moved it"
    );
}
