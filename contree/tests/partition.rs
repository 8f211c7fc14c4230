//! `PartitionedTree`: slice and meld against a `BTreeMap` oracle (single-threaded, with
//! small pages for deep partitions, long keys and out-of-line values), concurrently with
//! writers, readers and scanners, their cost in pages, and bad input.
//!
//! Run: `cargo test -p contree --test partition`.

use contree::{Config, Error, PartitionedTree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};

fn config(page_size: usize) -> Config {
    Config {
        page_size,
        space_manager: false,
        ..Config::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

/// Compares the whole tree with the oracle, both ways, and checks its structure.
fn same(tree: &PartitionedTree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), oracle.len());
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree
        .range(..)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "contents differ from the oracle");
    let back: Vec<Vec<u8>> = tree.range(..).rev().map(|(k, _)| k.to_vec()).collect();
    assert!(back.iter().rev().eq(oracle.keys()), "backward scan differs");
}

/// Random inserts, removals, slices and melds; every key of the tree is checked after each
/// repartitioning, and the boundaries against a set.
fn oracle_run(seed: u64, page_size: usize, value_len: impl Fn(&mut StdRng) -> usize, long: bool) {
    let tree = PartitionedTree::with_config(config(page_size)).unwrap();
    let mut oracle = BTreeMap::new();
    let mut bounds = BTreeSet::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let make_key = |rng: &mut StdRng| -> Vec<u8> {
        let mut k = key(rng.gen_range(0..20_000));
        if long && rng.gen_bool(0.2) {
            k.extend(std::iter::repeat_n(b'x', rng.gen_range(1..300)));
        }
        k
    };
    for round in 0..60 {
        for _ in 0..400 {
            let k = make_key(&mut rng);
            if rng.gen_bool(0.7) {
                let v = vec![round as u8; value_len(&mut rng)];
                assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
            } else {
                assert_eq!(tree.remove(&k), oracle.remove(&k));
            }
        }
        if rng.gen_bool(0.6) || bounds.is_empty() {
            let at = key(rng.gen_range(0..20_000));
            let r = tree.slice(&at);
            if bounds.insert(at.clone()) {
                r.unwrap();
            } else {
                assert!(matches!(r, Err(Error::BoundaryExists { .. })));
            }
        } else {
            let i = rng.gen_range(0..bounds.len());
            let at = bounds.iter().nth(i).unwrap().clone();
            tree.meld(&at).unwrap();
            bounds.remove(&at);
        }
        assert_eq!(
            tree.boundaries(),
            bounds.iter().cloned().collect::<Vec<_>>()
        );
        assert_eq!(tree.partitions(), bounds.len() + 1);
        same(&tree, &oracle);
    }
    // Everything melded back into one partition.
    for at in bounds.iter() {
        tree.meld(at).unwrap();
    }
    assert_eq!(tree.partitions(), 1);
    same(&tree, &oracle);
    // And emptied.
    for k in oracle.keys() {
        assert!(tree.remove(k).is_some());
    }
    tree.check_invariants().unwrap();
    assert!(tree.is_empty());
}

#[test]
fn slices_and_melds_match_the_oracle_in_deep_trees() {
    oracle_run(1, 512, |_| 8, false);
}

#[test]
fn slices_and_melds_match_the_oracle_with_long_keys_and_values() {
    oracle_run(
        2,
        4096,
        |rng| if rng.gen_bool(0.1) { 3000 } else { 20 },
        true,
    );
}

#[test]
fn slices_and_melds_match_the_oracle_with_many_partitions() {
    let tree = PartitionedTree::with_config(config(512)).unwrap();
    let mut oracle = BTreeMap::new();
    for i in (0..30_000u64).step_by(3) {
        tree.insert(&key(i), &i.to_le_bytes()).unwrap();
        oracle.insert(key(i), i.to_le_bytes().to_vec());
    }
    // Slices at keys that are separators, entries and neither, in every order.
    let mut rng = StdRng::seed_from_u64(3);
    let mut bounds = BTreeSet::new();
    for _ in 0..200 {
        let at = key(rng.gen_range(0..30_000));
        match tree.slice(&at) {
            Ok(()) => assert!(bounds.insert(at)),
            Err(Error::BoundaryExists { .. }) => assert!(bounds.contains(&at)),
            Err(Error::TooManyPartitions { partitions }) => {
                assert_eq!(partitions, bounds.len() + 1);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    same(&tree, &oracle);
    // Writes into every partition grow and shrink their roots in the table's slots.
    for i in (1..30_000u64).step_by(3) {
        tree.insert(&key(i), b"new").unwrap();
        oracle.insert(key(i), b"new".to_vec());
    }
    same(&tree, &oracle);
    for i in (0..30_000u64).step_by(2) {
        assert_eq!(tree.remove(&key(i)), oracle.remove(&key(i)));
    }
    same(&tree, &oracle);
    let stats = tree.stats();
    assert_eq!(stats.partitions, bounds.len() + 1);
    let all: Vec<Vec<u8>> = bounds.iter().cloned().collect();
    for (n, at) in all.iter().enumerate() {
        if n % 2 == 0 {
            tree.meld(at).unwrap();
            bounds.remove(at);
        }
    }
    assert_eq!(
        tree.boundaries(),
        bounds.iter().cloned().collect::<Vec<_>>()
    );
    same(&tree, &oracle);
    tree.compact();
    same(&tree, &oracle);
}

/// Slice and meld change pages on one path: O(height), whatever the partition holds.
#[test]
fn slice_and_meld_write_a_few_pages_per_level() {
    let tree = PartitionedTree::with_config(config(4096)).unwrap();
    for i in 0..200_000u64 {
        tree.insert(&key(i), b"value").unwrap();
    }
    let height = tree.stats().height as u64;
    assert!(height >= 3);
    let before = tree.stats();
    tree.slice(&key(123_457)).unwrap();
    let after = tree.stats();
    assert_eq!(after.slices, 1);
    assert!(after.repartition_pages <= 2 * height + 1, "{after:?}");
    // New pages: one left part per level, less what the tidy-up merged.
    assert!(
        after.leaf_pages + after.inner_pages
            <= before.leaf_pages + before.inner_pages + height as usize
    );
    tree.meld(&key(123_457)).unwrap();
    let melded = tree.stats();
    assert_eq!(melded.melds, 1);
    assert!(melded.repartition_pages - after.repartition_pages <= height + 1);
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), 200_000);
}

#[test]
fn bad_input_changes_nothing() {
    let tree = PartitionedTree::with_config(config(4096)).unwrap();
    for i in 0..5000u64 {
        tree.insert(&key(i), b"v").unwrap();
    }
    tree.slice(&key(1000)).unwrap();
    let snapshot = |t: &PartitionedTree| {
        let entries: Vec<_> = t.range(..).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        (entries, t.boundaries(), t.stats().slices, t.stats().melds)
    };
    let before = snapshot(&tree);
    assert_eq!(
        tree.slice(&key(1000)),
        Err(Error::BoundaryExists { key: key(1000) })
    );
    assert_eq!(
        tree.meld(&key(999)),
        Err(Error::NoSuchBoundary { key: key(999) })
    );
    assert_eq!(
        tree.meld(b""),
        Err(Error::NoSuchBoundary { key: Vec::new() })
    );
    let long = vec![7u8; 4096 / 16 + 1];
    assert!(matches!(tree.slice(&long), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(
        tree.meld(&long),
        Err(Error::NoSuchBoundary { .. })
    ));
    assert_eq!(snapshot(&tree), before);
    tree.check_invariants().unwrap();
    // The empty key and the largest allowed boundary are fine.
    tree.slice(b"").unwrap();
    tree.slice(&vec![0xff; 4096 / 16]).unwrap();
    assert_eq!(tree.partitions(), 4);
    tree.check_invariants().unwrap();
}

#[test]
fn the_memory_budget_refuses_a_slice_cleanly() {
    let tree = PartitionedTree::with_config(Config {
        max_memory: 64 * 4096,
        ..config(4096)
    })
    .unwrap();
    let mut n = 0u64;
    while tree.insert(&key(n), &[1u8; 200]).is_ok() {
        n += 1;
    }
    let before = tree.boundaries();
    let len = tree.len();
    // Some slices may still find pages; the first refusal changes nothing.
    for i in 1..60u64 {
        match tree.slice(&key(i * n / 60)) {
            Ok(()) => {}
            Err(Error::OutOfSpace { .. }) => {
                assert_eq!(tree.len(), len);
                tree.check_invariants().unwrap();
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_ne!(tree.boundaries(), before);
}

/// Writers, readers and scanners run while one thread slices and melds at random keys.
/// Each writer owns the keys `i % WRITERS == w` and checks what it reads back of its own;
/// readers check that a key once written with a stamp never reads older; scanners check
/// order. At the end the tree matches the writers' oracles.
#[test]
fn concurrent_operations_stay_correct_under_slices_and_melds() {
    const WRITERS: u64 = 3;
    const KEYS: u64 = 30_000;
    let tree = PartitionedTree::with_config(Config {
        page_size: 512,
        ..Config::default()
    })
    .unwrap();
    let stop = AtomicBool::new(false);
    let oracles = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let tree = &tree;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(w);
                    let mut oracle = BTreeMap::new();
                    for n in 0..60_000u64 {
                        let i = rng.gen_range(0..KEYS / WRITERS) * WRITERS + w;
                        let k = key(i);
                        if rng.gen_bool(0.75) {
                            let v = n.to_le_bytes().to_vec();
                            assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
                        } else {
                            assert_eq!(tree.remove(&k), oracle.remove(&k));
                        }
                        if n % 64 == 0 {
                            let probe = key(rng.gen_range(0..KEYS / WRITERS) * WRITERS + w);
                            assert_eq!(tree.get(&probe), oracle.get(&probe).cloned());
                        }
                    }
                    oracle
                })
            })
            .collect();
        let scanner = s.spawn(|| {
            let mut scans = 0;
            while !stop.load(Ordering::Relaxed) {
                let keys: Vec<Vec<u8>> = tree.range(..).map(|(k, _)| k.to_vec()).collect();
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "scan out of order");
                let from = key(KEYS / 2);
                let back: Vec<Vec<u8>> = tree
                    .range(..&from[..])
                    .rev()
                    .take(500)
                    .map(|(k, _)| k.to_vec())
                    .collect();
                assert!(
                    back.windows(2).all(|w| w[0] > w[1]),
                    "backward scan out of order"
                );
                scans += 1;
            }
            scans
        });
        let reshaper = s.spawn(|| {
            let mut rng = StdRng::seed_from_u64(99);
            let mut bounds: Vec<Vec<u8>> = Vec::new();
            let mut changes = 0;
            while !stop.load(Ordering::Relaxed) {
                if bounds.len() < 40 && (bounds.is_empty() || rng.gen_bool(0.55)) {
                    let at = key(rng.gen_range(0..KEYS));
                    if tree.slice(&at).is_ok() {
                        bounds.push(at);
                    }
                } else {
                    let at = bounds.swap_remove(rng.gen_range(0..bounds.len()));
                    tree.meld(&at).unwrap();
                }
                changes += 1;
            }
            changes
        });
        let oracles: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        stop.store(true, Ordering::Relaxed);
        assert!(scanner.join().unwrap() > 0);
        assert!(reshaper.join().unwrap() > 10);
        oracles
    });
    let mut all = BTreeMap::new();
    for o in oracles {
        all.extend(o);
    }
    same(&tree, &all);
}

#[test]
fn a_partitioned_tree_with_the_space_manager_compacts_and_drops() {
    let tree = PartitionedTree::new();
    for i in 0..50_000u64 {
        tree.insert(&key(i), &[3u8; 40]).unwrap();
    }
    for b in [10_000u64, 20_000, 30_000, 40_000] {
        tree.slice(&key(b)).unwrap();
    }
    for i in (0..50_000u64).filter(|i| i % 4 != 0) {
        tree.remove(&key(i));
    }
    let before = tree.stats().leaf_pages;
    tree.compact();
    let after = tree.stats();
    assert!(
        after.leaf_pages < before,
        "{before} -> {}",
        after.leaf_pages
    );
    assert_eq!(after.partitions, 5);
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), 12_500);
}
