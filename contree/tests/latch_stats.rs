//! The `latch-stats` feature: `Stats::latch_slow_paths` counts exclusive leaf-latch
//! acquisitions that waited, `Stats::latch_handoffs` those whose previous holder was
//! another thread. Exact counts where the schedule is forced (one thread; strict turns),
//! lower bounds where a thread is made to wait (it holds the latch inside `update_with`).
//!
//! Run (part of `scripts/test.sh`):
//! `cargo test -p contree --release --features latch-stats --test latch_stats`.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
#[path = "support/turns.rs"]
mod turns;
use contree::{Config, Tree};
use std::time::Duration;
use turns::{bump, count, forced_waits, key, strict_turns};

/// A tree of one leaf with keys `0..200`, Contention Split off (so the leaf stays one).
fn one_leaf() -> Tree {
    let tree = Tree::with_config(Config {
        contention_split: false,
        ..Config::default()
    })
    .unwrap();
    for i in 0..200 {
        tree.insert(&key(i), &0u64.to_le_bytes()).unwrap();
    }
    assert_eq!(tree.stats().leaf_pages, 1);
    tree
}

#[test]
fn one_thread_never_waits_nor_hands_off() {
    let tree = one_leaf();
    for i in 0..1000 {
        tree.update_with(&key(i % 200), bump).unwrap();
    }
    let stats = tree.stats();
    assert_eq!(stats.latch_slow_paths, 0, "{stats:?}");
    assert_eq!(stats.latch_handoffs, 0, "{stats:?}");
}

/// Two threads take strict turns: every update follows one by the other thread (the first
/// follows the main thread's inserts), and none waits.
#[test]
fn strict_turns_hand_off_every_time_without_waiting() {
    let _watchdog = watchdog(
        "strict_turns_hand_off_every_time_without_waiting",
        Duration::from_secs(300),
    );
    let tree = one_leaf();
    let rounds = 200;
    strict_turns(&tree, [0, 7], rounds);
    let stats = tree.stats();
    assert_eq!(stats.latch_slow_paths, 0, "{stats:?}");
    assert_eq!(stats.latch_handoffs, rounds as u64, "{stats:?}");
}

/// Each thread hands the turn over from inside its update and holds the latch a moment,
/// so the other one's update finds it taken: most acquisitions wait and follow the other
/// thread.
#[test]
fn forced_waits_are_counted() {
    let _watchdog = watchdog("forced_waits_are_counted", Duration::from_secs(300));
    let tree = one_leaf();
    let rounds = 200;
    forced_waits(&tree, [0, 7], rounds, Duration::from_millis(3));
    let stats = tree.stats();
    assert!(stats.latch_slow_paths as usize >= rounds / 2, "{stats:?}");
    assert_eq!(stats.latch_handoffs, rounds as u64, "{stats:?}");
    assert_eq!([count(&tree, 0), count(&tree, 7)], [rounds as u64 / 2; 2]);
}
