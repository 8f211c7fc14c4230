//! `contree-bench tpc`: the thread-per-core `Executor` against the shared `Tree` on uniform
//! YCSB-A (50% reads, 50% updates of loaded keys), with client threads that generate their
//! own operations and submit them in batches (64 by default), one batch at a time or
//! pipelined (several batches in flight per client), or one request at a time (the cost of
//! the queue per request); and with no client threads, each worker running a resident task
//! (`Executor::on_workers`) that makes its own batches, carries out its own keys and sends
//! the others to their owners. Rows are interleaved over repetitions; with the bench built with
//! `--features latch-stats` it also counts latch acquisitions per operation (atomic ones,
//! and owner-mode ones, which are plain stores).

use crate::cli::{TpcArgs, TpcWorkload};
use crate::tpc_mix::Mix;
use contree::{Client, Config, Executor, ExecutorConfig, Op, Tree};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One measured row's result of one repetition.
struct Sample {
    ops: u64,
    seconds: f64,
    atomic: u64,
    owner: u64,
}

/// Runs `client(thread, stop, done)` on `threads` threads for `seconds`; returns the
/// operations done and the latch acquisitions counted meanwhile.
fn measure(
    threads: usize,
    seconds: f64,
    client: impl Fn(usize, &AtomicBool, &AtomicU64) + Sync,
) -> Sample {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let before = contree::latch_acquisitions();
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (stop, done, client) = (&stop, &done, &client);
            s.spawn(move || client(t, stop, done));
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let seconds = start.elapsed().as_secs_f64();
    let after = contree::latch_acquisitions();
    Sample {
        ops: done.load(Ordering::Relaxed),
        seconds,
        atomic: after.atomic - before.atomic,
        owner: after.owner - before.owner,
    }
}

/// Runs the comparison and prints its table.
pub fn run(args: &TpcArgs) -> Result<(), String> {
    let mix = match args.workload {
        TpcWorkload::YcsbA => Mix::ycsb_a(args.records),
        TpcWorkload::TpccIndex => Mix::tpcc(args.warehouses, args.records)?,
    };
    let boundaries = mix.boundaries(args.workers, args.partitions_per_worker);
    let partitions = boundaries.len() + 1;
    let tree = Tree::with_config(Config::default()).map_err(|e| e.to_string())?;
    let exec = Executor::with_config(ExecutorConfig {
        workers: args.workers,
        boundaries,
        tree: Config::default(),
        // The partitions stay as they start (and no slice latches).
        rebalance: None,
        poll: std::time::Duration::from_micros(args.poll_us),
    })
    .map_err(|e| e.to_string())?;
    mix.load(&tree, &mut exec.client())?;
    println!(
        "tpc: {}; shared Tree with {} threads; Executor with {} workers, {} client threads, \
         {partitions} partitions; {} s per run, {} interleaved repetitions",
        mix.describe(args.threads),
        args.threads,
        args.workers,
        args.clients,
        args.seconds,
        args.reps
    );
    let rows: Vec<(String, Box<dyn Fn() -> Sample + '_>)> = vec![
        (
            format!("tree {}t", args.threads),
            Box::new(|| {
                measure(args.threads, args.seconds, |t, stop, done| {
                    let mut client = mix.tree_client(&tree, t, args.threads, args.seed + t as u64);
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        n += client();
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                })
            }),
        ),
        (
            format!("tpc batch {}", args.batch),
            Box::new(|| tpc_row(&exec, &mix, args, args.batch, 1)),
        ),
        (
            format!("tpc {}x{} piped", args.batch, args.depth),
            Box::new(|| tpc_row(&exec, &mix, args, args.batch, args.depth)),
        ),
        (
            mix.unbatched_row().to_string(),
            Box::new(|| tpc_row(&exec, &mix, args, 1, 1)),
        ),
        (
            format!("tpc resident {}", args.batch),
            Box::new(|| resident_row(&exec, &mix, args, args.batch)),
        ),
    ];
    let mut samples: Vec<Vec<Sample>> = rows.iter().map(|_| Vec::new()).collect();
    for _ in 0..args.reps {
        for (i, (_, row)) in rows.iter().enumerate() {
            samples[i].push(row());
        }
    }
    let base = median_rate(&samples[0]);
    println!(
        "{:<14} {:>12} {:>8} {:>12} {:>16} {:>16}",
        "row", "Mops/s", "ratio", "ns/op/thread", "atomic latch/op", "owner latch/op"
    );
    for ((name, _), s) in rows.iter().zip(&samples) {
        let rate = median_rate(s);
        let ops: u64 = s.iter().map(|x| x.ops).sum();
        let threads = if name.starts_with("tree") {
            args.threads
        } else if name.starts_with("tpc resident") {
            args.workers
        } else {
            args.clients
        };
        println!(
            "{name:<14} {:>12.3} {:>7.2}x {:>12.0} {:>16.4} {:>16.4}",
            rate / 1e6,
            rate / base,
            threads as f64 * 1e9 / rate,
            s.iter().map(|x| x.atomic).sum::<u64>() as f64 / ops as f64,
            s.iter().map(|x| x.owner).sum::<u64>() as f64 / ops as f64,
        );
    }
    let stats = exec.stats();
    println!(
        "executor: requests per worker {:?}, messages per worker {:?}, parks per worker {:?}, \
         moved {:?}",
        stats.requests, stats.messages, stats.parks, stats.moved
    );
    exec.check_invariants()?;
    Ok(())
}

/// Clients that submit batches of `batch` operations, `depth` batches in flight each (1:
/// `Client::execute`, one batch at a time; more: `Client::pipeline`). Operations count
/// when answered.
fn tpc_row(exec: &Executor, mix: &Mix, args: &TpcArgs, batch: usize, depth: usize) -> Sample {
    measure(args.clients, args.seconds, |t, stop, done| {
        let mut client = exec.client();
        let mut next = mix.batches(t, args.clients, args.seed + 100 + t as u64);
        let mut n = 0;
        if depth <= 1 {
            while !stop.load(Ordering::Relaxed) {
                let ops = next(batch);
                n += ops.len() as u64;
                execute_all(&mut client, ops);
            }
        } else {
            let mut pipeline = client.pipeline(depth);
            let mut answered = |answers: Vec<contree::OpResult>| {
                for r in answers {
                    r.expect("an executor request");
                    n += 1;
                }
            };
            while !stop.load(Ordering::Relaxed) {
                if let Some(answers) = pipeline.submit(next(batch)) {
                    answered(answers);
                }
            }
            while let Some(answers) = pipeline.wait() {
                answered(answers);
            }
        }
        done.fetch_add(n, Ordering::Relaxed);
    })
}

/// Resident tasks (`Executor::on_workers`): each worker makes its own batches of `batch`
/// operations, carries out those on its own partitions itself and sends the others to
/// their owners (no client threads). Operations count when answered.
fn resident_row(exec: &Executor, mix: &Mix, args: &TpcArgs, batch: usize) -> Sample {
    // One thread of `measure`'s: it hands the run to the workers and waits for them.
    measure(1, args.seconds, |_, stop, done| {
        let counts = exec
            .on_workers(|resident| {
                let w = resident.worker();
                let mut next = mix.batches(w, args.workers, args.seed + 200 + w as u64);
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    for r in resident.execute(next(batch)) {
                        r.expect("an executor request");
                        n += 1;
                    }
                }
                n
            })
            .expect("a running executor");
        done.fetch_add(counts.iter().sum(), Ordering::Relaxed);
    })
}

/// Sends `ops`; an error answer is a bug of the executor.
pub(crate) fn execute_all(client: &mut Client, ops: Vec<Op>) {
    for r in client.execute(ops) {
        r.expect("an executor request");
    }
}

fn median_rate(samples: &[Sample]) -> f64 {
    let mut rates: Vec<f64> = samples.iter().map(|s| s.ops as f64 / s.seconds).collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}
