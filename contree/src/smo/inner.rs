//! The one place through which every change of an inner node passes: separators added by
//! splits and removed by merges, roots grown and collapsed, inner nodes split, merged and
//! rewritten by XMerge, cut by slices and re-fenced by melds (`crate::partition`). Each change bumps `Events::inner_changes` under the latch of the
//! node it changes (and the children whose ranges change, still latched); upper-level
//! replicas (NUMA) will hook here to follow the changes, and point reads' two phases
//! (`engine::phases`) read it as their structure sequence.
//!
//! Leaf changes of the same shapes (a leaf split or merge) go through the same functions and
//! are not counted.

use crate::engine::{RootSlot, TreeCore};
use crate::node::{Extra, Fence, NodeMut, Scratch};
use crate::page::PageId;
use crate::sync::ExclusiveGuard;

impl TreeCore {
    /// Bumps `Events::inner_changes`, which is also the structure sequence of point reads'
    /// two phases (`engine::phases`): always while the nodes whose ranges change are latched.
    fn inner_changed(&self) {
        self.structure_changed();
    }

    /// Adds separator `sep` (a key as nodes store it: the stored form of a long key) with
    /// left child `left` to the latched parent; the caller checked that it fits.
    pub(crate) fn add_separator(&self, parent: &mut NodeMut, sep: &[u8], left: PageId) {
        // The position is found by the whole key (the caller holds the node that names it).
        let key = crate::heap::settled(|| {
            let mut key = sep.to_vec();
            crate::long_key::expand(&mut key, self.directory()).map(|()| key)
        });
        let (pos, found) = crate::heap::settled(|| parent.lower_bound(&key, self.directory()));
        debug_assert!(!found);
        let ok = parent.insert_entry(pos, sep, &left.to_ne_bytes());
        assert!(ok, "separator must fit: checked before the split");
        self.inner_changed();
    }

    /// Removes the separator at `pos` of the latched parent (its left child was merged away).
    pub(crate) fn remove_separator(&self, parent: &mut NodeMut, pos: usize) {
        parent.remove_at(pos);
        self.inner_changed();
    }

    /// Formats the fresh page `root` (id `root_pid`) as a root over `left` and `right`
    /// separated by `sep`, with fences `lower` and `upper` (those of the root it replaces:
    /// none in a tree of one root, the partition's boundaries in a multi-rooted tree), and
    /// publishes it in `slot`, whose guard `slot_x` is held exclusively.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn grow_root(
        &self,
        slot: RootSlot,
        slot_x: &mut ExclusiveGuard,
        mut root: NodeMut,
        root_pid: PageId,
        level: u16,
        (lower, upper): (Fence, Fence),
        sep: &[u8],
        (left, right): (PageId, PageId),
    ) {
        root.init(level, lower, upper, &[]);
        let ok = root.insert_entry(0, sep, &left.to_ne_bytes());
        assert!(ok, "a fresh root holds one separator");
        root.set_upper_child(right);
        self.set_root_at(slot, slot_x, root_pid);
        self.inner_changed();
    }

    /// Replaces the latched, keyless inner root `root_pid` by its only child and frees it.
    /// The guard of its `slot` is held exclusively.
    pub(crate) fn collapse_root(
        &self,
        slot: RootSlot,
        slot_x: &mut ExclusiveGuard,
        root_pid: PageId,
        child: PageId,
    ) {
        self.set_root_at(slot, slot_x, child);
        self.free(root_pid);
        self.inner_changed();
    }

    /// Publishes `pid` as the root kept in `slot`, whose guard `slot_x` is held exclusively:
    /// the tree's root word, or a slot of the partition table.
    pub(crate) fn set_root_at(&self, slot: RootSlot, slot_x: &mut ExclusiveGuard, pid: PageId) {
        match slot {
            RootSlot::Meta => self.set_root(pid),
            RootSlot::Table(pos) => {
                let (table, _) = self.page(self.root_id()).expect("the table's page");
                NodeMut::new(table, slot_x).set_child(pos as usize, pid);
            }
        }
    }

    /// Splits the latched `node` at `sep_pos` into the fresh, latched `left`, under the
    /// separator `sep` (`node.split_separator(sep_pos)`).
    pub(crate) fn split_node(&self, node: &mut NodeMut, left: NodeMut, sep_pos: usize, sep: &[u8]) {
        let inner = !node.is_leaf();
        node.split(left, sep_pos, sep);
        if inner {
            self.inner_changed();
        }
    }

    /// Merges the latched `left` into its latched right neighbour `right`.
    pub(crate) fn merge_nodes(&self, right: &mut NodeMut, left: &crate::node::Node, sep: &[u8]) {
        right.merge_from_left(left, sep);
        if !right.is_leaf() {
            self.inner_changed();
        }
    }

    /// Cuts the latched `node` at `at` into the fresh, latched `left` (a slice of a
    /// multi-rooted tree, `crate::partition`; see [`NodeMut::slice`]).
    pub(crate) fn slice_node(
        &self,
        node: &mut NodeMut,
        left: NodeMut,
        ends: (usize, usize),
        at: &[u8],
        left_upper: PageId,
    ) {
        node.slice(left, ends, at, left_upper);
        if !node.is_leaf() {
            self.inner_changed();
        }
    }

    /// Rebuilds the latched inner `node` with new fences and `extra` (a meld of a
    /// multi-rooted tree; see [`NodeMut::rebuild`]).
    pub(crate) fn rebuild_node(
        &self,
        node: &mut NodeMut,
        lower: Fence,
        upper: Fence,
        extra: Extra,
    ) {
        node.rebuild(lower, upper, extra);
        self.inner_changed();
    }

    /// Overwrites the latched `node` with the node built in `scratch` (XMerge).
    pub(crate) fn rewrite_node(&self, node: &mut NodeMut, scratch: &mut Scratch) {
        scratch.copy_into(node);
        if !node.is_leaf() {
            self.inner_changed();
        }
    }
}
