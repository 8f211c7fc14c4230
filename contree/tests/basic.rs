//! Quick end-to-end checks of the byte API against a `BTreeMap` oracle with seeded random
//! operations: inserts, overwrites with other value sizes, removals, point reads and scans.

use contree::{Config, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::Duration;

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::{check_scan, check_scan_rev, watchdog};

fn run(seed: u64, ops: usize, key_space: u64, page_size: usize) {
    let tree = Tree::with_config(Config {
        page_size,
        ..Config::default()
    })
    .unwrap();
    let mut oracle = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..ops {
        let k = rng.gen_range(0..key_space);
        let key = match k % 3 {
            0 => k.to_be_bytes().to_vec(),
            1 => format!("user{k}").into_bytes(),
            _ => vec![b'x'; (k % 200) as usize],
        };
        match rng.gen_range(0..10) {
            0..=5 => {
                let value = vec![(i % 251) as u8; rng.gen_range(0..40)];
                assert_eq!(
                    tree.insert(&key, &value).unwrap(),
                    oracle.insert(key, value)
                );
            }
            6..=7 => assert_eq!(tree.remove(&key), oracle.remove(&key)),
            _ => assert_eq!(tree.get(&key), oracle.get(&key).cloned()),
        }
    }
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), oracle.len());
    let all: Vec<_> = tree
        .iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    let expect: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, expect);
    let rev: Vec<_> = tree
        .iter()
        .rev()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    let expect_rev: Vec<_> = expect.iter().rev().cloned().collect();
    assert_eq!(rev, expect_rev);
    // Remove everything: merges collapse the tree back to one leaf.
    for k in oracle.keys() {
        assert!(tree.remove(k).is_some());
    }
    tree.check_invariants().unwrap();
    assert!(tree.is_empty());
    assert_eq!(tree.iter().next(), None);
}

#[test]
fn random_ops_match_oracle_small_pages() {
    run(1, 200_000, 20_000, 4096);
}

#[test]
fn random_ops_match_oracle_large_pages() {
    run(2, 100_000, 5_000, 16384);
}

#[test]
fn sequential_inserts_fill_pages() {
    let tree = Tree::new();
    for i in 0u64..100_000 {
        tree.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    tree.check_invariants().unwrap();
    let s = tree.stats();
    assert!(s.fill_factor > 0.75, "{s:?}");
    assert!(s.bytes_allocated / tree.len() <= 22, "{s:?}");
    assert_eq!(tree.first().unwrap().0, 0u64.to_be_bytes().to_vec());
    assert_eq!(tree.last().unwrap().0, 99_999u64.to_be_bytes().to_vec());
}

/// Appends that arrive a little out of order, as auto-increment keys handed out to several
/// threads do (here each pair of keys swapped): a leaf split by a key a few slots short of
/// the rightmost leaf's end is split there, not in the middle, so leaves stay nearly full.
#[test]
fn appends_out_of_order_fill_pages() {
    let tree = Tree::new();
    let n = 200_000u64;
    for i in 0..n {
        let k = i ^ 1;
        tree.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    tree.check_invariants().unwrap();
    let s = tree.stats();
    assert_eq!(tree.len() as u64, n);
    assert!(s.fill_factor > 0.95, "{s:?}");
    let mut it = tree.iter();
    for i in 0..n {
        let (k, v) = it.next().unwrap();
        assert_eq!(k, i.to_be_bytes());
        assert_eq!(v, i.to_le_bytes());
    }
    assert!(it.next().is_none());
}

/// Auto-increment keys from one shared counter, appended by several threads: a key handed
/// out before a split of the rightmost leaf and inserted after it (its thread was preempted,
/// or asleep on the latch) finds room, and every key is stored once. Without room for such
/// keys, each split a full leaf in the middle (fill factor 0.69-0.79 here, against
/// 0.93-0.95).
#[test]
fn concurrent_appends_fill_pages() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let tree = Tree::new();
    let next = AtomicU64::new(0);
    let n = 400_000u64;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n {
                    break;
                }
                assert_eq!(
                    tree.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap(),
                    None
                );
            });
        }
    });
    tree.check_invariants().unwrap();
    assert_eq!(tree.len() as u64, n);
    let s = tree.stats();
    assert!(s.fill_factor > 0.88, "{s:?}");
    for (i, (k, v)) in tree.iter().enumerate() {
        assert_eq!(k, (i as u64).to_be_bytes());
        assert_eq!(v, (i as u64).to_le_bytes());
    }
}

/// Appends whose carries change bytes of the rightmost leaf's prefix (taken from its keys):
/// a key above every key of the leaf that lacks the prefix is not stored by the append
/// finger's shortcut (which skips the prefix compare) but by the search and a rebuild with a
/// shorter prefix. Every key reads back, in order, with its own value.
#[test]
fn appends_across_prefix_carries_keep_every_key() {
    let tree = Tree::new();
    // Crosses 2^56 (the top byte) and, on the way, every lower byte's carry.
    let base = 0x00ff_ffff_ffff_0000u64;
    let n = 150_000u64;
    for i in 0..n {
        let k = (base + i).to_be_bytes();
        assert_eq!(tree.insert(&k, &i.to_le_bytes()).unwrap(), None, "{i}");
    }
    assert_eq!(tree.len(), n as usize);
    tree.check_invariants().unwrap();
    for i in (0..n).step_by(7) {
        let got = tree.get(&(base + i).to_be_bytes());
        assert_eq!(got, Some(i.to_le_bytes().to_vec()), "{i}");
    }
    let mut want = 0u64;
    for (k, v) in tree.iter() {
        assert_eq!(&k[..], &(base + want).to_be_bytes()[..]);
        assert_eq!(&v[..], &want.to_le_bytes()[..]);
        want += 1;
    }
    assert_eq!(want, n);
}

#[test]
fn concurrent_disjoint_writers_and_scanners() {
    let _watchdog = watchdog(
        "concurrent_disjoint_writers_and_scanners",
        Duration::from_secs(300),
    );
    let tree = Tree::new();
    let threads = 4u64;
    let per = 50_000u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            let tree = &tree;
            s.spawn(move || {
                let mut rng = StdRng::seed_from_u64(t);
                for i in 0..per {
                    let k = (i * threads + t).to_be_bytes();
                    tree.insert(&k, &i.to_le_bytes()).unwrap();
                    if i % 3 == 0 {
                        assert_eq!(tree.remove(&k), Some(i.to_le_bytes().to_vec()));
                    }
                    let probe = rng.gen_range(0..per * threads).to_be_bytes();
                    let _ = tree.get(&probe);
                    if i % 5000 == 0 {
                        // This thread's keys so far that it kept are stable: only it
                        // writes them.
                        let own = (0..=i)
                            .filter(|j| j % 3 != 0)
                            .map(|j| (j * threads + t).to_be_bytes());
                        if i % 10_000 == 0 {
                            check_scan(tree.iter().map(|(k, _)| k), own);
                        } else {
                            check_scan_rev(tree.iter().rev().map(|(k, _)| k), own);
                        }
                    }
                }
            });
        }
    });
    tree.check_invariants().unwrap();
    let expect = (0..threads * per)
        .filter(|k| !(k / threads).is_multiple_of(3))
        .count();
    assert_eq!(tree.len(), expect);
    assert_eq!(tree.iter().count(), expect);
}

/// 16 threads on (typically) 2 cores hammer one key: waiters must sleep rather than spin,
/// every thread must make progress, and no increment may be lost.
#[test]
fn oversubscribed_hot_key_makes_progress_everywhere() {
    let tree = Tree::new();
    tree.insert(b"hot", &0u64.to_le_bytes()).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let counts: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                let (tree, stop) = (&tree, &stop);
                s.spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        tree.update_with(b"hot", |v| {
                            let x = u64::from_le_bytes(v.try_into().unwrap()) + 1;
                            v.copy_from_slice(&x.to_le_bytes());
                        })
                        .unwrap();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        counts.iter().all(|&n| n > 0),
        "a thread starved: {counts:?}"
    );
    let total: u64 = counts.iter().sum();
    assert_eq!(tree.get(b"hot"), Some(total.to_le_bytes().to_vec()));
}

/// 16 threads on (typically) 2 cores insert random new keys between two adjacent keys, so
/// that splits of the same few leaves and their parent follow each other closely (each split
/// takes its pages before its latches and returns those a restart leaves unused): every key
/// lands once and every page the tree holds is reachable.
#[test]
fn oversubscribed_inserts_into_one_gap_keep_every_page() {
    let tree = Tree::new();
    for i in 0u64..2_000 {
        tree.insert(&(i << 32).to_be_bytes(), b"loaded").unwrap();
    }
    let base = 1_000u64 << 32;
    let ids: Vec<std::collections::BTreeSet<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16u64)
            .map(|t| {
                let tree = &tree;
                s.spawn(move || {
                    let mut mine = std::collections::BTreeSet::new();
                    let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    for _ in 0..4_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Distinct keys per thread (the low bits), interleaved across the gap.
                        let id = ((x % (1 << 27)) << 4) | t;
                        tree.insert(&(base + 1 + id).to_be_bytes(), &id.to_le_bytes())
                            .unwrap();
                        mine.insert(id);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    tree.check_invariants().unwrap();
    let all: Vec<u64> = ids.into_iter().flatten().collect();
    assert_eq!(tree.len(), 2_000 + all.len());
    for id in all {
        let got = tree.get(&(base + 1 + id).to_be_bytes());
        assert_eq!(got, Some(id.to_le_bytes().to_vec()), "key {id}");
    }
    assert!(tree.stats().splits > 100);
}

/// Appending at the end of the rightmost leaf splits it at its end, and the left half gains
/// an upper fence: the split position must leave room for it (keys `[t, u32]`, reported by
/// the typed-layer work).
#[test]
fn append_split_leaves_room_for_the_new_fence() {
    let tree = Tree::new();
    for t in 0..4u8 {
        for i in 0..2_000u32 {
            let mut k = vec![t];
            k.extend_from_slice(&i.to_be_bytes());
            tree.insert(&k, &[0u8; 8]).unwrap();
        }
    }
    tree.check_invariants().unwrap();
    assert_eq!(tree.len(), 8000);
    // Skewed entry sizes: big values on one side of the middle.
    let tree = Tree::new();
    for i in 0..3000u32 {
        let v = if i % 64 < 8 { vec![1u8; 900] } else { vec![] };
        tree.insert(&[vec![0xAB; 200], i.to_be_bytes().to_vec()].concat(), &v)
            .unwrap();
    }
    tree.check_invariants().unwrap();
}
