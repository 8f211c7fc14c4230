//! What each subcommand does: builds its workload and plan from the parsed arguments, runs
//! the experiment, and writes the table and the requested files.

use std::path::PathBuf;
use std::time::Duration;

use crate::adapters::{self, Peer};
use crate::cli::{Cli, Command, RunArgs, YcsbArgs};
use crate::experiment::{self, Plan};
use crate::output;
use crate::plot;
use crate::progress::Progress;
use crate::runner::Limit;
use crate::stats::{summarize, Record};
use crate::workloads::hot_insert::HotInsert;
use crate::workloads::hot_update::HotUpdate;
use crate::workloads::load::Load;
use crate::workloads::news::News;
use crate::workloads::scan::Scan;
use crate::workloads::seq_insert::SeqInsert;
use crate::workloads::tpcc::Tpcc;
use crate::workloads::ycsb::{Ycsb, YcsbKind};
use crate::workloads::{Params, Workload};

/// Files to write besides the table.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--json` path.
    pub json: Option<PathBuf>,
    /// `--csv` path.
    pub csv: Option<PathBuf>,
    /// `--plot` path.
    pub plot: Option<PathBuf>,
}

/// Runs the parsed command line.
pub fn execute(cli: Cli) -> Result<(), String> {
    let (workload, run): (Box<dyn Workload>, RunArgs) = match cli.command {
        Command::Peers => {
            for p in adapters::all_peers() {
                println!("{:<16} {}", p.name, p.about);
            }
            return Ok(());
        }
        Command::Compare(args) => return crate::compare::run(&args).map(|_| ()),
        Command::Repartition(args) => return crate::repartition::run(&args),
        Command::Tpc(args) => return crate::tpc::run(&args),
        Command::Hotspot(args) => return crate::hotspot::run(&args),
        Command::Numa(args) => return crate::numa::run(&args),
        Command::YcsbA(a) => ycsb(YcsbKind::A, a),
        Command::YcsbB(a) => ycsb(YcsbKind::B, a),
        Command::YcsbC(a) => ycsb(YcsbKind::C, a),
        Command::YcsbD(a) => ycsb(YcsbKind::D, a),
        Command::YcsbE(a) => ycsb(YcsbKind::E, a),
        Command::YcsbF(a) => ycsb(YcsbKind::F, a),
        Command::ReadHeavy(a) => ycsb(YcsbKind::ReadHeavy, a),
        Command::SeqInsert(a) => {
            let p = params(&a.run, 100_000, 8, None);
            let readers = a.readers.map(|r| r as usize);
            let writers = a.writers.map(|w| w as usize);
            let seq = SeqInsert::new(p, readers, writers)
                .reading(a.reader_op, a.recent)
                .scattered(a.scatter);
            (Box::new(seq), a.run)
        }
        Command::HotUpdate(a) => {
            let p = params(&a.run, 100_000, 8, None);
            (Box::new(HotUpdate::new(p)), a.run)
        }
        Command::HotInsert(a) => {
            let p = params(&a.run, 100_000, 8, None);
            (Box::new(HotInsert::new(p)), a.run)
        }
        Command::News(a) => {
            let p = params(&a.run, 200_000, 128, None);
            let period = Duration::from_secs_f64(a.period);
            (Box::new(News::new(p, a.theta, period, a.batch)), a.run)
        }
        Command::TpccIndex(a) => {
            let p = params(&a.run, 100_000, 8, None);
            (Box::new(Tpcc::new(p, a.warehouses)), a.run)
        }
        Command::Load(a) => {
            let p = params(&a.run, 1_000_000, 8, Some(a.keys));
            (Box::new(Load::new(p, a.order)), a.run)
        }
        Command::Scan(a) => {
            let p = params(&a.run, 1_000_000, 8, Some(a.keys));
            (Box::new(Scan::new(p, a.length as usize)), a.run)
        }
    };
    let plan = plan(&run)?;
    let outputs = Outputs {
        json: run.json.clone(),
        csv: run.csv.clone(),
        plot: run.plot.clone(),
    };
    let jobs = [Job {
        workload: workload.as_ref(),
        plan,
    }];
    run_and_report(&jobs, &outputs, run.quiet).map(|_| ())
}

/// One workload and the plan to run it under.
pub struct Job<'a> {
    /// The workload.
    pub workload: &'a dyn Workload,
    /// Peers, threads, repetitions and lengths.
    pub plan: Plan,
}

fn ycsb(kind: YcsbKind, a: YcsbArgs) -> (Box<dyn Workload>, RunArgs) {
    let p = params(&a.run, 1_000_000, 8, Some(a.keys));
    let w = Ycsb::new(kind, p, a.distribution, a.theta, a.scan_max as usize).with_miss(a.miss);
    (Box::new(w), a.run)
}

fn params(
    run: &RunArgs,
    records: u64,
    value_size: usize,
    keys: Option<crate::keys::KeyKind>,
) -> Params {
    Params {
        records: run.records.unwrap_or(records),
        key_kind: keys.unwrap_or(crate::keys::KeyKind::Int),
        value_size: run.value_size.map(|v| v as usize).unwrap_or(value_size),
    }
}

/// The peers named (all when none are).
pub fn peers(names: &[String]) -> Result<Vec<Peer>, String> {
    if names.is_empty() {
        return Ok(adapters::all_peers());
    }
    let mut out: Vec<Peer> = Vec::new();
    for n in names {
        let p = adapters::find_peer(n).ok_or_else(|| format!("unknown peer '{n}'"))?;
        if !out.iter().any(|q| q.name == p.name) {
            out.push(p);
        }
    }
    Ok(out)
}

fn plan(run: &RunArgs) -> Result<Plan, String> {
    let limit = match (run.ops, run.duration) {
        (Some(n), _) => Limit::Ops(n),
        (None, d) => Limit::Duration(Duration::from_secs_f64(d.unwrap_or(2.0))),
    };
    let warmup = run
        .warmup
        .unwrap_or(if run.ops.is_some() { 0.0 } else { 0.5 });
    let mut threads = run.threads.clone();
    threads.dedup();
    Ok(Plan {
        peers: peers(&run.peers)?,
        threads,
        repeat: run.repeat as usize,
        limit,
        warmup: Duration::from_secs_f64(warmup),
        sample_every: run.sample,
        seed: run.seed,
    })
}

/// Runs each job in turn, prints the header and one table, writes the files, and returns
/// every record.
pub fn run_and_report(jobs: &[Job], outputs: &Outputs, quiet: bool) -> Result<Vec<Record>, String> {
    // Fail on unwritable output paths before spending minutes measuring.
    for path in [&outputs.json, &outputs.csv, &outputs.plot]
        .into_iter()
        .flatten()
    {
        check_writable(path)?;
    }
    println!("{}", output::header());
    let runs = jobs.iter().map(|j| j.plan.runs(&[j.workload])).sum();
    let progress = Progress::new(runs, quiet);
    let mut records = Vec::new();
    for job in jobs {
        records.extend(experiment::run(&job.plan, &[job.workload], &progress));
    }
    progress.finish();
    let summaries = summarize(&records);
    let configs: Vec<(String, String)> = jobs
        .iter()
        .map(|j| {
            let t = j.plan.threads.last().copied().unwrap_or(1);
            (j.workload.name().to_string(), j.workload.config(t))
        })
        .collect();
    let notes: Vec<(String, String)> = jobs.iter().flat_map(|j| skip_notes(j)).collect();
    print!("{}", output::table(&summaries, &configs, &notes));
    if let Some(p) = &outputs.json {
        output::write_json(p, &records)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &outputs.csv {
        output::write_csv(p, &records)?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &outputs.plot {
        let names: Vec<&str> = jobs.iter().map(|j| j.workload.name()).collect();
        plot::write_svg(
            p,
            &summaries,
            &format!("contree-bench: {}", names.join(", ")),
        )?;
        eprintln!("wrote {}", p.display());
    }
    Ok(records)
}

/// One line per peer of `job` that skips its workload, or runs it single-threaded only.
fn skip_notes(job: &Job) -> Vec<(String, String)> {
    let w = job.workload;
    let shape = w.shape();
    let mut notes = Vec::new();
    for p in &job.plan.peers {
        let line = match p.supports(&shape) {
            Err(why) => Some(format!("skipped: {} ({why})", p.name)),
            Ok(()) => match p.concurrent(&shape) {
                Err(why) if job.plan.threads.iter().any(|&t| w.total_threads(t) > 1) => {
                    Some(format!("single-threaded only: {} ({why})", p.name))
                }
                _ => None,
            },
        };
        if let Some(line) = line {
            notes.push((w.name().to_string(), line));
        }
    }
    notes
}

fn check_writable(path: &std::path::Path) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    if path.is_dir() {
        return Err(format!(
            "cannot write {}: it is a directory",
            path.display()
        ));
    }
    Ok(())
}
