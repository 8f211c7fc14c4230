//! Out-of-line values: values longer than `Config::max_inline_value_len()` up to
//! `MAX_VALUE_LEN` (16 MiB) at every page size, through every read path (get, get_into,
//! get_with, cursors both ways, ranges, visitor scans), every write path (insert, replace
//! in and out of line, update_with, fetch_update, compare_exchange, remove, pops, clear),
//! the memory budget (an out-of-line value the budget cannot hold is refused with the tree
//! unchanged), page accounting (no blob page leaks: `check_invariants` counts them), and
//! readers racing writers that replace and remove large values.
//!
//! Run: `cargo test -p contree --test blob`.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Config, Error, Tree, MAX_VALUE_LEN};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[path = "support/pages.rs"]
mod pages;

use pages::{tree_with, PAGE_SIZES};

/// A value of `len` bytes that says which seed made it: every byte is derived from the
/// seed and the position, so a torn or mixed read shows.
fn value(seed: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x = seed.wrapping_mul(0x9E37_79B9) | 1;
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(x as u8);
    }
    if len >= 4 {
        v[..4].copy_from_slice(&seed.to_le_bytes());
    }
    v
}

/// The value lengths the racing writers write.
const RACE_LENGTHS: [usize; 9] = [10, 1000, 1025, 1800, 2900, 4000, 5000, 9000, 20_000];

/// Checks that `v` has a length the racing writers write and is `value(seed, v.len())` for
/// the seed in its first four bytes.
fn self_consistent(v: &[u8]) -> bool {
    if !RACE_LENGTHS.contains(&v.len()) {
        return false;
    }
    let seed = u32::from_le_bytes(v[..4].try_into().unwrap());
    v == value(seed, v.len())
}

/// Lengths around the inline limit and over several pages.
fn lengths(config: &Config) -> Vec<usize> {
    let inline = config.max_inline_value_len();
    let page = config.page_size;
    vec![
        0,
        inline,
        inline + 1,
        page - 16,
        page - 15,
        page,
        3 * page + 7,
        20 * page,
    ]
}

/// Compares every read path against `oracle`.
fn assert_reads(tree: &Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut buf = Vec::new();
    for (k, v) in oracle {
        assert_eq!(tree.get(k).as_ref(), Some(v), "get {k:?}");
        assert!(tree.get_into(k, &mut buf));
        assert_eq!(&buf, v);
        assert_eq!(tree.get_with(k, |x| x.to_vec()).as_ref(), Some(v));
    }
    let forward: Vec<(Vec<u8>, Vec<u8>)> = tree
        .range(..)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    let expected: Vec<(Vec<u8>, Vec<u8>)> =
        oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(forward == expected, "range differs from the oracle");
    let backward: Vec<(Vec<u8>, Vec<u8>)> = tree
        .range(..)
        .rev()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert!(
        backward.iter().rev().eq(expected.iter()),
        "reverse range differs"
    );
    let mut scanned = Vec::new();
    tree.scan(.., |k, v| {
        scanned.push((k.to_vec(), v.to_vec()));
        ControlFlow::<()>::Continue(())
    });
    assert!(scanned == expected, "scan differs from the oracle");
    let mut c = tree.cursor();
    let mut seen = 0;
    if c.seek_to_last() {
        loop {
            let (k, v) = c.entry().unwrap();
            assert_eq!(oracle.get(k).map(Vec::as_slice), Some(v));
            seen += 1;
            if !c.prev() {
                break;
            }
        }
    }
    assert_eq!(seen, oracle.len());
}

#[test]
fn large_values_round_trip_at_every_page_size() {
    for page_size in PAGE_SIZES {
        let tree = tree_with(page_size);
        let empty = tree.stats().bytes_allocated;
        let mut oracle = BTreeMap::new();
        let lens = lengths(tree.config());
        for (i, &len) in lens.iter().enumerate() {
            for j in 0..6u32 {
                let k = format!("key/{i:02}/{j}").into_bytes();
                let v = value(i as u32 * 100 + j, len);
                assert_eq!(tree.insert(&k, &v).unwrap(), None);
                oracle.insert(k, v);
            }
        }
        tree.check_invariants().unwrap();
        let stats = tree.stats();
        let inline = tree.config().max_inline_value_len();
        let out = oracle.values().filter(|v| v.len() > inline).count();
        assert_eq!(stats.out_of_line_values, out, "page size {page_size}");
        // Values that fit a heap page (24 bytes of header, 4 of slot) are heap chunks,
        // packed many to a page; longer ones take chains of whole pages.
        let (chunked, chained): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) = oracle
            .values()
            .filter(|v| v.len() > inline)
            .partition(|v| v.len() + 28 <= page_size);
        let chain_pages: usize = chained
            .iter()
            .map(|v| v.len().div_ceil(page_size - 16))
            .sum();
        let heap_bytes: usize = chunked.iter().map(|v| v.len()).sum();
        assert_eq!(stats.heap_bytes, heap_bytes, "page size {page_size}");
        assert_eq!(stats.blob_pages, chain_pages + stats.heap_pages);
        // Best fit packs the chunks: at most one page's worth of slack per chunk size.
        let packed = (heap_bytes + 4 * chunked.len()).div_ceil(page_size - 24);
        assert!(
            stats.heap_pages <= packed + 3,
            "{} heap pages for {heap_bytes} bytes (page size {page_size})",
            stats.heap_pages
        );
        assert!(stats.bytes_allocated >= (chain_pages + stats.heap_pages) * page_size);
        assert_reads(&tree, &oracle);

        // Replace every value with one of another length: in and out of line, both ways.
        let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
        for (n, k) in keys.iter().enumerate() {
            let len = lens[(n * 5 + 3) % lens.len()];
            let v = value(10_000 + n as u32, len);
            let old = tree.insert(k, &v).unwrap();
            assert_eq!(old.as_ref(), oracle.get(k));
            oracle.insert(k.clone(), v);
        }
        tree.check_invariants().unwrap();
        assert_reads(&tree, &oracle);

        // Remove half, pop from both ends, clear: every blob page comes back.
        for k in keys.iter().step_by(2) {
            assert_eq!(tree.remove(k), oracle.remove(k));
        }
        tree.check_invariants().unwrap();
        assert_reads(&tree, &oracle);
        let first = tree.pop_first().unwrap();
        assert_eq!(
            oracle.pop_first().unwrap(),
            (first.0.to_vec(), first.1.to_vec())
        );
        let last = tree.pop_last().unwrap();
        assert_eq!(
            oracle.pop_last().unwrap(),
            (last.0.to_vec(), last.1.to_vec())
        );
        tree.clear();
        tree.check_invariants().unwrap();
        let stats = tree.stats();
        assert_eq!((stats.len, stats.blob_pages), (0, 0));
        assert_eq!(stats.bytes_allocated, empty, "page size {page_size}");
    }
}

#[test]
fn the_largest_value_is_accepted_and_one_more_byte_refused() {
    let tree = tree_with(4096);
    let v = value(7, MAX_VALUE_LEN);
    assert_eq!(tree.insert(b"big", &v).unwrap(), None);
    assert!(tree.get(b"big").unwrap() == v);
    tree.check_invariants().unwrap();
    let mut too_long = v.clone();
    too_long.push(0);
    let err = tree.insert(b"big", &too_long).unwrap_err();
    assert_eq!(
        err,
        Error::ValueTooLarge {
            len: MAX_VALUE_LEN + 1,
            max: MAX_VALUE_LEN
        }
    );
    assert!(err.to_string().contains("16 MiB"));
    assert!(tree.get(b"big").unwrap() == v);
    assert_eq!(tree.remove(b"big").map(|r| r == v), Some(true));
    tree.check_invariants().unwrap();
    assert_eq!(tree.stats().blob_pages, 0);
}

#[test]
fn an_out_of_line_value_over_the_budget_is_refused_with_the_tree_unchanged() {
    let tree = Tree::with_config(Config {
        page_size: 4096,
        max_memory: 64 * 4096,
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    tree.insert(b"a", &value(1, 20 * 4096)).unwrap();
    tree.insert(b"b", b"small").unwrap();
    let before: Vec<_> = tree
        .range(..)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    let held = tree.stats().bytes_allocated;
    // A new key and a replacement, both needing more pages than are left.
    for k in [&b"c"[..], b"a", b"b"] {
        let err = tree.insert(k, &value(2, 60 * 4096)).unwrap_err();
        assert!(matches!(err, Error::OutOfSpace { .. }), "{err:?}");
        let err = tree
            .fetch_update(k, |_| Some(value(3, 60 * 4096)))
            .unwrap_err();
        assert!(matches!(err, Error::OutOfSpace { .. }), "{err:?}");
    }
    let after: Vec<_> = tree
        .range(..)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert!(before == after);
    assert_eq!(tree.stats().bytes_allocated, held);
    tree.check_invariants().unwrap();
    // Freeing the large value makes room for another.
    assert!(tree.remove(b"a").is_some());
    tree.insert(b"c", &value(4, 40 * 4096)).unwrap();
    tree.check_invariants().unwrap();
}

#[test]
fn atomic_operations_on_out_of_line_values() {
    let tree = tree_with(4096);
    let big = value(1, 10_000);
    tree.insert(b"k", &big).unwrap();
    // In place, same length: the closure sees the whole value and its change stays.
    let sum = tree
        .update_with(b"k", |v| {
            v[5000] ^= 0xFF;
            v.iter().map(|&b| b as u64).sum::<u64>()
        })
        .unwrap();
    let mut changed = big.clone();
    changed[5000] ^= 0xFF;
    assert_eq!(sum, changed.iter().map(|&b| b as u64).sum::<u64>());
    assert!(tree.get(b"k").unwrap() == changed);
    // Out of line to inline and back.
    let old = tree.fetch_update(b"k", |_| Some(b"tiny".to_vec())).unwrap();
    assert!(old.unwrap() == changed);
    tree.fetch_update(b"k", |v| {
        assert_eq!(v, Some(&b"tiny"[..]));
        Some(value(2, 30_000))
    })
    .unwrap();
    assert_eq!(
        tree.compare_exchange(b"k", Some(&big), Some(b"x")).unwrap(),
        Err(Some(value(2, 30_000)))
    );
    assert_eq!(
        tree.compare_exchange(b"k", Some(&value(2, 30_000)), Some(&value(3, 5000)))
            .unwrap(),
        Ok(())
    );
    assert!(tree.remove_if(b"k", |v| v.len() == 5000).unwrap() == value(3, 5000));
    assert!(tree.insert_if_absent(b"k", &big).unwrap());
    assert!(!tree.insert_if_absent(b"k", b"other").unwrap());
    assert!(tree.get_or_insert_with(b"k", || b"no".to_vec()).unwrap() == big);
    tree.check_invariants().unwrap();
    assert_eq!(tree.stats().blob_pages, 10_000usize.div_ceil(4096 - 16));
}

#[test]
fn random_mix_against_the_oracle() {
    for (seed, page_size) in [(1u64, 4096), (2, 8192), (3, 65536)] {
        let tree = tree_with(page_size);
        let mut oracle = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(seed);
        let max = 6 * page_size;
        for i in 0..4_000u32 {
            let k = format!("{:05}", rng.gen_range(0..400)).into_bytes();
            match rng.gen_range(0..10) {
                0..=5 => {
                    let v = value(i, rng.gen_range(0..max));
                    assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
                }
                6..=7 => assert_eq!(tree.remove(&k), oracle.remove(&k)),
                _ => {
                    let r = tree.update_with(&k, |v| {
                        v.reverse();
                        v.len()
                    });
                    assert_eq!(
                        r,
                        oracle.get_mut(&k).map(|v| {
                            v.reverse();
                            v.len()
                        })
                    );
                }
            }
            if i % 1000 == 999 {
                tree.check_invariants().unwrap();
            }
        }
        tree.check_invariants().unwrap();
        assert_reads(&tree, &oracle);
    }
}

/// Writers replace and remove large values (in and out of line) while readers read them by
/// every path; every value a reader sees must be one some writer wrote, whole.
#[test]
fn readers_never_see_torn_or_freed_values() {
    let _watchdog = watchdog(
        "readers_never_see_torn_or_freed_values",
        Duration::from_secs(300),
    );
    let ops: usize = std::env::var("CONTREE_STRESS_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3_000);
    let tree = tree_with(4096);
    let keys = 24u32;
    for k in 0..keys {
        tree.insert(&k.to_be_bytes(), &value(k, 5000)).unwrap();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for w in 0..2u32 {
            let tree = &tree;
            writers.push(s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(w as u64);
                for i in 0..ops as u32 {
                    let k = rng.gen_range(0..keys).to_be_bytes();
                    let seed = (w + 1) << 24 | i;
                    match rng.gen_range(0..10) {
                        0..=6 => {
                            let len = RACE_LENGTHS[rng.gen_range(0..RACE_LENGTHS.len())];
                            tree.insert(&k, &value(seed, len)).unwrap();
                        }
                        7 => {
                            tree.remove(&k);
                        }
                        _ => {
                            tree.update_with(&k, |v| {
                                let len = v.len();
                                v.copy_from_slice(&value(seed, len));
                            });
                        }
                    }
                }
            }));
        }
        for r in 0..2u32 {
            let (tree, done) = (&tree, &done);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(100 + r as u64);
                let mut buf = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    let k = rng.gen_range(0..keys).to_be_bytes();
                    if let Some(v) = tree.get(&k) {
                        assert!(self_consistent(&v), "get saw a torn value");
                    }
                    if tree.get_into(&k, &mut buf) {
                        assert!(self_consistent(&buf), "get_into saw a torn value");
                    }
                    tree.scan(.., |_, v| {
                        assert!(self_consistent(v), "scan saw a torn value");
                        ControlFlow::<()>::Continue(())
                    });
                    for (_, v) in tree.range(..).rev().take(5) {
                        assert!(self_consistent(&v), "range saw a torn value");
                    }
                }
            });
        }
        let panicked = writers.into_iter().any(|w| w.join().is_err());
        done.store(true, Ordering::Relaxed);
        assert!(!panicked, "a writer panicked");
    });
    tree.check_invariants().unwrap();
    let stats = tree.stats();
    let inline = tree.config().max_inline_value_len();
    // Chains for values past a heap page (24 bytes of header, 4 of slot), chunks below.
    let (mut chain_pages, mut heap_bytes) = (0, 0);
    for (_, v) in tree.range(..).filter(|(_, v)| v.len() > inline) {
        if v.len() + 28 <= 4096 {
            heap_bytes += v.len();
        } else {
            chain_pages += v.len().div_ceil(4096 - 16);
        }
    }
    assert_eq!(stats.heap_bytes, heap_bytes);
    assert_eq!(stats.blob_pages, chain_pages + stats.heap_pages);
}
