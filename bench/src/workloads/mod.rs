//! Workloads: what the worker threads do to an index.
//!
//! A [`Workload`] is built once per command and shared by all runs (peers, thread counts,
//! repetitions). For each run the harness builds an empty index, calls [`Workload::setup`]
//! (an unmeasured load of the initial records, which also resets the workload's shared
//! counters), then asks for one [`Worker`] per thread and calls [`Worker::step`] in a loop.
//! A step is one operation (or one transaction for `tpcc-index`) and returns how many index
//! operations it performed; 0 means the worker has nothing left to do.
//!
//! Shared state between workers (the next id to insert, TPC-C's per-district order counters)
//! lives in atomics inside the workload; everything else is per worker.

use crate::adapters::{Index, Shape};
use crate::keys::{fill_value, KeyBuf, KeyKind};

pub mod hot_insert;
pub mod hot_update;
pub mod load;
pub mod news;
pub mod scan;
pub mod seq_insert;
pub mod tpcc;
pub mod ycsb;

/// One thread's share of a run.
pub trait Worker: Send {
    /// Performs one operation (or transaction); returns the number of index operations, or 0
    /// when this worker is finished.
    fn step(&mut self, index: &dyn Index) -> u32;
    /// Whether this worker is a reader beside the writers whose operations the run measures
    /// (seq-insert's readers): its operations and latency are reported apart.
    fn is_reader(&self) -> bool {
        false
    }
}

/// A benchmark workload.
pub trait Workload: Sync {
    /// The workload's name ("ycsb-a", "news", ...).
    fn name(&self) -> &'static str;
    /// The parameters that shape it, for the results ("zipfian(0.99) int keys, 8-byte values").
    fn config(&self, threads: usize) -> String;
    /// Key and value shape, from which peers pick their representation.
    fn shape(&self) -> Shape;
    /// Loads the initial records into a fresh `index` (unmeasured) using `threads` threads,
    /// resets the shared counters, and returns the number of entries loaded.
    fn setup(&self, index: &dyn Index, threads: usize) -> u64;
    /// The worker for thread `thread` of `threads`; `seed` varies per phase and repetition.
    fn worker(&self, thread: usize, threads: usize, seed: u64) -> Box<dyn Worker + '_>;
    /// Total number of threads when `threads` is the swept value (seq-insert adds fixed
    /// readers or writers to it).
    fn total_threads(&self, threads: usize) -> usize {
        threads
    }
    /// `Some(n)`: the run is the `n` operations the workers hand out until they are finished
    /// (the `load` workload); no warm-up, and bytes per entry are measured over the run.
    fn fixed_ops(&self) -> Option<u64> {
        None
    }
    /// Whether one loaded index may serve several thread counts in a row. False where the
    /// measured phase changes the data set so much that later runs would see another tree.
    fn reuse_index(&self) -> bool {
        true
    }
    /// Whether per-second throughput is part of the result (`news`).
    fn time_series(&self) -> bool {
        false
    }
}

/// A workload under another name, so that one experiment can run the same workload with
/// other keys as a row of its own (`compare`'s `load-str`, `get-long`, ...): results are
/// grouped by name.
pub struct Named<W> {
    name: &'static str,
    inner: W,
}

impl<W: Workload> Named<W> {
    /// `inner`, reported as `name`.
    pub fn new(name: &'static str, inner: W) -> Self {
        Named { name, inner }
    }
}

impl<W: Workload> Workload for Named<W> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn config(&self, threads: usize) -> String {
        self.inner.config(threads)
    }
    fn shape(&self) -> Shape {
        self.inner.shape()
    }
    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.inner.setup(index, threads)
    }
    fn worker(&self, thread: usize, threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        self.inner.worker(thread, threads, seed)
    }
    fn total_threads(&self, threads: usize) -> usize {
        self.inner.total_threads(threads)
    }
    fn fixed_ops(&self) -> Option<u64> {
        self.inner.fixed_ops()
    }
    fn reuse_index(&self) -> bool {
        self.inner.reuse_index()
    }
    fn time_series(&self) -> bool {
        self.inner.time_series()
    }
}

/// Parameters shared by the workloads, from the command line.
#[derive(Debug, Clone)]
pub struct Params {
    /// Initial records (or, for `load`, the records inserted).
    pub records: u64,
    /// Key encoding for the workloads that offer a choice.
    pub key_kind: KeyKind,
    /// Value size in bytes.
    pub value_size: usize,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            records: 100_000,
            key_kind: KeyKind::Int,
            value_size: 8,
        }
    }
}

impl Params {
    /// The shape of a run with these parameters and `kind` keys, without scans.
    pub fn shape(&self, kind: KeyKind) -> Shape {
        Shape {
            int_keys: kind == KeyKind::Int,
            value_size: self.value_size,
            max_key_len: kind.max_len(),
            scans: false,
        }
    }

    /// Inserts ids `[0, records)` with `kind` keys into `index`; returns `records`.
    pub fn load(&self, index: &dyn Index, kind: KeyKind, threads: usize) -> u64 {
        load_ids(index, kind, self.records, self.value_size, threads);
        self.records
    }
}

/// Inserts ids `[0, records)` with `kind` keys and `value_size` values, spread over
/// `threads` threads (each takes an interleaved share, so the load order is mixed).
pub fn load_ids(index: &dyn Index, kind: KeyKind, records: u64, value_size: usize, threads: usize) {
    load_mapped(index, kind, records, value_size, threads, |id| id);
}

/// [`load_ids`] of the ids `map(i)` for `i` in `[0, records)` (`hot-insert` spreads them
/// apart).
pub fn load_mapped(
    index: &dyn Index,
    kind: KeyKind,
    records: u64,
    value_size: usize,
    threads: usize,
    map: impl Fn(u64) -> u64 + Sync + Copy + Send,
) {
    let threads = threads.clamp(1, 16) as u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut value = vec![0u8; value_size];
                // Stride by a large odd constant so each thread's inserts land all over the
                // key space rather than in sorted order.
                let mut i = t;
                while i < records {
                    let id = map(permute(i, records));
                    fill_value(&mut value, id, 0);
                    index.insert(KeyBuf::new(kind, id).as_bytes(), &value);
                    i += threads;
                }
            });
        }
    });
}

/// A bijection on `[0, n)` that scatters consecutive inputs: a permutation of the next power
/// of two, applied again until the result falls inside `[0, n)` (cycle walking).
pub fn permute(i: u64, n: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let bits = 64 - (n - 1).leading_zeros();
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let mut x = i;
    loop {
        // Each step is a bijection on [0, 2^bits): odd multiply, xor-shift, odd multiply.
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask;
        x ^= x >> (bits / 2 + 1);
        x = x.wrapping_mul(0xD6E8_FEB8_6659_FD93) & mask;
        if x < n {
            return x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permute_is_a_bijection() {
        for n in [1u64, 2, 3, 10, 1000, 4096, 5000] {
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let p = permute(i, n);
                assert!(p < n);
                assert!(!seen[p as usize], "n={n} i={i}");
                seen[p as usize] = true;
            }
        }
    }
}
