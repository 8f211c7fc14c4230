//! Space use before and after XMerge, and the cost of the space manager.
//!
//! `cargo run --release -p contree --example space -- <keys> <n> <manager> <compact>`
//! - `keys`: `random-u64` (8-byte big-endian random keys, 8-byte values),
//!   `sorted-paths` or `random-paths` (variable-length file paths, 8-byte values);
//! - `n`: number of keys;
//! - `manager`: `on` or `off` (`Config::space_manager`);
//! - `compact`: `compact` to call `Tree::compact` after the load and report again, `none`
//!   to stop after the load (for callgrind: `valgrind --tool=callgrind` counts every
//!   thread's instructions, so the manager's cost is included).
//!
//! Bytes per entry are reported twice: the pages the tree holds (`Stats::bytes_allocated`,
//! which drops when XMerge frees pages) and the live heap bytes of the whole process from a
//! counting allocator (which does not: freed pages stay allocated by the pool), and the
//! growth of the process's resident memory since before the tree was created (Linux), which
//! drops again when the memory of free pages goes back to the system
//! (`Config::return_memory`).

use contree::{Config, Tree};
use std::time::Instant;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
#[path = "support/rss.rs"]
mod rss;
use rss::rss;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn path(x: &mut u64, i: usize) -> Vec<u8> {
    let depth = 1 + xorshift(x) % 4;
    let mut p = String::from("/srv/data");
    for d in 0..depth {
        p.push_str(&format!("/dir{}", (xorshift(x) >> (8 * d)) % 61));
    }
    p.push_str(&format!("/file{i}.txt"));
    p.into_bytes()
}

fn report(what: &str, tree: &Tree, heap_before: isize, rss_before: isize) {
    let s = tree.stats();
    let heap = (counting_alloc::live() - heap_before) as f64 / s.len as f64;
    let rss = (rss() - rss_before) as f64 / s.len as f64;
    println!(
        "{what}: fill_factor {:.3}  tree bytes/entry {:.2}  heap bytes/entry {:.2}  RSS growth/entry {:.2}  returned {} KiB  pages {}  height {}  xmerges {}  pages_freed {}  splits {}",
        s.fill_factor,
        s.bytes_allocated as f64 / s.len as f64,
        heap,
        rss,
        s.bytes_returned >> 10,
        s.leaf_pages + s.inner_pages,
        s.height,
        s.xmerges,
        s.pages_freed,
        s.splits,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("random-u64", String::as_str).to_string();
    let n: usize = args.get(2).map_or(1_000_000, |s| s.parse().expect("n"));
    let manager = args.get(3).map_or("off", String::as_str) == "on";
    let compact = args.get(4).map_or("compact", String::as_str) == "compact";
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<Vec<u8>> = match kind.as_str() {
        "random-u64" => (0..n)
            .map(|_| xorshift(&mut x).to_be_bytes().to_vec())
            .collect(),
        "sorted-paths" | "random-paths" => {
            let mut k: Vec<Vec<u8>> = (0..n).map(|i| path(&mut x, i)).collect();
            if kind == "sorted-paths" {
                k.sort();
            }
            k
        }
        other => panic!("unknown key kind {other}"),
    };
    let heap_before = counting_alloc::live();
    let rss_before = rss();
    let tree = Tree::with_config(Config {
        space_manager: manager,
        ..Config::default()
    })
    .unwrap();
    let start = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        tree.insert(k, &(i as u64).to_le_bytes()).unwrap();
    }
    let load = start.elapsed();
    println!(
        "{kind} n={n} manager={} load {:.2}s",
        if manager { "on" } else { "off" },
        load.as_secs_f64()
    );
    report("after load", &tree, heap_before, rss_before);
    if compact {
        let start = Instant::now();
        let freed = tree.compact();
        println!(
            "compact: freed {freed} pages in {:.3}s",
            start.elapsed().as_secs_f64()
        );
        report("after compact", &tree, heap_before, rss_before);
        tree.check_invariants().unwrap();
    }
}
