//! [`Bytes`]: the immutable byte string that ranges hand out.
//!
//! A [`Range`](crate::Range) copies every key and value it returns out of the tree. With a
//! `Vec<u8>` per key and per value, the two allocations and two frees per entry cost more
//! than the scan itself; a `Bytes` of at most [`Bytes::INLINE_CAPACITY`] (22) bytes is stored
//! inline, in the 24 bytes of the value itself, so short keys and values (integers, short
//! strings, hashes of up to 176 bits) are copied without touching the allocator. Longer ones
//! live in a boxed slice.
//!
//! A `Bytes` dereferences to `[u8]` and compares, orders and hashes exactly as that slice
//! does, so it can be used wherever a byte slice is read, compared with slices, arrays and
//! vectors, used as a map key looked up by `&[u8]`, or turned into a `Vec<u8>`.
//!
//! ```
//! use contree::Bytes;
//!
//! let short = Bytes::from(&b"apple"[..]);
//! assert!(short.is_inline());
//! assert_eq!(short, b"apple");
//! assert_eq!(&short[1..3], b"pp");
//!
//! let long = Bytes::from(vec![7u8; 100]);
//! assert!(!long.is_inline());
//! assert_eq!(long.len(), 100);
//! assert!(long < short); // ordered as the byte slices are: 7 < b'a'
//! ```

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::num::NonZeroU64;
use std::ops::Deref;

/// An immutable byte string that stores up to [`INLINE_CAPACITY`](Self::INLINE_CAPACITY)
/// (22) bytes inline and longer ones on the heap; the item type of
/// [`Range`](crate::Range).
///
/// A `Bytes` is 24 bytes, the size of a `Vec<u8>`. It dereferences to `[u8]` (so `len`,
/// indexing, `iter`, `to_vec` and every other slice method work on it) and its equality,
/// order and hash are those of the slice, so a `HashMap<Bytes, _>` or `BTreeMap<Bytes, _>`
/// can be queried with a `&[u8]`. It compares equal to slices, arrays and vectors with the
/// same contents.
///
/// ```
/// use contree::Bytes;
/// use std::collections::BTreeMap;
///
/// let tree = contree::Tree::new();
/// tree.insert(b"k1", b"one").unwrap();
/// tree.insert(b"k2", b"two").unwrap();
///
/// let entries: BTreeMap<Bytes, Bytes> = tree.iter().collect();
/// assert_eq!(entries[&b"k2"[..]], b"two");
///
/// let (key, value) = tree.iter().next().unwrap();
/// assert_eq!(key, b"k1");
/// assert_eq!(value.to_vec(), b"one".to_vec());
/// let owned: Vec<u8> = value.into_vec();
/// assert_eq!(owned, b"one");
/// ```
#[repr(C)]
pub struct Bytes {
    /// Inline: bytes 0..16. Heap: the boxed slice's pointer and length.
    data: Data,
    /// Bytes 16..24, read as a little-endian word (`Bytes::tag`): inline, bytes 16..22 in its low
    /// 48 bits, the length in bits 48..56 and [`INLINE`] in the top byte; on the heap,
    /// [`HEAP`] in the top byte. Never zero (the top byte is not), so that `Option<Bytes>`
    /// is 24 bytes too.
    tag: NonZeroU64,
}

/// The first 16 bytes of a [`Bytes`].
#[derive(Clone, Copy)]
#[repr(C)]
union Data {
    /// Inline bytes 0..16 as two words in memory order (`u64::from_ne_bytes` of each half).
    inline: [u64; 2],
    heap: Heap,
}

/// A `Box<[u8]>` taken apart ([`Box::into_raw`]).
#[derive(Clone, Copy)]
#[repr(C)]
struct Heap {
    ptr: *mut u8,
    len: usize,
}

/// The top byte of an inline [`Bytes`]'s tag.
const INLINE: u64 = 0x01;
/// The top byte of a heap [`Bytes`]'s tag: its top bit set, so that the tag read as an
/// `i64` is negative on the heap and positive inline (a drop tests one sign).
const HEAP: u64 = 0x80;
/// The tag's bits that hold inline bytes 16..22.
const TAIL_MASK: u64 = (1 << 48) - 1;

// SAFETY: a `Bytes` owns its heap bytes (as the `Box<[u8]>` it was built from would) and never
// changes them; sharing or sending it shares or sends an immutable byte string.
unsafe impl Send for Bytes {}
// SAFETY: as for `Send`: `&Bytes` only reads.
unsafe impl Sync for Bytes {}

impl Bytes {
    /// The longest byte string stored inline, without an allocation.
    pub const INLINE_CAPACITY: usize = 22;

    /// The empty byte string (inline).
    ///
    /// ```
    /// let empty = contree::Bytes::new();
    /// assert!(empty.is_empty() && empty.is_inline());
    /// assert_eq!(empty, contree::Bytes::default());
    /// ```
    #[inline]
    pub const fn new() -> Self {
        // SAFETY: a length of 0.
        unsafe { Self::from_words_unchecked(0, 0, 0, 0) }
    }

    /// An inline byte string of `len` bytes (at most [`INLINE_CAPACITY`](Self::INLINE_CAPACITY))
    /// from its first 22 bytes as words: `w0` and `w1` hold bytes 0..8 and 8..16 and the low
    /// 48 bits of `w2` bytes 16..22, each as a little-endian number (byte `j` of a word in bits
    /// `8j..8j + 8`). Bits past `len` bytes are never read and need not be zero; `w2`'s top 16
    /// bits are ignored. Three word stores: what a range builds a short key or value with,
    /// in registers, so that the moves of the result read whole words that were stored
    /// whole (a `Bytes` stored as a tag byte, a length byte and 22 bytes made its moves wait
    /// for the stores to reach the cache: `bench/results/range-stalls-s61.txt`).
    ///
    /// # Safety
    /// `len <= INLINE_CAPACITY` (`as_slice` hands out the first `len` bytes of the value).
    #[inline(always)]
    pub(crate) const unsafe fn from_words_unchecked(len: usize, w0: u64, w1: u64, w2: u64) -> Self {
        let tag = (w2 & TAIL_MASK) | (len as u64 & 0xFF) << 48 | INLINE << 56;
        Bytes {
            data: Data {
                inline: [w0.to_le(), w1.to_le()],
            },
            // The top byte is `INLINE`: never zero.
            tag: match NonZeroU64::new(tag.to_le()) {
                Some(t) => t,
                None => unreachable!(),
            },
        }
    }

    /// A heap byte string that takes over `b`.
    #[inline]
    fn from_box(b: Box<[u8]>) -> Self {
        let len = b.len();
        let ptr = Box::into_raw(b) as *mut u8;
        Bytes {
            data: Data {
                heap: Heap { ptr, len },
            },
            tag: match NonZeroU64::new((HEAP << 56).to_le()) {
                Some(t) => t,
                None => unreachable!(),
            },
        }
    }

    /// The `tag` field as a little-endian number (its layout is in the field's doc).
    #[inline(always)]
    fn tag(&self) -> u64 {
        u64::from_le(self.tag.get())
    }

    /// A copy of `bytes`: inline (no allocation) up to
    /// [`INLINE_CAPACITY`](Self::INLINE_CAPACITY) bytes, otherwise in one allocation of
    /// exactly `bytes.len()`. Copies the bytes once. Same as `Bytes::from(bytes)`.
    ///
    /// ```
    /// use contree::Bytes;
    ///
    /// let b = Bytes::copy_from_slice(&[1, 2, 3]);
    /// assert_eq!(b, [1, 2, 3]);
    /// assert!(b.is_inline());
    /// assert!(!Bytes::copy_from_slice(&[0; 23]).is_inline());
    /// ```
    #[inline]
    pub fn copy_from_slice(bytes: &[u8]) -> Self {
        if bytes.len() <= Self::INLINE_CAPACITY {
            let (w0, w1, w2) = inline_words(bytes);
            // SAFETY: `bytes.len() <= INLINE_CAPACITY`.
            unsafe { Self::from_words_unchecked(bytes.len(), w0, w1, w2) }
        } else {
            Self::from_box(Box::from(bytes))
        }
    }

    /// Whether the bytes are stored inline (no heap allocation). Every byte string of at
    /// most [`INLINE_CAPACITY`](Self::INLINE_CAPACITY) bytes built by this type is; longer
    /// ones never are.
    ///
    /// ```
    /// use contree::Bytes;
    ///
    /// assert!(Bytes::from(&[0u8; 22]).is_inline());
    /// assert!(!Bytes::from(&[0u8; 23]).is_inline());
    /// ```
    #[inline]
    pub fn is_inline(&self) -> bool {
        (self.tag() as i64) >= 0
    }

    /// The bytes as a slice (what `Deref` returns).
    ///
    /// ```
    /// let b = contree::Bytes::from(b"abc");
    /// assert_eq!(b.as_slice(), b"abc");
    /// ```
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        let tag = self.tag();
        if (tag as i64) >= 0 {
            // SAFETY: an inline `Bytes` holds its bytes in its first 22 bytes (`data` as
            // words in memory order, then the tag's low 6 bytes in little-endian order,
            // which is memory order) and its length, at most 22, in the tag: the slice lies
            // inside `self`, which it borrows.
            unsafe {
                std::slice::from_raw_parts(
                    (self as *const Bytes).cast::<u8>(),
                    (tag >> 48) as u8 as usize,
                )
            }
        } else {
            // SAFETY: a heap `Bytes` holds the parts of the `Box<[u8]>` it owns (`from_box`),
            // alive while `self` is, and never changed.
            unsafe {
                let h = self.data.heap;
                std::slice::from_raw_parts(h.ptr, h.len)
            }
        }
    }

    /// Converts into a `Vec<u8>`: without copying when the bytes are on the heap, with one
    /// allocation and copy when they are inline. Same as `Vec::from(bytes)`.
    ///
    /// ```
    /// use contree::Bytes;
    ///
    /// let long = Bytes::from(vec![9u8; 64]); // takes over the vector's buffer
    /// let v: Vec<u8> = long.into_vec(); // and gives it back
    /// assert_eq!(v, vec![9u8; 64]);
    /// assert_eq!(Bytes::from(&b"ab"[..]).into_vec(), b"ab".to_vec());
    /// ```
    #[inline]
    pub fn into_vec(self) -> Vec<u8> {
        if self.is_inline() {
            return self.as_slice().to_vec();
        }
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: a heap `Bytes` owns the box whose parts it holds (`from_box`); `this` is
        // not dropped, so the box is rebuilt once.
        unsafe {
            let h = this.data.heap;
            Box::from_raw(std::ptr::slice_from_raw_parts_mut(h.ptr, h.len)).into_vec()
        }
    }
}

impl Drop for Bytes {
    #[inline]
    fn drop(&mut self) {
        if !self.is_inline() {
            // SAFETY: a heap `Bytes` owns the box whose parts it holds (`from_box`), and
            // this is its only drop.
            unsafe {
                let h = self.data.heap;
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    h.ptr, h.len,
                )));
            }
        }
    }
}

impl Clone for Bytes {
    #[inline]
    fn clone(&self) -> Self {
        if self.is_inline() {
            Bytes {
                data: self.data,
                tag: self.tag,
            }
        } else {
            Self::from_box(Box::from(self.as_slice()))
        }
    }
}

/// `bytes` (at most [`Bytes::INLINE_CAPACITY`] long) as the three words of an inline
/// [`Bytes`] (see `Bytes::from_words`), read with loads of fixed sizes that may overlap and
/// put together in registers: a copy of variable length would be a call of `memcpy`, and
/// an array written in pieces and read back as words waits for the pieces to reach the
/// cache (the range hands out two of these per entry on its general path).
#[inline]
fn inline_words(bytes: &[u8]) -> (u64, u64, u64) {
    fn le<const N: usize>(b: &[u8], at: usize) -> u64 {
        let mut w = [0u8; 8];
        w[..N].copy_from_slice(&b[at..at + N]);
        u64::from_le_bytes(w)
    }
    let n = bytes.len();
    if n >= 16 {
        // Bytes 16..n: the last word shifted down past the bytes before 16 (`n - 8 >= 8`).
        let tail = (le::<8>(bytes, n - 8) >> 8) >> (8 * (23 - n));
        (le::<8>(bytes, 0), le::<8>(bytes, 8), tail)
    } else if n >= 8 {
        let mid = (le::<8>(bytes, n - 8) >> 8) >> (8 * (15 - n));
        (le::<8>(bytes, 0), mid, 0)
    } else if n >= 4 {
        (
            le::<4>(bytes, 0) | le::<4>(bytes, n - 4) << (8 * (n - 4)),
            0,
            0,
        )
    } else if n >= 2 {
        (
            le::<2>(bytes, 0) | le::<2>(bytes, n - 2) << (8 * (n - 2)),
            0,
            0,
        )
    } else if n == 1 {
        (u64::from(bytes[0]), 0, 0)
    } else {
        (0, 0, 0)
    }
}

impl Default for Bytes {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for Bytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Bytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Borrow<[u8]> for Bytes {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl fmt::Debug for Bytes {
    /// Formats as the byte slice does: `[1, 2, 3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl PartialEq for Bytes {
    #[inline]
    fn eq(&self, other: &Bytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Bytes {}

impl PartialOrd for Bytes {
    #[inline]
    fn partial_cmp(&self, other: &Bytes) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bytes {
    #[inline]
    fn cmp(&self, other: &Bytes) -> Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for Bytes {
    /// Hashes as the byte slice does, as [`Borrow<[u8]>`](Borrow) requires.
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

/// `PartialEq` both ways between `Bytes` and a type that derefs or coerces to a byte slice.
macro_rules! eq_with_bytes {
    ($([$($gen:tt)*] $other:ty),* $(,)?) => {$(
        impl<$($gen)*> PartialEq<$other> for Bytes {
            #[inline]
            fn eq(&self, other: &$other) -> bool {
                self.as_slice() == &other[..]
            }
        }

        impl<$($gen)*> PartialEq<Bytes> for $other {
            #[inline]
            fn eq(&self, other: &Bytes) -> bool {
                &self[..] == other.as_slice()
            }
        }
    )*};
}

eq_with_bytes! {
    [] [u8],
    ['a] &'a [u8],
    [] Vec<u8>,
    [const N: usize] [u8; N],
    ['a, const N: usize] &'a [u8; N],
}

impl From<&[u8]> for Bytes {
    /// Copies the bytes once; see [`Bytes::copy_from_slice`].
    #[inline]
    fn from(bytes: &[u8]) -> Self {
        Self::copy_from_slice(bytes)
    }
}

impl<const N: usize> From<&[u8; N]> for Bytes {
    #[inline]
    fn from(bytes: &[u8; N]) -> Self {
        Self::copy_from_slice(bytes)
    }
}

impl<const N: usize> From<[u8; N]> for Bytes {
    /// ```
    /// use contree::Bytes;
    ///
    /// assert_eq!(Bytes::from(7u32.to_be_bytes()), [0, 0, 0, 7]);
    /// ```
    #[inline]
    fn from(bytes: [u8; N]) -> Self {
        Self::copy_from_slice(&bytes)
    }
}

impl From<Vec<u8>> for Bytes {
    /// Copies up to [`INLINE_CAPACITY`](Bytes::INLINE_CAPACITY) bytes inline (and frees the
    /// vector); a longer vector's buffer is kept, shrunk to its length if it has spare
    /// capacity.
    ///
    /// ```
    /// use contree::Bytes;
    ///
    /// assert!(Bytes::from(b"short".to_vec()).is_inline());
    /// let long = vec![1u8; 40];
    /// let ptr = long.as_ptr();
    /// let b = Bytes::from(long);
    /// assert_eq!(b.as_ptr(), ptr); // the same buffer
    /// ```
    #[inline]
    fn from(bytes: Vec<u8>) -> Self {
        if bytes.len() <= Self::INLINE_CAPACITY {
            Self::copy_from_slice(&bytes)
        } else {
            Self::from_box(bytes.into_boxed_slice())
        }
    }
}

impl From<Bytes> for Vec<u8> {
    /// See [`Bytes::into_vec`].
    #[inline]
    fn from(bytes: Bytes) -> Self {
        bytes.into_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(x: &T) -> u64 {
        let mut h = DefaultHasher::new();
        x.hash(&mut h);
        h.finish()
    }

    #[test]
    fn size_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Bytes>(), 24);
        assert_eq!(std::mem::size_of::<Option<Bytes>>(), 24);
        assert_eq!(std::mem::size_of::<(Bytes, Bytes)>(), 48);
    }

    #[test]
    fn inline_heap_boundary() {
        for len in [0usize, 1, 21, 22, 23, 1000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            let inline = len <= Bytes::INLINE_CAPACITY;
            for b in [
                Bytes::from(&data[..]),
                Bytes::copy_from_slice(&data),
                Bytes::from(data.clone()),
            ] {
                assert_eq!(b.is_inline(), inline, "len {len}");
                assert_eq!(b.len(), len);
                assert_eq!(&*b, &data[..]);
                assert_eq!(b, data);
                assert_eq!(b.clone(), b);
                assert_eq!(b.clone().is_inline(), inline);
                assert_eq!(b.to_vec(), data);
                assert_eq!(b.clone().into_vec(), data);
                assert_eq!(Vec::from(b), data);
            }
        }
    }

    #[test]
    fn every_inline_length() {
        for len in 0..=Bytes::INLINE_CAPACITY + 1 {
            let data: Vec<u8> = (1..=len as u8).collect();
            let b = Bytes::from(&data[..]);
            assert_eq!(&*b, &data[..], "len {len}");
            assert_eq!(b.is_inline(), len <= Bytes::INLINE_CAPACITY);
        }
    }

    #[test]
    fn from_array_and_default() {
        assert_eq!(Bytes::from(b"abc"), b"abc");
        assert_eq!(Bytes::from(&[5u8; 30]), [5u8; 30]);
        assert!(Bytes::default().is_empty());
        assert!(Bytes::default().is_inline());
        assert_eq!(Bytes::default(), Bytes::new());
        assert_eq!(Bytes::new(), b"");
    }

    #[test]
    fn from_long_vec_keeps_its_buffer() {
        let v = vec![3u8; 23];
        let ptr = v.as_ptr();
        let b = Bytes::from(v);
        assert_eq!(b.as_ptr(), ptr);
        let back = b.into_vec();
        assert_eq!(back.as_ptr(), ptr);
        assert_eq!(back, vec![3u8; 23]);
    }

    #[test]
    fn equality_both_ways() {
        let b = Bytes::from(&b"xyz"[..]);
        let slice: &[u8] = b"xyz";
        let vec = b"xyz".to_vec();
        let array = *b"xyz";
        assert_eq!(b, *slice);
        assert_eq!(*slice, b);
        assert_eq!(b, slice);
        assert_eq!(slice, b);
        assert_eq!(b, vec);
        assert_eq!(vec, b);
        assert_eq!(b, array);
        assert_eq!(array, b);
        assert_eq!(b, &array);
        assert_eq!(&array, b);
        assert_ne!(b, *b"xy");
        assert_ne!(b"xyzz", b);
        // Collections of `Bytes` compare with collections of vectors.
        assert_eq!(vec![b.clone()], vec![vec.clone()]);
        assert_eq!(vec![vec], vec![b]);
    }

    #[test]
    fn debug_is_the_slices() {
        for data in [&b""[..], b"ab\x00", &[200u8; 30]] {
            let b = Bytes::from(data);
            assert_eq!(format!("{b:?}"), format!("{data:?}"));
            assert_eq!(format!("{b:#?}"), format!("{data:#?}"));
        }
    }

    #[test]
    fn eq_ord_hash_agree_with_slices() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let vecs: Vec<Vec<u8>> = (0..300)
            .map(|_| {
                // Mostly short lengths around the boundary, a few long; a small alphabet so
                // that prefixes and equal strings are common.
                let len = match rng.gen_range(0..10) {
                    0 => rng.gen_range(23..200),
                    _ => rng.gen_range(0..=24),
                };
                (0..len).map(|_| rng.gen_range(0..3u8)).collect()
            })
            .collect();
        let bytes: Vec<Bytes> = vecs.iter().map(|v| Bytes::from(&v[..])).collect();
        for (a, va) in bytes.iter().zip(&vecs) {
            assert_eq!(hash_of(a), hash_of(&va[..]));
            assert_eq!(hash_of(a), hash_of(va));
            assert_eq!(Borrow::<[u8]>::borrow(a), &va[..]);
            for (b, vb) in bytes.iter().zip(&vecs) {
                assert_eq!(a == b, va == vb);
                assert_eq!(a.cmp(b), va.cmp(vb));
                assert_eq!(a.partial_cmp(b), va.partial_cmp(vb));
                assert_eq!(*a == vb[..], va == vb);
                assert_eq!(a == vb, va == vb);
            }
        }
        let mut sorted = bytes.clone();
        sorted.sort();
        let mut sorted_vecs = vecs.clone();
        sorted_vecs.sort();
        assert_eq!(sorted, sorted_vecs);
        // Lookups by slice in hashed and ordered collections.
        let set: std::collections::HashSet<Bytes> = bytes.iter().cloned().collect();
        let tree: std::collections::BTreeSet<Bytes> = bytes.iter().cloned().collect();
        for v in &vecs {
            assert!(set.contains(&v[..]));
            assert!(tree.contains(&v[..]));
        }
        assert!(!set.contains(&[9u8][..]));
    }

    #[test]
    fn round_trips() {
        for len in [0usize, 5, 22, 23, 300] {
            let v: Vec<u8> = (0..len as u32).map(|i| (i * 31) as u8).collect();
            assert_eq!(Bytes::from(v.clone()).into_vec(), v);
            assert_eq!(Vec::from(Bytes::from(&v[..])), v);
            assert_eq!(
                Bytes::from(Bytes::from(&v[..]).to_vec()),
                Bytes::from(v.clone())
            );
            assert_eq!(Bytes::from(Bytes::from(v.clone()).as_ref()), v);
        }
    }
}
