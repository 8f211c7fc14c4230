//! The atomic per-key operations (`fetch_update`, `compare_exchange`, `remove_if`,
//! `insert_if_absent`, `get_or_insert_with`): property tests against std's `BTreeMap`,
//! concurrent races that must lose nothing and have one winner, the re-entry guard (a call
//! into the tree from a closure that holds its latch panics, never hangs: every such test
//! runs under a watchdog), and panics inside closures leaving the tree valid.
//!
//! Run: `cargo test -p contree --release --test atomic`.

use contree::{Config, Tree};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

fn small_pages() -> Tree {
    Tree::with_config(Config {
        page_size: 4096,
        space_manager: false,
        ..Config::default()
    })
    .unwrap()
}

fn counter(v: Option<&[u8]>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

// ---- concurrency ---------------------------------------------------------------------

#[test]
fn fetch_update_increments_lose_nothing() {
    const THREADS: usize = 8;
    const OPS: usize = 100_000;
    const COUNTERS: u64 = 64;
    let tree = Tree::new();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let tree = &tree;
            s.spawn(move || {
                for i in 0..OPS {
                    let key = ((i as u64 * 7 + t as u64) % COUNTERS).to_be_bytes();
                    tree.fetch_update(&key, |v| Some((counter(v) + 1).to_le_bytes().to_vec()))
                        .unwrap();
                }
            });
        }
    });
    let total: u64 = (0..COUNTERS)
        .map(|k| counter(tree.get(&k.to_be_bytes()).as_deref()))
        .sum();
    assert_eq!(total, (THREADS * OPS) as u64);
    assert_eq!(tree.len(), COUNTERS as usize);
    tree.check_invariants().unwrap();
}

#[test]
fn fetch_update_values_that_grow_lose_nothing() {
    // Each increment appends a byte, so values change length and leaves split under the
    // closure: `f` may run again, but every committed step adds exactly one byte.
    const THREADS: usize = 4;
    const OPS: usize = 3_000;
    let tree = small_pages();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let tree = &tree;
            s.spawn(move || {
                for i in 0..OPS {
                    let key = [((i + t) % 16) as u8];
                    tree.fetch_update(&key, |v| {
                        let mut v = v.unwrap_or_default().to_vec();
                        v.push(t as u8);
                        Some(v)
                    })
                    .unwrap();
                }
            });
        }
    });
    let total: usize = tree.iter().map(|(_, v)| v.len()).sum();
    assert_eq!(total, THREADS * OPS);
    tree.check_invariants().unwrap();
}

#[test]
fn compare_exchange_races_have_one_winner() {
    const THREADS: usize = 8;
    const ROUNDS: u32 = 2_000;
    let tree = Tree::new();
    let wins: Vec<AtomicUsize> = (0..ROUNDS).map(|_| AtomicUsize::new(0)).collect();
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (tree, wins, barrier) = (&tree, &wins, &barrier);
            s.spawn(move || {
                barrier.wait();
                for r in 0..ROUNDS {
                    let key = r.to_be_bytes();
                    // Insert-if-absent race, then a replace race on the value now present.
                    match tree.compare_exchange(&key, None, Some(&[t as u8])).unwrap() {
                        Ok(()) => {
                            wins[r as usize].fetch_add(1, Ordering::Relaxed);
                        }
                        Err(actual) => assert!(matches!(actual.unwrap().len(), 1 | 2)),
                    }
                    let now = tree.get(&key).unwrap();
                    if now.len() == 1
                        && tree
                            .compare_exchange(&key, Some(&now), Some(&[now[0], 0xAA]))
                            .unwrap()
                            .is_ok()
                    {
                        wins[r as usize].fetch_add(1000, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    for (r, w) in wins.iter().enumerate() {
        // Exactly one insert winner; exactly one thread replaced the one-byte value.
        assert_eq!(w.load(Ordering::Relaxed), 1001, "round {r}");
    }
}

#[test]
fn remove_if_hands_each_entry_to_one_thread() {
    const THREADS: usize = 8;
    const N: u32 = 20_000;
    let tree = Tree::new();
    for i in 0..N {
        tree.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
    }
    let removed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let (tree, removed) = (&tree, &removed);
            s.spawn(move || {
                for i in 0..N {
                    let v = tree.remove_if(&i.to_be_bytes(), |v| v == i.to_le_bytes());
                    if let Some(v) = v {
                        assert_eq!(v, i.to_le_bytes());
                        removed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(removed.load(Ordering::Relaxed), N as usize);
    assert!(tree.is_empty());
    tree.check_invariants().unwrap();
}

#[test]
fn get_or_insert_with_agrees_on_one_value() {
    const THREADS: usize = 8;
    const N: u32 = 5_000;
    let tree = Tree::new();
    let seen: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let tree = &tree;
                s.spawn(move || {
                    (0..N)
                        .map(|i| {
                            tree.get_or_insert_with(&i.to_be_bytes(), || vec![t as u8])
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for i in 0..N as usize {
        let stored = tree.get(&(i as u32).to_be_bytes()).unwrap();
        for per_thread in &seen {
            assert_eq!(per_thread[i], stored, "key {i}");
        }
    }
}

// ---- against the oracle --------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    /// `fetch_update` replacing with a value of this length (None: remove).
    FetchUpdate(u8, Option<u16>),
    /// `compare_exchange` with `current` the actual value (true) or a wrong one (false).
    Cas(u8, bool, Option<u16>),
    RemoveIf(u8, bool),
    InsertIfAbsent(u8, u16),
    GetOrInsert(u8, u16),
    Insert(u8, u16),
}

fn key(k: u8) -> Vec<u8> {
    // Long shared prefixes and a few hundred distinct keys: collisions and splits.
    let mut key = vec![b'k'; 40];
    key.extend_from_slice(&[k % 7, k]);
    key
}

fn value(len: u16, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_add(salt)).collect()
}

fn op() -> impl Strategy<Value = Op> {
    let len = 0u16..700;
    prop_oneof![
        (any::<u8>(), proptest::option::weighted(0.8, len.clone()))
            .prop_map(|(k, v)| Op::FetchUpdate(k, v)),
        (
            any::<u8>(),
            any::<bool>(),
            proptest::option::of(len.clone())
        )
            .prop_map(|(k, c, v)| Op::Cas(k, c, v)),
        (any::<u8>(), any::<bool>()).prop_map(|(k, b)| Op::RemoveIf(k, b)),
        (any::<u8>(), len.clone()).prop_map(|(k, v)| Op::InsertIfAbsent(k, v)),
        (any::<u8>(), len.clone()).prop_map(|(k, v)| Op::GetOrInsert(k, v)),
        (any::<u8>(), len).prop_map(|(k, v)| Op::Insert(k, v)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn atomic_operations_match_btreemap(ops in proptest::collection::vec(op(), 1..600)) {
        let tree = small_pages();
        let mut oracle = BTreeMap::<Vec<u8>, Vec<u8>>::new();
        for (i, op) in ops.iter().enumerate() {
            let salt = i as u8;
            match *op {
                Op::FetchUpdate(k, len) => {
                    let new = len.map(|l| value(l, salt));
                    let mut seen = None;
                    let old = tree.fetch_update(&key(k), |v| {
                        seen = Some(v.map(<[u8]>::to_vec));
                        new.clone()
                    }).unwrap();
                    let expect = match &new {
                        Some(v) => oracle.insert(key(k), v.clone()),
                        None => oracle.remove(&key(k)),
                    };
                    prop_assert_eq!(&old, &expect);
                    prop_assert_eq!(seen.unwrap(), expect);
                }
                Op::Cas(k, right, new) => {
                    let new = new.map(|l| value(l, salt));
                    let actual = oracle.get(&key(k)).cloned();
                    let current = if right { actual.clone() } else { Some(b"wrong".to_vec()) };
                    let r = tree.compare_exchange(&key(k), current.as_deref(), new.as_deref()).unwrap();
                    if current == actual {
                        prop_assert_eq!(r, Ok(()));
                        match new {
                            Some(v) => { oracle.insert(key(k), v); }
                            None => { oracle.remove(&key(k)); }
                        }
                    } else {
                        prop_assert_eq!(r, Err(actual));
                    }
                }
                Op::RemoveIf(k, yes) => {
                    let mut calls = 0;
                    let r = tree.remove_if(&key(k), |v| {
                        calls += 1;
                        assert_eq!(Some(v), oracle.get(&key(k)).map(|v| &v[..]));
                        yes
                    });
                    let present = oracle.contains_key(&key(k));
                    prop_assert_eq!(calls, present as usize);
                    let expect = if yes { oracle.remove(&key(k)) } else { None };
                    prop_assert_eq!(r, expect);
                }
                Op::InsertIfAbsent(k, len) => {
                    let inserted = tree.insert_if_absent(&key(k), &value(len, salt)).unwrap();
                    prop_assert_eq!(inserted, !oracle.contains_key(&key(k)));
                    oracle.entry(key(k)).or_insert_with(|| value(len, salt));
                }
                Op::GetOrInsert(k, len) => {
                    let v = tree.get_or_insert_with(&key(k), || value(len, salt)).unwrap();
                    let expect = oracle.entry(key(k)).or_insert_with(|| value(len, salt));
                    prop_assert_eq!(&v, expect);
                }
                Op::Insert(k, len) => {
                    let old = tree.insert(&key(k), &value(len, salt)).unwrap();
                    prop_assert_eq!(old, oracle.insert(key(k), value(len, salt)));
                }
            }
        }
        prop_assert_eq!(tree.len(), oracle.len());
        tree.check_invariants().map_err(TestCaseError::fail)?;
        let got: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> = oracle.into_iter().collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn oversized_input_is_refused_and_changes_nothing() {
    let tree = small_pages();
    tree.insert(b"k", b"v").unwrap();
    let big_key = vec![1u8; tree.config().max_key_len() + 1];
    let big_value = vec![1u8; tree.config().max_value_len() + 1];
    assert!(tree.fetch_update(&big_key, |_| Some(vec![])).is_err());
    assert!(tree
        .fetch_update(b"k", |_| Some(big_value.clone()))
        .is_err());
    assert!(tree
        .compare_exchange(b"k", Some(b"v"), Some(&big_value))
        .is_err());
    assert!(tree.insert_if_absent(b"new", &big_value).is_err());
    assert!(tree
        .get_or_insert_with(b"new", || big_value.clone())
        .is_err());
    assert_eq!(tree.remove_if(&big_key, |_| true), None);
    assert_eq!(tree.get(b"k"), Some(b"v".to_vec()));
    assert_eq!(tree.len(), 1);
    tree.check_invariants().unwrap();
}

// ---- re-entry: no silent hang ----------------------------------------------------------

/// Runs `f` on a thread of its own and fails the test if it does not finish in 20 s (a
/// hang), returning whether it panicked and the panic message.
fn watchdog(f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = catch_unwind(AssertUnwindSafe(f)).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        });
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the call hung: no panic and no return within 20 s")
}

fn filled() -> Arc<Tree> {
    let tree = Arc::new(Tree::new());
    for i in 0u32..2_000 {
        tree.insert(&i.to_be_bytes(), &[1u8; 300]).unwrap();
    }
    tree
}

/// Every re-entrant call from inside a latch-holding closure panics with the guard's
/// message, for a key of the same leaf and of another one.
/// A call into the tree, by name.
type Call = (&'static str, fn(&Tree));

/// Runs a latch-holding closure of the tree that makes the given call.
type Holder = fn(&Tree, &dyn Fn(&Tree));

fn assert_reentry_panics(op: &'static str, run: Holder) {
    let calls: [Call; 7] = [
        ("get", |t| {
            let _ = t.get(&5u32.to_be_bytes());
        }),
        ("contains_key", |t| {
            let _ = t.contains_key(&1999u32.to_be_bytes());
        }),
        ("insert", |t| {
            let _ = t.insert(&6u32.to_be_bytes(), b"x");
        }),
        ("update_with", |t| {
            let _ = t.update_with(&5u32.to_be_bytes(), |_| ());
        }),
        ("remove", |t| {
            let _ = t.remove(&7u32.to_be_bytes());
        }),
        ("iter", |t| {
            let _ = t.iter().count();
        }),
        ("fetch_update", |t| {
            let _ = t.fetch_update(b"z", |_| None);
        }),
    ];
    for (name, call) in calls {
        let tree = filled();
        let inner = tree.clone();
        let r = watchdog(move || run(&inner, &|t| call(t)));
        let msg = r.expect_err(&format!("{name} inside {op} did not panic"));
        assert!(
            msg.contains("re-entrant") && msg.contains(&format!("Tree::{op}")),
            "{name} inside {op}: {msg}"
        );
        // The latch was released on unwinding: the tree works and is valid.
        assert_eq!(tree.get(&5u32.to_be_bytes()).map(|v| v.len()), Some(300));
        tree.insert(&5u32.to_be_bytes(), b"after").unwrap();
        tree.check_invariants().unwrap();
    }
}

/// An append from a closure that holds the rightmost leaf (an update of the last key, which
/// keeps the append finger on) panics too: the appends' uncontended path checks re-entry
/// before it looks at the leaf.
#[test]
fn reentry_append_from_update_of_the_last_key_panics() {
    let tree = filled();
    let inner = tree.clone();
    let r = watchdog(move || {
        inner.update_with(&1999u32.to_be_bytes(), |_| {
            let _ = inner.insert(&u32::MAX.to_be_bytes(), b"x");
        });
    });
    let msg = r.expect_err("an append inside update_with did not panic");
    assert!(msg.contains("re-entrant"), "{msg}");
    assert_eq!(tree.get(&u32::MAX.to_be_bytes()), None);
    tree.insert(&u32::MAX.to_be_bytes(), b"after").unwrap();
    assert_eq!(tree.len(), 2_001);
    tree.check_invariants().unwrap();
}

#[test]
fn reentry_from_update_with_panics() {
    assert_reentry_panics("update_with", |t, call| {
        t.update_with(&5u32.to_be_bytes(), |_| call(t));
    });
}

#[test]
fn reentry_from_fetch_update_panics() {
    assert_reentry_panics("fetch_update", |t, call| {
        t.fetch_update(&5u32.to_be_bytes(), |v| {
            call(t);
            v.map(<[u8]>::to_vec)
        })
        .unwrap();
    });
}

#[test]
fn reentry_from_remove_if_panics() {
    assert_reentry_panics("remove_if", |t, call| {
        t.remove_if(&5u32.to_be_bytes(), |_| {
            call(t);
            false
        });
    });
}

#[test]
fn closures_without_a_latch_may_use_the_tree() {
    let tree = filled();
    let t = tree.clone();
    watchdog(move || {
        // get_with, small and large values.
        t.insert(b"small", b"s").unwrap();
        t.get_with(b"small", |v| t.insert(b"small2", v).unwrap());
        t.get_with(&5u32.to_be_bytes(), |v| {
            t.insert(&5u32.to_be_bytes(), &v[..10]).unwrap()
        });
        assert_eq!(t.get(&5u32.to_be_bytes()).unwrap().len(), 10);
        // get_or_insert_with's `make`, scan's visitor.
        t.get_or_insert_with(b"fresh", || t.get(b"small").unwrap())
            .unwrap();
        t.scan(.., |k, _| {
            t.get(k);
            std::ops::ControlFlow::<()>::Break(())
        });
        // A closure on one tree may use another tree.
        let other = Tree::new();
        t.update_with(b"small", |_| other.insert(b"a", b"b").unwrap());
        t.fetch_update(b"small", |v| {
            other.insert(b"c", v.unwrap()).unwrap();
            Some(b"S".to_vec())
        })
        .unwrap();
        assert_eq!(other.len(), 2);
    })
    .unwrap();
    assert_eq!(tree.get(b"fresh"), Some(b"s".to_vec()));
    tree.check_invariants().unwrap();
}

#[test]
fn a_panic_in_a_closure_leaves_the_value_and_the_tree() {
    let tree = filled();
    let key = 9u32.to_be_bytes();
    let r = catch_unwind(AssertUnwindSafe(|| {
        tree.fetch_update(&key, |_| panic!("boom")).unwrap();
    }));
    assert!(r.is_err());
    let r = catch_unwind(AssertUnwindSafe(|| {
        tree.remove_if(&key, |_| panic!("boom"))
    }));
    assert!(r.is_err());
    assert_eq!(tree.get(&key), Some(vec![1u8; 300]));
    // update_with writes in place: what the closure wrote before panicking stays.
    let r = catch_unwind(AssertUnwindSafe(|| {
        tree.update_with(&key, |v| {
            v[0] = 2;
            panic!("boom")
        })
    }));
    assert!(r.is_err());
    assert_eq!(tree.get(&key).unwrap()[0], 2);
    tree.insert(&key, b"works").unwrap();
    assert_eq!(tree.len(), 2_000);
    tree.check_invariants().unwrap();
}

// ---- the typed layer -------------------------------------------------------------------

#[test]
fn typed_counters_lose_nothing_and_values_may_grow() {
    let map: contree::TreeMap<String, u64> = contree::TreeMap::new();
    let names: contree::TreeMap<u32, String> = contree::TreeMap::new();
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (map, names) = (&map, &names);
            s.spawn(move || {
                for i in 0..5_000u32 {
                    let key = format!("counter-{}", (i + t) % 8);
                    map.fetch_update(key.as_str(), |n| Some(n.unwrap_or(0) + 1))
                        .unwrap();
                    names.get_or_insert_with(&(i % 50), String::new).unwrap();
                    names
                        .update_with(&(i % 50), |s| s.push(char::from(b'a' + t as u8)))
                        .unwrap()
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(map.iter().map(|(_, n)| n).sum::<u64>(), 20_000);
    assert_eq!(names.iter().map(|(_, s)| s.len()).sum::<usize>(), 20_000);
    assert_eq!(map.remove_if("counter-0", |n| *n == 2_500), Some(2_500));
    assert_eq!(
        map.compare_exchange("counter-1", Some(&2_500), None),
        Ok(Ok(()))
    );
    assert_eq!(map.len(), 6);
}

#[test]
fn typed_reentry_panics_instead_of_hanging() {
    let map = Arc::new(contree::TreeMap::<u32, u32>::new());
    map.insert(&1, &1).unwrap();
    let m = map.clone();
    let msg = watchdog(move || {
        m.update_with(&1, |v| *v = m.get(&1).unwrap()).unwrap();
    })
    .unwrap_err();
    assert!(msg.contains("Tree::update_with"), "{msg}");
    let m = map.clone();
    watchdog(move || assert_eq!(m.get_with(&1, |v| m.get(v)), Some(Some(1)))).unwrap();
}

/// A closure that holds the rightmost leaf's latch and appends: the append finger latches
/// the rightmost leaf without a descent, and must panic as a descent does, not wait for its
/// own thread.
#[test]
fn reentry_through_the_append_finger_panics() {
    let tree = filled(); // ascending inserts: the append finger is on
    let inner = tree.clone();
    let r = watchdog(move || {
        inner.update_with(&1999u32.to_be_bytes(), |_| {
            let _ = inner.insert(&5000u32.to_be_bytes(), b"x");
        });
    });
    let msg = r.expect_err("an append inside update_with did not panic");
    assert!(msg.contains("re-entrant"), "{msg}");
    assert_eq!(tree.get(&5000u32.to_be_bytes()), None);
    tree.insert(&5000u32.to_be_bytes(), b"after").unwrap();
    tree.check_invariants().unwrap();
}
