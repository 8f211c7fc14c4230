//! # contree
//!
//! An embeddable, concurrent, in-memory B+Tree for byte keys and values.
//!
//! Every operation takes `&self`; a [`Tree`] is `Send + Sync` and is shared between threads
//! with an `Arc` or a scoped thread. Readers descend with optimistic lock coupling (they
//! write nothing to shared memory), writers latch only the leaf they change, and waiting
//! threads sleep instead of spinning.
//!
//! ```
//! use contree::Tree;
//!
//! let tree = Tree::new();
//! tree.insert(b"apple", b"red").unwrap();
//! tree.insert(b"banana", b"yellow").unwrap();
//! assert_eq!(tree.get(b"apple"), Some(b"red".to_vec()));
//! // Ranges hand out `Bytes`: short keys and values are copied without an allocation.
//! let keys: Vec<contree::Bytes> = tree.range(..).map(|(k, _)| k).collect();
//! assert_eq!(keys, [&b"apple"[..], b"banana"]);
//! ```
//!
//! The typed layer [`TreeMap`] stores integers, strings and tuples through order-preserving
//! codecs. See `docs/design.md` in the repository for the design and its measurements.
//!
//! Module map, bottom up (each module's doc says what it owns, its invariants and how
//! threads share it):
//! * `sync`: the hybrid latch (`latch`), parking, striped counters, the re-entry guard;
//! * `page`: the page pool (shareable by several trees) and id → address translation;
//! * `node`: the slotted page, its read view (safe under races) and its write view (needs
//!   a write capability), search, edits, split and merge, the builder, the size rule;
//! * `engine`: the tree's shared state and the one descent;
//! * `policy`: the leaf policies behind one seam (Contention Split);
//! * `smo`: splits, merges, XMerge, and the one place inner nodes change;
//! * `ops`: the operations of [`Tree`]: point reads and writes, the atomic per-key
//!   operations, ranges, pops, bulk removals, batches and the std collection traits;
//! * `partition`: the multi-rooted [`PartitionedTree`] (partition table, slice, meld) and
//!   the thread-per-core [`Executor`] over it (workers that own partitions, their queues);
//! * `numa`: the NUMA topology (system or simulated) and upper-level replicas per node;
//! * `space`: the space manager, sweeps, reclaim and `compact`;
//! * `typed`: codecs and [`TreeMap`] (its atomic per-key operations, ranges, collection
//!   surface and serde support);
//! * `tree`, `bytes`, `stats`, `check`, `config`, `error`: the public surface.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod blob;
mod bytes;
mod check;
mod config;
mod engine;
mod error;
mod heap;
mod long_key;
mod node;
mod numa;
mod ops;
mod page;
mod partition;
mod policy;
mod side;
mod smo;
mod space;
mod stats;
mod sync;
mod tree;
mod typed;

pub use blob::MAX_VALUE_LEN;
pub use bytes::Bytes;
pub use config::{
    Config, ConflictControl, LeafPrefetch, LineMode, SideStructure, MAX_PAGE_SIZE, MIN_PAGE_SIZE,
};
pub use error::Error;
pub use long_key::MAX_KEY_LEN;
pub use numa::{NodeFn, Numa, ThreadMap, Topology, MAX_NUMA_NODES};
pub use ops::{Cursor, KeyRange, Keys, Range, Values, GET_WITH_INLINE};
pub use page::memory::mapped_bytes;
pub use partition::executor::{
    Client, Executor, ExecutorConfig, ExecutorStats, KeyValue, Local, Op, OpResult, Pipeline,
    RebalanceConfig, Rebalanced, Resident,
};
pub use partition::PartitionedTree;
pub use stats::Stats;
pub use sync::owner::{latch_acquisitions, LatchAcquisitions};
pub use tree::Tree;
pub use typed::codec;
pub use typed::codec::{KeyCodec, KeyEncode, Scattered, ValueCodec, ValueEncode};
pub use typed::{TreeMap, TypedKeyRange, TypedRange};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
