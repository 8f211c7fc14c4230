//! Codecs for variable-length byte strings: `Vec<u8>`, `[u8]`, `String` and `str`.
//!
//! As keys they are escaped and terminated where something may follow them, and written as
//! they are where nothing does; as values they are length-prefixed (LEB128) where something
//! may follow them, and written as they are where nothing does.

use super::{take, take_array, KeyCodec, KeyEncode, ValueCodec, ValueEncode};

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

// ---------------------------------------------------------------------------------------------
// Byte strings

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

impl ValueEncode for [u8] {
    fn encode_value(&self, out: &mut Vec<u8>) {
        encode_prefixed(self, out);
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
}

impl ValueEncode for Vec<u8> {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.as_slice().encode_value(out);
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        self.as_slice().encode_value_last(out);
    }
}

impl ValueCodec for Vec<u8> {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        decode_prefixed(input).map(<[u8]>::to_vec)
    }

    fn decode_value_last(input: &[u8]) -> Option<Self> {
        Some(input.to_vec())
    }
}

// ---------------------------------------------------------------------------------------------
// Strings: their UTF-8 bytes, as byte strings

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

impl ValueEncode for str {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_value(out);
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_value_last(out);
    }
}

impl ValueEncode for String {
    fn encode_value(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_value(out);
    }

    fn encode_value_last(&self, out: &mut Vec<u8>) {
        self.as_bytes().encode_value_last(out);
    }
}

impl ValueCodec for String {
    fn decode_value(input: &mut &[u8]) -> Option<Self> {
        std::str::from_utf8(decode_prefixed(input)?)
            .ok()
            .map(str::to_owned)
    }

    fn decode_value_last(input: &[u8]) -> Option<Self> {
        std::str::from_utf8(input).ok().map(str::to_owned)
    }
}

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
    fn borrowed_forms_encode_as_owned() {
        let owned = String::from("a\0b");
        assert_eq!(owned.as_str().to_value_bytes(), owned.to_value_bytes());
        let mut a = Vec::new();
        let mut b = Vec::new();
        owned.as_str().encode_value(&mut a);
        owned.encode_value(&mut b);
        assert_eq!(a, b);
        assert_eq!(a, [3, b'a', 0, b'b']);
        let bytes = vec![0u8, 1];
        assert_eq!(bytes.as_slice().to_value_bytes(), bytes.to_value_bytes());
    }
}
