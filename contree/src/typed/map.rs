//! The typed layer: [`TreeMap`], an ordered map from typed keys to typed values.
//!
//! A `TreeMap<K, V>` is a [`Tree`] plus a pair of codecs: keys are stored in the
//! order-preserving encoding of [`KeyCodec`], values in the encoding of [`ValueCodec`] (see
//! [`codec`](crate::codec) for both layouts). It has the same concurrency as the tree: every
//! method takes `&self`, and the map is `Send + Sync`.

use std::borrow::Borrow;
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Bound;
use std::thread::LocalKey;

use super::codec::{KeyCodec, KeyEncode, ValueCodec, ValueEncode};
use super::range::TypedKeyRange;
use crate::{Config, Error, Range, Stats, Tree};

/// A concurrent ordered map from `K` to `V`, stored in a byte-level [`Tree`].
///
/// Keys are encoded with an order-preserving [`KeyCodec`], so iteration and ranges follow
/// `K`'s order; values are encoded with a [`ValueCodec`]. Codecs are provided for the
/// integers, `bool`, `char`, `String`, `Vec<u8>`, `Option`s, arrays and tuples of 2 to 8 of
/// these, and you can [write your own](crate::codec#your-own-types). Lookups, inserts and
/// ranges accept borrowed forms, such as `&str` for a `String` key or value.
///
/// Every method takes `&self`: share the map between threads with an `Arc` or a scoped
/// thread. Lookups and iteration return owned, decoded copies.
///
/// ```
/// use contree::TreeMap;
///
/// let map: TreeMap<(String, u32), u64> = TreeMap::new();
/// map.insert(&("bob".to_string(), 2), &20).unwrap();
/// map.insert(&("alice".to_string(), 7), &70).unwrap();
/// map.insert(&("bob".to_string(), 1), &10).unwrap();
///
/// assert_eq!(map.get(&("bob".to_string(), 2)), Some(20));
/// assert_eq!(map.len(), 3);
///
/// // Entries come out in key order: by name, then by number.
/// let bob: Vec<_> = map
///     .range(("bob".to_string(), 0)..=("bob".to_string(), u32::MAX))
///     .map(|((_, n), v)| (n, v))
///     .collect();
/// assert_eq!(bob, [(1, 10), (2, 20)]);
///
/// // Reverse iteration, and an update that returns the old value.
/// assert_eq!(map.iter().next_back(), Some((("bob".to_string(), 2), 20)));
/// assert_eq!(map.insert(&("bob".to_string(), 2), &21).unwrap(), Some(20));
/// ```
///
/// Concurrent use:
///
/// ```
/// use contree::TreeMap;
///
/// let map: TreeMap<String, u64> = TreeMap::new();
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let map = &map;
///         s.spawn(move || {
///             for i in 0..100 {
///                 map.insert(&format!("t{t}-{i:03}"), &i).unwrap();
///             }
///         });
///     }
/// });
/// assert_eq!(map.len(), 400);
/// assert_eq!(map.get("t3-042"), Some(42));
/// ```
///
/// # Errors and limits
///
/// [`insert`](TreeMap::insert) returns the tree's [`Error`]: a key or value whose *encoding* is
/// longer than [`Config::max_key_len`] or [`Config::max_value_len`], or an exhausted memory
/// budget. Nothing is written when it fails.
///
/// # serde
///
/// With the `serde` feature, `TreeMap<K, V>` implements serde's `Serialize` (a map of its
/// entries in key order) and `Deserialize` (from a map) where `K` and `V` do.
///
/// # Bytes not written by the map
///
/// The bytes stay reachable through [`as_tree`](TreeMap::as_tree). An entry whose key or value
/// bytes are not a valid encoding for `K` or `V` (possible only when it was written through the
/// bytes API) is skipped by iteration, [`first`](TreeMap::first), [`last`](TreeMap::last)
/// and the pops (which leave it in place), kept by [`retain`](TreeMap::retain), reads as
/// absent in [`get`](TreeMap::get) and makes [`insert`](TreeMap::insert) and
/// [`remove`](TreeMap::remove) report no old value. It is still counted by
/// [`len`](TreeMap::len) and removed by [`remove_range`](TreeMap::remove_range) and
/// [`clear`](TreeMap::clear). Nothing panics.
pub struct TreeMap<K, V> {
    tree: Tree,
    _types: PhantomData<fn() -> (K, V)>,
}

/// Encoded keys and values are built in per-thread buffers that are reused, so that a lookup
/// or an insert does not allocate for its key. A buffer that grew beyond this many bytes is
/// released instead of kept.
const MAX_KEPT_BUFFER: usize = 64 * 1024;

thread_local! {
    static KEY_BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    static VALUE_BUFFER: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with an empty buffer taken from `slot` and puts the buffer back afterwards. A
/// nested call (a codec that uses a map) or a call during thread teardown gets a fresh buffer.
fn with_buffer<R>(slot: &'static LocalKey<Cell<Vec<u8>>>, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buffer = slot.try_with(Cell::take).unwrap_or_default();
    buffer.clear();
    let result = f(&mut buffer);
    if buffer.capacity() <= MAX_KEPT_BUFFER {
        let _ = slot.try_with(move |cell| cell.set(buffer));
    }
    result
}

/// Runs `f` with the stored form of `key`.
pub(super) fn with_key<Q: KeyEncode + ?Sized, R>(key: &Q, f: impl FnOnce(&[u8]) -> R) -> R {
    with_buffer(&KEY_BUFFER, |buffer| {
        key.encode_key_last(buffer);
        f(buffer)
    })
}

/// Runs `f` with the stored form of `value`.
pub(super) fn with_value<W: ValueEncode + ?Sized, R>(value: &W, f: impl FnOnce(&[u8]) -> R) -> R {
    with_buffer(&VALUE_BUFFER, |buffer| {
        value.encode_value_last(buffer);
        f(buffer)
    })
}

/// Decodes a stored entry (a [`Range`] item or a copied `first`/`last` entry); `None` if
/// either half is not a valid encoding.
pub(super) fn decode_entry<K: KeyCodec, V: ValueCodec>(
    (key, value): (impl AsRef<[u8]>, impl AsRef<[u8]>),
) -> Option<(K, V)> {
    Some((
        K::decode_key_last(key.as_ref())?,
        V::decode_value_last(value.as_ref())?,
    ))
}

/// The stored form of a range bound.
fn encode_bound<Q: KeyEncode + ?Sized>(bound: Bound<&Q>) -> Bound<Vec<u8>> {
    bound.map(KeyEncode::to_key_bytes)
}

/// The stored form of a range: its start and end bounds.
pub(super) type EncodedRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// The stored form of a typed range, `None` if it is empty by its bounds.
pub(super) fn encoded_range<K, Q: KeyEncode + ?Sized>(
    range: &impl TypedKeyRange<K, Q>,
) -> Option<EncodedRange> {
    let start = encode_bound(range.start());
    let end = encode_bound(range.end());
    (!is_inverted(&start, &end)).then_some((start, end))
}

/// Whether a range with these (encoded) bounds is empty because its start lies after its end,
/// or on it with either side excluded.
fn is_inverted(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
        _ => false,
    }
}

impl<K: KeyCodec, V: ValueCodec> TreeMap<K, V> {
    /// Creates an empty map with the default [`Config`].
    pub fn new() -> Self {
        Self::from_tree(Tree::new())
    }

    /// Creates an empty map with `config`; an invalid configuration is reported as
    /// [`Error::InvalidConfig`].
    ///
    /// ```
    /// use contree::{Config, Error, TreeMap};
    ///
    /// let config = Config { page_size: 16 * 1024, ..Config::default() };
    /// let map: TreeMap<u64, Vec<u8>> = TreeMap::with_config(config).unwrap();
    /// map.insert(&1, &vec![0; 4000]).unwrap();
    ///
    /// let bad = Config { page_size: 1000, ..Config::default() };
    /// assert!(matches!(
    ///     TreeMap::<u64, u64>::with_config(bad),
    ///     Err(Error::InvalidConfig { field: "page_size", .. })
    /// ));
    /// ```
    pub fn with_config(config: Config) -> Result<Self, Error> {
        Tree::with_config(config).map(Self::from_tree)
    }

    /// Wraps an existing tree. Its entries should have been written by a `TreeMap<K, V>` (or
    /// with [`KeyEncode::to_key_bytes`] and [`ValueEncode::to_value_bytes`]); see the
    /// [type documentation](TreeMap#bytes-not-written-by-the-map) for what happens to others.
    pub fn from_tree(tree: Tree) -> Self {
        TreeMap {
            tree,
            _types: PhantomData,
        }
    }

    /// The underlying byte-level tree. Keys there are [`KeyEncode::to_key_bytes`] and values
    /// [`ValueEncode::to_value_bytes`].
    ///
    /// ```
    /// use contree::{KeyEncode, TreeMap};
    ///
    /// let map: TreeMap<i32, String> = TreeMap::new();
    /// map.insert(&-1, &"minus one".to_string()).unwrap();
    /// let raw = map.as_tree().get(&(-1i32).to_key_bytes());
    /// assert_eq!(raw, Some(b"minus one".to_vec()));
    /// ```
    pub fn as_tree(&self) -> &Tree {
        &self.tree
    }

    /// Unwraps the underlying byte-level tree.
    pub fn into_tree(self) -> Tree {
        self.tree
    }

    /// Inserts or replaces the value for `key` and returns the value it replaced.
    ///
    /// The key and the value may be given in a borrowed form, as [`get`](TreeMap::get) takes
    /// keys: `&str` for a `String`, `&[u8]` for a `Vec<u8>`, or `&K` and `&V` themselves
    /// (`K: Borrow<Q>` and `V: Borrow<W>`; the borrowed form encodes to the same bytes).
    ///
    /// Fails with [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`] when the encoded key or
    /// value is too long for the configuration (the lengths in the error are those of the
    /// encodings), and with [`Error::OutOfSpace`] when the memory budget is exhausted; the map
    /// is then unchanged.
    ///
    /// ```
    /// use contree::{Error, TreeMap};
    ///
    /// let map: TreeMap<String, u32> = TreeMap::new();
    /// assert_eq!(map.insert("a", &1), Ok(None));
    /// assert_eq!(map.insert("a", &2), Ok(Some(1)));
    /// let long = "x".repeat(20_000); // over contree::MAX_KEY_LEN (16 KiB)
    /// assert!(matches!(map.insert(long.as_str(), &3), Err(Error::KeyTooLarge { .. })));
    ///
    /// // Borrowed keys and values.
    /// let names: TreeMap<String, String> = TreeMap::new();
    /// names.insert("k", "v").unwrap();
    /// assert_eq!(names.insert(&"k".to_string(), &"w".to_string()), Ok(Some("v".to_string())));
    /// let blobs: TreeMap<Vec<u8>, Vec<u8>> = TreeMap::new();
    /// blobs.insert(&b"k"[..], &[1u8, 2][..]).unwrap();
    /// assert_eq!(blobs.get(&b"k"[..]), Some(vec![1, 2]));
    /// ```
    pub fn insert<Q, W>(&self, key: &Q, value: &W) -> Result<Option<V>, Error>
    where
        K: Borrow<Q>,
        V: Borrow<W>,
        Q: KeyEncode + ?Sized,
        W: ValueEncode + ?Sized,
    {
        let old = with_key(key, |key| {
            with_value(value, |value| self.tree.insert(key, value))
        })?;
        Ok(old.and_then(|old| V::decode_value_last(&old)))
    }

    /// Returns a copy of the value for `key`, if present.
    ///
    /// The value is read optimistically, as [`Tree::get_with`] reads it: a value whose
    /// stored form takes up to [`GET_WITH_INLINE`](crate::GET_WITH_INLINE) bytes (every
    /// integer, `char`, fixed-size array or tuple of them) is decoded from a copy on the
    /// stack, so the lookup allocates nothing once the thread's key buffer exists.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let map: TreeMap<Vec<u8>, String> = TreeMap::new();
    /// map.insert(b"k".as_slice(), &"v".to_string()).unwrap();
    /// assert_eq!(map.get(b"k".as_slice()), Some("v".to_string()));
    /// assert_eq!(map.get(b"other".as_slice()), None);
    /// ```
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        // `get_with` copies the value optimistically (onto the stack, up to
        // `GET_WITH_INLINE` bytes) and decodes the copy after the read validated, holding no
        // latch: a fixed-size value costs no allocation.
        with_key(key, |key| {
            self.tree.get_with(key, |value| V::decode_value_last(value))
        })
        .flatten()
    }

    /// Whether the map holds `key`.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        with_key(key, |key| self.tree.contains_key(key))
    }

    /// Removes `key` and returns its value, if it was present.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        with_key(key, |key| self.tree.remove(key)).and_then(|old| V::decode_value_last(&old))
    }

    /// Iterates over the entries whose keys lie in `range`, in key order; the iterator is
    /// double-ended, so `.rev()` walks it backwards.
    ///
    /// The bounds are of the key type or of a borrowed form of it (`&str` for `String` keys,
    /// `&[u8]` for `Vec<u8>` keys); see [`TypedKeyRange`] for the range types accepted.
    ///
    /// Unlike `BTreeMap::range`, a range whose start lies after its end is empty rather than a
    /// panic. Like the tree's iterators, it is not a snapshot: entries inserted or removed while
    /// it runs may or may not be seen, and each entry is seen at most once.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let map: TreeMap<i16, ()> = TreeMap::new();
    /// for k in [-300, -2, 0, 5, 300] {
    ///     map.insert(&k, &()).unwrap();
    /// }
    /// let keys: Vec<i16> = map.range(-2..=5).map(|(k, _)| k).collect();
    /// assert_eq!(keys, [-2, 0, 5]);
    /// let keys: Vec<i16> = map.range(..0).rev().map(|(k, _)| k).collect();
    /// assert_eq!(keys, [-2, -300]);
    /// assert_eq!(map.range(5..-5).count(), 0);
    ///
    /// let words: TreeMap<String, ()> = TreeMap::new();
    /// for w in ["ant", "bee", "cat"] {
    ///     words.insert(w, &()).unwrap();
    /// }
    /// let from_b: Vec<String> = words.range("b"..).map(|(k, _)| k).collect();
    /// assert_eq!(from_b, ["bee", "cat"]);
    /// ```
    pub fn range<Q, R>(&self, range: R) -> TypedRange<'_, K, V>
    where
        Q: KeyEncode + ?Sized,
        R: TypedKeyRange<K, Q>,
    {
        TypedRange::new(encoded_range(&range).map(|bounds| self.tree.range(bounds)))
    }

    /// Iterates over all entries in key order (double-ended).
    pub fn iter(&self) -> TypedRange<'_, K, V> {
        TypedRange::new(Some(self.tree.iter()))
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(K, V)> {
        self.tree
            .first()
            .and_then(decode_entry)
            .or_else(|| self.iter().next())
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Option<(K, V)> {
        self.tree
            .last()
            .and_then(decode_entry)
            .or_else(|| self.iter().next_back())
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The underlying tree's shape and counters; see [`Stats`].
    pub fn stats(&self) -> Stats {
        self.tree.stats()
    }
}

impl<K: KeyCodec, V: ValueCodec> Default for TreeMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K, V> fmt::Debug for TreeMap<K, V>
where
    K: KeyCodec + fmt::Debug,
    V: ValueCodec + fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// An iterator over the decoded entries of a [`TreeMap`] in key order, returned by
/// [`TreeMap::range`] and [`TreeMap::iter`]. It is double-ended.
pub struct TypedRange<'a, K, V> {
    /// `None` for a range that is empty by its bounds.
    inner: Option<Range<'a>>,
    _types: PhantomData<fn() -> (K, V)>,
}

impl<'a, K, V> TypedRange<'a, K, V> {
    /// Decodes the entries of `inner` (`None`: no entries).
    pub(super) fn new(inner: Option<Range<'a>>) -> Self {
        TypedRange {
            inner,
            _types: PhantomData,
        }
    }
}

impl<K: KeyCodec, V: ValueCodec> Iterator for TypedRange<'_, K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        let inner = self.inner.as_mut()?;
        inner.find_map(decode_entry)
    }
}

impl<K: KeyCodec, V: ValueCodec> DoubleEndedIterator for TypedRange<'_, K, V> {
    fn next_back(&mut self) -> Option<(K, V)> {
        let inner = self.inner.as_mut()?;
        inner.rev().find_map(decode_entry)
    }
}

impl<K, V> fmt::Debug for TypedRange<'_, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedRange").finish_non_exhaustive()
    }
}
