//! Adapter for `crossbeam_skiplist::SkipMap`, a lock-free skip list.
//!
//! `SkipMap` values are immutable; an update replaces the entry with `insert`.

use std::marker::PhantomData;
use std::ops::Bound;

use super::{Index, Repr, Shape};

/// `SkipMap` over the representation `R`.
pub struct SkipList<R: Repr> {
    map: crossbeam_skiplist::SkipMap<R::K, R::V>,
    _repr: PhantomData<R>,
}

impl<R: Repr> SkipList<R> {
    /// An empty map.
    pub fn new() -> Self {
        SkipList {
            map: crossbeam_skiplist::SkipMap::new(),
            _repr: PhantomData,
        }
    }
}

impl<R: Repr> Default for SkipList<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    crate::build_typed!(SkipList, shape)
}

impl<R: Repr> Index for SkipList<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.map.insert(R::key(key), R::value(value));
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        match R::with_query(key, |q| self.map.get(q)) {
            Some(entry) => {
                R::value_bytes(entry.value(), out);
                true
            }
            None => false,
        }
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        let present = R::with_query(key, |q| self.map.contains_key(q));
        if present {
            self.map.insert(R::key(key), R::value(value));
        }
        present
    }

    fn remove(&self, key: &[u8]) -> bool {
        R::with_query(key, |q| self.map.remove(q)).is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        R::with_query(start, |q| {
            let mut n = 0;
            for entry in self
                .map
                .range::<R::Q, _>((Bound::Included(q), Bound::Unbounded))
                .take(count)
            {
                R::with_entry(entry.key(), entry.value(), |kb, vb| visit(kb, vb));
                n += 1;
            }
            n
        })
    }

    fn repr(&self) -> &'static str {
        R::NAME
    }
}
