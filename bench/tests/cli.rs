//! The command line: good arguments parse into the right values, bad ones are rejected with
//! a message that names the problem, a non-zero exit and no panic.

use std::process::Command;

use clap::Parser;
use contree_bench::cli::{Cli, Command as Sub};
use contree_bench::generators::Distribution;
use contree_bench::keys::KeyKind;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("contree-bench").chain(args.iter().copied()))
}

#[test]
fn parses_a_full_ycsb_line() {
    let cli = parse(&[
        "ycsb-a",
        "--threads",
        "1,2,4",
        "--duration",
        "1.5",
        "--records",
        "1000",
        "--peers",
        "bbtree,btreemap",
        "--repeat",
        "3",
        "--json",
        "out.json",
        "--csv",
        "out.csv",
        "--plot",
        "out.svg",
        "--distribution",
        "scrambled-zipfian",
        "--theta",
        "0.8",
        "--keys",
        "str",
        "--value-size",
        "100",
    ])
    .unwrap();
    let Sub::YcsbA(a) = cli.command else {
        panic!("wrong subcommand")
    };
    assert_eq!(a.run.threads, vec![1, 2, 4]);
    assert_eq!(a.run.duration, Some(1.5));
    assert_eq!(a.run.records, Some(1000));
    assert_eq!(a.run.peers, vec!["bbtree", "btreemap"]);
    assert_eq!(a.run.repeat, 3);
    assert_eq!(a.distribution, Some(Distribution::ScrambledZipfian));
    assert_eq!(a.theta, 0.8);
    assert_eq!(a.keys, KeyKind::Str);
    assert_eq!(a.run.value_size, Some(100));
}

#[test]
fn parses_every_workload_and_its_options() {
    for line in [
        vec!["ycsb-b"],
        vec!["ycsb-c", "--ops", "1000"],
        vec!["ycsb-d", "--distribution", "latest"],
        vec!["ycsb-e", "--scan-max", "10"],
        vec!["ycsb-f"],
        vec!["read-heavy", "--distribution", "uniform"],
        vec!["seq-insert", "--readers", "2", "--writers", "4"],
        vec!["hot-update", "--threads", "2,8,16"],
        vec!["news", "--period", "1", "--theta", "0.75", "--batch", "100"],
        vec!["tpcc-index", "--warehouses", "2"],
        vec!["load", "--order", "sorted", "--records", "1_000_000"],
        vec!["compare", "--repeat", "1", "--duration", "0.2"],
        vec!["compare", "--rows", "scan100,get-str", "--warmup", "0"],
        vec!["scan", "--length", "10", "--keys", "long"],
        vec!["ycsb-c", "--keys", "long", "--distribution", "uniform"],
        vec!["peers"],
    ] {
        assert!(parse(&line).is_ok(), "{line:?}: {:?}", parse(&line).err());
    }
}

#[test]
fn rejects_bad_arguments() {
    for line in [
        vec![],
        vec!["ycsb-z"],
        vec!["ycsb-a", "--threads", "0"],
        vec!["ycsb-a", "--threads", "two"],
        vec!["ycsb-a", "--duration", "-1"],
        vec!["ycsb-a", "--duration", "1", "--ops", "5"],
        vec!["ycsb-a", "--ops", "0"],
        vec!["ycsb-a", "--peers", "nosuchtree"],
        vec!["ycsb-a", "--repeat", "0"],
        vec!["ycsb-a", "--theta", "1.0"],
        vec!["ycsb-a", "--distribution", "normal"],
        vec!["ycsb-a", "--value-size", "0"],
        vec!["ycsb-a", "--readers", "2"],
        vec!["load", "--order", "backwards"],
        vec!["compare", "--duration", "nan"],
        vec!["compare", "--rows", "nosuchrow"],
        vec!["scan", "--length", "0"],
    ] {
        assert!(parse(&line).is_err(), "{line:?} was accepted");
    }
}

fn run_binary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_contree-bench"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn the_binary_explains_bad_arguments_and_exits_non_zero() {
    for (args, needle) in [
        (vec!["ycsb-a", "--threads", "0"], "thread count"),
        (vec!["ycsb-a", "--peers", "nosuchtree"], "unknown peer"),
        (vec!["ycsb-a", "--theta", "2"], "theta"),
        (vec!["frobnicate"], "frobnicate"),
    ] {
        let out = run_binary(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?} panicked: {stderr}");
    }
}

#[test]
fn the_binary_reports_an_unwritable_output_before_running() {
    let out = run_binary(&[
        "hot-update",
        "--records",
        "100",
        "--threads",
        "1",
        "--duration",
        "0.05",
        "--json",
        "/nonexistent-dir/x.json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

#[test]
fn help_and_peers_succeed() {
    let out = run_binary(&["--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("compare"));
    let out = run_binary(&["peers"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("bbtree"));
}

/// `compare` draws `compare.svg` when every row runs, nothing for a run of some rows
/// (an A/B run of a few rows must not replace the whole comparison's plot), and whatever
/// `--plot` names either way.
#[test]
fn compare_plots_by_default_only_a_run_of_every_row() {
    let plot_of = |args: &[&str]| {
        let Sub::Compare(a) = parse(args).unwrap().command else {
            panic!("wrong subcommand")
        };
        contree_bench::compare::plot_path(&a)
    };
    assert_eq!(
        plot_of(&["compare"]),
        Some(std::path::PathBuf::from("compare.svg"))
    );
    assert_eq!(plot_of(&["compare", "--rows", "ycsb-a,ycsb-c"]), None);
    assert_eq!(
        plot_of(&["compare", "--rows", "load", "--plot", "a.svg"]),
        Some(std::path::PathBuf::from("a.svg"))
    );
}
