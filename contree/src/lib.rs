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
//! let keys: Vec<Vec<u8>> = tree.range(..).map(|(k, _)| k).collect();
//! assert_eq!(keys, vec![b"apple".to_vec(), b"banana".to_vec()]);
//! ```
//!
//! The typed layer [`TreeMap`] stores integers, strings and tuples through order-preserving
//! codecs. See `docs/design.md` in the repository for the design and its measurements.
//!
//! Module map (bottom up): [`latch`] (hybrid latch), `page` (page allocator and
//! memory budget), `node` (slotted page layout), `btree` (descent, point operations, splits
//! and merges), `contention` (Contention Split), `xmerge` (XMerge) and `space_manager` (its
//! background thread), `tree` (the public [`Tree`]), `iter` (range iterator), `striped`
//! (per-thread counters), [`codec`] and `typed_map` (typed layer).

#![warn(missing_docs)]

mod btree;
pub mod codec;
mod config;
mod contention;
mod error;
mod invariants;
mod iter;
pub mod latch;
mod node;
mod page;
mod space_manager;
mod stats;
mod striped;
mod sync;
mod tree;
mod typed_map;
mod xmerge;

pub use codec::{KeyCodec, KeyEncode, ValueCodec};
pub use config::Config;
pub use error::Error;
pub use iter::Range;
pub use stats::Stats;
pub use tree::{Tree, GET_WITH_INLINE};
pub use typed_map::{TreeMap, TypedRange};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
