//! Memory under churn and at the budget (issue "Space under churn"), with the bounds.
//!
//! `cargo run --release -p contree --example churn -- <scenario> [seconds]`
//! - `fifo`: 4 producers append increasing u64 keys, 2 consumers remove the first entry, at
//!   most 20,000 live, for `seconds` (default 10), with the space manager off and on;
//! - `window`: one thread inserts key `i` and removes `i - 1000`, 10^6 times, manager off/on;
//! - `budget`: 800,000 random u64 keys with 8-byte values into a tree with a 16 MiB budget
//!   and into one without, interleaved 3 times; then the cost of failing inserts;
//! - `idle`: 10^6 random u64 keys loaded with the space manager on, then the fill factor
//!   every 500 ms while the tree is left idle for 5 s (the process CPU time says what the
//!   manager used).
//! - `shrink`: 10^6 random u64 keys with 8-byte values, then 90% of them removed at
//!   random; the process's resident memory growth (since before the tree) per live entry
//!   after the load, after the removals, 2 s later, and after `compact`, with the space
//!   manager off and on (Linux; memory given back by `Config::return_memory`).
//!
//! Bound: pages never exceed twice the pages of a freshly compacted tree holding the live
//! entries, plus 64.

use contree::{Config, Error, Tree};
use std::time::{Duration, Instant};

#[path = "support/fifo.rs"]
mod fifo;
use fifo::{pages, run_fifo};
#[path = "support/rss.rs"]
mod rss;
use rss::rss;

fn config(space_manager: bool) -> Config {
    Config {
        space_manager,
        ..Config::default()
    }
}

/// Pages a compacted tree needs for keys `0..n` with 8-byte values.
fn needed(n: u64) -> usize {
    let t = Tree::with_config(config(false)).unwrap();
    for k in 0..n {
        t.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    t.compact();
    pages(&t)
}

fn fifo(seconds: u64) {
    let cap = 20_000;
    let bound = 2 * needed(cap as u64) + 64;
    for manager in [false, true] {
        let t = Tree::with_config(config(manager)).unwrap();
        let f = run_fifo(
            &t,
            Duration::from_secs(seconds),
            cap,
            Duration::from_millis(100),
        );
        let most = f.most_pages;
        println!(
            "fifo manager={manager} {seconds}s: inserted {} removed {} live {}  most pages {most}  end pages {}  bound {bound}  {}",
            f.inserted,
            f.removed,
            t.len(),
            pages(&t),
            if most <= bound { "ok" } else { "OVER" }
        );
    }
}

fn window() {
    let w = 1000u64;
    let bound = 2 * needed(w) + 64;
    for manager in [false, true] {
        let t = Tree::with_config(config(manager)).unwrap();
        let mut most = 0;
        let start = Instant::now();
        for i in 0..1_000_000u64 {
            t.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
            if i >= w {
                t.remove(&(i - w).to_be_bytes());
            }
            if i % 10_000 == 0 {
                most = most.max(pages(&t));
            }
        }
        println!(
            "window manager={manager}: {:.0} ms  most pages {most}  end pages {}  bound {bound}  {}",
            start.elapsed().as_secs_f64() * 1e3,
            pages(&t),
            if most <= bound { "ok" } else { "OVER" }
        );
    }
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn budget() {
    let n = 800_000;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<[u8; 8]> = (0..n).map(|_| xorshift(&mut x).to_be_bytes()).collect();
    let mut times = [Vec::new(), Vec::new()];
    for rep in 0..3 {
        for (i, max_memory) in [usize::MAX, 16 << 20].into_iter().enumerate() {
            let t = Tree::with_config(Config {
                max_memory,
                ..Config::default()
            })
            .unwrap();
            let start = Instant::now();
            let mut failed = 0;
            for k in &keys {
                if t.insert(k, &[7u8; 8]).is_err() {
                    failed += 1;
                }
            }
            let secs = start.elapsed().as_secs_f64();
            times[i].push(secs);
            let s = t.stats();
            println!(
                "budget rep {rep} max_memory {}: {:.0} ms  failed {failed}  fill {:.3}  pages {}  xmerge_attempts {}  xmerges {}",
                if max_memory == usize::MAX { "none".to_string() } else { format!("{} MiB", max_memory >> 20) },
                secs * 1e3,
                s.fill_factor,
                s.leaf_pages + s.inner_pages,
                s.xmerge_attempts,
                s.xmerges
            );
            if max_memory != usize::MAX && rep == 2 {
                // Failing inserts: fill the rest of the budget, then time new keys.
                let mut y = 0x1234_5678u64;
                let mut fails = 0u32;
                let mut failing = Duration::ZERO;
                for _ in 0..200_000 {
                    let k = xorshift(&mut y).to_be_bytes();
                    let t0 = Instant::now();
                    let r = t.insert(&k, &[7u8; 8]);
                    if let Err(Error::OutOfSpace { .. }) = r {
                        failing += t0.elapsed();
                        fails += 1;
                    }
                }
                println!(
                    "failing inserts: {fails} of 200000, {:.2} us each on average",
                    failing.as_secs_f64() * 1e6 / fails.max(1) as f64
                );
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (free, capped) = (med(&mut times[0]), med(&mut times[1]));
    println!(
        "budget: median {:.0} ms without, {:.0} ms with 16 MiB: {:.2}x (target <= 2x)",
        free * 1e3,
        capped * 1e3,
        capped / free
    );
}

fn idle() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let t = Tree::with_config(config(true)).unwrap();
    for _ in 0..1_000_000 {
        let k = xorshift(&mut x);
        t.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let cpu = || {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        (ticks(11) + ticks(12)) / 100.0
    };
    let (start, cpu0) = (Instant::now(), cpu());
    println!("idle: loaded, fill {:.3}", t.stats().fill_factor);
    while start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(500));
        println!(
            "idle: {:.1} s  fill {:.3}  cpu {:.2} s",
            start.elapsed().as_secs_f64(),
            t.stats().fill_factor,
            cpu() - cpu0
        );
    }
}

fn shrink() {
    let n = 1_000_000u64;
    for manager in [false, true] {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let keys: Vec<[u8; 8]> = (0..n).map(|_| xorshift(&mut x).to_be_bytes()).collect();
        let rss0 = rss();
        let t = Tree::with_config(config(manager)).unwrap();
        for k in &keys {
            t.insert(k, &k[..]).unwrap();
        }
        let report = |what: &str| {
            let s = t.stats();
            println!(
                "shrink manager={manager} {what}: live {}  tree bytes/entry {:.1}  RSS growth/entry {:.1}  free {} KiB  returned {} KiB",
                s.len,
                s.bytes_allocated as f64 / s.len as f64,
                (rss() - rss0) as f64 / s.len as f64,
                s.bytes_free >> 10,
                s.bytes_returned >> 10,
            );
        };
        report("loaded");
        for (i, k) in keys.iter().enumerate() {
            if i % 10 != 0 {
                t.remove(k);
            }
        }
        report("90% removed");
        std::thread::sleep(Duration::from_secs(2));
        report("2 s later");
        t.compact();
        report("compacted");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds = args.get(2).map_or(10, |s| s.parse().expect("seconds"));
    match args.get(1).map_or("all", String::as_str) {
        "fifo" => fifo(seconds),
        "window" => window(),
        "budget" => budget(),
        "idle" => idle(),
        "shrink" => shrink(),
        "all" => {
            fifo(seconds);
            window();
            budget();
            idle();
            shrink();
        }
        other => panic!("unknown scenario {other}"),
    }
}
