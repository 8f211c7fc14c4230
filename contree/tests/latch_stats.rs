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
use contree::{Config, Tree};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn bump(v: &mut [u8]) {
    let n = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
    v[..8].copy_from_slice(&n.to_le_bytes());
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
    let turn = Mutex::new(0usize);
    std::thread::scope(|s| {
        for me in 0..2 {
            let (tree, turn) = (&tree, &turn);
            s.spawn(move || {
                let mut done = 0;
                while done < rounds / 2 {
                    let mut t = turn.lock().unwrap();
                    if *t % 2 != me {
                        drop(t);
                        std::thread::yield_now();
                        continue;
                    }
                    tree.update_with(&key(me as u32 * 7), bump).unwrap();
                    *t += 1;
                    done += 1;
                }
            });
        }
    });
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
    let turn = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    std::thread::scope(|s| {
        for me in 0..2usize {
            let (tree, turn) = (&tree, &turn);
            s.spawn(move || {
                for r in (me..rounds).step_by(2) {
                    while turn.load(Ordering::Acquire) != r {
                        assert!(Instant::now() < deadline, "turn {r} never came");
                        std::thread::yield_now();
                    }
                    tree.update_with(&key(me as u32 * 7), |v| {
                        bump(v);
                        turn.store(r + 1, Ordering::Release);
                        if r + 1 < rounds {
                            std::thread::sleep(Duration::from_millis(3));
                        }
                    })
                    .unwrap();
                }
            });
        }
    });
    let stats = tree.stats();
    assert!(stats.latch_slow_paths as usize >= rounds / 2, "{stats:?}");
    assert_eq!(stats.latch_handoffs, rounds as u64, "{stats:?}");
    for me in 0..2 {
        let v = tree.get(&key(me * 7)).unwrap();
        assert_eq!(
            u64::from_le_bytes(v[..8].try_into().unwrap()),
            rounds as u64 / 2
        );
    }
}
