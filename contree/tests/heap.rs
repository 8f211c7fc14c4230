//! The blob heap: out-of-line values and long-key rests shorter than a page, packed many to
//! a page (`Config::blob_heap`). Churn against a `BTreeMap` oracle at every page size (every
//! step checked by `check_invariants`, which verifies each heap page and that every live
//! chunk is named exactly once), packing of fragmented pages, memory that follows the
//! contents under churn, every heap page given back when the entries go, and the switch
//! turned off.
//!
//! Run: `cargo test -p contree --test heap`.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Config, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::Duration;

#[path = "support/pages.rs"]
mod pages;

use pages::{tree_with, PAGE_SIZES};

/// `len` bytes derived from `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A value length that goes to the heap: past the inline limit, short of a page.
fn heap_len(rng: &mut StdRng, tree: &Tree) -> usize {
    let inline = tree.config().max_inline_value_len();
    rng.gen_range(inline + 1..=tree.config().page_size - 28)
}

/// A key: short (inline) or long (its rest in the heap), ordered by `id` first.
fn key(id: u32, long: bool, tree: &Tree) -> Vec<u8> {
    let mut k = id.to_be_bytes().to_vec();
    if long {
        let len = tree.config().max_inline_key_len() + 1 + (id as usize * 37) % 900;
        k.extend_from_slice(&bytes(id as u64, len - 4));
    }
    k
}

fn assert_same(tree: &Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), oracle.len());
    for (k, v) in oracle {
        assert_eq!(tree.get(k).as_ref(), Some(v));
    }
    assert!(tree
        .iter()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .eq(oracle.iter().map(|(k, v)| (k.clone(), v.clone()))));
}

#[test]
fn churn_against_the_oracle_at_every_page_size() {
    for page_size in PAGE_SIZES {
        let tree = tree_with(page_size);
        let empty = tree.stats().bytes_allocated;
        let mut rng = StdRng::seed_from_u64(page_size as u64);
        let mut oracle = BTreeMap::new();
        let rounds = if page_size > 16384 { 1_500 } else { 3_000 };
        for i in 0..rounds {
            let id = rng.gen_range(0..300u32);
            let k = key(id, id % 3 == 0, &tree);
            match rng.gen_range(0..10) {
                0..=5 => {
                    let v = bytes(i, heap_len(&mut rng, &tree));
                    assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
                }
                6..=8 => assert_eq!(tree.remove(&k), oracle.remove(&k)),
                _ => {
                    // A replacement of the same length is written in place.
                    if let Some(old) = oracle.get_mut(&k) {
                        let v = bytes(i, old.len());
                        tree.update_with(&k, |b| b.copy_from_slice(&v));
                        *old = v;
                    }
                }
            }
            if i % 500 == 0 {
                assert_same(&tree, &oracle);
            }
        }
        assert_same(&tree, &oracle);
        let stats = tree.stats();
        assert!(stats.heap_pages > 0 && stats.heap_packs > 0, "{stats:?}");
        assert_eq!(stats.blob_pages, stats.heap_pages, "page size {page_size}");
        for k in oracle.keys() {
            assert!(tree.remove(k).is_some());
        }
        tree.check_invariants().unwrap();
        let stats = tree.stats();
        assert_eq!((stats.heap_pages, stats.heap_bytes), (0, 0));
        assert_eq!(stats.bytes_allocated, empty, "page size {page_size}");
    }
}

#[test]
fn memory_follows_the_contents_under_churn() {
    let tree = tree_with(4096);
    let mut rng = StdRng::seed_from_u64(7);
    let n = 2_000u32;
    for id in 0..n {
        let v = bytes(id as u64, heap_len(&mut rng, &tree));
        tree.insert(&id.to_be_bytes(), &v).unwrap();
    }
    let loaded = tree.stats();
    // Replace every value ten times with one of another length: freed bytes are reused.
    for round in 0..10u64 {
        for id in 0..n {
            let v = bytes(round << 32 | id as u64, heap_len(&mut rng, &tree));
            tree.insert(&id.to_be_bytes(), &v).unwrap();
        }
    }
    tree.check_invariants().unwrap();
    let churned = tree.stats();
    let fill = |s: &contree::Stats| s.heap_bytes as f64 / (s.heap_pages * 4096) as f64;
    assert!(fill(&loaded) > 0.9, "loaded: {loaded:?}");
    assert!(fill(&churned) > 0.75, "after churn: {churned:?}");
    // Remove every other entry, then insert as many again: the holes are reused.
    for id in (0..n).step_by(2) {
        tree.remove(&id.to_be_bytes()).unwrap();
    }
    let holed = tree.stats().heap_pages;
    for id in (0..n).step_by(2) {
        let v = bytes(id as u64, heap_len(&mut rng, &tree));
        tree.insert(&id.to_be_bytes(), &v).unwrap();
    }
    tree.check_invariants().unwrap();
    let refilled = tree.stats();
    eprintln!(
        "fill: loaded {:.3}, churned {:.3}, refilled {:.3} ({holed} pages with holes, {} after)",
        fill(&loaded),
        fill(&churned),
        fill(&refilled),
        refilled.heap_pages
    );
    assert!(fill(&refilled) > 0.75, "refilled: {refilled:?}");
}

#[test]
fn the_switch_off_puts_every_blob_in_whole_pages() {
    let tree = Tree::with_config(Config {
        blob_heap: false,
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    let mut oracle = BTreeMap::new();
    for id in 0..200u32 {
        let k = key(id, id % 2 == 0, &tree);
        let v = bytes(id as u64, 1025 + id as usize * 10);
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    assert_same(&tree, &oracle);
    let stats = tree.stats();
    assert_eq!((stats.heap_pages, stats.heap_packs), (0, 0));
    // One page per value up to 4,080 bytes, one more past it; one per long key rest.
    let values: usize = oracle.values().map(|v| v.len().div_ceil(4080)).sum();
    assert_eq!(stats.blob_pages, values + 100);
}

#[test]
fn readers_see_whole_entries_while_pages_are_packed() {
    let _watchdog = watchdog(
        "readers_see_whole_entries_while_pages_are_packed",
        Duration::from_secs(300),
    );
    let tree = tree_with(4096);
    let n = 64u32;
    let lens = [1100usize, 1700, 2300, 3100, 4000];
    // Each value repeats one byte, its length chosen from `lens`: a torn read shows.
    let value = |id: u32, seed: u32| vec![(id ^ seed) as u8; lens[(seed as usize) % lens.len()]];
    for id in 0..n {
        tree.insert(&key(id, true, &tree), &value(id, 0)).unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (tree, stop) = (&tree, &stop);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(r);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let id = rng.gen_range(0..n);
                    let k = key(id, true, tree);
                    if let Some(v) = tree.get(&k) {
                        assert!(lens.contains(&v.len()) && v.iter().all(|&b| b == v[0]));
                    }
                    for (k, v) in tree.range(k.as_slice()..).take(3) {
                        assert!(k.len() > tree.config().max_inline_key_len());
                        assert!(lens.contains(&v.len()) && v.iter().all(|&b| b == v[0]));
                    }
                }
            });
        }
        let mut rng = StdRng::seed_from_u64(99);
        for i in 0..20_000u32 {
            let id = rng.gen_range(0..n);
            let k = key(id, true, &tree);
            if i % 7 == 0 {
                tree.remove(&k);
            } else {
                tree.insert(&k, &value(id, i)).unwrap();
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    tree.check_invariants().unwrap();
    assert!(tree.stats().heap_packs > 0);
}
