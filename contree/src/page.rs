//! The page allocator: fixed-size pages named by 32-bit page ids, one translation from id
//! to address, reuse of freed pages, and the memory budget.
//!
//! Pages live in segments that are never returned to the system while the tree lives:
//! segment `k` holds `FIRST_SEGMENT_PAGES << k` pages, so the id space grows geometrically
//! and an id is translated with one leading-zero count. Because memory is never unmapped,
//! an optimistic reader that follows a stale or garbage id either finds an unallocated
//! segment (and restarts) or reads mapped page memory whose latch version tells it the read
//! was invalid. The latch word at the start of each page is never reset, so a page's version
//! only grows across free and reuse.
//!
//! Allocation and free take a mutex: they happen once per split or merge, not per
//! operation.

use crate::latch::Restart;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A page id. Id 0 is a valid page.
pub(crate) type PageId = u32;

const FIRST_SEGMENT_SHIFT: u32 = 4;
const FIRST_SEGMENT_PAGES: u64 = 1 << FIRST_SEGMENT_SHIFT;
const SEGMENTS: usize = 28;
/// Alignment of every page.
const PAGE_ALIGN: usize = 4096;

struct FreeList {
    free: Vec<PageId>,
    next_fresh: u64,
}

pub(crate) struct PageAllocator {
    page_size: usize,
    max_pages: usize,
    segments: [AtomicPtr<u8>; SEGMENTS],
    in_use: AtomicUsize,
    state: Mutex<FreeList>,
}

/// Returned when the budget does not allow another page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exhausted;

#[inline]
fn locate(pid: PageId) -> (usize, u64) {
    let t = pid as u64 + FIRST_SEGMENT_PAGES;
    let k = 63 - t.leading_zeros() - FIRST_SEGMENT_SHIFT;
    (k as usize, t - (FIRST_SEGMENT_PAGES << k))
}

impl PageAllocator {
    pub(crate) fn new(page_size: usize, max_memory: usize) -> Self {
        PageAllocator {
            page_size,
            max_pages: max_memory / page_size,
            segments: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            in_use: AtomicUsize::new(0),
            state: Mutex::new(FreeList {
                free: Vec::new(),
                next_fresh: 0,
            }),
        }
    }

    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    fn segment_layout(&self, k: usize) -> Layout {
        Layout::from_size_align((FIRST_SEGMENT_PAGES << k) as usize * self.page_size, PAGE_ALIGN)
            .expect("segment layout")
    }

    /// The address of page `pid`. Fails with `Restart` for an id that was never allocated,
    /// which only an optimistic reader holding a garbage id can present.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<*mut u8, Restart> {
        let (k, off) = locate(pid);
        let base = match self.segments.get(k) {
            Some(seg) => seg.load(Ordering::Acquire),
            None => return Err(Restart),
        };
        if base.is_null() {
            return Err(Restart);
        }
        // SAFETY: segment `k` holds `FIRST_SEGMENT_PAGES << k` pages and `off` is below that
        // by construction of `locate`, so the offset stays inside the segment's allocation.
        Ok(unsafe { base.add(off as usize * self.page_size) })
    }

    /// Page bytes currently held by the tree.
    pub(crate) fn bytes_in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed) * self.page_size
    }

    /// The budget in bytes.
    pub(crate) fn max_memory(&self) -> usize {
        self.max_pages.saturating_mul(self.page_size)
    }

    /// Takes `n` pages at once, or none if the budget does not allow all of them.
    pub(crate) fn allocate(&self, n: usize) -> Result<Vec<PageId>, Exhausted> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if self.in_use.load(Ordering::Relaxed) + n > self.max_pages {
            return Err(Exhausted);
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            if let Some(pid) = st.free.pop() {
                out.push(pid);
                continue;
            }
            let pid = st.next_fresh;
            let (k, off) = locate(pid as PageId);
            if pid > u32::MAX as u64 || k >= SEGMENTS {
                st.free.extend(out.drain(..));
                return Err(Exhausted);
            }
            if off == 0 && self.segments[k].load(Ordering::Relaxed).is_null() {
                let layout = self.segment_layout(k);
                // SAFETY: the layout has a non-zero size (page_size >= 4096).
                let mem = unsafe { alloc_zeroed(layout) };
                if mem.is_null() {
                    st.free.extend(out.drain(..));
                    return Err(Exhausted);
                }
                self.segments[k].store(mem, Ordering::Release);
            }
            st.next_fresh += 1;
            out.push(pid as PageId);
        }
        self.in_use.fetch_add(n, Ordering::Relaxed);
        Ok(out)
    }

    /// Returns a page for reuse. The caller holds its exclusive latch and releases it after
    /// this call, which bumps the version past every reader's snapshot.
    pub(crate) fn free(&self, pid: PageId) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.free.push(pid);
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for PageAllocator {
    fn drop(&mut self) {
        for k in 0..SEGMENTS {
            let p = *self.segments[k].get_mut();
            if !p.is_null() {
                // SAFETY: `p` was allocated with exactly this layout in `allocate` and is
                // freed once, here, when no reference to the tree remains.
                unsafe { dealloc(p, self.segment_layout(k)) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_translate_into_distinct_pages() {
        let a = PageAllocator::new(4096, usize::MAX);
        let ids = a.allocate(100).unwrap();
        let mut addrs: Vec<usize> = ids.iter().map(|&p| a.page(p).unwrap() as usize).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 100);
        assert!(a.page(100_000).is_err());
    }

    #[test]
    fn budget_refuses_and_free_reuses() {
        let a = PageAllocator::new(4096, 4096 * 4);
        let ids = a.allocate(4).unwrap();
        assert!(a.allocate(1).is_err());
        a.free(ids[2]);
        assert_eq!(a.allocate(1).unwrap(), vec![ids[2]]);
        assert_eq!(a.bytes_in_use(), 4 * 4096);
    }
}
