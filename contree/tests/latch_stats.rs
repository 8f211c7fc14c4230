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

/// The process-wide acquisition counters see every test of this binary: the tests run one
/// at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _serial = serial();
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
    let _serial = serial();
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
    let _serial = serial();
    let _watchdog = watchdog("forced_waits_are_counted", Duration::from_secs(300));
    let tree = one_leaf();
    let rounds = 200;
    forced_waits(&tree, [0, 7], rounds, Duration::from_millis(3));
    let stats = tree.stats();
    assert!(stats.latch_slow_paths as usize >= rounds / 2, "{stats:?}");
    assert_eq!(stats.latch_handoffs, rounds as u64, "{stats:?}");
    assert_eq!([count(&tree, 0), count(&tree, 7)], [rounds as u64 / 2; 2]);
}

/// The thread-per-core executor's workers latch their partitions in owner mode: no atomic
/// acquisition at all, but for the partition table when a partition's root grows (a few
/// times in 20 000 inserts), while a shared tree takes one per insert.
#[test]
fn executor_workers_take_no_atomic_latch() {
    let _serial = serial();
    let ops = 20_000u64;
    let boundaries = vec![(ops / 2).to_be_bytes().to_vec()];
    let exec = contree::Executor::with_config(contree::ExecutorConfig {
        workers: 2,
        boundaries,
        // No slices by a rebalancer thread, which latches atomically.
        rebalance: None,
        ..Default::default()
    })
    .unwrap();
    let mut client = exec.client();
    let before = contree::latch_acquisitions();
    for chunk in (0..ops).collect::<Vec<_>>().chunks(64) {
        let batch = chunk
            .iter()
            .map(|&i| contree::Op::Insert(key_u64(i * 7919 % ops).into(), b"v".into()))
            .collect();
        assert!(client.execute(batch).iter().all(|r| r.is_ok()));
    }
    let after = contree::latch_acquisitions();
    let (atomic, owner) = (after.atomic - before.atomic, after.owner - before.owner);
    assert!(owner >= ops, "owner acquisitions {owner}");
    assert!(atomic <= 8, "atomic acquisitions {atomic} in {ops} inserts");

    let tree = Tree::new();
    let before = contree::latch_acquisitions();
    for i in 0..ops {
        tree.insert(&key_u64(i * 7919 % ops), b"v").unwrap();
    }
    let after = contree::latch_acquisitions();
    assert!(after.atomic - before.atomic >= ops);
    assert_eq!(after.owner, before.owner);
}

fn key_u64(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}
