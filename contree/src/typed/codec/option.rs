//! Codecs for `Option<T>`: a tag byte, `0x00` for `None` and `0x01` for `Some`, then the
//! encoding of the value. `None` sorts before every `Some`, as in `Option`'s `Ord`, and the
//! value after `0x01` keeps its order and its last-element form.

use super::{take_array, KeyCodec, KeyEncode, ValueCodec, ValueEncode};

const NONE: u8 = 0x00;
const SOME: u8 = 0x01;

/// Reads the tag byte: `Some(false)` for `None`, `Some(true)` for `Some`, `None` for anything
/// else.
fn decode_tag(input: &mut &[u8]) -> Option<bool> {
    match take_array::<1>(input)? {
        [NONE] => Some(false),
        [SOME] => Some(true),
        _ => None,
    }
}

/// `None` as `0x00`, `Some(t)` as `0x01` and `t`'s encoding, so that `None` sorts first.
///
/// ```
/// use contree::KeyEncode;
///
/// assert_eq!(None::<u16>.to_key_bytes(), [0x00]);
/// assert_eq!(Some(0u16).to_key_bytes(), [0x01, 0x00, 0x00]);
/// assert!(None::<String>.to_key_bytes() < Some(String::new()).to_key_bytes());
/// ```
impl<T: KeyEncode> KeyEncode for Option<T> {
    fn encode_key(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(NONE),
            Some(value) => {
                out.push(SOME);
                value.encode_key(out);
            }
        }
    }

    fn encode_key_last(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(NONE),
            Some(value) => {
                out.push(SOME);
                value.encode_key_last(out);
            }
        }
    }
}

impl<T: KeyCodec> KeyCodec for Option<T> {
    fn decode_key(input: &mut &[u8]) -> Option<Self> {
        if decode_tag(input)? {
            T::decode_key(input).map(Some)
        } else {
            Some(None)
        }
    }

    fn decode_key_last(mut input: &[u8]) -> Option<Self> {
        if decode_tag(&mut input)? {
            T::decode_key_last(input).map(Some)
        } else {
            input.is_empty().then_some(None)
        }
    }
}

/// `None` as `0x00`, `Some(t)` as `0x01` and `t`'s encoding.
///
/// ```
/// use contree::{ValueCodec, ValueEncode};
///
/// assert_eq!(Some("v").to_value_bytes(), [0x01, b'v']);
/// assert_eq!(Option::<String>::from_value_bytes(&[0x00]), Some(None));
/// ```
impl<T: ValueEncode> ValueEncode for Option<T> {
    fn encode_value(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(NONE),
            Some(value) => {
                out.push(SOME);
                value.encode_value(out);
            }
        }
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(NONE),
            Some(value) => {
                out.push(SOME);
                value.encode_value_last(out);
            }
        }
    }
}

impl<T: ValueCodec> ValueCodec for Option<T> {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        if decode_tag(input)? {
            T::decode_value(input).map(Some)
        } else {
            Some(None)
        }
    }

    fn decode_value_last(mut input: &[u8]) -> Option<Self> {
        if decode_tag(&mut input)? {
            T::decode_value_last(input).map(Some)
        } else {
            input.is_empty().then_some(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(None::<String>.to_key_bytes(), [0]);
        assert_eq!(Some(String::from("ab")).to_key_bytes(), [1, b'a', b'b']);
        assert_eq!(
            (Some(String::from("a")), 1u8).to_key_bytes(),
            [1, b'a', 0, 0, 1]
        );
        assert_eq!((None::<String>, 1u8).to_key_bytes(), [0, 1]);
        assert_eq!(Some(Some(3u8)).to_key_bytes(), [1, 1, 3]);
        assert_eq!(Some(String::from("ab")).to_value_bytes(), [1, b'a', b'b']);
        assert_eq!(
            (Some(String::from("a")), 1u8).to_value_bytes(),
            [1, 1, b'a', 1]
        );
    }

    #[test]
    fn rejects() {
        // Unknown tag, missing value, trailing bytes after `None`.
        for bad in [&[2u8][..], &[1], &[0, 0], &[]] {
            assert_eq!(Option::<u8>::from_key_bytes(bad), None, "{bad:?}");
            assert_eq!(Option::<u8>::from_value_bytes(bad), None, "{bad:?}");
        }
        assert_eq!(Option::<Vec<u8>>::from_key_bytes(&[1]), Some(Some(vec![])));
        assert_eq!(Option::<Vec<u8>>::from_key_bytes(&[0]), Some(None));
    }
}
