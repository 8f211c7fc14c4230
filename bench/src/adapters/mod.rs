//! One adapter trait, [`Index`], in front of contree and every peer, and the registry of
//! peers by name.
//!
//! Every peer receives the same key and value bytes. A peer whose natural interface is typed
//! stores them in one of two representations ([`Repr`]), chosen per run from the workload's
//! [`Shape`]:
//! - [`U64Repr`]: when keys are 8-byte big-endian integers and values are exactly 8 bytes,
//!   the peer stores `u64` keys and values, as a user of that map would (this is the "u64
//!   fast path"; congee supports nothing else);
//! - [`BytesRepr`]: otherwise `Vec<u8>` keys and `Box<[u8]>` values.
//!
//! contree always stores bytes: that is its API. The representation a run used is reported
//! beside its results. Adapters are `Send + Sync` and are shared by reference between the
//! worker threads; they keep no per-thread state.

use std::borrow::Borrow;

pub mod bbtree;
pub mod bftree;
pub mod bplustree;
pub mod btreemap;
pub mod congee;
pub mod contree;
pub mod ferntree;
pub mod masstree;
pub mod scc;
pub mod skiplist;

/// The operations a workload needs, over byte keys and values.
pub trait Index: Send + Sync {
    /// Inserts or replaces `key`'s value.
    fn insert(&self, key: &[u8], value: &[u8]);
    /// Copies `key`'s value into `out` (cleared first); `false` if the key is absent.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool;
    /// Overwrites the value of an existing key; `false` (and no change) if it is absent.
    fn update(&self, key: &[u8], value: &[u8]) -> bool;
    /// Removes `key`; `false` if it was absent.
    fn remove(&self, key: &[u8]) -> bool;
    /// Visits up to `count` entries in key order starting at the first key `>= start`;
    /// returns how many it visited.
    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize;
    /// The representation this instance stores ("u64" or "bytes").
    fn repr(&self) -> &'static str;
    /// The structure's own counters as a JSON object (contree only).
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }
}

/// What a workload's keys and values look like; peers choose their representation from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Whether every key is an 8-byte big-endian integer.
    pub int_keys: bool,
    /// Value size in bytes.
    pub value_size: usize,
    /// The longest key of the run, in bytes (peers with a configured key limit size it
    /// from this).
    pub max_key_len: usize,
    /// Whether the workload runs ordered scans (a peer whose scans are wrong for some keys
    /// refuses such runs).
    pub scans: bool,
}

impl Shape {
    /// Whether the u64 representation can hold this shape exactly.
    pub fn fits_u64(&self) -> bool {
        self.int_keys && self.value_size == 8
    }
}

/// A peer: a name on the command line and a constructor.
#[derive(Clone, Copy)]
pub struct Peer {
    /// Name on the command line and in results.
    pub name: &'static str,
    /// One line about what it is.
    pub about: &'static str,
    build: fn(&Shape) -> Result<Box<dyn Index>, String>,
    concurrent: fn(&Shape) -> Result<(), String>,
}

/// For peers that are safe to share between threads for every shape.
fn always(_: &Shape) -> Result<(), String> {
    Ok(())
}

impl Peer {
    /// Whether this peer may run `shape` with more than one thread, or why not.
    pub fn concurrent(&self, shape: &Shape) -> Result<(), String> {
        (self.concurrent)(shape)
    }

    /// A fresh, empty instance for a run of `shape`, or why this peer cannot run it.
    pub fn build(&self, shape: &Shape) -> Result<Box<dyn Index>, String> {
        (self.build)(shape)
    }

    /// Whether this peer can run `shape` (cheap: builds and drops an empty instance).
    pub fn supports(&self, shape: &Shape) -> Result<(), String> {
        self.build(shape).map(drop)
    }
}

/// Every peer, contree's configurations first.
pub fn all_peers() -> Vec<Peer> {
    let mut peers = Vec::new();
    for &(name, about, build) in contree::VARIANTS {
        peers.push(Peer {
            name,
            about,
            build,
            concurrent: always,
        });
    }
    peers.extend([
        Peer {
            name: "bbtree",
            about: "bbtree::BBTreeMap (concurrent B-tree)",
            build: bbtree::build,
            concurrent: always,
        },
        Peer {
            name: "scc",
            about: "scc::TreeIndex (lock-free B+tree, copy-on-write leaves)",
            build: scc::build,
            concurrent: always,
        },
        Peer {
            name: "skiplist",
            about: "crossbeam_skiplist::SkipMap (lock-free skip list)",
            build: skiplist::build,
            concurrent: always,
        },
        Peer {
            name: "bplustree",
            about: "bplustree::BPlusTree (LeanStore-style optimistic lock coupling)",
            build: bplustree::build,
            concurrent: bplustree::concurrent,
        },
        Peer {
            name: "btreemap",
            about: "std BTreeMap behind a parking_lot RwLock",
            build: btreemap::build,
            concurrent: always,
        },
        Peer {
            name: "congee",
            about: "congee (ART with optimistic lock coupling; u64 keys, 8-byte values only)",
            build: congee::build,
            concurrent: always,
        },
        Peer {
            name: "bf-tree",
            about: "bf_tree::BfTree 0.5 (Microsoft Research Bf-Tree, in memory; byte keys)",
            build: bftree::build,
            concurrent: always,
        },
        Peer {
            name: "masstree",
            about: "masstree::MassTree 0.9 (trie of B+trees, optimistic reads; byte keys)",
            build: masstree::build,
            concurrent: always,
        },
        Peer {
            name: "ferntree",
            about: "ferntree::Tree 0.7 (B+tree with optimistic lock coupling, from bplustree)",
            build: ferntree::build,
            concurrent: always,
        },
    ]);
    peers
}

/// The names of all peers, in registry order.
pub fn peer_names() -> Vec<&'static str> {
    all_peers().iter().map(|p| p.name).collect()
}

/// The peer called `name`.
pub fn find_peer(name: &str) -> Option<Peer> {
    all_peers().into_iter().find(|p| p.name == name)
}

/// How a typed peer stores the byte keys and values it is given.
pub trait Repr: Send + Sync + 'static {
    /// Owned key type.
    type K: Ord + Clone + Send + Sync + Borrow<Self::Q> + 'static;
    /// Borrowed lookup form of the key.
    type Q: Ord + ?Sized;
    /// Owned value type.
    type V: Clone + Send + Sync + 'static;
    /// "u64" or "bytes".
    const NAME: &'static str;
    /// An owned key from key bytes.
    fn key(bytes: &[u8]) -> Self::K;
    /// Runs `f` on the lookup form of `bytes` without allocating.
    fn with_query<R>(bytes: &[u8], f: impl FnOnce(&Self::Q) -> R) -> R;
    /// An owned value from value bytes.
    fn value(bytes: &[u8]) -> Self::V;
    /// Overwrites `v` with `bytes`.
    fn set_value(v: &mut Self::V, bytes: &[u8]);
    /// Appends the bytes of `v` to `out`.
    fn value_bytes(v: &Self::V, out: &mut Vec<u8>);
    /// Runs `f` on the bytes of a key and a value (for scans).
    fn with_entry<R>(k: &Self::K, v: &Self::V, f: impl FnOnce(&[u8], &[u8]) -> R) -> R;
}

/// 8-byte integer keys and 8-byte values stored as `u64`.
pub struct U64Repr;

impl U64Repr {
    #[inline]
    fn decode_key(bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        u64::from_be_bytes(b)
    }
    #[inline]
    fn decode_value(bytes: &[u8]) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[..8]);
        u64::from_le_bytes(b)
    }
}

impl Repr for U64Repr {
    type K = u64;
    type Q = u64;
    type V = u64;
    const NAME: &'static str = "u64";
    #[inline]
    fn key(bytes: &[u8]) -> u64 {
        Self::decode_key(bytes)
    }
    #[inline]
    fn with_query<R>(bytes: &[u8], f: impl FnOnce(&u64) -> R) -> R {
        f(&Self::decode_key(bytes))
    }
    #[inline]
    fn value(bytes: &[u8]) -> u64 {
        Self::decode_value(bytes)
    }
    #[inline]
    fn set_value(v: &mut u64, bytes: &[u8]) {
        *v = Self::decode_value(bytes);
    }
    #[inline]
    fn value_bytes(v: &u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    fn with_entry<R>(k: &u64, v: &u64, f: impl FnOnce(&[u8], &[u8]) -> R) -> R {
        f(&k.to_be_bytes(), &v.to_le_bytes())
    }
}

/// Keys and values of any length stored as heap bytes.
pub struct BytesRepr;

impl Repr for BytesRepr {
    type K = Vec<u8>;
    type Q = [u8];
    type V = Box<[u8]>;
    const NAME: &'static str = "bytes";
    #[inline]
    fn key(bytes: &[u8]) -> Vec<u8> {
        bytes.to_vec()
    }
    #[inline]
    fn with_query<R>(bytes: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
        f(bytes)
    }
    #[inline]
    fn value(bytes: &[u8]) -> Box<[u8]> {
        bytes.into()
    }
    #[inline]
    fn set_value(v: &mut Box<[u8]>, bytes: &[u8]) {
        if v.len() == bytes.len() {
            v.copy_from_slice(bytes);
        } else {
            *v = bytes.into();
        }
    }
    #[inline]
    fn value_bytes(v: &Box<[u8]>, out: &mut Vec<u8>) {
        out.extend_from_slice(v);
    }
    #[inline]
    fn with_entry<R>(k: &Vec<u8>, v: &Box<[u8]>, f: impl FnOnce(&[u8], &[u8]) -> R) -> R {
        f(k, v)
    }
}

/// Builds `A<U64Repr>` when the shape fits u64, `A<BytesRepr>` otherwise.
#[macro_export]
macro_rules! build_typed {
    ($adapter:ident, $shape:expr) => {
        if $shape.fits_u64() {
            Ok(Box::new($adapter::<$crate::adapters::U64Repr>::new())
                as Box<dyn $crate::adapters::Index>)
        } else {
            Ok(Box::new($adapter::<$crate::adapters::BytesRepr>::new())
                as Box<dyn $crate::adapters::Index>)
        }
    };
}

/// Drives the epoch-based reclaimers some peers use (crossbeam-epoch for skiplist, bplustree,
/// congee and ferntree; sdd for scc) until the memory they deferred is freed, so that one
/// run's garbage is not counted, or freed, inside the next run's memory measurement. Each
/// round frees a bounded number of deferred batches, so it goes on until the live heap stops
/// shrinking. Worker threads that have just ended may still be running their thread-local
/// destructors, which hand their last deferred frees to the collector a moment later
/// (ferntree's updates leave tens of MB of such garbage; a measurement once went negative by
/// 20 MB), so a quiet heap is confirmed twice after a short sleep before this returns. Call
/// it with no other thread running.
pub fn reclaim_deferred() {
    let mut last = crate::alloc::live_bytes();
    let mut quiet_checks = 0;
    let mut quiet_sleeps = 0;
    for round in 1..=400_000u32 {
        let guard = crossbeam_epoch::pin();
        guard.flush();
        drop(guard);
        let guard = ::scc::Guard::new();
        guard.accelerate();
        drop(guard);
        if round % 128 == 0 {
            let now = crate::alloc::live_bytes();
            if now < last {
                quiet_checks = 0;
                quiet_sleeps = 0;
            } else {
                quiet_checks += 1;
            }
            last = now;
            if quiet_checks >= 4 {
                if quiet_sleeps >= 2 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
                quiet_sleeps += 1;
                quiet_checks = 0;
            }
        }
    }
}
