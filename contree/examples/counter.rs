//! The cost of an atomic counter (issue "The API users expect"): `fetch_update` against the
//! in-place `update_with`, the typed `TreeMap::fetch_update`, and bbtree's
//! `update_or_insert`, on the same keys, with repetitions interleaved across the variants.
//!
//! `cargo run --release -p contree --example counter -- [threads,...] [ops per thread] [reps]`
//! (defaults: `1,8`, 1,000,000, 5). Each thread increments one of 64 counters (8-byte
//! little-endian values) chosen by a per-thread xorshift; the counters are created before the
//! clock starts. Prints million increments per second, the median of the repetitions, and
//! each variant's ratio to bbtree; checks that no increment was lost.

use contree::{Tree, TreeMap};
use std::time::Instant;

const COUNTERS: u64 = 64;

type Run = fn(usize, usize) -> u64;

fn keys(t: usize) -> impl FnMut() -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % COUNTERS
    }
}

fn total(tree: &Tree) -> u64 {
    tree.iter()
        .map(|(_, v)| u64::from_le_bytes((&v[..]).try_into().unwrap()))
        .sum()
}

fn tree_with_counters() -> Tree {
    let tree = Tree::new();
    for k in 0..COUNTERS {
        tree.insert(&k.to_be_bytes(), &0u64.to_le_bytes()).unwrap();
    }
    tree
}

fn parallel(threads: usize, body: impl Fn(usize) + Sync) {
    std::thread::scope(|s| {
        for t in 0..threads {
            let body = &body;
            s.spawn(move || body(t));
        }
    });
}

fn update_with(threads: usize, ops: usize) -> u64 {
    let tree = tree_with_counters();
    parallel(threads, |t| {
        let mut next = keys(t);
        for _ in 0..ops {
            tree.update_with(&next().to_be_bytes(), |v| {
                let n = u64::from_le_bytes((&*v).try_into().unwrap()) + 1;
                v.copy_from_slice(&n.to_le_bytes());
            });
        }
    });
    total(&tree)
}

fn fetch_update(threads: usize, ops: usize) -> u64 {
    let tree = tree_with_counters();
    parallel(threads, |t| {
        let mut next = keys(t);
        for _ in 0..ops {
            tree.fetch_update(&next().to_be_bytes(), |v| {
                let n = v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
                Some((n + 1).to_le_bytes().to_vec())
            })
            .unwrap();
        }
    });
    total(&tree)
}

fn typed_fetch_update(threads: usize, ops: usize) -> u64 {
    let map: TreeMap<u64, u64> = TreeMap::new();
    for k in 0..COUNTERS {
        map.insert(&k, &0).unwrap();
    }
    parallel(threads, |t| {
        let mut next = keys(t);
        for _ in 0..ops {
            map.fetch_update(&next(), |n| Some(n.unwrap_or(0) + 1))
                .unwrap();
        }
    });
    map.iter().map(|(_, n)| n).sum()
}

fn bbtree(threads: usize, ops: usize) -> u64 {
    let map = bbtree::BBTreeMap::<u64, u64>::new();
    for k in 0..COUNTERS {
        map.insert(k, 0).ok().unwrap();
    }
    parallel(threads, |t| {
        let mut next = keys(t);
        for _ in 0..ops {
            map.update_or_insert(next(), 1, |_, v, _| *v += 1)
                .ok()
                .unwrap();
        }
    });
    (0..COUNTERS).map(|k| map.get_copied(&k).unwrap()).sum()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let threads: Vec<usize> = args
        .first()
        .map_or("1,8", String::as_str)
        .split(',')
        .map(|t| t.parse().expect("threads: comma-separated numbers"))
        .collect();
    let ops: usize = args.get(1).map_or(1_000_000, |s| s.parse().expect("ops"));
    let reps: usize = args.get(2).map_or(5, |s| s.parse().expect("reps"));
    let variants: [(&str, Run); 4] = [
        ("contree update_with (in place)", update_with),
        ("contree fetch_update", fetch_update),
        ("contree TreeMap::fetch_update", typed_fetch_update),
        ("bbtree update_or_insert", bbtree),
    ];
    println!("{ops} increments per thread on {COUNTERS} counters, {reps} interleaved repetitions; Mops/s (median)");
    for &t in &threads {
        let mut rates = vec![Vec::new(); variants.len()];
        for _ in 0..reps {
            for (i, (name, run)) in variants.iter().enumerate() {
                let start = Instant::now();
                let sum = run(t, ops);
                let secs = start.elapsed().as_secs_f64();
                assert_eq!(sum, (t * ops) as u64, "{name} lost increments");
                rates[i].push((t * ops) as f64 / secs / 1e6);
            }
        }
        let medians: Vec<f64> = rates
            .iter_mut()
            .map(|r| {
                r.sort_by(f64::total_cmp);
                r[r.len() / 2]
            })
            .collect();
        let bb = medians[variants.len() - 1];
        for ((name, _), m) in variants.iter().zip(&medians) {
            println!(
                "threads {t:>2}  {name:<32} {m:>7.2}  {:>5.2}x bbtree",
                m / bb
            );
        }
    }
}
