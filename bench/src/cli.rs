//! The command line (clap derive): one subcommand per workload, `compare`, and `peers`.
//!
//! Every value is checked while parsing, so a bad argument ends with clap's message naming
//! the flag and a non-zero exit, never a panic.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::adapters;
use crate::generators::Distribution;
use crate::keys::KeyKind;
use crate::workloads::load::Order;
pub use crate::workloads::seq_insert::ReaderOp;

/// contree-bench: the papers' experiments on contree and its peers, side by side.
#[derive(Parser, Debug)]
#[command(name = "contree-bench", version, about, long_about = None)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// YCSB A: 50% reads, 50% updates (zipfian).
    YcsbA(YcsbArgs),
    /// YCSB B: 95% reads, 5% updates (zipfian).
    YcsbB(YcsbArgs),
    /// YCSB C: reads only (zipfian).
    YcsbC(YcsbArgs),
    /// YCSB D: 95% reads of the latest items, 5% inserts.
    YcsbD(YcsbArgs),
    /// YCSB E: 95% short scans, 5% inserts (zipfian).
    YcsbE(YcsbArgs),
    /// YCSB F: 50% reads, 50% read-modify-writes (zipfian).
    YcsbF(YcsbArgs),
    /// 75% reads, 25% updates (numa-btree.md).
    ReadHeavy(YcsbArgs),
    /// Writers insert increasing keys from one shared counter, beside optional readers.
    SeqInsert(SeqInsertArgs),
    /// Each thread updates its own key; the keys are adjacent, so they share a leaf.
    HotUpdate(HotUpdateArgs),
    /// Every thread inserts random new keys into one narrow key range (a hot leaf taking
    /// inserts at random positions).
    HotInsert(HotUpdateArgs),
    /// News website: reads and view-count updates of the newest articles, new batches every
    /// few seconds; per-second throughput.
    News(NewsArgs),
    /// The index accesses of TPC-C NewOrder and Payment, scaled by warehouses.
    TpccIndex(TpccArgs),
    /// Bulk insert of N keys in random or sorted order: throughput and bytes per entry.
    Load(LoadArgs),
    /// Ordered scans of a fixed number of entries from a uniform existing key.
    Scan(ScanArgs),
    /// The main job: load, YCSB-A and YCSB-C (zipfian), seq-insert, hot-update, 100-entry
    /// scans, and load, uniform lookups and scans with string and long keys; every peer, a
    /// few minutes on 2 cores; prints the table and writes compare.svg (a run of every row).
    Compare(CompareArgs),
    /// Slice and meld of a `PartitionedTree` (contree alone: no peer has them): their time
    /// and the pages they write, on a tree of `--records` entries.
    Repartition(RepartitionArgs),
    /// The thread-per-core `Executor` against the shared `Tree` on uniform YCSB-A, with
    /// batched and unbatched clients (contree alone). Build with `--features latch-stats`
    /// to count latch acquisitions per operation.
    Tpc(TpcArgs),
    /// The thread-per-core `Executor` under a moving hotspot, with and without its
    /// rebalancer, against the same clients without skew: throughput per tick, and how
    /// soon it comes back after each change (contree alone).
    Hotspot(HotspotArgs),
    /// Upper-level replicas on a simulated NUMA topology: point reads with and without
    /// them, the remote inner-node reads they save and the memory they take (contree alone).
    Numa(NumaArgs),
    /// Lists the peers.
    Peers,
}

/// Options every workload takes.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Thread counts to sweep, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_threads, default_value = "1,2,4,8,16")]
    pub threads: Vec<usize>,
    /// Seconds each measured run lasts [default: 2].
    #[arg(long, value_parser = parse_seconds, conflicts_with = "ops")]
    pub duration: Option<f64>,
    /// Run a fixed number of operations instead of a duration (for callgrind).
    #[arg(long, value_parser = parse_count)]
    pub ops: Option<u64>,
    /// Initial records (for `load`: records inserted) [default: per workload].
    #[arg(long, value_parser = parse_count)]
    pub records: Option<u64>,
    /// Peers to run, comma-separated [default: all; see `contree-bench peers`].
    #[arg(long, value_delimiter = ',', value_parser = parse_peer)]
    pub peers: Vec<String>,
    /// Repetitions, interleaved across peers; the table shows the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Seconds of unmeasured warm-up before each run [default: 0.5, or 0 with --ops].
    #[arg(long, value_parser = parse_seconds_or_zero)]
    pub warmup: Option<f64>,
    /// Value size in bytes [default: 8; 128 for news].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub value_size: Option<u32>,
    /// Time one operation in this many (on average, at random gaps) for the latency
    /// percentiles.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample: u32,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write every run as a JSON array to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every run as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Draw throughput against threads (or over time, for news) into this SVG file.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// YCSB options.
#[derive(Args, Debug, Clone)]
pub struct YcsbArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Request distribution [default: zipfian; latest for ycsb-d].
    #[arg(long, value_enum)]
    pub distribution: Option<Distribution>,
    /// Zipfian skew, between 0 and 1 (exclusive).
    #[arg(long, default_value_t = 0.99, value_parser = parse_theta)]
    pub theta: f64,
    /// Key encoding: 8-byte integers, YCSB "user" strings, or 50-200-byte paths and URLs.
    #[arg(long, value_enum, default_value_t = KeyKind::Int)]
    pub keys: KeyKind,
    /// Longest scan of ycsb-e (lengths are uniform from 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub scan_max: u32,
    /// Share of reads (0 to 1) that ask for an absent key next to the chosen one (the key
    /// and a zero byte: in the same leaf).
    #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
    pub miss: f64,
}

/// seq-insert options.
#[derive(Args, Debug, Clone)]
pub struct SeqInsertArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Fixed number of reader threads (then --threads counts writers).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub readers: Option<u32>,
    /// Fixed number of writer threads (then --threads counts readers).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub writers: Option<u32>,
    /// What readers do: point lookups or 100-entry scans, starting at one of the
    /// `--recent` most recently handed out keys.
    #[arg(long, value_enum, default_value_t = ReaderOp::Get)]
    pub reader_op: ReaderOp,
    /// Readers pick their key among this many most recent ids (0: among all keys).
    #[arg(long, default_value_t = 0)]
    pub recent: u64,
    /// Byte reordering (contree's `Scattered<u64>` key codec): the id's first and last
    /// key bytes swapped, so consecutive ids spread over the key space (scans lose order).
    #[arg(long)]
    pub scatter: bool,
}

/// hot-update options.
#[derive(Args, Debug, Clone)]
pub struct HotUpdateArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
}

/// news options.
#[derive(Args, Debug, Clone)]
pub struct NewsArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Zipfian skew of the latest distribution.
    #[arg(long, default_value_t = 0.75, value_parser = parse_theta)]
    pub theta: f64,
    /// Seconds between two batches of new articles.
    #[arg(long, default_value_t = 2.0, value_parser = parse_seconds)]
    pub period: f64,
    /// Articles per batch [default: records / 10].
    #[arg(long, value_parser = parse_count)]
    pub batch: Option<u64>,
}

/// tpcc-index options.
#[derive(Args, Debug, Clone)]
pub struct TpccArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Number of warehouses.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub warehouses: u64,
}

/// load options.
#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Insertion order.
    #[arg(long, value_enum, default_value_t = Order::Random)]
    pub order: Order,
    /// Key encoding.
    #[arg(long, value_enum, default_value_t = KeyKind::Int)]
    pub keys: KeyKind,
}

/// scan options.
#[derive(Args, Debug, Clone)]
pub struct ScanArgs {
    /// Common options.
    #[command(flatten)]
    pub run: RunArgs,
    /// Entries per scan.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub length: u32,
    /// Key encoding.
    #[arg(long, value_enum, default_value_t = KeyKind::Int)]
    pub keys: KeyKind,
}

/// repartition options.
#[derive(Args, Debug, Clone)]
pub struct RepartitionArgs {
    /// Entries loaded (random u64 keys, 8-byte values) before the slices and melds.
    #[arg(long, default_value_t = 10_000_000)]
    pub records: u64,
    /// Slices, then as many melds, at random keys.
    #[arg(long, default_value_t = 1000)]
    pub ops: u64,
    /// Seed of the keys.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// tpc options.
#[derive(Args, Debug, Clone)]
pub struct TpcArgs {
    /// The operation mix: uniform YCSB-A, or tpcc-index's transactions (partitioned by
    /// warehouse).
    #[arg(long, value_enum, default_value_t = TpcWorkload::YcsbA)]
    pub workload: TpcWorkload,
    /// Records loaded for YCSB-A (8-byte hashed keys, 8-byte values); for tpcc-index, the
    /// number of items (at most 100,000).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// tpcc-index's warehouses (client threads work for warehouse `thread % warehouses`).
    #[arg(long, default_value_t = 2)]
    pub warehouses: u64,
    /// Threads of the shared-tree row.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Executor workers.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Client threads of the executor rows.
    #[arg(long, default_value_t = 2)]
    pub clients: usize,
    /// Partitions per worker (uniform boundaries over the key space; tpcc-index instead
    /// splits every table into one range of warehouses per worker).
    #[arg(long, default_value_t = 4)]
    pub partitions_per_worker: usize,
    /// Operations per client batch of the batched rows.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Batches each client keeps in flight in the pipelined row (`Client::pipeline`).
    #[arg(long, default_value_t = 4)]
    pub depth: usize,
    /// Microseconds a waiting worker or client polls its channel before it parks
    /// (`ExecutorConfig::poll`; 0 parks at once).
    #[arg(long, default_value_t = 50)]
    pub poll_us: u64,
    /// Seconds per run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Interleaved repetitions of every row.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Seed of the clients' generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// The operation mixes of `tpc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TpcWorkload {
    /// Uniform YCSB-A: 50% reads, 50% updates.
    YcsbA,
    /// tpcc-index's NewOrder and Payment transactions.
    TpccIndex,
}

/// hotspot options.
#[derive(Args, Debug, Clone)]
pub struct HotspotArgs {
    /// Records loaded (8-byte keys spread evenly in order, 8-byte values).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Executor workers (one partition each to start with).
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    /// Client threads.
    #[arg(long, default_value_t = 1)]
    pub clients: usize,
    /// Operations per client batch.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Seconds per row.
    #[arg(long, default_value_t = 12.0, value_parser = parse_seconds)]
    pub seconds: f64,
    /// Seconds between moves of the hot range.
    #[arg(long, default_value_t = 3.0, value_parser = parse_seconds)]
    pub phase: f64,
    /// Seconds per sample of the throughput.
    #[arg(long, default_value_t = 0.25, value_parser = parse_seconds)]
    pub tick: f64,
    /// Share of the keys drawn from the hot range.
    #[arg(long, default_value_t = 0.9)]
    pub hot_share: f64,
    /// Width of the hot range, as a share of the records.
    #[arg(long, default_value_t = 0.01)]
    pub hot_width: f64,
    /// Interleaved repetitions of every row.
    #[arg(long, default_value_t = 1)]
    pub reps: usize,
    /// Seed of the clients' generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Where to write the per-second plot.
    #[arg(long)]
    pub svg: Option<std::path::PathBuf>,
}

/// numa options.
#[derive(Args, Debug, Clone)]
pub struct NumaArgs {
    /// Records loaded (8-byte keys spread evenly in order, 8-byte values).
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Threads running point reads (and inserts).
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Simulated NUMA nodes.
    #[arg(long, default_value_t = 4)]
    pub nodes: usize,
    /// Share of operations that insert a new key (0: read-only, YCSB-C).
    #[arg(long, default_value_t = 0.0)]
    pub writes: f64,
    /// Seconds per run.
    #[arg(long, default_value_t = 3.0, value_parser = parse_seconds)]
    pub seconds: f64,
    /// Interleaved repetitions of every row.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Seed of the threads' generators.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Run the latch rows instead: `hot-update` (every thread updates a key of its own, all
    /// in one leaf; Contention Split off so that the contention stays), with the cohort
    /// latch off and on, counting same-node and cross-node latch handoffs.
    #[arg(long)]
    pub hot_update: bool,
    /// Run the placement rows instead: every thread loads a range of keys of its own, then
    /// reads its own keys, with page placement (`Numa::placement`) off and on, counting the
    /// leaves and inner nodes read on another node than the reader's.
    #[arg(long, conflicts_with = "hot_update")]
    pub placement: bool,
}

/// compare options.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Peers to run [default: every peer, contree in its default configuration].
    #[arg(long, value_delimiter = ',', value_parser = parse_peer)]
    pub peers: Vec<String>,
    /// Rows to run, comma-separated [default: all: load, ycsb-a, ycsb-c, seq-insert,
    /// hot-update, scan100, load-str, get-str, scan100-str, load-long, get-long].
    #[arg(long, value_delimiter = ',', value_parser = parse_row)]
    pub rows: Vec<String>,
    /// Repetitions, interleaved across peers.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Seconds each measured run lasts.
    #[arg(long, default_value_t = 0.25, value_parser = parse_seconds)]
    pub duration: f64,
    /// Seconds of unmeasured warm-up before each measured run (not before loads).
    #[arg(long, default_value_t = 0.05, value_parser = parse_seconds_or_zero)]
    pub warmup: f64,
    /// Where to draw the plot [default: compare.svg when every row runs; a run of some rows
    /// (`--rows`) draws none unless given one, so that it does not replace the whole run's].
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write every run as a JSON array to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every run as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Tiny sizes for tests: a few seconds in all.
    #[arg(long, hide = true)]
    pub smoke: bool,
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' is not a thread count between 1 and 1024")),
    }
}

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    match t.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("'{s}' is not a positive whole number")),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= 86_400.0 => Ok(x),
        _ => Err(format!(
            "'{s}' is not a number of seconds above 0 (at most 86400)"
        )),
    }
}

fn parse_seconds_or_zero(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=3600.0).contains(&x) => Ok(x),
        _ => Err(format!("'{s}' is not a number of seconds from 0 to 3600")),
    }
}

fn parse_theta(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x < 1.0 => Ok(x),
        _ => Err(format!(
            "'{s}' is not a zipfian theta strictly between 0 and 1"
        )),
    }
}

fn parse_share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("'{s}' is not a share between 0 and 1")),
    }
}

fn parse_row(s: &str) -> Result<String, String> {
    let s = s.trim();
    if crate::compare::ROWS.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown row '{s}'; rows: {}",
            crate::compare::ROWS.join(", ")
        ))
    }
}

fn parse_peer(s: &str) -> Result<String, String> {
    let s = s.trim();
    if adapters::find_peer(s).is_some() {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown peer '{s}'; known peers: {}",
            adapters::peer_names().join(", ")
        ))
    }
}
