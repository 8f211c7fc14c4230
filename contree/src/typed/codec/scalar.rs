//! Codecs for fixed-size scalars: the integers, `bool`, `char` and `()`.

use super::{take, take_array, KeyCodec, KeyEncode, ValueCodec, ValueEncode};

// ---------------------------------------------------------------------------------------------
// Integers

/// Integers as values: little-endian, fixed width.
macro_rules! le_value_codec {
    ($($t:ty),*) => {$(
        impl ValueEncode for $t {
            fn encode_value(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }

        impl ValueCodec for $t {
            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                take_array(input).map(<$t>::from_le_bytes)
            }
        }
    )*};
}

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
    )*};
}

unsigned_codec!(u8, u16, u32, u64, u128);
le_value_codec!(u8, u16, u32, u64, u128);

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
    )*};
}

signed_codec!(i8 => u8, i16 => u16, i32 => u32, i64 => u64, i128 => u128);
le_value_codec!(i8, i16, i32, i64, i128);

// `usize` and `isize` are stored as 64-bit integers so that the encoding does not depend on the
// target; a stored value that does not fit the target's `usize` decodes to `None`.

macro_rules! widened_codec {
    ($($t:ty => $wide:ty),*) => {$(
        impl KeyEncode for $t {
            fn encode_key(&self, out: &mut Vec<u8>) {
                (*self as $wide).encode_key(out);
            }
        }

        impl KeyCodec for $t {
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                <$t>::try_from(<$wide>::decode_key(input)?).ok()
            }
        }

        impl ValueEncode for $t {
            fn encode_value(&self, out: &mut Vec<u8>) {
                (*self as $wide).encode_value(out);
            }
        }

        impl ValueCodec for $t {
            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                <$t>::try_from(<$wide>::decode_value(input)?).ok()
            }
        }
    )*};
}

widened_codec!(usize => u64, isize => i64);

// ---------------------------------------------------------------------------------------------
// bool, char, ()

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

impl ValueEncode for bool {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.encode_key(out);
    }
}

impl ValueCodec for bool {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        Self::decode_key(input)
    }
}

/// A `char` is its UTF-8 bytes: UTF-8 orders by code point, as `char` does, and no
/// character's encoding is a prefix of another's.
impl KeyEncode for char {
    fn encode_key(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.encode_utf8(&mut [0; 4]).as_bytes());
    }
}

impl KeyCodec for char {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        // The first byte gives the length; `from_utf8` rejects overlong forms, surrogates and
        // code points above U+10FFFF, so exactly one valid character remains.
        let len = match *input.first()? {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return None,
        };
        std::str::from_utf8(take(input, len)?).ok()?.chars().next()
    }
}

impl ValueEncode for char {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.encode_key(out);
    }
}

impl ValueCodec for char {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        Self::decode_key(input)
    }
}

/// The empty value, for a `TreeMap<K, ()>` used as a set.
impl ValueEncode for () {
    fn encode_value(&self, _out: &mut Vec<u8>) {}
}

/// The empty value, for a `TreeMap<K, ()>` used as a set.
impl ValueCodec for () {
    fn decode_value(_input: &mut &[u8]) -> Option<Self> {
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc<K: KeyEncode + ?Sized>(key: &K) -> Vec<u8> {
        key.to_key_bytes()
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
    fn bool_and_unit() {
        assert_eq!(enc(&false), [0]);
        assert_eq!(bool::from_key_bytes(&[2]), None);
        assert_eq!(().to_value_bytes(), Vec::<u8>::new());
        assert_eq!(<()>::from_value_bytes(&[]), Some(()));
        assert_eq!(<()>::from_value_bytes(&[1]), None);
    }

    #[test]
    fn char_layouts_and_rejects() {
        for (c, len) in [('\0', 1), ('a', 1), ('é', 2), ('€', 3), ('\u{10FFFF}', 4)] {
            let bytes = enc(&c);
            assert_eq!(bytes, c.to_string().as_bytes());
            assert_eq!(bytes.len(), len);
            assert_eq!(char::from_key_bytes(&bytes), Some(c));
            assert_eq!(char::from_value_bytes(&c.to_value_bytes()), Some(c));
        }
        // Empty, a continuation byte first, truncated, overlong, a surrogate, above U+10FFFF,
        // an invalid leading byte, trailing bytes.
        for bad in [
            &[][..],
            &[0x80],
            &[0xC3],
            &[0xC0, 0x80],
            &[0xED, 0xA0, 0x80],
            &[0xF4, 0x90, 0x80, 0x80],
            &[0xF8, 0x80, 0x80, 0x80],
            b"ab",
        ] {
            assert_eq!(char::from_key_bytes(bad), None, "{bad:?}");
        }
        let mut input = &[b'a', b'b'][..];
        assert_eq!(char::decode_key(&mut input), Some('a'));
        assert_eq!(input, b"b");
    }
}
