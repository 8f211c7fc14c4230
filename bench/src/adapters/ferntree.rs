//! Adapter for `ferntree::Tree` (SurrealDB's fork of `bplustree`): a B+tree of 64-entry
//! nodes with LeanStore-style optimistic lock coupling over hybrid latches and
//! crossbeam-epoch reclamation. Every key and value sits in an atomic slot: `u64` inline,
//! anything else behind a pointer to a box.
//!
//! Representation: [`U64Repr`] when the shape fits u64 (`Tree<u64, u64>`); otherwise
//! [`VecRepr`], `Vec<u8>` keys and `Vec<u8>` values. (The other typed peers store
//! `Box<[u8]>` values, but ferntree implements its `OptimisticRead` storage trait for
//! `Vec<T>` and not for `Box<[u8]>`, and a user would reach for `Vec<u8>`; it costs 8 bytes
//! more per entry than a boxed slice would.)
//!
//! Default construction (`Tree::new()`, 64-entry inner nodes and leaves). Operations:
//! - `get`: `lookup_optimistic` for u64 values (the crate's lock-free fast path, documented
//!   for `Copy` values), `lookup` (shared leaf latch) for `Vec<u8>` values, as its docs ask
//!   for values with heap pointers;
//! - `update`: the exclusive raw iterator's `seek_exact`, then its `insert` at that position
//!   under the same leaf latch (an in-place, atomic update-if-present; the iterator's
//!   `next()`-and-modify path writes a change back only on the following call, so it is not
//!   used);
//! - `insert`, `remove`: `insert`, `remove`;
//! - `scan`: the shared raw iterator's `seek` and `next`.
//!
//! Unlike `bplustree` 0.1, ferntree's optimistic readers load lengths and slots atomically,
//! so it runs multi-threaded for every shape.

use std::cell::RefCell;
use std::marker::PhantomData;

use ferntree::{OptimisticRead, Tree};

use super::{Index, Repr, Shape, U64Repr};

/// `Vec<u8>` keys and values (ferntree's byte representation).
pub struct VecRepr;

impl Repr for VecRepr {
    type K = Vec<u8>;
    type Q = [u8];
    type V = Vec<u8>;
    const NAME: &'static str = "bytes";
    #[inline]
    fn key(bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    #[inline]
    fn with_query<R>(bytes: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        f(bytes)
    }
    #[inline]
    fn value(bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    #[inline]
    fn set_value(v: &mut Vec<u8>, bytes: &[u8]) {
        v.clear();
        v.extend_from_slice(bytes);
    }
    #[inline]
    fn value_bytes(v: &Vec<u8>, out: &mut Vec<u8>) {
        out.extend_from_slice(v);
    }
    #[inline]
    fn with_entry<R>(k: &Vec<u8>, v: &Vec<u8>, f: impl FnOnce(&[u8], &[u8]) -> R) -> R {
        f(k, v)
    }
}

/// A representation ferntree can store, and how it reads it.
pub trait FernRepr: Repr<K: OptimisticRead, V: OptimisticRead> {
    /// Whether point reads take the optimistic fast path (`Copy` values only).
    const OPTIMISTIC: bool;
}

impl FernRepr for U64Repr {
    const OPTIMISTIC: bool = true;
}

impl FernRepr for VecRepr {
    const OPTIMISTIC: bool = false;
}

/// `ferntree::Tree` over the representation `R`.
pub struct Fern<R: FernRepr> {
    tree: Tree<R::K, R::V>,
    _repr: PhantomData<R>,
}

impl<R: FernRepr> Fern<R> {
    /// An empty tree.
    pub fn new() -> Self {
        Fern {
            tree: Tree::new(),
            _repr: PhantomData,
        }
    }
}

impl<R: FernRepr> Default for Fern<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    if shape.fits_u64() {
        Ok(Box::new(Fern::<U64Repr>::new()))
    } else {
        Ok(Box::new(Fern::<VecRepr>::new()))
    }
}

impl<R: FernRepr> Index for Fern<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.tree.insert(R::key(key), R::value(value));
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        // The closure may run more than once (optimistic retries): it starts over each time.
        let cell = RefCell::new(out);
        let read = |v: &R::V| {
            let mut out = cell.borrow_mut();
            out.clear();
            R::value_bytes(v, &mut out);
        };
        R::with_query(key, |q| {
            if R::OPTIMISTIC {
                self.tree.lookup_optimistic(q, read)
            } else {
                self.tree.lookup(q, read)
            }
        })
        .is_some()
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        let mut iter = self.tree.raw_iter_mut();
        if R::with_query(key, |q| iter.seek_exact(q)) {
            iter.insert(R::key(key), R::value(value));
            true
        } else {
            false
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        R::with_query(key, |q| self.tree.remove(q)).is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        let mut iter = self.tree.raw_iter();
        R::with_query(start, |q| iter.seek(q));
        let mut n = 0;
        while n < count {
            match iter.next() {
                Some((k, v)) => {
                    R::with_entry(k, v, |kb, vb| visit(kb, vb));
                    n += 1;
                }
                None => break,
            }
        }
        n
    }

    fn repr(&self) -> &'static str {
        R::NAME
    }
}
