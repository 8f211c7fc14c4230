//! The lean point descents: the leaf that holds a key, reached by the same optimistic lock
//! coupling as the generic descent (`descent`), written out for that one target. Point
//! reads take [`TreeCore::point_leaf`] (a snapshot of the leaf; cursors also keep the
//! leaves' parent, [`LeafParent`], to cross to a sibling leaf without a descent); writers
//! take `TreeCore::point_leaf_enter`, which enters the leaf in the writer's access mode.

use super::descent::Access;
use super::TreeCore;
use crate::node::{Node, TABLE_LEVEL};
use crate::page::PageId;
use crate::sync::{reentry, OptimisticGuard, Restart};

/// The leaves' parent a point descent stepped from (see [`TreeCore::point_leaf_to`]): the
/// node, its snapshot and the position of the child the descent took.
pub(crate) struct LeafParent<'t> {
    pub node: Node,
    pub guard: OptimisticGuard<'t>,
    pub pos: usize,
}

/// Where [`TreeCore::point_leaf_to`] hands the leaves' parent: `()` drops it (point reads),
/// an `Option<LeafParent>` keeps it (cursors).
pub(crate) trait KeepParent<'t> {
    /// Whether the descent prefetches the leaf: point reads do, the whole leaf
    /// ([`Node::prefetch_leaf`]: their search's probes and the entry it ends at load
    /// together) or its head, as `Config::leaf_prefetch` says; cursors do not, since they
    /// copy the leaf's used bytes at once (`LeafCopy::load`), which loads those lines anyway
    /// and skips the free gap between slots and heap: 100-entry scans took 0.97-0.98x the
    /// time without the whole-leaf prefetch, 0.92-1.02x out of cache
    /// (`bench/results/cursor-prefetch-s64.txt`).
    const WHOLE_LEAF: bool;
    fn keep(&mut self, node: Node, guard: OptimisticGuard<'t>, pos: usize);
}

impl KeepParent<'_> for () {
    const WHOLE_LEAF: bool = true;
    #[inline(always)]
    fn keep(&mut self, _node: Node, _guard: OptimisticGuard<'_>, _pos: usize) {}
}

impl<'t> KeepParent<'t> for Option<LeafParent<'t>> {
    const WHOLE_LEAF: bool = false;
    #[inline(always)]
    fn keep(&mut self, node: Node, guard: OptimisticGuard<'t>, pos: usize) {
        *self = Some(LeafParent { node, guard, pos });
    }
}

impl TreeCore {
    /// The lean descent of point reads: the leaf whose range holds `key`, with its snapshot
    /// (the caller validates it after reading). The same protocol as [`descend`] in
    /// [`Optimistic`] mode, written out for one purpose: the root's search and the inner
    /// levels' search are separate inlined copies of [`Node::point_search`] (see there), a
    /// child's level is checked to be one below its parent's (so a torn read cannot loop),
    /// and the leaf is prefetched as soon as its page is known.
    ///
    /// [`descend`]: TreeCore::descend
    #[inline(always)]
    pub(crate) fn point_leaf(&self, key: &[u8]) -> Result<(Node, OptimisticGuard<'_>), Restart> {
        self.point_leaf_to(key, &mut ())
    }

    /// [`point_leaf`](Self::point_leaf), handing the leaves' parent it stepped from to
    /// `parent` (nothing where the leaf is a root), for [`sibling_leaf`](Self::sibling_leaf).
    #[inline(always)]
    pub(crate) fn point_leaf_to<'t, P: KeepParent<'t>>(
        &'t self,
        key: &[u8],
        parent: &mut P,
    ) -> Result<(Node, OptimisticGuard<'t>), Restart> {
        reentry::check(self.id());
        let meta = self.meta().optimistic();
        let (mut node, latch) = self.root_page();
        let mut guard = latch.optimistic();
        meta.validate()?;
        let mut level = node.level();
        if level == 0 {
            return Ok((node, guard));
        }
        let (mut pos, mut child) = node.point_child(key, self.directory())?;
        // Inner levels above the leaves' parents: the loop's trip count is the tree's height
        // less two, the same for every read, so its branch predicts. Each inner node's head
        // is prefetched as the leaf's is: +3-7% on `ycsb-c` at 4 * 10^6 records, one thread
        // (bench/results/prefetch-s49.txt).
        while level > 1 {
            let (next, latch) = self.page(child)?;
            next.prefetch_head();
            let next_guard = latch.optimistic();
            guard.validate()?;
            (node, guard) = (next, next_guard);
            level -= 1;
            if node.level() != level {
                // The child changed since its id was read, or the read was torn; or the
                // parent was a partition table (`crate::partition`), whose children are
                // roots of any height: then on at the partition root's level. Handled on
                // this branch, never taken in a tree without a table, so that such a tree
                // pays nothing for partitions.
                if level + 1 != TABLE_LEVEL {
                    return Err(Restart);
                }
                level = node.level();
                if level >= TABLE_LEVEL - 1 {
                    return Err(Restart);
                }
                if level == 0 {
                    return Ok((node, guard));
                }
            }
            (pos, child) = node.point_child(key, self.directory())?;
        }
        // The leaves' parent: the step to the leaf, peeled out of the loop so that the
        // leaf's prefetch is no branch of its own.
        let reached = self.step_to_leaf(child, &guard, P::WHOLE_LEAF);
        parent.keep(node, guard, pos);
        reached
    }

    /// The lean descent of point writes: [`point_leaf`](Self::point_leaf)'s walk over the
    /// inner levels, with the leaf entered in `access`'s mode as [`descend`] enters it
    /// (the parent validated before and after); the leaf's id, page and guard. `Ok(None)`
    /// in a multi-rooted tree whose partition table lies on the way: the caller takes
    /// [`descend`], which knows the table. Writers use it for their leaf: through the
    /// generic descent (its root prologue out of line, its route, access and parent
    /// records) `update_with` cost 1,085 instructions and `insert` 1,346; through this one
    /// (inlined into `exclusive_leaf`, itself inlined) 954 and 1,258 (callgrind, the ruler's
    /// 10^6 random keys).
    ///
    /// [`descend`]: TreeCore::descend
    #[inline(always)]
    pub(super) fn point_leaf_enter<'t, A: Access<'t>>(
        &'t self,
        key: &[u8],
        access: &A,
    ) -> Result<Option<(PageId, Node, A::Guard)>, Restart> {
        reentry::check(self.id());
        let meta = self.meta().optimistic();
        let pid = self.root_id();
        let (mut node, latch) = self.root_page();
        let mut guard = latch.optimistic();
        meta.validate()?;
        let mut level = node.level();
        if level == 0 {
            // A root leaf, entered as `descend` enters it (only the level was read).
            guard.validate_keys()?;
            let mut entered = access.enter(latch, &meta)?;
            if guard.slow_path() {
                A::waited(&mut entered);
            }
            if node.level() != 0 {
                return Err(Restart);
            }
            return Ok(Some((pid, node, entered)));
        }
        if level == TABLE_LEVEL {
            return Ok(None);
        }
        let mut child = node.point_child(key, self.directory())?.1;
        // The step is `point_leaf_to`'s, written out again: as a shared helper it cost
        // `get_with` 4 and `update_with` 13 instructions (callgrind).
        while level > 1 {
            let (next, latch) = self.page(child)?;
            next.prefetch_head();
            let next_guard = latch.optimistic();
            guard.validate()?;
            (node, guard) = (next, next_guard);
            level -= 1;
            if node.level() != level {
                // Changed since its id was read, or a torn read (no table here: checked at
                // the root, and a table is only ever the root).
                return Err(Restart);
            }
            child = node.point_child(key, self.directory())?.1;
        }
        let (leaf, latch) = self.page(child)?;
        // Readers and writers alike (see `descend`).
        leaf.prefetch_head();
        let entered = access.enter(latch, &guard)?;
        if leaf.level() != 0 {
            return Err(Restart);
        }
        Ok(Some((child, leaf, entered)))
    }

    /// The leaf beside the one that `parent` led to, under the same parent: its right
    /// neighbour (`forward`) or its left one, with its snapshot taken before the parent is
    /// validated again; `Ok(None)` when that leaf has no such neighbour under the parent.
    /// `Restart` if the parent changed since the descent that took its snapshot. The leaf
    /// is not prefetched: the cursor that steps copies it (see [`KeepParent::WHOLE_LEAF`]).
    ///
    /// A validated parent is unchanged since that descent, so the leaf it led to is still
    /// its child `pos`, and (an SMO latches parent and children together) that leaf's upper
    /// fence is still the parent's separator `pos`: its right neighbour holds the keys
    /// right above that fence, and its left neighbour those at and right below its lower
    /// fence. Scans cross to the next leaf this way without a descent from the root.
    #[inline]
    pub(crate) fn sibling_leaf(
        &self,
        parent: &LeafParent<'_>,
        forward: bool,
    ) -> Result<Option<(Node, OptimisticGuard<'_>, usize)>, Restart> {
        reentry::check(self.id());
        // `count` is clamped to the page, and a position past it reads the upper child: a
        // read under a race is memory-safe garbage that the validation below rejects.
        let pos = if forward {
            if parent.pos >= parent.node.count() {
                return Ok(None);
            }
            parent.pos + 1
        } else {
            match parent.pos.checked_sub(1) {
                Some(pos) => pos,
                None => return Ok(None),
            }
        };
        let (leaf, guard) = self.step_to_leaf(parent.node.child(pos)?, &parent.guard, false)?;
        Ok(Some((leaf, guard, pos)))
    }

    /// The step from a leaves' parent, read under `parent` (a node of the tree or its copy in
    /// a replica, `crate::numa`), to its child `child`: the leaf's snapshot, taken before
    /// `parent` is validated; `Restart` if the parent changed or the child is no leaf.
    /// `whole`: the leaf is prefetched first, whole or its head as the tree's
    /// `Config::leaf_prefetch` says (see [`KeepParent::WHOLE_LEAF`]).
    #[inline(always)]
    pub(crate) fn step_to_leaf(
        &self,
        child: PageId,
        parent: &OptimisticGuard<'_>,
        whole: bool,
    ) -> Result<(Node, OptimisticGuard<'_>), Restart> {
        let (leaf, latch) = self.page(child)?;
        if whole {
            if self.hot.whole_leaf {
                leaf.prefetch_leaf();
            } else {
                leaf.prefetch_head();
            }
        }
        let leaf_guard = latch.optimistic();
        parent.validate()?;
        if leaf.level() != 0 {
            return Err(Restart);
        }
        Ok((leaf, leaf_guard))
    }
}
