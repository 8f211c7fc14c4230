//! Adapter for std `BTreeMap` behind a `parking_lot::RwLock`: the baseline every Rust user
//! has. Reads and scans take the lock shared, writes exclusive.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ops::Bound;

use parking_lot::RwLock;

use super::{Index, Repr, Shape};

/// `RwLock<BTreeMap>` over the representation `R`.
pub struct LockedBTreeMap<R: Repr> {
    map: RwLock<BTreeMap<R::K, R::V>>,
    _repr: PhantomData<R>,
}

impl<R: Repr> LockedBTreeMap<R> {
    /// An empty map.
    pub fn new() -> Self {
        LockedBTreeMap {
            map: RwLock::new(BTreeMap::new()),
            _repr: PhantomData,
        }
    }
}

impl<R: Repr> Default for LockedBTreeMap<R> {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    crate::build_typed!(LockedBTreeMap, shape)
}

impl<R: Repr> Index for LockedBTreeMap<R> {
    fn insert(&self, key: &[u8], value: &[u8]) {
        let (k, v) = (R::key(key), R::value(value));
        self.map.write().insert(k, v);
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        let map = self.map.read();
        match R::with_query(key, |q| map.get(q)) {
            Some(v) => {
                R::value_bytes(v, out);
                true
            }
            None => false,
        }
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        let mut map = self.map.write();
        match R::with_query(key, |q| map.get_mut(q)) {
            Some(v) => {
                R::set_value(v, value);
                true
            }
            None => false,
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        let removed = {
            let mut map = self.map.write();
            R::with_query(key, |q| map.remove(q))
        };
        // The value is dropped outside the lock.
        removed.is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        let map = self.map.read();
        R::with_query(start, |q| {
            let mut n = 0;
            for (k, v) in map
                .range::<R::Q, _>((Bound::Included(q), Bound::Unbounded))
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
