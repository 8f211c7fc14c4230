//! Two threads updating one key each of a leaf, in turns: handed over between updates (so
//! neither ever finds the leaf latch taken), or handed over from inside the update while
//! the latch is held (so the other one always finds it taken). For the tests of contention
//! detection and of the `latch-stats` counters.

#![allow(dead_code)]

use contree::Tree;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Key `i`: `key00000` and on, in order.
pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Adds one to the little-endian counter in the first 8 bytes.
pub fn bump(v: &mut [u8]) {
    let n = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
    v[..8].copy_from_slice(&n.to_le_bytes());
}

/// The counter of key `i`.
pub fn count(tree: &Tree, i: u32) -> u64 {
    u64::from_le_bytes(tree.get(&key(i)).unwrap()[..8].try_into().unwrap())
}

/// `rounds` updates in all, thread 0 bumping `keys[0]` and thread 1 `keys[1]` in strict
/// turns: a mutex hands the turn over after each update, so no update waits on the latch.
pub fn strict_turns(tree: &Tree, keys: [u32; 2], rounds: usize) {
    let turn = Mutex::new(0usize);
    std::thread::scope(|s| {
        for (me, k) in keys.into_iter().enumerate() {
            let turn = &turn;
            s.spawn(move || {
                let mut done = 0;
                while done < rounds.div_ceil(2) - me * (rounds % 2) {
                    let mut t = turn.lock().unwrap();
                    if *t % 2 != me {
                        drop(t);
                        std::thread::yield_now();
                        continue;
                    }
                    tree.update_with(&key(k), bump).unwrap();
                    *t += 1;
                    done += 1;
                }
            });
        }
    });
}

/// `rounds` updates in all, in turns as in [`strict_turns`], but each thread hands the turn
/// over from inside its update and keeps the leaf latch for `hold`, so the other thread's
/// update runs into the latch and waits.
pub fn forced_waits(tree: &Tree, keys: [u32; 2], rounds: usize, hold: Duration) {
    let turn = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(60);
    std::thread::scope(|s| {
        for (me, k) in keys.into_iter().enumerate() {
            let turn = &turn;
            s.spawn(move || {
                for r in (me..rounds).step_by(2) {
                    while turn.load(Ordering::Acquire) != r {
                        assert!(Instant::now() < deadline, "turn {r} never came");
                        std::thread::yield_now();
                    }
                    tree.update_with(&key(k), |v| {
                        bump(v);
                        turn.store(r + 1, Ordering::Release);
                        if r + 1 < rounds {
                            std::thread::sleep(hold);
                        }
                    })
                    .unwrap();
                }
            });
        }
    });
}
