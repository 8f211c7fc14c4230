//! [`KeyRange`]: the key ranges the byte-level range operations take.

use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A range of byte keys: the std range types (`..`, `a..b`, `a..`, `..b`, `a..=b`, `..=b`)
/// and `(Bound, Bound)` pairs over anything that is bytes (`&[u8]`, `Vec<u8>`, byte arrays,
/// `&str`, `String`).
///
/// std's `RangeBounds<[u8]>` is not implemented for `Range<&[u8]>`, and a generic
/// `RangeBounds<K>` leaves `K` unknown for `..`; this trait accepts both.
///
/// ```
/// let tree = contree::Tree::new();
/// for k in ["a", "b", "c", "d"] {
///     tree.insert(k.as_bytes(), b"").unwrap();
/// }
/// assert_eq!(tree.range(..).count(), 4);
/// assert_eq!(tree.range(&b"b"[..]..&b"d"[..]).count(), 2);
/// assert_eq!(tree.range(b"b"..=b"d").count(), 3);
/// assert_eq!(tree.range("c"..).count(), 2);
/// assert_eq!(tree.range(..b"b".to_vec()).count(), 1);
/// use std::ops::Bound::{Excluded, Unbounded};
/// assert_eq!(tree.range((Excluded(&b"a"[..]), Unbounded)).count(), 3);
/// ```
pub trait KeyRange {
    /// The start bound.
    fn start(&self) -> Bound<&[u8]>;
    /// The end bound.
    fn end(&self) -> Bound<&[u8]>;
}

impl KeyRange for RangeFull {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Unbounded
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Unbounded
    }
}

impl<K: AsRef<[u8]>> KeyRange for Range<K> {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Included(self.start.as_ref())
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Excluded(self.end.as_ref())
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeInclusive<K> {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Included(self.start().as_ref())
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Included(self.end().as_ref())
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeFrom<K> {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Included(self.start.as_ref())
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Unbounded
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeTo<K> {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Unbounded
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Excluded(self.end.as_ref())
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeToInclusive<K> {
    fn start(&self) -> Bound<&[u8]> {
        Bound::Unbounded
    }
    fn end(&self) -> Bound<&[u8]> {
        Bound::Included(self.end.as_ref())
    }
}

impl<K: AsRef<[u8]>> KeyRange for (Bound<K>, Bound<K>) {
    fn start(&self) -> Bound<&[u8]> {
        self.0.as_ref().map(AsRef::as_ref)
    }
    fn end(&self) -> Bound<&[u8]> {
        self.1.as_ref().map(AsRef::as_ref)
    }
}
