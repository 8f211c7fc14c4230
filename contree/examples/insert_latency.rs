//! Where a load's time goes: inserts `N` keys in random order into a fresh tree, timing
//! each, and reports the time per insert, the number of splits, latency percentiles and the
//! time spent in inserts slower than 3 us (on this machine nearly all of them are the
//! splits: compare that count with the splits).
//!
//! `cargo run --release -p contree --example insert_latency -- KIND N [FLAGS]`, with KIND
//! `int` (8-byte big-endian integers) or `long` (path- and URL-like keys of 50 to 200
//! bytes, as `contree-bench`'s long keys look), and FLAGS any of `nohuge`
//! (`Config::huge_pages` off), `nosm` (`Config::space_manager` off) and `cg`: then the
//! inserts, and afterwards a `get_with` of every key, run untimed inside functions named
//! `phase_load` and `phase_get`, for callgrind
//! (`valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*phase_load*' ...`).

use std::time::Instant;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A path or URL of 50 to 200 bytes, unique for `id`: a shared root, directories from a
/// small vocabulary, then a name with the id in hex.
fn long_key(id: u64) -> Vec<u8> {
    const ROOTS: [&str; 8] = [
        "https://github.com",
        "https://docs.rs",
        "https://en.wikipedia.org",
        "/home/alice",
        "/var/lib/postgresql/15/main",
        "/usr/share/doc",
        "/srv/www/htdocs",
        "/opt/data/warehouse",
    ];
    const WORDS: [&str; 16] = [
        "src",
        "images",
        "2024",
        "archive",
        "users",
        "projects",
        "reports",
        "assets",
        "thumbnails",
        "v1",
        "api",
        "static",
        "docs",
        "build",
        "release",
        "config",
    ];
    let mut r = mix(id ^ 0x1234_5678);
    let mut k = ROOTS[(r % 8) as usize].as_bytes().to_vec();
    let target = 50 + (mix(r) % 151) as usize;
    let tail = format!("/file-{id:016x}.txt");
    while k.len() + tail.len() < target {
        r = mix(r);
        k.push(b'/');
        k.extend_from_slice(WORDS[(r % 16) as usize].as_bytes());
    }
    k.extend_from_slice(tail.as_bytes());
    k
}

#[inline(never)]
fn phase_load(tree: &contree::Tree, keys: &[Vec<u8>]) {
    for (i, k) in keys.iter().enumerate() {
        tree.insert(k, &(i as u64).to_le_bytes()).unwrap();
    }
}

#[inline(never)]
fn phase_get(tree: &contree::Tree, keys: &[Vec<u8>]) -> u64 {
    keys.iter()
        .map(|k| tree.get_with(k, |v| v[0] as u64).unwrap())
        .sum()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: insert_latency int|long N [nohuge] [nosm] [cg]";
    let (Some(kind), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let flag = |f: &str| args[3..].iter().any(|a| a == f);
    let mut ids: Vec<u64> = (0..n).collect();
    ids.sort_by_key(|&i| mix(i ^ 77));
    let keys: Vec<Vec<u8>> = match kind.as_str() {
        "int" => ids.iter().map(|i| i.to_be_bytes().to_vec()).collect(),
        "long" => ids.iter().map(|&i| long_key(i)).collect(),
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let config = contree::Config {
        huge_pages: !flag("nohuge"),
        space_manager: !flag("nosm"),
        ..contree::Config::default()
    };
    let tree = contree::Tree::with_config(config).unwrap();
    if flag("cg") {
        phase_load(&tree, &keys);
        println!("checksum {}", phase_get(&tree, &keys));
        return;
    }
    let mut lat = Vec::with_capacity(keys.len());
    let start = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        let t = Instant::now();
        tree.insert(k, &(i as u64).to_le_bytes()).unwrap();
        lat.push(t.elapsed().as_nanos() as u64);
    }
    let total = start.elapsed();
    let slow: Vec<u64> = lat.iter().copied().filter(|&t| t > 3_000).collect();
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{kind} {n}: {:.0} ns per insert, {} splits, p50 {} p96 {} p99 {} p999 {} ns, \
         {} inserts over 3 us taking {:.1} ms of {:.1} ms",
        total.as_nanos() as f64 / n as f64,
        tree.stats().splits,
        at(0.5),
        at(0.96),
        at(0.99),
        at(0.999),
        slow.len(),
        slow.iter().sum::<u64>() as f64 / 1e6,
        total.as_secs_f64() * 1e3,
    );
}
