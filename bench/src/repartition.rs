//! `contree-bench repartition`: what slice and meld of a `PartitionedTree` cost on a large
//! tree: time per operation and pages written (from the tree's `Stats`), against the time a
//! copy of the moved entries would take (the load rate), so that O(height) shows.

use crate::cli::RepartitionArgs;
use contree::{Config, PartitionedTree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::time::Instant;

/// Runs the measurement and prints its table.
pub fn run(args: &RepartitionArgs) -> Result<(), String> {
    let tree = PartitionedTree::with_config(Config::default()).map_err(|e| e.to_string())?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    let start = Instant::now();
    for _ in 0..args.records {
        let k: u64 = rng.gen();
        tree.insert(&k.to_be_bytes(), &k.to_le_bytes())
            .map_err(|e| e.to_string())?;
    }
    let load = start.elapsed().as_secs_f64();
    let before = tree.stats();
    println!(
        "records {}  height {}  leaf pages {}  load {:.2} s ({:.0} ns per entry)",
        before.len,
        before.height,
        before.leaf_pages,
        load,
        load * 1e9 / args.records as f64
    );
    let mut bounds: Vec<[u8; 8]> = (0..args.ops)
        .map(|_| rng.gen::<u64>().to_be_bytes())
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    timed(&tree, "slice", &bounds, |b| tree.slice(b))?;
    // Melded in a shuffled order, so that partitions of every size meet.
    for i in (1..bounds.len()).rev() {
        bounds.swap(i, rng.gen_range(0..=i));
    }
    timed(&tree, "meld", &bounds, |b| tree.meld(b))?;
    let s2 = tree.stats();
    println!(
        "after: height {}  leaf pages {}  inner pages {}  len {}",
        s2.height, s2.leaf_pages, s2.inner_pages, s2.len
    );
    tree.check_invariants()?;
    Ok(())
}

/// Runs `op` at every boundary of `bounds`, timing each, and prints the table row.
fn timed(
    tree: &PartitionedTree,
    what: &str,
    bounds: &[[u8; 8]],
    op: impl Fn(&[u8]) -> Result<(), contree::Error>,
) -> Result<(), String> {
    let before = tree.stats().repartition_pages;
    let mut times = Vec::with_capacity(bounds.len());
    for b in bounds {
        let t = Instant::now();
        op(b).map_err(|e| e.to_string())?;
        times.push(t.elapsed().as_secs_f64());
    }
    let after = tree.stats();
    let pages = after.repartition_pages - before;
    report(what, &mut times, pages, after.partitions);
    Ok(())
}

fn report(what: &str, times: &mut [f64], pages: u64, partitions: usize) {
    times.sort_by(f64::total_cmp);
    let n = times.len().max(1);
    let mean = times.iter().sum::<f64>() / n as f64;
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p) as usize] * 1e6;
    println!(
        "{what:<6} {n:>6} ops  mean {:>7.1} us  p50 {:>7.1} us  p99 {:>7.1} us  max {:>8.1} us  \
         {:.1} pages written per op  ({partitions} partitions after)",
        mean * 1e6,
        pct(0.5),
        pct(0.99),
        pct(1.0),
        pages as f64 / n as f64
    );
}
