//! Eunomia's two phases for point reads (`Config::leaf_phase_restarts`,
//! `src/engine/phases.rs`): a read whose leaf changed under it runs only its leaf phase
//! again, unless the tree's structure changed; the two kinds of restart are counted apart.
//! (The Shuttle models check the protocol against splits, merges and XMerge: a leaf phase
//! run again on a leaf that no longer holds the key fails them.)

use contree::{Config, Stats, Tree};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

const KEYS: u64 = 64;

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A 16-byte value: `n` twice, so that a read of a torn copy shows as halves that differ.
fn value(n: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&n.to_le_bytes());
    v[8..].copy_from_slice(&n.to_le_bytes());
    v
}

/// Two writers rewrite the values of 64 keys (one leaf) in place while two readers read
/// them, until the readers have run `reads` reads and `enough` holds of the tree's stats
/// (or 10 s passed). Every value read must be one written. Returns the tree and its stats
/// before the threads started.
fn readers_beside_writers(
    config: Config,
    reads: u64,
    enough: fn(&Stats) -> bool,
) -> (Arc<Tree>, Stats) {
    let tree = Arc::new(Tree::with_config(config).unwrap());
    for i in 0..KEYS {
        tree.insert(&key(i), &value(0)).unwrap();
    }
    // Keys above the 64, so that the root is an inner node and writers wait for the leaf's
    // latch (a writer that finds the root leaf's latch taken restarts instead).
    for i in 0..1_000 {
        tree.insert(&key(1 << 32 | i), &value(0)).unwrap();
    }
    let loaded = tree.stats();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(4));
    let mut handles = Vec::new();
    for w in 0..2u64 {
        let (tree, stop, start) = (tree.clone(), stop.clone(), start.clone());
        handles.push(thread::spawn(move || {
            start.wait();
            let mut n = w;
            while !stop.load(Ordering::Relaxed) {
                n += 2;
                tree.insert(&key(n % KEYS), &value(n)).unwrap();
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (tree, start) = (tree.clone(), start.clone());
            thread::spawn(move || {
                start.wait();
                let mut done = 0u64;
                let mut i = r;
                while Instant::now() < deadline && (done < reads || !enough(&tree.stats())) {
                    for _ in 0..1000 {
                        i = i
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let k = (i >> 33) % KEYS;
                        let v = tree.get(&key(k)).expect("every key is present");
                        assert_eq!(v[..8], v[8..], "torn value {v:?}");
                        let n = u64::from_le_bytes(v[..8].try_into().unwrap());
                        assert!(
                            n == 0 || n % KEYS == k,
                            "value {n} never written to key {k}"
                        );
                    }
                    done += 1000;
                }
            })
        })
        .collect();
    for h in readers {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().unwrap();
    }
    tree.check_invariants().unwrap();
    (tree, loaded)
}

#[test]
fn reads_failed_by_writers_rerun_only_their_leaf_phase() {
    // Contention Split off: the 64 keys stay in one leaf, the tree's structure never
    // changes, so no failed leaf phase has a reason to go back to the root. Leaf combining
    // off: a writer that hands its insert to the latch holder counts a restart of its own
    // (`Stats::restarts` counts every operation's), which would hide the readers'.
    let config = Config {
        contention_split: false,
        combining: false,
        ..Config::default()
    };
    let (tree, loaded) = readers_beside_writers(config, 200_000, |s| s.leaf_restarts > 0);
    let s = tree.stats();
    assert!(
        s.leaf_restarts > 0,
        "no read met a writer of its leaf in 10 s: {s:?}"
    );
    // The structure did not change while the threads ran, so every failed leaf phase was
    // run again in place (only a read that failed eight times in a row on the same leaf
    // goes back to the root).
    assert_eq!(s.splits + s.merges, loaded.splits + loaded.merges);
    assert!(
        s.restarts * 8 <= s.leaf_restarts,
        "restarts from the root {} against leaf phases run again {}",
        s.restarts,
        s.leaf_restarts
    );
}

#[test]
fn switched_off_every_failed_read_restarts_from_the_root() {
    let config = Config {
        leaf_phase_restarts: false,
        ..Config::default()
    };
    let (tree, _) = readers_beside_writers(config, 200_000, |s| s.restarts > 0);
    let s = tree.stats();
    assert!(
        s.restarts > 0,
        "no read met a writer of its leaf in 10 s: {s:?}"
    );
    assert_eq!(s.leaf_restarts, 0);
}

/// Reads beside inserts that split the leaves under them: a read whose leaf split must
/// descend again (the key moved to another page) and still find every key.
#[test]
fn reads_across_splits_find_every_key() {
    let tree = Arc::new(Tree::new());
    let present = 2_000u64;
    for i in 0..present {
        tree.insert(&key(i * 2), &value(i * 2)).unwrap();
    }
    let writer = {
        let tree = tree.clone();
        thread::spawn(move || {
            for i in 0..present * 4 {
                // Odd keys between the present ones, and beyond them: splits everywhere.
                tree.insert(&key(i * 2 + 1), &value(i * 2 + 1)).unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let tree = tree.clone();
            thread::spawn(move || {
                for round in 0..20u64 {
                    for i in 0..present {
                        let k = ((i * 7919 + round + r) % present) * 2;
                        let v = tree.get(&key(k)).expect("a present key went missing");
                        assert_eq!(v, value(k));
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for h in readers {
        h.join().unwrap();
    }
    tree.check_invariants().unwrap();
    assert!(tree.stats().splits > 0);
}
