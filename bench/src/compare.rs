//! `contree-bench compare`: the README's main job. A fixed experiment of a few minutes on
//! 2 cores that covers the headline workloads with every peer:
//!
//! | row | workload | records | threads |
//! |---|---|---|---|
//! | `load` | random-order insert, u64 keys, 8-byte values | 1,000,000 | 1 |
//! | `ycsb-a` | 50/50 read/update, zipfian 0.99 | 500,000 | 1, 2, 8 |
//! | `ycsb-c` | reads, zipfian 0.99 | 500,000 | 1, 2, 8 |
//! | `seq-insert` | appends, all threads writing | 100,000 preloaded | 1, 2, 8 |
//! | `hot-update` | adjacent hot keys | 100,000 | 2, 8, 16 |
//! | `scan100` | scans of 100 entries from a uniform existing key, u64 keys | 200,000 | 1 |
//! | `load-str` | random-order insert, YCSB `user` keys (≤ 24 bytes) | 200,000 | 1 |
//! | `get-str` | uniform point lookups, YCSB keys | 200,000 | 1, 2 |
//! | `scan100-str` | 100-entry scans, YCSB keys | 200,000 | 1 |
//! | `load-long` | random-order insert, paths and URLs of 50–200 bytes | 100,000 | 1 |
//! | `get-long` | uniform point lookups, long keys | 100,000 | 1 |
//!
//! Peers: contree (default configuration) and every other peer; contree's ablation
//! configurations (`contree-...`) run when named with `--peers`. A peer that cannot run a
//! row skips it with a note on stderr (congee takes u64 keys only; masstree's scans are
//! wrong over keys longer than 8 bytes). `--rows` picks rows by name. Each measured run
//! lasts `--duration` seconds (0.25 by default) after a `--warmup` (0.05 s), and the whole
//! experiment is repeated `--repeat` times (3), interleaved across peers; the table shows
//! medians. (Before the three newer peers and the newer rows, runs were 0.4 s after a
//! 0.15 s warm-up; `--duration 0.4 --warmup 0.15` gives those back, at about 6 minutes.)
//! Thread counts above 2 oversubscribe the 2 cores on purpose (see the GUIDE: spinning
//! latches collapse there, parking ones must not).

use std::time::Duration;

use crate::adapters::all_peers;
use crate::cli::CompareArgs;
use crate::commands::{peers, run_and_report, Job, Outputs};
use crate::experiment::Plan;
use crate::generators::Distribution;
use crate::keys::KeyKind;
use crate::runner::Limit;
use crate::stats::Record;
use crate::workloads::hot_update::HotUpdate;
use crate::workloads::load::{Load, Order};
use crate::workloads::scan::Scan;
use crate::workloads::seq_insert::SeqInsert;
use crate::workloads::ycsb::{Ycsb, YcsbKind};
use crate::workloads::{Named, Params, Workload};
use std::path::PathBuf;

/// The rows of `compare`, in the order they run and print.
pub const ROWS: [&str; 11] = [
    "load",
    "ycsb-a",
    "ycsb-c",
    "seq-insert",
    "hot-update",
    "scan100",
    "load-str",
    "get-str",
    "scan100-str",
    "load-long",
    "get-long",
];

/// Entries per scan in the `scan100` rows.
pub const SCAN_LENGTH: usize = 100;

/// Where `compare` draws its plot: `--plot`, else `compare.svg` for a run of every row
/// (the README's main job); a run of some rows draws none, so that an A/B run of a few rows
/// does not replace the plot of the whole comparison.
pub fn plot_path(args: &CompareArgs) -> Option<PathBuf> {
    match &args.plot {
        Some(p) => Some(p.clone()),
        None if args.rows.is_empty() => Some(PathBuf::from("compare.svg")),
        None => None,
    }
}

/// Runs the compare experiment and returns its records.
pub fn run(args: &CompareArgs) -> Result<Vec<Record>, String> {
    for r in &args.rows {
        if !ROWS.contains(&r.as_str()) {
            return Err(format!("unknown row '{r}'; rows: {}", ROWS.join(", ")));
        }
    }
    let smoke = args.smoke;
    let (big, small, warmup) = if smoke {
        (4_000, 2_000, Duration::from_millis(20))
    } else {
        (1_000_000, 100_000, Duration::from_secs_f64(args.warmup))
    };
    // The newer rows use fewer records, so that ten peers fit in a few minutes.
    let (scan_records, str_records, long_records) = if smoke {
        (2_000, 2_000, 2_000)
    } else {
        (200_000, 200_000, 100_000)
    };
    let duration = if smoke {
        Duration::from_millis(50)
    } else {
        Duration::from_secs_f64(args.duration)
    };
    let params = |records, key_kind| Params {
        records,
        key_kind,
        value_size: 8,
    };
    let int = |records| params(records, KeyKind::Int);
    let load = Load::new(int(big), Order::Random);
    let ycsb_records = if smoke { big } else { big / 2 };
    let ycsb_a = Ycsb::new(YcsbKind::A, int(ycsb_records), None, 0.99, 100);
    let ycsb_c = Ycsb::new(YcsbKind::C, int(ycsb_records), None, 0.99, 100);
    let seq = SeqInsert::new(int(small), None, None);
    let hot = HotUpdate::new(int(small));
    let scan = Named::new("scan100", Scan::new(int(scan_records), SCAN_LENGTH));
    let uniform = |kind, records| {
        Ycsb::new(
            YcsbKind::C,
            params(records, kind),
            Some(Distribution::Uniform),
            0.99,
            100,
        )
    };
    let load_str = Named::new(
        "load-str",
        Load::new(params(str_records, KeyKind::Str), Order::Random),
    );
    let get_str = Named::new("get-str", uniform(KeyKind::Str, str_records));
    let scan_str = Named::new(
        "scan100-str",
        Scan::new(params(str_records, KeyKind::Str), SCAN_LENGTH),
    );
    let load_long = Named::new(
        "load-long",
        Load::new(params(long_records, KeyKind::Long), Order::Random),
    );
    let get_long = Named::new("get-long", uniform(KeyKind::Long, long_records));
    // By default every peer and contree's default configuration; ablations on request.
    let peers: Vec<_> = if args.peers.is_empty() {
        all_peers()
            .into_iter()
            .filter(|p| !p.name.starts_with("contree-"))
            .collect()
    } else {
        peers(&args.peers)?
    };
    let plan = |threads: &[usize]| Plan {
        peers: peers.clone(),
        threads: threads.to_vec(),
        repeat: args.repeat as usize,
        limit: Limit::Duration(duration),
        warmup,
        sample_every: 32,
        seed: 42,
    };
    let sweep: &[usize] = if smoke { &[1, 2] } else { &[1, 2, 8] };
    let hot_sweep: &[usize] = if smoke { &[2, 4] } else { &[2, 8, 16] };
    let workloads: [(&dyn Workload, &[usize]); 11] = [
        (&load, &[1]),
        (&ycsb_a, sweep),
        (&ycsb_c, sweep),
        (&seq, sweep),
        (&hot, hot_sweep),
        (&scan, &[1]),
        (&load_str, &[1]),
        (&get_str, &[1, 2]),
        (&scan_str, &[1]),
        (&load_long, &[1]),
        (&get_long, &[1]),
    ];
    let jobs: Vec<Job> = workloads
        .iter()
        .filter(|(w, _)| args.rows.is_empty() || args.rows.iter().any(|r| r == w.name()))
        .map(|&(workload, threads)| Job {
            workload,
            plan: plan(threads),
        })
        .collect();
    let outputs = Outputs {
        json: args.json.clone(),
        csv: args.csv.clone(),
        plot: plot_path(args),
    };
    run_and_report(&jobs, &outputs, args.quiet)
}
