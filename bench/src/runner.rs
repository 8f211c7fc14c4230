//! Runs one measured phase: T threads step a workload's workers against one index.
//!
//! - Threads start together on a barrier; the clock starts when the main thread releases it.
//! - A phase ends after a duration (the main thread sleeps, then raises a stop flag that the
//!   workers read every [`CHECK_EVERY`] steps), after a fixed operation count split evenly
//!   between the threads (for `callgrind`), or when every worker is finished (`load`).
//! - Latency is sampled: one step in `sample_every` on average is timed with two
//!   `Instant::now()` calls and recorded in the thread's own hdrhistogram, so the timer does
//!   not dominate the cost of short operations. Histograms are merged after the threads join.
//!   The timed steps lie at random gaps ([`Sampler`]), not at a fixed stride: a slow step
//!   that recurs with a fixed period (a leaf split every 256 appends) would otherwise be
//!   timed always or never, depending on its phase.
//! - Each thread counts its operations into per-second buckets for time series (`news`).
//! - Readers beside the measured writers ([`Worker::is_reader`]) are counted apart: the
//!   result's operations, latency and series are the writers', and [`PhaseResult::readers`]
//!   holds the readers' operations and latency.
//!
//! Nothing is shared between workers during a phase except the read-only stop flag and what
//! the workload itself shares.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::adapters::Index;
use crate::generators::FastRng;
use crate::workloads::{Worker, Workload};

/// Steps between two looks at the stop flag and the clock.
pub const CHECK_EVERY: u32 = 16;

/// How long a phase runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Run for this long.
    Duration(Duration),
    /// Run exactly this many operations in total (at least this many, when a step performs
    /// several operations), split evenly over the threads.
    Ops(u64),
    /// Run until every worker says it is finished (the `load` workload).
    UntilDone,
}

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// Index operations performed.
    pub ops: u64,
    /// Wall time from start until the last thread stopped.
    pub elapsed: Duration,
    /// Sampled step latencies in nanoseconds.
    pub latency: Histogram<u64>,
    /// Operations per one-second bucket since the start.
    pub per_second: Vec<u64>,
    /// The readers' share, when some workers are readers ([`Worker::is_reader`]).
    pub readers: Option<ReaderResult>,
}

/// What the readers beside the writers did in one phase.
#[derive(Debug, Clone)]
pub struct ReaderResult {
    /// Reader operations performed.
    pub ops: u64,
    /// Sampled reader step latencies in nanoseconds.
    pub latency: Histogram<u64>,
}

impl PhaseResult {
    /// Millions of operations per second.
    pub fn mops(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.ops as f64 / s / 1e6
        } else {
            0.0
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    // 1 ns to 100 s at 3 significant digits.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

struct ThreadResult {
    reader: bool,
    ops: u64,
    end: Instant,
    latency: Histogram<u64>,
    per_second: Vec<u64>,
}

/// Which steps of a thread are timed: one in `every` on average, each after a gap drawn
/// uniformly from `1..=2 * every - 1` (every step when `every` is 1). Random gaps keep the
/// sample unbiased for workloads whose slow steps recur periodically: with the stride of 32
/// this replaced, `seq-insert`'s p99 and p999 for a peer whose leaves split every 2^k
/// appends read 81 and 231 ns in one run and 6.3 and 10.8 us in another.
pub struct Sampler {
    every: u32,
    left: u32,
    rng: FastRng,
}

impl Sampler {
    /// A sampler for one in `every` steps (at least 1), its gaps drawn from `seed`.
    pub fn new(every: u32, seed: u64) -> Sampler {
        let mut s = Sampler {
            every: every.max(1),
            left: 1,
            rng: FastRng::new(seed),
        };
        s.left = s.gap();
        s
    }

    /// Whether the next step is to be timed.
    #[inline]
    pub fn take(&mut self) -> bool {
        self.left -= 1;
        if self.left > 0 {
            return false;
        }
        self.left = self.gap();
        true
    }

    fn gap(&mut self) -> u32 {
        if self.every == 1 {
            return 1;
        }
        1 + self.rng.below(2 * self.every as u64 - 1) as u32
    }
}

/// Runs `threads` workers of `workload` against `index` until `limit`.
/// `sample_every` is the latency sampling interval in steps (1 times every step).
pub fn run_phase(
    index: &dyn Index,
    workload: &dyn Workload,
    threads: usize,
    limit: Limit,
    sample_every: u32,
    seed: u64,
) -> PhaseResult {
    let threads = threads.max(1);
    let sample_every = sample_every.max(1);
    let per_thread_ops: Vec<u64> = match limit {
        Limit::Ops(n) => (0..threads as u64)
            .map(|t| n / threads as u64 + u64::from(t < n % threads as u64))
            .collect(),
        Limit::Duration(_) | Limit::UntilDone => vec![u64::MAX; threads],
    };
    // Workers and histograms are made here, before any clock or memory measurement
    // inside the threads.
    let workers: Vec<Box<dyn Worker + '_>> = (0..threads)
        .map(|t| workload.worker(t, threads, seed))
        .collect();
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    let mut start = Instant::now();

    let results: Vec<ThreadResult> = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .zip(per_thread_ops)
            .enumerate()
            .map(|(t, (mut worker, limit_ops))| {
                let (stop, barrier) = (&stop, &barrier);
                let reader = worker.is_reader();
                let mut latency = new_histogram();
                let mut sampler = Sampler::new(sample_every, seed ^ (t as u64 + 1) << 32);
                s.spawn(move || {
                    barrier.wait();
                    let begin = Instant::now();
                    let mut per_second = Vec::new();
                    let (mut ops, mut counted) = (0u64, 0u64);
                    'run: loop {
                        for _ in 0..CHECK_EVERY {
                            let n = if sampler.take() {
                                let t0 = Instant::now();
                                let n = worker.step(index);
                                let ns = t0.elapsed().as_nanos() as u64;
                                let _ = latency.record(ns.max(1));
                                n
                            } else {
                                worker.step(index)
                            };
                            if n == 0 {
                                break 'run;
                            }
                            ops += u64::from(n);
                            if ops >= limit_ops {
                                break 'run;
                            }
                        }
                        let sec = begin.elapsed().as_secs() as usize;
                        if per_second.len() <= sec {
                            per_second.resize(sec + 1, 0);
                        }
                        per_second[sec] += ops - counted;
                        counted = ops;
                        if stop.load(Relaxed) {
                            break;
                        }
                    }
                    let end = Instant::now();
                    let sec = (end - begin).as_secs() as usize;
                    if per_second.len() <= sec {
                        per_second.resize(sec + 1, 0);
                    }
                    per_second[sec] += ops - counted;
                    ThreadResult {
                        reader,
                        ops,
                        end,
                        latency,
                        per_second,
                    }
                })
            })
            .collect();
        start = Instant::now();
        barrier.wait();
        if let Limit::Duration(d) = limit {
            std::thread::sleep(d);
            stop.store(true, Relaxed);
        }
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });

    let mut latency = new_histogram();
    let mut per_second: Vec<u64> = Vec::new();
    let mut ops = 0;
    let mut end = start;
    let mut readers: Option<ReaderResult> = None;
    for r in results {
        if r.reader {
            let share = readers.get_or_insert_with(|| ReaderResult {
                ops: 0,
                latency: new_histogram(),
            });
            share.ops += r.ops;
            let _ = share.latency.add(&r.latency);
            end = end.max(r.end);
            continue;
        }
        ops += r.ops;
        end = end.max(r.end);
        let _ = latency.add(&r.latency);
        if per_second.len() < r.per_second.len() {
            per_second.resize(r.per_second.len(), 0);
        }
        for (total, x) in per_second.iter_mut().zip(&r.per_second) {
            *total += x;
        }
    }
    PhaseResult {
        ops,
        elapsed: end - start,
        latency,
        per_second,
        readers,
    }
}

#[cfg(test)]
mod tests {
    use super::Sampler;

    /// One step in `every` is timed on average, and steps that recur with a period that
    /// divides the old stride are timed at that rate too (the stride timed them never or
    /// always).
    #[test]
    fn samples_are_unbiased_for_periodic_steps() {
        for every in [1u32, 2, 32] {
            let mut s = Sampler::new(every, 42);
            let steps = 1_000_000u32;
            let (mut taken, mut periodic, mut periodic_taken) = (0u32, 0u32, 0u32);
            for step in 0..steps {
                let t = s.take();
                taken += t as u32;
                if step % 256 == 7 {
                    periodic += 1;
                    periodic_taken += t as u32;
                }
            }
            let rate = taken as f64 / steps as f64;
            assert!(
                (rate * every as f64 - 1.0).abs() < 0.02,
                "every {every}: rate {rate}"
            );
            let periodic_rate = periodic_taken as f64 / periodic as f64;
            assert!(
                (periodic_rate * every as f64 - 1.0).abs() < 0.25,
                "every {every}: periodic steps timed at {periodic_rate}"
            );
        }
    }
}
