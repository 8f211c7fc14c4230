//! serde support for [`TreeMap`] (the `serde` feature): a map serializes as a serde map of
//! its decoded entries in key order, and deserializes from any serde map.

use std::fmt;
use std::marker::PhantomData;

use ::serde::de::{Deserialize, Deserializer, Error as _, MapAccess, Visitor};
use ::serde::ser::{Serialize, SerializeMap, Serializer};

use super::codec::{KeyCodec, ValueCodec};
use super::map::TreeMap;

/// Serializes the map as a serde map, entries in key order.
///
/// The entries are collected first (decoded copies, as [`TreeMap::iter`] yields them), so that
/// the length given to the serializer is the number of entries written, which formats with a
/// length prefix need even while other threads write. Like iteration, it is not a snapshot:
/// entries written concurrently may or may not be included. Entries whose bytes are not a
/// valid encoding of `K` and `V` are left out, as iteration skips them.
///
/// ```
/// use contree::TreeMap;
///
/// let map: TreeMap<String, u32> = TreeMap::new();
/// map.insert("b", &2).unwrap();
/// map.insert("a", &1).unwrap();
/// assert_eq!(serde_json::to_string(&map).unwrap(), r#"{"a":1,"b":2}"#);
/// ```
impl<K, V> Serialize for TreeMap<K, V>
where
    K: KeyCodec + Serialize,
    V: ValueCodec + Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries: Vec<(K, V)> = self.iter().collect();
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (key, value) in &entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Deserializes a map from a serde map into a `TreeMap` with the default
/// [`Config`](crate::Config). A key that appears twice keeps its last value. An entry the tree
/// refuses (a key or value too long once encoded) fails the deserialization with the tree's
/// [`Error`](crate::Error) as its message.
///
/// ```
/// use contree::TreeMap;
///
/// let map: TreeMap<String, [u32; 2]> = serde_json::from_str(r#"{"b":[2,0],"a":[1,1]}"#).unwrap();
/// assert_eq!(map.first(), Some(("a".to_string(), [1, 1])));
/// assert_eq!(map.len(), 2);
/// ```
impl<'de, K, V> Deserialize<'de> for TreeMap<K, V>
where
    K: KeyCodec + Deserialize<'de>,
    V: ValueCodec + Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

/// Builds a [`TreeMap`] from the entries of a serde map.
struct MapVisitor<K, V>(PhantomData<fn() -> (K, V)>);

impl<'de, K, V> Visitor<'de> for MapVisitor<K, V>
where
    K: KeyCodec + Deserialize<'de>,
    V: ValueCodec + Deserialize<'de>,
{
    type Value = TreeMap<K, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let map = TreeMap::new();
        while let Some((key, value)) = access.next_entry::<K, V>()? {
            map.insert(&key, &value).map_err(A::Error::custom)?;
        }
        Ok(map)
    }
}
