//! Write capabilities and the writable view of a page: [`NodeMut`] can only be made from a
//! [`WriteCapability`] (an exclusive latch guard of that very page, an [`OwnerToken`], or a
//! scratch buffer), so every page write in the node layer names the right it relies on.

use super::{Node, OFF_POLICY, OFF_UPPER_CHILD, POLICY_AREA};
use crate::page::PageId;
use crate::sync::ExclusiveGuard;
use std::marker::PhantomData;

/// What entitles its holder to write one page. Implemented by an exclusive latch guard of
/// that page, an [`OwnerToken`] and the node layer's own scratch buffers. A narrower right,
/// to the value bytes of one entry, is a `sync::lines::LineLock` ([`Node::value_in_lines`]);
/// segmented leaves will add a guard of one segment.
pub(crate) trait WriteCapability {
    /// Whether this capability covers the page at `addr`.
    fn covers(&self, addr: *mut u8) -> bool;
}

impl WriteCapability for ExclusiveGuard<'_> {
    #[inline]
    fn covers(&self, addr: *mut u8) -> bool {
        self.latch_addr() == addr as usize
    }
}

/// The right of a thread that owns a whole sub-tree (the partition executor of a
/// multi-rooted tree) to write its pages without latching them. No other thread reads or
/// writes pages of an owned sub-tree, so one token covers all of them.
#[derive(Debug)]
pub(crate) struct OwnerToken {
    _private: (),
}

impl OwnerToken {
    /// # Safety
    /// The caller guarantees that, while the token lives, no other thread reads or writes
    /// the pages it is used on.
    #[allow(dead_code)] // made by the partition executor (issue "Partitions") and tests
    pub(crate) unsafe fn new() -> OwnerToken {
        OwnerToken { _private: () }
    }
}

impl WriteCapability for OwnerToken {
    #[inline]
    fn covers(&self, _addr: *mut u8) -> bool {
        true
    }
}

/// A writable view of one page, borrowed from a write capability for `'g`.
#[derive(Debug)]
pub(crate) struct NodeMut<'g> {
    pub(super) node: Node,
    _cap: PhantomData<&'g mut ()>,
}

impl<'g> NodeMut<'g> {
    /// The writable view of `node` under `cap`. Panics if `cap` is a guard of another page
    /// (a programming error).
    #[inline]
    pub(crate) fn new(node: Node, cap: &'g mut impl WriteCapability) -> NodeMut<'g> {
        assert!(
            cap.covers(node.page.addr()),
            "a node write needs a capability for that very page"
        );
        NodeMut {
            node,
            _cap: PhantomData,
        }
    }

    /// The read view (a copy of the page handle).
    #[inline]
    pub(crate) fn node(&self) -> Node {
        self.node
    }

    /// The value bytes of entry `i` as the page stores them (the stub of an out-of-line
    /// value), writable.
    #[inline]
    pub(crate) fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let e = self.node.entry(i).expect("entry of a writable node");
        // SAFETY: the write capability `self` borrows excludes every other writer of the
        // page, optimistic readers form no references over page bytes, and `&mut self`
        // makes this the only borrow.
        unsafe { self.node.page.slice_mut(e.value_off, e.value_len) }
    }

    /// [`value_mut`](Self::value_mut) of an inline value that a search under this
    /// capability located (its [`ValueHint`](super::ValueHint), exact here: no other thread
    /// writes the page); without a hint, as `value_mut`.
    #[inline]
    pub(crate) fn value_mut_hinted(&mut self, i: usize, hint: super::ValueHint) -> &mut [u8] {
        match hint.get() {
            Some((off, len)) => self.bytes_mut(off, len),
            None => self.value_mut(i),
        }
    }

    #[inline]
    pub(super) fn bytes_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        // SAFETY: the write capability excludes other writers and optimistic readers never
        // form references over page bytes; the borrow ends with `&mut self`.
        unsafe { self.node.page.slice_mut(off, len) }
    }

    #[inline]
    pub(super) fn write_u16(&mut self, off: usize, v: u16) {
        self.bytes_mut(off, 2).copy_from_slice(&v.to_ne_bytes());
    }

    #[inline]
    pub(super) fn write_u32(&mut self, off: usize, v: u32) {
        self.bytes_mut(off, 4).copy_from_slice(&v.to_ne_bytes());
    }

    pub(crate) fn set_upper_child(&mut self, pid: PageId) {
        self.write_u32(OFF_UPPER_CHILD, pid);
    }

    /// Overwrites the policy area (see `policy`).
    #[inline]
    pub(crate) fn set_policy_area(&mut self, area: [u8; POLICY_AREA]) {
        self.bytes_mut(OFF_POLICY, POLICY_AREA)
            .copy_from_slice(&area);
    }
}

impl std::ops::Deref for NodeMut<'_> {
    type Target = Node;
    #[inline]
    fn deref(&self) -> &Node {
        &self.node
    }
}
