//! Huge-page extents (`Config::huge_pages`): a tree past its first 4 MiB keeps its contents
//! right through growth, churn, periodic releases and `compact`; it holds no more memory
//! than with small pages (`contree::mapped_bytes` counts the same segments); the full
//! extents are advised for huge pages where the kernel has them; and a dropped tree gives
//! every extent back.
//!
//! One test function: `mapped_bytes` is process-wide, so nothing else may run beside it.

use contree::{Config, Tree};
use std::collections::BTreeMap;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Whether this kernel has transparent huge pages that `madvise` can ask for.
fn thp_available() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

/// Loads `n` random keys into a tree with `huge_pages` and `space_manager`; returns the tree,
/// the oracle and the bytes mapped for it.
fn load(huge_pages: bool, space_manager: bool, n: usize) -> (Tree, BTreeMap<u64, u64>, usize) {
    load_with(
        Config {
            huge_pages,
            space_manager,
            ..Config::default()
        },
        n,
    )
}

fn load_with(config: Config, n: usize) -> (Tree, BTreeMap<u64, u64>, usize) {
    let before = contree::mapped_bytes();
    let t = Tree::with_config(config).unwrap();
    let mut oracle = BTreeMap::new();
    insert_random(&t, &mut oracle, &mut 0x9E37_79B9_7F4A_7C15, n, |k| k);
    let mapped = contree::mapped_bytes() - before;
    (t, oracle, mapped)
}

/// Inserts `n` random keys (from the xorshift state `x`), each with the value `value(key)`,
/// into `t` and `oracle`.
fn insert_random(
    t: &Tree,
    oracle: &mut BTreeMap<u64, u64>,
    x: &mut u64,
    n: usize,
    value: impl Fn(u64) -> u64,
) {
    for _ in 0..n {
        let k = xorshift(x);
        t.insert(&k.to_be_bytes(), &value(k).to_le_bytes()).unwrap();
        oracle.insert(k, value(k));
    }
}

fn check(t: &Tree, oracle: &BTreeMap<u64, u64>) {
    t.check_invariants().unwrap();
    assert_eq!(t.len(), oracle.len());
    for (k, v) in oracle {
        assert_eq!(
            t.get(&k.to_be_bytes()),
            Some(v.to_le_bytes().to_vec()),
            "{k}"
        );
    }
    let keys: Vec<u64> = t
        .iter()
        .map(|(k, _)| u64::from_be_bytes(k[..].try_into().unwrap()))
        .collect();
    assert!(keys.iter().copied().eq(oracle.keys().copied()));
}

#[test]
fn huge_page_extents_keep_contents_and_memory_and_go_back_when_dropped() {
    let start = contree::mapped_bytes();
    // About 12 MiB of pages: past the first 4 MiB, several whole extents.
    let n = 480_000;
    // Without the space manager, page use is deterministic, and the allocations collapse
    // the full extents themselves.
    let (small, _, small_mapped) = load(false, false, n);
    let small_stats = small.stats();
    assert_eq!(small_stats.huge_extents, 0);
    drop(small);
    assert_eq!(
        contree::mapped_bytes(),
        start,
        "a small-page tree unmapped all"
    );

    let (t, mut oracle, mapped) = load(true, false, n);
    let s = t.stats();
    // The same inserts open the same pages: the same memory as with small pages.
    assert_eq!(mapped, small_mapped, "{s:?}");
    if cfg!(target_os = "linux") && thp_available() {
        assert!(s.huge_extents >= 2, "{s:?}");
    }
    check(&t, &oracle);

    // Churn: remove two thirds at random (pages freed inside extents), with periodic
    // releases (a tree without the space manager releases from removals).
    let mut x = 42u64;
    let keys: Vec<u64> = oracle.keys().copied().collect();
    for &k in &keys {
        if !xorshift(&mut x).is_multiple_of(3) {
            assert!(t.remove(&k.to_be_bytes()).is_some());
            oracle.remove(&k);
        }
    }
    check(&t, &oracle);
    // The freed pages come back into use, extents' pages first.
    insert_random(&t, &mut oracle, &mut x, 100_000, |_| {
        u64::from_le_bytes([1; 8])
    });
    check(&t, &oracle);

    // `compact` gives every free page back, inside extents too.
    t.compact();
    let s = t.stats();
    assert_eq!(s.bytes_free, 0, "{s:?}");
    check(&t, &oracle);
    insert_random(&t, &mut oracle, &mut x, 50_000, |_| {
        u64::from_le_bytes([2; 8])
    });
    check(&t, &oracle);

    drop(t);
    assert_eq!(
        contree::mapped_bytes(),
        start,
        "a dropped tree gives every extent and segment back"
    );

    // With the space manager, its rounds collapse the full extents, off the inserts' path.
    let (t, oracle, _) = load(true, true, n);
    if cfg!(target_os = "linux") && thp_available() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while t.stats().huge_extents < 2 {
            assert!(std::time::Instant::now() < deadline, "{:?}", t.stats());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    check(&t, &oracle);
    drop(t);
    assert_eq!(contree::mapped_bytes(), start);

    // Larger pages: 4 segments of 16 KiB pages per extent, and 64 KiB pages, whose
    // segments are whole extents.
    for page_size in [16 << 10, 64 << 10] {
        let config = Config {
            page_size,
            space_manager: false,
            ..Config::default()
        };
        let (t, mut oracle, _) = load_with(config, 300_000);
        if cfg!(target_os = "linux") && thp_available() {
            assert!(t.stats().huge_extents >= 1, "{page_size}: {:?}", t.stats());
        }
        let keys: Vec<u64> = oracle.keys().copied().step_by(2).collect();
        for k in keys {
            assert!(t.remove(&k.to_be_bytes()).is_some());
            oracle.remove(&k);
        }
        t.compact();
        check(&t, &oracle);
        drop(t);
        assert_eq!(contree::mapped_bytes(), start, "{page_size}");
    }
}
