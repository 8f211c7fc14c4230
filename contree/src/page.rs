//! The page allocator: fixed-size pages named by 32-bit page ids, one translation from id
//! to address, reuse of freed pages, and the memory budget.
//!
//! Pages live in segments of `SEGMENT_PAGES` pages that are never returned to the system
//! while the tree lives. A two-level directory maps an id to its segment: a fixed array of
//! chunk pointers, each chunk an array of segment pointers allocated when first needed. So a
//! tree never holds more than one partly used segment (at most 31 unused pages), and an id
//! is translated with two cached loads. Because memory is never unmapped, an optimistic
//! reader that follows a stale or garbage id either finds no segment (and restarts) or reads
//! mapped page memory whose latch version tells it the read was invalid. The latch word at
//! the start of each page is never reset, so a page's version only grows across free and
//! reuse.
//!
//! Allocation and free take a mutex: they happen once per split or merge, not per
//! operation.

use crate::latch::Restart;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A page id. Id 0 is a valid page.
pub(crate) type PageId = u32;

const SEGMENT_SHIFT: u32 = 5;
const SEGMENT_PAGES: usize = 1 << SEGMENT_SHIFT;
const CHUNK_SHIFT: u32 = 12;
const CHUNK_SEGMENTS: usize = 1 << CHUNK_SHIFT;
const CHUNKS: usize = 512;
/// The most pages one tree can hold (64 Mi pages: 256 GiB of 4 KiB pages).
const MAX_PAGES: usize = CHUNKS * CHUNK_SEGMENTS * SEGMENT_PAGES;
/// Alignment of every page.
const PAGE_ALIGN: usize = 4096;

type Chunk = AtomicPtr<u8>;

struct FreeList {
    free: Vec<PageId>,
    next_fresh: usize,
}

pub(crate) struct PageAllocator {
    page_size: usize,
    max_pages: usize,
    chunks: Box<[AtomicPtr<Chunk>]>,
    in_use: AtomicUsize,
    state: Mutex<FreeList>,
}

/// Returned when the budget does not allow another page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exhausted;

fn chunk_layout() -> Layout {
    Layout::array::<Chunk>(CHUNK_SEGMENTS).expect("chunk layout")
}

impl PageAllocator {
    pub(crate) fn new(page_size: usize, max_memory: usize) -> Self {
        PageAllocator {
            page_size,
            max_pages: (max_memory / page_size).min(MAX_PAGES),
            chunks: (0..CHUNKS)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
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

    fn segment_layout(&self) -> Layout {
        Layout::from_size_align(SEGMENT_PAGES * self.page_size, PAGE_ALIGN).expect("segment layout")
    }

    /// The address of page `pid`. Fails with `Restart` for an id that was never allocated,
    /// which only an optimistic reader holding a garbage id can present.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<*mut u8, Restart> {
        let seg = pid as usize >> SEGMENT_SHIFT;
        let chunk = match self.chunks.get(seg >> CHUNK_SHIFT) {
            Some(c) => c.load(Ordering::Acquire),
            None => return Err(Restart),
        };
        if chunk.is_null() {
            return Err(Restart);
        }
        // SAFETY: a non-null chunk is an array of `CHUNK_SEGMENTS` atomics and the index is
        // masked below that.
        let base = unsafe { (*chunk.add(seg & (CHUNK_SEGMENTS - 1))).load(Ordering::Acquire) };
        if base.is_null() {
            return Err(Restart);
        }
        // SAFETY: a segment holds `SEGMENT_PAGES` pages and the index is masked below that.
        Ok(unsafe { base.add((pid as usize & (SEGMENT_PAGES - 1)) * self.page_size) })
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
            if pid % SEGMENT_PAGES == 0 && self.map_segment(pid).is_err() {
                st.free.append(&mut out);
                return Err(Exhausted);
            }
            st.next_fresh += 1;
            out.push(pid as PageId);
        }
        self.in_use.fetch_add(n, Ordering::Relaxed);
        Ok(out)
    }

    /// Allocates the segment that starts at page `first` (and its chunk if needed).
    fn map_segment(&self, first: usize) -> Result<(), Exhausted> {
        let seg = first >> SEGMENT_SHIFT;
        let slot = self.chunks.get(seg >> CHUNK_SHIFT).ok_or(Exhausted)?;
        let mut chunk = slot.load(Ordering::Relaxed);
        if chunk.is_null() {
            // SAFETY: the layout has a non-zero size; zeroed memory is a valid array of
            // null `AtomicPtr`s.
            chunk = unsafe { alloc_zeroed(chunk_layout()) } as *mut Chunk;
            if chunk.is_null() {
                return Err(Exhausted);
            }
            slot.store(chunk, Ordering::Release);
        }
        // SAFETY: the layout has a non-zero size (page_size >= 4096).
        let mem = unsafe { alloc_zeroed(self.segment_layout()) };
        if mem.is_null() {
            return Err(Exhausted);
        }
        // SAFETY: `chunk` is a live array of `CHUNK_SEGMENTS` atomics; the index is masked.
        unsafe { (*chunk.add(seg & (CHUNK_SEGMENTS - 1))).store(mem, Ordering::Release) };
        Ok(())
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
        let segments = self
            .state
            .get_mut()
            .map_or(0, |st| st.next_fresh)
            .div_ceil(SEGMENT_PAGES);
        for seg in 0..segments {
            let chunk = *self.chunks[seg >> CHUNK_SHIFT].get_mut();
            // SAFETY: every segment below `segments` was mapped, so its chunk exists.
            let mem = unsafe { (*chunk.add(seg & (CHUNK_SEGMENTS - 1))).load(Ordering::Relaxed) };
            // SAFETY: `mem` was allocated with this layout in `map_segment` and is freed
            // once, here, when no reference to the tree remains.
            unsafe { dealloc(mem, self.segment_layout()) };
        }
        for c in self.chunks.iter_mut() {
            let chunk = *c.get_mut();
            if !chunk.is_null() {
                // SAFETY: allocated with `chunk_layout` in `map_segment`, freed once here.
                unsafe { dealloc(chunk as *mut u8, chunk_layout()) };
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
