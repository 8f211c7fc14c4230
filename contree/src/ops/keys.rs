//! [`Keys`] and [`Values`]: the iterators of [`Tree::keys`] and [`Tree::values`], a
//! [`Range`] that copies only the half of each entry it hands out.

use super::scan::Range;
use crate::{Bytes, Tree};
use std::iter::FusedIterator;

/// Iterator returned by [`Tree::keys`]: the keys in order, from either end, as [`Bytes`].
/// It behaves as the [`Range`] of [`Tree::iter`] under concurrent writes, and copies no
/// value.
#[derive(Debug)]
pub struct Keys<'t>(Range<'t>);

/// Iterator returned by [`Tree::values`]: the values in key order, from either end, as
/// [`Bytes`]. It behaves as the [`Range`] of [`Tree::iter`] under concurrent writes, and
/// copies no key.
#[derive(Debug)]
pub struct Values<'t>(Range<'t>);

impl Iterator for Keys<'_> {
    type Item = Bytes;

    #[inline]
    fn next(&mut self) -> Option<Bytes> {
        self.0
            .next_half::<true, _>(|(k, _)| k, |k, _| Bytes::copy_from_slice(k))
    }
}

impl DoubleEndedIterator for Keys<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Bytes> {
        self.0
            .next_half::<false, _>(|(k, _)| k, |k, _| Bytes::copy_from_slice(k))
    }
}

impl FusedIterator for Keys<'_> {}

impl Iterator for Values<'_> {
    type Item = Bytes;

    #[inline]
    fn next(&mut self) -> Option<Bytes> {
        self.0
            .next_half::<true, _>(|(_, v)| v, |_, v| Bytes::copy_from_slice(v))
    }
}

impl DoubleEndedIterator for Values<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Bytes> {
        self.0
            .next_half::<false, _>(|(_, v)| v, |_, v| Bytes::copy_from_slice(v))
    }
}

impl FusedIterator for Values<'_> {}

impl Tree {
    /// The keys in order: a double-ended iterator, as [`iter`](Self::iter) without the
    /// values.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for (k, v) in [("b", "2"), ("a", "1"), ("c", "3")] {
    ///     tree.insert(k.as_bytes(), v.as_bytes()).unwrap();
    /// }
    /// let keys: Vec<_> = tree.keys().collect();
    /// assert_eq!(keys, [b"a", b"b", b"c"]);
    /// assert_eq!(tree.keys().next_back().unwrap(), b"c");
    /// ```
    pub fn keys(&self) -> Keys<'_> {
        Keys(self.iter())
    }

    /// The values in key order: a double-ended iterator, as [`iter`](Self::iter) without
    /// the keys.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for (k, v) in [("b", "2"), ("a", "1"), ("c", "3")] {
    ///     tree.insert(k.as_bytes(), v.as_bytes()).unwrap();
    /// }
    /// let values: Vec<Vec<u8>> = tree.values().map(Vec::from).collect();
    /// assert_eq!(values, [b"1", b"2", b"3"]);
    /// assert_eq!(tree.values().rev().next().unwrap(), b"3");
    /// ```
    pub fn values(&self) -> Values<'_> {
        Values(self.iter())
    }
}
