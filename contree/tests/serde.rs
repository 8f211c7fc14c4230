//! The `serde` feature: `TreeMap` serializes as a map in key order and deserializes from one.
//! Runs only with `--features serde`.

use std::collections::BTreeMap;

use contree::{Config, TreeMap};
use proptest::prelude::*;

#[test]
fn json_is_a_map_in_key_order() {
    let map: TreeMap<String, u32> = TreeMap::new();
    for (k, v) in [("b", 2), ("a", 1), ("c", 3)] {
        map.insert(k, &v).unwrap();
    }
    let json = serde_json::to_string(&map).unwrap();
    assert_eq!(json, r#"{"a":1,"b":2,"c":3}"#);
    let back: TreeMap<String, u32> = serde_json::from_str(&json).unwrap();
    assert!(back.iter().eq(map.iter()));

    let empty: TreeMap<String, u32> = TreeMap::new();
    assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
    let back: TreeMap<String, u32> = serde_json::from_str("{}").unwrap();
    assert!(back.is_empty());
}

#[test]
fn integer_keys_and_compound_values() {
    // JSON writes integer keys as strings; they come back as integers, in numeric order.
    let map: TreeMap<i64, (String, Option<Vec<u8>>)> = TreeMap::new();
    map.insert(&-5, &("minus".to_string(), None)).unwrap();
    map.insert(&10, &("ten".to_string(), Some(vec![1, 0])))
        .unwrap();
    map.insert(&2, &("two".to_string(), Some(vec![]))).unwrap();
    let json = serde_json::to_string(&map).unwrap();
    assert_eq!(
        json,
        r#"{"-5":["minus",null],"2":["two",[]],"10":["ten",[1,0]]}"#
    );
    let back: TreeMap<i64, (String, Option<Vec<u8>>)> = serde_json::from_str(&json).unwrap();
    assert!(back.iter().eq(map.iter()));
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    let map: TreeMap<String, u8> = serde_json::from_str(r#"{"k":1,"j":2,"k":3}"#).unwrap();
    let entries: Vec<_> = map.iter().collect();
    assert_eq!(entries, [("j".to_string(), 2), ("k".to_string(), 3)]);
}

#[test]
fn refused_entries_and_wrong_shapes_are_errors() {
    let max_key = Config::default().max_key_len();
    let json = format!(r#"{{"{}":1}}"#, "k".repeat(max_key + 1));
    let err = serde_json::from_str::<TreeMap<String, u8>>(&json).unwrap_err();
    assert!(err.to_string().contains("larger than the maximum"), "{err}");

    let err = serde_json::from_str::<TreeMap<String, u8>>("[1, 2]").unwrap_err();
    assert!(err.to_string().contains("a map"), "{err}");
    assert!(serde_json::from_str::<TreeMap<String, u8>>(r#"{"k":300}"#).is_err());
}

#[test]
fn same_json_as_btreemap() {
    let map: TreeMap<(u8, String), (Option<char>, [u16; 2])> = TreeMap::new();
    let mut oracle = BTreeMap::new();
    for (i, name) in ["z", "a\0", "", "é"].into_iter().enumerate() {
        let key = (i as u8 % 2, name.to_string());
        let value = (name.chars().next(), [i as u16; 2]);
        map.insert(&key, &value).unwrap();
        oracle.insert(key, value);
    }
    // Tuple keys are not JSON map keys; serde_json refuses them for both maps alike.
    assert!(serde_json::to_string(&map).is_err());
    assert!(serde_json::to_string(&oracle).is_err());
    // As a value they are fine: compare through a wrapper sequence.
    let pairs: Vec<_> = map.iter().collect();
    let expected: Vec<_> = oracle.into_iter().collect();
    assert_eq!(
        serde_json::to_string(&pairs).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
}

proptest! {
    #[test]
    fn round_trip_matches_btreemap(entries in prop::collection::vec((any::<String>(), any::<u64>()), 0..40)) {
        let map: TreeMap<String, u64> = TreeMap::new();
        let mut oracle = BTreeMap::new();
        for (k, v) in &entries {
            map.insert(k.as_str(), v).unwrap();
            oracle.insert(k.clone(), *v);
        }
        let json = serde_json::to_string(&map).unwrap();
        prop_assert_eq!(&json, &serde_json::to_string(&oracle).unwrap());
        let back: TreeMap<String, u64> = serde_json::from_str(&json).unwrap();
        let back_entries: Vec<_> = back.iter().collect();
        let expected: Vec<_> = oracle.into_iter().collect();
        prop_assert_eq!(back_entries, expected);
    }
}
