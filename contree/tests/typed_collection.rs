//! `TreeMap`'s std collection surface against std's `BTreeMap`: pops, `retain`,
//! `remove_range`, `clear`, `keys`, `values`, `scan_prefix`, `insert_many`, `get_many`,
//! `FromIterator`, `Extend`, `IntoIterator`; and concurrent pops that hand out every entry
//! exactly once.
//!
//! Run: `cargo test -p contree --release --test typed_collection`.

use contree::TreeMap;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Mutex;

type Key = (String, u32);

#[derive(Clone, Debug)]
enum Op {
    Insert(Key, u64),
    PopFirst,
    PopLast,
    /// Keep the entries whose value is not divisible by this.
    Retain(u64),
    RemoveRange(Key, Key),
    Prefix(String),
    GetMany(Vec<Key>),
    InsertMany(Vec<(Key, u64)>),
    Clear,
}

fn key() -> impl Strategy<Value = Key> {
    ("[ab]{0,3}", 0u32..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (key(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => Just(Op::PopFirst),
        2 => Just(Op::PopLast),
        1 => (2u64..5).prop_map(Op::Retain),
        1 => (key(), key()).prop_map(|(a, b)| Op::RemoveRange(a, b)),
        2 => "[ab]{0,2}".prop_map(Op::Prefix),
        1 => proptest::collection::vec(key(), 0..6).prop_map(Op::GetMany),
        1 => proptest::collection::vec((key(), any::<u64>()), 0..20).prop_map(Op::InsertMany),
        1 => Just(Op::Clear).prop_filter("rare", |_| true),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn collection_surface_matches_btreemap(ops in proptest::collection::vec(op(), 1..80)) {
        let map: TreeMap<Key, u64> = TreeMap::new();
        let mut oracle = BTreeMap::<Key, u64>::new();
        for op in ops {
            match op {
                Op::Insert(k, v) => {
                    prop_assert_eq!(map.insert(&k, &v).unwrap(), oracle.insert(k, v));
                }
                Op::PopFirst => prop_assert_eq!(map.pop_first(), oracle.pop_first()),
                Op::PopLast => prop_assert_eq!(map.pop_last(), oracle.pop_last()),
                Op::Retain(d) => {
                    map.retain(|_, v| v % d != 0);
                    oracle.retain(|_, v| *v % d != 0);
                }
                Op::RemoveRange(a, b) => {
                    let removed = map.remove_range(a.clone()..b.clone());
                    let gone: Vec<Key> = if a < b {
                        oracle.range(a..b).map(|(k, _)| k.clone()).collect()
                    } else {
                        Vec::new()
                    };
                    prop_assert_eq!(removed, gone.len());
                    for k in gone {
                        oracle.remove(&k);
                    }
                }
                Op::Prefix(p) => {
                    // A string key's prefix; and a tuple whose string part is a prefix.
                    let strings: TreeMap<String, u64> =
                        oracle.iter().map(|((s, n), v)| (format!("{s}{n}"), *v)).collect();
                    let got: Vec<String> = strings.scan_prefix(p.as_str()).map(|(k, _)| k).collect();
                    let want: Vec<String> = strings.keys().filter(|k| k.starts_with(&p)).collect();
                    prop_assert_eq!(got, want);
                    let got: Vec<Key> = map.scan_prefix(&(p.clone(), 1)).map(|(k, _)| k).collect();
                    let want: Vec<Key> = oracle.keys().filter(|k| k.0 == p && k.1 == 1).cloned().collect();
                    prop_assert_eq!(got, want);
                }
                Op::GetMany(keys) => {
                    let want: Vec<Option<u64>> = keys.iter().map(|k| oracle.get(k).copied()).collect();
                    prop_assert_eq!(map.get_many(&keys), want);
                }
                Op::InsertMany(entries) => {
                    let mut new = 0;
                    let mut seen = std::collections::BTreeSet::new();
                    for (k, v) in &entries {
                        if oracle.insert(k.clone(), *v).is_none() && seen.insert(k.clone()) {
                            new += 1;
                        }
                    }
                    prop_assert_eq!(map.insert_many(entries).unwrap(), new);
                }
                Op::Clear => {
                    map.clear();
                    oracle.clear();
                }
            }
        }
        prop_assert_eq!(map.keys().collect::<Vec<_>>(), oracle.keys().cloned().collect::<Vec<_>>());
        prop_assert_eq!(map.values().rev().collect::<Vec<_>>(), oracle.values().rev().copied().collect::<Vec<_>>());
        prop_assert_eq!((&map).into_iter().count(), oracle.len());
        let mut copy: TreeMap<Key, u64> = oracle.clone().into_iter().collect();
        copy.extend([(("z".to_string(), 0), 0)]);
        prop_assert_eq!(copy.len(), oracle.len() + 1);
    }
}

#[test]
fn concurrent_pops_hand_out_every_entry_once() {
    const N: u64 = 20_000;
    for first in [true, false] {
        let map: TreeMap<u64, u64> = (0..N).map(|i| (i, i * 3)).collect();
        let seen = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some((k, v)) = if first {
                        map.pop_first()
                    } else {
                        map.pop_last()
                    } {
                        assert_eq!(v, k * 3);
                        mine.push(k);
                    }
                    seen.lock().unwrap().extend(mine);
                });
            }
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..N).collect::<Vec<_>>());
        assert!(map.is_empty());
    }
}

#[test]
fn pops_pass_over_entries_that_do_not_decode() {
    let map: TreeMap<u32, u32> = TreeMap::new();
    map.insert(&5, &50).unwrap();
    // A key of the wrong width, written through the bytes API, sorts first.
    map.as_tree().insert(b"\0", b"x").unwrap();
    map.as_tree().insert(&9u32.to_be_bytes(), b"bad").unwrap();
    assert_eq!(map.pop_first(), Some((5, 50)));
    assert_eq!(map.pop_last(), None);
    map.retain(|_, _| false);
    assert_eq!(map.as_tree().len(), 2, "undecodable entries are kept");
}
