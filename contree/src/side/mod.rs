//! The side structure for hot key ranges (issue "Hot spots", after the paper's auxiliary
//! structure, `hotspots-hot-leaves.md`): the state and the rules; the tree operations that
//! use it are in [`ops`].
//!
//! **What it is.** A policy marks a key range *hot*: the key range of one leaf at the moment
//! of marking (its fences), so ranges are aligned to leaves. While a range is hot, inserts
//! and removals of its keys do not latch any leaf: they go to the range's side structure,
//! [`SHARDS`] sorted maps, each behind its own mutex, chosen by a hash of the key (so that
//! concurrent appends of consecutive keys from many threads take different mutexes). A
//! removal leaves a tombstone there. When a range holds [`Config::side_merge_entries`]
//! entries, one writer merges all of them into the tree in key order, one leaf latch per
//! run of keys that share a leaf, and the range is marked again on the leaf that then holds
//! its last key (so that an append range follows the tree's right edge and never covers
//! more than the leaf it started on plus the keys appended since).
//!
//! **The rule that keeps it linearizable.** While a range is hot, every write of one of its
//! keys, diverted or not, holds the mutex of the key's shard; a write that reaches a leaf
//! (a merge, or an operation the side structure does not take, such as a closure) does so
//! while it holds that mutex, which [`held`] records per thread. Four consequences:
//! * A writer checks, under its leaf's exclusive latch, that its key is in no hot range it
//!   does not hold ([`Side::blocks`]); a range is marked while the marker holds the latch of
//!   the leaf whose fences it copies, so a write either committed before the marking or
//!   sees the range and goes to the side structure.
//! * A diverted insert or removal learns the key's old value from its shard (an entry or a
//!   tombstone) or, if the shard has none, from the tree, which no one else can change for
//!   that key while the mutex is held.
//! * A point read of a key in a hot range looks in the shard first and reads the tree under
//!   the same mutex. A point read of any other key reads the tree alone: a range marked
//!   after the read looked is written to only after the marking, so the value read was the
//!   key's value at some point during the read.
//! * A merge moves an entry into the tree and out of its shard under the shard's mutex, so
//!   no reader sees it in neither place.
//!
//! **Ranges and scans.** Range reads (iterators, cursors, scans, `first`/`last`) merge the
//! side structure into the tree before they read ([`ops`]): every entry whose write
//! completed before the read began is then in the tree, which is what the tree's weakly
//! consistent scans promise (an entry written during a scan may or may not be seen).
//! Merging moves entries out of the side structure and cools the range (it is marked again
//! if the appends go on), so the scan pays for the bulk merge, once for all scanners.
//!
//! **Policy.** Contention Split's sampler (`policy::contention`) recognises ordered appends
//! from several threads on one leaf and asks for a hot range ([`Side::ask_heat`]); the next
//! insert marks the range of its leaf if its key is an append there. With
//! [`SideStructure::WithScans`] (the default) it asks only if a range read began since the
//! last decision, and a full range merged with no range read since is not marked again, so
//! appends go back to leaf combining when the scans stop; `Always` asks at every such
//! period. At most [`Config::side_ranges`] ranges are hot; marking one more first merges and
//! cools the least recently used. Range reads, `compact`, `check_invariants` and dropping
//! the tree merge everything. A range that stops receiving writes keeps its entries until
//! one of those, or until it is evicted (no timer cools it).
//!
//! **Memory.** Each shard charges its bytes (keys, values and a per-entry overhead, times
//! two: the pages the entries will take in leaves) to the page pool's budget as reserved
//! pages. A diverted write the budget refuses takes the normal path instead, which
//! reclaims space or fails with `Error::OutOfSpace`. A merge gives the reservation back
//! first and may then take up to that many pages past the budget, so a merge never fails
//! for want of the pages its entries were charged for.

mod merge;
pub(crate) mod ops;

use crate::config::{Config, SideStructure};
use crate::sync::seam::{
    model_local, AtomicBool, AtomicU64, Mutex, MutexGuard, Ordering, RwLock, RwLockReadGuard,
    RwLockWriteGuard,
};
use std::cell::Cell;
use std::sync::Arc;

/// Shards of one hot range.
pub(crate) const SHARDS: usize = 16;

/// The bit of [`Side`]'s state that asks the next insert to mark its range hot.
const HEAT_ASKED: u64 = 0x80;
/// The bits of [`Side`]'s state that count hot ranges (at most 64).
const RANGES: u64 = 0x7f;

/// Bytes an entry costs in a shard beyond its key and value (the map's node share, the
/// vectors' headers).
const ENTRY_OVERHEAD: usize = 48;

/// The entries of a shard in ascending key order (`None`: a tombstone). A sorted vector:
/// appends, the load a range is marked for, push at its end after one comparison.
#[derive(Default)]
pub(crate) struct Entries(Vec<(Vec<u8>, Option<Vec<u8>>)>);

impl Entries {
    fn find(&self, key: &[u8]) -> Result<usize, usize> {
        match self.0.last() {
            None => Err(0),
            Some((last, _)) if key > last.as_slice() => Err(self.0.len()),
            _ => self.0.binary_search_by(|(k, _)| k.as_slice().cmp(key)),
        }
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&Option<Vec<u8>>> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }

    pub(crate) fn insert(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// All entries, in order, leaving none.
    pub(crate) fn take(&mut self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        std::mem::take(&mut self.0)
    }
}

/// One shard: the diverted entries of its keys and their charge.
#[derive(Default)]
pub(crate) struct Shard {
    pub(crate) map: Entries,
    /// Bytes of the entries, with [`ENTRY_OVERHEAD`] each.
    pub(crate) bytes: usize,
    /// Pages reserved from the pool's budget for them.
    pub(crate) reserved: usize,
}

/// A shard on a cache line of its own.
#[repr(align(128))]
pub(crate) struct PaddedShard(pub(crate) Mutex<Shard>);

/// One hot range: the keys above `low` (none: no bound) up to and including `high` (none:
/// no bound), the fences of the leaf it was marked on.
pub(crate) struct HotRange {
    pub(crate) low: Option<Vec<u8>>,
    pub(crate) high: Option<Vec<u8>>,
    /// The largest key the tree held in the range when it was marked (`None`: none). A key
    /// above it is absent from the tree until a write reaches the tree (`tree_written`):
    /// appends then skip the tree lookup for their old value.
    pub(crate) tree_max: Option<Vec<u8>>,
    pub(crate) tree_written: AtomicBool,
    pub(crate) shards: Box<[PaddedShard]>,
    /// Set, with every shard's mutex held, when the range is merged and no longer hot: a
    /// writer that finds it set after taking a shard's mutex starts again.
    pub(crate) retired: AtomicBool,
    /// The LRU clock at the last diverted write.
    pub(crate) last_used: AtomicU64,
}

impl HotRange {
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        self.low.as_deref().is_none_or(|l| key > l) && self.high.as_deref().is_none_or(|h| key <= h)
    }

    /// Whether the range shares a key with `other` (both are open below, closed above).
    pub(crate) fn meets(&self, other: &HotRange) -> bool {
        let below = |low: &Option<Vec<u8>>, high: &Option<Vec<u8>>| match (low, high) {
            (Some(l), Some(h)) => l < h,
            _ => true,
        };
        below(&self.low, &other.high) && below(&other.low, &self.high)
    }

    /// The shard of `key`.
    pub(crate) fn shard_of(&self, key: &[u8]) -> usize {
        shard_index(key)
    }

    pub(crate) fn shard(&self, i: usize) -> MutexGuard<'_, Shard> {
        lock(&self.shards[i].0)
    }

    fn addr(&self) -> usize {
        self as *const HotRange as usize
    }
}

/// FNV-1a over the key, folded to a shard index.
fn shard_index(key: &[u8]) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    ((h >> 32) ^ h) as usize % SHARDS
}

/// Locks `m`, ignoring poisoning (no shard is left half changed by a panic: every change
/// of a map is one call).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

model_local! {
    /// The shard mutex this thread holds while it writes to the tree: the range's address
    /// and the shard (`ALL`: every shard of it), or `(0, 0)`.
    static HELD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// [`HELD`]'s shard value for a merge, which holds every shard of its range.
const ALL: usize = usize::MAX;

/// Records, until it is dropped, that this thread holds shard `shard` (or [`ALL`]) of
/// `range`: its writes to the tree of keys there are then allowed.
pub(crate) struct Held {
    prev: (usize, usize),
}

impl Held {
    pub(crate) fn shard(range: &HotRange, shard: usize) -> Held {
        Held {
            prev: HELD.with(|h| h.replace((range.addr(), shard))),
        }
    }

    pub(crate) fn all(range: &HotRange) -> Held {
        Self::shard(range, ALL)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|h| h.set(self.prev));
    }
}

/// Whether this thread holds the shard of `key` in `range`.
fn holds(range: &HotRange, key: &[u8]) -> bool {
    let (addr, shard) = HELD.with(|h| h.get());
    addr == range.addr() && (shard == ALL || shard == range.shard_of(key))
}

/// Counters of the side structure (`Stats::side_*`).
#[derive(Default)]
pub(crate) struct SideStats {
    pub(crate) merges: AtomicU64,
    pub(crate) merged_entries: AtomicU64,
    pub(crate) ranges_marked: AtomicU64,
    pub(crate) ranges_cooled: AtomicU64,
}

/// A flag on a cache line of its own.
#[repr(align(128))]
struct PaddedFlag(AtomicBool);

/// The side structure of one tree.
pub(crate) struct Side {
    /// `Config::side_structure` is not `Off`.
    pub(crate) enabled: bool,
    /// `Config::side_structure` is `Always`: ranges are marked without range reads.
    always: bool,
    /// `WithScans`: set by a range read, taken by the next decision to mark a range hot
    /// (or to keep a merged append range hot); see [`Side::scans_seen`].
    scanned: PaddedFlag,
    pub(crate) max_ranges: usize,
    pub(crate) merge_entries: usize,
    /// `(marks << 8) | HEAT_ASKED? | hot ranges`: the count of marks and cools changes
    /// whenever a range is marked or cooled; the low byte is the one load that operations
    /// pay while no range is hot (non-zero: a range is hot or a mark was asked for).
    state: AtomicU64,
    ranges: RwLock<Vec<Arc<HotRange>>>,
    clock: AtomicU64,
    pub(crate) stats: SideStats,
}

impl Side {
    pub(crate) fn new(config: &Config) -> Side {
        Side {
            enabled: config.side_structure != SideStructure::Off,
            always: config.side_structure == SideStructure::Always,
            scanned: PaddedFlag(AtomicBool::new(false)),
            max_ranges: config.side_ranges,
            merge_entries: config.side_merge_entries,
            state: AtomicU64::new(0),
            ranges: RwLock::new(Vec::new()),
            clock: AtomicU64::new(0),
            stats: SideStats::default(),
        }
    }

    /// The state word (see the field).
    #[inline(always)]
    pub(crate) fn state(&self) -> u64 {
        self.state.load(Ordering::SeqCst)
    }

    /// Called when a range read begins (a cursor's seek): with `WithScans`, the next
    /// decision may mark a range hot. A load, and a store only when the flag is clear, so
    /// that scanners do not write a shared line on every seek.
    #[inline(always)]
    pub(crate) fn note_scan(&self) {
        if self.enabled && !self.always && !self.scanned.0.load(Ordering::Relaxed) {
            self.scanned.0.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the policy may mark (or keep) an append range hot now: always with
    /// `Always`; with `WithScans`, if a range read began since the last time this answered
    /// `true` (the answer takes the flag). Asked when Contention Split's sampler finds a
    /// contended append period and when a full range is merged; so after the scans stop,
    /// the next merge cools the range for good and appends go back to leaf combining.
    pub(crate) fn scans_seen(&self) -> bool {
        self.always
            || (self.scanned.0.load(Ordering::Relaxed)
                && self.scanned.0.swap(false, Ordering::Relaxed))
    }

    /// Whether `state` has a hot range or a mark asked for ([`HEAT_ASKED`]).
    #[inline(always)]
    pub(crate) fn any(state: u64) -> bool {
        state & 0xff != 0
    }

    /// Called by Contention Split's sampler, under the latch of a leaf that received a
    /// contended period of ordered appends: asks the next insert to mark the range of its
    /// leaf hot, if the policy wants one now (see [`scans_seen`](Self::scans_seen), which
    /// the insert asks again). The request is a bit in `state`, so inserts pay nothing
    /// more for it; a mark or cool that races with it drops it, and the sampler asks again
    /// at a later period.
    pub(crate) fn ask_heat(&self) {
        if self.enabled && (self.always || self.scanned.0.load(Ordering::Relaxed)) {
            self.state.fetch_or(HEAT_ASKED, Ordering::SeqCst);
        }
    }

    /// Takes the request of [`ask_heat`](Self::ask_heat): whether there was one.
    pub(crate) fn take_heat(&self) -> bool {
        self.state() & HEAT_ASKED != 0
            && self.state.fetch_and(!HEAT_ASKED, Ordering::SeqCst) & HEAT_ASKED != 0
    }

    fn read(&self) -> RwLockReadGuard<'_, Vec<Arc<HotRange>>> {
        self.ranges.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Vec<Arc<HotRange>>> {
        self.ranges.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The hot range that holds `key`, if any.
    pub(crate) fn range_of(&self, key: &[u8]) -> Option<Arc<HotRange>> {
        self.read().iter().find(|r| r.contains(key)).cloned()
    }

    /// Every hot range.
    pub(crate) fn all(&self) -> Vec<Arc<HotRange>> {
        self.read().clone()
    }

    /// Called by a writer under its leaf's exclusive latch: whether `key` lies in a hot range
    /// whose shard this thread does not hold, so that the write must not reach the leaf.
    #[inline(always)]
    pub(crate) fn blocks(&self, key: &[u8]) -> bool {
        Self::any(self.state()) && self.blocks_slow(key)
    }

    #[cold]
    #[inline(never)]
    fn blocks_slow(&self, key: &[u8]) -> bool {
        self.read()
            .iter()
            .any(|r| r.contains(key) && !holds(r, key))
    }

    /// Registers `range` (the caller holds the exclusive latch of the leaf whose fences it
    /// copied); `false`, registering nothing, if it overlaps a hot range or the limit is
    /// reached.
    pub(crate) fn register(&self, range: HotRange) -> bool {
        let mut ranges = self.write();
        if ranges.len() >= self.max_ranges || ranges.iter().any(|r| r.meets(&range)) {
            return false;
        }
        range.last_used.store(self.tick(), Ordering::Relaxed);
        ranges.push(Arc::new(range));
        self.state.store(
            ((self.state() >> 8) + 1) << 8 | ranges.len() as u64,
            Ordering::SeqCst,
        );
        self.stats.ranges_marked.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Removes `range` (whose shards the caller holds, all empty, `retired` set).
    pub(crate) fn unregister(&self, range: &HotRange) {
        let mut ranges = self.write();
        ranges.retain(|r| r.addr() != range.addr());
        self.state.store(
            ((self.state() >> 8) + 1) << 8 | ranges.len() as u64,
            Ordering::SeqCst,
        );
        self.stats.ranges_cooled.fetch_add(1, Ordering::Relaxed);
    }

    /// The least recently used range, when the limit is reached.
    pub(crate) fn victim(&self) -> Option<Arc<HotRange>> {
        let ranges = self.read();
        if ranges.len() < self.max_ranges {
            return None;
        }
        ranges
            .iter()
            .min_by_key(|r| r.last_used.load(Ordering::Relaxed))
            .cloned()
    }

    /// The LRU clock, advanced.
    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Entries in all shards (tombstones included).
    pub(crate) fn entries(&self) -> usize {
        self.all()
            .iter()
            .map(|r| (0..SHARDS).map(|i| r.shard(i).map.len()).sum::<usize>())
            .sum()
    }

    /// Hot ranges now.
    pub(crate) fn ranges(&self) -> usize {
        (self.state() & RANGES) as usize
    }
}

impl HotRange {
    /// A range over the keys above `low` up to `high`, whose tree part ends at `tree_max`.
    pub(crate) fn new(
        low: Option<Vec<u8>>,
        high: Option<Vec<u8>>,
        tree_max: Option<Vec<u8>>,
    ) -> Self {
        HotRange {
            low,
            high,
            tree_max,
            tree_written: AtomicBool::new(false),
            shards: (0..SHARDS)
                .map(|_| PaddedShard(Mutex::new(Shard::default())))
                .collect(),
            retired: AtomicBool::new(false),
            last_used: AtomicU64::new(0),
        }
    }

    /// Whether the tree may hold `key` (see `tree_max`).
    pub(crate) fn tree_may_hold(&self, key: &[u8]) -> bool {
        self.tree_written.load(Ordering::Relaxed)
            || self.tree_max.as_deref().is_some_and(|m| key <= m)
    }
}

/// The charge of an entry of `key` and `value` (`None`: a tombstone) in a shard.
pub(crate) fn entry_bytes(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + ENTRY_OVERHEAD
}

/// The pages a shard of `bytes` reserves: twice its bytes (leaves half full at worst).
pub(crate) fn pages_for(bytes: usize, page_size: usize) -> usize {
    (2 * bytes).div_ceil(page_size)
}
