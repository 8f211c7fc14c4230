//! Memory follows contents under churn (issue "Space under churn"): removals in any order,
//! queues and sliding windows, hot marks, and the memory budget. Each bound is the issue's:
//! pages never exceed twice the pages a freshly compacted tree needs for the live entries,
//! plus 64.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Config, Error, Tree};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn config(space_manager: bool) -> Config {
    Config {
        space_manager,
        ..Config::default()
    }
}

#[path = "../examples/support/fifo.rs"]
mod fifo;
use fifo::{pages, run_fifo};

/// Pages a fresh tree holding `entries`, compacted, needs.
fn compacted_pages<'a>(entries: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> usize {
    let t = Tree::with_config(config(false)).unwrap();
    for (k, v) in entries {
        t.insert(k, v).unwrap();
    }
    t.compact();
    pages(&t)
}

fn bound(live: usize) -> usize {
    2 * live + 64
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Inserts `keys`, removes them in `order`, checking the page bound every 2,000 removals
/// and at the end (an empty tree: one page).
fn removals_stay_bounded(space_manager: bool, keys: Vec<Vec<u8>>, order: &[usize]) {
    let t = Tree::with_config(config(space_manager)).unwrap();
    let mut oracle = BTreeMap::new();
    for k in &keys {
        t.insert(k, b"value").unwrap();
        oracle.insert(k.clone(), b"value".to_vec());
    }
    for (n, &i) in order.iter().enumerate() {
        assert!(t.remove(&keys[i]).is_some());
        oracle.remove(&keys[i]);
        if n % 2000 == 1999 {
            let live = compacted_pages(oracle.iter().map(|(k, v)| (&k[..], &v[..])));
            let held = pages(&t);
            assert!(
                held <= bound(live),
                "{held} pages after {} removals, {live} needed",
                n + 1
            );
        }
    }
    assert_eq!(t.len(), 0);
    let held = pages(&t);
    assert!(held <= bound(1), "{held} pages left in an empty tree");
    t.check_invariants().unwrap();
    // The emptied tree is fully usable again.
    for k in keys.iter().take(1000) {
        t.insert(k, b"again").unwrap();
    }
    t.check_invariants().unwrap();
}

fn u64_keys(n: usize) -> Vec<Vec<u8>> {
    (0..n as u64).map(|i| i.to_be_bytes().to_vec()).collect()
}

#[test]
fn removals_in_any_order_free_the_emptied_leaves() {
    let n = 50_000;
    let ascending: Vec<usize> = (0..n).collect();
    let descending: Vec<usize> = (0..n).rev().collect();
    let mut random = ascending.clone();
    let mut x = 7u64;
    for i in (1..n).rev() {
        random.swap(i, xorshift(&mut x) as usize % (i + 1));
    }
    for manager in [false, true] {
        for order in [&ascending, &descending, &random] {
            removals_stay_bounded(manager, u64_keys(n), order);
        }
    }
}

#[test]
fn removing_long_random_keys_in_ascending_order_frees_them() {
    let mut x = 11u64;
    let mut keys: Vec<Vec<u8>> = (0..10_000)
        .map(|_| {
            let mut k = vec![0u8; 256];
            for c in k.chunks_mut(8) {
                c.copy_from_slice(&xorshift(&mut x).to_be_bytes());
            }
            k
        })
        .collect();
    keys.sort();
    keys.dedup();
    let order: Vec<usize> = (0..keys.len()).collect();
    removals_stay_bounded(false, keys, &order);
}

#[test]
fn a_sliding_window_runs_in_bounded_memory() {
    for manager in [false, true] {
        let t = Tree::with_config(config(manager)).unwrap();
        let window = 1000u64;
        let live = compacted_pages(
            u64_keys(window as usize)
                .iter()
                .map(|k| (&k[..], &b"value"[..])),
        );
        let mut most = 0;
        for i in 0..200_000u64 {
            t.insert(&i.to_be_bytes(), b"value").unwrap();
            if i >= window {
                assert!(t.remove(&(i - window).to_be_bytes()).is_some());
            }
            if i % 5000 == 0 {
                most = most.max(pages(&t));
            }
        }
        assert!(most <= bound(live), "{most} pages for a window of {window}");
        t.check_invariants().unwrap();
    }
}

#[test]
fn a_fifo_queue_runs_in_bounded_memory() {
    let cap = 20_000;
    let keys = u64_keys(cap);
    let live = compacted_pages(keys.iter().map(|k| (&k[..], &[0u8; 8][..])));
    for manager in [false, true] {
        let t = Tree::with_config(config(manager)).unwrap();
        let f = run_fifo(
            &t,
            Duration::from_millis(1500),
            cap,
            Duration::from_millis(50),
        );
        assert!(f.inserted > cap as u64 && f.removed > 0, "the queue ran");
        let most = f.most_pages;
        t.check_invariants().unwrap();
        assert!(
            most <= bound(live),
            "space manager {manager}: {most} pages for at most {cap} entries ({live} needed)"
        );
    }
}

/// With a threshold of 0.0 every counting period counts as contended: hot marks must still
/// expire, and an emptied tree must give its pages back and take inserts again.
#[test]
fn hot_marks_expire_and_empty_hot_leaves_are_freed() {
    let t = Tree::with_config(Config {
        space_manager: false,
        contention_threshold: 0.0,
        contention_sample_shift: 0,
        contention_period_shift: 3,
        max_memory: 512 * 4096,
        ..Config::default()
    })
    .unwrap();
    let mut x = 3u64;
    let keys: Vec<[u8; 8]> = (0..20_000)
        .map(|_| xorshift(&mut x).to_be_bytes())
        .collect();
    for k in &keys {
        t.insert(k, b"v").unwrap();
    }
    assert!(t.stats().contention_splits > 0, "the test needs hot leaves");
    for k in &keys {
        t.remove(k);
    }
    assert_eq!(t.len(), 0);
    let held = pages(&t);
    assert!(held <= bound(1), "{held} pages pinned by hot marks");
    for k in &keys {
        t.insert(k, b"v").unwrap();
    }
    assert_eq!(t.len(), keys.len());
    t.check_invariants().unwrap();
}

/// At the budget, reclaiming is bounded work and its global part is not repeated while
/// nothing changed: failing inserts are cheap and do not run XMerge again and again.
#[test]
fn failing_inserts_at_the_budget_are_fast() {
    let t = Tree::with_config(Config {
        space_manager: false,
        max_memory: 64 * 4096,
        ..Config::default()
    })
    .unwrap();
    let mut x = 5u64;
    let mut n = 0;
    loop {
        match t.insert(&xorshift(&mut x).to_be_bytes(), &[1u8; 8]) {
            Ok(_) => n += 1,
            Err(Error::OutOfSpace { .. }) => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(n > 1000);
    let before = t.stats().xmerge_attempts;
    let start = Instant::now();
    let (mut tried, mut failed) = (0u64, 0);
    while failed < 2000 && tried < 100_000 {
        tried += 1;
        if t.insert(&xorshift(&mut x).to_be_bytes(), &[1u8; 8])
            .is_err()
        {
            failed += 1;
        }
    }
    let per = start.elapsed() / tried as u32;
    let attempts = t.stats().xmerge_attempts - before;
    assert_eq!(failed, 2000, "the budget stays full");
    let fill = t.stats().fill_factor;
    assert!(
        fill > 0.85,
        "the budget is full only once leaves are packed: {fill}"
    );
    assert!(
        attempts <= 4 * tried,
        "{attempts} XMerge attempts for {tried} inserts"
    );
    assert!(per < Duration::from_micros(100), "{per:?} per insert");
    t.check_invariants().unwrap();
}

/// One `compact` reaches its own fixpoint: packing leaves across parents included.
#[test]
fn compact_reaches_its_fixpoint_in_one_call() {
    // Only empty nodes merge on removal: the leaves keep a few entries each, under many
    // parents.
    let t = Tree::with_config(Config {
        merge_threshold: 0.0,
        ..config(false)
    })
    .unwrap();
    let mut x = 9u64;
    let keys: Vec<[u8; 8]> = (0..20_000)
        .map(|_| xorshift(&mut x).to_be_bytes())
        .collect();
    for k in &keys {
        t.insert(k, &[3u8; 249]).unwrap();
    }
    // Keep 2,000 entries spread over the whole tree.
    for (i, k) in keys.iter().enumerate() {
        if i % 10 != 0 {
            t.remove(k);
        }
    }
    t.compact();
    let after = pages(&t);
    assert_eq!(t.compact(), 0, "a second call found more to free");
    let live = compacted_pages(keys.iter().step_by(10).map(|k| (&k[..], &[3u8; 249][..])));
    assert!(after <= live + 1, "{after} pages, {live} needed");
    t.check_invariants().unwrap();
}

/// `compact` never waits for a latch: not even in a one-leaf tree whose only leaf another
/// thread holds in a long `update_with`.
#[test]
fn compact_does_not_wait_for_a_busy_root_leaf() {
    let _watchdog = watchdog(
        "compact_does_not_wait_for_a_busy_root_leaf",
        Duration::from_secs(300),
    );
    let t = Tree::with_config(config(false)).unwrap();
    t.insert(b"k", &[0u8; 8]).unwrap();
    let inside = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            t.update_with(b"k", |_| {
                inside.store(true, Ordering::Release);
                std::thread::sleep(Duration::from_millis(400));
            });
        });
        while !inside.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let start = Instant::now();
        t.compact();
        let took = start.elapsed();
        assert!(took < Duration::from_millis(200), "compact waited {took:?}");
    });
}

#[cfg(target_os = "linux")]
#[path = "../examples/support/rss.rs"]
mod rss;

#[cfg(target_os = "linux")]
#[test]
fn emptied_memory_goes_back_to_the_system() {
    for space_manager in [false, true] {
        let t = Tree::with_config(config(space_manager)).unwrap();
        // 64 MiB of 256-byte values, then all removed.
        let value = [7u8; 256];
        for i in 0..200_000u64 {
            t.insert(&i.to_be_bytes(), &value).unwrap();
        }
        let full = rss::rss();
        for i in 0..200_000u64 {
            assert!(t.remove(&i.to_be_bytes()).is_some());
        }
        t.compact();
        let s = t.stats();
        assert_eq!(s.bytes_free, 0, "{s:?}");
        assert!(s.bytes_returned >= 50 << 20, "{s:?}");
        let after = rss::rss();
        assert!(
            full - after >= 40 << 20,
            "RSS {full} -> {after}: memory was not given back"
        );
        // The returned pages are reused, correctly.
        for i in 0..50_000u64 {
            t.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
        }
        for i in 0..50_000u64 {
            assert_eq!(t.get(&i.to_be_bytes()).unwrap(), i.to_le_bytes());
        }
        t.check_invariants().unwrap();
    }
}

/// Readers keep reading correct values while other threads free pages, give their memory
/// back (`compact` in a loop) and reuse them: the versions of returned pages never let a
/// stale optimistic read through.
#[test]
fn readers_stay_correct_while_pages_go_back_and_return() {
    let _watchdog = watchdog(
        "readers_stay_correct_while_pages_go_back_and_return",
        Duration::from_secs(300),
    );
    let t = Tree::with_config(Config {
        page_size: 4096,
        ..config(false)
    })
    .unwrap();
    let stable = |i: u64| (i * 2).to_be_bytes();
    let churn = |i: u64| (i * 2 + 1).to_be_bytes();
    for i in 0..20_000u64 {
        t.insert(&stable(i), &i.to_le_bytes()).unwrap();
    }
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_millis(1500);
    std::thread::scope(|s| {
        for r in 0..2u64 {
            let (t, stop) = (&t, &stop);
            s.spawn(move || {
                let mut x = 0x1234_5678 + r;
                while !stop.load(Ordering::Relaxed) {
                    let i = xorshift(&mut x) % 20_000;
                    assert_eq!(t.get(&stable(i)).unwrap(), i.to_le_bytes(), "key {i}");
                    let from = xorshift(&mut x) % 20_000;
                    let n = t
                        .range_of(&stable(from)[..]..&stable(from + 50)[..])
                        .filter(|(k, _)| k[7] % 2 == 0)
                        .count();
                    assert_eq!(n as u64, 50.min(20_000 - from));
                }
            });
        }
        for w in 0..2u64 {
            let (t, stop) = (&t, &stop);
            s.spawn(move || {
                let mut round = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Fill a range of odd keys (leaves split) and empty it (they merge);
                    // each writer has its own keys.
                    let base = (w * 10_000 + round * 997) % 19_000;
                    let mine = (base..base + 2_000).filter(|i| i % 2 == w);
                    for i in mine.clone() {
                        t.insert(&churn(i), &[1u8; 100]).unwrap();
                    }
                    for i in mine {
                        assert!(t.remove(&churn(i)).is_some());
                    }
                    round += 1;
                }
            });
        }
        let (t, stop) = (&t, &stop);
        s.spawn(move || {
            while Instant::now() < deadline {
                t.compact();
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    t.check_invariants().unwrap();
    assert_eq!(t.len(), 20_000);
    assert!(t.stats().bytes_returned > 0 || cfg!(not(target_os = "linux")));
}
