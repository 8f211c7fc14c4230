//! Segment memory: where each segment of a pool gets its memory (a mapping of its own, its
//! share of a huge-page extent (`extent`), or the allocator), how it is published in the
//! directory, and how it is freed.

use super::extent::Extents;
use super::lists::FreeList;
use super::{
    chunk_layout, locate, memory, segment_entry, segment_layout, Chunk, Exhausted, PagePool,
    MAX_PAGES, PAGE_ALIGN, SEGMENT_SHIFT,
};
use std::alloc::{alloc_zeroed, dealloc};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The space manager collapses at most one huge-page extent per this time
/// (`collapse_pending`): a collapse takes about 345 us (`bench/results/huge-pages.txt`), so
/// collapses take at most about 1% of the time of the threads they stall, and a pool that
/// stops growing has 28 extents (56 MiB) collapsed per second.
const COLLAPSE_EVERY: Duration = Duration::from_millis(35);

impl PagePool {
    /// The extent plan of a pool of pages of `page_size` bytes with `huge_pages` on and
    /// without `placement`: `None` where every segment is mapped on its own (see `extent`).
    pub(super) fn plan_extents(
        page_size: usize,
        huge_pages: bool,
        placed: bool,
    ) -> Option<Extents> {
        (huge_pages && !placed && Self::maps_here()).then(|| Extents::plan(page_size))
    }

    /// Whether the segment that starts at page `first` has memory.
    pub(super) fn is_mapped(&self, first: usize) -> bool {
        self.segment_base(first >> SEGMENT_SHIFT).is_some()
    }

    /// The memory of segment `seg`, if it has some.
    pub(super) fn segment_base(&self, seg: usize) -> Option<*mut u8> {
        let (j, o) = locate(seg);
        let chunk = self.chunks[j].load(Ordering::Acquire);
        if chunk.is_null() {
            return None;
        }
        // SAFETY: a non-null chunk holds `2^j` entries and `o < 2^j` (`locate`); it lives
        // as long as the pool.
        let entry = unsafe { (*chunk.add(o)).load(Ordering::Acquire) };
        (!entry.is_null()).then(|| entry.map_addr(|a| a & !(PAGE_ALIGN - 1)))
    }

    /// Whether segments are bound to their nodes (placement on a real topology).
    fn binds(&self) -> bool {
        self.placement.as_ref().is_some_and(|p| p.bind)
    }

    /// Whether segments come from [`memory::map`] rather than the allocator without
    /// binding: on Linux (outside Miri), where an anonymous mapping is zero without a
    /// write. The allocator's `alloc_zeroed` of a page-aligned segment is `posix_memalign`
    /// and a `memset` of the whole segment: 27 instructions per random insert and 15 per
    /// append at 4 KiB pages (callgrind), and every page written twice (the kernel's zeroing
    /// at the fault, then the `memset`).
    pub(super) fn maps_here() -> bool {
        cfg!(all(target_os = "linux", not(miri)))
    }

    /// Whether segments come from [`memory::map`]: [`maps_here`](Self::maps_here), and
    /// always when they are bound to nodes.
    fn maps(&self) -> bool {
        Self::maps_here() || self.binds()
    }

    /// Whether the pool maps segments outside the free-list mutex: all but those of
    /// huge-page extents, whose address space is reserved once per extent, under the mutex.
    pub(super) fn maps_outside(&self, first: usize) -> bool {
        self.extents
            .is_none_or(|e| e.head(first >> SEGMENT_SHIFT).is_none())
    }

    /// Zeroed memory for segment `seg` (not in an extent) of node `node` (no lock needed),
    /// or `None` if the system refuses.
    pub(super) fn segment_memory(&self, seg: usize, node: usize) -> Option<*mut u8> {
        if self.maps() {
            return memory::map(self.page_size, seg, self.binds().then_some(node));
        }
        // SAFETY: the layout has a non-zero size (page_size >= 512).
        let mem = unsafe { alloc_zeroed(segment_layout(self.page_size, seg)) };
        (!mem.is_null()).then_some(mem)
    }

    /// Frees memory that [`segment_memory`](Self::segment_memory) gave for segment `seg`, or
    /// (when the pool is dropped) the share of an extent that segment `seg` had: the extent
    /// goes with its first segment.
    pub(super) fn free_segment(&self, mem: *mut u8, seg: usize) {
        if let Some((e, head)) = self.extents.and_then(|e| Some((e, e.head(seg)?))) {
            memory::count_mapped(e.segment_bytes(), false);
            if seg == head {
                memory::unreserve(mem, e.bytes());
            }
        } else if self.maps() {
            memory::unmap(mem, self.page_size, seg);
        } else {
            // SAFETY: `mem` was allocated with this segment's layout (`segment_memory`),
            // and the caller frees it once.
            unsafe { dealloc(mem, segment_layout(self.page_size, seg)) };
        }
    }

    /// Publishes `mem` as the memory of segment `seg`, on node `node`, allocating its chunk
    /// for the first segment of a chunk; `Exhausted`, publishing nothing, if the chunk
    /// cannot be had. Called under the free-list mutex: the only writer of the directory.
    fn publish(&self, seg: usize, mem: *mut u8, node: usize) -> Result<(), Exhausted> {
        let (j, o) = locate(seg);
        let mut chunk = self.chunks[j].load(Ordering::Acquire);
        if chunk.is_null() {
            // SAFETY: the layout has a non-zero size (at least one pointer).
            chunk = unsafe { alloc_zeroed(chunk_layout(j)) } as *mut Chunk;
            if chunk.is_null() {
                return Err(Exhausted);
            }
            // All-zero bytes are null pointers: the chunk is valid before it is published.
            self.chunks[j].store(chunk, Ordering::Release);
        }
        let entry = segment_entry(mem, seg, node);
        // SAFETY: the chunk holds `2^j` entries and `o < 2^j` (`locate`); it lives as long
        // as the pool.
        unsafe { (*chunk.add(o)).store(entry, Ordering::Release) };
        self.flat.publish(seg, entry);
        Ok(())
    }

    /// Publishes `mem` (from [`segment_memory`](Self::segment_memory)) as the segment that
    /// starts at page `first`, on node `node`; frees `mem` if the segment has memory already
    /// or the chunk cannot be had. Called under the free-list mutex.
    pub(super) fn install_segment(
        &self,
        first: usize,
        mem: *mut u8,
        node: usize,
    ) -> Result<(), Exhausted> {
        let seg = first >> SEGMENT_SHIFT;
        if self.is_mapped(first) {
            // `mem` was never published.
            self.free_segment(mem, seg);
            return Ok(());
        }
        self.publish(seg, mem, node).inspect_err(|_| {
            self.free_segment(mem, seg);
        })
    }

    /// Gives the segment that starts at page `first` memory on node `node` if it has none
    /// yet. Called under the free-list mutex (`st`), where the opening of the last segment
    /// of an extent records the extent for [`collapse`](Self::collapse).
    pub(super) fn map_segment(
        &self,
        st: &mut FreeList,
        first: usize,
        node: usize,
    ) -> Result<(), Exhausted> {
        if first >= MAX_PAGES {
            return Err(Exhausted);
        }
        if self.is_mapped(first) {
            return Ok(());
        }
        let seg = first >> SEGMENT_SHIFT;
        if let Some((e, head)) = self.extents.and_then(|e| Some((e, e.head(seg)?))) {
            return self.open_in_extent(st, e, seg, head, node);
        }
        let mem = self.segment_memory(seg, node).ok_or(Exhausted)?;
        self.install_segment(first, mem, node)
    }

    /// Opens segment `seg` (without memory yet) in its extent, whose first segment is `head`,
    /// reserving the extent if `head` has no memory yet. Under the free-list mutex.
    fn open_in_extent(
        &self,
        st: &mut FreeList,
        e: Extents,
        seg: usize,
        head: usize,
        node: usize,
    ) -> Result<(), Exhausted> {
        let base = match self.segment_base(head) {
            Some(base) => base,
            None => {
                let base = memory::reserve(e.bytes()).ok_or(Exhausted)?;
                if let Err(full) = self.publish(head, base, node) {
                    memory::unreserve(base, e.bytes());
                    return Err(full);
                }
                memory::count_mapped(e.segment_bytes(), true);
                base
            }
        };
        if seg != head {
            // SAFETY: the segment lies inside the extent (`offset` < the extent's bytes).
            let mem = unsafe { base.add(e.offset(seg)) };
            self.publish(seg, mem, node)?;
            memory::count_mapped(e.segment_bytes(), true);
        }
        // The extent before this one, whose pages have settled since it filled: collapsing
        // the extent whose last pages are being written now fails on busy pages.
        if e.is_last(seg) {
            st.collapse.extend(e.before(head));
        }
        Ok(())
    }

    /// Advises and collapses the full extents that wait for it (`extent::Huge::Background`,
    /// the space manager's rounds), oldest first, at most one per [`COLLAPSE_EVERY`] since
    /// the last collapse: a collapse stalls the threads that fault pages in meanwhile, and a
    /// pool that grows fast would otherwise pay one per 2 MiB of growth.
    pub(crate) fn collapse_pending(&self) {
        let now = Instant::now();
        let heads: Vec<usize> = {
            let mut st = self.lock();
            let allowed = st.collapsed_at.map_or(usize::MAX, |at| {
                let due =
                    now.saturating_duration_since(at).as_micros() / COLLAPSE_EVERY.as_micros();
                usize::try_from(due).unwrap_or(usize::MAX)
            });
            let n = allowed.min(st.collapse.len());
            if n == 0 {
                return;
            }
            st.collapsed_at = Some(now);
            st.collapse.drain(..n).collect()
        };
        if !heads.is_empty() {
            self.collapse(heads, true);
        }
    }

    /// Advises the full extents whose first segments are `heads` for huge pages, collapsing
    /// them `now` ([`memory::advise_huge`]). Called without the mutex: a collapse copies up
    /// to 2 MiB (345 us on average in a loaded process, `bench/results/huge-pages.txt`).
    pub(super) fn collapse(&self, heads: Vec<usize>, now: bool) {
        let Some(e) = self.extents else {
            return;
        };
        for head in heads {
            if let Some(base) = self.segment_base(head) {
                // SAFETY: `base` is the extent's memory (its first segment's), reserved by
                // `open_in_extent` and mapped while the pool lives.
                if unsafe { memory::advise_huge(base, e.bytes(), now) } {
                    self.huge_extents.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Takes the huge-page advice of the extents whose first segments are `heads` back,
    /// after some of their pages went back to the system ([`memory::advise_small`]).
    pub(super) fn advise_small(&self, heads: &[usize]) {
        let Some(e) = self.extents else {
            return;
        };
        for &head in heads {
            if let Some(base) = self.segment_base(head) {
                // SAFETY: as in `collapse`.
                unsafe { memory::advise_small(base, e.bytes()) };
            }
        }
    }
}
