//! `contree-bench hotspot`: the thread-per-core `Executor` under a moving hotspot (PLP §4.5).
//! Client threads send YCSB-A batches (50% reads, 50% updates of loaded keys); a share of
//! the keys falls in a narrow hot range that jumps to another part of the key space every
//! `--phase` seconds. Four rows, each on a freshly loaded executor with one partition per
//! worker, repeated `--reps` times in interleaved order: `uniform`, the same clients with
//! uniform keys; `spread`, the same hot set cut in one piece per worker (the same key
//! popularity, so the same caching, with an even load: the rate to come back to); `fixed`,
//! the hotspot with the partitions as they start; `rebalanced`, the hotspot with the
//! rebalancer on. Prints the throughput every `--tick` seconds with the busiest worker's
//! share of the requests (of the median repetition), how long each skewed row took after
//! every change to come back to 80% of `spread`, and writes a per-second plot.

use crate::cli::HotspotArgs;
use crate::generators::rng::FastRng;
use crate::stats::Summary;
use crate::tpc::execute_all;
use crate::tpc_mix::ycsb_a_batch;
use contree::{Config, Executor, ExecutorConfig, Op, RebalanceConfig};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The key of record `i`: spread evenly over the 8-byte key space, in order.
fn key(i: u64, records: u64) -> [u8; 8] {
    (i * (u64::MAX / records)).to_be_bytes()
}

/// Where the hot range of phase `phase` starts, as a record index: each phase lands in
/// another part of the key space.
fn hot_start(phase: u64, records: u64, width: u64) -> u64 {
    let frac = (0.1 + 0.37 * phase as f64).fract();
    ((frac * records as f64) as u64).min(records - width)
}

/// How a row's clients draw their keys.
#[derive(Clone, Copy, PartialEq)]
enum Keys {
    /// Uniform over the records.
    Uniform,
    /// `hot_share` of them from one hot range of `hot_width` of the records.
    Hot,
    /// The same hot set cut in one piece per worker, each inside that worker's partition:
    /// the same key popularity (and caching) as `Hot`, with the load even by construction.
    Spread,
}

/// One run of a row: operations per tick, the busiest worker's share per tick, and the
/// rebalancer's moves, slices and melds.
struct Series {
    ops: Vec<f64>,
    busiest: Vec<f64>,
    steps: (u64, u64, u64),
}

impl Series {
    fn mean(&self) -> f64 {
        self.ops.iter().sum::<f64>() / self.ops.len().max(1) as f64
    }

    fn median(&self) -> f64 {
        let mut ops = self.ops.clone();
        ops.sort_by(f64::total_cmp);
        ops[ops.len() / 2]
    }
}

/// The record index of a client's next key.
fn next_key(args: &HotspotArgs, rng: &mut FastRng, keys: Keys, phase: u64) -> u64 {
    let width = ((args.records as f64 * args.hot_width) as u64).max(1);
    let hit = rng.below(1_000_000) < (args.hot_share * 1e6) as u64;
    match keys {
        Keys::Hot if hit => hot_start(phase, args.records, width) + rng.below(width),
        Keys::Spread if hit => {
            let region = args.records / args.workers as u64;
            let piece = (width / args.workers as u64).max(1);
            let w = rng.below(args.workers as u64);
            w * region + hot_start(phase, region, piece) + rng.below(piece)
        }
        _ => rng.below(args.records),
    }
}

fn executor(args: &HotspotArgs, rebalance: bool) -> Result<Executor, String> {
    let boundaries = (1..args.workers as u64)
        .map(|p| key(args.records / args.workers as u64 * p, args.records).to_vec())
        .collect();
    let exec = Executor::with_config(ExecutorConfig {
        workers: args.workers,
        boundaries,
        tree: Config::default(),
        rebalance: rebalance.then(RebalanceConfig::default),
        ..ExecutorConfig::default()
    })
    .map_err(|e| e.to_string())?;
    let mut loader = exec.client();
    let value = [7u8; 8];
    for chunk in (0..args.records).collect::<Vec<_>>().chunks(1024) {
        let ops = chunk
            .iter()
            .map(|&i| Op::Insert(key(i, args.records).into(), value.into()))
            .collect();
        for r in loader.execute(ops) {
            r.map_err(|e| e.to_string())?;
        }
    }
    Ok(exec)
}

/// Runs one row: clients for `args.seconds`, sampled every tick.
fn row(args: &HotspotArgs, exec: &Executor, keys: Keys) -> Series {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let tick = Duration::from_secs_f64(args.tick);
    let ticks = (args.seconds / args.tick).round() as usize;
    let mut series = Series {
        ops: Vec::with_capacity(ticks),
        busiest: Vec::with_capacity(ticks),
        steps: (0, 0, 0),
    };
    let before = exec.stats();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..args.clients {
            let (stop, done) = (&stop, &done);
            let mut client = exec.client();
            s.spawn(move || {
                let mut rng = FastRng::new(args.seed + t as u64);
                let value = [9u8; 8];
                while !stop.load(Ordering::Relaxed) {
                    let phase = (start.elapsed().as_secs_f64() / args.phase) as u64;
                    let ops = ycsb_a_batch(&mut rng, args.batch, &value, |rng| {
                        key(next_key(args, rng, keys, phase), args.records)
                    });
                    execute_all(&mut client, ops);
                    done.fetch_add(args.batch as u64, Ordering::Relaxed);
                }
            });
        }
        let (mut last_ops, mut last_req) = (0, exec.requests());
        for n in 1..=ticks {
            let next = start + tick * n as u32;
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            let ops = done.load(Ordering::Relaxed);
            let req = exec.requests();
            let delta: Vec<u64> = req.iter().zip(&last_req).map(|(a, b)| a - b).collect();
            let total: u64 = delta.iter().sum();
            series.ops.push((ops - last_ops) as f64 / args.tick);
            series
                .busiest
                .push(delta.iter().max().copied().unwrap_or(0) as f64 / total.max(1) as f64);
            (last_ops, last_req) = (ops, req);
        }
        stop.store(true, Ordering::Relaxed);
    });
    let after = exec.stats();
    series.steps = (
        after.moves - before.moves,
        after.slices - before.slices,
        after.melds - before.melds,
    );
    series
}

/// After each change of the hot range, the time until a tick reached 80% of `base`.
fn recoveries(args: &HotspotArgs, s: &Series, base: f64) -> Vec<Option<f64>> {
    let changes = (args.seconds / args.phase).ceil() as usize;
    (0..changes)
        .map(|c| {
            let from = (c as f64 * args.phase / args.tick).round() as usize;
            let to = (((c + 1) as f64 * args.phase) / args.tick).round() as usize;
            (from..to.min(s.ops.len()))
                .find(|&t| s.ops[t] >= 0.8 * base)
                .map(|t| (t + 1 - from) as f64 * args.tick)
        })
        .collect()
}

/// Runs the rows and prints their series.
pub fn run(args: &HotspotArgs) -> Result<(), String> {
    if args.workers < 2 || args.clients == 0 || args.batch == 0 || args.records < 1000 {
        return Err(
            "hotspot needs at least 2 workers, 1 client, batches of 1 and 1000 records".into(),
        );
    }
    let share_ok = (0.0..=1.0).contains(&args.hot_share);
    let width_ok = args.hot_width > 0.0 && args.hot_width <= 1.0;
    if !(share_ok && width_ok) {
        return Err("--hot-share must lie in [0, 1] and --hot-width in (0, 1]".into());
    }
    if args.tick > args.phase || args.reps == 0 {
        return Err("--tick must not exceed --phase, and --reps must be at least 1".into());
    }
    println!(
        "hotspot: YCSB-A (50% get, 50% update) batches of {} on {} records; {} workers, {} \
         clients; {:.0}% of the keys in a hot range of {:.2}% of the records that moves every \
         {} s; {} s per row, sampled every {} s; {} interleaved repetitions",
        args.batch,
        args.records,
        args.workers,
        args.clients,
        args.hot_share * 100.0,
        args.hot_width * 100.0,
        args.phase,
        args.seconds,
        args.tick,
        args.reps
    );
    let rows = [
        ("uniform", Keys::Uniform, false),
        ("spread", Keys::Spread, false),
        ("fixed", Keys::Hot, false),
        ("rebalanced", Keys::Hot, true),
    ];
    let mut runs: Vec<Vec<Series>> = rows.iter().map(|_| Vec::new()).collect();
    for _ in 0..args.reps {
        for (i, &(_, keys, rebalance)) in rows.iter().enumerate() {
            let exec = executor(args, rebalance)?;
            runs[i].push(row(args, &exec, keys));
            exec.check_invariants()?;
        }
    }
    // Each row's median repetition by mean throughput.
    let medians: Vec<&Series> = runs
        .iter()
        .map(|r| {
            let mut by_mean: Vec<&Series> = r.iter().collect();
            by_mean.sort_by(|a, b| a.mean().total_cmp(&b.mean()));
            by_mean[by_mean.len() / 2]
        })
        .collect();
    println!(
        "Mops/s per {} s tick, median repetition (busiest worker's share of requests):",
        args.tick
    );
    print!("{:>7}", "t (s)");
    for (name, _, _) in &rows {
        print!(" {name:>24}");
    }
    println!();
    for t in 0..medians[0].ops.len() {
        print!("{:>7.2}", (t + 1) as f64 * args.tick);
        for s in &medians {
            print!(
                " {:>14.3} ({:>5.1}%) ",
                s.ops[t] / 1e6,
                s.busiest[t] * 100.0
            );
        }
        println!();
    }
    let rate = |i: usize| {
        let mut m: Vec<f64> = runs[i].iter().map(Series::median).collect();
        m.sort_by(f64::total_cmp);
        m[m.len() / 2]
    };
    let base = rate(1);
    println!(
        "rates without skew (median tick, median repetition): uniform {:.3} Mops/s; spread \
         (the same hot set, even over the workers) {:.3} Mops/s, the reference below",
        rate(0) / 1e6,
        base / 1e6
    );
    for (i, (name, _, _)) in rows.iter().enumerate().skip(2) {
        let means: Vec<String> = runs[i]
            .iter()
            .map(|s| format!("{:.2}x", s.mean() / base))
            .collect();
        let backs: Vec<String> = runs[i]
            .iter()
            .map(|s| {
                let r: Vec<String> = recoveries(args, s, base)
                    .into_iter()
                    .map(|r| r.map_or("never".into(), |t| format!("{t:.2}")))
                    .collect();
                format!("[{}]", r.join(" "))
            })
            .collect();
        let steps: Vec<String> = runs[i]
            .iter()
            .map(|s| format!("{}/{}/{}", s.steps.0, s.steps.1, s.steps.2))
            .collect();
        println!(
            "{name}: mean rate per repetition {} of spread; seconds to >= 80% of spread after \
             each change {}; moves/slices/melds {}",
            means.join(" "),
            backs.join(" "),
            steps.join(" ")
        );
    }
    if let Some(path) = &args.svg {
        let summaries: Vec<Summary> = rows
            .iter()
            .zip(&medians)
            .map(|((name, _, _), s)| per_second(name, s, args))
            .collect();
        crate::plot::write_svg(path, &summaries, "moving hotspot: Executor")?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// A row as a plot series of Mops/s per second.
fn per_second(name: &str, s: &Series, args: &HotspotArgs) -> Summary {
    let per = ((1.0 / args.tick).round() as usize).max(1);
    let series: Vec<f64> = s
        .ops
        .chunks(per)
        .map(|c| c.iter().sum::<f64>() / c.len() as f64 / 1e6)
        .collect();
    let mean = series.iter().sum::<f64>() / series.len().max(1) as f64;
    Summary {
        workload: "hotspot".into(),
        peer: name.into(),
        threads: args.clients,
        repetitions: 1,
        mops: mean,
        mops_range: (mean, mean),
        p50_ns: None,
        p99_ns: None,
        p999_ns: None,
        bytes_per_entry: None,
        series: Some(series),
        stats: None,
        reader_mops: None,
        reader_p99_ns: None,
    }
}
