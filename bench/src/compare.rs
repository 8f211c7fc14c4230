//! `contree-bench compare`: the README's main job. A fixed experiment of a few minutes on
//! 2 cores that covers the headline workloads with every peer:
//!
//! | workload | records | threads |
//! |---|---|---|
//! | load (random order, u64 keys, 8-byte values) | 1,000,000 | 1 |
//! | ycsb-a, zipfian 0.99 | 500,000 | 1, 2, 8 |
//! | ycsb-c, zipfian 0.99 | 500,000 | 1, 2, 8 |
//! | seq-insert (all writers) | 100,000 preloaded | 1, 2, 8 |
//! | hot-update | 100,000 | 2, 8, 16 |
//!
//! Peers: contree (default configuration) and every other peer; contree's ablation
//! configurations (`contree-...`) run when named with `--peers`. Each measured run lasts
//! `--duration` seconds (0.4 by default) after a 0.15 s warm-up, and
//! the whole experiment is repeated `--repeat` times (3), interleaved across peers; the
//! table shows medians. Thread counts above 2 oversubscribe the 2 cores on purpose (see the
//! GUIDE: spinning latches collapse there, parking ones must not).

use std::time::Duration;

use crate::adapters::all_peers;
use crate::cli::CompareArgs;
use crate::commands::{peers, run_and_report, Job, Outputs};
use crate::experiment::Plan;
use crate::keys::KeyKind;
use crate::runner::Limit;
use crate::stats::Record;
use crate::workloads::hot_update::HotUpdate;
use crate::workloads::load::{Load, Order};
use crate::workloads::seq_insert::SeqInsert;
use crate::workloads::ycsb::{Ycsb, YcsbKind};
use crate::workloads::{Params, Workload};

/// Runs the compare experiment and returns its records.
pub fn run(args: &CompareArgs) -> Result<Vec<Record>, String> {
    let (big, small, warmup) = if args.smoke {
        (4_000, 2_000, Duration::from_millis(20))
    } else {
        (1_000_000, 100_000, Duration::from_millis(150))
    };
    let duration = if args.smoke {
        Duration::from_millis(50)
    } else {
        Duration::from_secs_f64(args.duration)
    };
    let params = |records| Params {
        records,
        key_kind: KeyKind::Int,
        value_size: 8,
    };
    let load = Load::new(params(big), Order::Random);
    let ycsb_records = if args.smoke { big } else { big / 2 };
    let ycsb_a = Ycsb::new(YcsbKind::A, params(ycsb_records), None, 0.99, 100);
    let ycsb_c = Ycsb::new(YcsbKind::C, params(ycsb_records), None, 0.99, 100);
    let seq = SeqInsert::new(params(small), None, None);
    let hot = HotUpdate::new(params(small));
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
    let sweep: &[usize] = if args.smoke { &[1, 2] } else { &[1, 2, 8] };
    let hot_sweep: &[usize] = if args.smoke { &[2, 4] } else { &[2, 8, 16] };
    let workloads: [(&dyn Workload, &[usize]); 5] = [
        (&load, &[1]),
        (&ycsb_a, sweep),
        (&ycsb_c, sweep),
        (&seq, sweep),
        (&hot, hot_sweep),
    ];
    let jobs: Vec<Job> = workloads
        .iter()
        .map(|&(workload, threads)| Job {
            workload,
            plan: plan(threads),
        })
        .collect();
    let outputs = Outputs {
        json: args.json.clone(),
        csv: args.csv.clone(),
        plot: Some(args.plot.clone()),
    };
    run_and_report(&jobs, &outputs, args.quiet)
}
