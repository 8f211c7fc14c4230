//! Key and value encoding: how an item id becomes the key bytes every peer receives.
//!
//! - [`KeyKind::Int`]: the id as an 8-byte big-endian integer, so byte order is numeric order
//!   and adjacent ids sit in the same leaf.
//! - [`KeyKind::Str`]: YCSB-style `"user"` followed by the decimal FNV-1a hash of the id, a
//!   variable-length string (about 20 to 24 bytes) whose order is unrelated to the id.
//!
//! Values are `value_size` bytes derived from the id (and an update counter), so a reader can
//! tell whose value it got without any allocation.

use crate::generators::rng::fnv1a64;

/// How ids are turned into keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyKind {
    /// 8-byte big-endian integers.
    Int,
    /// "user" plus the decimal hash of the id (YCSB).
    Str,
}

impl KeyKind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeyKind::Int => "int",
            KeyKind::Str => "str",
        }
    }
}

/// A key on the stack: long enough for either encoding.
#[derive(Debug, Clone, Copy)]
pub struct KeyBuf {
    bytes: [u8; 32],
    len: usize,
}

impl KeyBuf {
    /// Encodes `id` under `kind`.
    #[inline]
    pub fn new(kind: KeyKind, id: u64) -> Self {
        let mut k = KeyBuf {
            bytes: [0; 32],
            len: 0,
        };
        match kind {
            KeyKind::Int => {
                k.bytes[..8].copy_from_slice(&id.to_be_bytes());
                k.len = 8;
            }
            KeyKind::Str => {
                k.bytes[..4].copy_from_slice(b"user");
                let mut digits = [0u8; 20];
                let mut n = fnv1a64(id);
                let mut i = digits.len();
                loop {
                    i -= 1;
                    digits[i] = b'0' + (n % 10) as u8;
                    n /= 10;
                    if n == 0 {
                        break;
                    }
                }
                let d = &digits[i..];
                k.bytes[4..4 + d.len()].copy_from_slice(d);
                k.len = 4 + d.len();
            }
        }
        k
    }

    /// An integer key from a raw `u64` (big-endian).
    #[inline]
    pub fn int(id: u64) -> Self {
        Self::new(KeyKind::Int, id)
    }

    /// The key bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Fills `out` (its length is the value size) with bytes derived from `id` and `version`.
#[inline]
pub fn fill_value(out: &mut [u8], id: u64, version: u64) {
    let word = (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ version).to_le_bytes();
    for (i, b) in out.iter_mut().enumerate() {
        *b = word[i % 8];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_keys_sort_like_ids() {
        let a = KeyBuf::int(5);
        let b = KeyBuf::int(300);
        assert!(a.as_bytes() < b.as_bytes());
        assert_eq!(a.as_bytes().len(), 8);
    }

    #[test]
    fn str_keys_look_like_ycsb() {
        let k = KeyBuf::new(KeyKind::Str, 42);
        let s = std::str::from_utf8(k.as_bytes()).unwrap();
        assert!(s.starts_with("user"));
        assert!(s[4..].bytes().all(|c| c.is_ascii_digit()));
        assert_ne!(k.as_bytes(), KeyBuf::new(KeyKind::Str, 43).as_bytes());
    }
}
