//! Fresh pages faulted in ahead of use ([`Config::prefault`](crate::Config::prefault)).
//!
//! **Why.** A fresh page costs its writer a page fault at first touch: on the shared 2-core
//! VM about 2.4-3 us per page, against about 1.8-2.4 us per page for `MADV_POPULATE_WRITE`
//! over a whole segment (`bench/results/prefault-s54.txt`). Every split of a growing tree
//! takes a fresh page, so a load of long keys (one split per 25 inserts) spent 13% of its
//! time in page faults, all of it inside splits, under the leaf's latch.
//!
//! **How.** When a writer takes the first page of a full segment, the pool flags that it
//! wants the rest of it ([`PagePool::note_fresh`], under the pool's mutex: one store per 32
//! pages). The space manager's thread, which looks often while pools grow
//! (`space::manager`: writers never wake it, a wake-up costs the waker 22 us here), faults
//! in the pages of that segment that writers have not taken yet
//! ([`PagePool::prefault_ahead`]). Writers then take pages that are already there; those
//! they reach before the manager fault as before.
//!
//! **Memory.** Nothing opens ahead: the segment was opened by the writer that took its first
//! page and is counted in [`mapped_bytes`](crate::mapped_bytes) already, so a tree holds
//! what it held without (tested in `tests/prefault.rs`; opening the next segment ahead
//! raised `compare`'s bytes per entry from 22.4 to 23.3). Small segments (a pool's first
//! 124 KiB) are never asked for.
//!
//! **Off by default** (since session 64). On the Intel VM of that session, 8 threads
//! appending on 2 CPUs ran 15-33% slower with it (3 * 10^6 appends: 8.3 against 10.6 Mops/s,
//! medians of five alternating runs) while one writer's appends and loads moved under 1-3%.
//! The writers' own kernel time was the same with and without; what grew was their user
//! time, spinning on the rightmost leaf's latch: the manager's populate calls (about 40-70 us
//! per segment, each woken look about a millisecond apart) take a CPU that a latch holder
//! needed. A look that does not populate cost nothing measurable, and neither waiting less
//! for the pool's mutex nor populating one page per call removed the loss
//! (`bench/results/prefault-busy-s64.txt`).
//!
//! **Where not.** Where segments do not come from `mmap` (outside Linux, under Miri), under
//! NUMA placement (a segment belongs to the node of the thread that opens it), and without
//! the space manager (no thread to do it).

use super::{memory, PagePool, SEGMENT_PAGES, SEGMENT_SHIFT, SMALL_SEGMENTS};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether some pool of the process flagged a segment since the space manager last looked:
/// the manager walks its trees for [`PagePool::prefault_ahead`] only then, so that a
/// process with many trees pays nothing per look while none grows.
static ANY_WANTED: AtomicBool = AtomicBool::new(false);

/// Takes the process-wide flag of [`ANY_WANTED`]: whether any pool asked since the last
/// call.
pub(crate) fn take_any_wanted() -> bool {
    ANY_WANTED.load(Ordering::Relaxed) && ANY_WANTED.swap(false, Ordering::AcqRel)
}

/// Pages faulted in per system call: a call holds the process's memory-map lock for
/// reading, and a writer's `mmap` or `brk` waits for it (a segment in one call took
/// 60-100 us on the shared VM).
const CHUNK: usize = 4;

impl PagePool {
    /// Whether this pool faults fresh pages in ahead: `wanted` (`Config::prefault` with the
    /// space manager on), where segments come from `mmap` and without placement.
    pub(super) fn plan_prefault(wanted: bool, placed: bool) -> bool {
        wanted && !placed && Self::maps_here()
    }

    /// Called under the mutex when fresh page `pid` was taken: the first page of a full
    /// segment flags the rest of it as wanted.
    #[inline]
    pub(super) fn note_fresh(&self, pid: usize) {
        if self.prefault
            && pid.is_multiple_of(SEGMENT_PAGES)
            && pid >> SEGMENT_SHIFT >= SMALL_SEGMENTS
        {
            self.prefault_wanted.store(true, Ordering::Relaxed);
            ANY_WANTED.store(true, Ordering::Release);
        }
    }

    /// The space manager's part: if a writer asked for it, faults in the pages of the
    /// segment that fresh pages come from now that no writer has taken yet. `None` if
    /// nothing was asked; else the pages of that segment that writers had taken already
    /// (how late the manager came: it looks more often when late).
    pub(crate) fn prefault_ahead(&self) -> Option<usize> {
        if !self.prefault || !self.prefault_wanted.swap(false, Ordering::Relaxed) {
            return None;
        }
        let (next, end) = self.lock().fresh_range(0)?;
        let seg = next >> SEGMENT_SHIFT;
        let first = seg << SEGMENT_SHIFT;
        if seg < SMALL_SEGMENTS {
            return None;
        }
        // Opened by the writer that took its first page; its memory stays mapped until the
        // pool is dropped.
        let base = self.segment_base(seg)?;
        let mut done = next;
        while done < end {
            let n = CHUNK.min(end - done);
            // SAFETY: pages `done..done + n` lie in segment `seg` of this pool (between
            // `fresh_range`'s bounds), whose memory at `base` is anonymous memory from
            // `memory::map` or `memory::reserve` (segments come from `mmap`:
            // `plan_prefault`), mapped until the pool is dropped, and the caller holds the
            // pool. Writers may take and write those pages meanwhile: populating keeps every
            // page's contents.
            let populated = unsafe {
                let at = base.add((done - first) * self.page_size);
                memory::populate(at, n * self.page_size)
            };
            if !populated {
                break;
            }
            done += n;
        }
        let done = done - next;
        self.prefaulted.fetch_add(done as u64, Ordering::Relaxed);
        Some(next - first)
    }

    /// Pages faulted in ahead of use (`Stats::pages_prefaulted`).
    pub(crate) fn prefaulted(&self) -> u64 {
        self.prefaulted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Directory, Huge, PageId, PagePool, SEGMENT_PAGES, SEGMENT_SHIFT};
    use std::sync::Arc;

    fn pool(prefault: bool) -> Arc<PagePool> {
        PagePool::placed(4096, usize::MAX, true, Huge::Off, prefault, None)
    }

    /// Page `pid`'s bytes past its latch word are all zero.
    fn zeroed(pool: &Arc<PagePool>, pid: PageId) -> bool {
        let ptr = Directory::of(pool).page(pid).unwrap();
        // SAFETY: `ptr` addresses a whole page of a segment that stays mapped while the pool
        // lives; nothing else uses the pool.
        let page = unsafe { std::slice::from_raw_parts(ptr.cast_const(), 4096) };
        page[8..].iter().all(|&b| b == 0)
    }

    #[test]
    fn the_rest_of_a_segment_a_writer_started_is_faulted_in_and_nothing_else() {
        let p = pool(true);
        // The small segments (31 pages) ask for nothing.
        let small = p.allocate(31).unwrap();
        assert_eq!(p.prefault_ahead(), None);
        // The first pages of the first full segment (5): the rest of it is wanted once.
        let first = p.allocate(3).unwrap();
        assert_eq!(first[0], 5 << SEGMENT_SHIFT);
        if !PagePool::maps_here() {
            assert_eq!(p.prefault_ahead(), None);
            return;
        }
        assert_eq!(p.prefault_ahead(), Some(3));
        assert_eq!(p.prefault_ahead(), None);
        let faulted = p.prefaulted();
        // The kernel may refuse (before Linux 5.14): then nothing else differs.
        assert!(
            faulted == 0 || faulted == (SEGMENT_PAGES - 3) as u64,
            "{faulted}"
        );
        // No segment is opened ahead: the next one has no memory yet.
        assert!(!p.is_mapped(6 << SEGMENT_SHIFT));
        // The pages handed out afterwards are fresh: zero, with renewed latches.
        let rest = p.allocate(SEGMENT_PAGES - 3).unwrap();
        assert!(rest
            .iter()
            .all(|&pid| pid >> SEGMENT_SHIFT == 5 && zeroed(&p, pid)));
        assert!(rest.iter().all(|&pid| p.latch(pid).version() > 0));
        // The next segment's first page asks again, with one page of it taken.
        let next = p.allocate(1).unwrap();
        assert_eq!(next[0], 6 << SEGMENT_SHIFT);
        assert_eq!(p.prefault_ahead(), Some(1));
        assert!(p.prefaulted() == 0 || p.prefaulted() == 2 * SEGMENT_PAGES as u64 - 4);
        // Freed and taken again, pages behave as without.
        p.free_many(&small);
        assert_eq!(p.allocate(31).unwrap().len(), 31);
    }

    #[test]
    fn off_without_the_switch_and_under_placement() {
        let p = pool(false);
        p.allocate(40).unwrap();
        assert_eq!(p.prefault_ahead(), None);
        assert_eq!(p.prefaulted(), 0);
        assert!(!PagePool::plan_prefault(true, true));
        assert!(!PagePool::plan_prefault(false, false));
    }
}
