//! The flat directory: one table of segment entries indexed by segment number, beside the
//! chunk table, so that translating a page id costs one load that depends on the id instead
//! of two (the chunk pointer, then the entry) and a bit scan. Descents translate an id at
//! every level below the root; the chunk table's chain was about a tenth of a cached point
//! read (`docs/design.md`, "The flat directory").
//!
//! **Growth.** The table holds `2^k` entries and doubles when a segment past its end is
//! published: the pool's writer (under its free-list mutex) copies the entries into a table
//! twice as large and publishes it with a release store. The old table is kept until the
//! pool is dropped, so a reader that loaded it reads valid memory, and the tables together
//! hold at most twice the entries of the last one: 16 bytes per segment of 32 pages. A new
//! pool starts with a table of 8 entries (64 bytes), so an empty tree stays small.
//!
//! **Readers** load the table's word (its address with `k` in the low bits) and then the
//! entry. The table is a cache of the chunk table, never an authority: an entry it lacks (a
//! segment past the end of the table the reader loaded, or one whose publication it has not
//! seen) is null, and the reader falls back to the chunk table. An entry, once published,
//! never changes while the pool lives, so a non-null entry is the segment's.

use crate::sync::seam::Mutex;
use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};

/// Tables are aligned to this, so that the low bits of their address hold `k`.
const ALIGN: usize = 64;
const K_MASK: usize = ALIGN - 1;
/// Entries of a new pool's table.
const FIRST_K: usize = 3;

/// A flat table of segment entries (see the module doc).
pub(crate) struct Flat {
    /// The current table's address, with `k` (the table holds `2^k` entries) in the low bits.
    word: AtomicPtr<u8>,
    /// Tables replaced by larger ones, as words; freed with the pool.
    retired: Mutex<Vec<Word>>,
}

// SAFETY: the retired words are addresses of tables the `Flat` owns (only its drop frees
// them, and nothing reads them through the `Vec`); the rest is atomics.
unsafe impl Send for Flat {}
// SAFETY: as above; shared access goes through the atomics and the mutex.
unsafe impl Sync for Flat {}

fn layout(k: usize) -> Layout {
    Layout::from_size_align(std::mem::size_of::<AtomicPtr<u8>>() << k, ALIGN)
        .expect("flat directory layout")
}

/// A table's address with `k` in its low bits.
type Word = *mut u8;

/// A zeroed table of `2^k` entries as a word, or `None` if the allocator refuses.
fn new_table(k: usize) -> Option<Word> {
    // SAFETY: the layout has a non-zero size (at least one pointer).
    let mem = unsafe { alloc_zeroed(layout(k)) };
    // All-zero bytes are null pointers: the table is valid as it is.
    (!mem.is_null()).then(|| mem.map_addr(|a| a | k))
}

/// The entries of the table of `word` and their number's log.
#[inline(always)]
fn parts(word: Word) -> (*const AtomicPtr<u8>, usize) {
    (
        word.map_addr(|a| a & !K_MASK) as *const AtomicPtr<u8>,
        word.addr() & K_MASK,
    )
}

impl Flat {
    pub(crate) fn new() -> Flat {
        let word = new_table(FIRST_K).unwrap_or_else(|| handle_alloc_error(layout(FIRST_K)));
        Flat {
            word: AtomicPtr::new(word),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// The word readers load (see [`lookup`]); valid while `self` lives.
    pub(crate) fn word(&self) -> NonNull<AtomicPtr<u8>> {
        NonNull::from(&self.word)
    }

    /// Publishes `entry` as the entry of segment `seg`, growing the table first if it is too
    /// small; if the allocator refuses a larger table the segment stays out of it (readers
    /// take the chunk table). Called by the directory's only writer (the pool's free-list
    /// mutex, or a replica's refresher), after `entry` is published in the chunk table.
    pub(crate) fn publish(&self, seg: usize, entry: *mut u8) {
        let word = self.word.load(Ordering::Relaxed);
        let (mut table, mut k) = parts(word);
        if seg >> k != 0 {
            let new_k = (usize::BITS - seg.leading_zeros()) as usize;
            let Some(new) = new_table(new_k) else {
                return;
            };
            let (new_table, _) = parts(new);
            for i in 0..1usize << k {
                // SAFETY: both tables hold at least `2^k` entries; the new one is not
                // published yet, and the old one lives until the pool is dropped.
                unsafe {
                    let e = (*table.add(i)).load(Ordering::Relaxed);
                    (*new_table.add(i)).store(e, Ordering::Relaxed);
                }
            }
            // Readers that load the new word see the copied entries (release/acquire).
            self.word.store(new, Ordering::Release);
            self.retired
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(word);
            (table, k) = (new_table, new_k);
        }
        debug_assert!(seg >> k == 0);
        // SAFETY: `seg < 2^k`, the table's entries; it lives as long as `self`.
        unsafe { (*table.add(seg)).store(entry, Ordering::Release) };
    }
}

/// The entry of segment `seg` in the table of `flat` (a [`Flat::word`]), or null if that
/// table lacks it: the caller then asks the chunk table.
///
/// # Safety
/// `flat` is the word of a [`Flat`] that is alive.
#[inline(always)]
pub(crate) unsafe fn lookup(flat: NonNull<AtomicPtr<u8>>, seg: usize) -> *mut u8 {
    // SAFETY: the caller's contract.
    let (table, k) = parts(unsafe { flat.as_ref() }.load(Ordering::Acquire));
    if seg >> k != 0 {
        return std::ptr::null_mut();
    }
    // SAFETY: `seg < 2^k`, the entries of the table the word names, which lives as long as
    // the `Flat` (replaced tables are retired, not freed).
    unsafe { (*table.add(seg)).load(Ordering::Acquire) }
}

impl Drop for Flat {
    fn drop(&mut self) {
        let current = *self.word.get_mut();
        let retired = self.retired.get_mut().unwrap_or_else(|e| e.into_inner());
        for word in std::mem::take(retired).into_iter().chain([current]) {
            let (table, k) = parts(word);
            // SAFETY: every table was allocated by `new_table` with this layout, and each
            // word is freed once, here, when nothing reads the tables any more.
            unsafe { dealloc(table as *mut u8, layout(k)) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(flat: &Flat, seg: usize) -> *mut u8 {
        // SAFETY: `flat` is alive.
        unsafe { lookup(flat.word(), seg) }
    }

    /// Entries published in any order read back; the table grows past its first eight
    /// entries and keeps the ones it had; segments never published read null.
    #[test]
    fn entries_survive_growth_and_absent_ones_read_null() {
        let flat = Flat::new();
        let mut backing = [0u64; 300];
        let base = backing.as_mut_ptr();
        let entry = |s: usize| base.wrapping_add(s) as *mut u8;
        assert!(get(&flat, 0).is_null());
        assert!(get(&flat, 1 << 20).is_null());
        for s in [3usize, 0, 7, 8, 40, 9, 299, 100] {
            flat.publish(s, entry(s));
        }
        for s in 0..400usize {
            let want = if [3, 0, 7, 8, 40, 9, 299, 100].contains(&s) {
                entry(s)
            } else {
                std::ptr::null_mut()
            };
            assert_eq!(get(&flat, s), want, "segment {s}");
        }
        // 8 -> 16 (segment 8) -> 64 (40) -> 512 (299): three tables retired.
        assert_eq!(flat.retired.lock().unwrap().len(), 3);
        assert_eq!(flat.word.load(Ordering::Relaxed).addr() & K_MASK, 9);
    }
}
