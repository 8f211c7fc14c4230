//! `seq-insert`: writer threads insert monotonically increasing integer keys drawn from one
//! shared counter, so every insert lands on the rightmost leaf; optional reader threads do
//! point lookups of random existing keys beside them (`hotspots-hot-leaves.md`).
//!
//! With `--readers R` the swept thread count is the number of writers (R readers are added);
//! with `--writers W` it is the number of readers; with both, the run has exactly R + W
//! threads; with neither, every thread writes. `records` keys are loaded first so that
//! readers have something to find.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::FastRng;
use crate::keys::{fill_value, KeyBuf, KeyKind};

/// The seq-insert workload.
pub struct SeqInsert {
    params: Params,
    readers: Option<usize>,
    writers: Option<usize>,
    next_id: AtomicU64,
}

impl SeqInsert {
    /// A seq-insert with optional fixed reader and writer counts.
    pub fn new(params: Params, readers: Option<usize>, writers: Option<usize>) -> Self {
        SeqInsert {
            next_id: AtomicU64::new(params.records),
            params,
            readers,
            writers,
        }
    }

    /// (readers, writers) when the swept thread count is `threads`.
    pub fn roles(&self, threads: usize) -> (usize, usize) {
        match (self.readers, self.writers) {
            (Some(r), Some(w)) => (r, w),
            (Some(r), None) => (r, threads),
            (None, Some(w)) => (threads, w),
            (None, None) => (0, threads),
        }
    }
}

impl Workload for SeqInsert {
    fn name(&self) -> &'static str {
        "seq-insert"
    }

    fn config(&self, threads: usize) -> String {
        let (r, w) = self.roles(threads);
        format!(
            "{w} writers + {r} readers, {}-byte values, {} records preloaded",
            self.params.value_size, self.params.records
        )
    }

    fn shape(&self) -> Shape {
        self.params.shape(KeyKind::Int)
    }

    fn total_threads(&self, threads: usize) -> usize {
        let (r, w) = self.roles(threads);
        r + w
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.next_id.store(self.params.records, Relaxed);
        self.params.load(index, KeyKind::Int, threads)
    }

    fn worker(&self, thread: usize, threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        // `threads` here is the total; writers come first.
        let writers = match (self.readers, self.writers) {
            (_, Some(w)) => w,
            (Some(r), None) => threads.saturating_sub(r),
            (None, None) => threads,
        };
        Box::new(SeqWorker {
            workload: self,
            writer: thread < writers,
            rng: FastRng::new(seed ^ thread as u64),
            value: vec![0u8; self.params.value_size],
            out: Vec::new(),
        })
    }

    fn reuse_index(&self) -> bool {
        false
    }
}

struct SeqWorker<'a> {
    workload: &'a SeqInsert,
    writer: bool,
    rng: FastRng,
    value: Vec<u8>,
    out: Vec<u8>,
}

impl Worker for SeqWorker<'_> {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        if self.writer {
            let id = self.workload.next_id.fetch_add(1, Relaxed);
            fill_value(&mut self.value, id, 0);
            index.insert(KeyBuf::int(id).as_bytes(), &self.value);
        } else {
            let items = self.workload.next_id.load(Relaxed).max(1);
            let id = self.rng.below(items);
            index.get(KeyBuf::int(id).as_bytes(), &mut self.out);
        }
        1
    }
}
