//! Fresh pages faulted in ahead (`Config::prefault`): while a tree grows, the space
//! manager's thread faults in the rest of the segment its writers take fresh pages from
//! (`Stats::pages_prefaulted`), the tree's contents stay right, and no segment opens
//! ahead of use (`contree::mapped_bytes` is what the same load maps without it). Off by
//! default (`Config::prefault`) and without the space manager.
//!
//! One test function: `mapped_bytes` is process-wide, so nothing else may run beside it.

use contree::{Config, Tree};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Inserts `n` random keys (from `seed`) into `tree` and `oracle`.
fn grow(tree: &Tree, oracle: &mut BTreeMap<u64, u64>, seed: &mut u64, n: usize) {
    for _ in 0..n {
        let k = xorshift(seed);
        tree.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
        oracle.insert(k, k);
    }
}

/// Whether the kernel faults memory in on request (`MADV_POPULATE_WRITE`, Linux 5.14).
#[cfg(target_os = "linux")]
fn populate_supported() -> bool {
    const MADV_POPULATE_WRITE: libc::c_int = 23;
    let len = 4096;
    // SAFETY: a fresh anonymous mapping, advised and unmapped here and used by nothing else.
    unsafe {
        let mem = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if mem == libc::MAP_FAILED {
            return false;
        }
        let ok = libc::madvise(mem, len, MADV_POPULATE_WRITE) == 0;
        libc::munmap(mem, len);
        ok
    }
}

#[cfg(not(target_os = "linux"))]
fn populate_supported() -> bool {
    false
}

#[test]
fn a_growing_tree_gets_its_fresh_pages_faulted_in_ahead() {
    let expected = cfg!(all(target_os = "linux", not(miri))) && populate_supported();

    // Off: by default, and without the space manager (no thread to do it).
    for config in [
        Config::default(),
        Config {
            prefault: true,
            space_manager: false,
            ..Config::default()
        },
    ] {
        let tree = Tree::with_config(config).unwrap();
        let mut oracle = BTreeMap::new();
        grow(&tree, &mut oracle, &mut 7, 100_000);
        assert_eq!(tree.stats().pages_prefaulted, 0);
    }

    // The same load maps the same segments with and without (nothing opens ahead): a tree
    // of 100k keys, then the other, each measured alone, without XMerge (whose timing
    // would change the pages).
    let mapped = |prefault: bool| {
        let before = contree::mapped_bytes();
        let tree = Tree::with_config(Config {
            prefault,
            fill_target: 0.0,
            ..Config::default()
        })
        .unwrap();
        grow(&tree, &mut BTreeMap::new(), &mut 11, 100_000);
        contree::mapped_bytes() - before
    };
    assert_eq!(mapped(true), mapped(false));

    // On: a tree that keeps growing gets pages faulted in ahead, and its contents stay
    // right.
    let tree = Tree::with_config(Config {
        prefault: true,
        ..Config::default()
    })
    .unwrap();
    let mut oracle = BTreeMap::new();
    let mut seed = 3;
    let deadline = Instant::now() + Duration::from_secs(60);
    while expected && tree.stats().pages_prefaulted == 0 {
        assert!(
            Instant::now() < deadline,
            "no page faulted in ahead after {} keys",
            oracle.len()
        );
        grow(&tree, &mut oracle, &mut seed, 5_000);
        if oracle.len() >= 200_000 {
            // The thread looks at least once a second: give it time, not keys.
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if !expected {
        grow(&tree, &mut oracle, &mut seed, 100_000);
        assert_eq!(tree.stats().pages_prefaulted, 0);
    }
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), oracle.len());
    for (k, v) in &oracle {
        assert_eq!(tree.get(&k.to_be_bytes()), Some(v.to_le_bytes().to_vec()));
    }
    let got: Vec<u64> = tree
        .range(..)
        .map(|(k, _)| u64::from_be_bytes(k[..].try_into().unwrap()))
        .collect();
    assert!(got.iter().copied().eq(oracle.keys().copied()));
}
