//! `load`: a bulk insert of `records` keys in random or sorted order, measured as a whole
//! (a fixed operation count, no warm-up), reporting throughput and bytes per entry.
//!
//! With T threads, random order gives each thread an interleaved share of one random
//! permutation; sorted order gives each thread a contiguous range of ids (T insertion
//! points, each moving right).

use super::{permute, Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::keys::{fill_value, KeyBuf};

/// Insertion order of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    /// A random permutation of the ids.
    Random,
    /// Ascending ids (for string keys the hashed keys are not in key order).
    Sorted,
}

/// The load workload.
pub struct Load {
    params: Params,
    order: Order,
}

impl Load {
    /// A load of `params.records` keys in `order`.
    pub fn new(params: Params, order: Order) -> Self {
        Load { params, order }
    }
}

impl Workload for Load {
    fn name(&self) -> &'static str {
        "load"
    }

    fn config(&self, _threads: usize) -> String {
        format!(
            "{} order, {} keys, {}-byte values, {} records",
            match self.order {
                Order::Random => "random",
                Order::Sorted => "sorted",
            },
            self.params.key_kind.name(),
            self.params.value_size,
            self.params.records
        )
    }

    fn shape(&self) -> Shape {
        self.params.shape(self.params.key_kind)
    }

    fn setup(&self, _index: &dyn Index, _threads: usize) -> u64 {
        self.params.records
    }

    fn worker(&self, thread: usize, threads: usize, _seed: u64) -> Box<dyn Worker + '_> {
        let n = self.params.records;
        let t = threads.max(1) as u64;
        let (next, end, stride) = match self.order {
            Order::Random => (thread as u64, n, t),
            Order::Sorted => (n * thread as u64 / t, n * (thread as u64 + 1) / t, 1),
        };
        Box::new(LoadWorker {
            workload: self,
            next,
            end,
            stride,
            value: vec![0u8; self.params.value_size],
        })
    }

    fn fixed_ops(&self) -> Option<u64> {
        Some(self.params.records)
    }

    fn reuse_index(&self) -> bool {
        false
    }
}

struct LoadWorker<'a> {
    workload: &'a Load,
    next: u64,
    end: u64,
    stride: u64,
    value: Vec<u8>,
}

impl Worker for LoadWorker<'_> {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        if self.next >= self.end {
            return 0;
        }
        let i = self.next;
        self.next += self.stride;
        let id = match self.workload.order {
            Order::Random => permute(i, self.workload.params.records),
            Order::Sorted => i,
        };
        fill_value(&mut self.value, id, 0);
        index.insert(
            KeyBuf::new(self.workload.params.key_kind, id).as_bytes(),
            &self.value,
        );
        1
    }
}
