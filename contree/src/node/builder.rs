//! Building nodes out of place: a page-sized [`Scratch`] buffer owned by one thread, and the
//! [`Builder`] that appends entries in key order into a freshly formatted node.

use super::{
    entry_space, head_of, raw::RawPage, Fence, Node, NodeMut, WriteCapability, HEADER, SLOT,
};
use crate::page::PageId;

/// A page-sized buffer for rebuilding a node out of place. It belongs to the thread that
/// made it, so it is its own write capability.
///
/// The buffer comes from the thread's spare page buffers (`pagebuf`) and goes back there when
/// the scratch page is dropped, so a split or a compaction neither allocates nor zeroes
/// 4 KiB. Its bytes are then what their last user left there; a rebuild formats the header
/// and writes every slot and heap byte before it reads them, and
/// [`copy_into`](Scratch::copy_into) copies only those parts.
pub(crate) struct Scratch {
    buf: Vec<u64>,
    size: usize,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        super::pagebuf::give(std::mem::take(&mut self.buf));
    }
}

impl WriteCapability for Scratch {
    fn covers(&self, addr: *mut u8) -> bool {
        self.buf.as_ptr() as *mut u8 == addr
    }
}

impl Scratch {
    pub(crate) fn new(size: usize) -> Scratch {
        Scratch {
            buf: super::pagebuf::take(size),
            size,
        }
    }

    /// The read view of the buffer.
    pub(crate) fn node(&mut self) -> Node {
        // SAFETY: the buffer holds `size` bytes and lives as long as `self`; views of it
        // are only used while `self` lives (they are made for one rebuild at a time).
        Node::new(unsafe { RawPage::new(self.buf.as_mut_ptr() as *mut u8, self.size) })
    }

    /// The buffer as a writable node.
    pub(crate) fn node_mut(&mut self) -> NodeMut<'_> {
        let node = self.node();
        NodeMut::new(node, self)
    }

    pub(crate) fn builder(
        &mut self,
        level: u16,
        lower: Fence,
        upper: Fence,
        prefix: &[u8],
    ) -> Builder<'_> {
        Builder::new(self.node_mut(), level, lower, upper, prefix)
    }

    /// Copies the node built here into `dst`: the header without the latch word, the
    /// slots and the heap (the free space between slots and heap is not copied).
    pub(crate) fn copy_into(&mut self, dst: &mut NodeMut) {
        let src = self.node();
        let slots_end = HEADER + src.count() * SLOT;
        let heap_top = src.heap_top();
        assert!(
            slots_end <= heap_top && heap_top <= self.size,
            "a scratch node overlaps its slots and heap"
        );
        dst.copy_heap_from(&src, 8, 8, slots_end - 8);
        dst.copy_heap_from(&src, heap_top, heap_top, self.size - heap_top);
    }
}

/// Writes entries in order into a freshly initialised node.
pub(crate) struct Builder<'g> {
    node: NodeMut<'g>,
    /// A reusable buffer for re-encoded suffixes.
    buf: Vec<u8>,
    /// Header fields kept here while entries are appended, written by `finish`.
    count: usize,
    heap_top: usize,
    heap_live: usize,
}

impl<'g> Builder<'g> {
    /// Formats `node` and starts appending to it.
    pub(crate) fn new(
        mut node: NodeMut<'g>,
        level: u16,
        lower: Fence,
        upper: Fence,
        prefix: &[u8],
    ) -> Builder<'g> {
        node.init(level, lower, upper, prefix);
        Builder {
            buf: Vec::new(),
            count: 0,
            heap_top: node.heap_top(),
            heap_live: node.heap_live(),
            node,
        }
    }

    /// Reserves `heap_len` heap bytes and a slot for the next entry; returns the offset.
    fn reserve(&mut self, heap_len: usize) -> usize {
        assert!(
            HEADER + (self.count + 1) * SLOT + heap_len <= self.heap_top,
            "rebuilt node overflows its page"
        );
        self.heap_top -= heap_len;
        self.heap_live += heap_len;
        self.heap_top
    }

    fn next_slot(&mut self, head: u32, off: usize) {
        self.node.write_slot(self.count, head, off);
        self.count += 1;
    }

    /// Appends an entry whose key without the node prefix is `suffix`.
    fn append(&mut self, suffix: &[u8], value: &[u8]) {
        let off = self.reserve(entry_space(suffix.len(), value.len()) - SLOT);
        self.node.write_entry(off, suffix, value, false);
        self.next_slot(head_of(suffix), off);
    }

    /// Appends entries `range` of `src` byte for byte (both nodes have the same prefix): the
    /// common case of splits. One pass over the slots with the header fields in locals and
    /// two bounds checks per entry (its bytes lie inside `src`, and they fit above the
    /// slots here) instead of a full entry decode, checked views and a checked copy.
    fn copy_verbatim(&mut self, src: &Node, range: std::ops::Range<usize>) {
        let page = src.raw();
        let dst = self.node.raw();
        assert!(
            page.addr() != dst.addr(),
            "a heap copy between two distinct pages"
        );
        assert!(
            range.start <= range.end && HEADER + range.end * SLOT <= page.size(),
            "entries of a readable node"
        );
        let (mut top, mut live, mut count) = (self.heap_top, self.heap_live, self.count);
        for i in range {
            // SAFETY: slot `i` ends inside the page (`range.end` checked above).
            let (head, off) = unsafe { (src.slot_head(i), src.slot_offset(i)) };
            let len = src.heap_len_at(off).expect("entry of a readable node");
            assert!(
                HEADER + (count + 1) * SLOT + len <= top,
                "rebuilt node overflows its page"
            );
            top -= len;
            live += len;
            // SAFETY: `heap_len_at` checked that `off..off + len` lies inside `src`; the
            // destination `top..top + len` lies between this node's slots and its old heap
            // top (asserted), inside its page, which this builder may write (`self.node` is
            // a write capability's view) and which is not `src` (asserted). No reference
            // over either page's bytes is formed.
            unsafe {
                page.copy_to_ptr(off, len, dst.addr().add(top))
                    .expect("checked above");
                let slot = dst.addr().add(HEADER + count * SLOT);
                std::ptr::write_unaligned(slot as *mut [u8; 4], head.to_ne_bytes());
                std::ptr::write_unaligned(slot.add(4) as *mut [u8; 2], (top as u16).to_ne_bytes());
            }
            count += 1;
        }
        (self.heap_top, self.heap_live, self.count) = (top, live, count);
    }

    /// Appends `key`/`value`; `key` must start with the node prefix.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        let plen = self.node.prefix_len();
        assert!(key.len() >= plen, "rebuilt key lacks the node prefix");
        self.append(&key[plen..], value);
    }

    /// Appends entries `range` of `src`, re-encoded under this node's prefix.
    pub(crate) fn copy_range(&mut self, src: &Node, range: std::ops::Range<usize>) {
        let src_plen = src.prefix_len();
        let dst_plen = self.node.prefix_len();
        if dst_plen == src_plen {
            // Same prefix (both are common prefixes of these keys): copy the bytes.
            self.copy_verbatim(src, range);
        } else if dst_plen > src_plen {
            // Splits: the new suffix is the old one, shortened.
            for i in range {
                self.append_shortened(src, i, dst_plen - src_plen);
            }
        } else {
            // Merges: the new suffix is the old one behind part of the old prefix.
            let prefix = src.prefix().expect("latched");
            let mut lead = std::mem::take(&mut self.buf);
            for i in range {
                self.append_lengthened(src, i, &prefix[dst_plen..], &mut lead);
            }
            self.buf = lead;
        }
    }

    /// Appends entry `i` of `src` behind `moved`, the part of `src`'s prefix that this
    /// node's shorter prefix lacks. `lead` is a reusable buffer.
    fn append_lengthened(&mut self, src: &Node, i: usize, moved: &[u8], lead: &mut Vec<u8>) {
        let e = src.entry(i).expect("latched");
        // SAFETY: `entry(i)` succeeded, so slot `i` lies inside the page.
        let old_head = unsafe { src.slot_head(i) }.to_be_bytes();
        // The new suffix is `moved`, the old head bytes, then the old rest; the old rest is
        // empty unless the old head is whole, so the new head comes from `lead` alone.
        lead.clear();
        lead.extend_from_slice(moved);
        lead.extend_from_slice(&old_head[..e.suffix_len.min(4)]);
        let old_rest = e.suffix_len.saturating_sub(4);
        let sl = lead.len() + old_rest;
        let off = self.reserve(e.space(sl) - SLOT);
        let mut w = off + self.node.write_lens(off, sl, e.value_len, e.stub);
        let lead_rest = &lead[lead.len().min(4)..];
        self.node
            .bytes_mut(w, lead_rest.len())
            .copy_from_slice(lead_rest);
        w += lead_rest.len();
        self.node.copy_heap_from(src, e.rest_off, w, old_rest);
        self.node
            .copy_heap_from(src, e.value_off, w + old_rest, e.value_len);
        self.next_slot(head_of(lead), off);
    }

    /// Appends entry `i` of `src` without the first `cut` bytes of its suffix (they are
    /// part of this node's longer prefix); the rest of the suffix and the value are copied
    /// page to page.
    fn append_shortened(&mut self, src: &Node, i: usize, cut: usize) {
        let e = src.entry(i).expect("latched");
        assert!(cut <= e.suffix_len, "rebuilt key lacks the node prefix");
        let sl = e.suffix_len - cut;
        // The new head: old suffix bytes `cut..cut + 4` (zeros past the suffix's end).
        let head = if cut < 4 {
            // From the old suffix's first eight bytes as a word: the old head (zero-padded
            // as heads are), then the first bytes of the old rest.
            // SAFETY: `entry(i)` succeeded, so slot `i` lies inside the page.
            let old_head = unsafe { src.slot_head(i) };
            let mut rest = [0u8; 4];
            let n = e.suffix_len.saturating_sub(4).min(4);
            src.raw()
                .copy_to(e.rest_off, &mut rest[..n])
                .expect("latched");
            let word = (old_head as u64) << 32 | u32::from_be_bytes(rest) as u64;
            ((word << (8 * cut)) >> 32) as u32
        } else {
            let mut head = [0u8; 4];
            src.raw()
                .copy_to(e.rest_off + cut - 4, &mut head[..sl.min(4)])
                .expect("latched");
            u32::from_be_bytes(head)
        };
        let off = self.reserve(e.space(sl) - SLOT);
        let h = self.node.write_lens(off, sl, e.value_len, e.stub);
        // The new rest is the old rest without its first `cut` bytes; the value follows it
        // in both pages, so one copy moves both.
        let rest = sl.saturating_sub(4);
        let from = if rest > 0 {
            e.rest_off + cut
        } else {
            e.value_off
        };
        self.node
            .copy_heap_from(src, from, off + h, rest + e.value_len);
        self.next_slot(head, off);
    }

    /// Writes the header fields; `upper_child` is ignored by leaves (pass 0).
    pub(crate) fn finish(mut self, upper_child: PageId) {
        self.node.set_count(self.count);
        self.node.set_heap(self.heap_top, self.heap_live);
        self.node.set_upper_child(upper_child);
    }
}
