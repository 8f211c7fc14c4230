//! XMerge through the public API: a concurrent stress run beside an aggressive space
//! manager (also with groups of 2 at 512-byte pages and of 16, and `compact()` called
//! beside the writers), the memory budget (XMerge frees pages before `OutOfSpace` is returned), sorted
//! string keys, and the space manager's lifecycle.
//!
//! Run: `cargo test -p contree --release --test xmerge`.

use contree::{Config, Error, Tree};

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::{check_scan, check_scan_rev, watchdog};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn assert_matches(tree: &Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    tree.check_invariants().unwrap();
    let got: Vec<_> = tree
        .iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "contents differ from the oracle");
    assert_eq!(tree.len(), oracle.len());
}

/// A space manager that never sleeps and never reaches its target runs beside inserts,
/// removes, in-place updates of shared counters (which Contention Split splits apart) and
/// scans; afterwards the tree equals the oracle and no counter update was lost.
/// An aggressive space manager and Contention Split beside the writers.
fn aggressive() -> Config {
    Config {
        fill_target: 1.0,
        space_manager_share: 1.0,
        contention_sample_shift: 0,
        contention_period_shift: 4,
        contention_threshold: 0.05,
        ..Config::default()
    }
}

#[test]
fn stress_beside_an_aggressive_space_manager() {
    stress(
        "stress_beside_an_aggressive_space_manager",
        aggressive(),
        200_000,
        false,
    );
}

/// XMerge groups of two (the smallest) at 512-byte pages, and a thread that calls
/// `compact()` over and over beside the writers and the space manager.
#[test]
fn compact_beside_writers_with_groups_of_two() {
    let config = Config {
        xmerge_group: 2,
        page_size: 512,
        ..aggressive()
    };
    stress(
        "compact_beside_writers_with_groups_of_two",
        config,
        60_000,
        true,
    );
}

/// XMerge groups of sixteen (the largest), `compact()` beside the writers.
#[test]
fn compact_beside_writers_with_groups_of_sixteen() {
    let config = Config {
        xmerge_group: 16,
        ..aggressive()
    };
    stress(
        "compact_beside_writers_with_groups_of_sixteen",
        config,
        60_000,
        true,
    );
}

/// Four writers (each its own keys, against its own oracle, and shared counters), a
/// scanner checking that stable keys are always seen, both ways, and with `compact` a
/// thread that runs `Tree::compact` until the writers are done.
/// A writer's expected entries.
type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

fn stress(name: &'static str, config: Config, ops: usize, compact: bool) {
    let tree = Tree::with_config(config).unwrap();
    const WRITERS: u64 = 4;
    const COUNTERS: u64 = 8;
    let _watchdog = watchdog(name, Duration::from_secs(600));
    let counter_key = |c: u64| format!("counter{c}").into_bytes();
    for c in 0..COUNTERS {
        tree.insert(&counter_key(c), &0u64.to_le_bytes()).unwrap();
    }
    // Keys no writer touches (low byte 0xff; writers' low bytes are their numbers), among
    // the writers' keys: every scan must return them, and the counters.
    let mut stable: Vec<Vec<u8>> = (0..20_000u64)
        .step_by(37)
        .map(|i| (i << 8 | 0xff).to_be_bytes().to_vec())
        .chain((0..COUNTERS).map(counter_key))
        .collect();
    stable.sort();
    for k in &stable {
        if !k.starts_with(b"counter") {
            tree.insert(k, b"stable").unwrap();
        }
    }
    let done = AtomicBool::new(false);
    let oracles: Vec<(Oracle, usize)> = std::thread::scope(|s| {
        let scanner = s.spawn(|| {
            let mut scans = 0;
            while !done.load(Ordering::Relaxed) {
                if scans % 2 == 0 {
                    check_scan(tree.iter().map(|(k, _)| k), &stable);
                } else {
                    check_scan_rev(tree.iter().rev().map(|(k, _)| k), &stable);
                }
                scans += 1;
            }
            scans
        });
        let compactor = s.spawn(|| {
            let mut freed = 0;
            while compact && !done.load(Ordering::Relaxed) {
                freed += tree.compact();
                std::thread::yield_now();
            }
            freed
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let tree = &tree;
                s.spawn(move || {
                    let mut oracle = BTreeMap::new();
                    let mut x = 0x9e37_79b9 + t;
                    let start = Instant::now();
                    let mut draws = 0;
                    for i in 0.. {
                        // Past `ops`, go on (for at most 30 s) until a Contention Split has
                        // happened: it needs writers that meet on a latch, which a machine
                        // busy with other work makes rarer.
                        if i >= ops
                            && i % 1_000 == 0
                            && (tree.stats().contention_splits > 0
                                || start.elapsed() > Duration::from_secs(30))
                        {
                            break;
                        }
                        draws += 1;
                        let r = xorshift(&mut x);
                        // Keys of this thread: the low byte is the thread number.
                        let k = ((r % 20_000) << 8 | t).to_be_bytes().to_vec();
                        match r >> 60 {
                            0..=8 => {
                                let v = vec![t as u8; (r >> 40) as usize % 24];
                                tree.insert(&k, &v).unwrap();
                                oracle.insert(k.clone(), v);
                            }
                            9..=13 => {
                                let want = oracle.remove(&k);
                                assert_eq!(tree.remove(&k), want);
                            }
                            _ => {
                                tree.update_with(&counter_key(r % COUNTERS), |v| {
                                    // Hold the latch a little: scans no longer latch
                                    // leaves, so only writers make them contended.
                                    for _ in 0..200 {
                                        std::hint::spin_loop();
                                    }
                                    let n = u64::from_le_bytes(v.try_into().unwrap());
                                    v.copy_from_slice(&(n + 1).to_le_bytes());
                                });
                            }
                        }
                        if i % 10_000 == 0 {
                            assert_eq!(tree.get(&k), oracle.get(&k).cloned());
                        }
                    }
                    (oracle, draws)
                })
            })
            .collect();
        // Join every writer before the scanner is stopped, and only then re-raise a
        // writer's panic: unwrapping first would leave the scanner running, and the test
        // hanging, after a failed writer.
        let results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
        done.store(true, Ordering::Relaxed);
        assert!(scanner.join().unwrap() > 0);
        let freed = compactor.join().unwrap();
        eprintln!("{name}: compact() freed {freed} pages beside the writers");
        assert!(
            !compact || freed > 0,
            "compact() beside the writers freed nothing"
        );
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let stats = tree.stats();
    eprintln!("{name}: {stats:?}");
    assert!(stats.xmerges > 0, "{stats:?}");
    assert!(stats.contention_splits > 0, "{stats:?}");
    let draws: Vec<usize> = oracles.iter().map(|(_, n)| *n).collect();
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = oracles.into_iter().flat_map(|(o, _)| o).collect();
    for k in stable.iter().filter(|k| !k.starts_with(b"counter")) {
        oracle.insert(k.clone(), b"stable".to_vec());
    }
    let mut total = 0;
    for c in 0..COUNTERS {
        let v = tree.get(&counter_key(c)).unwrap();
        total += u64::from_le_bytes(v.as_slice().try_into().unwrap());
        oracle.insert(counter_key(c), v);
    }
    assert_matches(&tree, &oracle);
    // Every update was counted once: compare with a replay of the writers' draws.
    let mut updates = 0;
    for (t, &n) in (0..WRITERS).zip(&draws) {
        let mut x = 0x9e37_79b9 + t;
        for _ in 0..n {
            if xorshift(&mut x) >> 60 >= 14 {
                updates += 1;
            }
        }
    }
    assert_eq!(total, updates);
}

/// Fills a tree to its budget, removes most entries (merging off, so the leaves stay thin)
/// and inserts again: the inserts succeed because XMerge frees pages, and every insert that
/// fails leaves the tree as it was.
fn budget_run(space_manager: bool) {
    let tree = Tree::with_config(Config {
        max_memory: 48 * 4096,
        merge_threshold: 0.0,
        space_manager,
        ..Config::default()
    })
    .unwrap();
    let mut oracle = BTreeMap::new();
    let mut x = 77u64;
    let insert = |tree: &Tree, oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>, x: &mut u64| {
        let k = xorshift(x).to_be_bytes().to_vec();
        match tree.insert(&k, &k[..4]) {
            Ok(_) => {
                let v = k[..4].to_vec();
                oracle.insert(k, v);
                true
            }
            Err(Error::OutOfSpace { .. }) => {
                assert!(tree.get(&k).is_none(), "a failed insert left its key");
                false
            }
            Err(e) => panic!("unexpected {e}"),
        }
    };
    while insert(&tree, &mut oracle, &mut x) {}
    let full = oracle.len();
    assert_matches(&tree, &oracle);
    let keys: Vec<_> = oracle.keys().cloned().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 3 != 0 {
            assert!(tree.remove(k).is_some());
            oracle.remove(k);
        }
    }
    let mut added = 0;
    let mut failures = 0;
    while failures < 50 {
        if insert(&tree, &mut oracle, &mut x) {
            added += 1;
        } else {
            failures += 1;
            assert_matches(&tree, &oracle);
        }
    }
    let stats = tree.stats();
    assert!(stats.xmerges > 0, "{stats:?}");
    // The removed two thirds came back (nearly all of them): the pages were reclaimed.
    assert!(added * 10 >= (full - full / 3) * 8, "{added} of {full}");
    assert_matches(&tree, &oracle);
}

#[test]
fn at_the_budget_xmerge_frees_pages_before_out_of_space() {
    budget_run(false);
}

#[test]
fn at_the_budget_with_the_space_manager_running() {
    budget_run(true);
}

/// Sorted inserts of variable-length strings (paths) leave the leaves about half full
/// before compaction and over 90% full after.
#[test]
fn sorted_strings_compact_to_over_90_percent() {
    let tree = Tree::with_config(Config {
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    let mut oracle = BTreeMap::new();
    let mut x = 5u64;
    let mut keys: Vec<Vec<u8>> = (0..30_000)
        .map(|i| {
            let depth = 1 + xorshift(&mut x) % 4;
            let mut p = String::from("/srv");
            for d in 0..depth {
                p.push_str(&format!("/dir{}", (i >> (3 * d)) % 37));
            }
            p.push_str(&format!("/file{i}.txt"));
            p.into_bytes()
        })
        .collect();
    keys.sort();
    for k in &keys {
        tree.insert(k, b"12345678").unwrap();
    }
    // Sorted inserts leave full leaves; removing two keys in five thins them (above the
    // merge threshold), so that the fill factor compact() must raise is well below 0.9.
    for k in keys {
        if xorshift(&mut x) % 5 < 2 {
            tree.remove(&k).unwrap();
        } else {
            oracle.insert(k, b"12345678".to_vec());
        }
    }
    let before = tree.stats();
    eprintln!("before compact: {before:?}");
    assert!(before.fill_factor < 0.75, "{before:?}");
    tree.compact();
    let stats = tree.stats();
    eprintln!("after compact: {stats:?}");
    assert!(stats.fill_factor >= 0.9, "{stats:?}");
    assert!(stats.leaf_pages < before.leaf_pages, "{stats:?}");
    assert_matches(&tree, &oracle);
}

/// The manager raises the fill factor on its own and stops when the tree is dropped.
#[test]
fn the_space_manager_works_alone_and_stops_on_drop() {
    let tree = Tree::with_config(Config {
        space_manager_share: 0.5,
        ..Config::default()
    })
    .unwrap();
    let mut x = 3u64;
    for _ in 0..30_000 {
        let k = xorshift(&mut x).to_be_bytes();
        tree.insert(&k, &k).unwrap();
    }
    let before = tree.stats().fill_factor;
    let deadline = Instant::now() + Duration::from_secs(20);
    while tree.stats().fill_factor < 0.88 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = tree.stats();
    assert!(after.fill_factor >= 0.88, "{before} -> {after:?}");
    tree.check_invariants().unwrap();
    let start = Instant::now();
    for _ in 0..20 {
        let t = Tree::new();
        t.insert(b"k", b"v").unwrap();
        drop(t);
    }
    drop(tree);
    assert!(start.elapsed() < Duration::from_secs(5));
}
