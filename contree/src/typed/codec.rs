//! Codecs between Rust values and the byte strings a [`Tree`](crate::Tree) stores.
//!
//! A [`TreeMap`](crate::TreeMap) keeps its entries in a byte-level tree, which orders keys by
//! comparing their bytes (`memcmp`). A key codec is therefore *order-preserving*: for any two
//! keys `a` and `b`, `a.cmp(&b)` equals the comparison of their encodings. Values only need to
//! round-trip.
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
//! | `[u8; N]` | the `N` bytes as they are |
//! | `String`, `str`, `Vec<u8>`, `[u8]` | *last element*: the bytes as they are; *elsewhere*: every `0x00` written as `0x00 0xFF`, then the terminator `0x00 0x00` |
//! | tuples of 2 to 4 codecs | the elements' encodings one after another |
//!
//! Flipping the sign bit maps `i32::MIN..=i32::MAX` onto `0..=u32::MAX` in order, so
//! negative numbers sort before positive ones.
//!
//! The bytes of a string or byte vector are written unchanged when nothing follows them: when
//! it is the whole key or the last element of a tuple. Anywhere else in a tuple the encoding
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
//! ```
//!
//! # Value encoding
//!
//! Integers are little-endian and fixed width (`usize` and `isize` as 8 bytes), `bool` is one
//! byte, `[u8; N]` is its bytes and `()` is empty. A `String` or `Vec<u8>` is its bytes when it
//! is the whole value or the last element of a tuple, and otherwise its length as an LEB128
//! varint followed by its bytes. Tuples of 2 to 4 codecs concatenate their elements.
//!
//! # Decoding
//!
//! Decoding never panics. Bytes that are not a valid encoding (a wrong length, a missing
//! terminator, invalid UTF-8, an out-of-range `usize` on a 32-bit target) decode to `None`.
//!
//! # Your own types
//!
//! Implement [`KeyEncode`] and [`KeyCodec`] (or [`ValueCodec`]) by composing the encodings of
//! the fields:
//!
//! ```
//! use contree::{KeyCodec, KeyEncode, TreeMap};
//!
//! #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
//! struct OrderId {
//!     customer: u32,
//!     seq: u64,
//! }
//!
//! impl KeyEncode for OrderId {
//!     fn encode_key(&self, out: &mut Vec<u8>) {
//!         self.customer.encode_key(out);
//!         self.seq.encode_key(out);
//!     }
//! }
//!
//! impl KeyCodec for OrderId {
//!     fn decode_key(input: &mut &[u8]) -> Option<Self> {
//!         Some(OrderId { customer: u32::decode_key(input)?, seq: u64::decode_key(input)? })
//!     }
//! }
//!
//! let orders: TreeMap<OrderId, String> = TreeMap::new();
//! orders.insert(&OrderId { customer: 2, seq: 1 }, &"b".to_string()).unwrap();
//! orders.insert(&OrderId { customer: 1, seq: 7 }, &"a".to_string()).unwrap();
//! assert_eq!(orders.first(), Some((OrderId { customer: 1, seq: 7 }, "a".to_string())));
//! ```

/// The encoding half of a key codec. It is separate from [`KeyCodec`] so that unsized
/// borrowed forms (`str`, `[u8]`) can be used to look keys up, as in
/// `map.get("apple")` on a `TreeMap<String, _>`.
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
/// Implemented for the integers, `bool`, `[u8; N]`, `String`, `Vec<u8>` and tuples of 2 to 4
/// key codecs; see the [module documentation](self) for the byte layout.
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

/// A value codec. Values need not be order-preserving, only round-trip.
///
/// Implemented for the integers, `bool`, `()`, `[u8; N]`, `String`, `Vec<u8>` and tuples of
/// 2 to 4 value codecs; see the [module documentation](self) for the byte layout.
///
/// ```
/// use contree::ValueCodec;
///
/// let value = ("name".to_string(), 42u32, vec![1u8, 2]);
/// let bytes = value.to_value_bytes();
/// assert_eq!(ValueCodec::from_value_bytes(&bytes), Some(value));
/// ```
pub trait ValueCodec: Sized {
    /// Appends a self-delimiting encoding of `self` to `out`.
    fn encode_value(&self, out: &mut Vec<u8>);

    /// Decodes a value written by [`encode_value`](ValueCodec::encode_value) from the front
    /// of `input` and advances `input` past it. Returns `None` if the bytes are not a valid
    /// encoding; `input` is then unspecified.
    fn decode_value(input: &mut &[u8]) -> Option<Self>;

    /// Appends the encoding used when nothing follows `self`: when it is the whole value or
    /// the last element of a tuple. Defaults to [`encode_value`](ValueCodec::encode_value);
    /// strings and byte vectors override it to leave out their length.
    fn encode_value_last(&self, out: &mut Vec<u8>) {
        self.encode_value(out);
    }

    /// Decodes a value written by [`encode_value_last`](ValueCodec::encode_value_last), which
    /// spans all of `input`. The default decodes with
    /// [`decode_value`](ValueCodec::decode_value) and requires that nothing is left over.
    fn decode_value_last(mut input: &[u8]) -> Option<Self> {
        let value = Self::decode_value(&mut input)?;
        input.is_empty().then_some(value)
    }

    /// The bytes a [`TreeMap`](crate::TreeMap) stores for this value.
    fn to_value_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_value_last(&mut out);
        out
    }

    /// Decodes the bytes a [`TreeMap`](crate::TreeMap) stores for a value; `None` if they are
    /// not a valid encoding.
    fn from_value_bytes(bytes: &[u8]) -> Option<Self> {
        Self::decode_value_last(bytes)
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

// ---------------------------------------------------------------------------------------------
// Integers

macro_rules! unsigned_codec {
    ($($t:ty),*) => {$(
        impl KeyEncode for $t {
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
        }

        impl KeyCodec for $t {
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                take_array(input).map(<$t>::from_be_bytes)
            }
        }

        impl ValueCodec for $t {
            fn encode_value(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                take_array(input).map(<$t>::from_le_bytes)
            }
        }
    )*};
}

unsigned_codec!(u8, u16, u32, u64, u128);

macro_rules! signed_codec {
    ($($t:ty => $u:ty),*) => {$(
        impl KeyEncode for $t {
            fn encode_key(&self, out: &mut Vec<u8>) {
                // Flipping the sign bit maps MIN..=MAX onto 0..=unsigned MAX in order.
                let flipped = (*self as $u) ^ (1 << (<$u>::BITS - 1));
                out.extend_from_slice(&flipped.to_be_bytes());
            }
        }

        impl KeyCodec for $t {
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                let flipped = <$u>::from_be_bytes(take_array(input)?);
                Some((flipped ^ (1 << (<$u>::BITS - 1))) as $t)
            }
        }

        impl ValueCodec for $t {
            fn encode_value(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                take_array(input).map(<$t>::from_le_bytes)
            }
        }
    )*};
}

signed_codec!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128);

// `usize` and `isize` are stored as 64-bit integers so that the encoding does not depend on the
// target; a stored value that does not fit the target's `usize` decodes to `None`.

impl KeyEncode for usize {
    fn encode_key(&self, out: &mut Vec<u8>) {
        (*self as u64).encode_key(out);
    }
}

impl KeyCodec for usize {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        usize::try_from(u64::decode_key(input)?).ok()
    }
}

impl ValueCodec for usize {
    fn encode_value(&self, out: &mut Vec<u8>) {
        (*self as u64).encode_value(out);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        usize::try_from(u64::decode_value(input)?).ok()
    }
}

impl KeyEncode for isize {
    fn encode_key(&self, out: &mut Vec<u8>) {
        (*self as i64).encode_key(out);
    }
}

impl KeyCodec for isize {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        isize::try_from(i64::decode_key(input)?).ok()
    }
}

impl ValueCodec for isize {
    fn encode_value(&self, out: &mut Vec<u8>) {
        (*self as i64).encode_value(out);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        isize::try_from(i64::decode_value(input)?).ok()
    }
}

// ---------------------------------------------------------------------------------------------
// bool, (), [u8; N]

impl KeyEncode for bool {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

impl KeyCodec for bool {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        match take_array::<1>(input)? {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }
}

impl ValueCodec for bool {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.encode_key(out);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        Self::decode_key(input)
    }
}

/// The empty value, for a `TreeMap<K, ()>` used as a set.
impl ValueCodec for () {
    fn encode_value(&self, _out: &mut Vec<u8>) {}

    fn decode_value(_input: &mut &[u8]) -> Option<Self> {
        Some(())
    }
}

impl<const N: usize> KeyEncode for [u8; N] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl<const N: usize> KeyCodec for [u8; N] {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        take_array(input)
    }
}

impl<const N: usize> ValueCodec for [u8; N] {
    fn encode_value(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        take_array(input)
    }
}

// ---------------------------------------------------------------------------------------------
// Byte strings and strings

/// Writes `bytes` with every `0x00` escaped as `0x00 0xFF`, then the terminator `0x00 0x00`.
fn encode_escaped(bytes: &[u8], out: &mut Vec<u8>) {
    out.reserve(bytes.len() + 2);
    let mut rest = bytes;
    while let Some(zero) = rest.iter().position(|&b| b == 0) {
        out.extend_from_slice(&rest[..=zero]);
        out.push(0xFF);
        rest = &rest[zero + 1..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(&[0x00, 0x00]);
}

/// Reads what [`encode_escaped`] wrote from the front of `input`.
fn decode_escaped(input: &mut &[u8]) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut rest = *input;
    loop {
        let zero = rest.iter().position(|&b| b == 0)?;
        bytes.extend_from_slice(&rest[..zero]);
        match rest.get(zero + 1)? {
            0x00 => {
                *input = &rest[zero + 2..];
                return Some(bytes);
            }
            0xFF => {
                bytes.push(0);
                rest = &rest[zero + 2..];
            }
            _ => return None,
        }
    }
}

/// Writes an LEB128 varint.
fn encode_varint(mut n: u64, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads an LEB128 varint; `None` if it is truncated or does not fit in a `u64`.
fn decode_varint(input: &mut &[u8]) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let [byte] = take_array::<1>(input)?;
        let bits = u64::from(byte & 0x7F);
        if shift == 63 && bits > 1 {
            return None;
        }
        n |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(n);
        }
    }
    None
}

/// Writes a length-prefixed byte string.
fn encode_prefixed(bytes: &[u8], out: &mut Vec<u8>) {
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Reads a length-prefixed byte string.
fn decode_prefixed<'a>(input: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(decode_varint(input)?).ok()?;
    take(input, len)
}

impl KeyEncode for [u8] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        encode_escaped(self, out);
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl KeyEncode for Vec<u8> {
    fn encode_key(&self, out: &mut Vec<u8>) {
        self.as_slice().encode_key(out);
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        self.as_slice().encode_key_last(out);
    }
}

impl KeyCodec for Vec<u8> {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        decode_escaped(input)
    }

    fn decode_key_last(input: &[u8]) -> Option<Self> {
        Some(input.to_vec())
    }
}

impl ValueCodec for Vec<u8> {
    fn encode_value(&self, out: &mut Vec<u8>) {
        encode_prefixed(self, out);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        decode_prefixed(input).map(<[u8]>::to_vec)
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }

    fn decode_value_last(input: &[u8]) -> Option<Self> {
        Some(input.to_vec())
    }
}

impl KeyEncode for str {
    fn encode_key(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_key(out);
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_key_last(out);
    }
}

impl KeyEncode for String {
    fn encode_key(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_key(out);
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_key_last(out);
    }
}

impl KeyCodec for String {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        String::from_utf8(decode_escaped(input)?).ok()
    }

    fn decode_key_last(input: &[u8]) -> Option<Self> {
        std::str::from_utf8(input).ok().map(str::to_owned)
    }
}

impl ValueCodec for String {
    fn encode_value(&self, out: &mut Vec<u8>) {
        encode_prefixed(self.as_bytes(), out);
    }

    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        std::str::from_utf8(decode_prefixed(input)?)
            .ok()
            .map(str::to_owned)
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode_value_last(input: &[u8]) -> Option<Self> {
        std::str::from_utf8(input).ok().map(str::to_owned)
    }
}

// ---------------------------------------------------------------------------------------------
// Tuples

/// Implements the codecs for one tuple size. The elements before the last one use the
/// self-delimiting encodings; the last one uses the `_last` encodings when the tuple itself is
/// last.
macro_rules! tuple_codec {
    ($($name:ident $idx:tt),+ ; $last:ident $last_idx:tt) => {
        impl<$($name: KeyEncode,)+ $last: KeyEncode> KeyEncode for ($($name,)+ $last,) {
            fn encode_key(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_key(out);)+
                self.$last_idx.encode_key(out);
            }

            fn encode_key_last(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_key(out);)+
                self.$last_idx.encode_key_last(out);
            }
        }

        impl<$($name: KeyCodec,)+ $last: KeyCodec> KeyCodec for ($($name,)+ $last,) {
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                Some(($($name::decode_key(input)?,)+ $last::decode_key(input)?,))
            }

            fn decode_key_last(mut input: &[u8]) -> Option<Self> {
                Some(($($name::decode_key(&mut input)?,)+ $last::decode_key_last(input)?,))
            }
        }

        impl<$($name: ValueCodec,)+ $last: ValueCodec> ValueCodec for ($($name,)+ $last,) {
            fn encode_value(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_value(out);)+
                self.$last_idx.encode_value(out);
            }

            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                Some(($($name::decode_value(input)?,)+ $last::decode_value(input)?,))
            }

            fn encode_value_last(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_value(out);)+
                self.$last_idx.encode_value_last(out);
            }

            fn decode_value_last(mut input: &[u8]) -> Option<Self> {
                Some(($($name::decode_value(&mut input)?,)+ $last::decode_value_last(input)?,))
            }
        }
    };
}

tuple_codec!(A 0; B 1);
tuple_codec!(A 0, B 1; C 2);
tuple_codec!(A 0, B 1, C 2; D 3);

#[cfg(test)]
mod tests {
    use super::*;

    fn enc<K: KeyEncode + ?Sized>(key: &K) -> Vec<u8> {
        key.to_key_bytes()
    }

    fn enc_inner<K: KeyEncode + ?Sized>(key: &K) -> Vec<u8> {
        let mut out = Vec::new();
        key.encode_key(&mut out);
        out
    }

    #[test]
    fn integer_layouts() {
        assert_eq!(enc(&0x0102u16), [1, 2]);
        assert_eq!(enc(&i8::MIN), [0x00]);
        assert_eq!(enc(&-1i8), [0x7F]);
        assert_eq!(enc(&0i8), [0x80]);
        assert_eq!(enc(&i8::MAX), [0xFF]);
        assert_eq!(enc(&i64::MIN), [0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(enc(&usize::MAX), [0xFF; 8]);
        assert_eq!(enc(&isize::MIN), [0; 8]);
        assert_eq!(enc(&u128::MAX).len(), 16);
        assert_eq!(i128::from_key_bytes(&enc(&i128::MIN)), Some(i128::MIN));
        assert_eq!(isize::from_key_bytes(&enc(&-3isize)), Some(-3));
        assert_eq!(0x0102u16.to_value_bytes(), [2, 1]);
    }

    #[test]
    fn string_layouts() {
        assert_eq!(enc("a\0b"), b"a\0b");
        assert_eq!(enc_inner("a\0b"), [b'a', 0, 0xFF, b'b', 0, 0]);
        assert_eq!(enc_inner(""), [0, 0]);
        assert_eq!(enc_inner(&b"\0\0"[..]), [0, 0xFF, 0, 0xFF, 0, 0]);
        assert!(enc_inner("a") < enc_inner("a\0"));
        assert!(enc_inner("a\0") < enc_inner("ab"));
        assert!(enc_inner("") < enc_inner("\0"));
    }

    #[test]
    fn escaped_roundtrip_and_rejects() {
        for s in [&b""[..], b"\0", b"\0\0x\0", b"abc", b"\xff\0\xff"] {
            let e = enc_inner(s);
            let mut input = &e[..];
            assert_eq!(Vec::<u8>::decode_key(&mut input).as_deref(), Some(s));
            assert!(input.is_empty());
        }
        // Missing terminator, truncated escape, bad escape.
        for bad in [&b"abc"[..], b"a\0", b"a\0\x01", b"\0\xff"] {
            assert_eq!(Vec::<u8>::decode_key(&mut &bad[..]), None, "{bad:?}");
        }
        // Invalid UTF-8 inside a string.
        assert_eq!(String::decode_key(&mut &[0xFF, 0, 0][..]), None);
        assert_eq!(String::from_key_bytes(&[0xC3]), None);
    }

    #[test]
    fn varint() {
        for n in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            encode_varint(n, &mut out);
            let mut input = &out[..];
            assert_eq!(decode_varint(&mut input), Some(n));
            assert!(input.is_empty());
        }
        assert_eq!(decode_varint(&mut &[0x80][..]), None);
        assert_eq!(decode_varint(&mut &[0xFF; 10][..]), None);
        assert_eq!(
            decode_varint(&mut &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02][..]),
            None
        );
        // A length larger than the input.
        assert_eq!(<(String, u8)>::from_value_bytes(&[5, b'a', 1]), None);
    }

    #[test]
    fn tuples() {
        let key = (String::from("x"), -1i32, vec![0u8, 1], 7u8);
        let bytes = enc(&key);
        assert_eq!(KeyCodec::from_key_bytes(&bytes), Some(key.clone()));
        assert_eq!(
            <(String, i32, Vec<u8>, u8)>::from_key_bytes(&bytes[..bytes.len() - 1]),
            None
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(<(String, i32, Vec<u8>, u8)>::from_key_bytes(&longer), None);

        // The last element is written raw and runs to the end.
        assert_eq!(enc(&(1u8, String::from("ab"))), [1, b'a', b'b']);
        assert_eq!(
            <(u8, String)>::from_key_bytes(&[1, b'a', b'b']),
            Some((1, "ab".into()))
        );

        // Nested tuples.
        let nested = ((String::from("a"), String::from("b")), String::from("c"));
        assert_eq!(enc(&nested), [b'a', 0, 0, b'b', 0, 0, b'c']);
        assert_eq!(KeyCodec::from_key_bytes(&enc(&nested)), Some(nested));

        let value = (String::from("v"), vec![9u8], 5u64, String::from("w"));
        assert_eq!(
            ValueCodec::from_value_bytes(&value.to_value_bytes()),
            Some(value)
        );
    }

    #[test]
    fn misc_types() {
        assert_eq!(enc(&false), [0]);
        assert_eq!(bool::from_key_bytes(&[2]), None);
        assert_eq!(enc(&[3u8, 0, 4]), [3, 0, 4]);
        assert_eq!(<[u8; 3]>::from_key_bytes(&[3, 0, 4]), Some([3, 0, 4]));
        assert_eq!(<[u8; 3]>::from_key_bytes(&[3, 0]), None);
        assert_eq!(().to_value_bytes(), Vec::<u8>::new());
        assert_eq!(<()>::from_value_bytes(&[]), Some(()));
        assert_eq!(<()>::from_value_bytes(&[1]), None);
    }
}
