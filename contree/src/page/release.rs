//! Giving the memory of free pages back to the system ([`Config::return_memory`]
//! (crate::Config::return_memory)), without unmapping anything.
//!
//! **How.** On Linux, `madvise(MADV_DONTNEED)` drops the physical pages of a run of free
//! pages; the addresses stay mapped, and the next touch of each page maps a zeroed one. A
//! late optimistic reader holding a stale id therefore never faults: it reads zeroes.
//! Elsewhere, and where the system page does not divide the tree's page, memory is kept.
//!
//! **Versions.** Zeroing also zeroes the page's latch word, which an optimistic reader
//! validates against. The protocol keeps "the version only grows" where it matters:
//! - before giving a page back, its latch is taken exclusively ([`HybridLatch::try_retire`];
//!   a page whose latch a stale-id holder has taken right now is skipped), so no thread
//!   writes the word while it is zeroed, and the version it had is kept in the pool's list
//!   (memory that is never given back);
//! - a page in use never shows version 0 (fresh pages are renewed too), so a snapshot taken
//!   of a page in use never matches a zeroed word;
//! - when the page is handed out again, its version is set past both the kept version and
//!   whatever the word went through meanwhile ([`HybridLatch::renew`]);
//! - threads that parked on the latch while it was taken are woken after the zeroing
//!   ([`HybridLatch::wake_all`]): they find a free word, and whatever they do with it ends
//!   in a failed validation, as for any stale id.
//!
//! **When.** A pool keeps a reserve of free pages for reuse (`reserve`, a sixteenth of the
//! pages in use and at least 16) and gives back the oldest free pages beyond it: at every
//! space-manager round, at [`Tree::compact`](crate::Tree::compact) (no reserve), and, for a
//! tree without the space manager, from a removal once the free pages exceed twice the
//! reserve. Each page given back costs one system call per run of neighbouring pages and, at
//! its reuse, one page fault.
//!
//! **Huge-page extents** (`super::extent`): a periodic release holds the free pages of an
//! extent while they are fewer than a sixteenth of it, since giving one back splits the
//! extent's huge page; see `sort_extents`.

use super::extent::Extents;
use super::memory::discard;
use super::{PageId, PagePool, SEGMENT_SHIFT};
use std::sync::atomic::Ordering;

/// A periodic release gives back the free pages of a huge-page extent that holds at least
/// this share of free pages beyond the reserve (and takes its huge-page advice back), and
/// holds the free pages of the others for reuse: a sixteenth, as the reserve, so that a tree
/// holds at most about twice the free memory it held without extents.
const SPLIT_SHARE: usize = 16;

/// Sorts `batch` (free pages beyond the reserve) and splits off the pages that a release
/// keeps (see [`SPLIT_SHARE`]; `all`: none); returns them and the extents, by first segment,
/// of which only some pages go back.
fn sort_extents(batch: &mut Vec<PageId>, e: &Extents, all: bool) -> (Vec<PageId>, Vec<usize>) {
    batch.sort_unstable();
    let (mut keep, mut split) = (Vec::new(), Vec::new());
    for group in batch.chunk_by(|&a, &b| e.head_of_page(a as usize) == e.head_of_page(b as usize)) {
        let Some(head) = e.head_of_page(group[0] as usize) else {
            continue;
        };
        if group.len() == e.pages() {
            // Wholly free: goes back in one piece, keeping its advice.
        } else if all || group.len() >= e.pages() / SPLIT_SHARE {
            split.push(head);
        } else {
            keep.push(head);
        }
    }
    let held = batch
        .extract_if(.., |&mut p| {
            e.head_of_page(p as usize)
                .is_some_and(|h| keep.binary_search(&h).is_ok())
        })
        .collect();
    (held, split)
}

impl PagePool {
    /// The free pages a pool keeps for reuse: a sixteenth of the pages in use, at least 16.
    fn reserve(&self) -> usize {
        (self.in_use.load(Ordering::Relaxed) / 16).max(16)
    }

    /// Gives back the memory of the oldest free pages beyond the reserve (`all`: beyond
    /// none). Returns the pages given back.
    pub(crate) fn release(&self, all: bool) -> usize {
        if !self.return_memory {
            return 0;
        }
        // Huge-page extents (`extent`) that this release gives back only part of.
        let mut split = Vec::new();
        let batch: Vec<PageId> = {
            let mut st = self.lock();
            // Under placement each node keeps its share of the reserve.
            let keep = if all {
                0
            } else {
                self.reserve().div_ceil(st.nodes.len())
            };
            let mut batch = Vec::new();
            for lists in &mut st.nodes {
                let n = lists.free.len().saturating_sub(keep);
                batch.extend(lists.free.drain(..n));
            }
            if let Some(e) = self.extents {
                // There is one node: extents are off under placement.
                let held;
                (held, split) = sort_extents(&mut batch, &e, all);
                // An extent that goes back to small pages is not collapsed later.
                st.collapse.retain(|h| split.binary_search(h).is_err());
                self.held_in_extents.store(held.len(), Ordering::Relaxed);
                st.nodes[0].free.extend(held);
            }
            if batch.is_empty() {
                return 0;
            }
            self.free_pages.store(st.free_len(), Ordering::Relaxed);
            batch
        };
        let mut kept = Vec::new();
        let mut retired: Vec<(PageId, u64)> = Vec::with_capacity(batch.len());
        for pid in batch {
            match self.latch(pid).try_retire() {
                Some(floor) => retired.push((pid, floor)),
                None => kept.push(pid),
            }
        }
        retired.sort_unstable_by_key(|&(pid, _)| pid);
        let mut returned = Vec::with_capacity(retired.len());
        // Runs of neighbouring pages of one segment, or of one extent (whose segments are
        // neighbours in memory): a wholly free extent goes back in one piece.
        let together = |a: PageId, b: PageId| {
            a >> SEGMENT_SHIFT == b >> SEGMENT_SHIFT
                || self.extents.is_some_and(|e| {
                    e.head_of_page(a as usize)
                        .is_some_and(|h| e.head_of_page(b as usize) == Some(h))
                })
        };
        for run in retired.chunk_by(|a, b| b.0 == a.0 + 1 && together(a.0, b.0)) {
            let start = self.latch(run[0].0) as *const _ as *mut u8;
            // SAFETY: the run is whole free pages of one segment, or of one huge-page extent
            // (whose segments lie next to each other in one reservation), which the pool
            // owns and keeps mapped (private anonymous memory from `memory::map`,
            // `memory::reserve` or the allocator's zeroed pages); `supported` checked they
            // are whole system pages; their latches are retired, and late readers with stale
            // ids read them only optimistically.
            if unsafe { discard(start, run.len() * self.page_size) } {
                for &(pid, floor) in run {
                    self.latch(pid).wake_all();
                    returned.push((pid, floor));
                }
            } else {
                for &(pid, _) in run {
                    self.latch(pid).abandon_retire();
                    kept.push(pid);
                }
            }
        }
        // Keep the kernel from filling the holes again by collapsing these extents.
        self.advise_small(&split);
        let n = returned.len();
        let mut st = self.lock();
        for pid in kept {
            st.nodes[self.home(pid)].free.push(pid);
        }
        for (pid, floor) in returned {
            st.nodes[self.home(pid)].returned.push((pid, floor));
        }
        self.count_lists(&st);
        n
    }

    /// [`release`](Self::release) once the free pages exceed twice the reserve (cheap
    /// otherwise: two loads). For trees without the space manager, after removals.
    #[inline]
    pub(crate) fn release_if_many(&self) {
        let held = self.held_in_extents.load(Ordering::Relaxed);
        if self.return_memory && self.free_pages.load(Ordering::Relaxed) > 2 * self.reserve() + held
        {
            self.release(false);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::super::*;

    #[test]
    fn returned_pages_read_as_zeroes_and_come_back_with_a_higher_version() {
        let pool = PagePool::new(4096, usize::MAX, true);
        let ids = pool.allocate(100).unwrap();
        let versions: Vec<u64> = ids
            .iter()
            .map(|&p| {
                let latch = pool.latch(p);
                drop(latch.exclusive()); // a life: the version grows
                let x = latch.exclusive();
                let page = x_page(&pool, p);
                // SAFETY: the page is latched exclusively; byte 100 is inside it.
                unsafe { page.add(100).write(0xAB) };
                drop(x);
                latch.version()
            })
            .collect();
        assert!(versions.iter().all(|&v| v >= 2));
        for &p in &ids {
            pool.free(p);
        }
        // One page latched by a "stale" holder is skipped and stays resident.
        let busy = pool.latch(ids[7]).exclusive();
        assert_eq!(pool.release(true), 99);
        assert_eq!(pool.bytes_returned(), 99 * 4096);
        assert_eq!(pool.bytes_free(), 4096);
        for &p in &ids {
            // SAFETY: byte 100 of a mapped page; nothing else runs.
            let b = unsafe { x_page(&pool, p).add(100).read_volatile() };
            assert_eq!(b == 0, p != ids[7], "page {p}");
        }
        drop(busy);
        let again = pool.allocate(100).unwrap();
        assert_eq!(pool.bytes_returned(), 0);
        for (&p, &v) in ids.iter().zip(&versions) {
            assert!(again.contains(&p));
            assert!(pool.latch(p).version() > v, "page {p}");
        }
    }

    #[test]
    fn a_snapshot_from_before_never_validates_after() {
        let pool = PagePool::new(4096, usize::MAX, true);
        let ids = pool.allocate(20).unwrap();
        let p = ids[3];
        // A reader's snapshot of the page in use (never of version 0).
        let before = pool.latch(p).optimistic();
        drop(pool.latch(p).exclusive()); // the freeing writer
        let late = pool.latch(p).optimistic(); // a reader that came after the free
        ids.iter().for_each(|&q| pool.free(q));
        assert_eq!(pool.release(true), 20);
        // Zeroed: neither snapshot validates against the zeroed word.
        assert!(before.validate().is_err());
        assert!(late.validate().is_err());
        // A stale reader snapshots the zeroed word; the page is then reused.
        let zeroed = pool.latch(p).optimistic();
        let again = pool.allocate(20).unwrap();
        assert!(again.contains(&p));
        assert!(zeroed.validate().is_err());
        assert!(late.validate().is_err());
        assert!(before.validate().is_err());
    }

    #[test]
    fn a_periodic_release_keeps_the_pages_of_mostly_used_huge_page_extents() {
        let pool = PagePool::new(4096, usize::MAX, true);
        let e = pool.extents.expect("extents on Linux");
        // Past the first 4 MiB, four whole extents.
        let ids = pool
            .allocate(extent::HUGE_AFTER / 4096 + 5 * e.pages())
            .unwrap();
        let of = |k: usize| -> Vec<PageId> {
            let mut heads: Vec<usize> = ids
                .iter()
                .filter_map(|&p| e.head_of_page(p as usize))
                .collect();
            heads.dedup();
            ids.iter()
                .copied()
                .filter(|&p| e.head_of_page(p as usize) == Some(heads[k]))
                .collect()
        };
        let (whole, few, many) = (of(0), of(1), of(2));
        assert_eq!(whole.len(), e.pages());
        let few = &few[..e.pages() / 16 - 1];
        let many = &many[..e.pages() / 16];
        // Freed first, so beyond the reserve; then pages below the extents fill the
        // reserve.
        for &p in whole.iter().chain(few).chain(many) {
            pool.free(p);
        }
        let low: Vec<PageId> = ids
            .iter()
            .copied()
            .filter(|&p| e.head_of_page(p as usize).is_none())
            .take(pool.reserve() + 16)
            .collect();
        low.iter().for_each(|&p| pool.free(p));
        let returned_before = pool.bytes_returned() / 4096;
        let n = pool.release(false);
        assert_eq!(pool.bytes_returned() / 4096, returned_before + n);
        let st = pool.lock();
        let returned: std::collections::HashSet<PageId> =
            st.nodes[0].returned.iter().map(|&(p, _)| p).collect();
        // The wholly free extent and the one with a sixteenth free go back; the one with
        // fewer free pages is held for reuse, and counted so.
        assert!(whole.iter().chain(many).all(|p| returned.contains(p)));
        assert!(few.iter().all(|p| st.nodes[0].free.contains(p)));
        assert_eq!(pool.held_in_extents.load(Ordering::Relaxed), few.len());
        drop(st);
        // `compact` gives back every free page.
        pool.release(true);
        assert_eq!(pool.bytes_free(), 0);
        assert_eq!(pool.held_in_extents.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_fresh_page_never_shows_version_zero() {
        let pool = PagePool::new(4096, usize::MAX, true);
        for p in pool.allocate(40).unwrap() {
            assert!(pool.latch(p).version() > 0);
        }
    }

    #[test]
    fn the_reserve_stays_resident() {
        let pool = PagePool::new(4096, usize::MAX, true);
        let ids = pool.allocate(400).unwrap();
        for &p in &ids[..300] {
            pool.free(p);
        }
        // 100 in use: a reserve of 16.
        assert_eq!(pool.release(false), 300 - 16);
        assert_eq!(pool.bytes_free(), 16 * 4096);
        let off = PagePool::new(4096, usize::MAX, false);
        let ids = off.allocate(40).unwrap();
        ids.iter().for_each(|&p| off.free(p));
        assert_eq!(off.release(true), 0);
    }

    fn x_page(pool: &PagePool, pid: PageId) -> *mut u8 {
        pool.latch(pid) as *const _ as *mut u8
    }
}
