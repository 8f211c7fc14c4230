//! Operation sequences on a `Tree` against std's `BTreeMap`.
//!
//! The input picks a `Config` (page sizes from 512 bytes, a memory budget or none, merge
//! and XMerge settings, Contention Split knobs; invalid values too, which must be refused
//! with `InvalidConfig`) and a sequence of operations: every public operation of the byte
//! API, a cursor kept open across writes, and bad input (keys and values past their
//! limits). Each result is compared with the oracle's; an error must be the one the input
//! calls for (`KeyTooLarge`, `ValueTooLarge`, or `OutOfSpace` under a budget) and leave the
//! contents unchanged. At the end `check_invariants` holds and both scan directions and
//! `len` agree with the oracle.
//!
//! Keys come from a small set (64 short ones, long ones of up to ~750 bytes that go out of
//! line on small pages) so that operations meet on the same keys and leaves; values range
//! from empty to 64 KiB (inline, heap chunks, page chains).

#![no_main]

use arbitrary::Arbitrary;
use contree::{Config, Error, Tree, MAX_KEY_LEN, MAX_VALUE_LEN};
use libfuzzer_sys::fuzz_target;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};
use std::sync::OnceLock;

type Map = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Arbitrary, Debug)]
struct Input {
    config: Cfg,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
struct Cfg {
    /// 0..=3: 512, 1024, 4096, 8192 bytes; other values as they are (mostly invalid).
    page: u16,
    /// A budget of this many pages (fewer than 4 is invalid).
    budget: Option<u8>,
    /// `merge_threshold = merge / 400` (above 0.5 is invalid).
    merge: u8,
    xmerge_group: u8,
    contention_split: bool,
    sample_shift: u8,
    period_shift: u8,
    /// `contention_threshold = threshold / 200` (above 1 is invalid).
    threshold: u8,
    blob_heap: bool,
    return_memory: bool,
    combining: bool,
    contention_split_appends: bool,
}

impl Cfg {
    fn config(&self) -> Config {
        let page_size = match self.page {
            0 => 512,
            1 => 1024,
            2 => 4096,
            3 => 8192,
            p => p as usize,
        };
        Config {
            page_size,
            max_memory: self
                .budget
                .map_or(usize::MAX, |p| (p as usize).saturating_mul(page_size)),
            merge_threshold: self.merge as f64 / 400.0,
            xmerge_group: self.xmerge_group as usize,
            contention_split: self.contention_split,
            contention_sample_shift: self.sample_shift as u32,
            contention_period_shift: self.period_shift as u32,
            contention_threshold: self.threshold as f64 / 200.0,
            // A background thread would make runs irreproducible.
            space_manager: false,
            blob_heap: self.blob_heap,
            return_memory: self.return_memory,
            combining: self.combining,
            contention_split_appends: self.contention_split_appends,
            ..Config::default()
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum K {
    Short(u8),
    Long(u8, u16),
    Oversized,
}

impl K {
    fn bytes(self) -> Vec<u8> {
        match self {
            K::Short(i) => vec![b'k', i % 64],
            K::Long(i, len) => {
                let mut k = vec![b'k', i % 64];
                k.resize(2 + 20 + (len % 730) as usize, b'~');
                k.push(i);
                k
            }
            K::Oversized => vec![b'x'; MAX_KEY_LEN + 1],
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum V {
    Small(u8, u8),
    Large(u16, u8),
    Oversized,
}

/// One value past the limit, made once (16 MiB).
fn oversized_value() -> &'static [u8] {
    static V: OnceLock<Vec<u8>> = OnceLock::new();
    V.get_or_init(|| vec![0; MAX_VALUE_LEN + 1])
}

impl V {
    /// The value's bytes (the oversized one borrowed: copying 16 MiB per use would be most
    /// of a run's time).
    fn bytes(self) -> Cow<'static, [u8]> {
        match self {
            V::Small(len, fill) => Cow::Owned(vec![fill; len as usize]),
            V::Large(len, fill) => Cow::Owned(vec![fill; len as usize]),
            V::Oversized => Cow::Borrowed(oversized_value()),
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum B {
    Unbounded,
    Included(K),
    Excluded(K),
}

impl B {
    fn bound(self) -> Bound<Vec<u8>> {
        match self {
            B::Unbounded => Bound::Unbounded,
            B::Included(k) => Bound::Included(k.bytes()),
            B::Excluded(k) => Bound::Excluded(k.bytes()),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(K, V),
    Remove(K),
    Get(K),
    GetWith(K),
    GetInto(K),
    ContainsKey(K),
    UpdateWith(K, u8),
    FetchUpdate(K, Option<V>),
    /// `compare_exchange` from the current value (when `true`) or from `current`.
    CompareExchange(K, bool, Option<V>, Option<V>),
    InsertIfAbsent(K, V),
    RemoveIf(K, u8),
    GetOrInsertWith(K, V),
    GetMany(Vec<K>),
    InsertMany(Vec<(K, V)>),
    Range(B, B, bool, u8),
    Scan(B, B, bool, u8),
    ScanPrefix(K, u8),
    Keys(bool),
    Values,
    RemoveRange(B, B),
    Retain(u8),
    PopFirst,
    PopLast,
    First,
    Last,
    Len,
    Compact,
    Clear,
    Cursor(CursorOp),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum CursorOp {
    Seek(K),
    SeekAfter(K),
    SeekForPrev(K),
    SeekBefore(K),
    SeekToFirst,
    SeekToLast,
    Next,
    Prev,
}

/// Whether `key` lies within `(lo, hi)`.
fn within(key: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => key <= h.as_slice(),
        Bound::Excluded(h) => key < h.as_slice(),
    };
    above && below
}

/// The oracle's entries within the bounds, in order (no panic on inverted bounds, unlike
/// `BTreeMap::range`).
fn oracle_range(m: &Map, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter()
        .filter(|(k, _)| within(k, lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What a walk of `lo..hi` (descending if `rev`) that stops after `limit` entries (0: no
/// limit) returns, and that limit as a count.
fn oracle_walk(
    m: &Map,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    rev: bool,
    limit: u8,
) -> (Vec<(Vec<u8>, Vec<u8>)>, usize) {
    let limit = if limit == 0 {
        usize::MAX
    } else {
        limit as usize
    };
    let mut want = oracle_range(m, lo, hi);
    if rev {
        want.reverse();
    }
    want.truncate(limit);
    (want, limit)
}

/// The checks that do not depend on the operation: an error is the one the input calls for.
struct Limits {
    budget: bool,
}

impl Limits {
    /// The error an insert of `key` and `value` must return, if it must fail on the input
    /// alone (the key is checked first).
    fn input_error(key: &[u8], value: &[u8]) -> Option<&'static str> {
        if key.len() > MAX_KEY_LEN {
            Some("KeyTooLarge")
        } else if value.len() > MAX_VALUE_LEN {
            Some("ValueTooLarge")
        } else {
            None
        }
    }

    /// Checks `err`, returned by a write of `key` and `value`.
    fn check(&self, err: &Error, key: &[u8], value: &[u8]) {
        match (Self::input_error(key, value), err) {
            (Some("KeyTooLarge"), Error::KeyTooLarge { .. }) => {}
            (Some("ValueTooLarge"), Error::ValueTooLarge { .. }) => {}
            (None, Error::OutOfSpace { .. }) if self.budget => {}
            (want, got) => panic!("write failed with {got:?}, expected {want:?}"),
        }
    }
}

fn scan_collect(
    tree: &Tree,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    rev: bool,
    limit: usize,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut seen = Vec::new();
    let mut f = |k: &[u8], v: &[u8]| {
        seen.push((k.to_vec(), v.to_vec()));
        if seen.len() >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    if rev {
        tree.scan_rev((lo, hi), &mut f);
    } else {
        tree.scan((lo, hi), &mut f);
    }
    seen
}

fn run(input: Input) {
    let config = input.config.config();
    let tree = match Tree::with_config(config.clone()) {
        Ok(t) => t,
        Err(e) => {
            assert!(
                config.validate().is_err() && matches!(e, Error::InvalidConfig { .. }),
                "a valid config refused: {e:?}"
            );
            return;
        }
    };
    let limits = Limits {
        budget: config.max_memory != usize::MAX,
    };
    let mut m = Map::new();
    let mut cursor = tree.cursor();
    for op in input.ops.into_iter().take(400) {
        match op {
            Op::Insert(k, v) => {
                let (k, v) = (k.bytes(), v.bytes());
                match tree.insert(&k, &v) {
                    Ok(old) => assert_eq!(old, m.insert(k, v.into_owned())),
                    Err(e) => limits.check(&e, &k, &v),
                }
            }
            Op::Remove(k) => {
                let k = k.bytes();
                assert_eq!(tree.remove(&k), m.remove(&k));
            }
            Op::Get(k) => {
                let k = k.bytes();
                assert_eq!(tree.get(&k), m.get(&k).cloned());
            }
            Op::GetWith(k) => {
                let k = k.bytes();
                assert_eq!(tree.get_with(&k, |v| v.to_vec()), m.get(&k).cloned());
            }
            Op::GetInto(k) => {
                let k = k.bytes();
                let mut out = vec![1, 2, 3];
                let found = tree.get_into(&k, &mut out);
                assert_eq!(found, m.contains_key(&k));
                if found {
                    assert_eq!(Some(&out), m.get(&k));
                }
            }
            Op::ContainsKey(k) => {
                let k = k.bytes();
                assert_eq!(tree.contains_key(&k), m.contains_key(&k));
            }
            Op::UpdateWith(k, x) => {
                let k = k.bytes();
                let got = tree.update_with(&k, |v| {
                    if let Some(b) = v.first_mut() {
                        *b ^= x;
                    }
                    v.len()
                });
                let want = m.get_mut(&k).map(|v| {
                    if let Some(b) = v.first_mut() {
                        *b ^= x;
                    }
                    v.len()
                });
                assert_eq!(got, want);
            }
            Op::FetchUpdate(k, new) => {
                let (k, new) = (k.bytes(), new.map(|v| v.bytes().into_owned()));
                let got = tree.fetch_update(&k, |old| {
                    assert_eq!(old, m.get(&k).map(|v| v.as_slice()));
                    new.clone()
                });
                match got {
                    Ok(old) => {
                        let want = match &new {
                            Some(v) => m.insert(k, v.clone()),
                            None => m.remove(&k),
                        };
                        assert_eq!(old, want);
                    }
                    Err(e) => limits.check(&e, &k, new.as_deref().unwrap_or_default()),
                }
            }
            Op::CompareExchange(k, from_current, current, new) => {
                let k = k.bytes();
                let current = if from_current {
                    m.get(&k).cloned()
                } else {
                    current.map(|v| v.bytes().into_owned())
                };
                let new = new.map(V::bytes);
                match tree.compare_exchange(&k, current.as_deref(), new.as_deref()) {
                    Ok(Ok(())) => {
                        assert_eq!(m.get(&k), current.as_ref());
                        match new {
                            Some(v) => m.insert(k, v.into_owned()),
                            None => m.remove(&k),
                        };
                    }
                    Ok(Err(actual)) => {
                        assert_ne!(m.get(&k), current.as_ref());
                        assert_eq!(actual.as_ref(), m.get(&k));
                    }
                    Err(e) => {
                        // A failed exchange must also have found the current value.
                        limits.check(&e, &k, new.as_deref().unwrap_or_default());
                    }
                }
            }
            Op::InsertIfAbsent(k, v) => {
                let (k, v) = (k.bytes(), v.bytes());
                match tree.insert_if_absent(&k, &v) {
                    Ok(true) => assert!(m.insert(k, v.into_owned()).is_none()),
                    Ok(false) => assert!(m.contains_key(&k)),
                    Err(e) => limits.check(&e, &k, &v),
                }
            }
            Op::RemoveIf(k, x) => {
                let k = k.bytes();
                let pred = |v: &[u8]| v.first().is_none_or(|b| b % 3 == x % 3);
                let got = tree.remove_if(&k, pred);
                let want = match m.get(&k) {
                    Some(v) if pred(v) => m.remove(&k),
                    _ => None,
                };
                assert_eq!(got, want);
            }
            Op::GetOrInsertWith(k, v) => {
                let (k, v) = (k.bytes(), v.bytes());
                match tree.get_or_insert_with(&k, || v.to_vec()) {
                    Ok(got) => assert_eq!(&got, m.entry(k).or_insert(v.into_owned())),
                    Err(e) => {
                        assert!(!m.contains_key(&k) || k.len() > MAX_KEY_LEN);
                        limits.check(&e, &k, &v);
                    }
                }
            }
            Op::GetMany(ks) => {
                let ks: Vec<Vec<u8>> = ks.into_iter().take(32).map(K::bytes).collect();
                let want: Vec<Option<Vec<u8>>> = ks.iter().map(|k| m.get(k).cloned()).collect();
                assert_eq!(tree.get_many(&ks), want);
            }
            Op::InsertMany(es) => {
                let es: Vec<(Vec<u8>, Cow<'static, [u8]>)> = es
                    .into_iter()
                    .take(32)
                    .map(|(k, v)| (k.bytes(), v.bytes()))
                    .collect();
                match tree.insert_many(es.iter().map(|(k, v)| (k, v))) {
                    Ok(new) => {
                        let before = m.len();
                        for (k, v) in es {
                            m.insert(k, v.into_owned());
                        }
                        assert_eq!(new, m.len() - before);
                    }
                    Err(e) => {
                        let bad = es
                            .iter()
                            .find_map(|(k, v)| Limits::input_error(k, v).map(|_| (k, v)));
                        match bad {
                            Some((k, v)) => limits.check(&e, k, v),
                            None => limits.check(&e, b"", b""),
                        }
                    }
                }
            }
            Op::Range(lo, hi, rev, limit) => {
                let (lo, hi) = (lo.bound(), hi.bound());
                let (want, limit) = oracle_walk(&m, &lo, &hi, rev, limit);
                let range = tree.range((lo, hi));
                let got: Vec<(Vec<u8>, Vec<u8>)> = if rev {
                    range
                        .rev()
                        .take(limit)
                        .map(|(k, v)| (k.to_vec(), v.to_vec()))
                        .collect()
                } else {
                    range
                        .take(limit)
                        .map(|(k, v)| (k.to_vec(), v.to_vec()))
                        .collect()
                };
                assert_eq!(got, want);
            }
            Op::Scan(lo, hi, rev, limit) => {
                let (lo, hi) = (lo.bound(), hi.bound());
                let (want, limit) = oracle_walk(&m, &lo, &hi, rev, limit);
                assert_eq!(scan_collect(&tree, lo, hi, rev, limit), want);
            }
            Op::ScanPrefix(k, cut) => {
                let k = k.bytes();
                let prefix = &k[..(cut as usize).min(k.len())];
                let got: Vec<Vec<u8>> = tree.scan_prefix(prefix).map(|(k, _)| k.to_vec()).collect();
                let want: Vec<Vec<u8>> = m
                    .keys()
                    .filter(|k| k.starts_with(prefix))
                    .cloned()
                    .collect();
                assert_eq!(got, want);
            }
            Op::Keys(rev) => {
                let mut want: Vec<Vec<u8>> = m.keys().cloned().collect();
                let got: Vec<Vec<u8>> = if rev {
                    want.reverse();
                    tree.keys().rev().map(|k| k.to_vec()).collect()
                } else {
                    tree.keys().map(|k| k.to_vec()).collect()
                };
                assert_eq!(got, want);
            }
            Op::Values => {
                let got: Vec<Vec<u8>> = tree.values().map(|v| v.to_vec()).collect();
                assert_eq!(got, m.values().cloned().collect::<Vec<_>>());
            }
            Op::RemoveRange(lo, hi) => {
                let (lo, hi) = (lo.bound(), hi.bound());
                let gone: Vec<Vec<u8>> = oracle_range(&m, &lo, &hi)
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                for k in &gone {
                    m.remove(k);
                }
                assert_eq!(tree.remove_range((lo, hi)), gone.len());
            }
            Op::Retain(x) => {
                let keep = |k: &[u8], v: &[u8]| (k.len() + v.len()) % 4 != (x % 4) as usize;
                tree.retain(keep);
                m.retain(|k, v| keep(k, v));
            }
            Op::PopFirst => assert_eq!(tree.pop_first(), m.pop_first()),
            Op::PopLast => assert_eq!(tree.pop_last(), m.pop_last()),
            Op::First => assert_eq!(
                tree.first(),
                m.first_key_value().map(|(k, v)| (k.clone(), v.clone()))
            ),
            Op::Last => assert_eq!(
                tree.last(),
                m.last_key_value().map(|(k, v)| (k.clone(), v.clone()))
            ),
            Op::Len => {
                assert_eq!(tree.len(), m.len());
                assert_eq!(tree.is_empty(), m.is_empty());
            }
            Op::Compact => {
                tree.compact();
            }
            Op::Clear => {
                tree.clear();
                m.clear();
            }
            Op::Cursor(c) => cursor_op(&mut cursor, c, &m),
        }
    }
    drop(cursor);
    tree.check_invariants().expect("invariants");
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd, want);
    let mut back: Vec<(Vec<u8>, Vec<u8>)> = tree
        .iter()
        .rev()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    back.reverse();
    assert_eq!(back, want);
    assert_eq!(tree.len(), m.len());
}

/// Applies `op` to the open cursor and checks where it stands against the oracle (the
/// tree may have changed since the cursor's last move).
fn cursor_op(cursor: &mut contree::Cursor<'_>, op: CursorOp, m: &Map) {
    let current = cursor.key().map(|k| k.to_vec());
    let (moved, want) = match op {
        CursorOp::Seek(k) => {
            let k = k.bytes();
            (cursor.seek(&k), m.range(k..).next())
        }
        CursorOp::SeekAfter(k) => {
            let k = k.bytes();
            (
                cursor.seek_after(&k),
                m.range((Bound::Excluded(k), Bound::Unbounded)).next(),
            )
        }
        CursorOp::SeekForPrev(k) => {
            let k = k.bytes();
            (cursor.seek_for_prev(&k), m.range(..=k).next_back())
        }
        CursorOp::SeekBefore(k) => {
            let k = k.bytes();
            (cursor.seek_before(&k), m.range(..k).next_back())
        }
        CursorOp::SeekToFirst => (cursor.seek_to_first(), m.iter().next()),
        CursorOp::SeekToLast => (cursor.seek_to_last(), m.iter().next_back()),
        CursorOp::Next => match current {
            None => (cursor.next(), None),
            Some(c) => (
                cursor.next(),
                m.range((Bound::Excluded(c), Bound::Unbounded)).next(),
            ),
        },
        CursorOp::Prev => match current {
            None => (cursor.prev(), None),
            Some(c) => (cursor.prev(), m.range(..c).next_back()),
        },
    };
    assert_eq!(moved, want.is_some(), "{op:?}");
    assert_eq!(cursor.is_valid(), want.is_some());
    assert_eq!(
        cursor.entry(),
        want.map(|(k, v)| (k.as_slice(), v.as_slice())),
        "{op:?}"
    );
}

fuzz_target!(|input: Input| run(input));
