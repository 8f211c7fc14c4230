//! `contree-bench numa`: upper-level replicas on a simulated NUMA topology (contree alone:
//! no peer has them). A tree of `--records` entries is loaded by one thread; then
//! `--threads` threads, mapped round-robin to `--nodes` simulated nodes, run point reads
//! of uniform keys (and a share `--writes` of inserts of new keys, which split leaves and
//! so make replicas stale) for `--seconds`, in three rows repeated `--reps` times in
//! interleaved order:
//! * `off`: the default configuration (no NUMA state: the baseline);
//! * `simulated`: the simulated topology, replicas off (point reads count the inner pages
//!   they read on another node than their thread's);
//! * `replicas`: the simulated topology with a replica of the inner levels per node.
//!
//! It prints each row's median throughput and its ratio to `off`, the inner-node pages read
//! per lookup and how many of them were remote, the share of lookups that went through a
//! replica, the refreshes, and the replica memory per node as a share of the tree's pages.
//! On a one-node machine the topology is simulated, so throughput shows only what replicas
//! cost (a refresh, the sequence checks); the remote reads they save are counted, not timed.

use crate::cli::NumaArgs;
use crate::generators::rng::FastRng;
use contree::{Config, Numa, ThreadMap, Topology, Tree};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// The key of record `i`: spread over the 8-byte key space, in order, with room between
/// for inserted keys.
fn key(i: u64, records: u64) -> [u8; 8] {
    (i * (u64::MAX / records)).to_be_bytes()
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Row {
    Off,
    Simulated,
    Replicas,
}

impl Row {
    fn name(self) -> &'static str {
        match self {
            Row::Off => "off",
            Row::Simulated => "simulated",
            Row::Replicas => "replicas",
        }
    }

    fn config(self, nodes: usize) -> Config {
        let numa = match self {
            Row::Off => Numa::default(),
            Row::Simulated | Row::Replicas => Numa {
                topology: Topology::Simulated {
                    nodes,
                    threads: ThreadMap::RoundRobin,
                },
                replicas: self == Row::Replicas,
                ..Numa::default()
            },
        };
        Config {
            numa,
            ..Config::default()
        }
    }
}

/// One run of a row.
struct Run {
    ops_per_s: f64,
    lookups: u64,
    stats: contree::Stats,
}

fn run_row(row: Row, args: &NumaArgs, rep: usize) -> Run {
    let tree = Tree::with_config(row.config(args.nodes)).expect("valid config");
    for i in 0..args.records {
        tree.insert(&key(i, args.records), &i.to_le_bytes())
            .expect("load");
    }
    let before = tree.stats();
    let (secs, counts) = for_seconds(args.threads, args.seconds, |t, stop| {
        let mut rng = FastRng::new(args.seed ^ (rep as u64 * 1000 + t as u64));
        let (mut ops, mut lookups) = (0u64, 0u64);
        let mut buf = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                let i = rng.below(args.records);
                if args.writes > 0.0 && rng.next_f64() < args.writes {
                    // A new key just above record `i`.
                    let k = (i * (u64::MAX / args.records) + 1 + rng.below(1 << 20)).to_be_bytes();
                    tree.insert(&k, &[0; 8]).expect("insert");
                } else {
                    tree.get_into(&key(i, args.records), &mut buf);
                    lookups += 1;
                }
                ops += 1;
            }
        }
        (ops, lookups)
    });
    let ops = counts.iter().map(|c| c.0).sum::<u64>() as f64 / secs;
    let lookups = counts.iter().map(|c| c.1).sum();
    let mut stats = tree.stats();
    stats.numa_reads -= before.numa_reads;
    stats.numa_inner_reads -= before.numa_inner_reads;
    stats.numa_remote_inner_reads -= before.numa_remote_inner_reads;
    stats.replica_reads -= before.replica_reads;
    stats.replica_fallbacks -= before.replica_fallbacks;
    stats.xmerges -= before.xmerges;
    stats.splits -= before.splits;
    Run {
        ops_per_s: ops,
        lookups,
        stats,
    }
}

pub fn run(args: &NumaArgs) -> Result<(), String> {
    if args.threads == 0
        || args.records == 0
        || !(1..=contree::MAX_NUMA_NODES).contains(&args.nodes)
    {
        return Err("--threads and --records must be positive, --nodes 1 to 64".into());
    }
    if args.hot_update {
        run_latch_rows(args);
        return Ok(());
    }
    if args.placement {
        crate::placement::run(args);
        return Ok(());
    }
    let rows = [Row::Off, Row::Simulated, Row::Replicas];
    let runs = interleaved(
        &rows,
        args.reps,
        |row, rep| run_row(row, args, rep),
        |row, run: &Run| format!("{:<9} {:>7.3} Mops/s", row.name(), run.ops_per_s / 1e6),
    );
    println!(
        "numa: {} records, {} threads on {} simulated nodes (round-robin), {:.0}% inserts, {} s x {} reps (median)",
        args.records,
        args.threads,
        args.nodes,
        args.writes * 100.0,
        args.seconds,
        args.reps
    );
    println!(
        "{:<10} {:>9} {:>7} {:>12} {:>13} {:>11} {:>10} {:>10} {:>14} {:>8} {:>8}",
        "row",
        "Mops/s",
        "vs off",
        "inner/lookup",
        "remote/lookup",
        "via replica",
        "fallbacks",
        "refreshes",
        "replica/node %",
        "splits",
        "xmerges"
    );
    let median = |rs: &mut Vec<Run>| -> Run {
        rs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
        rs.remove(rs.len() / 2)
    };
    let mut base = 0.0;
    for (row, mut rs) in rows.iter().zip(runs) {
        let m = median(&mut rs);
        if *row == Row::Off {
            base = m.ops_per_s;
        }
        let s = &m.stats;
        let per = |x: u64| {
            if s.numa_reads == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", x as f64 / s.numa_reads as f64)
            }
        };
        let replica_share = if *row == Row::Replicas {
            format!(
                "{:.1}%",
                100.0 * s.replica_reads as f64 / m.lookups.max(1) as f64
            )
        } else {
            "-".into()
        };
        let replica_mem = if *row == Row::Replicas && s.bytes_allocated > 0 {
            format!(
                "{:.3}",
                100.0 * s.replica_bytes as f64 / s.numa_nodes as f64 / s.bytes_allocated as f64
            )
        } else {
            "-".into()
        };
        println!(
            "{:<10} {:>9.3} {:>7.2} {:>12} {:>13} {:>11} {:>10} {:>10} {:>14} {:>8} {:>8}",
            row.name(),
            m.ops_per_s / 1e6,
            m.ops_per_s / base,
            per(s.numa_inner_reads),
            per(s.numa_remote_inner_reads),
            replica_share,
            s.replica_fallbacks,
            s.replica_refreshes,
            replica_mem,
            s.splits,
            s.xmerges
        );
    }
    Ok(())
}

/// Runs `work(t, stop)` on `threads` threads that start together (after a barrier) and go on
/// until `stop` is set, `seconds` after the start; the seconds that passed and each thread's
/// result.
pub(crate) fn for_seconds<R: Send>(
    threads: usize,
    seconds: f64,
    work: impl Fn(usize, &AtomicBool) -> R + Sync,
) -> (f64, Vec<R>) {
    let stop = AtomicBool::new(false);
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, start, work) = (&stop, &start, &work);
                s.spawn(move || {
                    start.wait();
                    work(t, stop)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        let results = workers
            .into_iter()
            .map(|w| w.join().expect("worker"))
            .collect();
        (t0.elapsed().as_secs_f64(), results)
    })
}

/// Runs every row `reps` times, interleaved in a rotating order, printing each run's
/// `describe` to stderr; the runs of each row.
pub(crate) fn interleaved<T: Copy, R>(
    rows: &[T],
    reps: usize,
    mut run: impl FnMut(T, usize) -> R,
    describe: impl Fn(T, &R) -> String,
) -> Vec<Vec<R>> {
    let mut runs: Vec<Vec<R>> = rows.iter().map(|_| Vec::new()).collect();
    for rep in 0..reps {
        for k in 0..rows.len() {
            let r = (k + rep) % rows.len();
            let result = run(rows[r], rep);
            eprintln!("rep {rep} {}", describe(rows[r], &result));
            runs[r].push(result);
        }
    }
    runs
}

/// One run of a latch row (`--hot-update`): throughput and the tree's counters after it.
struct LatchRun {
    ops_per_s: f64,
    ops: u64,
    stats: contree::Stats,
}

/// `--hot-update`: thread `t` updates key `records / 2 + t` (all in one leaf) for
/// `--seconds`, on a tree with Contention Split off and the simulated topology, the cohort
/// latch off (`simulated`) or on (`cohort`).
fn run_latch_row(cohort: bool, args: &NumaArgs) -> LatchRun {
    let config = Config {
        contention_split: false,
        numa: Numa {
            cohort,
            ..Row::Simulated.config(args.nodes).numa
        },
        ..Config::default()
    };
    let tree = Tree::with_config(config).expect("valid config");
    for i in 0..args.records {
        tree.insert(&i.to_be_bytes(), &[0; 8]).expect("load");
    }
    let hot = args.records / 2;
    let (secs, counts) = for_seconds(args.threads, args.seconds, |t, stop| {
        let k = (hot + t as u64).to_be_bytes();
        let mut ops = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                ops += 1;
                tree.update_with(&k, |v| v[..8].copy_from_slice(&ops.to_le_bytes()));
            }
        }
        ops
    });
    let ops: u64 = counts.iter().sum();
    let ops_per_s = ops as f64 / secs;
    LatchRun {
        ops_per_s,
        ops,
        stats: tree.stats(),
    }
}

fn run_latch_rows(args: &NumaArgs) {
    let rows = [false, true];
    let name = |cohort: bool| if cohort { "cohort" } else { "simulated" };
    let runs = interleaved(
        &rows,
        args.reps,
        |cohort, _| run_latch_row(cohort, args),
        |cohort, run: &LatchRun| format!("{:<9} {:>7.3} Mops/s", name(cohort), run.ops_per_s / 1e6),
    );
    println!(
        "numa --hot-update: {} records, {} threads on {} simulated nodes (round-robin), each updating its own key of one leaf, contention_split false, {} s x {} reps (median by throughput)",
        args.records, args.threads, args.nodes, args.seconds, args.reps
    );
    println!(
        "{:<10} {:>8} {:>7} {:>11} {:>11} {:>12} {:>11} {:>13} {:>8}",
        "row",
        "Mops/s",
        "vs off",
        "handoff/op",
        "same/op",
        "cross/op",
        "cross x",
        "max wait ms",
        "inflated"
    );
    let mut base: Option<(f64, f64)> = None;
    for (cohort, mut rs) in rows.iter().zip(runs) {
        rs.sort_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s));
        let m = rs.remove(rs.len() / 2);
        let s = &m.stats;
        let per = |x: u64| x as f64 / m.ops.max(1) as f64;
        let cross = per(s.numa_cross_node_handoffs);
        let (base_ops, base_cross) = *base.get_or_insert((m.ops_per_s, cross));
        println!(
            "{:<10} {:>8.3} {:>7.2} {:>11.4} {:>11.4} {:>12.5} {:>11.1} {:>13.2} {:>8}",
            name(*cohort),
            m.ops_per_s / 1e6,
            m.ops_per_s / base_ops,
            per(s.numa_same_node_handoffs + s.numa_cross_node_handoffs),
            per(s.numa_same_node_handoffs),
            cross,
            base_cross / cross.max(f64::MIN_POSITIVE),
            s.numa_latch_max_wait_ns as f64 / 1e6,
            s.cohort_latches
        );
    }
}
