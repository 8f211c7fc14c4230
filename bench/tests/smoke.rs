//! Smoke runs of the binary with tiny sizes: `compare` end to end (table, JSON, CSV, SVG),
//! and one short run of each other workload, all well inside CI's time.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_contree-bench"))
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contree-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn compare_smoke_run_writes_everything() {
    let (json, csv, svg) = (tmp("c.json"), tmp("c.csv"), tmp("c.svg"));
    let start = Instant::now();
    let out = bin()
        .args(["compare", "--smoke", "--repeat", "1", "--quiet", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--plot")
        .arg(&svg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        start.elapsed() < Duration::from_secs(90),
        "took {:?}",
        start.elapsed()
    );
    for w in contree_bench::compare::ROWS {
        assert!(
            stdout.contains(&format!("== {w}")),
            "no {w} table:\n{stdout}"
        );
    }
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = records.as_array().unwrap();
    assert!(!records.is_empty());
    for r in records {
        for field in [
            "workload",
            "peer",
            "threads",
            "mops",
            "p50_ns",
            "p99_ns",
            "p999_ns",
            "bytes_per_entry",
            "stats",
        ] {
            assert!(r.get(field).is_some(), "record lacks {field}: {r}");
        }
        assert!(r["mops"].as_f64().unwrap() > 0.0, "{r}");
        let contree = r["peer"].as_str().unwrap().starts_with("contree");
        assert_eq!(r["stats"].is_object(), contree, "{r}");
    }
    let peers: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["peer"].as_str().unwrap())
        .collect();
    for p in [
        "bbtree",
        "scc",
        "skiplist",
        "bplustree",
        "btreemap",
        "congee",
        "bf-tree",
        "masstree",
        "ferntree",
    ] {
        assert!(peers.contains(p), "{p} missing: {peers:?}");
    }
    // Every peer with byte keys has string-key rows and bytes per entry in them; congee
    // (u64 keys only) skips them, and the table says so.
    for row in ["load-str", "get-str", "load-long", "get-long", "scan100"] {
        for p in ["contree", "bbtree", "bf-tree", "masstree", "ferntree"] {
            let r = records
                .iter()
                .find(|r| r["workload"] == row && r["peer"] == p)
                .unwrap_or_else(|| panic!("no {row} record for {p}"));
            assert!(r["bytes_per_entry"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
    assert!(!records
        .iter()
        .any(|r| r["workload"] == "get-str" && r["peer"] == "congee"));
    assert!(stdout.contains("skipped: congee"), "{stdout}");
    assert!(stdout.contains("skipped: masstree"), "{stdout}");
    let load = records.iter().find(|r| r["workload"] == "load").unwrap();
    assert!(load["bytes_per_entry"].as_f64().unwrap() > 0.0);
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.lines().count(), records.len() + 1);
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.contains("hot-update"));
}

#[test]
fn every_workload_runs_briefly() {
    let common = [
        "--threads",
        "1,2",
        "--duration",
        "0.05",
        "--warmup",
        "0.01",
        "--records",
        "2000",
        // contree among them: every workload runs it with two threads too.
        "--peers",
        "contree,bbtree,btreemap,congee",
        "--quiet",
    ];
    for workload in [
        "scan",
        "ycsb-a",
        "ycsb-b",
        "ycsb-c",
        "ycsb-d",
        "ycsb-e",
        "ycsb-f",
        "read-heavy",
        "seq-insert",
        "hot-update",
        "news",
        "tpcc-index",
        "load",
    ] {
        let out = bin().arg(workload).args(common).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{workload}: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains(&format!("== {workload}")),
            "{workload}: {stdout}"
        );
        assert!(stdout.contains("btreemap"), "{workload}: {stdout}");
        let contree_at_two = stdout.lines().any(|l| {
            let mut words = l.split_whitespace();
            words.next() == Some("contree") && words.next() == Some("2")
        });
        assert!(
            contree_at_two,
            "{workload}: no contree row at 2 threads: {stdout}"
        );
    }
}

#[test]
fn fixed_op_count_runs_exactly_that_many() {
    let json = tmp("ops.json");
    let out = bin()
        .args([
            "ycsb-c",
            "--ops",
            "5000",
            "--threads",
            "2",
            "--records",
            "1000",
            "--peers",
            "btreemap",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records[0]["ops"], 5000);
}

#[test]
fn news_reports_a_time_series_and_string_keys_work() {
    let json = tmp("news.json");
    let out = bin()
        .args([
            "news",
            "--threads",
            "2",
            "--duration",
            "1.5",
            "--warmup",
            "0",
            "--records",
            "2000",
            "--period",
            "0.3",
            "--peers",
            "btreemap",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let series = records[0]["series"].as_array().expect("news has a series");
    assert!(series.len() >= 2, "{series:?}");
    let out = bin()
        .args([
            "ycsb-e",
            "--keys",
            "str",
            "--threads",
            "1",
            "--duration",
            "0.05",
            "--records",
            "1000",
            "--peers",
            "bbtree,congee",
            "--quiet",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.lines().any(|l| l.starts_with("bbtree")), "{stdout}");
    assert!(!stdout.lines().any(|l| l.starts_with("congee")), "{stdout}");
    assert!(stderr.contains("congee skips ycsb-e"), "{stderr}");
}
