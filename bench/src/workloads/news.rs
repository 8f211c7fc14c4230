//! `news`: the news-website benchmark of `contention-split-and-xmerge.md` §5.3.
//!
//! Articles have sequential 8-byte integer keys and 128-byte values (settable). Half the
//! threads read articles and half update their view counts, both drawing from the latest
//! distribution (zipfian, theta 0.75 by default) over the newest `records` articles only. Every
//! `period` seconds thread 0 inserts a batch of `batch` new articles (a tenth of `records` by
//! default), which become the hottest. Throughput is reported per second, as a time series.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::{FastRng, Zipfian};
use crate::keys::{fill_value, KeyBuf, KeyKind};

/// The news workload.
pub struct News {
    params: Params,
    period: Duration,
    batch: u64,
    zipf: Zipfian,
    next_id: AtomicU64,
}

impl News {
    /// A news workload; `params.records` is both the initial articles and the hot window.
    pub fn new(params: Params, theta: f64, period: Duration, batch: Option<u64>) -> Self {
        let window = params.records.max(1);
        News {
            batch: batch.unwrap_or((window / 10).max(1)),
            zipf: Zipfian::new(window, theta),
            next_id: AtomicU64::new(params.records),
            params,
            period,
        }
    }
}

impl Workload for News {
    fn name(&self) -> &'static str {
        "news"
    }

    fn config(&self, _threads: usize) -> String {
        format!(
            "latest({}) over the newest {} of {}-byte values, +{} every {:.1}s",
            self.zipf.theta(),
            self.params.records,
            self.params.value_size,
            self.batch,
            self.period.as_secs_f64()
        )
    }

    fn shape(&self) -> Shape {
        self.params.shape(KeyKind::Int)
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.next_id.store(self.params.records, Relaxed);
        self.params.load(index, KeyKind::Int, threads)
    }

    fn worker(&self, thread: usize, _threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        Box::new(NewsWorker {
            workload: self,
            reader: thread % 2 == 1,
            inserter: thread == 0,
            next_batch: Instant::now() + self.period,
            steps: 0,
            rng: FastRng::new(seed ^ ((thread as u64) << 20)),
            value: vec![0u8; self.params.value_size],
            out: Vec::new(),
            views: 0,
        })
    }

    fn reuse_index(&self) -> bool {
        false
    }

    fn time_series(&self) -> bool {
        true
    }
}

struct NewsWorker<'a> {
    workload: &'a News,
    reader: bool,
    inserter: bool,
    next_batch: Instant,
    steps: u32,
    rng: FastRng,
    value: Vec<u8>,
    out: Vec<u8>,
    views: u64,
}

impl NewsWorker<'_> {
    fn insert_batch(&mut self, index: &dyn Index) -> u32 {
        let w = self.workload;
        let start = w.next_id.load(Relaxed);
        for id in start..start + w.batch {
            fill_value(&mut self.value, id, 0);
            index.insert(KeyBuf::int(id).as_bytes(), &self.value);
        }
        // Publish the batch only once it is in: readers never miss.
        w.next_id.store(start + w.batch, Relaxed);
        self.next_batch += w.period;
        w.batch.min(u64::from(u32::MAX)) as u32
    }
}

impl Worker for NewsWorker<'_> {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        self.steps = self.steps.wrapping_add(1);
        if self.inserter && self.steps.is_multiple_of(64) && Instant::now() >= self.next_batch {
            return self.insert_batch(index);
        }
        let w = self.workload;
        let newest = w.next_id.load(Relaxed);
        let back = w.zipf.next(&mut self.rng).min(newest.saturating_sub(1));
        let id = newest - 1 - back;
        let key = KeyBuf::int(id);
        if self.reader {
            index.get(key.as_bytes(), &mut self.out);
        } else {
            self.views += 1;
            fill_value(&mut self.value, id, self.views);
            index.update(key.as_bytes(), &self.value);
        }
        1
    }
}
