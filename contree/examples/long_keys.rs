//! The cost of long keys (issue "The API users expect", part 3): contree, whose keys over
//! `Config::max_inline_key_len()` live out of line in blob pages, against bbtree and std's
//! `BTreeMap` holding `Vec<u8>` keys, on the same URL-like keys of 100 to 2,000 bytes (a
//! seeded generator: a few hosts, path segments, a query string), with repetitions
//! interleaved across the variants.
//!
//! `cargo run --release -p contree --example long_keys -- [entries] [reps] [paths]` (defaults:
//! 50,000 URL keys, 3 repetitions; `paths` adds the file paths of the installed packages, read
//! from dpkg's lists, or of the files under `/usr` where there are none). Each variant inserts every key (8-byte values) in a
//! scrambled order into an empty map, then reads every key once in another order. Prints
//! Mops/s for both phases (medians, with the ratio to bbtree) and memory per entry as a
//! ratio to `key + value bytes + 16`: contree's pages in use (after the inserts, and after
//! `compact()`), the peers' live heap bytes (a counting allocator).

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use contree::Tree;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// One measured run: insert seconds, get seconds, bytes in use after the inserts and after
/// a compaction (the peers have none: the same figure).
struct Run {
    insert: f64,
    get: f64,
    memory: f64,
    compacted: f64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` distinct URL-like keys of 100 to 2,000 bytes.
fn urls(n: usize) -> Vec<Vec<u8>> {
    const WORDS: [&str; 16] = [
        "news",
        "article",
        "2026",
        "images",
        "user",
        "profile",
        "search",
        "products",
        "category",
        "electronics",
        "docs",
        "reference",
        "api",
        "v2",
        "items",
        "archive",
    ];
    let mut rng = Rng(0x5EED);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let len = 100 + rng.below(1901) as usize;
        let mut u = format!("https://www.site{}.example.com", rng.below(40)).into_bytes();
        for _ in 0..1 + rng.below(6) {
            u.push(b'/');
            u.extend_from_slice(WORDS[rng.below(16) as usize].as_bytes());
        }
        u.extend_from_slice(format!("/{}?", rng.below(1 << 20)).as_bytes());
        while u.len() < len {
            let p = format!("p{}={:x}&", rng.below(100), rng.next());
            u.extend_from_slice(p.as_bytes());
        }
        u.truncate(len);
        if seen.insert(u.clone()) {
            out.push(u);
        }
    }
    out
}

/// The file paths of the installed packages (dpkg's lists), or of the files under `/usr`
/// where there are none, sorted and without duplicates.
fn installed_paths() -> Vec<Vec<u8>> {
    let mut out = std::collections::BTreeSet::new();
    if let Ok(dir) = std::fs::read_dir("/var/lib/dpkg/info") {
        for e in dir.flatten() {
            if e.path().extension().is_some_and(|x| x == "list") {
                if let Ok(text) = std::fs::read_to_string(e.path()) {
                    out.extend(
                        text.lines()
                            .filter(|l| !l.is_empty())
                            .map(|l| l.as_bytes().to_vec()),
                    );
                }
            }
        }
    }
    if out.is_empty() {
        let mut stack = vec![std::path::PathBuf::from("/usr")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => stack.push(p),
                    _ => {
                        out.insert(p.to_string_lossy().as_bytes().to_vec());
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

/// A scrambled order of `0..n`.
fn order(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut rng = Rng(seed | 1);
    for i in (1..n).rev() {
        v.swap(i, rng.below(i as u64 + 1) as usize);
    }
    v
}

fn measure<M>(
    keys: &[Vec<u8>],
    make: impl FnOnce() -> M,
    insert: impl Fn(&mut M, &[u8], u64),
    get: impl Fn(&M, &[u8]) -> u64,
    memory: impl Fn(&M, isize) -> (f64, f64),
) -> Run {
    let (ins, gets) = (order(keys.len(), 1), order(keys.len(), 2));
    let before = counting_alloc::live();
    let mut map = make();
    let t = Instant::now();
    for &i in &ins {
        insert(&mut map, &keys[i], i as u64);
    }
    let insert = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for &i in &gets {
        assert_eq!(black_box(get(&map, &keys[i])), i as u64);
    }
    let get = t.elapsed().as_secs_f64();
    let (memory, compacted) = memory(&map, before);
    Run {
        insert,
        get,
        memory,
        compacted,
    }
}

fn contree(keys: &[Vec<u8>]) -> Run {
    measure(
        keys,
        Tree::new,
        |t, k, v| {
            t.insert(k, &v.to_le_bytes()).unwrap();
        },
        |t, k| u64::from_le_bytes(t.get(k).unwrap().try_into().unwrap()),
        |t, _| {
            let pages = |t: &Tree| {
                let s = t.stats();
                (s.bytes_allocated - s.bytes_free - s.bytes_returned) as f64
            };
            let filled = pages(t);
            t.compact();
            (filled, pages(t))
        },
    )
}

fn bbtree(keys: &[Vec<u8>]) -> Run {
    measure(
        keys,
        bbtree::BBTreeMap::<Vec<u8>, u64>::new,
        |m, k, v| {
            m.insert(k.to_vec(), v).ok().unwrap();
        },
        |m, k| m.get_cloned(k).unwrap(),
        |_, before| {
            let b = (counting_alloc::live() - before) as f64;
            (b, b)
        },
    )
}

fn std_btree(keys: &[Vec<u8>]) -> Run {
    measure(
        keys,
        BTreeMap::<Vec<u8>, u64>::new,
        |m, k, v| {
            m.insert(k.to_vec(), v);
        },
        |m, k| *m.get(k).unwrap(),
        |_, before| {
            let b = (counting_alloc::live() - before) as f64;
            (b, b)
        },
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(50_000, |s| s.parse().expect("entries"));
    let reps: usize = args.get(2).map_or(3, |s| s.parse().expect("reps"));
    let mut keys = urls(n);
    let mut paths = 0;
    if args.get(3).is_some_and(|a| a == "paths") {
        let seen: std::collections::HashSet<Vec<u8>> = keys.iter().cloned().collect();
        let extra: Vec<Vec<u8>> = installed_paths()
            .into_iter()
            .filter(|p| !seen.contains(p))
            .collect();
        paths = extra.len();
        keys.extend(extra);
    }
    let (urls_n, n) = (n, keys.len());
    let key_bytes: usize = keys.iter().map(Vec::len).sum();
    let long = keys.iter().filter(|k| k.len() > 256).count();
    let payload = (key_bytes + n * (8 + 16)) as f64;
    type Variant = fn(&[Vec<u8>]) -> Run;
    let variants: [(&str, Variant); 3] = [
        ("contree", contree),
        ("bbtree", bbtree),
        ("std BTreeMap", std_btree),
    ];
    println!(
        "{urls_n} URL-like keys of 100..2000 bytes and {paths} installed file paths ({} bytes \
         on average, {long} over 256 bytes), 8-byte values; {reps} interleaved repetitions, \
         medians; memory = bytes in use / (key + value bytes + 16 per entry)",
        key_bytes / n
    );
    println!(
        "{:<13} {:>8} {:>9} {:>8} {:>9} {:>7} {:>9}",
        "variant", "insert", "vs bbtree", "get", "vs bbtree", "memory", "compacted"
    );
    let mut runs: Vec<Vec<Run>> = variants.iter().map(|_| Vec::new()).collect();
    for _ in 0..reps {
        for (i, (_, f)) in variants.iter().enumerate() {
            runs[i].push(f(&keys));
        }
    }
    let summary: Vec<(f64, f64, f64, f64)> = runs
        .iter()
        .map(|r| {
            (
                n as f64 / median(r.iter().map(|x| x.insert).collect()) / 1e6,
                n as f64 / median(r.iter().map(|x| x.get).collect()) / 1e6,
                median(r.iter().map(|x| x.memory).collect()) / payload,
                median(r.iter().map(|x| x.compacted).collect()) / payload,
            )
        })
        .collect();
    let (bi, bg, _, _) = summary[1];
    for ((name, _), (ins, get, mem, comp)) in variants.iter().zip(&summary) {
        println!(
            "{name:<13} {ins:>8.3} {:>8.2}x {get:>8.3} {:>8.2}x {mem:>7.3} {comp:>9.3}",
            ins / bi,
            get / bg
        );
    }
}
