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
