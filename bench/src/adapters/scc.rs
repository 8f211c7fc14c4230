//! Adapter for `scc::TreeIndex`, a lock-free B+tree whose leaves are copy-on-write.
//!
//! `TreeIndex` values are immutable once inserted, so an update is an `upsert_sync` that
//! replaces the entry (the only way it offers). Lookups use `peek_with`; scans use `range`
//! under an epoch guard.

use std::marker::PhantomData;
use std::ops::Bound;

use super::{Index, Repr, Shape};

/// `TreeIndex` over the representation `R`.
pub struct Scc<R: Repr> {
    map: scc::TreeIndex<R::K, R::V>,
    _repr: PhantomData<R>,
}

impl<R: Repr> Scc<R> {
    /// An empty index.
    pub fn new() -> Self {
        Scc {
            map: scc::TreeIndex::new(),
            _repr: PhantomData,
        }
    }
}

impl<R: Repr> Default for Scc<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    crate::build_typed!(Scc, shape)
}

impl<R: Repr> Index for Scc<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.map.upsert_sync(R::key(key), R::value(value));
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        R::with_query(key, |q| {
            self.map.peek_with(q, |_, v| R::value_bytes(v, out))
        })
        .is_some()
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        // Only replace an existing entry: the workloads update keys that exist.
        let present = R::with_query(key, |q| self.map.contains(q));
        if present {
            self.map.upsert_sync(R::key(key), R::value(value));
        }
        present
    }

    fn remove(&self, key: &[u8]) -> bool {
        R::with_query(key, |q| self.map.remove_sync(q))
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        let guard = scc::Guard::new();
        R::with_query(start, |q| {
            let mut n = 0;
            for (k, v) in self
                .map
                .range::<R::Q, _>((Bound::Included(q), Bound::Unbounded), &guard)
                .take(count)
            {
                R::with_entry(k, v, |kb, vb| visit(kb, vb));
                n += 1;
            }
            n
        })
    }

    fn repr(&self) -> &'static str {
        R::NAME
    }
}
