//! Insert segments of hot leaves: Eunomia's segmented leaf (`eunomia-contended-index.md`
//! §4.2), in software. One set per entry of the line-mode table (`sync::lines`), found by
//! the same entry index.
//!
//! A leaf in line mode keeps its sorted area (the slotted page) as it was at the switch;
//! inserts of new keys go to [`SEGMENTS`] insert segments beside it, each on cache lines of
//! its own with its own lock word, so that inserters of different segments write no common
//! line and readers of the sorted area never see their writes. A key always goes to the
//! segment its hash picks ([`segment_of`]): one key is never in two segments, and an
//! inserter that holds its key's segment knows whether the key is there. (The paper's write
//! scheduler picks a random segment; a hash spreads random keys as well and needs no search
//! of the other segments.)
//!
//! **Protocol.** The lock word of a segment is a version: odd while an inserter holds it.
//! An inserter locks it, issues a `SeqCst` fence and only then checks that nobody latched
//! the leaf since its snapshot (`OptimisticGuard::validate_keys`); it appends its record and
//! unlocks. The exclusive acquisition that ends line mode issues its own `SeqCst` fence and
//! then waits until no segment is locked ([`drain`]): the Dekker pair of `sync::lines`, so
//! either the inserter sees the latch and writes nothing, or the acquirer waits for it and
//! then sees its record. The acquirer moves every record into the sorted area under the
//! latch (`node::segments`) and empties the segments, so a leaf leaves line mode with all
//! its keys in its page: scans, splits, removals and every other latched access find them
//! there.
//!
//! **Room.** A segment holds what its buffer holds and what its share of the page's free
//! space takes once moved ([`Segment::budget`], set when the leaf switches): the move never
//! needs a split. An insert that finds no room ends line mode and takes the latched path.
//!
//! **Readers** read a segment as a seqlock: the version (even) before, the records (atomic
//! word loads; every length read is bounds-checked before it addresses a word), the
//! version again after. Records leave a segment only when an exclusive latch ends line
//! mode, which a reader's validation of the leaf catches.

use super::lines::ENTRIES;
use crate::node::raw::RawPage;
use crate::node::{Node, NodeMut};
use crate::page::Directory;
use crate::sync::seam::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{Counter, ExclusiveGuard, Restart, StripedCounters};

/// Insert segments per entry.
pub(crate) const SEGMENTS: usize = 4;
/// Record words per segment (a record is a word of lengths, then its key's and its value's
/// bytes, each padded to whole words).
const WORDS: usize = 30;
/// The longest key a segment takes.
pub(crate) const MAX_KEY: usize = 64;
/// The longest value a segment takes.
pub(crate) const MAX_VALUE: usize = 128;

/// One segment: its lock word (a version), the words of its records in use, its room left
/// in the page, and the records. 256 bytes, on four cache lines of its own.
#[repr(align(64))]
struct Segment {
    lock: AtomicU64,
    used: AtomicU32,
    /// Bytes of the leaf's page that the records still to come may take once moved.
    budget: AtomicU32,
    words: [AtomicU64; WORDS],
}

/// The segments of every entry of the line-mode table. Zero pages until used.
static TABLE: [[Segment; SEGMENTS]; ENTRIES] = [const {
    [const {
        Segment {
            lock: AtomicU64::new(0),
            used: AtomicU32::new(0),
            budget: AtomicU32::new(0),
            words: [const { AtomicU64::new(0) }; WORDS],
        }
    }; SEGMENTS]
}; ENTRIES];

/// What the move of an entry's records needs of its leaf's tree, set when the leaf switches:
/// the page size, the tree's page directory (for the leaf's long keys) and its counters.
struct Leaf {
    page_size: AtomicUsize,
    directory: AtomicUsize,
    counters: AtomicUsize,
}

static LEAVES: [Leaf; ENTRIES] = [const {
    Leaf {
        page_size: AtomicUsize::new(0),
        directory: AtomicUsize::new(0),
        counters: AtomicUsize::new(0),
    }
}; ENTRIES];

/// Words a record of a key of `k` bytes and a value of `v` bytes takes.
#[inline]
fn record_words(k: usize, v: usize) -> usize {
    1 + k.div_ceil(8) + v.div_ceil(8)
}

/// Whether a segment can ever take this key and value.
#[inline]
pub(crate) fn takes(key: &[u8], value: &[u8]) -> bool {
    key.len() <= MAX_KEY && value.len() <= MAX_VALUE
}

/// The segment of a key of hash `hash` (`ccm::key_hash`).
#[inline]
pub(crate) fn segment_of(hash: u64) -> usize {
    (hash >> 32) as usize % SEGMENTS
}

/// Empties the segments of entry `e` and gives each a share of the free bytes of `leaf`,
/// latched exclusively and switching to line mode, in a tree whose directory and counters
/// are `directory` and `counters` (which outlive every latch of its pages).
pub(crate) fn open(e: usize, leaf: &Node, directory: &Directory, counters: &StripedCounters) {
    let l = &LEAVES[e];
    l.page_size.store(leaf.page_size(), Ordering::Relaxed);
    l.directory
        .store(directory as *const Directory as usize, Ordering::Relaxed);
    l.counters.store(
        counters as *const StripedCounters as usize,
        Ordering::Relaxed,
    );
    reset(e, leaf.free_space());
}

/// Empties the segments of entry `e` and shares `free` bytes of page room among them.
fn reset(e: usize, free: usize) {
    let share = (free / SEGMENTS).min(u32::MAX as usize) as u32;
    for s in &TABLE[e] {
        s.used.store(0, Ordering::Relaxed);
        s.budget.store(share, Ordering::Relaxed);
    }
}

/// Writes `bytes` into the words from `at` (zero-padded).
fn put_bytes(s: &Segment, at: usize, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(8).enumerate() {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        s.words[at + i].store(u64::from_le_bytes(w), Ordering::Relaxed);
    }
}

/// Reads `out.len()` bytes from the words from `at` into `out`; `Restart` if they would run
/// past the segment (a torn length).
fn get_bytes(s: &Segment, at: usize, out: &mut [u8]) -> Result<(), Restart> {
    if at + out.len().div_ceil(8) > WORDS {
        return Err(Restart);
    }
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let w = s.words[at + i].load(Ordering::Relaxed).to_le_bytes();
        chunk.copy_from_slice(&w[..chunk.len()]);
    }
    Ok(())
}

/// The lengths in a record's first word.
#[inline]
fn lens(w: u64) -> (usize, usize) {
    ((w & 0xffff) as usize, (w >> 16 & 0xffff) as usize)
}

/// Calls `each(key, value)` for the records of `s` in `s.used` words, until it returns
/// `true`; `Restart` on a length that runs past the segment (a reader's torn read).
fn scan(
    s: &Segment,
    used: usize,
    mut each: impl FnMut(&[u8], &[u8]) -> bool,
) -> Result<(), Restart> {
    let used = used.min(WORDS);
    // On the stack: a segment's reader or inserter allocates nothing.
    let (mut key, mut value) = ([0u8; MAX_KEY], [0u8; MAX_VALUE]);
    let mut at = 0;
    while at < used {
        let (k, v) = lens(s.words[at].load(Ordering::Relaxed));
        if k > MAX_KEY || v > MAX_VALUE {
            // A torn length (a reader's): no record is that long.
            return Err(Restart);
        }
        get_bytes(s, at + 1, &mut key[..k])?;
        get_bytes(s, at + 1 + k.div_ceil(8), &mut value[..v])?;
        if each(&key[..k], &value[..v]) {
            return Ok(());
        }
        at += record_words(k, v);
    }
    Ok(())
}

/// A held segment: its lock word is odd; unlocked on drop.
#[derive(Debug)]
pub(crate) struct SegmentLock {
    e: usize,
    i: usize,
}

/// What [`SegmentLock::append`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Appended {
    /// The record is in the segment.
    Done,
    /// The key is in the segment already: the caller replaces it on the latched path.
    Present,
    /// No room (words or page budget): the caller takes the latched path.
    Full,
}

impl SegmentLock {
    /// Locks segment `i` of entry `e`, waiting while another inserter holds it; returns the
    /// lock and whether it waited. A `SeqCst` fence follows, so that the caller's next look
    /// at the leaf's latch is ordered after the lock (see the module doc).
    pub(crate) fn lock(e: usize, i: usize) -> (SegmentLock, bool) {
        let waited = super::lines::lock_version(&TABLE[e][i].lock);
        crate::sync::seam::fence(Ordering::SeqCst);
        (SegmentLock { e, i }, waited)
    }

    /// Appends `key` and `value`, which take `cost` bytes of the page once moved, unless
    /// the key is there already or there is no room. The caller validated its snapshot of
    /// the leaf after locking.
    pub(crate) fn append(&self, key: &[u8], value: &[u8], cost: usize) -> Appended {
        let s = &TABLE[self.e][self.i];
        let used = s.used.load(Ordering::Relaxed) as usize;
        let mut present = false;
        // The holder reads what only holders write: no torn length.
        scan(s, used, |k, _| {
            present = k == key;
            present
        })
        .expect("a held segment is consistent");
        if present {
            return Appended::Present;
        }
        let words = record_words(key.len(), value.len());
        let budget = s.budget.load(Ordering::Relaxed) as usize;
        if used + words > WORDS || cost > budget {
            return Appended::Full;
        }
        s.words[used].store(
            key.len() as u64 | (value.len() as u64) << 16,
            Ordering::Relaxed,
        );
        put_bytes(s, used + 1, key);
        put_bytes(s, used + 1 + key.len().div_ceil(8), value);
        s.used.store((used + words) as u32, Ordering::Relaxed);
        s.budget.store((budget - cost) as u32, Ordering::Relaxed);
        Appended::Done
    }
}

impl Drop for SegmentLock {
    fn drop(&mut self) {
        TABLE[self.e][self.i].lock.fetch_add(1, Ordering::Release);
    }
}

/// A reader's look for `key` (of hash `hash`) in the segments of entry `e`: whether its
/// segment holds it. Waits briefly for a locked segment; `Restart` if it stays locked or
/// changed during the look. The caller validates its snapshot of the leaf after.
pub(crate) fn holds(e: usize, hash: u64, key: &[u8]) -> Result<bool, Restart> {
    let s = &TABLE[e][segment_of(hash)];
    let v = super::lines::read_version(&s.lock)?;
    let used = s.used.load(Ordering::Relaxed) as usize;
    let mut found = false;
    if used > 0 {
        scan(s, used, |k, _| {
            found = k == key;
            found
        })?;
    }
    crate::sync::seam::fence(Ordering::Acquire);
    if s.lock.load(Ordering::Relaxed) != v {
        return Err(Restart);
    }
    Ok(found)
}

/// Ends the segments of entry `e`: the caller holds the leaf's exclusive latch (and issued
/// a `SeqCst` fence after taking it). Waits until no segment is locked, calls `each(key,
/// value)` for every record and empties the segments. Returns how many records it moved.
pub(crate) fn drain(e: usize, mut each: impl FnMut(&[u8], &[u8])) -> usize {
    let mut moved = 0;
    for s in &TABLE[e] {
        let mut spins = 0u32;
        while s.lock.load(Ordering::Acquire) & 1 != 0 {
            super::lines::wait(&mut spins);
        }
        let used = s.used.load(Ordering::Relaxed) as usize;
        if used == 0 {
            continue;
        }
        scan(s, used, |k, v| {
            each(k, v);
            moved += 1;
            false
        })
        .expect("an unlocked segment is consistent");
        s.used.store(0, Ordering::Relaxed);
    }
    moved
}

/// The sum of the lock words of entry `e`'s segments: it moves with every insert into
/// them (the eviction of cold leaves looks at it, `lines::evict_cold`).
pub(crate) fn activity(e: usize) -> u64 {
    TABLE[e].iter().fold(0u64, |s, seg| {
        s.wrapping_add(seg.lock.load(Ordering::Relaxed))
    })
}

/// Moves the records of entry `e`'s segments into the sorted area of its leaf, which `x`
/// has just latched exclusively to end line mode (after `lines::quiesce`). Returns how many
/// it moved.
pub(crate) fn drain_into(e: usize, x: &mut ExclusiveGuard<'_>) -> usize {
    if TABLE[e]
        .iter()
        .all(|s| s.lock.load(Ordering::Acquire) & 1 == 0 && s.used.load(Ordering::Relaxed) == 0)
    {
        return 0;
    }
    let l = &LEAVES[e];
    let page_size = l.page_size.load(Ordering::Relaxed);
    let directory = l.directory.load(Ordering::Relaxed) as *const Directory;
    let counters = l.counters.load(Ordering::Relaxed) as *const StripedCounters;
    // SAFETY: the latch word is the first word of its page, of the size `open` noted for
    // this entry when the leaf switched; the page stays mapped while its tree lives, and
    // the caller reached the latch through that tree (or, evicting, through the table
    // under the gate that holds off the tree's drop, `lines::evict_cold`).
    let node = Node::new(unsafe { RawPage::new(x.latch_addr() as *mut u8, page_size) });
    // SAFETY: `open` noted the directory and counters of the leaf's tree, which outlive
    // its pages' latches, one of which the caller holds (and the tree's drop waits for an
    // evictor's gate).
    let (directory, counters) = unsafe { (&*directory, &*counters) };
    let mut leaf = NodeMut::new(node, x);
    let moved = drain(e, |key, value| {
        let (pos, found) = leaf
            .lower_bound(key, directory)
            .expect("a latched leaf reads consistently");
        assert!(!found, "a key in an insert segment is absent from its leaf");
        assert!(
            leaf.insert_entry(pos, key, value),
            "a segment's budget keeps room in the leaf for its records"
        );
    });
    counters.add(Counter::SegmentMoves, moved as i64);
    moved
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn records_go_in_until_full_and_drain_in_order() {
        // The last entry: no other test of this binary uses it for long.
        let e = ENTRIES - 1;
        reset(e, 4 * 100);
        let (lock, waited) = SegmentLock::lock(e, 0);
        assert!(!waited);
        assert_eq!(lock.append(b"key-1", b"v1", 30), Appended::Done);
        assert_eq!(lock.append(b"key-1", b"v2", 30), Appended::Present);
        assert_eq!(lock.append(b"key-2", &[7u8; 20], 30), Appended::Done);
        assert_eq!(lock.append(b"key-3", b"", 30), Appended::Done);
        // The page budget (100 bytes) is spent.
        assert_eq!(lock.append(b"key-4", b"", 30), Appended::Full);
        // A reader waits for the held segment, then gives up.
        // A hash whose segment is 0 (`segment_of` reads the high half).
        let hash = 1u64;
        assert_eq!(holds(e, hash, b"key-1"), Err(Restart));
        drop(lock);
        assert_eq!(holds(e, hash, b"key-1"), Ok(true));
        assert_eq!(holds(e, hash, b"key-9"), Ok(false));
        let mut seen = Vec::new();
        assert_eq!(drain(e, |k, v| seen.push((k.to_vec(), v.to_vec()))), 3);
        assert_eq!(seen[1], (b"key-2".to_vec(), vec![7u8; 20]));
        assert_eq!(holds(e, hash, b"key-1"), Ok(false));
        // Word room: a record of a 64-byte key and a 128-byte value takes 25 of 30 words.
        reset(e, 1 << 20);
        let (lock, _) = SegmentLock::lock(e, 2);
        assert_eq!(lock.append(&[1; 64], &[2; 128], 1), Appended::Done);
        assert_eq!(lock.append(&[3; 64], b"", 1), Appended::Full);
        drop(lock);
        assert_eq!(drain(e, |_, _| {}), 1);
    }
}
