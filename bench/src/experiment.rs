//! An experiment: workloads × peers × thread counts × repetitions, run in an interleaved
//! order, producing one [`Record`] per run.
//!
//! Order: for each repetition, for each workload, for each peer, for each thread count. So
//! the repetitions of one configuration are spread over the whole experiment, and a burst of
//! noise on this shared machine hits every peer alike rather than one peer's every run.
//!
//! Per peer and workload a fresh index is built and loaded ([`Workload::setup`]); bytes per
//! entry are the live-heap delta over building and loading it, divided by the entries loaded
//! (for `load`, over the measured run itself). Where the workload allows it, the loaded index
//! then serves every thread count in turn; otherwise each thread count gets its own. Every
//! measured phase (except fixed-count `load`) is preceded by an unmeasured warm-up phase.

use std::time::Duration;

use crate::adapters::{self, Index, Peer};
use crate::alloc;
use crate::progress::Progress;
use crate::runner::{run_phase, Limit, PhaseResult};
use crate::stats::Record;
use crate::workloads::Workload;

/// Everything an experiment needs besides the workloads.
#[derive(Clone)]
pub struct Plan {
    /// Peers to run, in order.
    pub peers: Vec<Peer>,
    /// Swept thread counts.
    pub threads: Vec<usize>,
    /// Repetitions.
    pub repeat: usize,
    /// Length of each measured phase.
    pub limit: Limit,
    /// Length of the warm-up before each measured phase.
    pub warmup: Duration,
    /// Latency sampling interval in steps.
    pub sample_every: u32,
    /// Base seed.
    pub seed: u64,
}

impl Plan {
    /// How many measured runs the plan makes for `workloads` (for the progress bar).
    pub fn runs(&self, workloads: &[&dyn Workload]) -> u64 {
        let per_rep: usize = workloads
            .iter()
            .map(|w| {
                let shape = w.shape();
                self.peers
                    .iter()
                    .filter(|p| p.supports(&shape).is_ok())
                    .map(|p| {
                        self.threads
                            .iter()
                            .filter(|&&t| w.total_threads(t) == 1 || p.concurrent(&shape).is_ok())
                            .count()
                    })
                    .sum::<usize>()
            })
            .sum();
        (per_rep * self.repeat) as u64
    }
}

/// Runs `workloads` under `plan`; peers that cannot run a workload are skipped with a note.
pub fn run(plan: &Plan, workloads: &[&dyn Workload], progress: &Progress) -> Vec<Record> {
    let mut records = Vec::new();
    for w in workloads {
        for p in &plan.peers {
            if let Err(why) = p.supports(&w.shape()) {
                progress.note(&format!("note: {} skips {}: {why}", p.name, w.name()));
            } else if let Err(why) = p.concurrent(&w.shape()) {
                if plan.threads.iter().any(|&t| w.total_threads(t) > 1) {
                    progress.note(&format!(
                        "note: {} runs {} single-threaded only: {why}",
                        p.name,
                        w.name()
                    ));
                }
            }
        }
    }
    for rep in 0..plan.repeat {
        for w in workloads {
            for peer in &plan.peers {
                if peer.supports(&w.shape()).is_err() {
                    continue;
                }
                run_peer(plan, *w, peer, rep, progress, &mut records);
            }
        }
    }
    records
}

fn run_peer(
    plan: &Plan,
    workload: &dyn Workload,
    peer: &Peer,
    rep: usize,
    progress: &Progress,
    records: &mut Vec<Record>,
) {
    let counting = alloc::is_counting();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let concurrent = peer.concurrent(&workload.shape()).is_ok();
    // Loading is not measured: as many threads as cores, or one for a peer that must not be
    // shared.
    let load_threads = if concurrent { cores.min(16) } else { 1 };
    let mut loaded: Option<(Box<dyn Index>, Option<f64>)> = None;
    for (i, &threads) in plan.threads.iter().enumerate() {
        let total = workload.total_threads(threads);
        if total > 1 && !concurrent {
            continue;
        }
        progress.message(format!(
            "{} {} t={} rep {}/{}",
            workload.name(),
            peer.name,
            total,
            rep + 1,
            plan.repeat
        ));
        if loaded.is_none() || !workload.reuse_index() {
            drop(loaded.take()); // free the previous index before measuring memory again
            adapters::reclaim_deferred();
            let before = alloc::live_bytes();
            let index = match peer.build(&workload.shape()) {
                Ok(index) => index,
                Err(_) => return,
            };
            let entries = workload.setup(index.as_ref(), load_threads);
            adapters::reclaim_deferred();
            let bpe = (counting && entries > 0 && workload.fixed_ops().is_none())
                .then(|| (alloc::live_bytes() - before) as f64 / entries as f64);
            loaded = Some((index, bpe));
        }
        let Some((index, setup_bpe)) = loaded.as_ref() else {
            return;
        };
        let seed = plan
            .seed
            .wrapping_add((rep as u64) << 32)
            .wrapping_add(i as u64 * 7919);
        let limit = match workload.fixed_ops() {
            Some(_) => Limit::UntilDone,
            None => {
                if !plan.warmup.is_zero() {
                    run_phase(
                        index.as_ref(),
                        workload,
                        total,
                        Limit::Duration(plan.warmup),
                        u32::MAX,
                        seed ^ 0xA5A5,
                    );
                }
                plan.limit
            }
        };
        if workload.fixed_ops().is_some() {
            adapters::reclaim_deferred();
        }
        let before_run = alloc::live_bytes();
        let result = run_phase(
            index.as_ref(),
            workload,
            total,
            limit,
            plan.sample_every,
            seed,
        );
        let bpe = match workload.fixed_ops() {
            Some(n) if counting && n > 0 => {
                adapters::reclaim_deferred();
                Some((alloc::live_bytes() - before_run) as f64 / n as f64)
            }
            _ => *setup_bpe,
        };
        records.push(record(
            workload,
            peer,
            index.as_ref(),
            (threads, total),
            rep,
            &result,
            bpe,
        ));
        progress.tick();
    }
}

fn record(
    workload: &dyn Workload,
    peer: &Peer,
    index: &dyn Index,
    (swept, threads): (usize, usize),
    rep: usize,
    result: &PhaseResult,
    bytes_per_entry: Option<f64>,
) -> Record {
    let q = |p: f64| (!result.latency.is_empty()).then(|| result.latency.value_at_quantile(p));
    Record {
        workload: workload.name().to_string(),
        peer: peer.name.to_string(),
        threads,
        repetition: rep,
        mops: result.mops(),
        ops: result.ops,
        seconds: result.elapsed.as_secs_f64(),
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        bytes_per_entry,
        stats: index.stats(),
        repr: index.repr().to_string(),
        config: workload.config(swept),
        series: workload
            .time_series()
            .then(|| per_second_mops(&result.per_second, result.elapsed.as_secs_f64())),
        reader_mops: result
            .readers
            .as_ref()
            .map(|r| r.ops as f64 / result.elapsed.as_secs_f64().max(1e-9) / 1e6),
        reader_p99_ns: result
            .readers
            .as_ref()
            .filter(|r| !r.latency.is_empty())
            .map(|r| r.latency.value_at_quantile(0.99)),
    }
}

/// Mops/s for each second of a run of `seconds`; the last, partial second is scaled to its
/// length, or left out when it is under a quarter of a second.
fn per_second_mops(per_second: &[u64], seconds: f64) -> Vec<f64> {
    per_second
        .iter()
        .enumerate()
        .filter_map(|(i, &n)| {
            let width = (seconds - i as f64).min(1.0);
            (width >= 0.25).then(|| n as f64 / width / 1e6)
        })
        .collect()
}
