//! Single-thread random insert and lookup of u64 keys with 8-byte values: contree (big-endian
//! key bytes) against bbtree (typed `u64` keys: it only takes inline keys) and std `BTreeMap`, interleaved repetitions, plus bytes per entry from a counting
//! allocator. Run: `cargo run --release -p contree --example single_thread -- [N] [REPEAT]`.
//! With `only=contree` as third argument it runs contree alone (for callgrind).

use std::collections::BTreeMap;
use std::time::Instant;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

fn keys(n: usize) -> Vec<u64> {
    let mut x = 0x9E3779B97F4A7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

struct Row {
    name: &'static str,
    insert: Vec<f64>,
    lookup: Vec<f64>,
    bytes: f64,
}

fn run(name: &str, ks: &[u64]) -> (f64, f64, f64) {
    let n = ks.len() as f64;
    let before = counting_alloc::live();
    macro_rules! measure {
        ($make:expr, $ins:expr, $get:expr) => {{
            let m = $make;
            let t = Instant::now();
            for &k in ks {
                $ins(&m, k);
            }
            let ins = n / t.elapsed().as_secs_f64() / 1e6;
            if let Some(stats) = (&m as &dyn std::any::Any)
                .downcast_ref::<contree::Tree>()
                .map(|t| t.stats())
            {
                eprintln!(
                    "contree stats: {stats:?} page bytes/entry {:.1}",
                    stats.bytes_allocated as f64 / n
                );
            }
            let bytes = (counting_alloc::live() - before) as f64 / n;
            let t = Instant::now();
            let mut hits = 0u64;
            for &k in ks {
                hits += $get(&m, k) as u64;
            }
            assert_eq!(hits, ks.len() as u64);
            let get = n / t.elapsed().as_secs_f64() / 1e6;
            (ins, get, bytes)
        }};
    }
    match name {
        "contree" => measure!(
            contree::Tree::new(),
            |t: &contree::Tree, k: u64| {
                t.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
            },
            |t: &contree::Tree, k: u64| t.get(&k.to_be_bytes()).is_some()
        ),
        "contree-get_with" => measure!(
            contree::Tree::new(),
            |t: &contree::Tree, k: u64| {
                t.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
            },
            |t: &contree::Tree, k: u64| t.get_with(&k.to_be_bytes(), |v| v[0]).is_some()
        ),
        "bbtree" => measure!(
            bbtree::BBTreeMap::<u64, u64>::new(),
            |t: &bbtree::BBTreeMap<u64, u64>, k: u64| {
                let _ = t.insert(k, k);
            },
            |t: &bbtree::BBTreeMap<u64, u64>, k: u64| t.get_copied(&k).is_some()
        ),
        "btreemap" => measure!(
            std::sync::RwLock::new(BTreeMap::<[u8; 8], [u8; 8]>::new()),
            |t: &std::sync::RwLock<BTreeMap<[u8; 8], [u8; 8]>>, k: u64| {
                t.write().unwrap().insert(k.to_be_bytes(), k.to_le_bytes());
            },
            |t: &std::sync::RwLock<BTreeMap<[u8; 8], [u8; 8]>>, k: u64| t
                .read()
                .unwrap()
                .get(&k.to_be_bytes())
                .is_some()
        ),
        _ => unreachable!(),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let repeat: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let only = args
        .get(3)
        .and_then(|s| s.strip_prefix("only=").map(str::to_string));
    let ks = keys(n);
    let mut rows: Vec<Row> = ["contree", "contree-get_with", "bbtree", "btreemap"]
        .into_iter()
        .filter(|p| only.as_deref().is_none_or(|o| o == *p))
        .map(|name| Row {
            name,
            insert: vec![],
            lookup: vec![],
            bytes: 0.0,
        })
        .collect();
    for _ in 0..repeat {
        for row in rows.iter_mut() {
            let (i, g, b) = run(row.name, &ks);
            row.insert.push(i);
            row.lookup.push(g);
            row.bytes = b;
        }
    }
    let base = rows.iter().position(|r| r.name == "bbtree");
    let (bi, bg) = base.map_or((f64::NAN, f64::NAN), |b| {
        let r = &mut rows[b];
        (median(&mut r.insert.clone()), median(&mut r.lookup.clone()))
    });
    println!("n = {n}, repeat = {repeat} (interleaved), medians in Mops/s");
    println!(
        "{:<18} {:>10} {:>8} {:>10} {:>8} {:>12}",
        "peer", "insert", "vs bb", "lookup", "vs bb", "bytes/entry"
    );
    for r in rows.iter_mut() {
        let i = median(&mut r.insert);
        let g = median(&mut r.lookup);
        println!(
            "{:<18} {:>10.3} {:>8.2} {:>10.3} {:>8.2} {:>12.1}",
            r.name,
            i,
            i / bi,
            g,
            g / bg,
            r.bytes
        );
    }
}
