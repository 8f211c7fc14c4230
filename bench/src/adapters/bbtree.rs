//! Adapter for `bbtree::BBTreeMap`, the concurrent B-tree that calls itself the fastest.
//!
//! Lookups use `read` (the value is copied out while the entry is stable), updates use
//! `update` (in place, under the leaf latch), scans use `scan` with an early break.

use std::marker::PhantomData;
use std::ops::{Bound, ControlFlow};

use super::{Index, Repr, Shape};

/// `BBTreeMap` over the representation `R`.
pub struct Bbtree<R: Repr> {
    map: bbtree::BBTreeMap<R::K, R::V>,
    _repr: PhantomData<R>,
}

impl<R: Repr> Bbtree<R> {
    /// An empty map.
    pub fn new() -> Self {
        Bbtree {
            map: bbtree::BBTreeMap::new(),
            _repr: PhantomData,
        }
    }
}

impl<R: Repr> Default for Bbtree<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    crate::build_typed!(Bbtree, shape)
}

impl<R: Repr> Index for Bbtree<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        if self.map.insert(R::key(key), R::value(value)).is_err() {
            panic!("bbtree: allocation failed on insert");
        }
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        R::with_query(key, |q| self.map.read(q, |_, v| R::value_bytes(v, out))).is_some()
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        R::with_query(key, |q| self.map.update(q, |_, v| R::set_value(v, value))).is_some()
    }

    fn remove(&self, key: &[u8]) -> bool {
        R::with_query(key, |q| self.map.remove(q)).is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        if count == 0 {
            return 0;
        }
        let mut n = 0;
        R::with_query(start, |q| {
            self.map
                .scan::<R::Q, ()>((Bound::Included(q), Bound::Unbounded), |k, v| {
                    R::with_entry(k, v, |kb, vb| visit(kb, vb));
                    n += 1;
                    if n >= count {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
        });
        n
    }

    fn repr(&self) -> &'static str {
        R::NAME
    }
}
