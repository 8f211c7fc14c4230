//! Adapter for `congee::Congee`, an adaptive radix tree with optimistic lock coupling.
//!
//! congee maps `usize` keys to `usize` values, so it runs only when keys are 8-byte integers
//! and values are exactly 8 bytes; any other shape is refused with a reason. Every operation
//! pins a crossbeam epoch, as congee requires.

use super::{Index, Shape};

/// `Congee<usize, usize>`; keys are the big-endian integer, values the little-endian word.
pub struct CongeeIndex {
    tree: congee::Congee<usize, usize>,
}

impl CongeeIndex {
    /// An empty tree.
    pub fn new() -> Self {
        CongeeIndex {
            tree: congee::Congee::default(),
        }
    }
}

impl Default for CongeeIndex {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds the adapter, or says why `shape` is not supported.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    if shape.fits_u64() {
        Ok(Box::new(CongeeIndex::new()))
    } else {
        Err("congee stores only u64 keys and 8-byte values (use --keys int --value-size 8)".into())
    }
}

#[inline]
fn key(bytes: &[u8]) -> usize {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    u64::from_be_bytes(b) as usize
}

#[inline]
fn value(bytes: &[u8]) -> usize {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(b) as usize
}

impl Index for CongeeIndex {
    fn insert(&self, k: &[u8], v: &[u8]) {
        let guard = self.tree.pin();
        if self.tree.insert(key(k), value(v), &guard).is_err() {
            panic!("congee: out of memory on insert");
        }
    }

    fn get(&self, k: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        let guard = self.tree.pin();
        match self.tree.get(&key(k), &guard) {
            Some(v) => {
                out.extend_from_slice(&(v as u64).to_le_bytes());
                true
            }
            None => false,
        }
    }

    fn update(&self, k: &[u8], v: &[u8]) -> bool {
        let guard = self.tree.pin();
        let new = value(v);
        self.tree
            .compute_if_present(&key(k), |_| Some(new), &guard)
            .is_some()
    }

    fn remove(&self, k: &[u8]) -> bool {
        let guard = self.tree.pin();
        self.tree.remove(&key(k), &guard).is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        const CHUNK: usize = 128;
        let guard = self.tree.pin();
        let mut buf = [(0usize, 0usize); CHUNK];
        let mut from = key(start);
        let mut n = 0;
        while n < count {
            let want = (count - n).min(CHUNK);
            // congee's range end is exclusive; usize::MAX is never a workload key.
            let got = self
                .tree
                .range(&from, &usize::MAX, &mut buf[..want], &guard);
            for &(k, v) in &buf[..got] {
                visit(&(k as u64).to_be_bytes(), &(v as u64).to_le_bytes());
            }
            n += got;
            if got < want {
                break;
            }
            from = buf[got - 1].0 + 1;
        }
        n
    }

    fn repr(&self) -> &'static str {
        "u64"
    }
}
