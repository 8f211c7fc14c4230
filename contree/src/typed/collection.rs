//! The std collection surface of [`TreeMap`], on decoded keys and values: pops, `retain`,
//! `remove_range`, `clear`, `keys`, `values`, `scan_prefix`, the batches, and the std traits
//! [`FromIterator`], [`Extend`] and [`IntoIterator`] for `&TreeMap`. Each is the tree's
//! operation of the same name (see `ops`) with the codecs around it, and has its
//! concurrency: see the tree's method for what concurrent writers may see.
//!
//! Entries whose bytes are not a valid encoding (written through the bytes API) are skipped
//! as by [`TreeMap::iter`]: pops pass over them, `retain` keeps them; `remove_range` and
//! `clear` remove them with the rest of their range.

use std::borrow::Borrow;
use std::panic::{RefUnwindSafe, UnwindSafe};

use super::codec::{KeyCodec, KeyEncode, ValueCodec};
use super::map::{decode_entry, encoded_range, with_key};
use super::{TreeMap, TypedKeyRange, TypedRange};
use crate::{Error, Tree};

impl<K: KeyCodec, V: ValueCodec> TreeMap<K, V> {
    /// Removes and returns the entry with the smallest key, or `None` if there is none.
    /// Under concurrency each entry is popped by exactly one caller (see
    /// [`Tree::pop_first`]).
    ///
    /// An entry whose bytes do not decode (written through the bytes API) is passed over and
    /// left in the tree, as [`iter`](Self::iter) skips it: `pop_first` returns the first
    /// entry that decodes, and `None` when only undecodable entries are left (while
    /// [`len`](Self::len), which counts them, is not 0). Remove them with
    /// [`clear`](Self::clear), [`remove_range`](Self::remove_range) or through
    /// [`as_tree`](Self::as_tree).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let jobs: TreeMap<u64, String> = TreeMap::new();
    /// jobs.insert(&2, "second").unwrap();
    /// jobs.insert(&1, "first").unwrap();
    /// assert_eq!(jobs.pop_first(), Some((1, "first".to_string())));
    /// assert_eq!(jobs.pop_first(), Some((2, "second".to_string())));
    /// assert_eq!(jobs.pop_first(), None);
    /// ```
    pub fn pop_first(&self) -> Option<(K, V)> {
        self.pop_end(true)
    }

    /// Removes and returns the entry with the largest key, or `None` if there is none; each
    /// entry is popped by exactly one caller, and undecodable entries are passed over, as
    /// with [`pop_first`](Self::pop_first).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<u8, u8> = (1..=3).map(|i| (i, i * 10)).collect();
    /// assert_eq!(m.pop_last(), Some((3, 30)));
    /// assert_eq!(m.len(), 2);
    /// ```
    pub fn pop_last(&self) -> Option<(K, V)> {
        self.pop_end(false)
    }

    /// The first decodable entry at one end, popped by the tree's pop (see
    /// `Tree::pop_end_where`), which passes over entries that do not decode.
    fn pop_end(&self, first: bool) -> Option<(K, V)> {
        let entry = self
            .as_tree()
            .pop_end_where(first, |k, v| decode_entry::<K, V>((k, v)).is_some())?;
        decode_entry(entry)
    }

    /// Keeps the entries for which `f` returns `true` and removes the others. `f` holds no
    /// latch (it may use the map); a removal happens only if the value is still the one `f`
    /// judged (see [`Tree::retain`]). Entries that do not decode are kept.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<u32, u32> = (0..10).map(|i| (i, i * i)).collect();
    /// m.retain(|_, sq| sq % 2 == 0);
    /// assert_eq!(m.keys().collect::<Vec<_>>(), [0, 2, 4, 6, 8]);
    /// ```
    pub fn retain(&self, mut f: impl FnMut(&K, &V) -> bool) {
        self.as_tree()
            .retain(|kb, vb| decode_entry::<K, V>((kb, vb)).is_none_or(|(k, v)| f(&k, &v)));
    }

    /// Removes the entries whose keys lie in `range` (the forms
    /// [`range`](Self::range) takes); returns how many this call removed. Not atomic as a
    /// whole: see [`Tree::remove_range`]. Entries in the range whose bytes do not decode
    /// (written through the bytes API) are removed and counted too.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<String, u8> = TreeMap::new();
    /// for w in ["ant", "bee", "cat", "dog"] {
    ///     m.insert(w, &0).unwrap();
    /// }
    /// assert_eq!(m.remove_range("b".."d"), 2);
    /// assert_eq!(m.keys().collect::<Vec<_>>(), ["ant", "dog"]);
    /// ```
    pub fn remove_range<Q, R>(&self, range: R) -> usize
    where
        Q: KeyEncode + ?Sized,
        R: TypedKeyRange<K, Q>,
    {
        encoded_range(&range).map_or(0, |bounds| self.as_tree().remove_range(bounds))
    }

    /// Removes every entry (see [`Tree::clear`]).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<u8, u8> = [(1, 1), (2, 2)].into_iter().collect();
    /// m.clear();
    /// assert!(m.is_empty());
    /// ```
    pub fn clear(&self) {
        self.as_tree().clear();
    }

    /// The keys in order (double-ended).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<i32, ()> = [(3, ()), (-1, ()), (2, ())].into_iter().collect();
    /// assert_eq!(m.keys().collect::<Vec<_>>(), [-1, 2, 3]);
    /// assert_eq!(m.keys().next_back(), Some(3));
    /// ```
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = K> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values in key order (double-ended).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
    /// assert_eq!(m.values().collect::<String>(), "ab");
    /// ```
    pub fn values(&self) -> impl DoubleEndedIterator<Item = V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The entries whose stored key starts with the stored form of `prefix` (double-ended).
    ///
    /// For `String` and `Vec<u8>` keys that is a string or byte prefix (`"ap"` finds
    /// `"apple"` and `"apricot"`); for a tuple whose last element is a string, pass a tuple
    /// to match the leading elements exactly and the last by prefix. For fixed-width keys
    /// (integers) a prefix of full width is just that one key.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<String, u32> = TreeMap::new();
    /// for (i, w) in ["apple", "apricot", "banana"].iter().enumerate() {
    ///     m.insert(*w, &(i as u32)).unwrap();
    /// }
    /// let ap: Vec<String> = m.scan_prefix("ap").map(|(k, _)| k).collect();
    /// assert_eq!(ap, ["apple", "apricot"]);
    ///
    /// let files: TreeMap<(u32, String), ()> = TreeMap::new();
    /// files.insert(&(1, "src/lib.rs".to_string()), &()).unwrap();
    /// files.insert(&(1, "tests/a.rs".to_string()), &()).unwrap();
    /// files.insert(&(2, "src/main.rs".to_string()), &()).unwrap();
    /// assert_eq!(files.scan_prefix(&(1, "src/".to_string())).count(), 1);
    /// ```
    pub fn scan_prefix<Q>(&self, prefix: &Q) -> TypedRange<'_, K, V>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        TypedRange::new(Some(with_key(prefix, |p| self.as_tree().scan_prefix(p))))
    }

    /// Inserts all `entries`; returns how many keys were new. All keys and values are
    /// encoded and checked first and the batch is written in key order; on an error the
    /// map is unchanged (see [`Tree::insert_many`] for the exact semantics).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<u32, String> = TreeMap::new();
    /// let n = m.insert_many((0..100).map(|i| (i, i.to_string()))).unwrap();
    /// assert_eq!(n, 100);
    /// assert_eq!(m.get(&42).as_deref(), Some("42"));
    /// ```
    pub fn insert_many(&self, entries: impl IntoIterator<Item = (K, V)>) -> Result<usize, Error> {
        self.as_tree().insert_many(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_key_bytes(), v.to_value_bytes())),
        )
    }

    /// The values of `keys`, in the caller's order (`None` for an absent key); looked up in
    /// key order for locality (see [`Tree::get_many`]).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let m: TreeMap<String, u32> = TreeMap::new();
    /// m.insert("b", &2).unwrap();
    /// m.insert("a", &1).unwrap();
    /// assert_eq!(m.get_many(["b", "z", "a"]), [Some(2), None, Some(1)]);
    /// ```
    pub fn get_many<'q, Q>(&self, keys: impl IntoIterator<Item = &'q Q>) -> Vec<Option<V>>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized + 'q,
    {
        self.as_tree()
            .get_many(keys.into_iter().map(KeyEncode::to_key_bytes))
            .into_iter()
            .map(|v| v.and_then(|v| V::decode_value_last(&v)))
            .collect()
    }
}

/// Builds a map with the default [`Config`](crate::Config) from `(key, value)` pairs
/// (through [`insert_many`](TreeMap::insert_many): a key given twice gets its last value).
///
/// # Panics
///
/// If the tree refuses an entry (an encoding over the size limits), as std's collections
/// panic on capacity overflow; [`TreeMap::insert_many`] returns the
/// [`Error`](crate::Error) instead.
///
/// ```
/// use contree::TreeMap;
///
/// let m: TreeMap<String, u32> = [("b".to_string(), 2), ("a".to_string(), 1)]
///     .into_iter()
///     .collect();
/// assert_eq!(m.first(), Some(("a".to_string(), 1)));
/// assert_eq!(m.len(), 2);
/// ```
impl<K: KeyCodec, V: ValueCodec> FromIterator<(K, V)> for TreeMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = TreeMap::new();
        map.extend(entries);
        map
    }
}

/// Inserts (or replaces) `(key, value)` pairs through
/// [`insert_many`](TreeMap::insert_many): the batch is written in key order, and a key
/// given twice gets its last value.
///
/// # Panics
///
/// If the tree refuses an entry (an encoding over the size limits, or the memory budget
/// exhausted), as std's collections panic on capacity overflow; the map is left as it was
/// (see [`Tree::insert_many`]). [`TreeMap::insert_many`] returns the
/// [`Error`](crate::Error) instead.
///
/// ```
/// use contree::TreeMap;
///
/// let mut m: TreeMap<u32, String> = TreeMap::new();
/// m.extend([(1, "one".to_string()), (2, "two".to_string())]);
/// m.extend((3..5).map(|i| (i, i.to_string())));
/// assert_eq!(m.len(), 4);
/// ```
impl<K: KeyCodec, V: ValueCodec> Extend<(K, V)> for TreeMap<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        if let Err(e) = self.insert_many(entries) {
            panic!(
                "contree: TreeMap::extend or collect: {e} (use TreeMap::insert_many to handle it)"
            );
        }
    }
}

/// Inserts (or replaces) borrowed `(key, value)` pairs, such as another map's entries by
/// reference; as `Extend<(K, V)>`, and it panics in the same cases.
///
/// ```
/// use contree::TreeMap;
/// use std::collections::BTreeMap;
///
/// let source = BTreeMap::from([("a".to_string(), 1u8), ("b".to_string(), 2)]);
/// let mut m: TreeMap<String, u8> = TreeMap::new();
/// m.extend(&source);
/// assert_eq!(m.get("b"), Some(2));
/// ```
impl<'a, K: KeyCodec, V: ValueCodec> Extend<(&'a K, &'a V)> for TreeMap<K, V> {
    fn extend<I: IntoIterator<Item = (&'a K, &'a V)>>(&mut self, entries: I) {
        let encoded = entries
            .into_iter()
            .map(|(k, v)| (k.to_key_bytes(), v.to_value_bytes()));
        if let Err(e) = self.as_tree().insert_many(encoded) {
            panic!("contree: TreeMap::extend: {e} (use TreeMap::insert_many to handle it)");
        }
    }
}

/// Iterates over the decoded entries in key order, as [`TreeMap::iter`].
///
/// ```
/// use contree::TreeMap;
///
/// let m: TreeMap<u8, char> = [(2, 'b'), (1, 'a')].into_iter().collect();
/// let mut seen = Vec::new();
/// for (k, v) in &m {
///     seen.push((k, v));
/// }
/// assert_eq!(seen, [(1, 'a'), (2, 'b')]);
/// ```
impl<'m, K: KeyCodec, V: ValueCodec> IntoIterator for &'m TreeMap<K, V> {
    type Item = (K, V);
    type IntoIter = TypedRange<'m, K, V>;

    fn into_iter(self) -> TypedRange<'m, K, V> {
        self.iter()
    }
}

// A `TreeMap` is a `Tree` and a marker: it has the tree's thread and unwind safety.
const _: () = {
    const fn assert_traits<T: Send + Sync + UnwindSafe + RefUnwindSafe>() {}
    assert_traits::<TreeMap<u64, String>>();
    assert_traits::<Tree>();
};
