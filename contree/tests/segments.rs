//! Insert segments of leaves in line mode (`Config::insert_segments`,
//! `src/sync/segments.rs`): inserts of new keys without the leaf latch, under concurrent
//! inserters of the same keys, readers, updaters, removers and scanners, which move the
//! records into the leaves.

use contree::{Config, LineMode, Tree};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

/// The table of leaves in line mode is process-wide: the tests of this file run one at a
/// time, so that one test's trees do not take the entries another expects to get.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tree whose leaves switch to line mode at their first latched insert or update.
fn tree(insert_segments: bool) -> Arc<Tree> {
    Arc::new(
        Tree::with_config(Config {
            line_mode: LineMode::Always,
            insert_segments,
            ..Config::default()
        })
        .unwrap(),
    )
}

/// Key `i` of a narrow range: 16-byte keys with a common 8-byte prefix.
fn key(i: u64) -> [u8; 16] {
    let mut k = [7u8; 16];
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// The value inserter `t` gives key `i`.
fn value(i: u64, t: u64) -> Vec<u8> {
    let mut v = i.to_le_bytes().to_vec();
    v.extend_from_slice(&t.to_le_bytes());
    v
}

/// Four inserters add the even keys `0..2 * PER * 4` (thread `t` those with `i / 2 % 4 ==
/// t`) in a scrambled order while readers check every key an inserter has published (and
/// that odd keys stay absent), an updater and a remover work on keys 1 and 3 modulo 8 of
/// their own, and a scanner checks order. No insert is lost, no key appears twice, and the
/// tree matches the oracle at the end.
#[test]
fn inserts_in_segments_are_found_by_every_reader() {
    let _serial = serial();
    const PER: u64 = 3_000;
    let tree = tree(true);
    // The updater's and remover's keys, loaded (odd keys `1 mod 8` and `3 mod 8`).
    for i in (0..2 * PER * 4).filter(|i| i % 8 == 1 || i % 8 == 3) {
        tree.insert(&key(i), &value(i, 9)).unwrap();
    }
    let published: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    // The `n`-th key thread `t` inserts.
    let nth = |t: u64, n: u64| {
        let j = (n * 1_237) % PER;
        2 * (j * 4 + t)
    };
    thread::scope(|s| {
        let mut writers = Vec::new();
        for t in 0..4u64 {
            let (tree, published) = (&tree, &published);
            writers.push(s.spawn(move || {
                for n in 0..PER {
                    let i = nth(t, n);
                    assert_eq!(tree.insert(&key(i), &value(i, t)).unwrap(), None);
                    published[t as usize].store(n + 1, Ordering::Release);
                }
            }));
        }
        for r in 0..2u64 {
            let (tree, published, stop) = (&tree, &published, &stop);
            s.spawn(move || {
                let mut x = r + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let t = (x >> 40) % 4;
                    let done = published[t as usize].load(Ordering::Acquire);
                    if done > 0 {
                        let i = nth(t, (x >> 20) % done);
                        match x % 3 {
                            0 => assert_eq!(tree.get(&key(i)), Some(value(i, t)), "key {i}"),
                            1 => assert!(tree.contains_key(&key(i)), "key {i}"),
                            _ => {
                                let mut out = Vec::new();
                                assert!(tree.get_into(&key(i), &mut out), "key {i}");
                            }
                        }
                    }
                    let odd = 2 * ((x >> 8) % (PER * 4)) + 1;
                    if odd % 8 == 5 || odd % 8 == 7 {
                        assert_eq!(tree.get(&key(odd)), None, "key {odd}");
                    }
                }
            });
        }
        {
            let (tree, stop) = (&tree, &stop);
            s.spawn(move || {
                let mut n = 0u64;
                while n < PER || !stop.load(Ordering::Relaxed) {
                    let i = 8 * (n % PER) + 1;
                    assert!(tree.update_with(&key(i), |v| v[15] = 1).is_some());
                    let j = 8 * (n % PER) + 3;
                    if n < PER {
                        assert_eq!(tree.remove(&key(j)), Some(value(j, 9)));
                    }
                    n += 1;
                }
            });
        }
        {
            let (tree, stop) = (&tree, &stop);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let mut last: Option<Vec<u8>> = None;
                    for (k, _) in tree.range(key(4_000)..key(4_400)).take(50) {
                        assert!(
                            last.as_deref().is_none_or(|l| l < &k[..]),
                            "scan out of order"
                        );
                        last = Some(k.to_vec());
                    }
                    thread::yield_now();
                }
            });
        }
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
    });
    let mut oracle = BTreeMap::new();
    for t in 0..4 {
        for n in 0..PER {
            let i = nth(t, n);
            oracle.insert(key(i).to_vec(), value(i, t));
        }
    }
    for i in (0..2 * PER * 4).filter(|i| i % 8 == 1) {
        let mut v = value(i, 9);
        v[15] = 1;
        oracle.insert(key(i).to_vec(), v);
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> =
        tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    assert_eq!(got.len(), oracle.len());
    assert!(got == oracle, "the tree differs from the oracle");
    assert_eq!(tree.len(), oracle.len());
    tree.check_invariants().unwrap();
    let s = tree.stats();
    // About 10,000 of the 12,000 inserts went to segments in the runs we made.
    assert!(s.segment_inserts > 1_000, "{s:?}");
    assert!(s.segment_moves <= s.segment_inserts, "{s:?}");
}

/// Four threads insert the same keys: for each key exactly one insert finds it absent, and
/// every other gets back a value one of them wrote; the last value stays.
#[test]
fn inserts_of_one_key_in_segments_linearize() {
    let _serial = serial();
    let tree = tree(true);
    for i in 0..20 {
        tree.insert(&key(1_000 * i), b"seed").unwrap();
    }
    let firsts: Vec<AtomicU64> = (0..400).map(|_| AtomicU64::new(0)).collect();
    thread::scope(|s| {
        for t in 0..4u64 {
            let (tree, firsts) = (&tree, &firsts);
            s.spawn(move || {
                for round in 0..3 {
                    for i in 0..400u64 {
                        let j = (i * 7 + t * 13 + round) % 400;
                        let old = tree.insert(&key(2 * j + 1), &value(j, t)).unwrap();
                        match old {
                            None => {
                                firsts[j as usize].fetch_add(1, Ordering::Relaxed);
                            }
                            Some(v) => assert_eq!(v[..8], j.to_le_bytes(), "a value never written"),
                        }
                    }
                }
            });
        }
    });
    assert!(firsts.iter().all(|f| f.load(Ordering::Relaxed) == 1));
    for j in 0..400u64 {
        let v = tree.get(&key(2 * j + 1)).unwrap();
        assert_eq!(v[..8], j.to_le_bytes());
    }
    assert_eq!(tree.len(), 420);
    tree.check_invariants().unwrap();
}

/// A single thread: keys past a segment's room, values too long for a segment, keys that
/// lack the leaf's prefix, updates and removals of keys in segments all take the latched
/// path or move the records first; with the switch off nothing goes to a segment.
#[test]
fn segments_fall_back_and_switch_off() {
    let _serial = serial();
    for on in [true, false] {
        let tree = tree(on);
        let mut oracle = BTreeMap::new();
        tree.insert(&key(0), b"first").unwrap();
        oracle.insert(key(0).to_vec(), b"first".to_vec());
        for i in (1..300u64).map(|i| (i * 37) % 300).filter(|&i| i > 0) {
            // Long values (200 bytes) now and then: never in a segment.
            let v = if i % 10 == 0 {
                vec![i as u8; 200]
            } else {
                value(i, 0)
            };
            tree.insert(&key(i * 3), &v).unwrap();
            oracle.insert(key(i * 3).to_vec(), v);
            if i % 7 == 0 {
                // A key in a segment, or in the leaf: updates and removals find it.
                assert!(tree.update_with(&key(i * 3), |v| v[0] ^= 0xff).is_some());
                oracle.get_mut(key(i * 3).as_slice()).unwrap()[0] ^= 0xff;
            }
            if i % 11 == 0 {
                assert_eq!(
                    tree.remove(&key(i * 3 - 3)),
                    oracle.remove(key(i * 3 - 3).as_slice())
                );
            }
        }
        // Keys of another prefix, beside the range.
        for i in 0..50u64 {
            let k = [i as u8; 4];
            tree.insert(&k, b"short").unwrap();
            oracle.insert(k.to_vec(), b"short".to_vec());
        }
        let got: BTreeMap<Vec<u8>, Vec<u8>> =
            tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert!(
            got == oracle,
            "segments {on}: the tree differs from the oracle"
        );
        assert_eq!(tree.len(), oracle.len());
        tree.check_invariants().unwrap();
        let s = tree.stats();
        match on {
            true => assert!(s.segment_inserts > 0 && s.segment_moves > 0, "{s:?}"),
            false => assert_eq!((s.segment_inserts, s.segment_moves), (0, 0), "{s:?}"),
        }
    }
}

/// `first` reads the leftmost leaf in place (`Tree::edge_entry`): a key that waits in an
/// insert segment of that leaf, below every key of its page, must still be the first. The
/// read's validation fails on a leaf in line mode, which ends the mode and moves the
/// segments' records into the page, and the read restarts.
#[test]
fn first_sees_a_key_in_an_insert_segment_of_the_leftmost_leaf() {
    let _serial = serial();
    let tree = tree(true);
    for i in (100..400u64).step_by(2) {
        tree.insert(&key(i), &value(i, 0)).unwrap();
    }
    // Updates in place switch the leaf into line mode (`LineMode::Always`); the new keys
    // below the page's first go into its insert segments.
    for round in 0..4u64 {
        assert!(tree
            .update_with(&key(100), |v| v[8] = round as u8)
            .is_some());
    }
    let mut smallest = 100;
    for i in [51u64, 41, 31] {
        tree.insert(&key(i), &value(i, 1)).unwrap();
        smallest = i;
        assert_eq!(tree.first(), Some((key(i).to_vec(), value(i, 1))));
        assert!(tree.update_with(&key(100), |v| v[8] = 9).is_some());
    }
    let stats = tree.stats();
    assert!(stats.line_switches > 0, "{stats:?}");
    assert!(
        stats.segment_inserts > 0,
        "no key went to a segment: {stats:?}"
    );
    assert_eq!(tree.first().unwrap().0, key(smallest).to_vec());
    assert_eq!(tree.last().unwrap().0, key(398).to_vec());
    tree.check_invariants().unwrap();
}
