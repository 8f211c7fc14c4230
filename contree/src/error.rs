//! Errors returned by contree operations.
//!
//! Every fallible public operation returns `Result<_, Error>`. An operation that returns an
//! error leaves the tree's contents exactly as they were: bad input is rejected before
//! anything is written, and an exhausted memory budget is detected before a modification is
//! published.

use std::fmt;

/// What went wrong, with enough detail to say what and why.
///
/// The enum is `#[non_exhaustive]`: later versions add variants, so a `match` needs a
/// wildcard arm.
///
/// A write whose key and value are both oversized reports [`KeyTooLarge`](Error::KeyTooLarge):
/// every write checks its key first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The key is longer than [`Config::max_key_len`](crate::Config::max_key_len) allows.
    KeyTooLarge {
        /// Length of the rejected key in bytes.
        len: usize,
        /// The largest key length this tree accepts.
        max: usize,
    },
    /// The value is longer than [`Config::max_value_len`](crate::Config::max_value_len) allows.
    ValueTooLarge {
        /// Length of the rejected value in bytes.
        len: usize,
        /// The largest value length this tree accepts.
        max: usize,
    },
    /// The memory budget ([`Config::max_memory`](crate::Config::max_memory)) is exhausted:
    /// the operation needed a new page and none could be had within the budget.
    OutOfSpace {
        /// The budget in bytes.
        max_memory: usize,
        /// Page bytes in use when the allocation was refused.
        in_use: usize,
    },
    /// [`PartitionedTree::slice`](crate::PartitionedTree::slice) at a key that is a
    /// partition boundary already.
    BoundaryExists {
        /// The key.
        key: Vec<u8>,
    },
    /// [`PartitionedTree::meld`](crate::PartitionedTree::meld) at a key that is no
    /// partition boundary.
    NoSuchBoundary {
        /// The key.
        key: Vec<u8>,
    },
    /// [`PartitionedTree::slice`](crate::PartitionedTree::slice) found the partition table
    /// full: its page holds no more boundaries (a few hundred short ones in a 4 KiB page).
    TooManyPartitions {
        /// The partitions the tree has.
        partitions: usize,
    },
    /// The thread-per-core [`Executor`](crate::Executor) was shut down (or its worker
    /// stopped) before the request was carried out: the request changed nothing.
    ExecutorStopped,
    /// An action of the thread-per-core executor ([`Local`](crate::Local)) named a key
    /// outside the partition it runs on.
    OutsidePartition {
        /// The key.
        key: Vec<u8>,
    },
    /// A `Config` field is out of its allowed range.
    InvalidConfig {
        /// The offending field.
        field: &'static str,
        /// Why the value was rejected.
        reason: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::KeyTooLarge { len, max } => write!(
                f,
                "key of {len} bytes is larger than the maximum of {max} bytes \
                 (contree::MAX_KEY_LEN, 16 KiB whatever the page size; keys longer than \
                 page_size / 16 are stored out of line)"
            ),
            Error::ValueTooLarge { len, max } => write!(
                f,
                "value of {len} bytes is larger than the maximum of {max} bytes \
                 (contree::MAX_VALUE_LEN, 16 MiB whatever the page size; store a larger \
                 object in pieces under consecutive keys)"
            ),
            Error::OutOfSpace { max_memory, in_use } => write!(
                f,
                "out of space: the memory budget of {max_memory} bytes is exhausted \
                 ({in_use} bytes of pages in use); the tree was not changed"
            ),
            Error::BoundaryExists { key } => {
                write!(f, "{key:?} is a partition boundary already")
            }
            Error::NoSuchBoundary { key } => write!(f, "{key:?} is no partition boundary"),
            Error::TooManyPartitions { partitions } => write!(
                f,
                "the partition table is full ({partitions} partitions); meld some first"
            ),
            Error::ExecutorStopped => write!(
                f,
                "the executor was shut down before the request was carried out; nothing changed"
            ),
            Error::OutsidePartition { key } => write!(
                f,
                "{key:?} lies outside the partition this action runs on;                  send the request through the executor's client instead"
            ),
            Error::InvalidConfig { field, reason } => {
                write!(f, "invalid Config::{field}: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}
