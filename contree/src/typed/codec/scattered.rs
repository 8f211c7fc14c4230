//! [`Scattered`]: byte reordering (`hotspots-hot-leaves.md`, "Byte-Reordering") as a key
//! codec, for integer keys that arrive in order and are never scanned by range.

use super::{take_array, KeyCodec, KeyEncode, ValueCodec, ValueEncode};
use std::cmp::Ordering;

/// An unsigned integer key whose encoding spreads consecutive values over the key space, so
/// that writers inserting increasing ids (auto-increment keys, sequence numbers) stop meeting
/// on the tree's rightmost leaf.
///
/// The encoding is the big-endian one of the integer with its most and least significant
/// bytes swapped: consecutive ids differ in the first byte, so they land in up to 256
/// regions of the tree, and each region grows at its own end. It is a bijection and costs a
/// byte swap.
///
/// **Order is lost.** `Scattered` orders by its encoding (as every key codec must), which is
/// not the order of the numbers: `Scattered(1) > Scattered(256)`. Point operations (`get`,
/// `insert`, `remove`, the atomic ones) work as for any key; range calls, `first`/`last`
/// and iteration visit keys in the scattered order, which means nothing for the numbers.
/// Use plain integer keys where you scan by range; the tree's leaf combining serves
/// concurrent appends on them ([`Config::combining`](crate::Config::combining)).
///
/// ```
/// use contree::{Scattered, TreeMap};
///
/// let map: TreeMap<Scattered<u64>, u64> = TreeMap::new();
/// for id in 0..1000u64 {
///     map.insert(&Scattered(id), &(id * 2)).unwrap();
/// }
/// assert_eq!(map.get(&Scattered(500)), Some(1000));
/// assert_eq!(map.len(), 1000);
/// // Consecutive ids are far apart in the map's order.
/// assert!(Scattered(1u64) > Scattered(256));
/// let first: Vec<u64> = map.iter().take(3).map(|(k, _)| k.0).collect();
/// assert_eq!(first, [0, 256, 512]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scattered<T>(pub T);

impl<T> From<T> for Scattered<T> {
    fn from(value: T) -> Self {
        Scattered(value)
    }
}

macro_rules! scattered_codec {
    ($($t:ty),*) => {$(
        impl Scattered<$t> {
            /// The key bytes: big-endian with the first and last byte swapped.
            fn scattered_bytes(&self) -> [u8; std::mem::size_of::<$t>()] {
                let mut bytes = self.0.to_be_bytes();
                bytes.swap(0, std::mem::size_of::<$t>() - 1);
                bytes
            }
        }

        impl Ord for Scattered<$t> {
            /// The order of the encodings (not of the numbers; see the type's doc).
            fn cmp(&self, other: &Self) -> Ordering {
                self.scattered_bytes().cmp(&other.scattered_bytes())
            }
        }

        impl PartialOrd for Scattered<$t> {
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(self.cmp(other))
            }
        }

        impl KeyEncode for Scattered<$t> {
            fn encode_key(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.scattered_bytes());
            }
        }

        impl KeyCodec for Scattered<$t> {
            fn decode_key(input: &mut &[u8]) -> Option<Self> {
                let mut bytes: [u8; std::mem::size_of::<$t>()] = take_array(input)?;
                bytes.swap(0, std::mem::size_of::<$t>() - 1);
                Some(Scattered(<$t>::from_be_bytes(bytes)))
            }
        }

        /// As a value, the integer's own encoding.
        impl ValueEncode for Scattered<$t> {
            fn encode_value(&self, out: &mut Vec<u8>) {
                self.0.encode_value(out);
            }
        }

        impl ValueCodec for Scattered<$t> {
            fn decode_value(input: &mut &[u8]) -> Option<Self> {
                <$t>::decode_value(input).map(Scattered)
            }
        }
    )*};
}

scattered_codec!(u16, u32, u64, u128);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed::codec::KeyCodec;

    #[test]
    fn layout_round_trip_and_order_of_encodings() {
        assert_eq!(
            Scattered(0x0102_0304_0506_0708u64).to_key_bytes(),
            [8, 2, 3, 4, 5, 6, 7, 1]
        );
        assert_eq!(Scattered(0x0102u16).to_key_bytes(), [2, 1]);
        let mut values: Vec<u64> = (0..600).chain([u64::MAX, u64::MAX - 1, 1 << 56]).collect();
        values.extend((0..64).map(|i| 0x9E37_79B9_7F4A_7C15u64.rotate_left(i)));
        for &a in &values {
            let ka = Scattered(a).to_key_bytes();
            assert_eq!(Scattered::<u64>::from_key_bytes(&ka), Some(Scattered(a)));
            assert_eq!(
                Scattered::<u64>::from_value_bytes(&Scattered(a).to_value_bytes()),
                Some(Scattered(a))
            );
            for &b in &values {
                let kb = Scattered(b).to_key_bytes();
                assert_eq!(Scattered(a).cmp(&Scattered(b)), ka.cmp(&kb), "{a} {b}");
            }
        }
        // Wrong lengths decode to None; a tuple stops after the fixed width.
        assert_eq!(Scattered::<u32>::from_key_bytes(&[1, 2, 3]), None);
        assert_eq!(Scattered::<u32>::from_key_bytes(&[1, 2, 3, 4, 5]), None);
        let pair = (Scattered(7u32), 9u8).to_key_bytes();
        assert_eq!(
            <(Scattered<u32>, u8)>::from_key_bytes(&pair),
            Some((Scattered(7), 9))
        );
    }

    /// Consecutive ids spread over the first byte: 256 of them cover every first byte.
    #[test]
    fn consecutive_ids_spread() {
        let firsts: std::collections::BTreeSet<u8> = (1000u64..1256)
            .map(|id| Scattered(id).to_key_bytes()[0])
            .collect();
        assert_eq!(firsts.len(), 256);
    }
}
