//! `seq-insert`: writer threads insert monotonically increasing integer keys drawn from one
//! shared counter, so every insert lands on the rightmost leaf; optional reader threads do
//! point lookups or 100-entry scans beside them, from random existing keys or from recent
//! ones (`--reader-op`, `--recent`; `hotspots-hot-leaves.md`). Readers' throughput and
//! latency are reported apart from the writers' ([`Worker::is_reader`]).
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

/// What a seq-insert reader does.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderOp {
    /// A point lookup.
    Get,
    /// A scan of up to [`SCAN_LEN`] entries.
    Scan,
}

/// Entries a scanning reader visits.
pub const SCAN_LEN: usize = 100;

/// The seq-insert workload.
pub struct SeqInsert {
    params: Params,
    readers: Option<usize>,
    writers: Option<usize>,
    reader_op: ReaderOp,
    recent: u64,
    scatter: bool,
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
            reader_op: ReaderOp::Get,
            recent: 0,
            scatter: false,
        }
    }

    /// Keys byte-reordered as contree's `Scattered<u64>` encodes them: the first and last
    /// byte of the big-endian id swapped (the preloaded records keep plain keys).
    pub fn scattered(mut self, on: bool) -> Self {
        self.scatter = on;
        self
    }

    fn key(&self, id: u64) -> KeyBuf {
        if self.scatter {
            let mut bytes = id.to_be_bytes();
            bytes.swap(0, 7);
            KeyBuf::int(u64::from_be_bytes(bytes))
        } else {
            KeyBuf::int(id)
        }
    }

    /// Readers do `op` from one of the `recent` most recently handed out ids (0: any id).
    pub fn reading(mut self, op: ReaderOp, recent: u64) -> Self {
        self.reader_op = op;
        self.recent = recent;
        self
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
        let reads = match (self.reader_op, self.recent) {
            (ReaderOp::Get, 0) => "lookups of any key".to_string(),
            (ReaderOp::Get, n) => format!("lookups among the {n} newest keys"),
            (ReaderOp::Scan, 0) => format!("{SCAN_LEN}-entry scans from any key"),
            (ReaderOp::Scan, n) => format!("{SCAN_LEN}-entry scans from the {n} newest keys"),
        };
        let scatter = if self.scatter {
            ", byte-reordered keys"
        } else {
            ""
        };
        let readers = if r > 0 {
            format!(" ({reads}; Mops/s and latency are the writers')")
        } else {
            String::new()
        };
        format!(
            "{w} writers + {r} readers{readers}{scatter}, {}-byte values, {} records preloaded",
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
            index.insert(self.workload.key(id).as_bytes(), &self.value);
        } else {
            let items = self.workload.next_id.load(Relaxed).max(1);
            let id = match self.workload.recent {
                0 => self.rng.below(items),
                n => items - 1 - self.rng.below(n.min(items)),
            };
            let key = self.workload.key(id);
            match self.workload.reader_op {
                ReaderOp::Get => {
                    index.get(key.as_bytes(), &mut self.out);
                }
                ReaderOp::Scan => {
                    index.scan(key.as_bytes(), SCAN_LEN, &mut |_, _| {});
                }
            }
        }
        1
    }

    fn is_reader(&self) -> bool {
        !self.writer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use contree::{KeyEncode, Scattered};

    /// `--scatter` keys are the bytes contree's `Scattered<u64>` codec writes.
    #[test]
    fn scattered_keys_match_the_codec() {
        let seq = SeqInsert::new(Params::default(), None, None).scattered(true);
        for id in [0u64, 1, 255, 256, 100_000, 0x0102_0304_0506_0708, u64::MAX] {
            assert_eq!(seq.key(id).as_bytes(), Scattered(id).to_key_bytes(), "{id}");
        }
        let plain = SeqInsert::new(Params::default(), None, None);
        assert_eq!(plain.key(300).as_bytes(), 300u64.to_be_bytes());
    }
}
