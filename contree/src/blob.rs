//! Out-of-line values: a value longer than a page may hold inline
//! ([`Config::max_inline_value_len`](crate::Config::max_inline_value_len)) lives in a chain
//! of blob pages from the tree's page pool, and its leaf entry holds a [`Stub`] (its length
//! and first page), flagged in the entry's length header (see `node`).
//!
//! ```text
//! blob page: 0 latch word (never touched here)   8 next page id u32 (LE)   12 zero
//!            16 .. page_size: value bytes (the last page holds the remainder)
//! ```
//!
//! **Ownership.** A blob belongs to the one stub that names it. Blob pages are written
//! before the stub is published (under the leaf's exclusive latch); they change afterwards
//! only under that latch (`update_with` writes a value back in place), and they are freed
//! only after the stub left its leaf under that latch (removal, replacement). Splits, merges
//! and XMerge move stubs between leaves and never touch blob pages. Blob pages count in the
//! memory budget and in `Stats::bytes_in_use` like nodes.
//!
//! **Optimistic readers.** A reader copies a stub out of a leaf, copies the blob's bytes
//! ([`read`]) and then validates the *leaf's* version: if the stub was removed or replaced
//! meanwhile (and its pages freed, even reused), the leaf's version moved and the read
//! restarts. Pages stay mapped while the pool lives, every page id read from a stub or a
//! blob page goes through the directory's checked translation, a length above
//! [`MAX_VALUE_LEN`] restarts at once, and the walk of a chain takes exactly as many steps as
//! the length needs, so garbage read under a writer is memory-safe and terminates. The latch
//! word of a blob page is never written, so a stale reader of the page's previous life as a
//! node still sees its version move.

use crate::engine::TreeCore;
use crate::error::Error;
use crate::node::raw::RawPage;
use crate::page::{Directory, PageId};
use crate::sync::Restart;

/// The longest value a tree accepts, whatever its page size: 16 MiB.
pub const MAX_VALUE_LEN: usize = 16 << 20;

/// Bytes of a stub in its leaf entry.
pub(crate) const STUB_LEN: usize = 8;
/// Offset of the next page id in a blob page.
const NEXT: usize = 8;
/// Offset of the value bytes in a blob page.
const DATA: usize = 16;
/// The next page id of a chain's last page.
const END: PageId = PageId::MAX;

/// What a leaf entry holds for an out-of-line value: its length and its first blob page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stub {
    pub len: usize,
    pub first: PageId,
}

impl Stub {
    /// The stub's bytes in a leaf entry: length and first page id, little-endian.
    pub(crate) fn encode(&self) -> [u8; STUB_LEN] {
        let mut b = [0u8; STUB_LEN];
        b[..4].copy_from_slice(&(self.len as u32).to_le_bytes());
        b[4..].copy_from_slice(&self.first.to_le_bytes());
        b
    }

    /// The stub encoded in `b` (any bytes decode; [`read`] checks what it uses).
    pub(crate) fn decode(b: [u8; STUB_LEN]) -> Stub {
        Stub {
            len: u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
            first: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// Value bytes one blob page of a `page_size` page holds.
#[inline]
fn payload(page_size: usize) -> usize {
    page_size - DATA
}

/// Blob pages a value of `len` bytes takes.
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

/// Calls `f` with each page of the blob `stub` names and the bytes of the value it holds
/// (`offset in the value, length`), in order; exactly as many pages as the length needs.
fn walk(
    dir: &Directory,
    page_size: usize,
    stub: Stub,
    mut f: impl FnMut(PageId, RawPage, usize, usize) -> Result<(), Restart>,
) -> Result<(), Restart> {
    if stub.len > MAX_VALUE_LEN {
        return Err(Restart);
    }
    let mut pid = stub.first;
    let mut done = 0;
    while done < stub.len {
        let page = raw_page(dir, page_size, pid)?;
        let n = (stub.len - done).min(payload(page_size));
        f(pid, page, done, n)?;
        done += n;
        if done < stub.len {
            pid = next_of(&page)?;
        }
    }
    Ok(())
}

/// Appends the value `stub` names to `out`. Optimistic: the bytes are garbage (and the
/// call may restart, leaving part of them appended) unless the leaf the stub was read from
/// validates afterwards.
pub(crate) fn read(
    dir: &Directory,
    page_size: usize,
    stub: Stub,
    out: &mut Vec<u8>,
) -> Result<(), Restart> {
    if stub.len > MAX_VALUE_LEN {
        return Err(Restart);
    }
    out.reserve(stub.len);
    walk(dir, page_size, stub, |_, page, _, n| {
        page.append_to(DATA, n, out)
    })
}

/// The pages of the blob `stub` names, in chain order (for frees and the structural check).
pub(crate) fn pages_of(
    dir: &Directory,
    page_size: usize,
    stub: Stub,
) -> Result<Vec<PageId>, Restart> {
    let mut ids = Vec::with_capacity(pages_for(stub.len.min(MAX_VALUE_LEN), page_size));
    walk(dir, page_size, stub, |pid, _, _, _| {
        ids.push(pid);
        Ok(())
    })?;
    Ok(ids)
}

/// Writes `value` into the page `page` at `DATA`, and `next` into its link.
///
/// # Safety
/// No other thread writes the page, and no thread reads it except optimistically (through
/// `RawPage`, forming no reference), validating afterwards a version that this write's owner
/// moves: a fresh blob page, or one of a blob whose leaf the caller holds exclusively.
unsafe fn write_page(page: &RawPage, next: PageId, value: &[u8]) {
    debug_assert!(DATA + value.len() <= page.size());
    let mut head = [0u8; DATA - NEXT];
    head[..4].copy_from_slice(&next.to_le_bytes());
    // SAFETY: `NEXT..DATA + value.len()` lies inside the page (a chunk is at most the
    // payload), which stays mapped; the caller excludes other writers, and the copies go
    // through raw pointers, forming no reference over bytes an optimistic reader may read.
    unsafe {
        std::ptr::copy_nonoverlapping(head.as_ptr(), page.addr().add(NEXT), head.len());
        std::ptr::copy_nonoverlapping(value.as_ptr(), page.addr().add(DATA), value.len());
    }
}

impl TreeCore {
    /// Writes `value` into fresh blob pages and returns its stub, or fails with
    /// `OutOfSpace` (taking no page) when the budget does not allow them.
    pub(crate) fn write_blob(&self, value: &[u8]) -> Result<Stub, Error> {
        let size = self.config().page_size;
        let ids = self
            .allocate(pages_for(value.len(), size))
            .ok_or_else(|| self.out_of_space())?;
        for (i, chunk) in value.chunks(payload(size)).enumerate() {
            let page = raw_page(self.directory(), size, ids[i]).expect("an allocated page");
            let next = ids.get(i + 1).copied().unwrap_or(END);
            // SAFETY: the page was just allocated to this call and no stub names it yet: no
            // other thread writes it, and a stale reader of its previous life validates a
            // version that moved when it was freed.
            unsafe { write_page(&page, next, chunk) };
        }
        Ok(Stub {
            len: value.len(),
            first: ids[0],
        })
    }

    /// Overwrites the value `stub` names with `value`, of the same length. The caller holds
    /// the exclusive latch of the leaf that holds the stub.
    pub(crate) fn overwrite_blob(&self, stub: Stub, value: &[u8]) {
        assert_eq!(stub.len, value.len(), "an in-place write keeps the length");
        let size = self.config().page_size;
        walk(self.directory(), size, stub, |_, page, at, n| {
            let next = next_of(&page)?;
            // SAFETY: the caller holds the exclusive latch of the stub's leaf: no other
            // thread writes the blob, and readers validate that leaf's version afterwards.
            unsafe { write_page(&page, next, &value[at..at + n]) };
            Ok(())
        })
        .expect("a blob of a latched leaf");
    }

    /// The value `stub` names, read by a thread that holds its leaf latched (or otherwise
    /// excludes writers).
    pub(crate) fn blob_value(&self, stub: Stub) -> Vec<u8> {
        let mut out = Vec::new();
        read(self.directory(), self.config().page_size, stub, &mut out)
            .expect("a blob of a latched leaf");
        out
    }

    /// The raw view of blob page `pid`, which this tree holds.
    pub(crate) fn blob_page(&self, pid: PageId) -> RawPage {
        raw_page(self.directory(), self.config().page_size, pid).expect("a page of this tree")
    }

    /// The pages of the chain that starts at `first`, followed to its end marker (at most
    /// the pages of a [`MAX_KEY_LEN`](crate::long_key::MAX_KEY_LEN) key: a key blob's length
    /// is in its stored forms, not in the chain). The caller owns the chain.
    pub(crate) fn chain_of(&self, first: PageId, page_size: usize) -> Vec<PageId> {
        let max = pages_for(crate::long_key::MAX_KEY_LEN, page_size);
        let mut ids = vec![first];
        let mut page = self.blob_page(first);
        while ids.len() < max {
            let next = next_of(&page).expect("a page of this tree");
            if next == END {
                break;
            }
            ids.push(next);
            page = self.blob_page(next);
        }
        ids
    }

    /// Frees the pages of the blob `stub` names. The stub is in no leaf any more (the
    /// caller removed it under the leaf's latch, or owns the tree).
    pub(crate) fn free_blob(&self, stub: Stub) {
        let ids = pages_of(self.directory(), self.config().page_size, stub)
            .expect("a blob this thread owns");
        self.free_pages(&ids);
    }
}
