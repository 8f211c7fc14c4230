//! The typed layer: codec round trips and order preservation (property tests), and
//! `TreeMap` checked against a `std::collections::BTreeMap` oracle.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::ops::Bound;
use std::time::Duration;

use contree::{Config, Error, KeyCodec, KeyEncode, TreeMap, ValueCodec, ValueEncode};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Strategies

/// Characters that stress the string encoding: NUL, bytes next to the escape values, and
/// multi-byte UTF-8.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        Just('\0'),
        Just('\u{1}'),
        Just('a'),
        Just('b'),
        Just('\u{7f}'),
        Just('é'),
        Just('\u{10FFFF}'),
        any::<char>(),
    ]
}

fn tricky_string() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..6).prop_map(|chars| chars.into_iter().collect())
}

fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        Just(0u8),
        Just(1u8),
        Just(0xFEu8),
        Just(0xFFu8),
        any::<u8>()
    ];
    prop::collection::vec(byte, 0..6)
}

/// Integers with their extremes and the values around zero drawn often.
macro_rules! int_strategy {
    ($name:ident, $t:ty) => {
        fn $name() -> impl Strategy<Value = $t> {
            prop_oneof![
                Just(<$t>::MIN),
                Just(<$t>::MAX),
                Just(0 as $t),
                Just(1 as $t),
                Just(<$t>::MIN.wrapping_add(1)),
                Just(<$t>::MAX.wrapping_sub(1)),
                Just((0 as $t).wrapping_sub(1)),
                any::<$t>(),
            ]
        }
    };
}

int_strategy!(s_u8, u8);
int_strategy!(s_u16, u16);
int_strategy!(s_u32, u32);
int_strategy!(s_u64, u64);
int_strategy!(s_u128, u128);
int_strategy!(s_usize, usize);
int_strategy!(s_i8, i8);
int_strategy!(s_i16, i16);
int_strategy!(s_i32, i32);
int_strategy!(s_i64, i64);
int_strategy!(s_i128, i128);
int_strategy!(s_isize, isize);

// ---------------------------------------------------------------------------------------------
// Key codec properties

fn inner_encoding<K: KeyEncode + ?Sized>(key: &K) -> Vec<u8> {
    let mut out = Vec::new();
    key.encode_key(&mut out);
    out
}

/// Checks every key-codec property on a pair of values:
/// * both encodings (whole key and tuple element) order like the values,
/// * both round-trip, and decoding a tuple element leaves what follows it,
/// * the tuple-element encoding is prefix-free,
/// * a stored key re-encodes to the same bytes.
fn check_key_pair<K: KeyCodec + Ord + Debug + Clone>(a: &K, b: &K) -> Result<(), TestCaseError> {
    let (whole_a, whole_b) = (a.to_key_bytes(), b.to_key_bytes());
    prop_assert_eq!(
        a.cmp(b),
        whole_a.cmp(&whole_b),
        "whole-key order of {:?} and {:?}",
        a,
        b
    );
    prop_assert_eq!(K::from_key_bytes(&whole_a), Some(a.clone()));

    let (inner_a, inner_b) = (inner_encoding(a), inner_encoding(b));
    prop_assert_eq!(
        a.cmp(b),
        inner_a.cmp(&inner_b),
        "element order of {:?} and {:?}",
        a,
        b
    );
    if a != b {
        prop_assert!(!inner_a.starts_with(&inner_b) && !inner_b.starts_with(&inner_a));
    }
    for (value, inner) in [(a, &inner_a), (b, &inner_b)] {
        let mut followed = inner.clone();
        followed.extend_from_slice(&[0x00, 0xAB, 0xFF]);
        let mut input = followed.as_slice();
        prop_assert_eq!(K::decode_key(&mut input), Some(value.clone()));
        prop_assert_eq!(input, &[0x00, 0xAB, 0xFF][..]);
    }
    Ok(())
}

/// Arbitrary bytes never make a decoder panic, and whatever decodes is canonical: it encodes
/// back to the same bytes.
fn check_key_decode_total<K: KeyCodec + Debug>(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Some(key) = K::from_key_bytes(bytes) {
        prop_assert_eq!(key.to_key_bytes(), bytes, "{:?}", key);
    }
    let mut input = bytes;
    if let Some(key) = K::decode_key(&mut input) {
        let consumed = &bytes[..bytes.len() - input.len()];
        prop_assert_eq!(inner_encoding(&key), consumed, "{:?}", key);
    }
    Ok(())
}

macro_rules! key_props {
    ($($test:ident: $t:ty = $strategy:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $test(a in $strategy, b in $strategy, noise in prop::collection::vec(any::<u8>(), 0..24)) {
                    check_key_pair::<$t>(&a, &b)?;
                    check_key_pair::<$t>(&a, &a)?;
                    check_key_decode_total::<$t>(&noise)?;
                    check_key_decode_total::<$t>(&a.to_key_bytes()[..a.to_key_bytes().len() / 2])?;
                }
            )*
        }
    };
}

key_props! {
    key_u8: u8 = s_u8();
    key_u16: u16 = s_u16();
    key_u32: u32 = s_u32();
    key_u64: u64 = s_u64();
    key_u128: u128 = s_u128();
    key_usize: usize = s_usize();
    key_i8: i8 = s_i8();
    key_i16: i16 = s_i16();
    key_i32: i32 = s_i32();
    key_i64: i64 = s_i64();
    key_i128: i128 = s_i128();
    key_isize: isize = s_isize();
    key_bool: bool = any::<bool>();
    key_array: [u8; 3] = any::<[u8; 3]>();
    key_string: String = tricky_string();
    key_any_string: String = any::<String>();
    key_bytes: Vec<u8> = tricky_bytes();
    key_string_u32: (String, u32) = (tricky_string(), s_u32());
    key_u32_string: (u32, String) = (s_u32(), tricky_string());
    key_bytes_string: (Vec<u8>, String) = (tricky_bytes(), tricky_string());
    key_i64_string_bytes: (i64, String, Vec<u8>) = (s_i64(), tricky_string(), tricky_bytes());
    key_four: (String, String, i8, u64) = (tricky_string(), tricky_string(), s_i8(), s_u64());
    key_nested: ((String, i16), Vec<u8>) = ((tricky_string(), s_i16()), tricky_bytes());
    key_bool_usize: (bool, isize) = (any::<bool>(), s_isize());
    key_char: char = tricky_char();
    key_char_string: (char, String) = (tricky_char(), tricky_string());
    key_option_u32: Option<u32> = prop::option::of(s_u32());
    key_option_string: Option<String> = prop::option::of(tricky_string());
    key_option_option: Option<Option<i8>> = prop::option::of(prop::option::of(s_i8()));
    key_options_in_tuple: (Option<String>, Option<Vec<u8>>, u8) =
        (prop::option::of(tricky_string()), prop::option::of(tricky_bytes()), s_u8());
    key_array_u32: [u32; 4] = prop::array::uniform4(s_u32());
    key_array_i16: [i16; 3] = prop::array::uniform3(s_i16());
    key_array_u8: [u8; 5] = prop::array::uniform5(prop_oneof![Just(0u8), Just(0xFF), any::<u8>()]);
    key_array_string: [String; 3] = prop::array::uniform3(tricky_string());
    key_array_option_char: [Option<char>; 2] = prop::array::uniform2(prop::option::of(tricky_char()));
    key_array_empty: [u64; 0] = Just([]);
    key_array_in_tuple: ([Vec<u8>; 2], String) = (prop::array::uniform2(tricky_bytes()), tricky_string());
    key_five: (u8, String, i16, Vec<u8>, char) =
        (s_u8(), tricky_string(), s_i16(), tricky_bytes(), tricky_char());
    key_six: (bool, String, u32, Option<String>, i8, Vec<u8>) = (
        any::<bool>(), tricky_string(), s_u32(), prop::option::of(tricky_string()), s_i8(), tricky_bytes()
    );
    key_seven: (String, String, String, String, String, String, String) = (
        tricky_string(), tricky_string(), tricky_string(), tricky_string(), tricky_string(),
        tricky_string(), tricky_string()
    );
    key_eight: (u8, String, i16, Vec<u8>, char, Option<u8>, [u8; 2], String) = (
        0u8..2, tricky_string(), -1i16..1, tricky_bytes(), tricky_char(),
        prop::option::of(0u8..2), prop::array::uniform2(0u8..2), tricky_string()
    );
}

proptest! {
    /// A `char` encodes as the one-character string, and an array of bytes as the bytes.
    #[test]
    fn char_and_byte_array_layouts(c in any::<char>(), bytes in any::<[u8; 6]>()) {
        prop_assert_eq!(c.to_key_bytes(), c.to_string().to_key_bytes());
        prop_assert_eq!(c.to_value_bytes(), c.to_string().to_value_bytes());
        prop_assert_eq!(bytes.to_key_bytes(), bytes.to_vec());
        prop_assert_eq!(inner_encoding(&bytes), bytes.to_vec());
        prop_assert_eq!(bytes.to_value_bytes(), bytes.to_vec());
    }

    /// Arrays encode as the tuples of their elements.
    #[test]
    fn arrays_encode_as_tuples(a in prop::array::uniform3(tricky_string())) {
        let [x, y, z] = a.clone();
        let tuple = (x, y, z);
        prop_assert_eq!(a.to_key_bytes(), tuple.to_key_bytes());
        prop_assert_eq!(inner_encoding(&a), inner_encoding(&tuple));
        prop_assert_eq!(a.to_value_bytes(), tuple.to_value_bytes());
    }
}

#[test]
fn string_prefixes_and_nul_bytes_order() {
    let words = [
        "", "\0", "\0\0", "\0a", "a", "a\0", "a\0\0", "a\0b", "a\u{1}", "ab", "b",
    ];
    for pair in words.windows(2) {
        assert!(pair[0] < pair[1]);
        for suffix in [0u32, u32::MAX] {
            let lo = (pair[0].to_string(), u32::MAX - suffix).to_key_bytes();
            let hi = (pair[1].to_string(), suffix).to_key_bytes();
            assert!(lo < hi, "{:?} < {:?}", pair[0], pair[1]);
        }
        assert!(pair[0].to_key_bytes() < pair[1].to_key_bytes());
    }
}

#[test]
fn signed_extremes_order() {
    let values = [
        i64::MIN,
        i64::MIN + 1,
        -256,
        -1,
        0,
        1,
        255,
        i64::MAX - 1,
        i64::MAX,
    ];
    for pair in values.windows(2) {
        assert!(pair[0].to_key_bytes() < pair[1].to_key_bytes(), "{pair:?}");
    }
    assert_eq!(i64::MIN.to_key_bytes(), [0; 8]);
    assert_eq!(i64::MAX.to_key_bytes(), [0xFF; 8]);
    assert_eq!(
        i128::from_key_bytes(&i128::MIN.to_key_bytes()),
        Some(i128::MIN)
    );
}

// ---------------------------------------------------------------------------------------------
// Value codec properties

fn check_value<V: ValueCodec + PartialEq + Debug + Clone>(value: &V) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        V::from_value_bytes(&value.to_value_bytes()),
        Some(value.clone())
    );
    let mut followed = Vec::new();
    value.encode_value(&mut followed);
    followed.extend_from_slice(&[7, 0, 7]);
    let mut input = followed.as_slice();
    prop_assert_eq!(V::decode_value(&mut input), Some(value.clone()));
    prop_assert_eq!(input, &[7, 0, 7][..]);
    Ok(())
}

macro_rules! value_props {
    ($($test:ident: $t:ty = $strategy:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $test(v in $strategy, noise in prop::collection::vec(any::<u8>(), 0..24)) {
                    check_value::<$t>(&v)?;
                    // Arbitrary bytes decode to something or to None, never a panic.
                    let _ = <$t>::from_value_bytes(&noise);
                    let _ = <$t>::decode_value(&mut noise.as_slice());
                }
            )*
        }
    };
}

value_props! {
    value_u8: u8 = s_u8();
    value_u16: u16 = s_u16();
    value_u32: u32 = s_u32();
    value_u64: u64 = s_u64();
    value_u128: u128 = s_u128();
    value_usize: usize = s_usize();
    value_i8: i8 = s_i8();
    value_i16: i16 = s_i16();
    value_i32: i32 = s_i32();
    value_i64: i64 = s_i64();
    value_i128: i128 = s_i128();
    value_isize: isize = s_isize();
    value_bool: bool = any::<bool>();
    value_unit: () = Just(());
    value_array: [u8; 5] = any::<[u8; 5]>();
    value_string: String = any::<String>();
    value_bytes: Vec<u8> = prop::collection::vec(any::<u8>(), 0..300);
    value_pair: (String, u32) = (any::<String>(), s_u32());
    value_triple: (Vec<u8>, String, i64) = (prop::collection::vec(any::<u8>(), 0..200), tricky_string(), s_i64());
    value_four: (String, Vec<u8>, String, u8) = (tricky_string(), tricky_bytes(), tricky_string(), s_u8());
    value_char: char = any::<char>();
    value_option_u64: Option<u64> = prop::option::of(s_u64());
    value_option_string: Option<String> = prop::option::of(any::<String>());
    value_options_in_tuple: (Option<Vec<u8>>, Option<String>, Option<()>) =
        (prop::option::of(tricky_bytes()), prop::option::of(tricky_string()), prop::option::of(Just(())));
    value_array_u64: [u64; 4] = prop::array::uniform4(s_u64());
    value_array_string: [String; 3] = prop::array::uniform3(tricky_string());
    value_array_option: [Option<Vec<u8>>; 2] = prop::array::uniform2(prop::option::of(tricky_bytes()));
    value_five: (String, u8, Vec<u8>, char, String) =
        (tricky_string(), s_u8(), tricky_bytes(), any::<char>(), tricky_string());
    value_eight: (u8, String, i16, Vec<u8>, char, Option<u8>, [u8; 2], String) = (
        s_u8(), tricky_string(), s_i16(), tricky_bytes(), any::<char>(),
        prop::option::of(s_u8()), any::<[u8; 2]>(), tricky_string()
    );
}

/// Borrowed forms of a value encode to the same bytes as the owned value, whole and inside a
/// tuple.
fn check_borrowed_value<V, W>(owned: &V, borrowed: &W) -> Result<(), TestCaseError>
where
    V: ValueEncode + Debug,
    W: ValueEncode + ?Sized,
{
    prop_assert_eq!(
        owned.to_value_bytes(),
        borrowed.to_value_bytes(),
        "{:?}",
        owned
    );
    let (mut a, mut b) = (Vec::new(), Vec::new());
    owned.encode_value(&mut a);
    borrowed.encode_value(&mut b);
    prop_assert_eq!(a, b);
    Ok(())
}

proptest! {
    #[test]
    fn borrowed_values_encode_as_owned(s in any::<String>(), bytes in tricky_bytes()) {
        check_borrowed_value(&s, s.as_str())?;
        check_borrowed_value(&bytes, bytes.as_slice())?;
        check_borrowed_value(&(s.clone(), 1u8), &(s.as_str(), 1u8))?;
        check_borrowed_value(&(s.clone(), 1u8), &(&s, &1u8))?;
    }
}

// ---------------------------------------------------------------------------------------------
// TreeMap against a BTreeMap oracle

#[derive(Debug, Clone)]
enum Op<K> {
    Insert(K, u64),
    Remove(K),
    Get(K),
    Range(Bound<K>, Bound<K>, Vec<bool>),
}

fn bound<K: Debug + Clone>(
    key: impl Strategy<Value = K> + Clone,
) -> impl Strategy<Value = Bound<K>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        2 => key.clone().prop_map(Bound::Included),
        2 => key.prop_map(Bound::Excluded),
    ]
}

fn ops<K: Debug + Clone>(
    key: impl Strategy<Value = K> + Clone,
) -> impl Strategy<Value = Vec<Op<K>>> {
    let op = prop_oneof![
        6 => (key.clone(), any::<u64>()).prop_map(|(k, v)| Op::Insert(k, v)),
        2 => key.clone().prop_map(Op::Remove),
        2 => key.clone().prop_map(Op::Get),
        1 => (bound(key.clone()), bound(key), prop::collection::vec(any::<bool>(), 0..40))
            .prop_map(|(lo, hi, dirs)| Op::Range(lo, hi, dirs)),
    ];
    prop::collection::vec(op, 1..200)
}

/// Walks a typed range from both ends as `directions` says (`true`: from the back) and
/// compares every step with the oracle's entries in the same bounds.
fn check_range<K>(
    map: &TreeMap<K, u64>,
    oracle: &BTreeMap<K, u64>,
    bounds: (Bound<K>, Bound<K>),
    directions: &[bool],
) -> Result<(), TestCaseError>
where
    K: KeyCodec + Ord + Clone + Debug,
{
    use std::ops::RangeBounds;
    let mut expected: VecDeque<(K, u64)> = oracle
        .iter()
        .filter(|(k, _)| bounds.contains(*k))
        .map(|(k, v)| (k.clone(), *v))
        .collect();

    let forward: Vec<_> = map.range(bounds.clone()).collect();
    prop_assert_eq!(&forward, &Vec::from(expected.clone()));
    let mut backward: Vec<_> = map.range(bounds.clone()).rev().collect();
    backward.reverse();
    prop_assert_eq!(&backward, &Vec::from(expected.clone()));

    let mut iter = map.range(bounds);
    for &from_back in directions
        .iter()
        .chain(std::iter::repeat_n(&false, expected.len() + 1))
    {
        if from_back {
            prop_assert_eq!(iter.next_back(), expected.pop_back());
        } else {
            prop_assert_eq!(iter.next(), expected.pop_front());
        }
    }
    prop_assert_eq!(iter.next(), None);
    prop_assert_eq!(iter.next_back(), None);
    Ok(())
}

fn run_oracle<K>(ops: Vec<Op<K>>) -> Result<(), TestCaseError>
where
    K: KeyCodec + Ord + Clone + Debug,
{
    // 512-byte pages: a few dozen entries make a tree of several levels.
    let map: TreeMap<K, u64> = TreeMap::with_config(small_pages()).unwrap();
    let mut oracle = BTreeMap::new();
    let mut height = 1;
    for op in ops {
        match op {
            Op::Insert(k, v) => {
                prop_assert_eq!(map.insert(&k, &v), Ok(oracle.insert(k, v)));
            }
            Op::Remove(k) => {
                prop_assert_eq!(map.remove(&k), oracle.remove(&k));
                prop_assert!(!map.contains_key(&k));
            }
            Op::Get(k) => {
                prop_assert_eq!(map.get(&k), oracle.get(&k).copied());
                prop_assert_eq!(map.contains_key(&k), oracle.contains_key(&k));
            }
            Op::Range(lo, hi, directions) => check_range(&map, &oracle, (lo, hi), &directions)?,
        }
        prop_assert_eq!(map.len(), oracle.len());
        prop_assert_eq!(map.is_empty(), oracle.is_empty());
        height = height.max(map.stats().height);
    }
    map.as_tree()
        .check_invariants()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    // Not a tree of one leaf whenever the entries overflow one (the audit of issue 17
    // found these cases never left height 1 at 4 KiB pages).
    if oracle.len() > 40 {
        prop_assert!(height > 1, "{} entries in one leaf", oracle.len());
    }
    let all: Vec<_> = map.iter().collect();
    let expected: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    prop_assert_eq!(&all, &expected);
    prop_assert_eq!(
        map.first(),
        oracle.first_key_value().map(|(k, v)| (k.clone(), *v))
    );
    prop_assert_eq!(
        map.last(),
        oracle.last_key_value().map(|(k, v)| (k.clone(), *v))
    );
    check_range(
        &map,
        &oracle,
        (Bound::Unbounded, Bound::Unbounded),
        &[true, false, true],
    )?;
    Ok(())
}

/// A configuration of 512-byte pages (the tests build with `small-pages`).
fn small_pages() -> Config {
    Config {
        page_size: 512,
        ..Config::default()
    }
}

/// Short strings over a tiny alphabet, so that keys collide and share prefixes.
fn small_string() -> impl Strategy<Value = String> + Clone {
    prop::collection::vec(prop_oneof![Just('\0'), Just('a'), Just('b')], 0..4)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn map_i32_matches_btreemap(ops in ops(prop_oneof![-40i32..40, any::<i32>(), Just(i32::MIN), Just(i32::MAX)])) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_string_matches_btreemap(ops in ops(small_string())) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_tuple_matches_btreemap(ops in ops((small_string(), -3i8..3))) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_option_matches_btreemap(ops in ops((prop::option::of(small_string()), prop::option::of(-1i8..2)))) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_array_matches_btreemap(ops in ops(prop::array::uniform2(prop_oneof![Just('\0'), Just('a'), Just('é')]))) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_five_matches_btreemap(ops in ops((0u8..2, small_string(), any::<bool>(), small_string(), -1i64..1))) {
        run_oracle(ops)?;
    }

    #[test]
    fn map_triple_matches_btreemap(ops in ops((0u8..3, small_string(), prop::collection::vec(0u8..2, 0..3)))) {
        run_oracle(ops)?;
    }
}

// ---------------------------------------------------------------------------------------------
// TreeMap behaviour

#[test]
fn large_map_in_order_both_ways() {
    let map: TreeMap<(String, u32), u64> = TreeMap::new();
    let mut oracle = BTreeMap::new();
    for i in 0..20_000u64 {
        let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let key = (format!("user{:x}", x % 977), (x >> 20) as u32 % 50);
        assert_eq!(map.insert(&key, &i).unwrap(), oracle.insert(key, i));
    }
    for i in 0..5_000u64 {
        let key = (format!("user{:x}", i % 977), i as u32 % 50);
        assert_eq!(map.remove(&key), oracle.remove(&key));
    }
    assert_eq!(map.len(), oracle.len());
    assert!(map.iter().eq(oracle.clone().into_iter()));
    assert!(map.iter().rev().eq(oracle.clone().into_iter().rev()));
    let lo = ("user1".to_string(), 10);
    let hi = ("user2".to_string(), 0);
    assert!(map
        .range(lo.clone()..hi.clone())
        .rev()
        .eq(oracle.range(lo..hi).rev().map(|(k, v)| (k.clone(), *v))));
    assert_eq!(map.stats().len, oracle.len());
}

#[test]
fn nul_bytes_and_prefixes_iterate_in_order() {
    let map: TreeMap<(String, u32), u32> = TreeMap::new();
    let names = ["ab", "a\0", "a", "", "a\0\0", "\0"];
    for (i, name) in names.iter().enumerate() {
        map.insert(&(name.to_string(), 1), &(i as u32)).unwrap();
        map.insert(&(name.to_string(), 0), &(i as u32)).unwrap();
    }
    let keys: Vec<(String, u32)> = map.iter().map(|(k, _)| k).collect();
    let mut expected: Vec<(String, u32)> = names
        .iter()
        .flat_map(|n| [(n.to_string(), 0), (n.to_string(), 1)])
        .collect();
    expected.sort();
    assert_eq!(keys, expected);

    let strings: TreeMap<String, ()> = TreeMap::new();
    for name in names {
        strings.insert(name, &()).unwrap();
    }
    let keys: Vec<String> = strings.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, ["", "\0", "a", "a\0", "a\0\0", "ab"]);
    assert_eq!(strings.first(), Some((String::new(), ())));
    assert_eq!(strings.last(), Some(("ab".to_string(), ())));
}

#[test]
fn signed_keys_iterate_in_order() {
    let map: TreeMap<i64, i64> = TreeMap::new();
    for k in [i64::MAX, 0, -1, i64::MIN, 1, i64::MIN + 1] {
        map.insert(&k, &k).unwrap();
    }
    let keys: Vec<i64> = map.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX]);
    let keys: Vec<i64> = map.range(-1..).rev().map(|(k, _)| k).collect();
    assert_eq!(keys, [i64::MAX, 1, 0, -1]);
    assert_eq!(map.first(), Some((i64::MIN, i64::MIN)));
    assert_eq!(map.last(), Some((i64::MAX, i64::MAX)));
}

#[test]
fn borrowed_lookups() {
    let strings: TreeMap<String, u8> = TreeMap::new();
    strings.insert("k", &1).unwrap();
    assert_eq!(strings.get("k"), Some(1));
    assert_eq!(strings.get(&"k".to_string()), Some(1));
    assert!(strings.contains_key("k"));
    assert_eq!(strings.remove("k"), Some(1));
    assert_eq!(strings.get("k"), None);

    let bytes: TreeMap<Vec<u8>, u8> = TreeMap::new();
    bytes.insert(&b"\0x"[..], &2).unwrap();
    assert_eq!(bytes.get(&b"\0x"[..]), Some(2));
    assert_eq!(bytes.get(&vec![0, b'x']), Some(2));
}

#[test]
fn borrowed_inserts() {
    let strings: TreeMap<String, String> = TreeMap::new();
    assert_eq!(strings.insert("k", "v"), Ok(None));
    assert_eq!(
        strings.insert("k", &"w".to_string()),
        Ok(Some("v".to_string()))
    );
    assert_eq!(
        strings.insert(&"k".to_string(), "x\0y"),
        Ok(Some("w".to_string()))
    );
    assert_eq!(strings.get("k"), Some("x\0y".to_string()));
    assert_eq!(strings.as_tree().get(b"k"), Some(b"x\0y".to_vec()));

    let bytes: TreeMap<Vec<u8>, Vec<u8>> = TreeMap::new();
    assert_eq!(bytes.insert(&b"k"[..], &[1u8, 2][..]), Ok(None));
    assert_eq!(bytes.insert(&b"k"[..], &vec![3]), Ok(Some(vec![1, 2])));
    assert_eq!(bytes.get(&b"k"[..]), Some(vec![3]));

    let numbers: TreeMap<u64, u64> = TreeMap::new();
    assert_eq!(numbers.insert(&1u64, &2u64), Ok(None));
    // Literals are inferred as the map's types: the stored value is 8 bytes.
    assert_eq!(numbers.insert(&1, &3), Ok(Some(2)));
    assert_eq!(
        numbers.as_tree().get(&1u64.to_key_bytes()),
        Some(3u64.to_le_bytes().to_vec())
    );

    let tuples: TreeMap<(String, u8), (String, Option<u32>)> = TreeMap::new();
    tuples
        .insert(&("a".to_string(), 1), &("v".to_string(), Some(7)))
        .unwrap();
    assert_eq!(
        tuples.get(&("a".to_string(), 1)),
        Some(("v".to_string(), Some(7)))
    );

    assert_eq!(strings.insert_if_absent("k", "no"), Ok(false));
    assert_eq!(strings.insert_if_absent("j", "yes"), Ok(true));
    assert_eq!(strings.get("j"), Some("yes".to_string()));
    assert_eq!(bytes.insert_if_absent(&b"j"[..], &[9u8][..]), Ok(true));
    assert_eq!(numbers.insert_if_absent(&2, &4), Ok(true));
    assert_eq!(numbers.get(&2), Some(4));

    let set: TreeMap<char, ()> = TreeMap::new();
    set.insert(&'b', &()).unwrap();
    set.insert(&'a', &()).unwrap();
    assert_eq!(set.first(), Some(('a', ())));
}

#[test]
fn borrowed_and_owned_range_bounds() {
    use std::ops::Bound::{Excluded, Included, Unbounded};

    let strings: TreeMap<String, u32> = TreeMap::new();
    for (i, k) in ["a", "a\0", "ab", "b", "ba", "c"].into_iter().enumerate() {
        strings.insert(k, &(i as u32)).unwrap();
    }
    let keys =
        |it: contree::TypedRange<'_, String, u32>| -> Vec<String> { it.map(|(k, _)| k).collect() };
    assert_eq!(keys(strings.range("a".."b")), ["a", "a\0", "ab"]);
    assert_eq!(keys(strings.range("a\0"..="b")), ["a\0", "ab", "b"]);
    assert_eq!(keys(strings.range("b"..)), ["b", "ba", "c"]);
    assert_eq!(keys(strings.range(.."a\0")), ["a"]);
    assert_eq!(keys(strings.range(..="a\0")), ["a", "a\0"]);
    assert_eq!(strings.range(..).count(), 6);
    assert_eq!(
        keys(strings.range((Excluded("a"), Included("ab")))),
        ["a\0", "ab"]
    );
    assert_eq!(keys(strings.range((Unbounded, Excluded("a\0")))), ["a"]);
    assert_eq!(keys(strings.range("b".to_string()..)), ["b", "ba", "c"]);
    let (lo, hi) = ("a".to_string(), "b".to_string());
    assert_eq!(keys(strings.range(&lo..&hi)), ["a", "a\0", "ab"]);
    assert_eq!(keys(strings.range(lo..hi)), ["a", "a\0", "ab"]);
    assert_eq!(strings.range("c".."a").rev().count(), 0);

    let bytes: TreeMap<Vec<u8>, ()> = TreeMap::new();
    for k in [&b"\0"[..], b"\0\0", b"a", b"\xFF"] {
        bytes.insert(k, &()).unwrap();
    }
    assert_eq!(bytes.range(&b"\0"[..]..&b"a"[..]).count(), 2);
    assert_eq!(bytes.range(&b"\0\0"[..]..).count(), 3);
    assert_eq!(bytes.range(..=&b"a"[..]).count(), 3);
    assert_eq!(bytes.range(vec![0u8, 0]..vec![0xFF]).count(), 2);
    assert_eq!(bytes.range(..).count(), 4);

    let numbers: TreeMap<u64, ()> = TreeMap::new();
    for k in 0..10u64 {
        numbers.insert(&k, &()).unwrap();
    }
    assert_eq!(numbers.range(1u64..5).count(), 4);
    assert_eq!(numbers.range(1..5).count(), 4);
    assert_eq!(numbers.range(&1..=&5).count(), 5);
    assert_eq!(numbers.range(..).count(), 10);
    assert_eq!(numbers.range(..3).count(), 3);
    assert_eq!(numbers.range((Excluded(8), Unbounded)).count(), 1);
    assert_eq!(numbers.range((Excluded(&8), Unbounded)).count(), 1);

    let tuples: TreeMap<(String, u32), ()> = TreeMap::new();
    for (name, n) in [("bob", 1), ("bob", 2), ("carol", 0)] {
        tuples.insert(&(name.to_string(), n), &()).unwrap();
    }
    let bob = ("bob".to_string(), 0)..=("bob".to_string(), u32::MAX);
    assert_eq!(tuples.range(bob).count(), 2);
}

proptest! {
    /// `&str` bounds give the same ranges as `String` bounds and as the oracle.
    #[test]
    fn str_bounds_match_string_bounds(
        keys in prop::collection::vec(small_string(), 0..30),
        lo in bound(small_string()),
        hi in bound(small_string()),
    ) {
        use std::ops::RangeBounds;
        let map: TreeMap<String, ()> = TreeMap::new();
        let mut oracle = BTreeMap::new();
        for k in &keys {
            map.insert(k.as_str(), &()).unwrap();
            oracle.insert(k.clone(), ());
        }
        let borrowed = (lo.as_ref().map(String::as_str), hi.as_ref().map(String::as_str));
        let via_str: Vec<String> = map.range(borrowed).map(|(k, _)| k).collect();
        let via_string: Vec<String> = map.range((lo.clone(), hi.clone())).map(|(k, _)| k).collect();
        let expected: Vec<String> = oracle.keys().filter(|k| (lo.clone(), hi.clone()).contains(*k)).cloned().collect();
        prop_assert_eq!(&via_str, &expected);
        prop_assert_eq!(&via_string, &expected);
    }
}

#[test]
#[allow(clippy::reversed_empty_ranges)] // on purpose: they must be empty, not a panic
fn inverted_and_empty_ranges_are_empty() {
    let map: TreeMap<u32, u32> = TreeMap::new();
    for k in 0..100 {
        map.insert(&k, &k).unwrap();
    }
    assert_eq!(map.range(50..10).count(), 0);
    assert_eq!(map.range(50..50).count(), 0);
    assert_eq!(map.range(50..=50).count(), 1);
    assert_eq!(
        map.range((Bound::Excluded(50), Bound::Excluded(50)))
            .count(),
        0
    );
    assert_eq!(
        map.range((Bound::Excluded(50), Bound::Included(50)))
            .count(),
        0
    );
    assert_eq!(
        map.range((Bound::Excluded(50), Bound::Excluded(51)))
            .count(),
        0
    );
    assert_eq!(
        map.range((Bound::Excluded(50), Bound::Excluded(52)))
            .count(),
        1
    );
    assert_eq!(map.range(60..=40).rev().count(), 0);
    assert_eq!(map.range(200..).next_back(), None);
}

#[test]
fn too_large_keys_and_values_are_errors() {
    let map: TreeMap<String, Vec<u8>> = TreeMap::new();
    let max_key = Config::default().max_key_len();
    let max_value = Config::default().max_value_len();
    let long_key = "k".repeat(max_key + 1);
    assert_eq!(
        map.insert(long_key.as_str(), &vec![]),
        Err(Error::KeyTooLarge {
            len: max_key + 1,
            max: max_key
        })
    );
    assert_eq!(
        map.insert("k", &vec![0; max_value + 1]),
        Err(Error::ValueTooLarge {
            len: max_value + 1,
            max: max_value
        })
    );
    assert!(map.is_empty());
    // The longest key and value that fit.
    let key = "k".repeat(max_key);
    map.insert(key.as_str(), &vec![7; max_value]).unwrap();
    assert_eq!(map.get(key.as_str()), Some(vec![7; max_value]));

    // Inside a tuple the escape and terminator count against the limit.
    let tuples: TreeMap<(String, u8), u8> = TreeMap::new();
    // max_key - 3 bytes, the 2-byte terminator and the u8: exactly the limit.
    assert_eq!(tuples.insert(&("k".repeat(max_key - 3), 0), &0), Ok(None));
    assert_eq!(
        tuples.insert(&("k".repeat(max_key - 2), 0), &0),
        Err(Error::KeyTooLarge {
            len: max_key + 1,
            max: max_key
        })
    );
    let key = ("\0".repeat(max_key / 2), 0);
    assert!(matches!(
        tuples.insert(&key, &0),
        Err(Error::KeyTooLarge { .. })
    ));

    let bad = Config {
        page_size: 3000,
        ..Config::default()
    };
    assert!(matches!(
        TreeMap::<u8, u8>::with_config(bad),
        Err(Error::InvalidConfig {
            field: "page_size",
            ..
        })
    ));
}

#[test]
fn foreign_bytes_are_skipped_not_panicked_on() {
    let map: TreeMap<u32, String> = TreeMap::new();
    map.insert(&5, &"five".to_string()).unwrap();
    map.insert(&9, &"nine".to_string()).unwrap();
    let tree = map.as_tree();
    // A key of the wrong length, and a valid key with a value that is not UTF-8.
    tree.insert(b"\x00\x00\x01", b"short key").unwrap();
    tree.insert(&7u32.to_key_bytes(), b"\xFF\xFE").unwrap();
    tree.insert(&[0xFF; 5], b"long key").unwrap();

    assert_eq!(map.len(), 5);
    assert_eq!(map.get(&7), None);
    assert!(map.contains_key(&7));
    let entries: Vec<_> = map.iter().collect();
    assert_eq!(entries, [(5, "five".to_string()), (9, "nine".to_string())]);
    let entries: Vec<_> = map.iter().rev().collect();
    assert_eq!(entries, [(9, "nine".to_string()), (5, "five".to_string())]);
    assert_eq!(map.first(), Some((5, "five".to_string())));
    assert_eq!(map.last(), Some((9, "nine".to_string())));
    assert_eq!(map.insert(&7, &"seven".to_string()), Ok(None));
    assert_eq!(map.get(&7), Some("seven".to_string()));
    assert_eq!(map.remove(&7), Some("seven".to_string()));
}

#[test]
fn stored_bytes_are_the_codec_bytes() {
    let map: TreeMap<(u16, String), (String, u32)> = TreeMap::new();
    let key = (258u16, "name".to_string());
    let value = ("v".to_string(), 1u32);
    map.insert(&key, &value).unwrap();
    let (raw_key, raw_value) = map.as_tree().first().unwrap();
    assert_eq!(raw_key, [1, 2, b'n', b'a', b'm', b'e']);
    assert_eq!(raw_key, key.to_key_bytes());
    assert_eq!(raw_value, value.to_value_bytes());
    assert_eq!(raw_value, [1, b'v', 1, 0, 0, 0]);

    let tree = map.into_tree();
    let again: TreeMap<(u16, String), (String, u32)> = TreeMap::from_tree(tree);
    assert_eq!(again.get(&key), Some(value));
}

#[test]
fn concurrent_writers_and_readers() {
    let _watchdog = watchdog("concurrent_writers_and_readers", Duration::from_secs(300));
    let map: TreeMap<(u8, u32), u64> = TreeMap::new();
    // Stable keys above every writer's, which no writer touches; scans must return each.
    for i in 0..500u32 {
        map.insert(&(4, i), &0).unwrap();
    }
    std::thread::scope(|s| {
        for t in 0..4u8 {
            let map = &map;
            s.spawn(move || {
                for i in 0..2_000u32 {
                    map.insert(&(t, i), &(u64::from(t) << 32 | u64::from(i)))
                        .unwrap();
                    if i % 3 == 0 {
                        assert_eq!(map.remove(&(t, i)), Some(u64::from(t) << 32 | u64::from(i)));
                    }
                }
            });
        }
        let map = &map;
        s.spawn(move || {
            for round in 0..20 {
                let keys: Vec<(u8, u32)> = if round % 2 == 0 {
                    map.iter().map(|(k, _)| k).collect()
                } else {
                    let mut keys: Vec<_> = map.iter().rev().map(|(k, _)| k).collect();
                    assert!(
                        keys.windows(2).all(|w| w[0] > w[1]),
                        "reverse scan out of order"
                    );
                    keys.reverse();
                    keys
                };
                assert!(keys.windows(2).all(|w| w[0] < w[1]), "scan out of order");
                // The stable keys: (4, i), written before the writers started.
                let stable = keys.iter().filter(|k| k.0 == 4).count();
                assert_eq!(stable, 500, "scan lost stable keys");
            }
        });
    });
    let expected: Vec<((u8, u32), u64)> = (0..4u8)
        .flat_map(|t| {
            (0..2_000u32)
                .filter(|i| i % 3 != 0)
                .map(move |i| ((t, i), u64::from(t) << 32 | u64::from(i)))
        })
        .chain((0..500u32).map(|i| ((4, i), 0)))
        .collect();
    assert!(map.iter().eq(expected.iter().cloned()));
    assert_eq!(map.len(), expected.len());
}

#[test]
fn set_debug_default_and_stats() {
    let set: TreeMap<String, ()> = TreeMap::default();
    assert!(set.is_empty());
    assert_eq!(set.first(), None);
    assert_eq!(set.last(), None);
    assert_eq!(set.iter().next_back(), None);
    set.insert("b", &()).unwrap();
    set.insert("a", &()).unwrap();
    assert_eq!(format!("{set:?}"), r#"{"a": (), "b": ()}"#);
    assert_eq!(set.stats().len, 2);
    assert_eq!(set.insert("a", &()), Ok(Some(())));
    assert_eq!(set.remove("a"), Some(()));
    assert_eq!(set.remove("a"), None);
}

/// `Scattered<u64>` keys (byte reordering): four threads insert ids from one shared counter;
/// every id is found, the map iterates in the order of the encodings (`Ord` of `Scattered`),
/// and consecutive ids are spread over many leaves.
#[test]
fn scattered_keys_from_a_shared_counter() {
    use contree::Scattered;
    use std::sync::atomic::{AtomicU64, Ordering};
    let _watchdog = watchdog(
        "scattered_keys_from_a_shared_counter",
        Duration::from_secs(120),
    );
    let map: TreeMap<Scattered<u64>, u64> = TreeMap::new();
    let next = AtomicU64::new(0);
    const N: u64 = 40_000;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                if id >= N {
                    break;
                }
                assert_eq!(map.insert(&Scattered(id), &id).unwrap(), None);
            });
        }
    });
    assert_eq!(map.len(), N as usize);
    for id in (0..N).step_by(97) {
        assert_eq!(map.get(&Scattered(id)), Some(id));
    }
    let keys: Vec<Scattered<u64>> = map
        .iter()
        .map(|(k, v)| {
            assert_eq!(k.0, v);
            k
        })
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    let mut ids: Vec<u64> = keys.iter().map(|k| k.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..N).collect::<Vec<_>>());
    // 256 consecutive ids fall into many different leaves.
    let tree = map.as_tree();
    let leaves: std::collections::BTreeSet<_> = (1000..1256u64)
        .map(|id| tree.leaf_page_of(&Scattered(id).to_key_bytes()))
        .collect();
    assert!(leaves.len() > 16, "{} leaves", leaves.len());
    tree.check_invariants().unwrap();
}
