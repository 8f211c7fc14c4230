//! Out-of-line bytes: a value longer than a page may hold inline
//! ([`Config::max_inline_value_len`](crate::Config::max_inline_value_len)), and the rest of
//! a long key (`long_key`), live outside the nodes, and the node holds a [`Stub`] naming
//! them (the value's or key's length and their [`Place`]); a leaf flags a value's stub in the
//! entry's length header (see `node`). Bytes that fit a page go to the blob heap
//! (`crate::heap`, many chunks per page); longer ones take a chain of whole pages from the
//! tree's page pool:
//!
//! ```text
//! chain page: 0 latch word (never touched here)   8 next page id u32 (LE)   12 zero
//!             16 .. page_size: the bytes (the last page holds the remainder)
//! stub:       a chain: length u32 LE (below 2^31), first page u32 LE
//!             a chunk: length u16 LE, slot u16 LE with the top bit set, heap page u32 LE
//! ```
//!
//! **Ownership.** A value's blob belongs to the one stub that names it. It is written
//! before the stub is published (under the leaf's exclusive latch), changes afterwards only
//! under that latch (`update_with` writes a value back in place), and is freed only after
//! the stub left its leaf under that latch (removal, replacement). Splits, merges and XMerge
//! move stubs between leaves and never touch blobs. Blob pages, chained or heap, count in
//! the memory budget and in `Stats::bytes_in_use` like nodes. Key blobs are shared by the
//! stored forms that name them and reference-counted (`long_key`).
//!
//! **Optimistic readers.** A reader copies a stub out of a leaf, copies the blob's bytes
//! ([`read`]) and then validates the *leaf's* version: if the stub was removed or replaced
//! meanwhile (and its bytes freed, even reused), the leaf's version moved and the read
//! restarts. Pages stay mapped while the pool lives, every page id read from a stub or a
//! chain page goes through the directory's checked translation, a length above
//! [`MAX_VALUE_LEN`] restarts at once, and the walk of a chain takes exactly as many steps as
//! the length needs, so garbage read under a writer is memory-safe and terminates. The latch
//! word of a chain page is never written, so a stale reader of the page's previous life as a
//! node still sees its version move. Heap chunks are checked and validated by `heap`.

use crate::engine::TreeCore;
use crate::error::Error;
use crate::heap::{self, HeapState};
use crate::node::raw::RawPage;
use crate::page::{Directory, PageId};
use crate::sync::Restart;
use std::cmp::Ordering;

/// The longest value a tree accepts, whatever its page size: 16 MiB.
pub const MAX_VALUE_LEN: usize = 16 << 20;

/// Bytes of a stub in its leaf entry.
pub(crate) const STUB_LEN: usize = 8;
/// Offset of the next page id in a chain page.
const NEXT: usize = 8;
/// Offset of the bytes in a chain page.
const DATA: usize = 16;
/// The next page id of a chain's last page.
const END: PageId = PageId::MAX;
/// The flag of a chunk's slot in a stub.
const CHUNK: u32 = 1 << 31;

/// Where a blob's bytes are: a chain of whole pages (its first page), or a chunk of the
/// blob heap (its page and slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Place {
    Chain(PageId),
    Chunk(PageId, u16),
}

/// What a node holds for out-of-line bytes: where they are, and the length of the value
/// (or key) they belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Stub {
    pub at: Place,
    pub len: usize,
}

impl Stub {
    /// The stub's bytes in a node (see the module docs).
    pub(crate) fn encode(&self) -> [u8; STUB_LEN] {
        let (word, pid) = match self.at {
            Place::Chain(pid) => (self.len as u32, pid),
            Place::Chunk(pid, slot) => (self.len as u32 | CHUNK | (slot as u32) << 16, pid),
        };
        let mut b = [0u8; STUB_LEN];
        b[..4].copy_from_slice(&word.to_le_bytes());
        b[4..].copy_from_slice(&pid.to_le_bytes());
        b
    }

    /// The stub encoded in `b` (any bytes decode; [`read`] checks what it uses).
    pub(crate) fn decode(b: [u8; STUB_LEN]) -> Stub {
        let word = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let pid = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if word & CHUNK == 0 {
            Stub {
                at: Place::Chain(pid),
                len: word as usize,
            }
        } else {
            Stub {
                at: Place::Chunk(pid, (word >> 16) as u16 & 0x7FFF),
                len: (word & 0xFFFF) as usize,
            }
        }
    }
}

/// Bytes one chain page of a `page_size` page holds.
#[inline]
fn payload(page_size: usize) -> usize {
    page_size - DATA
}

/// Chain pages that `len` bytes take.
pub(crate) fn pages_for(len: usize, page_size: usize) -> usize {
    len.div_ceil(payload(page_size))
}

/// The raw view of page `pid` (checked translation: `Restart` for an unmapped id).
fn raw_page(dir: &Directory, page_size: usize, pid: PageId) -> Result<RawPage, Restart> {
    let ptr = dir.page(pid)?;
    // SAFETY: `ptr` addresses a whole page of a segment that stays mapped while the pool
    // lives, which the directory's holder keeps alive.
    Ok(unsafe { RawPage::new(ptr, page_size) })
}

/// The next page id stored in `page`.
fn next_of(page: &RawPage) -> Result<PageId, Restart> {
    let mut b = [0u8; 4];
    page.copy_to(NEXT, &mut b)?;
    Ok(u32::from_le_bytes(b))
}

/// Calls `f` with each page of the chain of `len` bytes that starts at `first`, and the
/// part of the bytes it holds (`offset, length`), in order; exactly as many pages as the
/// length needs.
fn walk(
    dir: &Directory,
    page_size: usize,
    first: PageId,
    len: usize,
    mut f: impl FnMut(PageId, RawPage, usize, usize) -> Result<(), Restart>,
) -> Result<(), Restart> {
    if len > MAX_VALUE_LEN {
        return Err(Restart);
    }
    let mut pid = first;
    let mut done = 0;
    while done < len {
        let page = raw_page(dir, page_size, pid)?;
        let n = (len - done).min(payload(page_size));
        f(pid, page, done, n)?;
        done += n;
        if done < len {
            pid = next_of(&page)?;
        }
    }
    Ok(())
}

/// Appends bytes `from..len` of the blob of `len` bytes at `at` to `out`. Optimistic: the
/// bytes are garbage (and the call may restart, leaving part of them appended) unless the
/// node the stub was read from validates afterwards.
pub(crate) fn read_bytes(
    dir: &Directory,
    page_size: usize,
    at: Place,
    len: usize,
    from: usize,
    out: &mut Vec<u8>,
) -> Result<(), Restart> {
    if len > MAX_VALUE_LEN || from > len {
        return Err(Restart);
    }
    match at {
        Place::Chunk(pid, slot) => heap::read(dir, page_size, (pid, slot), len, from, out),
        Place::Chain(first) => {
            out.reserve(len - from);
            walk(dir, page_size, first, len, |_, page, done, n| {
                let skip = from.saturating_sub(done).min(n);
                page.append_to(DATA + skip, n - skip, out)
            })
        }
    }
}

/// Compares bytes `from..len` of the blob of `len` bytes at `at` with `other`, as slices
/// compare. Optimistic like [`read_bytes`].
pub(crate) fn compare_bytes(
    dir: &Directory,
    page_size: usize,
    at: Place,
    len: usize,
    from: usize,
    other: &[u8],
) -> Result<Ordering, Restart> {
    match at {
        Place::Chunk(pid, slot) => heap::compare(dir, page_size, (pid, slot), len, from, other),
        Place::Chain(_) => {
            let mut bytes = Vec::new();
            read_bytes(dir, page_size, at, len, from, &mut bytes)?;
            Ok(bytes.as_slice().cmp(other))
        }
    }
}

/// Appends the value `stub` names to `out` (optimistic, see [`read_bytes`]).
#[inline]
pub(crate) fn read(
    dir: &Directory,
    page_size: usize,
    stub: Stub,
    out: &mut Vec<u8>,
) -> Result<(), Restart> {
    read_bytes(dir, page_size, stub.at, stub.len, 0, out)
}

/// The pages of the chain of `len` bytes that starts at `first`, in order (for frees and
/// the structural check).
pub(crate) fn chain_pages(
    dir: &Directory,
    page_size: usize,
    first: PageId,
    len: usize,
) -> Result<Vec<PageId>, Restart> {
    let mut ids = Vec::with_capacity(pages_for(len.min(MAX_VALUE_LEN), page_size));
    walk(dir, page_size, first, len, |pid, _, _, _| {
        ids.push(pid);
        Ok(())
    })?;
    Ok(ids)
}

/// Writes `bytes` at `at` into the page `page`.
///
/// # Safety
/// No other thread writes the page, and no thread reads it except optimistically (through
/// `RawPage`, forming no reference), validating afterwards a version that this write's owner
/// moves: a fresh chain page, or one of a blob whose node the caller holds exclusively.
unsafe fn write_at(page: &RawPage, at: usize, bytes: &[u8]) {
    assert!(at + bytes.len() <= page.size(), "a write inside the page");
    // SAFETY: `at..at + len` lies inside the page (asserted), which stays mapped; the caller
    // excludes other writers, and the copy goes through raw pointers, forming no reference
    // over bytes an optimistic reader may read.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), page.addr().add(at), bytes.len()) };
}

impl TreeCore {
    /// Whether a blob of `len` bytes goes to the heap (else it is a chain).
    #[inline]
    pub(crate) fn in_heap(&self, len: usize) -> bool {
        self.config().blob_heap && heap::fits(len, self.config().page_size)
    }

    /// Writes the concatenation of `parts` out of line (a heap chunk if it fits a page, a
    /// chain of whole pages otherwise) and returns where, or fails with `OutOfSpace`
    /// (changing nothing) when the budget does not allow the pages it needs.
    pub(crate) fn write_bytes(&self, parts: &[&[u8]]) -> Result<Place, Error> {
        let size = self.config().page_size;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if self.in_heap(len) {
            let mut st = self.heap_lock();
            let (pid, slot) = self.heap_alloc(&mut st, parts)?;
            return Ok(Place::Chunk(pid, slot));
        }
        let ids = self
            .allocate(pages_for(len, size))
            .ok_or_else(|| self.out_of_space())?;
        // As in `heap_alloc`: earlier releases are ordered before the writes below.
        crate::sync::seam::fence(std::sync::atomic::Ordering::Release);
        let (mut part, mut at) = (0, 0);
        for (i, &pid) in ids.iter().enumerate() {
            let page = raw_page(self.directory(), size, pid).expect("an allocated page");
            let next = ids.get(i + 1).copied().unwrap_or(END);
            // SAFETY: the page was just allocated to this call and no stub names it yet: no
            // other thread writes it, and a stale reader of its previous life validates a
            // version that moved when it was freed.
            unsafe { write_at(&page, NEXT, &next.to_le_bytes()) };
            let mut off = DATA;
            while off < size && part < parts.len() {
                let n = (parts[part].len() - at).min(size - off);
                // SAFETY: as above.
                unsafe { write_at(&page, off, &parts[part][at..at + n]) };
                off += n;
                at += n;
                if at == parts[part].len() {
                    part += 1;
                    at = 0;
                }
            }
        }
        Ok(Place::Chain(ids[0]))
    }

    /// Writes `value` out of line and returns its stub (see [`write_bytes`](Self::write_bytes)).
    pub(crate) fn write_blob(&self, value: &[u8]) -> Result<Stub, Error> {
        Ok(Stub {
            at: self.write_bytes(&[value])?,
            len: value.len(),
        })
    }

    /// Overwrites the first `bytes.len()` bytes of the blob of `len` bytes at `at`. The
    /// caller owns the blob: it holds the exclusive latch of the leaf that names it (or the
    /// heap mutex, for a key blob's count).
    pub(crate) fn overwrite_bytes(&self, at: Place, len: usize, bytes: &[u8]) {
        assert!(bytes.len() <= len, "a write inside the blob");
        let size = self.config().page_size;
        match at {
            Place::Chunk(pid, slot) => self.heap_overwrite((pid, slot), len, bytes),
            Place::Chain(first) => walk(self.directory(), size, first, len, |_, page, done, n| {
                let end = bytes.len().min(done + n);
                if done < end {
                    // SAFETY: the caller owns the blob: no other thread writes it, and
                    // readers validate the version of the node that names it afterwards.
                    unsafe { write_at(&page, DATA, &bytes[done..end]) };
                }
                Ok(())
            })
            .expect("a blob of a latched leaf"),
        }
    }

    /// Overwrites the value `stub` names with `value`, of the same length. The caller holds
    /// the exclusive latch of the leaf that holds the stub.
    pub(crate) fn overwrite_blob(&self, stub: Stub, value: &[u8]) {
        assert_eq!(stub.len, value.len(), "an in-place write keeps the length");
        self.overwrite_bytes(stub.at, stub.len, value);
    }

    /// The value `stub` names, read by a thread that holds its leaf latched (or otherwise
    /// excludes writers).
    pub(crate) fn blob_value(&self, stub: Stub) -> Vec<u8> {
        crate::heap::settled(|| {
            let mut out = Vec::new();
            read(self.directory(), self.config().page_size, stub, &mut out).map(|()| out)
        })
    }

    /// The first `N` bytes of the blob of `len` bytes at `at`: bytes that no optimistic
    /// reader reads (a key blob's count), read under the heap mutex `st`.
    pub(crate) fn read_unread<const N: usize>(
        &self,
        st: &HeapState,
        at: Place,
        len: usize,
    ) -> [u8; N] {
        match at {
            Place::Chunk(pid, slot) => self.heap_bytes(st, (pid, slot), len),
            Place::Chain(first) => {
                assert!(
                    N <= len.min(payload(self.config().page_size)),
                    "bytes of the first page"
                );
                let page = raw_page(self.directory(), self.config().page_size, first)
                    .expect("a page of this tree");
                let mut b = [0u8; N];
                page.copy_to(DATA, &mut b).expect("a page of this tree");
                b
            }
        }
    }

    /// Writes `bytes` at the start of the blob of `len` bytes at `at`: bytes that no
    /// optimistic reader reads (a key blob's count), written under the heap mutex `st`.
    pub(crate) fn write_unread(&self, st: &mut HeapState, at: Place, len: usize, bytes: &[u8]) {
        match at {
            Place::Chunk(pid, slot) => self.heap_write_unread(st, (pid, slot), len, bytes),
            Place::Chain(_) => self.overwrite_bytes(at, len, bytes),
        }
    }

    /// Frees the blob of `len` bytes at `at`, which no node names any more (the caller
    /// removed its last stub under the node's latch, or owns the tree).
    pub(crate) fn free_bytes(&self, at: Place, len: usize) {
        match at {
            Place::Chunk(pid, slot) => {
                let mut st = self.heap_lock();
                self.heap_free(&mut st, (pid, slot));
            }
            Place::Chain(first) => {
                let ids = chain_pages(self.directory(), self.config().page_size, first, len)
                    .expect("a blob this thread owns");
                self.free_pages(&ids);
            }
        }
    }

    /// Frees the value blob `stub` names (see [`free_bytes`](Self::free_bytes)).
    pub(crate) fn free_blob(&self, stub: Stub) {
        self.free_bytes(stub.at, stub.len);
    }
}
