//! Building nodes out of place: a page-sized [`Scratch`] buffer owned by one thread, and the
//! [`Builder`] that appends entries in key order into a freshly formatted node.

use super::{entry_space, head_of, raw::RawPage, Fence, Node, NodeMut, WriteCapability, SLOT};
use crate::page::PageId;

/// A page-sized buffer for rebuilding a node out of place. It belongs to the thread that
/// made it, so it is its own write capability.
pub(crate) struct Scratch {
    buf: Vec<u64>,
    size: usize,
}

impl WriteCapability for Scratch {
    fn covers(&self, addr: *mut u8) -> bool {
        self.buf.as_ptr() as *mut u8 == addr
    }
}

impl Scratch {
    pub(crate) fn new(size: usize) -> Scratch {
        Scratch {
            buf: vec![0u64; size / 8],
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

    /// Copies everything but the latch word into `dst`.
    pub(crate) fn copy_into(&mut self, dst: &mut NodeMut) {
        let src = self.node();
        dst.copy_heap_from(&src, 8, 8, self.size - 8);
    }
}

/// Writes entries in order into a freshly initialised node.
pub(crate) struct Builder<'g> {
    node: NodeMut<'g>,
    key: Vec<u8>,
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
            key: Vec::new(),
            count: 0,
            heap_top: node.heap_top(),
            heap_live: node.heap_live(),
            node,
        }
    }

    /// Reserves `heap_len` heap bytes and a slot for the next entry; returns the offset.
    fn reserve(&mut self, heap_len: usize) -> usize {
        assert!(
            super::HEADER + (self.count + 1) * SLOT + heap_len <= self.heap_top,
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
        self.node.write_entry(off, suffix, value);
        self.next_slot(head_of(suffix), off);
    }

    /// Appends entry `i` of `src` byte for byte (both nodes have the same prefix).
    fn append_verbatim(&mut self, src: &Node, i: usize) {
        let e = src.entry(i).expect("latched");
        let off = self.reserve(e.heap_len);
        // SAFETY: `entry(i)` succeeded, so slot `i` lies inside the page.
        let (src_off, head) = unsafe { (src.slot_offset(i), src.slot_head(i)) };
        self.node.copy_heap_from(src, src_off, off, e.heap_len);
        self.next_slot(head, off);
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
        let mut key = std::mem::take(&mut self.key);
        let mut value = Vec::new();
        for i in range {
            key.clear();
            if dst_plen == src_plen {
                // Same prefix (both are common prefixes of these keys): copy the bytes.
                self.append_verbatim(src, i);
                continue;
            }
            value.clear();
            src.push_value(i, &mut value).expect("latched");
            if dst_plen > src_plen {
                // Splits: the new suffix is the old one, shortened.
                src.push_suffix(i, &mut key).expect("latched");
                self.append(&key[dst_plen - src_plen..], &value);
            } else {
                src.push_key(i, &mut key).expect("latched");
                self.push(&key, &value);
            }
        }
        self.key = key;
    }

    /// Writes the header fields; `upper_child` is ignored by leaves (pass 0).
    pub(crate) fn finish(mut self, upper_child: PageId) {
        self.node.set_count(self.count);
        self.node.set_heap(self.heap_top, self.heap_live);
        self.node.set_upper_child(upper_child);
    }
}
