//! `hot-insert`: every thread inserts random new keys into one narrow key range, the gap
//! between two adjacent loaded keys (`eunomia-contended-index.md`: a hot leaf that takes
//! inserts at random positions, not at its end). The range starts in one leaf and splits as
//! it fills; the writers meet on whichever leaves hold it, at positions all over them, so
//! neither an append finger nor a side structure for ordered appends applies.
//!
//! `records` integer keys are loaded with ids `i << 32`; the hot range is the 2^32 ids
//! after the middle one, drawn uniformly (a repeated id is an update of that key).

use super::{load_mapped, Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::rng::FastRng;
use crate::keys::{fill_value, KeyBuf, KeyKind};

/// Bits of an id below a loaded key: the width of every gap, the hot range's included.
const GAP_BITS: u32 = 32;

/// The hot-insert workload.
pub struct HotInsert {
    params: Params,
}

impl HotInsert {
    /// A hot-insert beside `params.records` loaded keys (integer keys always).
    pub fn new(params: Params) -> Self {
        HotInsert { params }
    }

    /// The loaded id the hot range follows.
    fn hot_base(&self) -> u64 {
        (self.params.records / 2) << GAP_BITS
    }
}

impl Workload for HotInsert {
    fn name(&self) -> &'static str {
        "hot-insert"
    }

    fn config(&self, threads: usize) -> String {
        format!(
            "{threads} threads inserting random keys between two adjacent keys, {}-byte values, {} records",
            self.params.value_size, self.params.records
        )
    }

    fn shape(&self) -> Shape {
        self.params.shape(KeyKind::Int)
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        let p = &self.params;
        load_mapped(index, KeyKind::Int, p.records, p.value_size, threads, |i| {
            i << GAP_BITS
        });
        p.records
    }

    fn worker(&self, thread: usize, _threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        Box::new(HotInsertWorker {
            rng: FastRng::new(seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            base: self.hot_base(),
            value: vec![0u8; self.params.value_size],
        })
    }

    // The runs grow the hot range: a later run would find another tree.
    fn reuse_index(&self) -> bool {
        false
    }
}

struct HotInsertWorker {
    rng: FastRng,
    base: u64,
    value: Vec<u8>,
}

impl HotInsertWorker {
    /// The next id to insert: in the hot range, never the loaded key that starts it.
    #[inline]
    fn next_id(&mut self) -> u64 {
        self.base | (self.rng.next_u64() >> GAP_BITS).max(1)
    }
}

impl Worker for HotInsertWorker {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        let id = self.next_id();
        fill_value(&mut self.value, id, 0);
        index.insert(KeyBuf::int(id).as_bytes(), &self.value);
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_fall_between_two_adjacent_loaded_keys() {
        let w = HotInsert::new(Params {
            records: 10,
            ..Params::default()
        });
        let mut worker = HotInsertWorker {
            rng: FastRng::new(1),
            base: w.hot_base(),
            value: vec![0; 8],
        };
        for _ in 0..1000 {
            let id = worker.next_id();
            assert!(id > 5 << GAP_BITS && id < 6 << GAP_BITS, "{id:#x}");
        }
    }
}
