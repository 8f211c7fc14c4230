//! contree-bench: runs the experiments of the papers in `shared/papers/` on contree and its
//! peers in one process, side by side, and reports throughput, latency percentiles, bytes
//! per entry and contree's own counters as a table, JSON, CSV and SVG plots.
//!
//! Module map: [`cli`] (arguments) and [`commands`] (what each subcommand does), [`compare`]
//! (the main job), [`repartition`] (slice and meld costs), [`tpc`] (the thread-per-core executor), [`hotspot`] (the executor under a moving hotspot), [`numa`] (upper-level replicas on a simulated topology), [`experiment`] (the interleaved run order) and [`runner`] (one measured
//! phase), [`workloads`] and [`generators`] (what the threads do, and the distributions),
//! [`keys`] (key and value bytes), [`adapters`] (contree and its peers behind one trait),
//! [`alloc`] (the counting allocator), [`stats`], [`output`], [`plot`] and [`progress`]
//! (presenting results), [`debug_fields`] (contree's `Stats` as JSON).

pub mod adapters;
pub mod alloc;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod debug_fields;
pub mod experiment;
pub mod generators;
pub mod hotspot;
pub mod keys;
pub mod numa;
pub mod output;
pub mod placement;
pub mod plot;
pub mod progress;
pub mod repartition;
pub mod runner;
pub mod stats;
pub mod tpc;
pub mod tpc_mix;
pub mod workloads;
