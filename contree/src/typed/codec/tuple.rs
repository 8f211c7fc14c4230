//! Codecs for tuples of 2 to 8 codecs: the elements' encodings one after another. Tuples
//! compare element by element, so the concatenation of self-delimiting, order-preserving
//! encodings keeps their order; the last element uses its last-element form when the tuple
//! itself is last.

use super::{KeyCodec, KeyEncode, ValueCodec, ValueEncode};

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

        impl<$($name: ValueEncode,)+ $last: ValueEncode> ValueEncode for ($($name,)+ $last,) {
            fn encode_value(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_value(out);)+
                self.$last_idx.encode_value(out);
            }

            fn encode_value_last(&self, out: &mut Vec<u8>) {
                $(self.$idx.encode_value(out);)+
                self.$last_idx.encode_value_last(out);
            }
        }

        impl<$($name: ValueCodec,)+ $last: ValueCodec> ValueCodec for ($($name,)+ $last,) {
            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                Some(($($name::decode_value(input)?,)+ $last::decode_value(input)?,))
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
tuple_codec!(A 0, B 1, C 2, D 3; E 4);
tuple_codec!(A 0, B 1, C 2, D 3, E 4; F 5);
tuple_codec!(A 0, B 1, C 2, D 3, E 4, F 5; G 6);
tuple_codec!(A 0, B 1, C 2, D 3, E 4, F 5, G 6; H 7);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuples() {
        let key = (String::from("x"), -1i32, vec![0u8, 1], 7u8);
        let bytes = key.to_key_bytes();
        assert_eq!(KeyCodec::from_key_bytes(&bytes), Some(key.clone()));
        assert_eq!(
            <(String, i32, Vec<u8>, u8)>::from_key_bytes(&bytes[..bytes.len() - 1]),
            None
        );
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(<(String, i32, Vec<u8>, u8)>::from_key_bytes(&longer), None);

        // The last element is written raw and runs to the end.
        assert_eq!((1u8, String::from("ab")).to_key_bytes(), [1, b'a', b'b']);
        assert_eq!(
            <(u8, String)>::from_key_bytes(&[1, b'a', b'b']),
            Some((1, "ab".into()))
        );

        // Nested tuples.
        let nested = ((String::from("a"), String::from("b")), String::from("c"));
        assert_eq!(nested.to_key_bytes(), [b'a', 0, 0, b'b', 0, 0, b'c']);
        assert_eq!(
            KeyCodec::from_key_bytes(&nested.to_key_bytes()),
            Some(nested)
        );

        let value = (String::from("v"), vec![9u8], 5u64, String::from("w"));
        assert_eq!(
            ValueCodec::from_value_bytes(&value.to_value_bytes()),
            Some(value)
        );
    }

    #[test]
    fn eight_elements() {
        let key = (
            1u8,
            'b',
            String::from("c"),
            Some(4u16),
            [5u8; 2],
            -6i8,
            true,
            "h".to_string(),
        );
        let bytes = key.to_key_bytes();
        assert_eq!(bytes, [1, b'b', b'c', 0, 0, 1, 0, 4, 5, 5, 0x7A, 1, b'h']);
        assert_eq!(KeyCodec::from_key_bytes(&bytes), Some(key.clone()));
        let value_bytes = key.to_value_bytes();
        assert_eq!(
            value_bytes,
            [1, b'b', 1, b'c', 1, 4, 0, 5, 5, 0xFA, 1, b'h']
        );
        assert_eq!(ValueCodec::from_value_bytes(&value_bytes), Some(key));
    }
}
