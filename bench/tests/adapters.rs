//! Every adapter, given the same operations, gives the same answers: a small deterministic
//! mixed run (inserts, updates, removes, lookups, scans) compared against std `BTreeMap`,
//! for both representations (u64 keys with 8-byte values, and variable-length bytes).

use std::collections::BTreeMap;

use contree_bench::adapters::{all_peers, Index, Shape};
use contree_bench::generators::FastRng;
use contree_bench::keys::{fill_value, KeyBuf, KeyKind};

/// One observable answer.
#[derive(Debug, PartialEq)]
enum Answer {
    Found(bool, Vec<u8>),
    Changed(bool),
    Scan(Vec<(Vec<u8>, Vec<u8>)>),
}

fn script(index: &dyn Index, kind: KeyKind, value_size: usize, scans: bool) -> Vec<Answer> {
    let mut rng = FastRng::new(99);
    let mut answers = Vec::new();
    let mut value = vec![0u8; value_size];
    let mut out = Vec::new();
    for id in 0..500u64 {
        fill_value(&mut value, id, 0);
        index.insert(KeyBuf::new(kind, id * 2).as_bytes(), &value);
    }
    for step in 0..3000u64 {
        let id = rng.below(1200);
        let key = KeyBuf::new(kind, id);
        match rng.below(6) {
            0 => {
                fill_value(&mut value, id, step);
                index.insert(key.as_bytes(), &value);
            }
            1 => {
                fill_value(&mut value, id, step + 7);
                answers.push(Answer::Changed(index.update(key.as_bytes(), &value)));
            }
            2 => answers.push(Answer::Changed(index.remove(key.as_bytes()))),
            3 if scans => {
                let count = rng.below(40) as usize;
                let mut seen = Vec::new();
                let n = index.scan(key.as_bytes(), count, &mut |k, v| {
                    seen.push((k.to_vec(), v.to_vec()))
                });
                assert_eq!(n, seen.len());
                answers.push(Answer::Scan(seen));
            }
            _ => {
                let found = index.get(key.as_bytes(), &mut out);
                answers.push(Answer::Found(
                    found,
                    if found { out.clone() } else { vec![] },
                ));
            }
        }
    }
    answers
}

/// The same script against a plain `BTreeMap`: the oracle.
struct Oracle(parking_lot::Mutex<BTreeMap<Vec<u8>, Vec<u8>>>);

impl Index for Oracle {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.0.lock().insert(key.to_vec(), value.to_vec());
    }
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match self.0.lock().get(key) {
            Some(v) => {
                out.extend_from_slice(v);
                true
            }
            None => false,
        }
    }
    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        match self.0.lock().get_mut(key) {
            Some(v) => {
                *v = value.to_vec();
                true
            }
            None => false,
        }
    }
    fn remove(&self, key: &[u8]) -> bool {
        self.0.lock().remove(key).is_some()
    }
    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        let map = self.0.lock();
        let mut n = 0;
        for (k, v) in map.range(start.to_vec()..).take(count) {
            visit(k, v);
            n += 1;
        }
        n
    }
    fn repr(&self) -> &'static str {
        "oracle"
    }
}

fn check_all(kind: KeyKind, value_size: usize, scans: bool) -> Vec<&'static str> {
    let shape = Shape {
        int_keys: kind == KeyKind::Int,
        value_size,
        max_key_len: kind.max_len(),
        scans,
    };
    let oracle = Oracle(parking_lot::Mutex::new(BTreeMap::new()));
    let expected = script(&oracle, kind, value_size, scans);
    let mut ran = Vec::new();
    for peer in all_peers() {
        let Ok(index) = peer.build(&shape) else {
            continue;
        };
        let got = script(index.as_ref(), kind, value_size, scans);
        assert_eq!(got.len(), expected.len());
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g, e, "{} differs from the oracle at answer {i}", peer.name);
        }
        ran.push(peer.name);
    }
    assert!(ran.len() >= 5, "only {ran:?} ran");
    ran
}

#[test]
fn adapters_agree_on_u64_keys() {
    let ran = check_all(KeyKind::Int, 8, true);
    for p in [
        "contree", "bbtree", "congee", "bf-tree", "masstree", "ferntree",
    ] {
        assert!(ran.contains(&p), "{p} did not run: {ran:?}");
    }
}

#[test]
fn adapters_agree_on_string_keys() {
    // masstree refuses scans over keys longer than 8 bytes (see its adapter).
    let ran = check_all(KeyKind::Str, 24, true);
    for p in ["contree", "bbtree", "bf-tree", "ferntree"] {
        assert!(ran.contains(&p), "{p} did not run: {ran:?}");
    }
    let ran = check_all(KeyKind::Str, 24, false);
    assert!(ran.contains(&"masstree"), "masstree did not run: {ran:?}");
}

#[test]
fn adapters_agree_on_long_keys() {
    let ran = check_all(KeyKind::Long, 8, true);
    for p in ["contree", "bbtree", "bf-tree", "ferntree"] {
        assert!(ran.contains(&p), "{p} did not run: {ran:?}");
    }
    let ran = check_all(KeyKind::Long, 8, false);
    assert!(ran.contains(&"masstree"), "masstree did not run: {ran:?}");
}

#[test]
fn masstree_refuses_scans_over_long_keys_only() {
    let masstree = all_peers()
        .into_iter()
        .find(|p| p.name == "masstree")
        .unwrap();
    let shape = |max_key_len, scans| Shape {
        int_keys: max_key_len == 8,
        value_size: 8,
        max_key_len,
        scans,
    };
    assert!(masstree.supports(&shape(8, true)).is_ok());
    assert!(masstree.supports(&shape(24, false)).is_ok());
    assert!(masstree.supports(&shape(24, true)).is_err());
}

#[test]
fn every_named_peer_is_present() {
    let names: Vec<&str> = all_peers().iter().map(|p| p.name).collect();
    for want in [
        "contree",
        "bbtree",
        "scc",
        "skiplist",
        "bplustree",
        "btreemap",
        "congee",
        "bf-tree",
        "masstree",
        "ferntree",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

#[test]
fn congee_refuses_what_it_cannot_store() {
    let congee = all_peers()
        .into_iter()
        .find(|p| p.name == "congee")
        .unwrap();
    let bytes = Shape {
        int_keys: false,
        value_size: 8,
        max_key_len: 24,
        scans: false,
    };
    assert!(congee.supports(&bytes).is_err());
    let wide = Shape {
        int_keys: true,
        value_size: 128,
        max_key_len: 8,
        scans: false,
    };
    assert!(congee.supports(&wide).is_err());
}

#[test]
fn contree_reports_its_stats() {
    let contree = all_peers()
        .into_iter()
        .find(|p| p.name == "contree")
        .unwrap();
    let index = contree
        .build(&Shape {
            int_keys: true,
            value_size: 8,
            max_key_len: 8,
            scans: false,
        })
        .unwrap();
    index.insert(b"12345678", b"abcdefgh");
    let stats = index.stats().expect("contree has stats");
    assert!(stats.get("height").is_some(), "{stats}");
}
