//! `contree-bench tpc`: the thread-per-core `Executor` against the shared `Tree` on uniform
//! YCSB-A (50% reads, 50% updates of loaded keys), with client threads that generate their
//! own operations and submit them in batches (64 by default), one batch at a time or
//! pipelined (several batches in flight per client), or one request at a time (the cost of
//! the queue per request). Rows are interleaved over repetitions; with the bench built with
//! `--features latch-stats` it also counts latch acquisitions per operation (atomic ones,
//! and owner-mode ones, which are plain stores).

use crate::cli::TpcArgs;
use crate::generators::rng::{fnv1a64, FastRng};
use contree::{Client, Config, Executor, ExecutorConfig, Op, Tree};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn key(i: u64) -> [u8; 8] {
    fnv1a64(i).to_be_bytes()
}

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

/// The next YCSB-A operation of a client: a uniform loaded key, read or updated.
fn next_op(rng: &mut FastRng, records: u64) -> (bool, [u8; 8]) {
    let i = rng.below(records);
    (rng.below(2) == 0, key(i))
}

/// Runs the comparison and prints its table.
pub fn run(args: &TpcArgs) -> Result<(), String> {
    let records = args.records;
    let value = [7u8; 8];
    let partitions = args.workers * args.partitions_per_worker;
    let boundaries: Vec<Vec<u8>> = (1..partitions as u64)
        .map(|p| (u64::MAX / partitions as u64 * p).to_be_bytes().to_vec())
        .collect();
    let tree = Tree::with_config(Config::default()).map_err(|e| e.to_string())?;
    let exec = Executor::with_config(ExecutorConfig {
        workers: args.workers,
        boundaries,
        tree: Config::default(),
        // Uniform keys: the partitions stay as they start (and no slice latches).
        rebalance: None,
    })
    .map_err(|e| e.to_string())?;
    let mut loader = exec.client();
    for chunk in (0..records).collect::<Vec<_>>().chunks(1024) {
        tree_load(&tree, chunk, &value)?;
        let ops = chunk
            .iter()
            .map(|&i| Op::Insert(key(i).to_vec(), value.to_vec()))
            .collect();
        for r in loader.execute(ops) {
            r.map_err(|e| e.to_string())?;
        }
    }
    println!(
        "tpc: uniform YCSB-A (50% get, 50% update) on {records} records; shared Tree with {} \
         threads; Executor with {} workers, {} client threads, {partitions} partitions; {} s \
         per run, {} interleaved repetitions",
        args.threads, args.workers, args.clients, args.seconds, args.reps
    );
    let rows: Vec<(String, Box<dyn Fn() -> Sample + '_>)> = vec![
        (
            format!("tree {}t", args.threads),
            Box::new(|| {
                measure(args.threads, args.seconds, |t, stop, done| {
                    let mut rng = FastRng::new(args.seed + t as u64);
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..64 {
                            let (read, k) = next_op(&mut rng, records);
                            if read {
                                std::hint::black_box(tree.get(&k));
                            } else {
                                tree.insert(&k, &value).expect("update");
                            }
                        }
                        n += 64;
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                })
            }),
        ),
        (
            format!("tpc batch {}", args.batch),
            Box::new(|| tpc_row(&exec, args, args.batch, 1, &value)),
        ),
        (
            format!("tpc {}x{} piped", args.batch, args.depth),
            Box::new(|| tpc_row(&exec, args, args.batch, args.depth, &value)),
        ),
        (
            "tpc batch 1".to_string(),
            Box::new(|| tpc_row(&exec, args, 1, 1, &value)),
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
        "executor: requests per worker {:?}, messages per worker {:?}, moved {:?}",
        stats.requests, stats.messages, stats.moved
    );
    exec.check_invariants()?;
    Ok(())
}

fn tree_load(tree: &Tree, chunk: &[u64], value: &[u8]) -> Result<(), String> {
    for &i in chunk {
        tree.insert(&key(i), value).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Clients that submit batches of `batch` operations, `depth` batches in flight each (1:
/// `Client::execute`, one batch at a time; more: `Client::pipeline`). Operations count
/// when answered.
fn tpc_row(exec: &Executor, args: &TpcArgs, batch: usize, depth: usize, value: &[u8]) -> Sample {
    measure(args.clients, args.seconds, |t, stop, done| {
        let mut client = exec.client();
        let mut rng = FastRng::new(args.seed + 100 + t as u64);
        let mut n = 0;
        let mut next = || ycsb_a_batch(&mut rng, batch, value, |rng| key(rng.below(args.records)));
        if depth <= 1 {
            while !stop.load(Ordering::Relaxed) {
                execute_all(&mut client, next());
                n += batch as u64;
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
                if let Some(answers) = pipeline.submit(next()) {
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

/// A YCSB-A batch of `len` operations: each reads or updates (even odds) the key `key`
/// draws.
pub(crate) fn ycsb_a_batch(
    rng: &mut FastRng,
    len: usize,
    value: &[u8],
    mut key: impl FnMut(&mut FastRng) -> [u8; 8],
) -> Vec<Op> {
    (0..len)
        .map(|_| {
            let k = key(rng);
            if rng.below(2) == 0 {
                Op::Get(k.to_vec())
            } else {
                Op::Insert(k.to_vec(), value.to_vec())
            }
        })
        .collect()
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
