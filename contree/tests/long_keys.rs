//! Long keys: keys longer than `Config::max_inline_key_len()` up to `MAX_KEY_LEN` (16 KiB)
//! at every page size, against a `BTreeMap` oracle through point reads, cursors both ways,
//! ranges, scans, pops, atomic operations and removals; keys that share prefixes longer
//! than a node holds (long separators and fences in inner nodes); blob accounting (no page
//! leaks: `check_invariants` recounts every key blob's references); the memory budget; and
//! readers racing writers that insert, replace and remove long keys.
//!
//! Run: `cargo test -p contree --test long_keys`.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Config, Error, Tree, MAX_KEY_LEN};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[path = "support/pages.rs"]
mod pages;

use pages::{tree_with, PAGE_SIZES};

/// A key of `len` bytes: `stem` bytes of a shared stem (`a` repeated, or a path-like
/// pattern), then bytes derived from `id`, so that keys of one stem share long prefixes.
fn key(stem: usize, id: u32, len: usize) -> Vec<u8> {
    let mut k: Vec<u8> = (0..stem.min(len)).map(|i| b"ab/c"[i % 4]).collect();
    let mut x = id.wrapping_mul(0x9E37_79B9) | 1;
    // The id first (big-endian, so that ids order the keys of one stem), then noise.
    k.extend_from_slice(&id.to_be_bytes()[..4.min(len - k.len().min(len))]);
    while k.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        k.push(x as u8);
    }
    k.truncate(len);
    k
}

/// Key lengths around the inline limit and up to the maximum.
fn lengths(config: &Config) -> Vec<usize> {
    let m = config.max_inline_key_len();
    vec![
        0,
        1,
        8,
        m - 8,
        m - 7,
        m - 1,
        m,
        m + 1,
        m + 2,
        m + 100,
        2 * m,
        4000,
        4081,
        9000,
        MAX_KEY_LEN,
    ]
}

fn check_against(tree: &Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), oracle.len());
    let all: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> =
        oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(all == want, "forward iteration differs");
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = tree
        .iter()
        .rev()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    back.reverse();
    assert!(back == want, "backward iteration differs");
    let mut scanned = Vec::new();
    let _ = tree.scan(.., |k: &[u8], v: &[u8]| {
        scanned.push((k.to_vec(), v.to_vec()));
        ControlFlow::<()>::Continue(())
    });
    assert!(scanned == want, "scan differs");
    // `first` and `last` hand out whole keys, never a long key's stored form.
    let edge = |e: Option<(&Vec<u8>, &Vec<u8>)>| e.map(|(k, v)| (k.clone(), v.clone()));
    assert_eq!(
        tree.first(),
        edge(oracle.first_key_value()),
        "first differs"
    );
    assert_eq!(tree.last(), edge(oracle.last_key_value()), "last differs");
    for (k, v) in oracle.iter().step_by(7) {
        assert_eq!(tree.get(k).as_ref(), Some(v));
    }
}

#[test]
fn long_keys_against_the_oracle_at_every_page_size() {
    for page_size in PAGE_SIZES {
        let tree = tree_with(page_size);
        let config = tree.config().clone();
        let mut oracle = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(page_size as u64);
        let lens = lengths(&config);
        for round in 0..3 {
            for i in 0..600u32 {
                let len = lens[rng.gen_range(0..lens.len())];
                let stem = [0, 100, config.max_inline_key_len() - 10, 3000][rng.gen_range(0..4)];
                let k = key(stem, rng.gen_range(0..400), len);
                let v = i.to_le_bytes().repeat(rng.gen_range(1..4));
                match rng.gen_range(0..10) {
                    0..=5 => assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v)),
                    6..=7 => assert_eq!(tree.remove(&k), oracle.remove(&k)),
                    _ => assert_eq!(tree.get(&k), oracle.get(&k).cloned()),
                }
            }
            check_against(&tree, &oracle);
            // Ranges with long bounds.
            let keys: Vec<&Vec<u8>> = oracle.keys().collect();
            if keys.len() > 10 {
                let (a, b) = (
                    keys[keys.len() / 4].clone(),
                    keys[keys.len() * 3 / 4].clone(),
                );
                let got: Vec<Vec<u8>> = tree
                    .range(&a[..]..&b[..])
                    .map(|(k, _)| k.to_vec())
                    .collect();
                let want: Vec<Vec<u8>> = oracle
                    .range(a.clone()..b.clone())
                    .map(|(k, _)| k.clone())
                    .collect();
                assert!(got == want, "range differs (round {round})");
            }
        }
        // Pops take every entry once, in order.
        while let Some((k, v)) = tree.pop_first() {
            assert_eq!(oracle.pop_first(), Some((k, v)));
            if oracle.len() % 97 == 0 {
                tree.check_invariants().unwrap();
            }
        }
        assert!(oracle.is_empty());
        tree.check_invariants().unwrap();
    }
}

/// Keys that share prefixes longer than any node holds: separators and fences are long
/// keys' stored forms, and inner nodes route by reading their blobs.
#[test]
fn keys_sharing_long_prefixes_route_exactly() {
    for page_size in [4096, 16384] {
        let tree = tree_with(page_size);
        let mut oracle = BTreeMap::new();
        for stem in [300, 1000, 5000] {
            for id in (0..1500u32).rev() {
                let k = key(stem, id, stem + 40);
                tree.insert(&k, &id.to_le_bytes()).unwrap();
                oracle.insert(k, id.to_le_bytes().to_vec());
            }
        }
        let height = tree.stats().height;
        assert!(height >= 2, "the keys make an inner level: height {height}");
        check_against(&tree, &oracle);
        // Cursors across leaves whose fences are long keys.
        let mut c = tree.cursor();
        let mid = oracle.keys().nth(oracle.len() / 2).unwrap().clone();
        assert!(c.seek(&mid));
        let mut n = 0;
        while c.next() {
            n += 1;
        }
        assert_eq!(n, oracle.len() / 2 - 1 + (oracle.len() % 2));
        // Remove two thirds: merges drop long separators and fences.
        let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
        for (i, k) in keys.iter().enumerate() {
            if i % 3 != 0 {
                assert!(tree.remove(k).is_some());
                oracle.remove(k);
            }
        }
        tree.compact();
        check_against(&tree, &oracle);
        tree.clear();
        tree.check_invariants().unwrap();
        assert!(
            tree.stats().bytes_allocated <= 4 * page_size,
            "blobs go back to the pool"
        );
    }
}

#[test]
fn atomic_operations_on_long_keys() {
    let tree = Tree::new();
    let k = key(2000, 7, 3000);
    assert_eq!(
        tree.fetch_update(&k, |_| Some(1u64.to_le_bytes().to_vec()))
            .unwrap(),
        None
    );
    for _ in 0..10 {
        tree.fetch_update(&k, |v| {
            let n = u64::from_le_bytes(v.unwrap().try_into().unwrap());
            Some((n + 1).to_le_bytes().to_vec())
        })
        .unwrap();
    }
    assert_eq!(tree.get(&k), Some(11u64.to_le_bytes().to_vec()));
    assert!(tree
        .compare_exchange(&k, Some(&11u64.to_le_bytes()), None)
        .unwrap()
        .is_ok());
    assert_eq!(tree.get(&k), None);
    assert!(tree.insert_if_absent(&k, b"x").unwrap());
    assert!(!tree.insert_if_absent(&k, b"y").unwrap());
    assert_eq!(tree.remove_if(&k, |v| v == b"x"), Some(b"x".to_vec()));
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), 0);
}

#[test]
fn limits_and_errors() {
    let tree = Tree::new();
    assert_eq!(tree.config().max_key_len(), MAX_KEY_LEN);
    let k = vec![7u8; MAX_KEY_LEN];
    tree.insert(&k, b"v").unwrap();
    assert_eq!(tree.get(&k), Some(b"v".to_vec()));
    let too_long = vec![7u8; MAX_KEY_LEN + 1];
    assert!(matches!(
        tree.insert(&too_long, b"v"),
        Err(Error::KeyTooLarge { len, max }) if len == MAX_KEY_LEN + 1 && max == MAX_KEY_LEN
    ));
    assert_eq!(tree.len(), 1);
    tree.check_invariants().unwrap();
    // A budget too small for a key's blob refuses it and changes nothing.
    let small = Tree::with_config(Config {
        max_memory: 4 * 4096,
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    small.insert(b"short", b"v").unwrap();
    assert!(matches!(
        small.insert(&vec![1u8; MAX_KEY_LEN], b"v"),
        Err(Error::OutOfSpace { .. })
    ));
    assert_eq!(small.len(), 1);
    small.check_invariants().unwrap();
}

/// Readers race writers that insert, replace and remove long keys sharing a long stem:
/// every read either misses or finds the value its key was written with, and scans see
/// keys in order.
#[test]
fn readers_race_writers_of_long_keys() {
    let _watchdog = watchdog(
        "readers_race_writers_of_long_keys",
        Duration::from_secs(300),
    );
    let tree = tree_with(4096);
    let stop = AtomicBool::new(false);
    let value_of = |k: &[u8]| (k.len() as u32).to_le_bytes().to_vec();
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..2u64 {
            let tree = &tree;
            writers.push(s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(w);
                for _ in 0..20_000 {
                    let id = rng.gen_range(0..300);
                    let len = [300, 900, 5000][rng.gen_range(0..3)];
                    let k = key(280, id, len);
                    if rng.gen_bool(0.6) {
                        tree.insert(&k, &value_of(&k)).unwrap();
                    } else {
                        tree.remove(&k);
                    }
                }
            }));
        }
        for r in 0..2u64 {
            let (tree, stop) = (&tree, &stop);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + r);
                while !stop.load(Ordering::Relaxed) {
                    let k = key(
                        280,
                        rng.gen_range(0..300),
                        [300, 900, 5000][rng.gen_range(0..3)],
                    );
                    if let Some(v) = tree.get(&k) {
                        assert_eq!(v, value_of(&k));
                    }
                    let mut prev: Option<Vec<u8>> = None;
                    for (k, v) in tree.iter().take(200) {
                        let k = k.to_vec();
                        assert_eq!(v.to_vec(), value_of(&k));
                        if let Some(p) = &prev {
                            assert!(*p < k, "scan out of order");
                        }
                        prev = Some(k);
                    }
                }
            });
        }
        // Stop the readers once the writers are done (also when one fails).
        let results: Vec<_> = writers.into_iter().map(|h| h.join()).collect();
        stop.store(true, Ordering::Relaxed);
        for r in results {
            r.unwrap();
        }
    });
    tree.check_invariants().unwrap();
}
