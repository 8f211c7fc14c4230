//! The typed layer's codecs: decoding arbitrary bytes never panics (as a whole key, as a
//! key followed by more bytes, as a value); every value round-trips through its key and
//! value encodings; key encodings order as the values do (`Ord`), for every codec the crate
//! ships and compositions of them (options, tuples, arrays).

#![no_main]

use arbitrary::Arbitrary;
use contree::{KeyCodec, ValueCodec};
use libfuzzer_sys::fuzz_target;
use std::fmt::Debug;

/// Decodes `bytes` every way the codec offers; none may panic, and whatever decodes whole
/// must encode back to a value that decodes the same.
fn decode_raw<T: KeyCodec + ValueCodec + Debug + PartialEq>(bytes: &[u8]) {
    if let Some(t) = T::from_key_bytes(bytes) {
        assert_eq!(T::from_key_bytes(&t.to_key_bytes()).as_ref(), Some(&t));
    }
    let mut rest = bytes;
    if T::decode_key(&mut rest).is_some() {
        assert!(rest.len() <= bytes.len());
    }
    let _ = T::decode_key_last(bytes);
    if let Some(t) = T::from_value_bytes(bytes) {
        assert_eq!(T::from_value_bytes(&t.to_value_bytes()).as_ref(), Some(&t));
    }
    let mut rest = bytes;
    let _ = T::decode_value(&mut rest);
}

/// Round trips of `a` and `b` and the order of their key encodings.
fn check<T: KeyCodec + ValueCodec + Debug + Ord>(a: T, b: T, tail: &[u8]) {
    for t in [&a, &b] {
        let key = t.to_key_bytes();
        assert_eq!(T::from_key_bytes(&key).as_ref(), Some(t), "key round trip");
        // A key inside a composite: the encoding (not the last one) stops where it ends.
        let mut inner = Vec::new();
        t.encode_key(&mut inner);
        let end = inner.len();
        inner.extend_from_slice(tail);
        let mut rest = &inner[..];
        assert_eq!(T::decode_key(&mut rest).as_ref(), Some(t), "inner key");
        assert_eq!(rest, &inner[end..], "inner key's rest");
        let value = t.to_value_bytes();
        assert_eq!(
            T::from_value_bytes(&value).as_ref(),
            Some(t),
            "value round trip"
        );
    }
    assert_eq!(
        a.to_key_bytes().cmp(&b.to_key_bytes()),
        a.cmp(&b),
        "key order of {a:?} and {b:?}"
    );
    decode_raw::<T>(tail);
}

#[derive(Arbitrary, Debug)]
enum Input {
    U8(u8, u8),
    U16(u16, u16),
    U32(u32, u32),
    U64(u64, u64),
    U128(u128, u128),
    I8(i8, i8),
    I16(i16, i16),
    I32(i32, i32),
    I64(i64, i64),
    I128(i128, i128),
    Usize(usize, usize),
    Isize(isize, isize),
    Bool(bool, bool),
    Char(char, char),
    Bytes(Vec<u8>, Vec<u8>),
    String(String, String),
    Unit((), ()),
    OptionU32(Option<u32>, Option<u32>),
    OptionBytes(Option<Vec<u8>>, Option<Vec<u8>>),
    OptionOption(Option<Option<String>>, Option<Option<String>>),
    Pair((u32, String), (u32, String)),
    Triple((Vec<u8>, i64, bool), (Vec<u8>, i64, bool)),
    NestedTuple(
        ((String, u8), Option<Vec<u8>>),
        ((String, u8), Option<Vec<u8>>),
    ),
    Array([u16; 3], [u16; 3]),
    ArrayOfStrings([String; 2], [String; 2]),
    Wide(
        (u8, u16, u32, u64, i8, i16, i32, i64),
        (u8, u16, u32, u64, i8, i16, i32, i64),
    ),
}

fuzz_target!(|data: (Input, Vec<u8>)| {
    let (input, tail) = data;
    match input {
        Input::U8(a, b) => check(a, b, &tail),
        Input::U16(a, b) => check(a, b, &tail),
        Input::U32(a, b) => check(a, b, &tail),
        Input::U64(a, b) => check(a, b, &tail),
        Input::U128(a, b) => check(a, b, &tail),
        Input::I8(a, b) => check(a, b, &tail),
        Input::I16(a, b) => check(a, b, &tail),
        Input::I32(a, b) => check(a, b, &tail),
        Input::I64(a, b) => check(a, b, &tail),
        Input::I128(a, b) => check(a, b, &tail),
        Input::Usize(a, b) => check(a, b, &tail),
        Input::Isize(a, b) => check(a, b, &tail),
        Input::Bool(a, b) => check(a, b, &tail),
        Input::Char(a, b) => check(a, b, &tail),
        Input::Bytes(a, b) => check(a, b, &tail),
        Input::String(a, b) => check(a, b, &tail),
        Input::Unit(a, b) => check_value_only(a, b, &tail),
        Input::OptionU32(a, b) => check(a, b, &tail),
        Input::OptionBytes(a, b) => check(a, b, &tail),
        Input::OptionOption(a, b) => check(a, b, &tail),
        Input::Pair(a, b) => check(a, b, &tail),
        Input::Triple(a, b) => check(a, b, &tail),
        Input::NestedTuple(a, b) => check(a, b, &tail),
        Input::Array(a, b) => check(a, b, &tail),
        Input::ArrayOfStrings(a, b) => check(a, b, &tail),
        Input::Wide(a, b) => check(a, b, &tail),
    }
});

/// `()` is a value codec only.
fn check_value_only<T: ValueCodec + Debug + PartialEq>(a: T, b: T, tail: &[u8]) {
    for t in [&a, &b] {
        assert_eq!(T::from_value_bytes(&t.to_value_bytes()).as_ref(), Some(t));
    }
    let _ = T::from_value_bytes(tail);
}
