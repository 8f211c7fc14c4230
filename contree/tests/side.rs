//! The side structure for hot ranges (`Config::side_structure`): every operation checked
//! against a `BTreeMap` oracle while ranges are hot, while they fill up and merge, and while
//! they are merged by reads; concurrent appends with point readers and scanners; the memory
//! budget; errors in a hot range.
//!
//! Run: `cargo test -p contree --release --test side`.

use contree::{Config, Error, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

fn side_config(merge_entries: usize) -> Config {
    Config {
        side_structure: contree::SideStructure::Always,
        side_merge_entries: merge_entries,
        side_ranges: 3,
        page_size: 4096,
        ..Config::default()
    }
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// Random operations of every kind on a tree whose ranges are marked hot at random, each
/// result compared with the oracle's.
#[test]
fn every_operation_sees_the_side_structure() {
    for seed in 0..6u64 {
        let tree = Tree::with_config(side_config(64)).unwrap();
        let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut rng = StdRng::seed_from_u64(seed);
        let span = 3000u64;
        for step in 0..12_000u32 {
            let k = key(rng.gen_range(0..span)).to_vec();
            let v = vec![rng.gen::<u8>(); rng.gen_range(0..40)];
            match rng.gen_range(0..100) {
                0..=1 => tree.side_mark(&k),
                2..=39 => {
                    assert_eq!(
                        tree.insert(&k, &v).unwrap(),
                        oracle.insert(k, v),
                        "step {step}"
                    )
                }
                40..=54 => assert_eq!(tree.remove(&k), oracle.remove(&k), "step {step}"),
                55..=69 => {
                    assert_eq!(tree.get(&k), oracle.get(&k).cloned(), "step {step}");
                    assert_eq!(tree.contains_key(&k), oracle.contains_key(&k));
                    assert_eq!(tree.get_with(&k, |v| v.to_vec()), oracle.get(&k).cloned());
                }
                70..=73 => {
                    let expected = oracle.get(&k).cloned();
                    let got = tree.compare_exchange(&k, expected.as_deref(), Some(&v));
                    assert!(matches!(got, Ok(Ok(_))), "step {step}: {got:?}");
                    oracle.insert(k, v);
                }
                74..=76 => {
                    let n = tree.update_with(&k, |val| {
                        for b in val.iter_mut() {
                            *b = b.wrapping_add(1);
                        }
                        val.len()
                    });
                    let m = oracle.get_mut(&k).map(|val| {
                        for b in val.iter_mut() {
                            *b = b.wrapping_add(1);
                        }
                        val.len()
                    });
                    assert_eq!(n, m, "step {step}");
                }
                77..=78 => {
                    let got = tree
                        .fetch_update(&k, |old| Some(old.map_or(vec![1], |o| [o, b"+"].concat())));
                    let old = oracle.get(&k).cloned();
                    let new = old
                        .clone()
                        .map_or(vec![1], |o| [o.as_slice(), b"+"].concat());
                    oracle.insert(k, new);
                    assert_eq!(got.unwrap(), old, "step {step}");
                }
                79..=81 => {
                    let end = key(u64::from_be_bytes(k[..8].try_into().unwrap()) + 40);
                    let got: Vec<_> = tree.range(&k[..]..&end[..]).collect();
                    let want: Vec<_> = oracle
                        .range(k.clone()..end.to_vec())
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got.len(), want.len(), "step {step}");
                    assert!(got.iter().zip(&want).all(|(a, b)| a.0 == b.0 && a.1 == b.1));
                }
                82 => {
                    assert_eq!(
                        tree.first(),
                        oracle
                            .first_key_value()
                            .map(|(k, v)| (k.clone(), v.clone()))
                    );
                    assert_eq!(
                        tree.last(),
                        oracle.last_key_value().map(|(k, v)| (k.clone(), v.clone()))
                    );
                }
                83 => {
                    assert_eq!(tree.pop_last(), oracle.pop_last(), "step {step}");
                }
                84..=86 => {
                    let batch: Vec<_> = (0..20)
                        .map(|_| (key(rng.gen_range(0..span)).to_vec(), v.clone()))
                        .collect();
                    tree.insert_many(batch.clone()).unwrap();
                    oracle.extend(batch);
                }
                87 => {
                    let keys: Vec<_> = (0..10)
                        .map(|_| key(rng.gen_range(0..span)).to_vec())
                        .collect();
                    let got = tree.get_many(&keys);
                    let want: Vec<_> = keys.iter().map(|k| oracle.get(k).cloned()).collect();
                    assert_eq!(got, want, "step {step}");
                }
                88 => {
                    let lo = rng.gen_range(0..span);
                    let n = tree.remove_range(&key(lo)[..]..&key(lo + 15)[..]);
                    let gone: Vec<_> = oracle
                        .range(key(lo).to_vec()..key(lo + 15).to_vec())
                        .map(|(k, _)| k.clone())
                        .collect();
                    assert_eq!(n, gone.len(), "step {step}");
                    for k in gone {
                        oracle.remove(&k);
                    }
                }
                89 => {
                    let m = rng.gen::<u8>() | 1;
                    tree.retain(|_, v| v.first().is_none_or(|b| b % m != 0));
                    oracle.retain(|_, v| v.first().is_none_or(|b| b % m != 0));
                }
                90..=97 => {
                    // Appends past the end: the hot spot the side structure is for.
                    let top = oracle
                        .last_key_value()
                        .map_or(0, |(k, _)| u64::from_be_bytes(k[..8].try_into().unwrap()));
                    let k = key(top + 1).to_vec();
                    assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
                }
                _ => assert_eq!(tree.len(), oracle.len(), "step {step}"),
            }
        }
        let stats = tree.stats();
        assert!(stats.side_diverted > 0, "seed {seed}: nothing diverted");
        assert!(stats.side_merges > 0, "seed {seed}: nothing merged");
        assert_eq!(tree.len(), oracle.len());
        let all: Vec<_> = tree.iter().collect();
        assert!(all
            .iter()
            .map(|(k, v)| (k.to_vec(), v.to_vec()))
            .eq(oracle.clone()));
        tree.check_invariants().unwrap();
        assert_eq!(tree.stats().side_entries, 0, "read everything: merged");
    }
}

/// A range fills up, merges and is marked again at the right edge, over and over: the
/// tree ends up with every key, in order, and the range follows the appends.
#[test]
fn appends_merge_and_follow_the_right_edge() {
    let tree = Tree::with_config(side_config(256)).unwrap();
    tree.insert(&key(0), b"v").unwrap();
    tree.side_mark(&key(0));
    for i in 1..20_000u64 {
        assert_eq!(tree.insert(&key(i), &i.to_le_bytes()).unwrap(), None);
    }
    let s = tree.stats();
    assert!(s.side_diverted >= 19_000, "{s:?}");
    assert!(s.side_merges >= 50, "{s:?}");
    assert_eq!(s.side_ranges, 1, "an append range stays hot: {s:?}");
    assert!(s.side_entries < 256);
    assert_eq!(tree.len(), 20_000);
    // Point reads of keys still in the side structure, and of merged ones.
    for i in (1..20_000u64).step_by(7) {
        assert_eq!(tree.get(&key(i)), Some(i.to_le_bytes().to_vec()));
    }
    // A removal of a key in the side structure leaves a tombstone; a re-insert replaces it.
    assert_eq!(
        tree.remove(&key(19_999)),
        Some(19_999u64.to_le_bytes().to_vec())
    );
    assert_eq!(tree.get(&key(19_999)), None);
    assert_eq!(tree.insert(&key(19_999), b"x").unwrap(), None);
    assert_eq!(tree.get(&key(19_999)), Some(b"x".to_vec()));
    assert_eq!(tree.last().unwrap().0, key(19_999));
    assert_eq!(
        tree.stats().side_ranges,
        0,
        "a read over the range merged and cooled it"
    );
    tree.check_invariants().unwrap();
    assert_eq!(tree.iter().count(), 20_000);
}

/// At most `side_ranges` ranges are hot: marking another merges the least recently used.
#[test]
fn ranges_are_limited_and_evicted() {
    let tree = Tree::with_config(Config {
        side_ranges: 2,
        ..side_config(1 << 20)
    })
    .unwrap();
    for i in 0..5000u64 {
        tree.insert(&key(i * 10), b"v").unwrap();
    }
    for k in [0u64, 20_000, 40_000] {
        tree.side_mark(&key(k));
        tree.insert(&key(k + 1), b"w").unwrap();
    }
    let s = tree.stats();
    assert_eq!(s.side_ranges, 2, "{s:?}");
    assert_eq!(s.side_ranges_marked, 3);
    assert_eq!(s.side_ranges_cooled, 1);
    for k in [0u64, 20_000, 40_000] {
        assert_eq!(tree.get(&key(k + 1)), Some(b"w".to_vec()));
    }
    assert_eq!(tree.len(), 5003);
    tree.compact();
    assert_eq!(tree.stats().side_ranges, 0, "compact merges everything");
    tree.check_invariants().unwrap();
}

/// Oversized input in a hot range is refused as everywhere, and changes nothing.
#[test]
fn errors_in_a_hot_range_change_nothing() {
    let tree = Tree::with_config(side_config(64)).unwrap();
    tree.insert(&key(5), b"v").unwrap();
    tree.side_mark(&key(5));
    tree.insert(&key(6), b"w").unwrap();
    let long_key = vec![1u8; tree.config().max_key_len() + 1];
    let long_value = vec![1u8; tree.config().max_value_len() + 1];
    assert!(matches!(
        tree.insert(&long_key, b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    assert!(matches!(
        tree.insert(&key(7), &long_value),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(tree.remove(&long_key), None);
    // Values too long to stay inline take the normal path under the shard's mutex.
    let big = vec![9u8; 3 * tree.config().max_inline_value_len()];
    assert_eq!(tree.insert(&key(6), &big).unwrap(), Some(b"w".to_vec()));
    assert_eq!(tree.get(&key(6)), Some(big.clone()));
    assert_eq!(tree.insert(&key(6), b"s").unwrap(), Some(big));
    assert_eq!(tree.len(), 2);
    assert_eq!(tree.get(&key(7)), None);
    tree.check_invariants().unwrap();
}

/// Under a tight budget the side structure's charge counts: diverted inserts fail with
/// `OutOfSpace` like the tree's own, and no insert that returned `Ok` is lost.
#[test]
fn the_budget_counts_the_side_structure() {
    let tree = Tree::with_config(Config {
        max_memory: 64 * 4096,
        space_manager: false,
        ..side_config(512)
    })
    .unwrap();
    tree.insert(&key(0), b"v").unwrap();
    tree.side_mark(&key(0));
    let mut ok = vec![0u64];
    let mut failed = 0;
    for i in 1..40_000u64 {
        match tree.insert(&key(i), &[3u8; 24]) {
            Ok(None) => ok.push(i),
            Ok(Some(_)) => panic!("a new key had a value"),
            Err(Error::OutOfSpace { .. }) => failed += 1,
            Err(e) => panic!("{e}"),
        }
        if failed > 100 {
            break;
        }
    }
    assert!(failed > 0, "the budget never ran out");
    assert!(tree.stats().bytes_allocated <= 64 * 4096 + 16 * 4096);
    for &i in &ok {
        assert!(tree.contains_key(&key(i)), "key {i} lost");
    }
    assert_eq!(tree.len(), ok.len());
    tree.check_invariants().unwrap();
}

/// Writers append from many threads (the policy marks the right edge hot by itself) while
/// readers look up recent keys and scan from them: every read sees every key whose insert
/// completed before it began, scans are sorted, and the tree ends complete.
#[test]
fn concurrent_appends_with_readers_and_scanners() {
    let tree = Tree::with_config(Config {
        contention_threshold: 0.0,
        contention_sample_shift: 0,
        contention_period_shift: 4,
        ..side_config(512)
    })
    .unwrap();
    let per_writer = 60_000u64;
    let writers = 4u64;
    // Writer `w` inserts keys `w, w + writers, ...` in order; `progress[w]` counts its
    // inserts that returned. Every key below `top()` is in.
    let progress: Vec<AtomicU64> = (0..writers).map(|_| AtomicU64::new(0)).collect();
    let top = || {
        (0..writers)
            .map(|w| progress[w as usize].load(Ordering::SeqCst) * writers + w)
            .min()
            .unwrap()
    };
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for w in 0..writers {
            let (tree, progress) = (&tree, &progress);
            s.spawn(move || {
                for n in 0..per_writer {
                    let i = n * writers + w;
                    assert_eq!(tree.insert(&key(i), &i.to_le_bytes()).unwrap(), None);
                    progress[w as usize].store(n + 1, Ordering::SeqCst);
                }
            });
        }
        for r in 0..2 {
            let (tree, top, stop) = (&tree, &top, &stop);
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(r);
                while !stop.load(Ordering::Relaxed) {
                    let top = top();
                    if top < 200 {
                        std::thread::yield_now();
                        continue;
                    }
                    let from = top - rng.gen_range(1..200);
                    if r == 0 {
                        assert_eq!(tree.get(&key(from)), Some(from.to_le_bytes().to_vec()));
                    } else {
                        // Below `top` every key must be there; above it, any key
                        // inserted meanwhile may or may not be, in order.
                        let (mut expect, mut seen) = (from, 0);
                        let mut prev: Option<Vec<u8>> = None;
                        tree.scan(&key(from)[..].., |k, _| {
                            if expect < top {
                                assert_eq!(
                                    k,
                                    key(expect),
                                    "a scan missed a key inserted before it"
                                );
                                expect += 1;
                            }
                            assert!(prev.as_deref().is_none_or(|p| p < k), "a scan out of order");
                            prev = Some(k.to_vec());
                            seen += 1;
                            if seen == 100 {
                                ControlFlow::Break(())
                            } else {
                                ControlFlow::Continue(())
                            }
                        });
                        assert!(expect >= top.min(from + 100), "a scan ended early");
                    }
                }
            });
        }
        while top() < writers * per_writer {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let s = tree.stats();
    println!("{s:?}");
    assert!(
        s.side_ranges_marked > 0,
        "the policy never marked the right edge: {s:?}"
    );
    assert!(s.side_diverted > 0, "{s:?}");
    assert_eq!(tree.len() as u64, writers * per_writer);
    tree.check_invariants().unwrap();
    assert!(tree
        .iter()
        .map(|(k, _)| k)
        .eq((0..writers * per_writer).map(|i| key(i).to_vec())));
}

/// A closure that runs under a hot key's shard mutex (here `update_with`'s) and calls into
/// the tree panics with the re-entry message instead of waiting for ever.
#[test]
#[should_panic(expected = "update_with")]
fn a_reentrant_call_under_a_shard_mutex_panics() {
    let tree = Tree::with_config(side_config(64)).unwrap();
    tree.insert(&key(1), b"v").unwrap();
    tree.side_mark(&key(1));
    tree.insert(&key(2), b"w").unwrap();
    tree.update_with(&key(2), |_| tree.insert(&key(3), b"x").unwrap());
}

/// A config whose sampler counts every change and ends a period every 4: a single thread's
/// appends then ask for a hot range every few inserts (a threshold of 0.0 counts every
/// period as contended), so that the policy's answer is deterministic.
fn policy_config(mode: contree::SideStructure) -> Config {
    Config {
        side_structure: mode,
        side_merge_entries: 64,
        contention_threshold: 0.0,
        contention_sample_shift: 0,
        contention_period_shift: 2,
        ..Config::default()
    }
}

/// `SideStructure::WithScans` (the default): contended appends are diverted only while
/// range reads run beside them, and the tree goes back to leaf combining when they stop;
/// `Always` diverts without scans, `Off` never. Every key stays readable throughout.
#[test]
fn the_side_structure_follows_the_scans() {
    use contree::SideStructure::{Always, Off, WithScans};
    let append = |tree: &Tree, from: u64, n: u64, scan_every: u64| {
        for i in from..from + n {
            tree.insert(&key(i), &key(i)).unwrap();
            if scan_every > 0 && i % scan_every == 0 {
                // A range read that starts at a recent key.
                let got: Vec<_> = tree.range(key(i.saturating_sub(5)).to_vec()..).collect();
                assert_eq!(got.len() as u64, i.min(5) + 1, "scan at {i}");
            }
        }
    };
    let all_there = |tree: &Tree, n: u64| {
        for i in 0..n {
            assert_eq!(tree.get(&key(i)), Some(key(i).to_vec()), "key {i}");
        }
        assert_eq!(tree.iter().count() as u64, n);
        assert_eq!(tree.len() as u64, n);
    };

    let tree = Tree::with_config(policy_config(WithScans)).unwrap();
    append(&tree, 0, 2000, 0);
    let s = tree.stats();
    assert!(s.append_hot_periods > 100, "the sampler asked: {s:?}");
    assert_eq!(s.side_ranges_marked, 0, "no scans, no hot range");
    assert_eq!(s.side_diverted, 0);
    // Scans beside the appends: the range becomes hot and takes the appends.
    append(&tree, 2000, 2000, 50);
    let s = tree.stats();
    assert!(s.side_ranges_marked >= 1, "{s:?}");
    assert!(s.side_diverted > 1000, "{s:?}");
    // The scans stop: the next merge cools the range for good.
    append(&tree, 4000, 500, 0);
    let (marked, diverted) = (tree.stats().side_ranges_marked, tree.stats().side_diverted);
    append(&tree, 4500, 2000, 0);
    let s = tree.stats();
    assert_eq!(s.side_ranges, 0, "{s:?}");
    assert_eq!(
        s.side_ranges_marked, marked,
        "marked again without scans: {s:?}"
    );
    assert_eq!(s.side_diverted, diverted, "{s:?}");
    all_there(&tree, 6500);

    let tree = Tree::with_config(policy_config(Always)).unwrap();
    append(&tree, 0, 2000, 0);
    let s = tree.stats();
    assert!(s.side_ranges_marked >= 1 && s.side_diverted > 1000, "{s:?}");
    all_there(&tree, 2000);

    let tree = Tree::with_config(policy_config(Off)).unwrap();
    append(&tree, 0, 2000, 50);
    let s = tree.stats();
    assert!(s.append_hot_periods > 100, "{s:?}");
    assert_eq!((s.side_ranges_marked, s.side_diverted), (0, 0), "{s:?}");
    all_there(&tree, 2000);
}
