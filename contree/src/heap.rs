//! The blob heap: out-of-line bytes shorter than a page (the rest of a long key, a value of
//! a few KiB) packed many to a page, so that an 800-byte key rest costs about 800 bytes of
//! the budget, not a whole page. Longer ones take a chain of whole pages (`crate::blob`).
//!
//! ```text
//! heap page: 0 latch word   8 slots u16   10 zero   12 data start u32   16 live bytes u32
//!            20 zero   24 slot directory: per slot offset u16, length u16 (0: free slot)
//!            ... gap ...   data start .. page end: the chunks, in any order
//! ```
//!
//! A chunk is named by its page and slot. The slot's indirection lets the heap move chunks
//! inside their page without touching the stubs that name them: an allocation that finds
//! enough free bytes in a page, but not in one gap, first packs the page's chunks against its
//! end ([`compact`]). Allocation takes the page with the fewest free bytes that still fits
//! the chunk (best fit), so pages fill up and a freed chunk's bytes are reused; a page whose
//! last chunk is freed goes back to the pool.
//!
//! **Concurrency.** Allocation, free, packing and the reference counts of key chunks
//! (`long_key`) happen under the tree's heap mutex ([`HeapState`]). Packing and in-place
//! writes ([`TreeCore::heap_overwrite`]) also hold the heap page's latch exclusively, and
//! optimistic readers validate that latch around their copy, so a chunk moved or rewritten
//! under them restarts the read. As for chained blobs, a chunk is written before the stub
//! that names it is published under a node latch, and freed only after the stub left the
//! tree; a reader holding a stale stub validates the node it read it from, whose version
//! moved. Every offset and length a reader takes from a heap page is bounds-checked before
//! it addresses memory.

use crate::engine::TreeCore;
use crate::error::Error;
use crate::node::raw::RawPage;
use crate::page::{Directory, PageId};
use crate::sync::{HybridLatch, Restart};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Offset of the slot count.
const SLOTS: usize = 8;
/// Offset of the start of the chunk area.
const DATA_START: usize = 12;
/// Offset of the sum of the live chunks' lengths.
const LIVE: usize = 16;
/// Bytes of the page header; the slot directory follows.
const HDR: usize = 24;
/// Bytes of one slot.
const SLOT: usize = 4;
/// The most slots a stub can name (15 bits).
const MAX_SLOTS: usize = 1 << 15;

/// A chunk's name: its heap page and slot.
pub(crate) type Chunk = (PageId, u16);

/// Whether a chunk of `len` bytes fits a heap page of `page_size` bytes.
#[inline]
pub(crate) fn fits(len: usize, page_size: usize) -> bool {
    len > 0 && len + SLOT <= page_size - HDR
}

/// The heap's index of its pages, under the tree's heap mutex.
#[derive(Debug, Default)]
pub(crate) struct HeapState {
    /// Every heap page, keyed by its free bytes (best fit).
    by_free: BTreeSet<(u32, PageId)>,
}

impl HeapState {
    /// The heap's pages.
    pub(crate) fn pages(&self) -> impl Iterator<Item = PageId> + '_ {
        self.by_free.iter().map(|&(_, pid)| pid)
    }

    /// How many pages the heap holds.
    pub(crate) fn page_count(&self) -> usize {
        self.by_free.len()
    }
}

/// The raw view and latch of page `pid` (checked translation: `Restart` for an unmapped id).
fn page_of(
    dir: &Directory,
    page_size: usize,
    pid: PageId,
) -> Result<(RawPage, &HybridLatch), Restart> {
    let ptr = dir.page(pid)?;
    // SAFETY: `ptr` addresses a whole page of a segment that stays mapped while the pool
    // lives, which the directory's holder keeps alive; its first 8 bytes are its latch word,
    // 8-aligned (pages are 4096-aligned) and only ever accessed atomically.
    unsafe { Ok((RawPage::new(ptr, page_size), &*(ptr as *const HybridLatch))) }
}

fn u16_of(page: &RawPage, off: usize) -> Result<usize, Restart> {
    let mut b = [0u8; 2];
    page.copy_to(off, &mut b)?;
    Ok(u16::from_le_bytes(b) as usize)
}

fn u32_of(page: &RawPage, off: usize) -> Result<usize, Restart> {
    let mut b = [0u8; 4];
    page.copy_to(off, &mut b)?;
    Ok(u32::from_le_bytes(b) as usize)
}

/// Writes `bytes` at `off`.
///
/// # Safety
/// The caller may write the page: it holds the heap mutex and the bytes are header, slot or
/// free bytes no reader validates against (or it holds the page's latch exclusively).
unsafe fn put(page: &RawPage, off: usize, bytes: &[u8]) {
    // SAFETY: the caller's contract; `slice_mut` asserts the range lies in the page.
    unsafe { page.slice_mut(off, bytes.len()) }.copy_from_slice(bytes);
}

/// The offset and length of slot `slot` (not checked against the slot count).
fn slot_of(page: &RawPage, slot: usize) -> Result<(usize, usize), Restart> {
    let at = HDR + SLOT * slot;
    Ok((u16_of(page, at)?, u16_of(page, at + 2)?))
}

/// Writes `bytes` over the start of the live chunk `slot` of `page` (of `len` bytes).
///
/// # Safety
/// The caller owns the chunk's bytes: it excludes other writers, and optimistic readers of
/// them either fail validation (the page's latch is held) or never read them.
unsafe fn write_start(page: &RawPage, slot: u16, len: usize, bytes: &[u8]) {
    let off = locate(page, slot as usize, len).expect("a live heap chunk");
    assert!(bytes.len() <= len, "a write inside its chunk");
    // SAFETY: the caller's contract; `locate` checked the chunk lies in the page.
    unsafe { put(page, off, bytes) };
}

/// The offset of chunk `slot` of `page`, checked to be a live chunk of `len` bytes inside
/// the page.
fn locate(page: &RawPage, slot: usize, len: usize) -> Result<usize, Restart> {
    if slot >= u16_of(page, SLOTS)? {
        return Err(Restart);
    }
    let (off, l) = slot_of(page, slot)?;
    if l != len || off < HDR {
        return Err(Restart);
    }
    page.check(off, len)?;
    Ok(off)
}

/// Calls `f` with the page and the offset of chunk `slot` of heap page `pid` (of `len`
/// bytes), validating the page's latch afterwards. Optimistic: the caller validates the
/// node it read the chunk's stub from too.
fn with_chunk<R>(
    dir: &Directory,
    page_size: usize,
    pid: PageId,
    slot: u16,
    len: usize,
    f: impl FnOnce(&RawPage, usize) -> Result<R, Restart>,
) -> Result<R, Restart> {
    let (page, latch) = page_of(dir, page_size, pid)?;
    // `try_`: a stale stub may name a page this thread holds latched itself.
    let guard = latch.try_optimistic().ok_or(Restart)?;
    let off = locate(&page, slot as usize, len)?;
    let r = f(&page, off)?;
    guard.validate()?;
    Ok(r)
}

/// Appends bytes `from..len` of the chunk to `out` (optimistic, see [`with_chunk`]).
pub(crate) fn read(
    dir: &Directory,
    page_size: usize,
    (pid, slot): Chunk,
    len: usize,
    from: usize,
    out: &mut Vec<u8>,
) -> Result<(), Restart> {
    let n = len.checked_sub(from).ok_or(Restart)?;
    with_chunk(dir, page_size, pid, slot, len, |page, off| {
        page.append_to(off + from, n, out)
    })
}

/// Compares bytes `from..len` of the chunk with `other`, as slices compare (optimistic).
pub(crate) fn compare(
    dir: &Directory,
    page_size: usize,
    (pid, slot): Chunk,
    len: usize,
    from: usize,
    other: &[u8],
) -> Result<Ordering, Restart> {
    let n = len.checked_sub(from).ok_or(Restart)?;
    with_chunk(dir, page_size, pid, slot, len, |page, off| {
        page.compare(off + from, n, other)
    })
}

/// Runs `f`, a read of bytes that the caller holds latched (a node it latched, the stubs in
/// it, the chunks they name), until it does not restart: such a read restarts only while
/// another thread packs or writes a heap page it touches, which ends without waiting for
/// anything this thread holds.
pub(crate) fn settled<T>(mut f: impl FnMut() -> Result<T, Restart>) -> T {
    loop {
        match f() {
            Ok(t) => return t,
            Err(Restart) => crate::sync::seam::yield_now(),
        }
    }
}

/// Free bytes of a heap page: all but the header, the slots and the live chunks.
fn free_of(page: &RawPage) -> u32 {
    let slots = u16_of(page, SLOTS).expect("a heap page");
    let live = u32_of(page, LIVE).expect("a heap page");
    (page.size() - HDR - SLOT * slots - live) as u32
}

/// Packs the live chunks of `page` against its end (the caller holds the heap mutex and the
/// page's latch exclusively) and returns the new start of the chunk area.
fn compact(page: &RawPage, slots: usize) -> usize {
    let mut live: Vec<(usize, usize, usize)> = (0..slots)
        .map(|s| {
            let (off, len) = slot_of(page, s).expect("a heap page");
            (off, len, s)
        })
        .filter(|&(_, len, _)| len > 0)
        .collect();
    // From the highest offset down, each chunk moves up (or stays) and lands above every
    // chunk not moved yet, so no move overwrites bytes still to be moved.
    live.sort_unstable_by_key(|&(off, _, _)| std::cmp::Reverse(off));
    let mut end = page.size();
    for (off, len, s) in live {
        end -= len;
        if end != off {
            // SAFETY: both ranges lie inside the page (slots of a heap page the caller
            // owns under the mutex); `copy` allows the overlap; the caller holds the page's
            // latch exclusively, so optimistic readers of these bytes fail validation.
            unsafe { std::ptr::copy(page.addr().add(off), page.addr().add(end), len) };
            // SAFETY: as above.
            unsafe { put(page, HDR + SLOT * s, &(end as u16).to_le_bytes()) };
        }
    }
    end
}

impl TreeCore {
    /// Locks the heap (see the module docs for what it covers).
    pub(crate) fn heap_lock(&self) -> crate::sync::seam::MutexGuard<'_, HeapState> {
        self.heap.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The raw view and latch of heap page `pid`, which this tree holds.
    fn heap_page(&self, pid: PageId) -> (RawPage, &HybridLatch) {
        page_of(self.directory(), self.config().page_size, pid).expect("a page of this tree")
    }

    /// Writes the concatenation of `parts` into a new chunk and returns its page and slot,
    /// or fails with `OutOfSpace` (changing nothing) when a new page is needed and the budget
    /// does not allow it. The length [`fits`].
    pub(crate) fn heap_alloc(&self, st: &mut HeapState, parts: &[&[u8]]) -> Result<Chunk, Error> {
        let size = self.config().page_size;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert!(fits(len, size), "a heap chunk fits a page");
        let need = (len + SLOT) as u32;
        let pid = match st.by_free.range((need, 0)..).next().copied() {
            Some(entry) => {
                st.by_free.remove(&entry);
                entry.1
            }
            None => {
                let pid = self.allocate(1).ok_or_else(|| self.out_of_space())?[0];
                let (page, _) = self.heap_page(pid);
                let mut head = [0u8; HDR - SLOTS];
                head[DATA_START - SLOTS..LIVE - SLOTS]
                    .copy_from_slice(&(size as u32).to_le_bytes());
                // SAFETY: a fresh page of this call's: no stub names it, and a stale
                // reader of its earlier life validates a version that moved when it was
                // freed (the latch word is not written).
                unsafe { put(&page, SLOTS, &head) };
                pid
            }
        };
        let (page, latch) = self.heap_page(pid);
        let slots = u16_of(&page, SLOTS).expect("a heap page");
        let slot = (0..slots)
            .find(|&s| slot_of(&page, s).expect("a heap page").1 == 0)
            .unwrap_or(slots);
        assert!(slot < MAX_SLOTS, "a heap page holds at most 2^15 chunks");
        let (old_slots, slots) = (slots, slots.max(slot + 1));
        let mut start = u32_of(&page, DATA_START).expect("a heap page");
        if start < HDR + SLOT * slots + len {
            let _x = latch.exclusive_atomic();
            start = compact(&page, old_slots);
            self.events
                .heap_packs
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        start -= len;
        // Orders this thread's view of earlier releases (the unlatch that removed the stub
        // of whatever these bytes held before) before the writes below, so that a stale
        // reader that reads them validates a version that moved (`tests/loom_latch.rs`, f').
        crate::sync::seam::fence(std::sync::atomic::Ordering::Release);
        let mut at = start;
        for part in parts {
            // SAFETY: `start..start + len` is free space of a page this thread owns under
            // the heap mutex: no live chunk and no published stub names it.
            unsafe { put(&page, at, part) };
            at += part.len();
        }
        let mut entry = [0u8; SLOT];
        entry[..2].copy_from_slice(&(start as u16).to_le_bytes());
        entry[2..].copy_from_slice(&(len as u16).to_le_bytes());
        let live = u32_of(&page, LIVE).expect("a heap page") + len;
        // SAFETY: header and a free slot of a heap page owned under the mutex; readers of
        // other chunks read these fields too, but only a stale one could see the new slot.
        unsafe {
            put(&page, HDR + SLOT * slot, &entry);
            put(&page, SLOTS, &(slots as u16).to_le_bytes());
            put(&page, DATA_START, &(start as u32).to_le_bytes());
            put(&page, LIVE, &(live as u32).to_le_bytes());
        }
        st.by_free.insert((free_of(&page), pid));
        Ok((pid, slot as u16))
    }

    /// Frees chunk `slot` of page `pid`, which no node names any more; a page left empty
    /// goes back to the pool.
    pub(crate) fn heap_free(&self, st: &mut HeapState, (pid, slot): Chunk) {
        let (page, _) = self.heap_page(pid);
        let present = st.by_free.remove(&(free_of(&page), pid));
        assert!(present, "a chunk of a heap page");
        let (_, len) = slot_of(&page, slot as usize).expect("a heap page");
        assert!(len > 0, "a heap chunk freed twice");
        let mut slots = u16_of(&page, SLOTS).expect("a heap page");
        // SAFETY: the slot's chunk left the tree; header and slot fields change under the
        // mutex, and only stale readers (which validate a node that moved) read them.
        unsafe { put(&page, HDR + SLOT * slot as usize, &[0; SLOT]) };
        while slots > 0 && slot_of(&page, slots - 1).expect("a heap page").1 == 0 {
            slots -= 1;
        }
        let live = u32_of(&page, LIVE).expect("a heap page") - len;
        if slots == 0 {
            self.free_pages(&[pid]);
            return;
        }
        // SAFETY: as above.
        unsafe {
            put(&page, SLOTS, &(slots as u16).to_le_bytes());
            put(&page, LIVE, &(live as u32).to_le_bytes());
        }
        st.by_free.insert((free_of(&page), pid));
    }

    /// Writes `bytes` over the start of the live chunk `slot` of page `pid` (of `len`
    /// bytes), under the page's latch: the caller owns the chunk (it holds the node that
    /// names it latched).
    pub(crate) fn heap_overwrite(&self, (pid, slot): Chunk, len: usize, bytes: &[u8]) {
        let (page, latch) = self.heap_page(pid);
        let _x = latch.exclusive_atomic();
        // SAFETY: the chunk is the caller's and the page's latch is held exclusively:
        // optimistic readers of these bytes fail validation.
        unsafe { write_start(&page, slot, len, bytes) };
    }

    /// Writes `bytes` over the start of the live chunk `slot` of page `pid` (of `len`
    /// bytes): bytes that no optimistic reader reads (a key chunk's count), changed under the
    /// heap mutex `_st` (which also keeps the chunk in place), so the page's latch is left
    /// alone.
    pub(crate) fn heap_write_unread(
        &self,
        _st: &mut HeapState,
        (pid, slot): Chunk,
        len: usize,
        bytes: &[u8],
    ) {
        let (page, _) = self.heap_page(pid);
        // SAFETY: the heap mutex is held, so the chunk neither moves nor is freed, and these
        // bytes are read only under that mutex.
        unsafe { write_start(&page, slot, len, bytes) };
    }

    /// The first `N` bytes of the live chunk `slot` of page `pid` (of `len` bytes), read
    /// under the heap mutex `_st` by a thread that excludes writers of these bytes.
    pub(crate) fn heap_bytes<const N: usize>(
        &self,
        _st: &HeapState,
        (pid, slot): Chunk,
        len: usize,
    ) -> [u8; N] {
        let (page, _) = self.heap_page(pid);
        let off = locate(&page, slot as usize, len).expect("a live heap chunk");
        let mut b = [0u8; N];
        page.copy_to(off, &mut b).expect("a live heap chunk");
        b
    }

    /// The heap's pages and the bytes of its live chunks.
    pub(crate) fn heap_usage(&self) -> (usize, usize) {
        let st = self.heap_lock();
        let live = st
            .pages()
            .map(|pid| u32_of(&self.heap_page(pid).0, LIVE).expect("a heap page"))
            .sum();
        (st.page_count(), live)
    }

    /// Checks every heap page (the tree is quiescent): header, slots and the chunks'
    /// disjointness, and the index's free counts. Returns each live chunk with its length.
    pub(crate) fn heap_chunks(&self) -> Result<Vec<(Chunk, usize)>, String> {
        let st = self.heap_lock();
        let size = self.config().page_size;
        let mut out = Vec::new();
        for &(free, pid) in &st.by_free {
            let (page, _) = self.heap_page(pid);
            let bad = |what: &str| format!("heap page {pid}: {what}");
            let slots = u16_of(&page, SLOTS).map_err(|_| bad("header"))?;
            let start = u32_of(&page, DATA_START).map_err(|_| bad("header"))?;
            let live = u32_of(&page, LIVE).map_err(|_| bad("header"))?;
            if slots == 0 || start < HDR + SLOT * slots || start > size {
                return Err(bad(&format!("{slots} slots, chunks from {start}")));
            }
            let mut ranges = Vec::new();
            for s in 0..slots {
                let (off, len) = slot_of(&page, s).map_err(|_| bad("slot"))?;
                if len == 0 {
                    continue;
                }
                if off < start || off + len > size {
                    return Err(bad(&format!("slot {s} at {off}+{len}")));
                }
                ranges.push((off, len));
                out.push(((pid, s as u16), len));
            }
            if slot_of(&page, slots - 1).map_err(|_| bad("slot"))?.1 == 0 {
                return Err(bad("a free last slot"));
            }
            ranges.sort_unstable();
            if ranges.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
                return Err(bad("overlapping chunks"));
            }
            if ranges.iter().map(|r| r.1).sum::<usize>() != live {
                return Err(bad(&format!("live bytes {live}")));
            }
            if free != free_of(&page) {
                return Err(bad(&format!("indexed with {free} free bytes")));
            }
        }
        Ok(out)
    }
}
