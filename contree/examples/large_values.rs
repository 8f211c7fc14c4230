//! The cost of large values (issue "The API users expect", part 3): contree, whose values
//! over `Config::max_inline_value_len()` live out of line in blob pages, against bbtree and
//! std's `BTreeMap` holding `Vec<u8>` values, on the same keys, with repetitions interleaved
//! across the variants.
//!
//! `cargo run --release -p contree --example large_values -- [sizes,...] [MiB] [reps]`
//! (defaults: `512,1024,2048,4096,16384,65536,1048576`, 64 MiB of values per run, 3
//! repetitions). For each value size, each variant inserts `MiB / size` entries (8-byte
//! keys in a scrambled order) into an empty map, then reads every key once in another
//! scrambled order, copying the value out (`Tree::get`, bbtree's `get_cloned`,
//! `BTreeMap::get(..).cloned()`). Prints GB/s of value bytes for both phases (the median
//! of the repetitions, with its ratio to bbtree) and the memory per value byte: contree's
//! pages in use (leaf, inner and blob pages times the page size), the peers' live heap
//! bytes (a counting allocator), each divided by the bytes of keys and values.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use contree::Tree;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// A variant: value size and entry count in, one measured run out.
type Variant = fn(usize, usize) -> Run;

/// One measured run: insert seconds, get seconds, bytes of memory in use after the inserts.
struct Run {
    insert: f64,
    get: f64,
    memory: f64,
}

/// A scrambled order of `0..n` (a multiplicative permutation modulo the next prime would
/// do; a seeded Fisher-Yates is simpler).
fn order(n: usize, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n as u64).collect();
    let mut x = seed | 1;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn value(k: u64, size: usize) -> Vec<u8> {
    let mut v = vec![(k % 251) as u8; size];
    v[..8].copy_from_slice(&k.to_le_bytes());
    v
}

fn check(k: u64, v: &[u8], size: usize) {
    assert_eq!(v.len(), size);
    assert_eq!(v[..8], k.to_le_bytes());
}

/// Times `n` inserts of `size`-byte values into the map `make` returns, then one get of
/// every key; `memory` says how many bytes the filled map uses, given the live heap bytes
/// before it was made.
fn measure<M>(
    size: usize,
    n: usize,
    make: impl FnOnce() -> M,
    insert: impl Fn(&mut M, u64, &Vec<u8>),
    get: impl Fn(&M, u64) -> Vec<u8>,
    memory: impl Fn(&M, isize) -> f64,
) -> Run {
    let (ins, gets) = (order(n, 1), order(n, 2));
    let vals: Vec<Vec<u8>> = ins.iter().map(|&k| value(k, size)).collect();
    let before = counting_alloc::live();
    let mut map = make();
    let t = Instant::now();
    for (&k, v) in ins.iter().zip(&vals) {
        insert(&mut map, k, v);
    }
    let insert = t.elapsed().as_secs_f64();
    let memory = memory(&map, before);
    let t = Instant::now();
    for &k in &gets {
        let v = get(&map, k);
        check(k, black_box(&v), size);
    }
    let get = t.elapsed().as_secs_f64();
    Run {
        insert,
        get,
        memory,
    }
}

fn contree(size: usize, n: usize) -> Run {
    measure(
        size,
        n,
        Tree::new,
        |t, k, v| {
            t.insert(&k.to_be_bytes(), v).unwrap();
        },
        |t, k| t.get(&k.to_be_bytes()).unwrap(),
        // Pages come from the tree's own mapping, not the heap: count them.
        |t, _| {
            let s = t.stats();
            ((s.leaf_pages + s.inner_pages + s.blob_pages) * t.config().page_size) as f64
        },
    )
}

// The peers own their values: each insert copies the value into a `Vec` of its own, as
// contree copies it into its pages.
fn bbtree(size: usize, n: usize) -> Run {
    measure(
        size,
        n,
        bbtree::BBTreeMap::<u64, Vec<u8>>::new,
        |m, k, v| {
            m.insert(k, v.clone()).ok().unwrap();
        },
        |m, k| m.get_cloned(&k).unwrap(),
        |_, before| (counting_alloc::live() - before) as f64,
    )
}

fn std_btree(size: usize, n: usize) -> Run {
    measure(
        size,
        n,
        BTreeMap::<u64, Vec<u8>>::new,
        |m, k, v| {
            m.insert(k, v.clone());
        },
        |m, k| m.get(&k).cloned().unwrap(),
        |_, before| (counting_alloc::live() - before) as f64,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = args
        .get(1)
        .map_or("512,1024,2048,4096,16384,65536,1048576", |s| s.as_str())
        .split(',')
        .map(|s| s.parse().expect("sizes: comma-separated byte counts"))
        .collect();
    let mib: usize = args.get(2).map_or(64, |s| s.parse().expect("MiB"));
    let reps: usize = args.get(3).map_or(3, |s| s.parse().expect("reps"));
    let variants: [(&str, Variant); 3] = [
        ("contree", contree),
        ("bbtree", bbtree),
        ("std BTreeMap", std_btree),
    ];
    println!(
        "{mib} MiB of values per run, {reps} interleaved repetitions, medians; GB/s of value \
         bytes; memory = bytes in use / (key + value bytes)"
    );
    println!(
        "{:>8} {:>7}  {:<13} {:>8} {:>9} {:>8} {:>9} {:>7}",
        "size", "entries", "variant", "insert", "vs bbtree", "get", "vs bbtree", "memory"
    );
    for &size in &sizes {
        assert!(size >= 8, "values hold their key: at least 8 bytes");
        let n = ((mib << 20) / size).max(16);
        let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
        for _ in 0..reps {
            for (i, (_, f)) in variants.iter().enumerate() {
                runs[i].push(f(size, n));
            }
        }
        let bytes = (n * size) as f64;
        let summary: Vec<(f64, f64, f64)> = runs
            .iter()
            .map(|r| {
                (
                    bytes / median(r.iter().map(|x| x.insert).collect()) / 1e9,
                    bytes / median(r.iter().map(|x| x.get).collect()) / 1e9,
                    median(r.iter().map(|x| x.memory).collect()) / (n * (size + 8)) as f64,
                )
            })
            .collect();
        let (bi, bg, _) = summary[1];
        for ((name, _), (ins, get, mem)) in variants.iter().zip(&summary) {
            println!(
                "{size:>8} {n:>7}  {name:<13} {ins:>8.2} {:>8.2}x {get:>8.2} {:>8.2}x {mem:>7.3}",
                ins / bi,
                get / bg
            );
        }
    }
}
