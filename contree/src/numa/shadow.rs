//! Sparse page copies under the ids of their originals: the memory of one node's upper-level
//! replica (`replica`). A copy of page `pid` lives at the address a directory of the pool's
//! encoding ([`Directory::over`]) gives for `pid`, so that a replica's inner nodes keep their
//! children's ids unchanged and a descent of the copy uses the node code as it is.
//!
//! **Memory.** The directory has the pool's segment geometry, but a segment is mapped only
//! when a copy falls into it, and on Linux with `mmap` (no backing until a page is
//! written), so that a replica holding one inner page per segment of leaves costs its copies,
//! not its segments; on a machine with several NUMA nodes the mapping is bound to the
//! replica's node (`mbind`). Copies are never unmapped while the replica lives: a page's
//! copy keeps its latch word, whose version only grows, so a reader holding an id that is no
//! longer an inner node reads a copy that its latch or the tree's structure sequence
//! rejects. Elsewhere segments come from the allocator, zeroed.
//!
//! **Concurrency.** Only the replica's refresher (under its mutex) writes: it maps segments,
//! publishing them with release stores as the pool does, and writes a copy under the copy's
//! own exclusive latch (its first 8 bytes), which readers validate as they validate any page.

use crate::node::raw::RawPage;
use crate::node::Node;
use crate::page::flat::Flat;
use crate::page::{
    chunk_layout, free_directory, locate, memory, segment_entry, Chunk, Directory, PageId, CHUNKS,
    MAX_PAGES, SEGMENT_SHIFT,
};
use crate::sync::{HybridLatch, Restart};
use std::alloc::alloc_zeroed;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The copies of one replica (see the module doc).
pub(super) struct Shadow {
    page_size: usize,
    chunks: [AtomicPtr<Chunk>; CHUNKS],
    /// The chunk table's flat copy (`page::flat`).
    flat: Flat,
    /// The node the memory is bound to (a real topology of several nodes), if any.
    bind: Option<usize>,
}

impl Shadow {
    pub(super) fn new(page_size: usize, bind: Option<usize>) -> Shadow {
        Shadow {
            page_size,
            chunks: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            flat: Flat::new(),
            bind,
        }
    }

    fn directory(&self) -> Directory {
        Directory::over(&self.chunks, &self.flat, self.page_size)
    }

    /// The read view and latch of the copy of `pid`; `Restart` if its segment has no memory
    /// (an id that no copy was made for: the reader falls back).
    #[inline]
    pub(super) fn page(&self, pid: PageId) -> Result<(Node, &HybridLatch), Restart> {
        let ptr = self.directory().page(pid)?;
        // SAFETY: `ptr` addresses a whole page of a mapped segment, which stays mapped while
        // the shadow lives (as long as `&self`); its first 8 bytes, 8-aligned (segments are
        // page-aligned), are the copy's latch word, only ever accessed atomically.
        unsafe {
            Ok((
                Node::new(RawPage::new(ptr, self.page_size)),
                &*(ptr as *const HybridLatch),
            ))
        }
    }

    /// Writes `bytes` (a whole page, whose first 8 bytes, the original's latch word, are
    /// skipped) as the copy of `pid`, under the copy's exclusive latch; `false` if memory for
    /// its segment cannot be had. Only the refresher calls it (under the replica's mutex).
    pub(super) fn write(&self, pid: PageId, bytes: &[u8]) -> bool {
        debug_assert_eq!(bytes.len(), self.page_size);
        if !self.map(pid) {
            return false;
        }
        let Ok((_, latch)) = self.page(pid) else {
            return false;
        };
        let _x = latch.exclusive();
        let dst = latch as *const HybridLatch as *mut u8;
        // SAFETY: `dst` addresses a whole page of a mapped segment (`page`); bytes 8.. are
        // written only here, under the copy's exclusive latch, which readers validate after
        // reading them; `bytes` is a local buffer, which cannot overlap the copy.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(8), dst.add(8), self.page_size - 8)
        };
        true
    }

    /// Gives back the memory of the copy of `pid` where the system page divides the page
    /// (elsewhere it is kept); it then reads as zeroes, its latch word too, until written
    /// again. Only the refresher calls it (under the replica's mutex).
    pub(super) fn discard(&self, pid: PageId) -> bool {
        if !memory::supported(self.page_size) {
            return false;
        }
        let Ok(ptr) = self.directory().page(pid) else {
            return false;
        };
        // SAFETY: `ptr` is a whole page of a segment from `memory::map` (private anonymous
        // memory the shadow owns and keeps mapped while it lives), of whole system pages
        // (`supported`); nothing holds a reference into it: readers read copies through raw
        // pointers and validate (a zeroed latch word fails every earlier snapshot), and the
        // refresher, the only writer, is the caller.
        unsafe { memory::discard(ptr, self.page_size) }
    }

    /// Gives the segment of `pid` memory if it has none; `false` if the system refuses.
    fn map(&self, pid: PageId) -> bool {
        if (pid as usize) >= MAX_PAGES {
            return false;
        }
        let seg = pid as usize >> SEGMENT_SHIFT;
        let (j, o) = locate(seg);
        let mut chunk = self.chunks[j].load(Ordering::Acquire);
        if chunk.is_null() {
            // SAFETY: the layout has a non-zero size (at least one pointer).
            chunk = unsafe { alloc_zeroed(chunk_layout(j)) } as *mut Chunk;
            if chunk.is_null() {
                return false;
            }
            // All-zero bytes are null pointers: the chunk is valid before it is published.
            self.chunks[j].store(chunk, Ordering::Release);
        }
        // SAFETY: chunk `j` holds `2^j` entries and `o < 2^j` (`locate`); it lives as long
        // as the shadow.
        let slot = unsafe { &*chunk.add(o) };
        if !slot.load(Ordering::Acquire).is_null() {
            return true;
        }
        let Some(mem) = memory::map(self.page_size, seg, self.bind) else {
            return false;
        };
        let entry = segment_entry(mem, seg, self.bind.unwrap_or(0));
        slot.store(entry, Ordering::Release);
        self.flat.publish(seg, entry);
        true
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        let page_size = self.page_size;
        // Every segment's memory came from `memory::map` (`Shadow::map`).
        free_directory(&mut self.chunks, |mem, seg| {
            memory::unmap(mem, page_size, seg)
        });
    }
}
