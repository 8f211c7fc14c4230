//! Where a load's time goes: inserts `N` keys in random order into a fresh tree, timing
//! each, and reports the time per insert, the number of splits, latency percentiles and the
//! time spent in inserts slower than 3 us (on this machine nearly all of them are the
//! splits: compare that count with the splits), the pages faulted in ahead
//! (`Config::prefault`) and the loading thread's CPU time.
//!
//! `cargo run --release -p contree-bench --example insert_latency -- KIND N [FLAGS]`, with
//! KIND `int`, `str` or `long`: the keys of `compare`'s rows (8-byte big-endian integers,
//! YCSB-style `user` keys, paths and URLs of 50 to 200 bytes), in the order of its `load`
//! rows, with 8-byte values; FLAGS any of `nohuge`
//! (`Config::huge_pages` off), `nosm` (`Config::space_manager` off), `nopf`
//! (`Config::prefault` off) and `cg`: then the
//! inserts, and afterwards a `get_with` of every key, run untimed inside functions named
//! `phase_load` and `phase_get`, for callgrind
//! (`valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*phase_load*' ...`).

use contree_bench::keys::{KeyBuf, KeyKind};
use contree_bench::workloads::permute;
use std::time::Instant;

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
    let usage = "usage: insert_latency int|str|long N [nohuge] [nosm] [nopf] [cg]";
    let (Some(kind), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let flag = |f: &str| args[3..].iter().any(|a| a == f);
    let kind_of = match kind.as_str() {
        "int" => KeyKind::Int,
        "str" => KeyKind::Str,
        "long" => KeyKind::Long,
        _ => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let keys: Vec<Vec<u8>> = (0..n)
        .map(|i| KeyBuf::new(kind_of, permute(i, n)).as_bytes().to_vec())
        .collect();
    let config = contree::Config {
        huge_pages: !flag("nohuge"),
        space_manager: !flag("nosm"),
        prefault: !flag("nopf"),
        ..contree::Config::default()
    };
    let tree = contree::Tree::with_config(config).unwrap();
    if flag("cg") {
        phase_load(&tree, &keys);
        println!("checksum {}", phase_get(&tree, &keys));
        return;
    }
    let mut lat = Vec::with_capacity(keys.len());
    let cpu_start = thread_cpu_ns();
    let start = Instant::now();
    for (i, k) in keys.iter().enumerate() {
        let t = Instant::now();
        tree.insert(k, &(i as u64).to_le_bytes()).unwrap();
        lat.push(t.elapsed().as_nanos() as u64);
    }
    let total = start.elapsed();
    let cpu = thread_cpu_ns()
        .zip(cpu_start)
        .map(|(end, start)| end.saturating_sub(start));
    let slow: Vec<u64> = lat.iter().copied().filter(|&t| t > 3_000).collect();
    let stats = tree.stats();
    lat.sort_unstable();
    let at = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{kind} {n}: {:.0} ns per insert, {} splits, p50 {} p96 {} p99 {} p999 {} ns, \
         {} inserts over 3 us taking {:.1} ms of {:.1} ms, {} of {} pages faulted in ahead, \
         the loading thread's CPU time {:.1} ms",
        total.as_nanos() as f64 / n as f64,
        stats.splits,
        at(0.5),
        at(0.96),
        at(0.99),
        at(0.999),
        slow.len(),
        slow.iter().sum::<u64>() as f64 / 1e6,
        total.as_secs_f64() * 1e3,
        stats.pages_prefaulted,
        stats.leaf_pages + stats.inner_pages,
        cpu.map_or(f64::NAN, |ns| ns as f64 / 1e6),
    );
}

/// The calling thread's CPU time in nanoseconds (user and system, page faults included; not
/// the time it waited for a CPU), where the system tells it.
fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid `timespec` for the call to write.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
    }
    None
}
