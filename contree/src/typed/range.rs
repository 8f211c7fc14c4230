//! [`TypedKeyRange`]: the key ranges [`TreeMap::range`](crate::TreeMap::range) takes.

use std::borrow::Borrow;
use std::ops::{
    Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive,
};

/// A range of keys of a [`TreeMap<K, _>`](crate::TreeMap), with bounds of the key type `K`
/// itself or borrowed forms `&Q` of it (`&str` for `String` keys, `&[u8]` for `Vec<u8>`
/// keys): the std range types (`..`, `a..b`, `a..`, `..b`, `a..=b`, `..=b`) and
/// `(Bound, Bound)` pairs.
///
/// std's `RangeBounds<Q>` would leave `Q` unknown for `..` and for owned bounds; here `Q` is
/// a parameter of the trait that every range type fixes: `K` for `..` and owned bounds, `Q`
/// for bounds of type `&Q`. You do not name it; the compiler infers it.
///
/// ```
/// use contree::TreeMap;
///
/// let map: TreeMap<String, u32> = TreeMap::new();
/// for (i, k) in ["apple", "banana", "cherry", "date"].into_iter().enumerate() {
///     map.insert(k, &(i as u32)).unwrap();
/// }
/// assert_eq!(map.range(..).count(), 4);
/// assert_eq!(map.range("b".."d").count(), 2); // &str bounds
/// assert_eq!(map.range("banana"..="cherry").count(), 2);
/// assert_eq!(map.range("c"..).count(), 2);
/// assert_eq!(map.range(.."b").count(), 1);
/// assert_eq!(map.range("b".to_string()..).count(), 3); // owned bounds
/// use std::ops::Bound::{Excluded, Unbounded};
/// assert_eq!(map.range((Excluded("apple"), Unbounded)).count(), 3);
///
/// let numbers: TreeMap<u64, ()> = TreeMap::new();
/// for k in 0..10 {
///     numbers.insert(&k, &()).unwrap();
/// }
/// assert_eq!(numbers.range(2..5).count(), 3);
/// assert_eq!(numbers.range(&2..&5).count(), 3);
/// assert_eq!(numbers.range(..).count(), 10);
/// ```
pub trait TypedKeyRange<K, Q: ?Sized> {
    /// The start bound.
    fn start(&self) -> Bound<&Q>;
    /// The end bound.
    fn end(&self) -> Bound<&Q>;
}

// Bounds of type `&Q` implement `TypedKeyRange<K, Q>`, and owned bounds of type `K` implement
// `TypedKeyRange<K, K>`: the two never overlap (`K = &Q` and `Q = K` cannot both hold), and
// for a given range type at most one of them applies, which lets the compiler infer `Q`.

impl<K> TypedKeyRange<K, K> for RangeFull {
    fn start(&self) -> Bound<&K> {
        Bound::Unbounded
    }
    fn end(&self) -> Bound<&K> {
        Bound::Unbounded
    }
}

/// Implements `TypedKeyRange` for a range type over owned bounds (`K`) and over borrowed
/// bounds (`&Q`), through std's `RangeBounds`.
macro_rules! range_impls {
    ($($owned:ty, $borrowed:ty;)*) => {$(
        impl<K> TypedKeyRange<K, K> for $owned {
            fn start(&self) -> Bound<&K> {
                RangeBounds::<K>::start_bound(self)
            }
            fn end(&self) -> Bound<&K> {
                RangeBounds::<K>::end_bound(self)
            }
        }

        impl<K: Borrow<Q>, Q: ?Sized> TypedKeyRange<K, Q> for $borrowed {
            fn start(&self) -> Bound<&Q> {
                unref(RangeBounds::<&Q>::start_bound(self))
            }
            fn end(&self) -> Bound<&Q> {
                unref(RangeBounds::<&Q>::end_bound(self))
            }
        }
    )*};
}

/// A bound on a reference, as the reference.
fn unref<'a, Q: ?Sized>(bound: Bound<&&'a Q>) -> Bound<&'a Q> {
    bound.map(|q| *q)
}

range_impls! {
    Range<K>, Range<&Q>;
    RangeInclusive<K>, RangeInclusive<&Q>;
    RangeFrom<K>, RangeFrom<&Q>;
    RangeTo<K>, RangeTo<&Q>;
    RangeToInclusive<K>, RangeToInclusive<&Q>;
    (Bound<K>, Bound<K>), (Bound<&Q>, Bound<&Q>);
}
