//! `contree-bench numa --placement`: page placement (`Numa::placement`) on a simulated NUMA
//! topology. `--threads` threads, thread `t` on simulated node `t % --nodes`, each load
//! a range of `--records / --threads` keys of their own (in ascending order: a sequence per
//! thread, as a partitioned or thread-per-core service writes), then read keys of their own
//! range for `--seconds`; three rows repeated `--reps` times in interleaved order:
//! * `simulated`: the simulated topology, placement off (every page is node 0's);
//! * `placement`: the same with placement on (a page lives on its creator's node);
//! * `+replicas`: placement and upper-level replicas (`Numa::replicas`) on: the inner nodes
//!   read come from the reader's node's replica.
//!
//! It prints each row's median load and read throughput (on a one-node machine they show only
//! what placement costs: the remote reads it saves are counted, not timed), the leaves and
//! inner nodes read on another node than the reader's per lookup, how the pages spread over
//! the nodes, and the pages handed to a thread of another node.

use crate::cli::NumaArgs;
use crate::generators::rng::FastRng;
use contree::{Config, NodeFn, Numa, ThreadMap, Topology, Tree};
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Barrier;
use std::time::Instant;

/// One run of a row.
struct Run {
    load_per_s: f64,
    read_per_s: f64,
    lookups: u64,
    remote_leaf: u64,
    remote_inner: u64,
    stats: contree::Stats,
}

thread_local! {
    /// The simulated node of a worker thread, set before it touches the tree.
    static NODE: Cell<usize> = const { Cell::new(0) };
}

/// A row: placement on, replicas on.
type Row = (bool, bool);

fn name((placement, replicas): Row) -> &'static str {
    match (placement, replicas) {
        (false, false) => "simulated",
        (true, false) => "placement",
        _ => "+replicas",
    }
}

fn config((placement, replicas): Row, nodes: usize) -> Config {
    Config {
        numa: Numa {
            topology: Topology::Simulated {
                nodes,
                threads: ThreadMap::By(NodeFn::new(|| NODE.with(Cell::get))),
            },
            placement,
            replicas,
            ..Numa::default()
        },
        ..Config::default()
    }
}

/// Runs `work(thread)` on every thread at once after a barrier, thread `t` on node
/// `t % nodes`; the seconds it took and the sum of what the threads return.
fn timed(threads: usize, nodes: usize, work: impl Fn(usize) -> u64 + Sync) -> (f64, u64) {
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (start, work) = (&start, &work);
                s.spawn(move || {
                    NODE.with(|n| n.set(t % nodes));
                    start.wait();
                    work(t)
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let n = workers.into_iter().map(|w| w.join().expect("worker")).sum();
        (t0.elapsed().as_secs_f64(), n)
    })
}

fn run_row(row: Row, args: &NumaArgs, rep: usize) -> Run {
    let tree = Tree::with_config(config(row, args.nodes)).expect("valid config");
    let per = (args.records / args.threads as u64).max(1);
    let stride = u64::MAX / (per * args.threads as u64);
    let key = |t: usize, i: u64| ((t as u64 * per + i) * stride).to_be_bytes();
    let (load_s, _) = timed(args.threads, args.nodes, |t| {
        for i in 0..per {
            tree.insert(&key(t, i), &i.to_le_bytes()).expect("load");
        }
        per
    });
    let before = tree.stats();
    let (read_s, counts) = crate::numa::for_seconds(args.threads, args.seconds, |t, stop| {
        NODE.with(|n| n.set(t % args.nodes));
        let mut rng = FastRng::new(args.seed ^ (rep as u64 * 1000 + t as u64));
        let mut buf = Vec::new();
        let mut lookups = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                tree.get_into(&key(t, rng.below(per)), &mut buf);
                lookups += 1;
            }
        }
        lookups
    });
    let lookups: u64 = counts.iter().sum();
    let stats = tree.stats();
    Run {
        load_per_s: (per * args.threads as u64) as f64 / load_s,
        read_per_s: lookups as f64 / read_s,
        lookups,
        remote_leaf: stats.numa_remote_leaf_reads - before.numa_remote_leaf_reads,
        remote_inner: stats.numa_remote_inner_reads - before.numa_remote_inner_reads,
        stats,
    }
}

pub fn run(args: &NumaArgs) {
    let rows: [Row; 3] = [(false, false), (true, false), (true, true)];
    let runs = crate::numa::interleaved(
        &rows,
        args.reps,
        |row, rep| run_row(row, args, rep),
        |row, run: &Run| {
            format!(
                "{:<9} load {:>7.3} Mops/s, reads {:>7.3} Mops/s",
                name(row),
                run.load_per_s / 1e6,
                run.read_per_s / 1e6
            )
        },
    );
    println!(
        "numa --placement: {} records, {} threads on {} simulated nodes (thread t on node t % nodes), each loading then reading its own key range, {} s x {} reps (median by read throughput)",
        args.records, args.threads, args.nodes, args.seconds, args.reps
    );
    println!(
        "{:<10} {:>11} {:>11} {:>8} {:>12} {:>13} {:>18} {:>13}",
        "row",
        "load Mops/s",
        "read Mops/s",
        "read vs",
        "remote leaf",
        "remote inner",
        "pages/node min-max",
        "placed remote"
    );
    let mut base = None;
    for (row, mut rs) in rows.iter().zip(runs) {
        rs.sort_by(|a, b| a.read_per_s.total_cmp(&b.read_per_s));
        let m = rs.remove(rs.len() / 2);
        let base = *base.get_or_insert(m.read_per_s);
        let per = |x: u64| x as f64 / m.lookups.max(1) as f64;
        let spread = match (
            m.stats.pages_per_node.iter().min(),
            m.stats.pages_per_node.iter().max(),
        ) {
            (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
            _ => "-".into(),
        };
        println!(
            "{:<10} {:>11.3} {:>11.3} {:>8.2} {:>12.4} {:>13.4} {:>18} {:>13}",
            name(*row),
            m.load_per_s / 1e6,
            m.read_per_s / 1e6,
            m.read_per_s / base,
            per(m.remote_leaf),
            per(m.remote_inner),
            spread,
            m.stats.numa_pages_placed_remote
        );
    }
}
