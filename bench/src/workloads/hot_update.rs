//! `hot-update`: every thread updates a key of its own, and the keys are adjacent integers,
//! so all of them sit in one leaf (`contention-split-and-xmerge.md`, Figure 1). The threads
//! never touch each other's data, yet a tree with one latch per leaf serialises them: the
//! case Contention Split exists for.
//!
//! `records` integer keys are loaded first; the hot keys are `records / 2 + thread`.

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::keys::{fill_value, KeyBuf, KeyKind};

/// The hot-update workload.
pub struct HotUpdate {
    params: Params,
}

impl HotUpdate {
    /// A hot-update over `params.records` loaded keys (integer keys always).
    pub fn new(params: Params) -> Self {
        HotUpdate { params }
    }

    /// The id thread `thread` updates.
    pub fn hot_id(&self, thread: usize) -> u64 {
        self.params.records / 2 + thread as u64
    }
}

impl Workload for HotUpdate {
    fn name(&self) -> &'static str {
        "hot-update"
    }

    fn config(&self, threads: usize) -> String {
        format!(
            "{threads} adjacent hot keys, {}-byte values, {} records",
            self.params.value_size, self.params.records
        )
    }

    fn shape(&self) -> Shape {
        self.params.shape(KeyKind::Int)
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.params.load(index, KeyKind::Int, threads);
        // Make sure every possible hot key exists even with few records.
        let mut value = vec![0u8; self.params.value_size];
        for t in 0..1024 {
            let id = self.hot_id(t);
            if id >= self.params.records {
                fill_value(&mut value, id, 0);
                index.insert(KeyBuf::int(id).as_bytes(), &value);
            }
        }
        self.params.records
    }

    fn worker(&self, thread: usize, _threads: usize, _seed: u64) -> Box<dyn Worker + '_> {
        let id = self.hot_id(thread);
        Box::new(HotWorker {
            key: KeyBuf::int(id),
            id,
            value: vec![0u8; self.params.value_size],
            version: 0,
        })
    }
}

struct HotWorker {
    key: KeyBuf,
    id: u64,
    value: Vec<u8>,
    version: u64,
}

impl Worker for HotWorker {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        self.version += 1;
        fill_value(&mut self.value, self.id, self.version);
        index.update(self.key.as_bytes(), &self.value);
        1
    }
}
