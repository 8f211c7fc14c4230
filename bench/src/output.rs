//! Presenting results: the table on stdout and the `--json` and `--csv` files.
//!
//! The table shows, per workload and thread count, each peer's median throughput across
//! repetitions, its ratio to contree's (the GUIDE asks for ratios: absolute numbers from
//! one noisy machine mean little), the median latency percentiles and bytes per entry.
//! The files hold every repetition, not just the medians.

use std::fmt::Write as _;
use std::path::Path;

use crate::stats::{Record, Summary};

/// The peer the ratios are relative to.
pub const BASELINE: &str = "contree";

fn ns(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x >= 1e6 => format!("{:.1}ms", x / 1e6),
        Some(x) if x >= 1e4 => format!("{:.1}us", x / 1e3),
        Some(x) => format!("{x:.0}"),
    }
}

/// The table of `summaries`, one block per workload; `notes` are (workload, line) pairs
/// printed under that workload's block (peers that skipped it, and why).
pub fn table(
    summaries: &[Summary],
    configs: &[(String, String)],
    notes: &[(String, String)],
) -> String {
    let mut out = String::new();
    let mut workloads: Vec<&str> = Vec::new();
    for s in summaries {
        if !workloads.contains(&s.workload.as_str()) {
            workloads.push(&s.workload);
        }
    }
    for w in workloads {
        let config = configs
            .iter()
            .find(|(name, _)| name == w)
            .map(|(_, c)| c.as_str())
            .unwrap_or("");
        let _ = writeln!(out, "\n== {w}: {config}");
        let _ = writeln!(
            out,
            "{:<16} {:>7} {:>9} {:>10} {:>8} {:>8} {:>8} {:>8}",
            "peer", "threads", "Mops/s", "vs contree", "p50 ns", "p99 ns", "p999 ns", "B/entry"
        );
        let rows: Vec<&Summary> = summaries.iter().filter(|s| s.workload == w).collect();
        let mut threads: Vec<usize> = rows.iter().map(|s| s.threads).collect();
        threads.sort_unstable();
        threads.dedup();
        for t in threads {
            let base = rows
                .iter()
                .find(|s| s.threads == t && s.peer == BASELINE)
                .map(|s| s.mops);
            for s in rows.iter().filter(|s| s.threads == t) {
                let ratio = match base {
                    Some(b) if b > 0.0 => format!("{:.2}x", s.mops / b),
                    _ => "-".into(),
                };
                let bpe = s
                    .bytes_per_entry
                    .map(|b| format!("{b:.1}"))
                    .unwrap_or_else(|| "-".into());
                let readers = match s.reader_mops {
                    Some(m) => format!("  readers {m:.3} Mops/s, p99 {}", ns(s.reader_p99_ns)),
                    None => String::new(),
                };
                let _ = writeln!(
                    out,
                    "{:<16} {:>7} {:>9.3} {:>10} {:>8} {:>8} {:>8} {:>8}{readers}",
                    s.peer,
                    s.threads,
                    s.mops,
                    ratio,
                    ns(s.p50_ns),
                    ns(s.p99_ns),
                    ns(s.p999_ns),
                    bpe
                );
            }
        }
        for (_, note) in notes.iter().filter(|(name, _)| name == w) {
            let _ = writeln!(out, "  {note}");
        }
    }
    out
}

/// Writes `records` as a pretty JSON array.
pub fn write_json(path: &Path, records: &[Record]) -> Result<(), String> {
    let text = serde_json::to_string_pretty(records).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

/// The CSV text of `records`: one row per run; `stats` and `series` as JSON strings.
pub fn csv(records: &[Record]) -> String {
    let mut out = String::from(
        "workload,peer,threads,repetition,mops,ops,seconds,p50_ns,p99_ns,p999_ns,\
         bytes_per_entry,repr,config,stats,series,reader_mops,reader_p99_ns\n",
    );
    for r in records {
        let stats = r.stats.as_ref().map(|s| s.to_string()).unwrap_or_default();
        let series = r
            .series
            .as_ref()
            .map(|s| serde_json::to_string(s).unwrap_or_default())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{},{},{},{},{:.6},{},{:.6},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.workload),
            csv_field(&r.peer),
            r.threads,
            r.repetition,
            r.mops,
            r.ops,
            r.seconds,
            opt(&r.p50_ns),
            opt(&r.p99_ns),
            opt(&r.p999_ns),
            r.bytes_per_entry
                .map(|b| format!("{b:.2}"))
                .unwrap_or_default(),
            csv_field(&r.repr),
            csv_field(&r.config),
            csv_field(&stats),
            csv_field(&series),
            r.reader_mops.map(|m| format!("{m:.6}")).unwrap_or_default(),
            opt(&r.reader_p99_ns),
        );
    }
    out
}

/// Writes the CSV of `records` to `path`.
pub fn write_csv(path: &Path, records: &[Record]) -> Result<(), String> {
    std::fs::write(path, csv(records)).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The command line and a description of the machine, printed above every table.
pub fn header() -> String {
    let args: Vec<String> = std::env::args().collect();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| format!("{:.0} GiB", kb as f64 / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "unknown memory".into());
    format!(
        "# {}\n# machine: {cpu}, {cores} cores, {mem}, {} {}",
        args.join(" "),
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}
