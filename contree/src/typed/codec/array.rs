//! Codecs for fixed-size arrays `[T; N]`: the elements' encodings one after another, the last
//! element in its last-element form when the array itself is last. Arrays compare element by
//! element, so the concatenation of self-delimiting, order-preserving encodings keeps their
//! order.
//!
//! `[u8; N]` is its `N` bytes, as before arrays of other types had codecs (the general rule
//! gives the same bytes); it is read and written with one copy rather than byte by byte. The
//! element type is `'static` so that this special case can be recognised without
//! specialization.

use std::any::Any;

use super::{take_array, KeyCodec, KeyEncode, ValueCodec, ValueEncode};

/// The array's bytes if `T` is `u8`.
fn as_bytes<T: 'static, const N: usize>(array: &[T; N]) -> Option<&[u8; N]> {
    (array as &dyn Any).downcast_ref()
}

/// If `T` is `u8`, reads `N` bytes from the front of `input` with one copy and returns
/// `Some` of the result; returns `None` for any other `T`.
fn decode_bytes<T: 'static, const N: usize>(input: &mut &[u8]) -> Option<Option<[T; N]>> {
    let mut slot: Option<[T; N]> = None;
    let bytes = (&mut slot as &mut dyn Any).downcast_mut::<Option<[u8; N]>>()?;
    *bytes = take_array(input);
    Some(slot)
}

/// Builds an array from `decode(0)`, `decode(1)`, ...; `None` as soon as one fails.
fn decode_each<T, const N: usize>(mut decode: impl FnMut(usize) -> Option<T>) -> Option<[T; N]> {
    let mut failed = false;
    let items: [Option<T>; N] = std::array::from_fn(|i| {
        if failed {
            return None;
        }
        let item = decode(i);
        failed = item.is_none();
        item
    });
    // Every element is `Some` when nothing failed.
    (!failed).then(|| items.map(|item| item.expect("decoded")))
}

/// The elements' encodings one after another.
///
/// ```
/// use contree::{KeyCodec, KeyEncode};
///
/// assert_eq!([1u32, 2].to_key_bytes(), [0, 0, 0, 1, 0, 0, 0, 2]);
/// assert_eq!([7u8, 0, 9].to_key_bytes(), [7, 0, 9]);
/// // Strings inside the array are terminated, except the last.
/// let names = [String::from("a"), String::from("b")];
/// assert_eq!(names.to_key_bytes(), [b'a', 0, 0, b'b']);
/// assert_eq!(<[String; 2]>::from_key_bytes(&names.to_key_bytes()), Some(names));
/// ```
impl<T: KeyEncode + 'static, const N: usize> KeyEncode for [T; N] {
    fn encode_key(&self, out: &mut Vec<u8>) {
        if let Some(bytes) = as_bytes(self) {
            out.extend_from_slice(bytes);
            return;
        }
        for item in self {
            item.encode_key(out);
        }
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        if let Some(bytes) = as_bytes(self) {
            out.extend_from_slice(bytes);
            return;
        }
        if let Some((last, init)) = self.split_last() {
            for item in init {
                item.encode_key(out);
            }
            last.encode_key_last(out);
        }
    }
}

impl<T: KeyCodec + 'static, const N: usize> KeyCodec for [T; N] {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        if let Some(array) = decode_bytes(input) {
            return array;
        }
        decode_each(|_| T::decode_key(input))
    }

    fn decode_key_last(mut input: &[u8]) -> Option<Self> {
        if let Some(array) = decode_bytes(&mut input) {
            return array.filter(|_| input.is_empty());
        }
        let array = decode_each(|i| {
            if i + 1 == N {
                T::decode_key_last(std::mem::take(&mut input))
            } else {
                T::decode_key(&mut input)
            }
        })?;
        // Only an empty array leaves input to check.
        input.is_empty().then_some(array)
    }
}

/// The elements' encodings one after another.
///
/// ```
/// use contree::{ValueCodec, ValueEncode};
///
/// assert_eq!([1u16, 2].to_value_bytes(), [1, 0, 2, 0]);
/// let names = [String::from("a"), String::from("bc")];
/// assert_eq!(names.to_value_bytes(), [1, b'a', b'b', b'c']);
/// assert_eq!(<[String; 2]>::from_value_bytes(&names.to_value_bytes()), Some(names));
/// ```
impl<T: ValueEncode + 'static, const N: usize> ValueEncode for [T; N] {
    fn encode_value(&self, out: &mut Vec<u8>) {
        if let Some(bytes) = as_bytes(self) {
            out.extend_from_slice(bytes);
            return;
        }
        for item in self {
            item.encode_value(out);
        }
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        if let Some(bytes) = as_bytes(self) {
            out.extend_from_slice(bytes);
            return;
        }
        if let Some((last, init)) = self.split_last() {
            for item in init {
                item.encode_value(out);
            }
            last.encode_value_last(out);
        }
    }
}

impl<T: ValueCodec + 'static, const N: usize> ValueCodec for [T; N] {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        if let Some(array) = decode_bytes(input) {
            return array;
        }
        decode_each(|_| T::decode_value(input))
    }

    fn decode_value_last(mut input: &[u8]) -> Option<Self> {
        if let Some(array) = decode_bytes(&mut input) {
            return array.filter(|_| input.is_empty());
        }
        let array = decode_each(|i| {
            if i + 1 == N {
                T::decode_value_last(std::mem::take(&mut input))
            } else {
                T::decode_value(&mut input)
            }
        })?;
        input.is_empty().then_some(array)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_arrays_are_their_bytes() {
        assert_eq!([3u8, 0, 4].to_key_bytes(), [3, 0, 4]);
        assert_eq!(<[u8; 3]>::from_key_bytes(&[3, 0, 4]), Some([3, 0, 4]));
        assert_eq!(<[u8; 3]>::from_key_bytes(&[3, 0]), None);
        assert_eq!(<[u8; 3]>::from_key_bytes(&[3, 0, 4, 5]), None);
        assert_eq!([3u8, 0].to_value_bytes(), [3, 0]);
        assert_eq!(<[u8; 2]>::from_value_bytes(&[3, 0]), Some([3, 0]));
        let mut input = &[1u8, 2, 3][..];
        assert_eq!(<[u8; 2]>::decode_key(&mut input), Some([1, 2]));
        assert_eq!(input, [3]);
        // The general rule gives the same bytes.
        let mut general = Vec::new();
        for b in [3u8, 0, 4] {
            b.encode_key(&mut general);
        }
        assert_eq!(general, [3, 0, 4]);
    }

    #[test]
    fn arrays_of_other_types() {
        assert_eq!([1u16, 2].to_key_bytes(), [0, 1, 0, 2]);
        assert_eq!(<[u16; 2]>::from_key_bytes(&[0, 1, 0, 2]), Some([1, 2]));
        assert_eq!(<[u16; 2]>::from_key_bytes(&[0, 1, 0]), None);
        assert_eq!(<[u16; 2]>::from_key_bytes(&[0, 1, 0, 2, 0]), None);
        let strings = [String::from("a"), String::new(), String::from("\0")];
        let bytes = strings.to_key_bytes();
        assert_eq!(bytes, [b'a', 0, 0, 0, 0, 0]);
        assert_eq!(<[String; 3]>::from_key_bytes(&bytes), Some(strings.clone()));
        let value = strings.to_value_bytes();
        assert_eq!(value, [1, b'a', 0, 0]);
        assert_eq!(<[String; 3]>::from_value_bytes(&value), Some(strings));
        // A failure in the middle stops the decoding.
        assert_eq!(<[bool; 3]>::from_key_bytes(&[0, 2, 1]), None);
    }

    #[test]
    fn empty_arrays() {
        assert_eq!(<[u32; 0]>::default().to_key_bytes(), Vec::<u8>::new());
        assert_eq!(<[u32; 0]>::from_key_bytes(&[]), Some([]));
        assert_eq!(<[u32; 0]>::from_key_bytes(&[1]), None);
        assert_eq!(<[String; 0]>::from_value_bytes(&[]), Some([]));
        assert_eq!(<[String; 0]>::from_value_bytes(&[1]), None);
    }
}
