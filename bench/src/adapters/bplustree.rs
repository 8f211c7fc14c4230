//! Adapter for `bplustree::BPlusTree`, a LeanStore-style B+tree with optimistic lock
//! coupling and hybrid latches.
//!
//! Lookups use `lookup` (optimistic, may run the closure more than once, so it copies into a
//! `RefCell`ed buffer). Updates change the value in place through the exclusive raw
//! iterator (`seek_exact` then `next`); scans use the shared raw iterator.
//!
//! bplustree 0.1's optimistic readers binary-search a leaf with `get_unchecked` up to a
//! length read without the latch, so a reader racing a writer can index past the keys it
//! holds before its version check discards the attempt. With `u64` keys the stray read is of
//! plain integers inside the leaf's inline array and is thrown away; with heap keys it could
//! follow a moved-out pointer. In debug builds Rust's UB checks abort the process on it. So
//! [`concurrent`] allows multi-threaded runs only for u64 keys in optimised builds; other
//! runs of bplustree are single-threaded (the harness skips them with a note).

use std::cell::RefCell;
use std::marker::PhantomData;

use super::{Index, Repr, Shape};

/// `BPlusTree` over the representation `R`.
pub struct BPlus<R: Repr> {
    tree: bplustree::BPlusTree<R::K, R::V>,
    _repr: PhantomData<R>,
}

impl<R: Repr> BPlus<R> {
    /// An empty tree.
    pub fn new() -> Self {
        BPlus {
            tree: bplustree::BPlusTree::new(),
            _repr: PhantomData,
        }
    }
}

impl<R: Repr> Default for BPlus<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether bplustree may be shared between threads for `shape` (see the module docs).
pub fn concurrent(shape: &Shape) -> Result<(), String> {
    if cfg!(debug_assertions) {
        Err(
            "its optimistic reads index past the end of a leaf, which debug builds abort on; \
             multi-threaded runs need a release build"
                .into(),
        )
    } else if !shape.fits_u64() {
        Err("its optimistic reads may follow stale heap keys; \
             multi-threaded runs need u64 keys and 8-byte values"
            .into())
    } else {
        Ok(())
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    crate::build_typed!(BPlus, shape)
}

impl<R: Repr> Index for BPlus<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.tree.insert(R::key(key), R::value(value));
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        let cell = RefCell::new(out);
        R::with_query(key, |q| {
            self.tree.lookup(q, |v| {
                let mut out = cell.borrow_mut();
                out.clear();
                R::value_bytes(v, &mut out);
            })
        })
        .is_some()
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        let mut iter = self.tree.raw_iter_mut();
        let found = R::with_query(key, |q| iter.seek_exact(q));
        if found {
            if let Some((_, v)) = iter.next() {
                R::set_value(v, value);
            }
        }
        found
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
