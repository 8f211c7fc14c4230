//! Cursors and visitor scans against std's `BTreeMap`, alone and under concurrent writers.
//!
//! * `cursor_matches_oracle`: random seeks and moves in both directions, interleaved with
//!   inserts and removals that split and merge leaves (4 KiB pages, values of up to 300
//!   bytes) and leave empty leaves behind (no space manager), compared step by step.
//! * `scans_match_oracle`: `scan`, `scan_rev` and `range` with every kind of bound and early
//!   breaks; ranges walked from either end, one entry or long runs at a time.
//! * `cursors_stay_consistent_under_writers`: readers walk the tree forward and backward
//!   while writers insert and remove other keys with values of changing sizes; every walk
//!   must be strictly ordered and contain every stable key with its value.
//! * `scan_closure_may_write_the_tree`: a visitor that writes to the tree does not hang.
//! * `ranges_copy_keys_of_every_inline_length`: range items of every length around the
//!   inline capacity of a `Bytes`, without a shared prefix.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Bytes, Config, Cursor, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

fn config() -> Config {
    Config {
        page_size: 4096,
        space_manager: false,
        ..Config::default()
    }
}

fn key(rng: &mut StdRng) -> Vec<u8> {
    // Shared prefixes of several lengths, so nodes carry prefixes.
    let n: u32 = rng.gen_range(0..4000);
    let mut k = format!("key/{:02}/", n % 37).into_bytes();
    k.extend_from_slice(&n.to_be_bytes()[..rng.gen_range(1..=4)]);
    k
}

fn value(rng: &mut StdRng) -> Vec<u8> {
    let len = if rng.gen_bool(0.1) {
        rng.gen_range(100..300)
    } else {
        rng.gen_range(0..12)
    };
    (0..len).map(|_| rng.gen()).collect()
}

fn current(c: &Cursor<'_>) -> Option<(Vec<u8>, Vec<u8>)> {
    c.entry().map(|(k, v)| (k.to_vec(), v.to_vec()))
}

fn owned(e: Option<(&Vec<u8>, &Vec<u8>)>) -> Option<(Vec<u8>, Vec<u8>)> {
    e.map(|(k, v)| (k.clone(), v.clone()))
}

/// A range item as vectors.
fn vecs((k, v): (Bytes, Bytes)) -> (Vec<u8>, Vec<u8>) {
    (k.into_vec(), v.into_vec())
}

#[test]
fn cursor_matches_oracle() {
    for seed in 0..4u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let tree = Tree::with_config(config()).unwrap();
        let mut oracle = Oracle::new();
        for _ in 0..3000 {
            let (k, v) = (key(&mut rng), value(&mut rng));
            tree.insert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        for step in 0..3000 {
            match rng.gen_range(0..10) {
                // Writes between walks: bulk removals of a key range leave empty leaves.
                0 => {
                    let (k, v) = (key(&mut rng), value(&mut rng));
                    tree.insert(&k, &v).unwrap();
                    oracle.insert(k, v);
                }
                1 => {
                    let from = key(&mut rng);
                    let doomed: Vec<_> = oracle
                        .range(from..)
                        .take(rng.gen_range(1..200))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for k in doomed {
                        assert_eq!(tree.remove(&k), oracle.remove(&k));
                    }
                }
                _ => {
                    let probe = key(&mut rng);
                    let mut c = tree.cursor();
                    let (found, mut expect) = match rng.gen_range(0..6) {
                        0 => (c.seek(&probe), owned(oracle.range(probe.clone()..).next())),
                        1 => (
                            c.seek_after(&probe),
                            owned(
                                oracle
                                    .range((Bound::Excluded(probe.clone()), Bound::Unbounded))
                                    .next(),
                            ),
                        ),
                        2 => (
                            c.seek_for_prev(&probe),
                            owned(oracle.range(..=probe.clone()).next_back()),
                        ),
                        3 => (
                            c.seek_before(&probe),
                            owned(oracle.range(..probe.clone()).next_back()),
                        ),
                        4 => (c.seek_to_first(), owned(oracle.iter().next())),
                        _ => (c.seek_to_last(), owned(oracle.iter().next_back())),
                    };
                    assert_eq!(found, expect.is_some(), "seed {seed} step {step}");
                    assert_eq!(current(&c), expect, "seed {seed} step {step}");
                    // Walk a while in random directions.
                    for _ in 0..rng.gen_range(0..300) {
                        let Some((k, _)) = expect.clone() else { break };
                        let forward = rng.gen_bool(0.7);
                        let moved = if forward { c.next() } else { c.prev() };
                        expect = if forward {
                            owned(oracle.range((Bound::Excluded(k), Bound::Unbounded)).next())
                        } else {
                            owned(oracle.range(..k).next_back())
                        };
                        assert_eq!(moved, expect.is_some(), "seed {seed} step {step}");
                        assert_eq!(current(&c), expect, "seed {seed} step {step}");
                    }
                    // An unpositioned cursor stays so.
                    if !c.is_valid() {
                        assert!(!c.next() && !c.prev() && c.key().is_none());
                    }
                }
            }
        }
        tree.check_invariants().unwrap();
        let all: Vec<_> = tree.iter().map(vecs).collect();
        let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, want);
    }
}

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

#[test]
fn scans_match_oracle() {
    let mut rng = StdRng::seed_from_u64(7);
    let tree = Tree::with_config(config()).unwrap();
    let mut oracle = Oracle::new();
    for _ in 0..4000 {
        let (k, v) = (key(&mut rng), value(&mut rng));
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    for _ in 0..500 {
        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
        // `BTreeMap::range` panics on inverted or equal excluded bounds; such ranges are
        // empty.
        let empty = match (&lo, &hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
            _ => false,
        };
        let want: Vec<(Vec<u8>, Vec<u8>)> = if empty {
            Vec::new()
        } else {
            oracle
                .range((lo.clone(), hi.clone()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let limit = rng.gen_range(0..want.len() + 2);
        let r = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );

        let mut got = Vec::new();
        let broke = tree.scan(r, |k, v| {
            if got.len() == limit {
                return ControlFlow::Break(got.len());
            }
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        assert_eq!(got[..], want[..limit.min(want.len())]);
        assert_eq!(broke, (limit < want.len()).then_some(limit));

        let mut got = Vec::new();
        tree.scan_rev(r, |k, v| {
            if got.len() == limit {
                return ControlFlow::Break(());
            }
            got.push((k.to_vec(), v.to_vec()));
            ControlFlow::Continue(())
        });
        let rev: Vec<_> = want.iter().rev().take(limit).cloned().collect();
        assert_eq!(got, rev);

        let got: Vec<_> = tree.range(r).map(vecs).collect();
        assert_eq!(got, want);
        // Both ends at once: they meet without crossing.
        let mut it = tree.range(r);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let e = if rng.gen_bool(0.5) {
                it.next().map(|e| front.push(vecs(e)))
            } else {
                it.next_back().map(|e| back.push(vecs(e)))
            };
            if e.is_none() {
                break;
            }
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front, want);
        // From the back alone, and both ends in long runs: each end's fast path walks most
        // of a leaf (its window, `ops::scan`) before the other end takes over mid-leaf.
        let got: Vec<_> = tree.range(r).rev().map(vecs).collect();
        let rev: Vec<_> = want.iter().rev().cloned().collect();
        assert_eq!(got, rev);
        let mut it = tree.range(r);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut forward = rng.gen_bool(0.5);
        'runs: loop {
            for _ in 0..rng.gen_range(1..80) {
                let e = if forward {
                    it.next().map(|e| front.push(vecs(e)))
                } else {
                    it.next_back().map(|e| back.push(vecs(e)))
                };
                if e.is_none() {
                    break 'runs;
                }
            }
            forward = !forward;
        }
        assert!(it.next().is_none() && it.next_back().is_none());
        back.reverse();
        front.extend(back);
        assert_eq!(front, want);
    }
}

#[test]
fn cursors_stay_consistent_under_writers() {
    let _watchdog = watchdog(
        "cursors_stay_consistent_under_writers",
        Duration::from_secs(300),
    );
    let tree = Arc::new(Tree::with_config(Config::default()).unwrap());
    // Stable keys: multiples of 4, value = the key. Writers touch the other keys only.
    let stable: Vec<u64> = (0..20_000u64).map(|i| i * 4).collect();
    for &k in &stable {
        tree.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u64)
        .map(|t| {
            let (tree, stop) = (Arc::clone(&tree), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(t);
                while !stop.load(Ordering::Relaxed) {
                    let k = rng.gen_range(0..80_000u64) | 1 | (t << 1);
                    if rng.gen_bool(0.55) {
                        let len = rng.gen_range(0..200);
                        tree.insert(&k.to_be_bytes(), &vec![7; len]).unwrap();
                    } else {
                        tree.remove(&k.to_be_bytes());
                    }
                }
            })
        })
        .collect();
    let check = |keys: &[(Vec<u8>, Vec<u8>)], forward: bool| {
        let mut seen = 0;
        for w in keys.windows(2) {
            assert_eq!(w[0].0 < w[1].0, forward, "walk out of order");
        }
        for (k, v) in keys {
            let k = u64::from_be_bytes(k[..].try_into().unwrap());
            if k % 4 == 0 {
                assert_eq!(v[..], k.to_le_bytes());
                seen += 1;
            }
        }
        assert_eq!(seen, stable.len(), "a stable key was skipped");
    };
    for round in 0..6 {
        let mut c = tree.cursor();
        let mut walk = Vec::new();
        let mut ok = if round % 2 == 0 {
            c.seek_to_first()
        } else {
            c.seek_to_last()
        };
        while ok {
            let (k, v) = c.entry().unwrap();
            walk.push((k.to_vec(), v.to_vec()));
            ok = if round % 2 == 0 { c.next() } else { c.prev() };
        }
        check(&walk, round % 2 == 0);
        let mut walk = Vec::new();
        tree.scan(.., |k, v| {
            walk.push((k.to_vec(), v.to_vec()));
            ControlFlow::<()>::Continue(())
        });
        check(&walk, true);
        let walk: Vec<_> = tree.iter().rev().map(vecs).collect();
        check(&walk, false);
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    tree.check_invariants().unwrap();
}

#[test]
fn scan_closure_may_write_the_tree() {
    let tree = Tree::new();
    for i in 0u32..2000 {
        tree.insert(&i.to_be_bytes(), b"v").unwrap();
    }
    let mut n = 0;
    tree.scan(.., |k, _v| {
        // Writes to the leaf the scan stands on, and reads of it.
        tree.insert(k, b"changed").unwrap();
        assert_eq!(tree.get(k).as_deref(), Some(&b"changed"[..]));
        n += 1;
        ControlFlow::<()>::Continue(())
    });
    assert_eq!(n, 2000);
    assert!(tree.iter().all(|(_, v)| v == b"changed"));
}

/// A cursor kept open while the tree changes moves to the neighbours the tree has at the
/// time of the move: a key inserted into its leaf after the copy, before or after the
/// current key, is found. Regression (found by the `ops` fuzz target): a move past the end
/// of the leaf copy trusted the copy's fence without checking that the leaf was unchanged,
/// so `prev` after inserting a smaller key into a one-leaf tree reported no entry.
#[test]
fn cursor_moves_see_writes_made_since_its_copy() {
    let tree = Tree::new();
    tree.insert(b"s", b"1").unwrap();
    let mut c = tree.cursor();
    assert!(c.seek_for_prev(b"s"));
    tree.insert(b"c", b"2").unwrap();
    assert!(c.prev());
    assert_eq!(c.key(), Some(&b"c"[..]));
    tree.insert(b"m", b"3").unwrap();
    assert!(c.next());
    assert_eq!(c.key(), Some(&b"m"[..]));
    tree.insert(b"z", b"4").unwrap();
    assert!(c.seek(b"s") && c.next());
    assert_eq!(c.entry(), Some((&b"z"[..], &b"4"[..])));

    // Random writes between random moves of one open cursor, on a tree of many leaves.
    let mut rng = StdRng::seed_from_u64(7);
    let tree = Tree::with_config(config()).unwrap();
    let mut oracle = Oracle::new();
    for _ in 0..2000 {
        let (k, v) = (key(&mut rng), value(&mut rng));
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let mut c = tree.cursor();
    assert!(c.seek_to_first());
    for step in 0..20_000 {
        match rng.gen_range(0..4) {
            0 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                tree.insert(&k, &v).unwrap();
                oracle.insert(k, v);
            }
            1 => {
                let k = key(&mut rng);
                assert_eq!(tree.remove(&k), oracle.remove(&k));
            }
            _ => {
                let Some(k) = c.key().map(<[u8]>::to_vec) else {
                    assert!(c.seek(&key(&mut rng)) || c.seek_to_first() || oracle.is_empty());
                    continue;
                };
                let forward = rng.gen_bool(0.5);
                let moved = if forward { c.next() } else { c.prev() };
                let expect = if forward {
                    owned(oracle.range((Bound::Excluded(k), Bound::Unbounded)).next())
                } else {
                    owned(oracle.range(..k).next_back())
                };
                assert_eq!(moved, expect.is_some(), "step {step}");
                assert_eq!(current(&c), expect, "step {step}");
            }
        }
    }
}

/// Scans decode short entries (a one- or two-byte length header) on a lean path and the
/// others on the general one: keys of 5 to 62 bytes (the most a 1 KiB page stores in line is
/// 64) and values of every length up to 300 bytes (out of line above 256), at 1 KiB pages
/// (so entries often end at the end of a page), read by every scan in both directions and
/// by a cursor, against the oracle.
/// A tree of 1 KiB pages (many leaves, most entries near a leaf's end), no space manager.
fn small_pages() -> Tree {
    Tree::with_config(Config {
        page_size: 1024,
        space_manager: false,
        ..Config::default()
    })
    .unwrap()
}

/// Keys and values of every length around the inline capacity of a `Bytes` (22), without a
/// shared prefix: a range builds each inline key from the head, then the rest as one block
/// or, for a rest longer than the block, byte for byte.
#[test]
fn ranges_copy_keys_of_every_inline_length() {
    let tree = small_pages();
    let mut oracle = Oracle::new();
    let mut rng = StdRng::seed_from_u64(23);
    for i in 0..3000usize {
        let k: Vec<u8> = (0..i % 25).map(|_| rng.gen::<u8>()).collect();
        let v: Vec<u8> = (0..(i * 7) % 25).map(|_| rng.gen::<u8>()).collect();
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let range: Vec<_> = tree.range(..).map(vecs).collect();
    assert_eq!(range, all);
    let back: Vec<_> = tree.range(..).rev().map(vecs).collect();
    assert!(back.iter().rev().eq(all.iter()));
}

/// Suffixes of up to 17 bytes behind shared prefixes of 0 to 9 bytes: the visitor scans
/// write keys of up to 8 bytes under a leaf prefix under 8 as one word put together from the
/// prefix, the head and the rest (one loop per prefix length), keys of 9 to 16 bytes as two
/// such words, the others as head and rest behind the prefix; both directions against the
/// oracle.
#[test]
fn scans_hand_out_short_keys_under_every_prefix_length() {
    let mut rng = StdRng::seed_from_u64(29);
    for p in 0..10usize {
        let tree = small_pages();
        let mut oracle = Oracle::new();
        let prefix: Vec<u8> = (0..p).map(|j| 0xA0 ^ j as u8).collect();
        for i in 0..1500usize {
            let mut k = prefix.clone();
            k.extend((0..i % 18).map(|_| rng.gen::<u8>()));
            let v = (i as u64).to_le_bytes()[..i % 9].to_vec();
            tree.insert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(
            visited_both_ways(&tree),
            (all.clone(), all),
            "prefix of {p} bytes"
        );
    }
}

/// Entries in key order, as pairs of owned bytes.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Every entry the visitor scans hand out over the whole tree: forward, then backward
/// (reversed into key order).
fn visited_both_ways(tree: &Tree) -> (Entries, Entries) {
    let mut forward = Vec::new();
    tree.scan(.., |k, v| {
        forward.push((k.to_vec(), v.to_vec()));
        ControlFlow::<()>::Continue(())
    });
    let mut backward = Vec::new();
    tree.scan_rev(.., |k, v| {
        backward.push((k.to_vec(), v.to_vec()));
        ControlFlow::<()>::Continue(())
    });
    backward.reverse();
    (forward, backward)
}

#[test]
fn scans_read_every_entry_form() {
    let tree = small_pages();
    let mut oracle = Oracle::new();
    let mut rng = StdRng::seed_from_u64(17);
    for i in 0..3000u32 {
        let mut k = b"p".to_vec();
        k.extend_from_slice(&i.to_be_bytes());
        let extra = (i as usize * 7) % 58;
        k.extend((0..extra).map(|_| rng.gen::<u8>()));
        let v: Vec<u8> = (0..(i as usize * 13) % 301).map(|j| j as u8).collect();
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(visited_both_ways(&tree), (all.clone(), all.clone()));
    let range: Vec<_> = tree.range(..).map(vecs).collect();
    assert_eq!(range, all);
    let back: Vec<_> = tree.range(..).rev().map(vecs).collect();
    assert!(back.iter().rev().eq(all.iter()));
    let mut c = tree.cursor();
    let mut walked = Vec::new();
    let mut ok = c.seek_to_first();
    while ok {
        walked.push(current(&c).unwrap());
        ok = c.next();
    }
    assert_eq!(walked, all);
}

/// Runs of entries of one shape (key and value lengths), then a shape whose length header
/// differs in one byte only: the visitor scans and the ranges decode a length header once
/// and reuse it while the entries after it have the same header (`node::Memo`), so every
/// change of shape, in either byte of a two-byte header and in either half of a one-byte
/// header, must be seen. Scans and ranges start at every key of a sample, both ways,
/// against the oracle.
#[test]
fn scans_see_every_change_of_entry_shape() {
    // (bytes after the 4-byte id, value length): one-byte headers (suffix under 8 after
    // the shared prefix, value under 16), two-byte headers (longer suffixes or values),
    // neighbours that differ only in the value's length or only in the key's.
    const SHAPES: [(usize, usize); 11] = [
        (0, 8),
        (0, 9),
        (1, 9),
        (2, 0),
        (2, 15),
        (6, 16),
        (6, 17),
        (7, 17),
        (6, 40),
        (6, 41),
        (7, 41),
    ];
    for page_size in [1024, 4096] {
        let tree = Tree::with_config(Config {
            page_size,
            space_manager: false,
            ..Config::default()
        })
        .unwrap();
        let mut oracle = Oracle::new();
        let mut rng = StdRng::seed_from_u64(page_size as u64);
        let mut shape = 0;
        let mut i = 0u32;
        while i < 6000 {
            let run = rng.gen_range(1..6);
            for _ in 0..run {
                let (extra, vlen) = SHAPES[shape];
                let mut k = b"s".to_vec();
                k.extend_from_slice(&i.to_be_bytes());
                k.extend((0..extra).map(|_| rng.gen::<u8>()));
                let v: Vec<u8> = (0..vlen).map(|_| rng.gen()).collect();
                tree.insert(&k, &v).unwrap();
                oracle.insert(k, v);
                i += 1;
            }
            shape = (shape + rng.gen_range(1..SHAPES.len())) % SHAPES.len();
        }
        let all: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for start in (0..all.len()).step_by(97).chain([0, all.len() - 1]) {
            let from = all[start].0.clone();
            let mut seen = Vec::new();
            tree.scan(from.clone().., |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                ControlFlow::<()>::Continue(())
            });
            assert_eq!(seen, all[start..], "page {page_size}, forward from {start}");
            seen.clear();
            tree.scan_rev(..=from, |k, v| {
                seen.push((k.to_vec(), v.to_vec()));
                ControlFlow::<()>::Continue(())
            });
            seen.reverse();
            assert_eq!(
                seen,
                all[..=start],
                "page {page_size}, backward from {start}"
            );
        }
    }
}

/// Ranges, `keys` and `values` over runs of entries that fit inline in a `Bytes` and runs
/// that do not (long keys, long values, both), walked forward, backward and from both ends
/// at once: a range hands out short entries from its window and takes the cursor's move for
/// the others, and after a long entry moves the cursor again at once (`Range::long`)
/// until a short one reopens the window; everything matches the oracle.
#[test]
fn ranges_keys_and_values_over_runs_of_short_and_long_entries_match_the_oracle() {
    let mut rng = StdRng::seed_from_u64(63);
    let tree = small_pages();
    let mut oracle = Oracle::new();
    for i in 0..3000u32 {
        // Runs of 1 to 40 entries of one kind.
        let kind = (i / (1 + i % 40)) % 4;
        let mut k = (i * 7919 % 100_003).to_be_bytes().to_vec();
        if kind & 1 == 1 {
            k.extend((0..20 + rng.gen_range(0..10)).map(|_| rng.gen::<u8>()));
        }
        let vlen = if kind & 2 == 2 {
            23 + rng.gen_range(0..40)
        } else {
            rng.gen_range(0..=22)
        };
        let v: Vec<u8> = (0..vlen).map(|_| rng.gen()).collect();
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let pairs = |it: &mut dyn Iterator<Item = (Bytes, Bytes)>| -> Vec<(Vec<u8>, Vec<u8>)> {
        it.map(|(k, v)| (k.into_vec(), v.into_vec())).collect()
    };
    assert_eq!(pairs(&mut tree.iter()), all);
    let mut back = pairs(&mut tree.iter().rev());
    back.reverse();
    assert_eq!(back, all);
    let keys: Vec<Vec<u8>> = all.iter().map(|(k, _)| k.clone()).collect();
    let values: Vec<Vec<u8>> = all.iter().map(|(_, v)| v.clone()).collect();
    assert_eq!(tree.keys().map(Bytes::into_vec).collect::<Vec<_>>(), keys);
    assert_eq!(
        tree.values().map(Bytes::into_vec).collect::<Vec<_>>(),
        values
    );
    let mut keys_back: Vec<Vec<u8>> = tree.keys().rev().map(Bytes::into_vec).collect();
    keys_back.reverse();
    assert_eq!(keys_back, keys);
    let mut values_back: Vec<Vec<u8>> = tree.values().rev().map(Bytes::into_vec).collect();
    values_back.reverse();
    assert_eq!(values_back, values);
    // Both ends at once, in random steps, and bounded ranges that start and end in runs.
    for round in 0..20 {
        let (lo, hi) = {
            let a = rng.gen_range(0..all.len());
            let b = rng.gen_range(a..all.len());
            (a, b)
        };
        let range = &all[lo..=hi];
        let mut it = tree.range(all[lo].0.clone()..=all[hi].0.clone());
        let mut keys_it = tree.keys();
        let (mut front, mut rear) = (0, range.len());
        while front < rear {
            if rng.gen_bool(0.5) {
                let (k, v) = it.next().unwrap();
                assert_eq!((&k[..], &v[..]), (&range[front].0[..], &range[front].1[..]));
                front += 1;
            } else {
                rear -= 1;
                let (k, v) = it.next_back().unwrap();
                assert_eq!(
                    (&k[..], &v[..]),
                    (&range[rear].0[..], &range[rear].1[..]),
                    "round {round}"
                );
            }
        }
        assert!(it.next().is_none() && it.next_back().is_none());
        let (mut kf, mut kr) = (0, keys.len());
        for _ in 0..200.min(keys.len()) {
            if rng.gen_bool(0.5) {
                assert_eq!(keys_it.next().unwrap(), keys[kf]);
                kf += 1;
            } else {
                kr -= 1;
                assert_eq!(keys_it.next_back().unwrap(), keys[kr]);
            }
        }
    }
}
