//! Eunomia's conflict-control module (`eunomia-contended-index.md` §4.3) above the leaves in
//! line mode: advisory locks by key hash and mark bits. One per entry of the line-mode table
//! (`sync::lines`), found by the same entry index; `Config::conflict_control` switches the
//! two parts.
//!
//! **Advisory key locks.** Sixteen lock words per entry, each on its own cache line. An
//! in-place update of a leaf in line mode takes the word its key hashes to before it enters
//! the leaf and drops it after, so that updates of one key queue here, parked, rather than
//! on the stretch locks of the value (which spin, then yield) or in the leaf. The locks are
//! advisory: they order updaters and protect no byte (the stretch locks do), so a word held
//! by an updater of a leaf that left line mode, or of another leaf that used the entry
//! before, only delays. A thread holds at most one and takes it holding no latch and no
//! stretch lock; whoever waits for a stretch lock or a latch never waits for a key lock, so
//! they add no cycle.
//!
//! **Mark bits.** A 512-bit Bloom filter (one hash, [`MARK_BITS`] bits: twice the entries of a
//! full 4 KiB leaf of short keys, as the paper sizes it) of the leaf's keys, built under the
//! leaf's exclusive latch when it switches to line mode ([`build`]). No key enters the page
//! of a leaf in line mode without ending it (every latched insert, merge and split latches
//! the leaf exclusively; inserts into its insert segments, `sync::segments`, leave the page
//! alone), and a leaf leaves line mode only under that latch, so the filter holds every key
//! of the leaf's page for as long as a reader's snapshot of the leaf in line mode validates.
//! A reader whose key's bit is clear therefore skips the search of the page, looks in the
//! key's insert segment, and validates its snapshot for the keys
//! (`OptimisticGuard::validate_keys`) as a search would. A removal
//! leaves the bit set (a false positive only). Long keys (stored in part out of line) are
//! neither marked nor looked up: a key of that length is never rejected.
//!
//! Why the validation covers a filter rebuilt by another leaf: the entry changes hands only
//! after its leaf's exclusive latch ended line mode (`lines::drain`), and [`build`] issues a
//! release fence after it took the entry and before it writes a bit, so a reader that read
//! any bit of a newer build, then (after its acquire fence) the leaf's latch word, sees the
//! exclusive acquisition that ended its leaf's mode: the version moved and it restarts.

use super::lines::ENTRIES;
use crate::node::{inline_key_max, long_key_len, Node};
use crate::sync::parking::{park, unpark_all};
use crate::sync::seam::{fence, AtomicU32, AtomicU64, Ordering};
use crate::sync::spin_hint;

/// Bits of an entry's filter.
const MARK_BITS: usize = 512;
const MARK_WORDS: usize = MARK_BITS / 64;
/// Advisory lock words per entry.
const KEY_LOCKS: usize = 16;
/// Spins on a held key lock before the waiter parks.
const LOCK_SPINS: u32 = 32;

/// One lock word on its own cache line: 0 free, 1 held, 2 held with waiters parked.
#[repr(align(64))]
struct LockWord(AtomicU32);

/// The filter of one entry, on one cache line.
#[repr(align(64))]
struct Marks([AtomicU64; MARK_WORDS]);

/// The module's state for every entry of the line-mode table. Zero pages until used.
struct Table {
    marks: [Marks; ENTRIES],
    locks: [[LockWord; KEY_LOCKS]; ENTRIES],
}

static TABLE: Table = Table {
    marks: [const { Marks([const { AtomicU64::new(0) }; MARK_WORDS]) }; ENTRIES],
    locks: [const { [const { LockWord(AtomicU32::new(0)) }; KEY_LOCKS] }; ENTRIES],
};

/// The hash of a key that both parts use: its mark bit is the top 9 bits, its lock word the
/// low 4.
#[inline]
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (key.len() as u64).wrapping_mul(K);
    let mut words = key.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(K);
    }
    h ^= h >> 31;
    h.wrapping_mul(K) ^ (h >> 29)
}

/// The filter's word and bit of a hash.
#[inline]
fn mark_of(hash: u64) -> (usize, u64) {
    let bit = (hash >> (64 - MARK_BITS.trailing_zeros())) as usize;
    (bit / 64, 1u64 << (bit % 64))
}

/// Whether the mark bits may answer for `key` in a leaf of `page_size` bytes (long keys
/// are never marked).
#[inline]
pub(crate) fn markable(key: &[u8], page_size: usize) -> bool {
    key.len() <= inline_key_max(page_size)
}

/// Builds entry `e`'s filter from the keys of `leaf`, which the caller holds exclusively
/// and has just claimed the entry for (see the module doc). A key the leaf cannot give (a
/// damaged page) leaves every bit set: the filter then rejects nothing.
pub(crate) fn build(e: usize, leaf: Node) {
    // Orders the bit writes after the claim of the entry, which came after the previous
    // holder's exclusive latch (the module doc).
    fence(Ordering::Release);
    let mut words = [0u64; MARK_WORDS];
    let long = long_key_len(leaf.page_size());
    let mut key = Vec::with_capacity(64);
    for i in 0..leaf.count() {
        key.clear();
        if leaf.push_key(i, &mut key).is_err() {
            words = [u64::MAX; MARK_WORDS];
            break;
        }
        if key.len() != long {
            let (w, bit) = mark_of(key_hash(&key));
            words[w] |= bit;
        }
    }
    for (word, bits) in TABLE.marks[e].0.iter().zip(words) {
        word.store(bits, Ordering::Relaxed);
    }
}

/// Whether entry `e`'s filter says the key hashed to `hash` is absent. The caller then
/// validates its snapshot of the leaf for the keys (see the module doc).
#[inline]
pub(crate) fn absent(e: usize, hash: u64) -> bool {
    let (w, bit) = mark_of(hash);
    TABLE.marks[e].0[w].load(Ordering::Relaxed) & bit == 0
}

/// A held advisory key lock; released on drop.
#[derive(Debug)]
pub(crate) struct KeyLock {
    word: &'static AtomicU32,
}

impl KeyLock {
    /// Takes the lock word of entry `e` that `hash` picks, parking while another holds it;
    /// returns the lock and whether it waited.
    pub(crate) fn lock(e: usize, hash: u64) -> (KeyLock, bool) {
        let word = &TABLE.locks[e][(hash as usize) % KEY_LOCKS].0;
        let lock = KeyLock { word };
        if word
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return (lock, false);
        }
        Self::wait(word);
        (lock, true)
    }

    #[cold]
    #[inline(never)]
    fn wait(word: &AtomicU32) {
        for _ in 0..LOCK_SPINS {
            spin_hint();
            if word.load(Ordering::Relaxed) == 0
                && word
                    .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
        }
        // Held: mark it as waited for, and sleep until the holder's release wakes us.
        while word.swap(2, Ordering::Acquire) != 0 {
            park(word as *const AtomicU32 as usize, || {
                word.load(Ordering::Relaxed) == 2
            });
        }
    }
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        if self.word.swap(0, Ordering::Release) == 2 {
            unpark_all(self.word as *const AtomicU32 as usize);
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;
    use crate::node::Scratch;
    use std::sync::atomic::AtomicU64 as StdU64;

    /// A leaf of `keys` in a scratch page.
    fn leaf_of(page: &mut Scratch, keys: &[Vec<u8>]) {
        let pool = crate::page::PagePool::new(4096, 4 * 4096, false);
        let dir = crate::page::Directory::of(&pool);
        let mut node = page.node_mut();
        node.init(0, None, None, &[]);
        for k in keys {
            let (pos, found) = node.lower_bound(k, &dir).unwrap();
            assert!(!found);
            assert!(node.insert_entry(pos, k, b"v"), "room for {k:?}");
        }
    }

    /// Every key of a leaf passes its filter (no false negatives), and most absent keys
    /// are rejected.
    #[test]
    fn marked_keys_are_never_rejected() {
        let e = ENTRIES - 1;
        let mut page = Scratch::new(4096);
        let keys: Vec<Vec<u8>> = (0..150u64)
            .map(|i| (i * 7919 + 13).to_be_bytes().to_vec())
            .collect();
        leaf_of(&mut page, &keys);
        build(e, page.node_mut().node());
        assert!(keys.iter().all(|k| !absent(e, key_hash(k))));
        let rejected = (0..10_000u64)
            .map(|i| (i * 7919 + 14).to_be_bytes())
            .filter(|k| absent(e, key_hash(k)))
            .count();
        // 150 keys in 512 bits: about 75% of absent keys are rejected.
        assert!(rejected > 6_500, "{rejected} of 10,000 rejected");
        // Keys of other lengths and prefixes hash apart.
        assert_ne!(key_hash(b"abc"), key_hash(b"abc\0"));
        assert_ne!(key_hash(b""), key_hash(b"\0"));
    }

    /// A lock word serialises its holders: increments by a load and a store, under the
    /// lock, lose nothing; holders of other words never wait for each other.
    #[test]
    fn key_locks_serialise_their_holders() {
        let e = ENTRIES - 2;
        let shared = StdU64::new(0);
        let waited = StdU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let (lock, w) = KeyLock::lock(e, 7);
                        let v = shared.load(Ordering::Relaxed);
                        if v.is_multiple_of(64) {
                            std::thread::yield_now();
                        }
                        shared.store(v + 1, Ordering::Relaxed);
                        drop(lock);
                        waited.fetch_add(w as u64, Ordering::Relaxed);
                    }
                });
            }
        });
        assert_eq!(shared.load(Ordering::Relaxed), 80_000);
        assert!(waited.load(Ordering::Relaxed) > 0);
        let (_a, _) = KeyLock::lock(e, 1);
        let (_b, waited) = KeyLock::lock(e, 2);
        assert!(!waited);
    }
}
