//! Ordered scans of every peer against an oracle at a size where trees have several levels
//! (the mixed script in `adapters.rs` stays small): 20,000 keys of each kind, then scans of
//! 1 to 120 entries from random ids, half of them present keys and half absent ones.

use std::collections::BTreeMap;

use contree_bench::adapters::{all_peers, Shape};
use contree_bench::generators::FastRng;
use contree_bench::keys::{fill_value, KeyBuf, KeyKind};

fn check_scans(kind: KeyKind) -> Vec<&'static str> {
    let shape = Shape {
        int_keys: kind == KeyKind::Int,
        value_size: 8,
        max_key_len: kind.max_len(),
        scans: true,
    };
    const N: u64 = 20_000;
    let mut oracle = BTreeMap::new();
    let mut value = [0u8; 8];
    for id in 0..N {
        fill_value(&mut value, id, 0);
        oracle.insert(
            KeyBuf::new(kind, id * 2).as_bytes().to_vec(),
            value.to_vec(),
        );
    }
    let mut ran = Vec::new();
    for peer in all_peers() {
        let Ok(index) = peer.build(&shape) else {
            continue;
        };
        for id in 0..N {
            fill_value(&mut value, id, 0);
            index.insert(KeyBuf::new(kind, id * 2).as_bytes(), &value);
        }
        let mut rng = FastRng::new(7);
        for _ in 0..400 {
            let start = KeyBuf::new(kind, rng.below(2 * N));
            let count = 1 + rng.below(120) as usize;
            let mut got = Vec::new();
            let n = index.scan(start.as_bytes(), count, &mut |k, v| {
                got.push((k.to_vec(), v.to_vec()))
            });
            let want: Vec<_> = oracle
                .range(start.as_bytes().to_vec()..)
                .take(count)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(n, got.len(), "{}", peer.name);
            assert!(
                got == want,
                "{} scans {} keys wrongly from {:?}: got {} entries, first {:?}",
                peer.name,
                kind.name(),
                String::from_utf8_lossy(start.as_bytes()),
                got.len(),
                got.first()
                    .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            );
        }
        ran.push(peer.name);
    }
    ran
}

#[test]
fn scans_agree_with_the_oracle_on_u64_keys() {
    let ran = check_scans(KeyKind::Int);
    assert!(ran.len() >= 10, "only {ran:?} ran");
}

#[test]
fn scans_agree_with_the_oracle_on_string_keys() {
    let ran = check_scans(KeyKind::Str);
    assert!(ran.len() >= 8, "only {ran:?} ran");
}

#[test]
fn scans_agree_with_the_oracle_on_long_keys() {
    let ran = check_scans(KeyKind::Long);
    assert!(ran.len() >= 8, "only {ran:?} ran");
}
