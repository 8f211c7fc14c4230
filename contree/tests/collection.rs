//! The std surface of `Tree`: property tests of every multi-entry operation against std's
//! `BTreeMap` as the oracle, and concurrency tests of the ones that promise something under
//! concurrent callers.
//!
//! Covered against the oracle: `scan_prefix` (prefixes with trailing `0xFF` bytes and the
//! empty prefix, consumed from both ends), `pop_first`, `pop_last`, `retain`, `clear`,
//! `remove_range` (every kind of bound, including the `&[u8]`, `Vec<u8>` and array forms
//! and `..`), `keys`, `values`, `insert_many` (duplicate keys, refused input, running out of
//! space midway), `get_many` (duplicates, absent keys), `FromIterator`, `Extend` and
//! `IntoIterator for &Tree`. Keys come from a tiny alphabet that includes `0x00` and `0xFF`
//! (many shared prefixes); bulk inserts make the sequences cross splits and merges on
//! 4 KiB pages.
//!
//! Concurrency: 8 threads of `pop_first`, of `pop_last` and of both hand out every entry
//! exactly once; `retain` racing with `compare_exchange` removes exactly the entries whose
//! value it judged. `retain`'s closure may call into the same tree (under a watchdog, so a
//! hang fails the test). `Tree` is usable across `catch_unwind`.
//!
//! `PROPTEST_CASES` overrides the case counts. Run:
//! `cargo test -p contree --release --test collection`.

#[path = "support/prop.rs"]
mod prop_support;
use contree::{Bytes, Config, Error, Tree};
use prop_support::prop_config;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::sync::Barrier;

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

// ---- generators -------------------------------------------------------------------------

/// A short key over a tiny alphabet with both extreme bytes: shared prefixes, prefixes that
/// end in `0xFF`, the empty key.
fn key() -> impl Strategy<Value = Vec<u8>> + Clone {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, b'a', 0xFE, 0xFF]), 0..5)
}

fn value() -> impl Strategy<Value = Vec<u8>> + Clone {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..8),
        1 => prop::collection::vec(any::<u8>(), 0..300),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => key().prop_map(Bound::Included),
        2 => key().prop_map(Bound::Excluded),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert(Vec<u8>, Vec<u8>),
    /// Inserts `count` keys `base ++ i.to_be_bytes()` with `len`-byte values: enough to
    /// split leaves.
    Bulk {
        base: Vec<u8>,
        count: u16,
        len: usize,
    },
    /// `scan_prefix`, consumed by `steps` (true: `next`, false: `next_back`), then drained
    /// alternately from both ends.
    ScanPrefix(Vec<u8>, Vec<bool>),
    PopFirst,
    PopLast,
    /// `retain` keeping the entries whose key and value bytes sum to a residue other than
    /// `drop` modulo `modulus`.
    Retain {
        modulus: u8,
        drop: u8,
    },
    RemoveRange(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Clear,
    Keys(Vec<bool>),
    Values(Vec<bool>),
    InsertMany(Vec<(Vec<u8>, Vec<u8>)>),
    /// `insert_many` of a batch with one oversized value at position `bad % len`.
    InsertManyRefused(Vec<(Vec<u8>, Vec<u8>)>, usize),
    GetMany(Vec<Vec<u8>>),
    Extend(Vec<(Vec<u8>, Vec<u8>)>),
    Check,
}

fn entries(max: usize) -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
    prop::collection::vec((key(), value()), 0..max)
}

fn op() -> impl Strategy<Value = Op> {
    let steps = || prop::collection::vec(any::<bool>(), 0..12);
    prop_oneof![
        8 => (key(), value()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => (key(), 1u16..600, 0usize..40).prop_map(|(base, count, len)| Op::Bulk { base, count, len }),
        4 => (key(), steps()).prop_map(|(p, s)| Op::ScanPrefix(p, s)),
        3 => Just(Op::PopFirst),
        3 => Just(Op::PopLast),
        2 => (1u8..5, 0u8..5).prop_map(|(modulus, drop)| Op::Retain { modulus, drop }),
        3 => (bound(), bound()).prop_map(|(lo, hi)| Op::RemoveRange(lo, hi)),
        1 => Just(Op::Clear),
        2 => steps().prop_map(Op::Keys),
        2 => steps().prop_map(Op::Values),
        3 => entries(40).prop_map(Op::InsertMany),
        1 => (entries(10), any::<usize>()).prop_map(|(e, bad)| Op::InsertManyRefused(e, bad)),
        3 => prop::collection::vec(key(), 0..20).prop_map(Op::GetMany),
        2 => entries(20).prop_map(Op::Extend),
        1 => Just(Op::Check),
    ]
}

// ---- checking ---------------------------------------------------------------------------

/// Consumes `it` by `steps`, then alternately from both ends, and compares with `want`.
fn drain_both_ends<T: PartialEq + std::fmt::Debug>(
    mut it: impl DoubleEndedIterator<Item = T>,
    want: &[T],
    steps: &[bool],
    what: &str,
) -> Result<(), TestCaseError> {
    let (mut lo, mut hi) = (0, want.len());
    for (i, &front) in steps
        .iter()
        .chain([true, false].iter().cycle().take(want.len() + 2))
        .enumerate()
    {
        let got = if front { it.next() } else { it.next_back() };
        let expected = if lo == hi {
            None
        } else if front {
            lo += 1;
            Some(&want[lo - 1])
        } else {
            hi -= 1;
            Some(&want[hi])
        };
        prop_assert_eq!(
            got.as_ref(),
            expected,
            "{} step {} (front: {})",
            what,
            i,
            front
        );
    }
    Ok(())
}

fn matches_rule(k: &[u8], v: &[u8], modulus: u8, drop: u8) -> bool {
    let sum: u32 = k.iter().chain(v).map(|&b| b as u32).sum();
    sum % modulus as u32 == drop as u32 % modulus as u32
}

fn in_range(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(b) => k >= &b[..],
        Bound::Excluded(b) => k > &b[..],
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(b) => k <= &b[..],
        Bound::Excluded(b) => k < &b[..],
    };
    above && below
}

fn compare_all(tree: &Tree, oracle: &Oracle) -> Result<(), TestCaseError> {
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree
        .into_iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.clone().into_iter().collect();
    prop_assert_eq!(got, want, "contents");
    prop_assert_eq!(tree.len(), oracle.len(), "len");
    Ok(())
}

fn apply(tree: &mut Tree, oracle: &mut Oracle, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::Insert(k, v) => {
            prop_assert_eq!(
                tree.insert(k, v).unwrap(),
                oracle.insert(k.clone(), v.clone())
            );
        }
        Op::Bulk { base, count, len } => {
            for i in 0..*count {
                let mut k = base.clone();
                k.extend_from_slice(&i.to_be_bytes());
                let v = vec![i as u8; *len];
                prop_assert_eq!(tree.insert(&k, &v).unwrap(), oracle.insert(k, v));
            }
        }
        Op::ScanPrefix(prefix, steps) => {
            let want: Vec<(Bytes, Bytes)> = oracle
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (Bytes::from(&k[..]), Bytes::from(&v[..])))
                .collect();
            drain_both_ends(tree.scan_prefix(prefix), &want, steps, "scan_prefix")?;
            // The `&str`-free forms: slices, vectors, arrays.
            prop_assert_eq!(tree.scan_prefix(&prefix[..]).count(), want.len());
            prop_assert_eq!(tree.scan_prefix(prefix.clone()).count(), want.len());
        }
        Op::PopFirst => {
            prop_assert_eq!(tree.pop_first(), oracle.pop_first());
        }
        Op::PopLast => {
            prop_assert_eq!(tree.pop_last(), oracle.pop_last());
        }
        Op::Retain { modulus, drop } => {
            let mut seen = Vec::new();
            tree.retain(|k, v| {
                seen.push(k.to_vec());
                !matches_rule(k, v, *modulus, *drop)
            });
            // Without concurrent writers, `f` sees every key once, in order.
            let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
            prop_assert_eq!(seen, keys, "keys retain judged");
            oracle.retain(|k, v| !matches_rule(k, v, *modulus, *drop));
        }
        Op::RemoveRange(lo, hi) => {
            let doomed: Vec<Vec<u8>> = oracle
                .keys()
                .filter(|k| in_range(k, lo, hi))
                .cloned()
                .collect();
            let removed = match (lo, hi) {
                (Bound::Unbounded, Bound::Unbounded) => tree.remove_range(..),
                (Bound::Included(a), Bound::Excluded(b)) => tree.remove_range(&a[..]..&b[..]),
                (Bound::Included(a), Bound::Included(b)) => {
                    tree.remove_range(a.clone()..=b.clone())
                }
                (Bound::Included(a), Bound::Unbounded) => tree.remove_range(&a[..]..),
                (Bound::Unbounded, Bound::Excluded(b)) => tree.remove_range(..b.clone()),
                (Bound::Unbounded, Bound::Included(b)) => tree.remove_range(..=&b[..]),
                _ => tree.remove_range((lo.clone(), hi.clone())),
            };
            prop_assert_eq!(removed, doomed.len(), "remove_range count");
            for k in doomed {
                oracle.remove(&k);
            }
        }
        Op::Clear => {
            tree.clear();
            oracle.clear();
            prop_assert!(tree.is_empty());
        }
        Op::Keys(steps) => {
            let want: Vec<Bytes> = oracle.keys().map(|k| Bytes::from(&k[..])).collect();
            drain_both_ends(tree.keys(), &want, steps, "keys")?;
        }
        Op::Values(steps) => {
            let want: Vec<Bytes> = oracle.values().map(|v| Bytes::from(&v[..])).collect();
            drain_both_ends(tree.values(), &want, steps, "values")?;
        }
        Op::InsertMany(batch) => {
            let before = oracle.len();
            for (k, v) in batch {
                oracle.insert(k.clone(), v.clone());
            }
            // Borrowed pairs here, owned ones in `Extend`.
            let new = tree
                .insert_many(batch.iter().map(|(k, v)| (&k[..], &v[..])))
                .unwrap();
            prop_assert_eq!(new, oracle.len() - before, "insert_many: new keys");
        }
        Op::InsertManyRefused(batch, bad) => {
            let mut batch = batch.clone();
            batch.push((b"x".to_vec(), b"y".to_vec()));
            let at = bad % batch.len();
            batch[at].1 = vec![0; tree.config().max_value_len() + 1];
            let err = tree.insert_many(batch).unwrap_err();
            prop_assert!(matches!(err, Error::ValueTooLarge { .. }), "{:?}", err);
            // Nothing changed: checked by the next comparison.
            compare_all(tree, oracle)?;
        }
        Op::GetMany(keys) => {
            let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| oracle.get(k).cloned()).collect();
            prop_assert_eq!(tree.get_many(keys), want);
        }
        Op::Extend(batch) => {
            tree.extend(batch.iter().cloned());
            oracle.extend(batch.iter().cloned());
        }
        Op::Check => {
            tree.check_invariants().map_err(TestCaseError::fail)?;
            compare_all(tree, oracle)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(prop_config(512))]

    /// Random sequences of the multi-entry operations (and inserts that grow the tree)
    /// against `BTreeMap`, on 4 KiB pages with and without merging.
    #[test]
    fn std_surface_matches_btreemap(
        merge in prop::sample::select(vec![0.0, 0.25]),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let mut tree = Tree::with_config(Config { merge_threshold: merge, ..Config::default() })
            .unwrap();
        let mut oracle = Oracle::new();
        for op in &ops {
            apply(&mut tree, &mut oracle, op)?;
        }
        tree.check_invariants().map_err(TestCaseError::fail)?;
        compare_all(&tree, &oracle)?;
    }

    /// `collect` into a tree equals `collect` into a `BTreeMap` (the last value of a key
    /// wins).
    #[test]
    fn from_iterator_matches_btreemap(batch in entries(300)) {
        let tree: Tree = batch.iter().cloned().collect();
        let oracle: Oracle = batch.into_iter().collect();
        tree.check_invariants().map_err(TestCaseError::fail)?;
        compare_all(&tree, &oracle)?;
    }

    /// `insert_many` that runs out of space midway leaves the tree as it was, including
    /// the values its batch replaced (with longer and shorter ones).
    #[test]
    fn insert_many_out_of_space_changes_nothing(
        seed in 0u32..1000,
        present in 0u32..400,
        fresh in 3000u32..6000,
    ) {
        let tree = Tree::with_config(Config { max_memory: 24 * 4096, ..Config::default() })
            .unwrap();
        let mut oracle = Oracle::new();
        for i in 0..present {
            let (k, v) = (i.to_be_bytes().to_vec(), vec![(i ^ seed) as u8; (i % 30) as usize]);
            tree.insert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        // Replace every present key (some values grow, some shrink) and add `fresh` new
        // keys with 100-byte values: more than 24 pages hold.
        let batch: Vec<(Vec<u8>, Vec<u8>)> = (0..present + fresh)
            .rev()
            .map(|i| (i.to_be_bytes().to_vec(), vec![seed as u8; ((i + seed) % 100) as usize + 1]))
            .collect();
        match tree.insert_many(batch) {
            Err(Error::OutOfSpace { .. }) => {}
            other => prop_assert!(false, "expected OutOfSpace, got {:?}", other),
        }
        tree.check_invariants().map_err(TestCaseError::fail)?;
        compare_all(&tree, &oracle)?;
    }
}

// ---- deterministic tests ----------------------------------------------------------------

/// `insert_many` that runs out of space after it replaced an out-of-line value with a
/// shorter one puts the old value back although the budget has no room to write it again
/// (found by the `ops` fuzz target: the undo wrote the old value anew, which the budget
/// refused, and the key kept the batch's value). A batch that succeeds frees the values it
/// replaced.
#[test]
fn insert_many_out_of_space_puts_back_out_of_line_values() {
    let page = 8192;
    let tree = Tree::with_config(Config {
        page_size: page,
        max_memory: 16 * page,
        ..Config::default()
    })
    .unwrap();
    // A: 6 chain pages; F: 5; with the leaf 12 of the 16 pages.
    let (a, f) = (vec![1u8; 41_000], vec![2u8; 40_000]);
    tree.insert(b"a", &a).unwrap();
    tree.insert(b"b", b"small").unwrap();
    tree.insert(b"f", &f).unwrap();
    let before = tree.stats().bytes_allocated;
    // A shrinks to 4 pages, B grows to 5, C needs 5 more: the budget runs out.
    let (a2, b2, c2) = (vec![3u8; 30_000], vec![4u8; 40_000], vec![5u8; 40_000]);
    let err = tree
        .insert_many([(&b"a"[..], &a2[..]), (b"b", &b2), (b"c", &c2)])
        .unwrap_err();
    assert!(matches!(err, Error::OutOfSpace { .. }), "{err:?}");
    tree.check_invariants().unwrap();
    // (Not `assert_eq!`: a failure would print 41 000 bytes.)
    assert!(tree.get(b"a") == Some(a.clone()), "A lost its old value");
    assert_eq!(tree.get(b"b"), Some(b"small".to_vec()));
    assert_eq!(tree.get(b"c"), None);
    assert!(tree.get(b"f") == Some(f), "F changed");
    assert_eq!(tree.len(), 3);
    assert_eq!(
        tree.stats().bytes_allocated,
        before,
        "the undo leaked pages"
    );
    // Room for the batch: it succeeds and frees the old values of A and B.
    tree.remove(b"f");
    assert_eq!(
        tree.insert_many([(&b"a"[..], &a2[..]), (b"b", &b"tiny"[..])])
            .unwrap(),
        0
    );
    assert!(tree.get(b"a") == Some(a2), "A lacks the batch's value");
    // The leaf and the 4 chain pages of A's new value.
    assert_eq!(tree.stats().bytes_allocated, 5 * page);
}

#[test]
fn range_forms_compile_and_agree() {
    let tree: Tree = (0u8..10).map(|i| ([i], [i])).collect();
    let (a, b) = (vec![2u8], vec![5u8]);
    assert_eq!(tree.range(..).count(), 10);
    assert_eq!(tree.range(&a[..]..&b[..]).count(), 3);
    assert_eq!(tree.range(a.clone()..b.clone()).count(), 3);
    assert_eq!(tree.range([2u8]..[5u8]).count(), 3);
    assert_eq!(tree.range(&[2u8]..=&[5u8]).count(), 4);
    assert_eq!(tree.range([7u8]..).count(), 3);
    assert_eq!(tree.range(..=b.clone()).count(), 6);
    assert_eq!(tree.range_of(&a[..]..&b[..]).count(), 3);
    assert_eq!(tree.remove_range([8u8]..), 2);
    assert_eq!(tree.remove_range(..[1u8]), 1);
    assert_eq!(tree.keys().count(), 7);
}

#[test]
fn scan_prefix_at_the_ends_of_the_byte_range() {
    let tree = Tree::new();
    for k in [
        &[][..],
        &[0],
        &[0, 0xFF],
        &[0xFE, 0xFF],
        &[0xFF],
        &[0xFF, 0xFF],
        &[0xFF, 0xFF, 0],
    ] {
        tree.insert(k, b"").unwrap();
    }
    assert_eq!(tree.scan_prefix(b"").count(), 7);
    assert_eq!(tree.scan_prefix([0]).count(), 2);
    assert_eq!(tree.scan_prefix([0xFE]).count(), 1);
    assert_eq!(tree.scan_prefix([0xFF]).count(), 3);
    assert_eq!(tree.scan_prefix([0xFF, 0xFF]).count(), 2);
    assert_eq!(tree.scan_prefix([0xFF, 0xFF, 0, 0]).count(), 0);
}

/// Runs `body` on a thread and fails if it does not finish within `secs` seconds (a
/// re-entrant call that waits for its own latch would hang forever).
fn watchdog(secs: u64, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(()) => worker.join().unwrap(),
        // The body panicked: report its panic.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(worker.join().unwrap_err())
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("hung for {secs} s: a re-entrant call waits for a latch")
        }
    }
}

#[test]
fn retain_closure_may_use_the_tree() {
    watchdog(60, || {
        let tree: Tree = (0u32..2000)
            .map(|i| (i.to_be_bytes(), i.to_le_bytes()))
            .collect();
        // `f` runs with no latch held: it may read and write the same tree, on any key.
        tree.retain(|k, v| {
            assert_eq!(tree.get(k).as_deref(), Some(v));
            assert!(tree.contains_key(k));
            tree.update_with(k, |_| ());
            tree.insert(b"\x00", k).unwrap(); // behind the scan: not judged
            assert!(tree.range(..).next().is_some());
            u32::from_le_bytes(v.try_into().unwrap()) % 3 == 0
        });
        assert_eq!(tree.len(), 667 + 1);
        tree.check_invariants().unwrap();
    });
}

#[test]
fn catch_unwind_around_tree_calls() {
    let tree = Tree::new();
    tree.insert(b"k", b"v").unwrap();
    let got = std::panic::catch_unwind(|| tree.get(b"k")).unwrap();
    assert_eq!(got, Some(b"v".to_vec()));
    // A panic in a closure leaves the tree usable.
    let r = std::panic::catch_unwind(|| tree.retain(|_, _| panic!("boom")));
    assert!(r.is_err());
    assert_eq!(tree.get(b"k"), Some(b"v".to_vec()));
    tree.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "use Tree::insert_many")]
fn extend_panics_on_a_refused_entry() {
    let mut tree = Tree::new();
    let too_long = tree.config().max_value_len() + 1;
    tree.extend([(b"k".to_vec(), vec![0u8; too_long])]);
}

#[test]
fn debug_shows_len() {
    let tree: Tree = [("a", "1")].into_iter().collect();
    let s = format!("{tree:?}");
    assert!(s.contains("len: 1"), "{s}");
    assert!(format!("{:?}", tree.keys()).contains("Range"));
}

// ---- concurrency ------------------------------------------------------------------------

const THREADS: usize = 8;

/// Fills a tree with `n` entries whose value is the key, then runs `THREADS` threads that
/// pop (from the front if `front(thread)`, else from the back) until the tree is empty, and
/// checks that every entry was handed out exactly once, with its value.
fn pop_exactly_once(n: u32, front: impl Fn(usize) -> bool + Sync) {
    let tree: Tree = (0..n).map(|i| (i.to_be_bytes(), i.to_be_bytes())).collect();
    let barrier = Barrier::new(THREADS);
    let popped: Vec<Vec<(Vec<u8>, Vec<u8>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (tree, barrier, front) = (&tree, &barrier, &front);
                s.spawn(move || {
                    barrier.wait();
                    let mut mine = Vec::new();
                    let pop = || {
                        if front(t) {
                            tree.pop_first()
                        } else {
                            tree.pop_last()
                        }
                    };
                    while let Some(e) = pop() {
                        mine.push(e);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut seen = HashSet::new();
    for (k, v) in popped.iter().flatten() {
        assert_eq!(k, v, "value of {k:?}");
        assert!(seen.insert(k.clone()), "{k:?} popped twice");
    }
    assert_eq!(seen.len(), n as usize, "entries lost");
    // Each thread's pops from one end are in order.
    for (t, mine) in popped.iter().enumerate() {
        let ordered = mine.windows(2).all(|w| (w[0].0 < w[1].0) == front(t));
        assert!(ordered, "thread {t} popped out of order");
    }
    assert!(tree.is_empty());
    tree.check_invariants().unwrap();
}

#[test]
fn concurrent_pop_first_hands_out_every_entry_once() {
    pop_exactly_once(20_000, |_| true);
}

#[test]
fn concurrent_pop_last_hands_out_every_entry_once() {
    pop_exactly_once(20_000, |_| false);
}

#[test]
fn concurrent_pops_from_both_ends_hand_out_every_entry_once() {
    pop_exactly_once(20_000, |t| t % 2 == 0);
}

/// `retain` dropping every "old" value races with threads that change "old" to "new" by
/// `compare_exchange`: a key whose exchange won must survive (with "new"), a key whose
/// exchange lost must be gone: retain never removes a value it did not judge.
#[test]
fn retain_races_with_compare_exchange() {
    let n = 20_000u32;
    let tree: Tree = (0..n).map(|i| (i.to_be_bytes(), *b"old")).collect();
    let won: Vec<Vec<u32>> = std::thread::scope(|s| {
        let changers: Vec<_> = (0..3u32)
            .map(|t| {
                let tree = &tree;
                s.spawn(move || {
                    (0..n)
                        .filter(|i| i % 3 == t)
                        .filter(|i| {
                            let k = i.to_be_bytes();
                            tree.compare_exchange(&k, Some(&b"old"[..]), Some(&b"new"[..]))
                                .unwrap()
                                .is_ok()
                        })
                        .collect()
                })
            })
            .collect();
        tree.retain(|_, v| v != b"old");
        changers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: HashSet<u32> = won.into_iter().flatten().collect();
    for i in 0..n {
        let got = tree.get(&i.to_be_bytes());
        if won.contains(&i) {
            assert_eq!(got.as_deref(), Some(&b"new"[..]), "key {i}");
        } else {
            assert_eq!(got, None, "key {i}");
        }
    }
    assert_eq!(tree.len(), won.len());
    tree.check_invariants().unwrap();
}

/// A range hands out short entries straight from its leaf copy and the others through its
/// cursor: a walk that mixes both (keys and values on either side of the 22 bytes kept
/// inline, across many leaves), with the ends switched midway and an end bound inside a
/// leaf, matches the oracle.
#[test]
fn ranges_mix_short_and_long_entries_from_both_ends() {
    let tree = Tree::new();
    let mut oracle = BTreeMap::new();
    for i in 0u32..6_000 {
        let mut k = i.to_be_bytes().to_vec();
        if i % 7 == 0 {
            k.extend_from_slice(&[b'~'; 30]);
        }
        let v = vec![i as u8; if i % 5 == 0 { 40 } else { (i % 23) as usize }];
        tree.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    let pairs = |it: &mut dyn Iterator<Item = (Bytes, Bytes)>| -> Vec<(Vec<u8>, Vec<u8>)> {
        it.map(|(k, v)| (k.into_vec(), v.into_vec())).collect()
    };
    let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.clone().into_iter().collect();
    assert_eq!(pairs(&mut tree.iter()), want);
    assert_eq!(
        pairs(&mut tree.iter().rev()),
        want.iter().rev().cloned().collect::<Vec<_>>()
    );
    let (lo, hi) = (1_000u32.to_be_bytes(), 4_321u32.to_be_bytes());
    let inside: Vec<_> = oracle
        .range(lo.to_vec()..hi.to_vec())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(pairs(&mut tree.range_of(lo..hi)), inside);
    let reversed: Vec<_> = inside.iter().rev().cloned().collect();
    assert_eq!(pairs(&mut tree.range_of(lo..hi).rev()), reversed);
    // From the front for a while, then from the back, then from the front again until the
    // ends meet.
    let mut r = tree.range_of(lo..hi);
    let mut got = Vec::new();
    let mut back = Vec::new();
    for _ in 0..500 {
        let (k, v) = r.next().unwrap();
        got.push((k.into_vec(), v.into_vec()));
    }
    for _ in 0..700 {
        let (k, v) = r.next_back().unwrap();
        back.push((k.into_vec(), v.into_vec()));
    }
    got.extend(pairs(&mut r));
    got.extend(back.into_iter().rev());
    assert_eq!(got, inside);
}

/// Batches at a tight budget on small pages (long keys, inline and out-of-line values, no
/// merges), one thread: every batch that fails changes nothing. (The fuzzer's finding 5 is
/// the next test, which this sample does not happen to reproduce.)
#[test]
fn failed_batches_at_a_tight_budget_change_nothing() {
    let page = 512;
    let tree = Tree::with_config(Config {
        page_size: page,
        max_memory: 24 * page,
        merge_threshold: 0.0,
        ..Config::default()
    })
    .unwrap();
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let (mut failed, mut grown) = (0, 0);
    for _ in 0..6_000 {
        let batch: Vec<(Vec<u8>, Vec<u8>)> = (0..1 + next(4))
            .map(|_| {
                let mut k = vec![b'k', next(40) as u8];
                if next(3) == 0 {
                    // A long key (past the 32 bytes a 512-byte page keeps inline).
                    k.resize(2 + next(100) as usize, b'~');
                }
                let len = match next(8) {
                    0 => 200 + next(1_500) as usize,
                    _ => next(120) as usize,
                };
                (k, vec![next(256) as u8; len])
            })
            .collect();
        match tree.insert_many(batch.iter().map(|(k, v)| (k, v))) {
            Ok(_) => oracle.extend(batch),
            Err(Error::OutOfSpace { .. }) => failed += 1,
            Err(e) => panic!("{e:?}"),
        }
        if tree.stats().bytes_allocated > 24 * page {
            grown += 1;
        }
        if next(6) == 0 {
            let k = vec![b'k', next(40) as u8];
            tree.remove(&k);
            oracle.remove(&k);
        }
        let got: Vec<(Vec<u8>, Vec<u8>)> = tree
            .iter()
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.clone().into_iter().collect();
        assert!(got == want, "a failed batch changed the tree");
    }
    tree.check_invariants().unwrap();
    assert!(failed > 100, "the budget ran out only {failed} times");
    eprintln!("{failed} batches failed; {grown} left the pool past its budget");
}

/// The fuzzer's finding 5, minimized (docs/verification.md): at a full budget a batch
/// shrinks `k3`'s 121-byte value to nothing, then inserts a key whose leaf is full; making
/// room for it without a new page packs an entry of a neighbour into the room `k3`'s leaf
/// just gained, and the batch's next key finds no page. Putting `k3`'s value back now
/// needs a split, which neither the budget nor a `compact` (every leaf is packed) allows:
/// the undo takes its page past the budget, and the failed batch changes nothing.
#[test]
fn a_failed_batch_puts_back_a_value_its_leaf_lost_room_for() {
    let short = |i: u8| vec![b'k', i];
    // `k`, `i % 64`, `tildes` bytes `~`, then `i`: stored partly out of line on 512-byte pages.
    let long = |i: u8, tildes: usize| {
        let mut k = vec![b'k', i % 64];
        k.resize(2 + tildes, b'~');
        k.push(i);
        k
    };
    let page = 512;
    let tree = Tree::with_config(Config {
        page_size: page,
        max_memory: 32 * page,
        merge_threshold: 0.0,
        space_manager: false,
        ..Config::default()
    })
    .unwrap();
    let setup = [
        vec![(long(0, 336), vec![0; 105])],
        vec![(long(155, 457), vec![0; 155])],
        vec![(short(55), vec![65; 65])],
        vec![(long(155, 367), vec![64; 123])],
        vec![(long(121, 52), vec![]), (long(3, 432), vec![121; 9003])],
        vec![(long(97, 492), vec![0; 61])],
        vec![(short(0), vec![255; 55])],
        vec![
            (long(123, 336), vec![123; 107]),
            (long(123, 241), vec![123; 123]),
        ],
        vec![
            (long(155, 223), vec![0; 123]),
            (short(3), vec![125; 121]),
            (long(155, 121), vec![121; 123]),
            (short(57), vec![0; 105]),
        ],
    ];
    for batch in &setup {
        tree.insert_many(batch.iter().map(|(k, v)| (k, v))).unwrap();
    }
    assert_eq!(
        tree.stats().bytes_allocated,
        32 * page,
        "the setup fills the budget"
    );
    let before: Vec<(Bytes, Bytes)> = tree.iter().collect();
    let before = || before.iter().cloned();
    let batch = [
        (short(3), vec![]),
        (long(25, 173), vec![]),
        (long(32, 96), vec![0; 123]),
    ];
    let got = tree.insert_many(batch.iter().map(|(k, v)| (k, v)));
    assert!(matches!(got, Err(Error::OutOfSpace { .. })), "{got:?}");
    assert!(
        tree.iter().eq(before()),
        "the failed batch changed the tree"
    );
    tree.check_invariants().unwrap();
    // The put-back's split took a page past the budget (should this fail, the layout no
    // longer leads here and the scenario needs deriving again).
    assert_eq!(tree.stats().bytes_allocated, 33 * page);
    // Writes that need a page still fail meanwhile, and change nothing either.
    let big = vec![7u8; 5_000];
    assert!(matches!(
        tree.insert(b"z", &big),
        Err(Error::OutOfSpace { .. })
    ));
    assert!(tree.iter().eq(before()));
}

/// Ranges over leaves whose prefix is short, near and past what a `Bytes` holds inline (22
/// bytes: the fast path builds keys from a per-leaf copy of the prefix), with suffixes and
/// values on both sides of that limit, match the oracle from both ends and from the middle.
#[test]
fn ranges_agree_at_every_prefix_length() {
    for plen in [0usize, 1, 7, 17, 18, 21, 22, 23, 30] {
        let tree = Tree::new();
        let mut oracle = BTreeMap::new();
        for i in 0..3_000u32 {
            let mut k = vec![b'p'; plen];
            let suffix = i.wrapping_mul(2_654_435_761).to_be_bytes();
            k.extend_from_slice(&suffix[..1 + i as usize % 4]);
            k.extend_from_slice(&i.to_be_bytes()[..i as usize % 3]);
            let v = vec![i as u8; i as usize % 30];
            tree.insert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.clone().into_iter().collect();
        let got: Vec<(Vec<u8>, Vec<u8>)> = tree
            .iter()
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect();
        assert!(got == want, "forward, prefix {plen}");
        let back: Vec<(Vec<u8>, Vec<u8>)> = tree
            .iter()
            .rev()
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect();
        assert!(
            back.into_iter().rev().eq(want.iter().cloned()),
            "backward, prefix {plen}"
        );
        let mid = want[want.len() / 3].0.clone();
        let from: Vec<(Vec<u8>, Vec<u8>)> = tree
            .range(mid.clone()..)
            .take(700)
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect();
        let want_from: Vec<(Vec<u8>, Vec<u8>)> = oracle
            .range(mid..)
            .take(700)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert!(from == want_from, "from the middle, prefix {plen}");
    }
}
