//! The page pool: fixed-size pages named by 32-bit page ids, the translation from id to
//! address, reuse of freed pages, and the memory budget. One pool can serve several trees
//! (the sub-trees of a multi-rooted tree): a page moves between them by changing the
//! pointer to it, never by copying.
//!
//! **Memory.** Pages live in segments of `SEGMENT_PAGES` pages, mapped one at a time as
//! pages are handed out and never unmapped while the pool lives. The first segments are
//! smaller (1, 2, 4, 8 and 16 pages; the ids past their end are never handed out), so an
//! empty tree holds one page, not a whole segment. Past the first 4 MiB, segments are opened
//! inside 2 MiB extents that the kernel can back with huge pages (`extent`, `segments`).
//! Each directory entry carries the segment's page mask in the low bits of its
//! (page-aligned) address: translation masks the page index with it, so any id, even a
//! garbage one, lands inside its segment. The directory has two levels that both grow with the pool: a fixed table of 28 chunk
//! pointers inside the pool, where chunk `j` holds the pointers of the `2^j` segments
//! `2^j - 1 .. 2^(j+1) - 1` (the chunk number is the position of the highest bit of
//! `segment + 1`). A new tree thus maps one segment and a one-entry chunk, and a pool never
//! holds more directory than twice the pointers of its segments. A tree caches the table's
//! address next to its root ([`Directory`]). Readers translate through a flat copy of the
//! entries (`flat`): one load that depends on the id, where the chunk table took a bit scan
//! and two (the chunk pointer, then the entry). The flat table doubles as the pool grows and
//! keeps its old tables until the pool is dropped, so it holds at most twice the entries of
//! the chunk table; a flat directory sized for the largest pool instead would cost 16 MiB of
//! address space per pool, counted by allocators as memory.
//!
//! **Optimistic readers.** Because memory is never unmapped while the pool lives, a reader
//! that follows a stale or garbage id either finds no segment (and restarts) or reads mapped
//! page memory whose latch version tells it the read was invalid. A page's version only
//! grows across free and reuse, whichever tree of the pool uses it next: the latch word at
//! the start of each page is never reset, except when the page's memory goes back to the
//! system, and then `release` keeps the version and renews the word past it on reuse.
//!
//! **Placement.** Under `Numa::placement` on several nodes, each segment belongs to the node
//! of the thread that opened it, bound there (`memory`) on a real topology and labelled in
//! its directory entry either way; a thread takes pages from its own node's lists first
//! (`lists`).
//!
//! Allocation and free take a mutex: they happen once per split or merge, not per
//! operation. A new segment's memory is allocated and zeroed outside it.

mod extent;
pub(crate) mod flat;
mod lists;
pub(crate) mod memory;
pub(crate) mod prefault;
mod release;
mod segments;

pub(crate) use extent::Huge;

use crate::numa::topology::Resolved;
use crate::sync::seam::{AtomicUsize, Mutex, MutexGuard};
use crate::sync::{HybridLatch, Restart};
use lists::FreeList;
use std::alloc::{dealloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

/// A page id. Id 0 is a valid page.
pub(crate) type PageId = u32;

pub(crate) const SEGMENT_SHIFT: u32 = 5;
pub(crate) const SEGMENT_PAGES: usize = 1 << SEGMENT_SHIFT;
/// Segments below this one are smaller: segment `s` holds `2^s` pages.
const SMALL_SEGMENTS: usize = SEGMENT_SHIFT as usize;
/// Chunks of the directory: chunk `j` holds `2^j` segment pointers, so 28 of them cover the
/// segments of every `u32` id.
pub(crate) const CHUNKS: usize = 28;
/// The most pages one pool can hold (64 Mi pages: 256 GiB of 4 KiB pages).
pub(crate) const MAX_PAGES: usize = 1 << 26;
/// Alignment of every page.
pub(crate) const PAGE_ALIGN: usize = 4096;
/// A directory entry keeps its segment's NUMA node (`crate::numa`) in the 6 bits above the
/// page mask, below the page-aligned address.
const NODE_SHIFT: u32 = SEGMENT_SHIFT;
const NODE_MASK: usize = 0x3F;
const _: () = assert!(((NODE_MASK + 1) << NODE_SHIFT) <= PAGE_ALIGN);
const _: () = assert!(NODE_MASK + 1 == crate::numa::MAX_NUMA_NODES);

/// A chunk of the directory: segment pointers, null until the segment is mapped.
pub(crate) type Chunk = AtomicPtr<u8>;

/// The chunk of segment `seg` and the segment's index in it.
#[inline]
pub(crate) fn locate(seg: usize) -> (usize, usize) {
    let i = seg + 1;
    let j = (usize::BITS - 1 - i.leading_zeros()) as usize;
    (j, i - (1 << j))
}

/// Pages of segment `seg`.
#[inline]
pub(crate) fn segment_pages(seg: usize) -> usize {
    if seg < SMALL_SEGMENTS {
        1 << seg
    } else {
        SEGMENT_PAGES
    }
}

pub(crate) fn segment_layout(page_size: usize, seg: usize) -> Layout {
    Layout::from_size_align(segment_pages(seg) * page_size, PAGE_ALIGN).expect("segment layout")
}

pub(crate) fn chunk_layout(j: usize) -> Layout {
    Layout::array::<Chunk>(1 << j).expect("chunk layout")
}

/// Where a pool places pages (`Numa::placement`): the topology that names the allocating
/// thread's node, and whether segments are bound to their nodes (`mbind`, a system topology)
/// or only labelled (a simulated one).
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    pub(crate) topology: Resolved,
    pub(crate) bind: bool,
}

/// A pool of pages shared by the trees that hold an `Arc` of it.
pub(crate) struct PagePool {
    page_size: usize,
    max_pages: usize,
    /// The chunk table (see the module doc); a chunk is null until its first segment is
    /// mapped.
    chunks: [AtomicPtr<Chunk>; CHUNKS],
    /// The chunk table's entries in one flat table, for readers (`flat`).
    flat: flat::Flat,
    in_use: AtomicUsize,
    /// `state.free.len()` and `state.returned.len()`, readable without the mutex.
    free_pages: AtomicUsize,
    returned_pages: AtomicUsize,
    /// Whether free pages' memory goes back to the system (`Config::return_memory`).
    return_memory: bool,
    /// Where pages go, if placed on several nodes.
    placement: Option<Placement>,
    /// Which segments lie in huge-page extents (`extent`); `None`: none.
    extents: Option<extent::Extents>,
    /// Whether allocations advise full extents themselves (`extent::Huge::Advise`).
    advise_inline: bool,
    /// Extents advised for huge pages (`Stats::huge_extents`).
    huge_extents: AtomicU64,
    /// Whether the space manager faults fresh pages in ahead (`prefault`).
    prefault: bool,
    /// A writer started a full segment: the rest of it is to be faulted in (`prefault`).
    prefault_wanted: AtomicBool,
    /// Pages faulted in ahead (`Stats::pages_prefaulted`).
    prefaulted: AtomicU64,
    /// Free pages that the last periodic `release` kept because their huge-page extents
    /// were not wholly free.
    held_in_extents: AtomicUsize,
    /// Under placement, the pages in use on each node.
    pages_on: Box<[AtomicUsize]>,
    /// Under placement, pages handed to a thread of another node than theirs.
    placed_remote: AtomicU64,
    state: Mutex<FreeList>,
}

/// Returned when the budget does not allow another page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exhausted;

/// The most pages past the budget that a thread inside [`with_overdraft`] may take.
pub(crate) const OVERDRAFT_PAGES: usize = 8;

thread_local! {
    /// The pages past the budget this thread may take (inside [`with_overdraft`] and
    /// [`with_overdraft_pages`]).
    static OVERDRAFT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` with this thread allowed to take up to [`OVERDRAFT_PAGES`] pages past the
/// budget: what the undo of a failed batch uses to put back a value it replaced when the
/// leaf it goes into must split and the budget is spent (by the batch's own splits, or by
/// another thread), so that a failed batch changes nothing.
pub(crate) fn with_overdraft<R>(f: impl FnOnce() -> R) -> R {
    with_overdraft_pages(OVERDRAFT_PAGES, f)
}

/// Runs `f` with this thread allowed to take up to `n` more pages past the budget than it
/// already may: a merge of the side structure, which gave back `n` reserved pages first.
pub(crate) fn with_overdraft_pages<R>(n: usize, f: impl FnOnce() -> R) -> R {
    struct Reset(usize);
    impl Drop for Reset {
        fn drop(&mut self) {
            OVERDRAFT.with(|o| o.set(self.0));
        }
    }
    let _reset = Reset(OVERDRAFT.with(|o| {
        let prev = o.get();
        o.set(prev.saturating_add(n));
        prev
    }));
    f()
}

impl PagePool {
    /// A pool of pages of `page_size` bytes that holds at most `max_memory` bytes of pages
    /// and gives free pages' memory back to the system if `return_memory`, with huge-page
    /// extents.
    #[cfg(test)]
    pub(crate) fn new(page_size: usize, max_memory: usize, return_memory: bool) -> Arc<PagePool> {
        Self::placed(
            page_size,
            max_memory,
            return_memory,
            Huge::Advise,
            false,
            None,
        )
    }

    /// [`new`](Self::new), with huge-page extents as `huge` says (`Config::huge_pages`),
    /// fresh pages faulted in ahead if `prefault` (`Config::prefault` with the space
    /// manager on), placing pages on the nodes of `placement` (if it has several).
    pub(crate) fn placed(
        page_size: usize,
        max_memory: usize,
        return_memory: bool,
        huge: Huge,
        prefault: bool,
        placement: Option<Placement>,
    ) -> Arc<PagePool> {
        let max_pages = (max_memory / page_size).min(MAX_PAGES);
        let placement = placement.filter(|p| p.topology.nodes() > 1);
        let nodes = placement.as_ref().map_or(1, |p| p.topology.nodes());
        let counted = if placement.is_some() { nodes } else { 0 };
        Arc::new(PagePool {
            page_size,
            max_pages,
            chunks: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            flat: flat::Flat::new(),
            in_use: AtomicUsize::new(0),
            free_pages: AtomicUsize::new(0),
            returned_pages: AtomicUsize::new(0),
            return_memory: return_memory && memory::supported(page_size),
            extents: Self::plan_extents(page_size, huge != Huge::Off, placement.is_some()),
            advise_inline: huge == Huge::Advise,
            huge_extents: AtomicU64::new(0),
            prefault: Self::plan_prefault(prefault, placement.is_some()),
            prefault_wanted: AtomicBool::new(false),
            prefaulted: AtomicU64::new(0),
            held_in_extents: AtomicUsize::new(0),
            placement,
            pages_on: (0..counted).map(|_| AtomicUsize::new(0)).collect(),
            placed_remote: AtomicU64::new(0),
            state: Mutex::new(FreeList::new(nodes)),
        })
    }

    /// The calling thread's node under placement, else 0.
    #[inline]
    fn here(&self) -> usize {
        self.placement.as_ref().map_or(0, |p| p.topology.node())
    }

    /// The node page `pid` (handed out at least once) lives on; 0 without placement.
    fn home(&self, pid: PageId) -> usize {
        if self.placement.is_none() {
            return 0;
        }
        self.own_directory().node_of(pid).unwrap_or(0)
    }

    /// Under placement, the pages in use on each node (empty without).
    pub(crate) fn pages_per_node(&self) -> Vec<usize> {
        self.pages_on
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Under placement, the pages handed to a thread of another node than theirs.
    pub(crate) fn pages_placed_remote(&self) -> u64 {
        self.placed_remote.load(Ordering::Relaxed)
    }

    /// Stores the list lengths that are read without the mutex.
    fn count_lists(&self, st: &FreeList) {
        self.free_pages.store(st.free_len(), Ordering::Relaxed);
        self.returned_pages
            .store(st.returned_len(), Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, FreeList> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latch word of page `pid`, which must have been handed out at least once.
    fn latch(&self, pid: PageId) -> &HybridLatch {
        let ptr = self
            .own_directory()
            .page(pid)
            .expect("a page of a mapped segment");
        // SAFETY: `ptr` addresses a page of a segment that stays mapped while the pool lives
        // (as long as `&self`); its first 8 bytes, 8-aligned, are the page's latch word,
        // only ever accessed atomically.
        unsafe { &*(ptr as *const HybridLatch) }
    }

    /// Free page bytes whose memory is still held, waiting for reuse.
    pub(crate) fn bytes_free(&self) -> usize {
        self.free_pages.load(Ordering::Relaxed) * self.page_size
    }

    /// Free page bytes whose memory went back to the system.
    pub(crate) fn bytes_returned(&self) -> usize {
        self.returned_pages.load(Ordering::Relaxed) * self.page_size
    }

    /// Huge-page extents advised for huge pages since the pool was made.
    pub(crate) fn huge_extents(&self) -> u64 {
        self.huge_extents.load(Ordering::Relaxed)
    }

    /// The directory, for use while `&self` lives.
    fn own_directory(&self) -> Directory {
        Directory::over(&self.chunks, &self.flat, self.page_size)
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
    ///
    /// Pages whose memory was kept come first, then pages whose memory went back to the
    /// system, then fresh ones; the latch of a page of the last two kinds is renewed (see
    /// [`HybridLatch::renew`]) before it is handed out.
    pub(crate) fn allocate(&self, n: usize) -> Result<Vec<PageId>, Exhausted> {
        let here = self.here();
        let mut st = self.lock();
        loop {
            let in_use = self.in_use.load(Ordering::Relaxed);
            if in_use + n > self.max_pages
                && in_use + n
                    > (self.max_pages.saturating_add(OVERDRAFT.with(|o| o.get()))).min(MAX_PAGES)
            {
                return Err(Exhausted);
            }
            // A fresh page that opens a segment: the segment's memory is allocated and
            // zeroed (128 KiB of 4 KiB pages, tens of microseconds with its page faults)
            // with the mutex released, so that other allocations and frees do not wait for
            // it. Whatever changed meanwhile is looked at again.
            let Some(first) = self.segment_to_map(&mut st, here, n) else {
                break;
            };
            drop(st);
            let mem = self.segment_memory(first >> SEGMENT_SHIFT, here);
            st = self.lock();
            // On failure the mapping is tried again below, under the mutex, which reports it.
            if mem.is_none_or(|mem| self.install_segment(first, mem, here).is_err()) {
                break;
            }
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(pid) = self.take_page(&mut st, here) else {
                for &pid in &out {
                    st.nodes[self.home(pid)].free.push(pid);
                }
                self.count_lists(&st);
                return Err(Exhausted);
            };
            out.push(pid);
        }
        self.count_lists(&st);
        self.in_use.fetch_add(n, Ordering::Relaxed);
        if !self.pages_on.is_empty() {
            for &pid in &out {
                self.pages_on[self.home(pid)].fetch_add(1, Ordering::Relaxed);
            }
        }
        if self.advise_inline && !st.collapse.is_empty() {
            let heads = std::mem::take(&mut st.collapse);
            drop(st);
            self.collapse(heads, false);
        }
        Ok(out)
    }

    /// A page for a thread of node `here`, in the order of `lists`; `None` if none can be
    /// had. Called under the mutex.
    fn take_page(&self, st: &mut FreeList, here: usize) -> Option<PageId> {
        if let Some(pid) = st.nodes[here].free.pop() {
            return Some(pid);
        }
        if let Some(pid) = self.take_returned(&mut st.nodes[here].returned) {
            return Some(pid);
        }
        if let Some(pid) = self.take_fresh(st, here, false) {
            return Some(pid);
        }
        if let Some(donor) = st.donor(here) {
            self.placed_remote.fetch_add(1, Ordering::Relaxed);
            return st.nodes[donor].free.pop();
        }
        if let Some(pid) = self.take_fresh(st, here, true) {
            return Some(pid);
        }
        // No fresh page: any other node's.
        let other = st.most_free(here).and_then(|o| st.nodes[o].free.pop());
        let other = other.or_else(|| {
            (0..st.nodes.len())
                .filter(|&o| o != here)
                .find_map(|o| self.take_returned(&mut st.nodes[o].returned))
        });
        if other.is_some() {
            self.placed_remote.fetch_add(1, Ordering::Relaxed);
        }
        other
    }

    /// Counts `n` pages as in use without handing any out (the side structure's charge
    /// against the budget); `false`, counting nothing, if the budget does not allow them.
    pub(crate) fn reserve_budget(&self, n: usize) -> bool {
        let _st = self.lock();
        let in_use = self.in_use.load(Ordering::Relaxed);
        if in_use + n > self.max_pages {
            return false;
        }
        self.in_use.fetch_add(n, Ordering::Relaxed);
        true
    }

    /// Gives back `n` pages counted by [`reserve_budget`](Self::reserve_budget).
    pub(crate) fn unreserve_budget(&self, n: usize) {
        if n > 0 {
            let _st = self.lock();
            self.in_use.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// A fresh page for node `here`: of its current segment if that has one left and memory
    /// already, or also (if `open`) of a new segment it takes and maps. Called under the
    /// mutex.
    fn take_fresh(&self, st: &mut FreeList, here: usize, open: bool) -> Option<PageId> {
        loop {
            let pid = if open {
                st.fresh_page(here)?
            } else {
                st.current_fresh(here)?
            };
            if pid.is_multiple_of(SEGMENT_PAGES)
                && (if open {
                    self.map_segment(st, pid, here).is_err()
                } else {
                    !self.is_mapped(pid)
                })
            {
                return None;
            }
            st.take_fresh(here);
            self.note_fresh(pid);
            // A fresh page gets a version above 0 too: a page that is in use never shows
            // version 0, the version of a zeroed word.
            if self.latch(pid as PageId).renew(0) {
                return Some(pid as PageId);
            }
            st.nodes[here].returned.push((pid as PageId, 0));
        }
    }

    /// A page of `returned` (one node's pages whose memory went back to the system), with
    /// its latch renewed; one of the last few, skipping a page whose latch a thread holding a
    /// stale id has taken right now.
    fn take_returned(&self, returned: &mut Vec<(PageId, u64)>) -> Option<PageId> {
        let n = returned.len();
        let i = (n.saturating_sub(4)..n).rev().find(|&i| {
            let (pid, floor) = returned[i];
            self.latch(pid).renew(floor)
        })?;
        Some(returned.swap_remove(i).0)
    }

    /// The first page of a segment that an allocation of `n` pages by a thread of node
    /// `here` will take fresh pages from and that has no memory yet, if any (a guess: the
    /// allocation maps whatever else it needs under the mutex).
    fn segment_to_map(&self, st: &mut FreeList, here: usize, n: usize) -> Option<usize> {
        let lists = &st.nodes[here];
        if n <= lists.free.len() + lists.returned.len() || st.donor(here).is_some() {
            return None;
        }
        let first = st.fresh_page(here)?;
        (first.is_multiple_of(SEGMENT_PAGES) && !self.is_mapped(first) && self.maps_outside(first))
            .then_some(first)
    }

    /// Returns a page for reuse by any tree of the pool. The caller holds its exclusive latch
    /// and releases it after this call, which bumps the version past every reader's
    /// snapshot.
    pub(crate) fn free(&self, pid: PageId) {
        self.free_many(&[pid]);
    }

    /// Returns pages for reuse at once (one lock), as [`free`](Self::free) does.
    pub(crate) fn free_many(&self, ids: &[PageId]) {
        let mut st = self.lock();
        if self.placement.is_none() {
            st.nodes[0].free.extend_from_slice(ids);
        } else {
            for &pid in ids {
                let home = self.home(pid);
                st.nodes[home].free.push(pid);
                self.pages_on[home].fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.free_pages.store(st.free_len(), Ordering::Relaxed);
        self.in_use.fetch_sub(ids.len(), Ordering::Relaxed);
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        let page_size = self.page_size;
        let mut chunks = std::mem::replace(
            &mut self.chunks,
            std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
        );
        free_directory(&mut chunks, |mem, seg| {
            let layout = segment_layout(page_size, seg);
            // Latches of these pages that were inflated give their slots back first.
            crate::sync::cohort::forget_range(mem.addr(), layout.size());
            // Freed once, here, when no tree uses the pool any more.
            self.free_segment(mem, seg);
        });
    }
}

/// Frees a chunk table (of a pool or a replica's copies, `crate::numa`) that nothing uses
/// any more: `free_segment(memory, segment)` for each segment with memory, then the chunks.
pub(crate) fn free_directory(
    chunks: &mut [AtomicPtr<Chunk>; CHUNKS],
    mut free_segment: impl FnMut(*mut u8, usize),
) {
    for (j, chunk) in chunks.iter_mut().enumerate() {
        let chunk = *chunk.get_mut();
        if chunk.is_null() {
            continue;
        }
        for o in 0..1usize << j {
            // SAFETY: the chunk holds `2^j` entries; nothing uses the directory any more.
            let entry = unsafe { (*chunk.add(o)).load(Ordering::Relaxed) };
            if !entry.is_null() {
                free_segment(entry.map_addr(|a| a & !(PAGE_ALIGN - 1)), (1 << j) - 1 + o);
            }
        }
        // SAFETY: chunks are allocated with this layout (`install_segment`, and the
        // replica's `map`) and freed once, here.
        unsafe { dealloc(chunk as *mut u8, chunk_layout(j)) };
    }
}

/// The directory entry of segment `seg` at `mem` (`PAGE_ALIGN`-aligned) on NUMA node `node`:
/// the address with the node and the segment's page mask in its low bits.
pub(crate) fn segment_entry(mem: *mut u8, seg: usize, node: usize) -> *mut u8 {
    debug_assert!(mem.addr().is_multiple_of(PAGE_ALIGN) && node <= NODE_MASK);
    mem.map_addr(|a| a | (node & NODE_MASK) << NODE_SHIFT | (segment_pages(seg) - 1))
}

/// A tree's cached copy of its pool's directory address: translation without going through
/// the pool's `Arc`. Valid while the tree holds that `Arc`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Directory {
    chunks: NonNull<AtomicPtr<Chunk>>,
    /// The word of the chunk table's flat copy (`flat`).
    flat: NonNull<AtomicPtr<u8>>,
    page_size: usize,
}

// SAFETY: a `Directory` points at the pool's directory of atomics (chunk table and flat
// table), which lives as long as the pool; every holder keeps an `Arc<PagePool>` beside it
// (see `TreeCore`), and the atomics are safe to share and send. The compiler cannot see
// that through the raw pointer.
unsafe impl Send for Directory {}
// SAFETY: as above; only atomic loads go through the pointer.
unsafe impl Sync for Directory {}

impl Directory {
    /// The directory of `pool`; the caller keeps `pool` alive while it uses the result.
    pub(crate) fn of(pool: &Arc<PagePool>) -> Directory {
        pool.own_directory()
    }

    /// The directory over the chunk table `chunks` (of [`CHUNKS`] entries, in the encoding
    /// of [`segment_entry`]) and its flat copy `flat`, whose holder keeps both alive while
    /// the result is used: a pool's, or an upper-level replica's (`crate::numa`), which
    /// keeps copies of pages under the ids of the originals.
    pub(crate) fn over(
        chunks: &[AtomicPtr<Chunk>; CHUNKS],
        flat: &flat::Flat,
        page_size: usize,
    ) -> Directory {
        Directory {
            chunks: NonNull::from(chunks).cast(),
            flat: flat.word(),
            page_size,
        }
    }

    /// The size of the pool's pages.
    #[inline]
    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    /// The address of page `pid`. Fails with `Restart` for an id that was never allocated,
    /// which only an optimistic reader holding a garbage id can present.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<*mut u8, Restart> {
        Ok(self.address(self.entry(pid)?, pid))
    }

    /// The address of page `pid` in the segment of directory entry `entry`.
    #[inline(always)]
    fn address(&self, entry: *mut u8, pid: PageId) -> *mut u8 {
        let mask = entry.addr() & (SEGMENT_PAGES - 1);
        let base = entry.map_addr(|a| a & !(PAGE_ALIGN - 1));
        // SAFETY: the segment holds `mask + 1` pages (`map_segment`) and the index is masked
        // with `mask`.
        unsafe { base.add((pid as usize & mask) * self.page_size) }
    }

    /// The NUMA node whose memory holds page `pid` (`crate::numa`); `Restart` as for
    /// [`page`](Self::page).
    #[inline]
    pub(crate) fn node_of(&self, pid: PageId) -> Result<usize, Restart> {
        Ok(self.entry(pid)?.addr() >> NODE_SHIFT & NODE_MASK)
    }

    /// The directory entry of the segment of page `pid` (see [`segment_entry`]): from the
    /// flat table, one load that depends on the id; from the chunk table if the flat one
    /// lacks it.
    #[inline(always)]
    fn entry(&self, pid: PageId) -> Result<*mut u8, Restart> {
        // SAFETY: the flat table lives as long as the pool (or replica), which the holder
        // keeps alive.
        let entry = unsafe { flat::lookup(self.flat, pid as usize >> SEGMENT_SHIFT) };
        if !entry.is_null() {
            return Ok(entry);
        }
        self.chunk_entry(pid)
    }

    /// [`entry`](Self::entry) from the chunk table: for a segment that the flat table a
    /// reader loaded does not hold yet (or ever: an id that was never allocated, which only
    /// an optimistic reader holding a garbage id presents).
    #[cold]
    #[inline(never)]
    fn chunk_entry(&self, pid: PageId) -> Result<*mut u8, Restart> {
        let (j, o) = locate(pid as usize >> SEGMENT_SHIFT);
        // SAFETY: `j < CHUNKS` for every `u32` id (a segment number is below `2^27`), and
        // the table lives as long as the pool, which the holder keeps alive.
        let chunk = unsafe { (*self.chunks.as_ptr().add(j)).load(Ordering::Acquire) };
        if chunk.is_null() {
            return Err(Restart);
        }
        // SAFETY: chunk `j` holds `2^j` entries and `o < 2^j`; chunks live as long as the
        // pool.
        let entry = unsafe { (*chunk.add(o)).load(Ordering::Acquire) };
        if entry.is_null() {
            return Err(Restart);
        }
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_translate_into_distinct_pages() {
        let a = PagePool::new(4096, usize::MAX, true);
        let dir = Directory::of(&a);
        let ids = a.allocate(100).unwrap();
        let mut addrs: Vec<usize> = ids.iter().map(|&p| dir.page(p).unwrap() as usize).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), 100);
        assert!(dir.page(100_000).is_err());
        assert!(dir.page(u32::MAX).is_err());
    }

    #[test]
    fn the_directory_grows_with_the_pool() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1), (1, 0));
        assert_eq!(locate(2), (1, 1));
        assert_eq!(locate(6), (2, 3));
        assert_eq!(locate(7), (3, 0));
        assert_eq!(locate(u32::MAX as usize >> SEGMENT_SHIFT).0, CHUNKS - 1);
        let a = PagePool::new(4096, usize::MAX, true);
        let chunks = |p: &PagePool| -> usize {
            p.chunks
                .iter()
                .filter(|c| !c.load(Ordering::Relaxed).is_null())
                .count()
        };
        assert_eq!(chunks(&a), 0);
        assert_eq!(a.allocate(1).unwrap(), vec![0]);
        assert_eq!(chunks(&a), 1);
        // The small segments 1..5 (2 + 4 + 8 + 16 pages), then segments 5, 6 (chunk 2) and
        // 7 (chunk 3, one page used).
        let ids = a.allocate(30 + 2 * SEGMENT_PAGES + 1).unwrap();
        assert_eq!(&ids[..3], &[32, 33, 64]);
        assert_eq!(*ids.last().unwrap(), 7 * SEGMENT_PAGES as PageId);
        assert_eq!(chunks(&a), 4);
        let dir = Directory::of(&a);
        assert!(ids.iter().all(|&p| dir.page(p).is_ok()));
        assert!(dir.page(8 * SEGMENT_PAGES as PageId).is_err());
        assert!(dir.page(u32::MAX).is_err());
    }

    #[test]
    fn ids_past_a_small_segment_stay_inside_it() {
        let a = PagePool::new(4096, usize::MAX, true);
        let dir = Directory::of(&a);
        let ids = a.allocate(3).unwrap();
        assert_eq!(ids, vec![0, 32, 33]);
        let page = |p: PageId| dir.page(p).unwrap() as usize;
        // Never handed out, but they address a page of their segment, not memory beyond it.
        assert_eq!(page(5), page(0));
        assert_eq!(page(34), page(32));
        assert_eq!(page(63), page(33));
        // Segment 2 is not mapped yet.
        assert!(dir.page(64).is_err());
    }

    #[test]
    fn budget_refuses_and_free_reuses() {
        let a = PagePool::new(4096, 4096 * 4, true);
        let ids = a.allocate(4).unwrap();
        assert!(a.allocate(1).is_err());
        a.free(ids[2]);
        assert_eq!(a.allocate(1).unwrap(), vec![ids[2]]);
        assert_eq!(a.bytes_in_use(), 4 * 4096);
        assert!(Directory::of(&a).page(1000).is_err());
    }

    #[test]
    fn concurrent_allocations_across_segments_hand_out_each_page_once() {
        let a = PagePool::new(4096, usize::MAX, true);
        let dir = Directory::of(&a);
        let ids: Vec<PageId> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|t| {
                    let a = &a;
                    s.spawn(move || {
                        let mut mine = Vec::new();
                        for i in 0..300 {
                            // Ones and twos, so that some allocations straddle a segment.
                            mine.extend(a.allocate(1 + (t + i) % 2).unwrap());
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_eq!(ids.len(), 8 * 450);
        let mut addrs: Vec<usize> = ids.iter().map(|&p| dir.page(p).unwrap() as usize).collect();
        addrs.sort_unstable();
        addrs.dedup();
        assert_eq!(addrs.len(), ids.len(), "a page handed out twice");
        assert_eq!(a.bytes_in_use(), ids.len() * 4096);
    }

    /// Readers translate every page handed out so far while a writer opens segments, so
    /// that the flat table grows under them several times: each translation is the chunk
    /// table's, and at the end the flat table holds every segment in use.
    #[test]
    fn translation_through_the_flat_table_matches_the_chunk_table_while_it_grows() {
        let a = PagePool::new(4096, usize::MAX, true);
        let dir = Directory::of(&a);
        let handed = Mutex::new(Vec::<PageId>::new());
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    let mut checked = 0;
                    while !done.load(Ordering::Acquire) || checked == 0 {
                        let ids = handed.lock().unwrap().clone();
                        for &p in &ids {
                            assert_eq!(dir.page(p), dir.chunk_entry(p).map(|e| dir.address(e, p)));
                        }
                        checked += ids.len();
                    }
                });
            }
            // 150 segments of 32 pages: the table grows from 8 entries to 256.
            for _ in 0..150 {
                let ids = a.allocate(SEGMENT_PAGES).unwrap();
                handed.lock().unwrap().extend(ids);
            }
            done.store(true, Ordering::Release);
        });
        for &p in handed.lock().unwrap().iter() {
            // SAFETY: the pool, and so its flat table, is alive.
            let flat = unsafe { flat::lookup(dir.flat, p as usize >> SEGMENT_SHIFT) };
            assert!(
                !flat.is_null(),
                "segment of page {p} missing from the flat table"
            );
        }
    }

    #[test]
    fn a_segment_mapped_meanwhile_keeps_its_memory() {
        let a = PagePool::new(4096, usize::MAX, true);
        a.allocate(1).unwrap();
        let first = SEGMENT_PAGES;
        assert!(!a.is_mapped(first));
        let mine = a.segment_memory(1, 0).unwrap();
        let theirs = a.segment_memory(1, 0).unwrap();
        a.install_segment(first, theirs, 0).unwrap();
        let page = Directory::of(&a).page(first as PageId).unwrap();
        // Installing a second block for the same segment frees it and changes nothing.
        a.install_segment(first, mine, 0).unwrap();
        assert_eq!(Directory::of(&a).page(first as PageId).unwrap(), page);
        assert_eq!(page as usize, theirs as usize);
        assert_eq!(a.allocate(2).unwrap(), vec![32, 33]);
    }
}
