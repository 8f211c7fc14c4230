//! Codecs between Rust values and the byte strings a [`Tree`](crate::Tree) stores.
//!
//! A [`TreeMap`](crate::TreeMap) keeps its entries in a byte-level tree, which orders keys by
//! comparing their bytes (`memcmp`). A key codec is therefore *order-preserving*: for any two
//! keys `a` and `b`, `a.cmp(&b)` equals the comparison of their encodings. Values only need to
//! round-trip.
//!
//! Four traits make a codec; each has an encoding half that borrowed, possibly unsized forms
//! implement too (`str` for `String`, `[u8]` for `Vec<u8>`), so that lookups and inserts take
//! `"text"` rather than `&"text".to_string()`:
//!
//! | | encode (`?Sized`, borrowed forms too) | decode (owned types) |
//! |---|---|---|
//! | keys | [`KeyEncode`] | [`KeyCodec`]` : KeyEncode` |
//! | values | [`ValueEncode`] | [`ValueCodec`]` : ValueEncode` |
//!
//! # Key encoding
//!
//! | Type | Encoding |
//! |------|----------|
//! | `u8`, `u16`, `u32`, `u64`, `u128` | big-endian, fixed width |
//! | `usize` | as `u64` (8 bytes) |
//! | `i8`, `i16`, `i32`, `i64`, `i128` | sign bit flipped, then big-endian, fixed width |
//! | `isize` | as `i64` (8 bytes) |
//! | `bool` | one byte, `0` or `1` |
//! | `char` | its UTF-8 bytes (1 to 4) |
//! | `String`, `str`, `Vec<u8>`, `[u8]` | *last element*: the bytes as they are; *elsewhere*: every `0x00` written as `0x00 0xFF`, then the terminator `0x00 0x00` |
//! | `Option<T>` | `None`: `0x00`; `Some(t)`: `0x01`, then `t`'s encoding |
//! | `[T; N]` | the elements' encodings one after another (`[u8; N]`: the `N` bytes as they are) |
//! | tuples of 2 to 8 codecs | the elements' encodings one after another |
//! | `&T` | as `T` |
//! | [`Scattered<T>`] (`u16` to `u128`) | big-endian with the first and last byte swapped: **not in numeric order** (see its doc) |
//!
//! Flipping the sign bit maps `i32::MIN..=i32::MAX` onto `0..=u32::MAX` in order, so
//! negative numbers sort before positive ones. UTF-8 orders by code point, as `char` does.
//! The tag byte of an `Option` sorts `None` before every `Some`.
//!
//! The bytes of a string or byte vector are written unchanged when nothing follows them: when
//! it is the whole key or the last element of a tuple or array. Anywhere else the encoding
//! must show where it ends, so that `("a", 2)` and `("ab", 1)` compare by their first
//! element: zero bytes are escaped and a terminator is appended. The terminator `0x00 0x00`
//! sorts below an escaped zero `0x00 0xFF` and below every other byte, so a shorter string
//! sorts first (`"a" < "a\0" < "ab"`), and no encoding is a prefix of another's.
//!
//! ```
//! use contree::{KeyCodec, KeyEncode};
//!
//! // Integers: big-endian, signed ones with the sign bit flipped.
//! assert_eq!(7u16.to_key_bytes(), [0x00, 0x07]);
//! assert_eq!((-1i16).to_key_bytes(), [0x7F, 0xFF]);
//! assert_eq!(1i16.to_key_bytes(), [0x80, 0x01]);
//!
//! // A string on its own is its UTF-8 bytes.
//! assert_eq!("ab".to_key_bytes(), b"ab");
//!
//! // Inside a tuple it is escaped and terminated.
//! let key = (String::from("a\0b"), 5u32);
//! assert_eq!(
//!     key.to_key_bytes(),
//!     [b'a', 0x00, 0xFF, b'b', 0x00, 0x00, 0, 0, 0, 5]
//! );
//! assert_eq!(<(String, u32)>::from_key_bytes(&key.to_key_bytes()), Some(key));
//!
//! // Byte order is key order.
//! let a = (String::from("a"), 9u32).to_key_bytes();
//! let b = (String::from("a\0"), 0u32).to_key_bytes();
//! let c = (String::from("ab"), 0u32).to_key_bytes();
//! assert!(a < b && b < c);
//!
//! // Options, chars and arrays.
//! assert_eq!(None::<u8>.to_key_bytes(), [0x00]);
//! assert_eq!(Some(7u8).to_key_bytes(), [0x01, 0x07]);
//! assert_eq!('é'.to_key_bytes(), [0xC3, 0xA9]);
//! assert_eq!([1u16, 2].to_key_bytes(), [0, 1, 0, 2]);
//! ```
//!
//! # Value encoding
//!
//! | Type | Encoding |
//! |------|----------|
//! | integers | little-endian, fixed width (`usize` and `isize` as 8 bytes) |
//! | `bool` | one byte, `0` or `1` |
//! | `char` | its UTF-8 bytes (1 to 4) |
//! | `()` | nothing |
//! | `String`, `str`, `Vec<u8>`, `[u8]` | *last element*: the bytes as they are; *elsewhere*: the length as an LEB128 varint, then the bytes |
//! | `Option<T>` | `None`: `0x00`; `Some(t)`: `0x01`, then `t`'s encoding |
//! | `[T; N]` | the elements' encodings one after another (`[u8; N]`: the `N` bytes as they are) |
//! | tuples of 2 to 8 codecs | the elements' encodings one after another |
//! | `&T` | as `T` |
//!
//! # Decoding
//!
//! Decoding never panics. Bytes that are not a valid encoding (a wrong length, a missing
//! terminator, invalid UTF-8, an unknown `Option` tag, an out-of-range `usize` on a 32-bit
//! target) decode to `None`.
//!
//! # Your own types
//!
//! Implement [`KeyEncode`] and [`KeyCodec`] for a key type, [`ValueEncode`] and
//! [`ValueCodec`] for a value type. The easiest correct implementation forwards to a tuple of
//! the fields (of references to them, when encoding), in the order that the type's `Ord`
//! compares them: the tuple then takes care of the rules below.
//!
//! ```
//! use contree::{KeyCodec, KeyEncode, TreeMap, ValueCodec, ValueEncode};
//!
//! /// A key ordered by tenant, then by name (the derived `Ord` compares fields in order).
//! #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
//! struct UserId {
//!     tenant: u32,
//!     name: String,
//! }
//!
//! impl KeyEncode for UserId {
//!     // Inside a tuple or array: every field self-delimiting.
//!     fn encode_key(&self, out: &mut Vec<u8>) {
//!         (self.tenant, self.name.as_str()).encode_key(out);
//!     }
//!     // As the whole key: the last field may skip its terminator.
//!     fn encode_key_last(&self, out: &mut Vec<u8>) {
//!         (self.tenant, self.name.as_str()).encode_key_last(out);
//!     }
//! }
//!
//! impl KeyCodec for UserId {
//!     fn decode_key(input: &mut &[u8]) -> Option<Self> {
//!         let (tenant, name) = <(u32, String)>::decode_key(input)?;
//!         Some(UserId { tenant, name })
//!     }
//!     fn decode_key_last(input: &[u8]) -> Option<Self> {
//!         let (tenant, name) = <(u32, String)>::decode_key_last(input)?;
//!         Some(UserId { tenant, name })
//!     }
//! }
//!
//! /// A value: it only has to round-trip.
//! #[derive(Debug, Clone, PartialEq)]
//! struct Profile {
//!     email: String,
//!     logins: u64,
//! }
//!
//! impl ValueEncode for Profile {
//!     fn encode_value(&self, out: &mut Vec<u8>) {
//!         (self.email.as_str(), self.logins).encode_value(out);
//!     }
//! }
//!
//! impl ValueCodec for Profile {
//!     fn decode_value(input: &mut &[u8]) -> Option<Self> {
//!         let (email, logins) = <(String, u64)>::decode_value(input)?;
//!         Some(Profile { email, logins })
//!     }
//! }
//!
//! let users: TreeMap<UserId, Profile> = TreeMap::new();
//! let bob = UserId { tenant: 2, name: "bob".into() };
//! let alice = UserId { tenant: 2, name: "alice".into() };
//! let zoe = UserId { tenant: 1, name: "zoe".into() };
//! for (id, email) in [(&bob, "b@x"), (&alice, "a@x"), (&zoe, "z@y")] {
//!     users.insert(id, &Profile { email: email.into(), logins: 0 }).unwrap();
//! }
//! // In `UserId` order: tenant 1 first, then tenant 2 by name.
//! let names: Vec<String> = users.iter().map(|(id, _)| id.name).collect();
//! assert_eq!(names, ["zoe", "alice", "bob"]);
//! // The encoding composes: a `UserId` inside a tuple key keeps its order too.
//! let events: TreeMap<(UserId, u64), ()> = TreeMap::new();
//! events.insert(&(bob.clone(), 7), &()).unwrap();
//! events.insert(&(alice.clone(), 9), &()).unwrap();
//! assert_eq!(events.first().map(|((id, t), _)| (id, t)), Some((alice, 9)));
//! ```
//!
//! ## The rules
//!
//! A key codec must follow these rules; [`KeyEncode`] and [`KeyCodec`] repeat them. Breaking
//! one makes the map's order and lookups wrong, but is never unsafe and never a panic inside
//! contree.
//!
//! 1. **Order.** For any `a` and `b`, `a.cmp(&b)` equals the byte-wise comparison of their
//!    encodings, for [`encode_key`](KeyEncode::encode_key) and for
//!    [`encode_key_last`](KeyEncode::encode_key_last). Equal values encode equally and
//!    different values differently.
//! 2. **Self-delimiting.** No [`encode_key`](KeyEncode::encode_key) encoding is a proper
//!    prefix of another's, because more elements of a tuple, array or `Option` may follow it;
//!    [`decode_key`](KeyCodec::decode_key) finds its end without being told. Fixed-width
//!    encodings are self-delimiting; a variable-length field (a string, a byte vector) must be
//!    written with its own `encode_key`, which escapes and terminates it. Only the last field
//!    may use `encode_key_last`, and only from within `encode_key_last`.
//! 3. **Round trip.** `decode_key` reads back what `encode_key` wrote and stops right after
//!    it; [`decode_key_last`](KeyCodec::decode_key_last) reads back what `encode_key_last`
//!    wrote and needs all of its input. If you override `encode_key_last`, override
//!    `decode_key_last` to match (the defaults of both fall back to the `encode_key` form).
//! 4. **Borrowed forms.** If `K: Borrow<Q>`, `k.borrow()` encodes to the same bytes as `k`
//!    in both forms, so that `map.get(q)` finds what `map.insert(k, ..)` stored.
//!
//! Fields are compared in the order they are written, so write them in the order that the
//! type's `Ord` compares them; a field whose `Ord` is not the order of its bytes (a float, a
//! reversed order) needs an encoding that makes it so, such as flipped bits.
//!
//! Value codecs follow only rules 2 and 3 in their value form
//! ([`encode_value`](ValueEncode::encode_value) and
//! [`encode_value_last`](ValueEncode::encode_value_last)), and rule 4 with `V: Borrow<W>`.
//! Value encodings need not keep any order.

mod array;
mod bytes;
mod option;
mod scalar;
mod scattered;
mod tuple;

pub use scattered::Scattered;

/// The encoding half of a key codec. It is separate from [`KeyCodec`] so that unsized
/// borrowed forms (`str`, `[u8]`) can be used to look keys up and insert them, as in
/// `map.get("apple")` on a `TreeMap<String, _>`.
///
/// See the [module documentation](self#your-own-types) for an implementation on a user type.
///
/// # Contract
///
/// * [`encode_key`](KeyEncode::encode_key) is *order-preserving* (`a.cmp(&b)` equals the
///   byte-wise comparison of the encodings) and *prefix-free* (no value's encoding is a proper
///   prefix of another's), so that it can be followed by more elements of a tuple.
/// * [`encode_key_last`](KeyEncode::encode_key_last) is order-preserving and injective; it
///   need not be prefix-free, because nothing follows it.
/// * If `K: Borrow<Q>`, then `k.borrow()` encodes to the same bytes as `k` in both forms.
///
/// A codec that breaks the contract makes the map's order and lookups wrong, but never
/// unsafe and never a panic inside contree.
///
/// ```
/// use contree::KeyEncode;
///
/// let mut out = Vec::new();
/// "a".encode_key(&mut out); // escaped and terminated: something may follow
/// 7u8.encode_key_last(&mut out); // nothing follows
/// assert_eq!(out, [b'a', 0, 0, 7]);
/// assert_eq!(out, ("a", 7u8).to_key_bytes());
/// ```
pub trait KeyEncode {
    /// Appends the self-delimiting, order-preserving encoding of `self` to `out`.
    fn encode_key(&self, out: &mut Vec<u8>);

    /// Appends the encoding used when nothing follows `self`: when it is the whole key or the
    /// last element of a tuple. Defaults to [`encode_key`](KeyEncode::encode_key); strings and
    /// byte vectors override it to skip escaping and the terminator.
    fn encode_key_last(&self, out: &mut Vec<u8>) {
        self.encode_key(out);
    }

    /// The bytes a [`TreeMap`](crate::TreeMap) stores for this key: its
    /// [`encode_key_last`](KeyEncode::encode_key_last) encoding. Use it to reach typed keys
    /// through [`TreeMap::as_tree`](crate::TreeMap::as_tree).
    ///
    /// ```
    /// use contree::KeyEncode;
    /// assert_eq!((1u8, -1i8).to_key_bytes(), [0x01, 0x7F]);
    /// ```
    fn to_key_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_key_last(&mut out);
        out
    }
}

/// An order-preserving key codec: the decoding half, on top of [`KeyEncode`].
///
/// Implemented for the integers, `bool`, `char`, `String`, `Vec<u8>`, `Option`s, arrays and
/// tuples of 2 to 8 key codecs; see the [module documentation](self) for the byte layout and
/// for an implementation on a user type.
///
/// ```
/// use contree::{KeyCodec, KeyEncode};
///
/// let mut keys = vec![(-5i64, "b".to_string()), (3, "a".to_string()), (-5, "a".to_string())];
/// let mut encoded: Vec<Vec<u8>> = keys.iter().map(|k| k.to_key_bytes()).collect();
/// keys.sort();
/// encoded.sort();
/// let decoded: Vec<(i64, String)> =
///     encoded.iter().map(|b| KeyCodec::from_key_bytes(b).unwrap()).collect();
/// assert_eq!(decoded, keys);
/// ```
pub trait KeyCodec: KeyEncode + Sized {
    /// Decodes a value written by [`encode_key`](KeyEncode::encode_key) from the front of
    /// `input` and advances `input` past it. Returns `None` if the bytes are not a valid
    /// encoding; `input` is then unspecified.
    fn decode_key(input: &mut &[u8]) -> Option<Self>;

    /// Decodes a value written by [`encode_key_last`](KeyEncode::encode_key_last), which
    /// spans all of `input`. The default decodes with [`decode_key`](KeyCodec::decode_key)
    /// and requires that nothing is left over.
    fn decode_key_last(mut input: &[u8]) -> Option<Self> {
        let value = Self::decode_key(&mut input)?;
        input.is_empty().then_some(value)
    }

    /// Decodes the bytes a [`TreeMap`](crate::TreeMap) stores for a key (the inverse of
    /// [`to_key_bytes`](KeyEncode::to_key_bytes)); `None` if they are not a valid encoding.
    ///
    /// ```
    /// use contree::KeyCodec;
    /// assert_eq!(u16::from_key_bytes(&[0x01, 0x02]), Some(0x0102));
    /// assert_eq!(u16::from_key_bytes(&[0x01]), None);
    /// ```
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        Self::decode_key_last(bytes)
    }
}

/// The encoding half of a value codec. It is separate from [`ValueCodec`] so that unsized
/// borrowed forms (`str`, `[u8]`) can be inserted, as in `map.insert("k", "v")` on a
/// `TreeMap<String, String>`.
///
/// Values need not be order-preserving, only round-trip through [`ValueCodec`]. If
/// `V: Borrow<W>`, then `v.borrow()` must encode to the same bytes as `v`. See the
/// [module documentation](self#your-own-types) for an implementation on a user type.
///
/// ```
/// use contree::ValueEncode;
///
/// let mut out = Vec::new();
/// "ab".encode_value(&mut out); // length-prefixed: something may follow
/// 7u16.encode_value_last(&mut out); // nothing follows
/// assert_eq!(out, [2, b'a', b'b', 7, 0]);
/// assert_eq!(out, ("ab", 7u16).to_value_bytes());
/// ```
pub trait ValueEncode {
    /// Appends a self-delimiting encoding of `self` to `out`.
    fn encode_value(&self, out: &mut Vec<u8>);

    /// Appends the encoding used when nothing follows `self`: when it is the whole value or
    /// the last element of a tuple. Defaults to [`encode_value`](ValueEncode::encode_value);
    /// strings and byte vectors override it to leave out their length.
    fn encode_value_last(&self, out: &mut Vec<u8>) {
        self.encode_value(out);
    }

    /// The bytes a [`TreeMap`](crate::TreeMap) stores for this value: its
    /// [`encode_value_last`](ValueEncode::encode_value_last) encoding.
    ///
    /// ```
    /// use contree::ValueEncode;
    /// assert_eq!(0x0102u16.to_value_bytes(), [0x02, 0x01]);
    /// assert_eq!("v".to_value_bytes(), b"v");
    /// ```
    fn to_value_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_value_last(&mut out);
        out
    }
}

/// A value codec: the decoding half, on top of [`ValueEncode`]. Values need not be
/// order-preserving, only round-trip.
///
/// Implemented for the integers, `bool`, `char`, `()`, `String`, `Vec<u8>`, `Option`s, arrays
/// and tuples of 2 to 8 value codecs; see the [module documentation](self) for the byte layout
/// and for an implementation on a user type.
///
/// ```
/// use contree::{ValueCodec, ValueEncode};
///
/// let value = ("name".to_string(), 42u32, vec![1u8, 2]);
/// let bytes = value.to_value_bytes();
/// assert_eq!(ValueCodec::from_value_bytes(&bytes), Some(value));
/// ```
pub trait ValueCodec: ValueEncode + Sized {
    /// Decodes a value written by [`encode_value`](ValueEncode::encode_value) from the front
    /// of `input` and advances `input` past it. Returns `None` if the bytes are not a valid
    /// encoding; `input` is then unspecified.
    fn decode_value(input: &mut &[u8]) -> Option<Self>;

    /// Decodes a value written by [`encode_value_last`](ValueEncode::encode_value_last), which
    /// spans all of `input`. The default decodes with
    /// [`decode_value`](ValueCodec::decode_value) and requires that nothing is left over.
    fn decode_value_last(mut input: &[u8]) -> Option<Self> {
        let value = Self::decode_value(&mut input)?;
        input.is_empty().then_some(value)
    }

    /// Decodes the bytes a [`TreeMap`](crate::TreeMap) stores for a value (the inverse of
    /// [`to_value_bytes`](ValueEncode::to_value_bytes)); `None` if they are not a valid
    /// encoding.
    ///
    /// ```
    /// use contree::ValueCodec;
    /// assert_eq!(u16::from_value_bytes(&[0x02, 0x01]), Some(0x0102));
    /// assert_eq!(String::from_value_bytes(&[0xFF]), None);
    /// ```
    fn from_value_bytes(bytes: &[u8]) -> Option<Self> {
        Self::decode_value_last(bytes)
    }
}

/// A reference encodes as what it points to, so that tuples of references can be encoded
/// (`(self.id, self.name.as_str())`) without cloning the fields.
impl<T: KeyEncode + ?Sized> KeyEncode for &T {
    fn encode_key(&self, out: &mut Vec<u8>) {
        (**self).encode_key(out);
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        (**self).encode_key_last(out);
    }
}

/// A reference encodes as what it points to.
impl<T: ValueEncode + ?Sized> ValueEncode for &T {
    fn encode_value(&self, out: &mut Vec<u8>) {
        (**self).encode_value(out);
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        (**self).encode_value_last(out);
    }
}

/// Splits `n` bytes off the front of `input`.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if input.len() < n {
        return None;
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Some(head)
}

/// Splits a fixed-size array off the front of `input`.
fn take_array<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    take(input, N)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_encode_as_their_targets() {
        let name = String::from("a\0");
        assert_eq!(
            (&name, 1u8).to_key_bytes(),
            (name.clone(), 1u8).to_key_bytes()
        );
        assert_eq!((&&5u32).to_key_bytes(), 5u32.to_key_bytes());
        assert_eq!(
            (name.as_str(), 2u8).to_value_bytes(),
            (name.clone(), 2u8).to_value_bytes()
        );
    }

    #[test]
    fn take_splits_or_refuses() {
        let mut input = &[1u8, 2, 3][..];
        assert_eq!(take(&mut input, 2), Some(&[1u8, 2][..]));
        assert_eq!(take(&mut input, 2), None);
        assert_eq!(take_array::<1>(&mut input), Some([3]));
        assert_eq!(take_array::<0>(&mut input), Some([]));
    }
}
