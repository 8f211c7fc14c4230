//! The page pool: fixed-size pages named by 32-bit page ids, the translation from id to
//! address, reuse of freed pages, and the memory budget. One pool can serve several trees
//! (the sub-trees of a multi-rooted tree): a page moves between them by changing the
//! pointer to it, never by copying.
//!
//! **Memory.** Pages live in segments of `SEGMENT_PAGES` pages that are never returned to
//! the system while the pool lives. A flat directory holds one pointer per segment; it is
//! sized from the budget (`max_memory`) and allocated zeroed, so the operating system
//! commits only the parts that are used. A tree caches the directory's address next to its
//! root ([`Directory`]), so translating an id costs two dependent loads: the directory
//! address and the segment pointer.
//!
//! **Optimistic readers.** Because memory is never unmapped while the pool lives, a reader
//! that follows a stale or garbage id either finds no segment (and restarts) or reads mapped
//! page memory whose latch version tells it the read was invalid. The latch word at the
//! start of each page is never reset, so a page's version only grows across free and reuse,
//! whichever tree of the pool uses it next.
//!
//! Allocation and free take a mutex: they happen once per split or merge, not per
//! operation.

use crate::sync::Restart;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A page id. Id 0 is a valid page.
pub(crate) type PageId = u32;

const SEGMENT_SHIFT: u32 = 5;
const SEGMENT_PAGES: usize = 1 << SEGMENT_SHIFT;
/// The most pages one pool can hold (64 Mi pages: 256 GiB of 4 KiB pages).
const MAX_PAGES: usize = 1 << 26;
/// Alignment of every page.
const PAGE_ALIGN: usize = 4096;

struct FreeList {
    free: Vec<PageId>,
    next_fresh: usize,
}

/// A pool of pages shared by the trees that hold an `Arc` of it.
pub(crate) struct PagePool {
    page_size: usize,
    max_pages: usize,
    /// One pointer per segment, null until the segment is mapped.
    directory: Box<[AtomicPtr<u8>]>,
    in_use: AtomicUsize,
    state: Mutex<FreeList>,
}

/// Returned when the budget does not allow another page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exhausted;

/// A zeroed directory of `len` segment pointers; the operating system commits its memory
/// page by page as segments are mapped.
fn zeroed_directory(len: usize) -> Box<[AtomicPtr<u8>]> {
    if len == 0 {
        return Box::new([]);
    }
    let layout = Layout::array::<AtomicPtr<u8>>(len).expect("directory layout");
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc_zeroed(layout) } as *mut AtomicPtr<u8>;
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: the memory was allocated by the global allocator with the layout of a
    // `[AtomicPtr<u8>; len]`, and all-zero bytes are a valid null `AtomicPtr`; the box
    // takes ownership and frees it with the same layout.
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
}

impl PagePool {
    /// A pool of pages of `page_size` bytes that holds at most `max_memory` bytes of pages.
    pub(crate) fn new(page_size: usize, max_memory: usize) -> Arc<PagePool> {
        let max_pages = (max_memory / page_size).min(MAX_PAGES);
        Arc::new(PagePool {
            page_size,
            max_pages,
            directory: zeroed_directory(max_pages.div_ceil(SEGMENT_PAGES)),
            in_use: AtomicUsize::new(0),
            state: Mutex::new(FreeList {
                free: Vec::new(),
                next_fresh: 0,
            }),
        })
    }

    fn segment_layout(&self) -> Layout {
        Layout::from_size_align(SEGMENT_PAGES * self.page_size, PAGE_ALIGN).expect("segment layout")
    }

    /// The address of the directory, for [`Directory`].
    fn directory(self: &Arc<Self>) -> Directory {
        Directory {
            segments: NonNull::from(&self.directory[..]).cast(),
            len: self.directory.len(),
            page_size: self.page_size,
        }
    }

    /// Page bytes currently held by all trees of the pool.
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

    /// Allocates the segment that starts at page `first`.
    fn map_segment(&self, first: usize) -> Result<(), Exhausted> {
        let slot = self
            .directory
            .get(first >> SEGMENT_SHIFT)
            .ok_or(Exhausted)?;
        // SAFETY: the layout has a non-zero size (page_size >= 4096).
        let mem = unsafe { alloc_zeroed(self.segment_layout()) };
        if mem.is_null() {
            return Err(Exhausted);
        }
        slot.store(mem, Ordering::Release);
        Ok(())
    }

    /// Returns a page for reuse by any tree of the pool. The caller holds its exclusive latch
    /// and releases it after this call, which bumps the version past every reader's
    /// snapshot.
    pub(crate) fn free(&self, pid: PageId) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.free.push(pid);
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        let layout = self.segment_layout();
        for slot in self.directory.iter_mut() {
            let mem = *slot.get_mut();
            if !mem.is_null() {
                // SAFETY: `mem` was allocated with this layout in `map_segment` and is freed
                // once, here, when no tree holds the pool any more.
                unsafe { dealloc(mem, layout) };
            }
        }
    }
}

/// A tree's cached copy of its pool's directory address: translation without going through
/// the pool's `Arc`. Valid while the tree holds that `Arc`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Directory {
    segments: NonNull<AtomicPtr<u8>>,
    len: usize,
    page_size: usize,
}

// SAFETY: a `Directory` points at the pool's directory of atomics, which lives as long as
// the pool; every holder keeps an `Arc<PagePool>` beside it (see `TreeCore`), and the atomics
// are safe to share and send. The compiler cannot see that through the raw pointer.
unsafe impl Send for Directory {}
// SAFETY: as above; only atomic loads go through the pointer.
unsafe impl Sync for Directory {}

impl Directory {
    /// The directory of `pool`; the caller keeps `pool` alive while it uses the result.
    pub(crate) fn of(pool: &Arc<PagePool>) -> Directory {
        pool.directory()
    }

    /// The address of page `pid`. Fails with `Restart` for an id that was never allocated,
    /// which only an optimistic reader holding a garbage id can present.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<*mut u8, Restart> {
        let seg = pid as usize >> SEGMENT_SHIFT;
        if seg >= self.len {
            return Err(Restart);
        }
        // SAFETY: `seg < len` and the directory of `len` atomics lives as long as the pool,
        // which the holder keeps alive.
        let base = unsafe { (*self.segments.as_ptr().add(seg)).load(Ordering::Acquire) };
        if base.is_null() {
            return Err(Restart);
        }
        // SAFETY: a segment holds `SEGMENT_PAGES` pages and the index is masked below that.
        Ok(unsafe { base.add((pid as usize & (SEGMENT_PAGES - 1)) * self.page_size) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_translate_into_distinct_pages() {
        let a = PagePool::new(4096, usize::MAX);
        let dir = Directory::of(&a);
        let ids = a.allocate(100).unwrap();
        let mut addrs: Vec<usize> = ids.iter().map(|&p| dir.page(p).unwrap() as usize).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 100);
        assert!(dir.page(100_000).is_err());
    }

    #[test]
    fn budget_refuses_and_free_reuses() {
        let a = PagePool::new(4096, 4096 * 4);
        let ids = a.allocate(4).unwrap();
        assert!(a.allocate(1).is_err());
        a.free(ids[2]);
        assert_eq!(a.allocate(1).unwrap(), vec![ids[2]]);
        assert_eq!(a.bytes_in_use(), 4 * 4096);
        assert!(Directory::of(&a).page(40).is_err());
    }
}
