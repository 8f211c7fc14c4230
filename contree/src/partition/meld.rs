//! [`PartitionedTree::meld`]: two neighbouring partitions joined into one (PLP, appendix
//! A.3.1) without moving their entries. Roots of the same height are merged into one node
//! where they fit, else put under a new root; a shorter partition's root becomes the outer
//! child of the node one level above it on the taller partition's inner edge, and the nodes
//! of that edge up to its root take the joined partition's outer fence. Pages written: the
//! edge of the taller partition (or the two roots) and the table.

use super::PartitionedTree;
use crate::engine::{RootSlot, TreeCore};
use crate::error::Error;
use crate::node::{Extra, Node, NodeMut};
use crate::smo::Spare;
use crate::sync::{ExclusiveGuard, Restart};
use std::cmp::Ordering;

/// How one attempt at a meld ended.
enum Melded {
    Done,
    /// The key is no boundary.
    NoBoundary,
    /// The node at `level` on the edge of the left (`right: false`) or right partition has
    /// no room for the joined fences or the new child: split it first.
    NodeFull {
        level: u16,
        right: bool,
    },
    OutOfSpace,
}

impl PartitionedTree {
    /// Joins the two partitions that meet at boundary `at` into one, which holds the keys
    /// of both; `at` is no boundary afterwards. Only the pages of one partition's inner
    /// edge (as many as the partitions' heights differ, at least one) and the table change:
    /// no entry is copied. Concurrent operations of every kind stay correct.
    ///
    /// Errors, with the tree unchanged: [`Error::NoSuchBoundary`] if `at` is not a
    /// boundary; [`Error::OutOfSpace`] when the memory budget refuses the one page a meld
    /// may take (a new root over two full roots).
    ///
    /// ```
    /// use contree::{Error, PartitionedTree};
    /// let tree = PartitionedTree::new();
    /// tree.slice(b"f").unwrap();
    /// tree.slice(b"m").unwrap();
    /// assert!(matches!(tree.meld(b"g"), Err(Error::NoSuchBoundary { .. })));
    /// tree.meld(b"f").unwrap();
    /// assert_eq!(tree.boundaries(), vec![b"m".to_vec()]);
    /// ```
    pub fn meld(&self, at: &[u8]) -> Result<(), Error> {
        let core = &*self.core;
        let mut above = at.to_vec();
        above.push(0);
        // An edge node too full for the joined fences is split first (bounded: its halves
        // have room).
        for _ in 0..16 {
            match core.retry(|| core.meld_attempt(at)) {
                Melded::Done => return Ok(()),
                Melded::NoBoundary => return Err(Error::NoSuchBoundary { key: at.to_vec() }),
                Melded::NodeFull { level, right } => {
                    core.split_for(if right { &above } else { at }, level, false, 0, 0)?
                }
                Melded::OutOfSpace => return Err(core.out_of_space()),
            }
        }
        Err(core.out_of_space())
    }
}

impl TreeCore {
    fn meld_attempt(&self, at: &[u8]) -> Result<Melded, Restart> {
        let ((table, table_guard), tpos, found) = self.table_position(at)?;
        if !found {
            table_guard.validate()?;
            return Ok(Melded::NoBoundary);
        }
        let (lpid, rpid) = (table.child(tpos)?, table.child(tpos + 1)?);
        let (lnode, llatch) = self.page(lpid)?;
        let lguard = llatch.optimistic();
        let (rnode, rlatch) = self.page(rpid)?;
        let rguard = rlatch.optimistic();
        table_guard.validate()?;
        let (hl, hr) = (lnode.level(), rnode.level());
        let mut spare = Spare::take(self, usize::from(hl == hr));
        // Top-down: the table, then the two roots at the versions read.
        let mut tx = table_guard.upgrade_exclusive()?;
        let lx = lguard.upgrade_exclusive()?;
        let mut rx = rguard.upgrade_exclusive()?;
        let lower = lnode.lower_fence()?;
        let upper = rnode.upper_fence()?;
        let size = lnode.page_size();
        let pages = match hl.cmp(&hr) {
            Ordering::Equal if Node::merged_space(&lnode, &rnode, at)? <= size => {
                // One root: the right one takes the left one's keys (it keeps its page).
                self.merge_nodes(&mut NodeMut::new(rnode, &mut rx), &lnode, at);
                self.remove_separator(&mut NodeMut::new(table, &mut tx), tpos);
                self.free(lpid);
                drop(lx);
                2
            }
            Ordering::Equal => {
                let Some(fresh) = spare.use_or_allocate() else {
                    return Ok(Melded::OutOfSpace);
                };
                // Over both, in the slot the right one leaves (`grow_root` publishes it).
                let (root, root_latch) = self.page(fresh[0])?;
                let mut x = root_latch.exclusive();
                self.remove_separator(&mut NodeMut::new(table, &mut tx), tpos);
                self.grow_root(
                    RootSlot::Table(tpos as u32),
                    &mut tx,
                    NodeMut::new(root, &mut x),
                    fresh[0],
                    hl + 1,
                    (lower.as_deref(), upper.as_deref()),
                    at,
                    (lpid, rpid),
                );
                1
            }
            Ordering::Less => {
                // The left partition goes under the right one's left edge.
                let mut edge = self.latch_edge((rnode, rx), hl + 1, false)?;
                let outer = |n: &Node| Ok((lower.clone(), n.upper_fence()?));
                if let Some(level) = self.refence_edge(&mut edge, outer, Extra::First(at, lpid))? {
                    return Ok(Melded::NodeFull { level, right: true });
                }
                self.remove_separator(&mut NodeMut::new(table, &mut tx), tpos);
                edge.len()
            }
            Ordering::Greater => {
                // The right partition goes under the left one's right edge.
                let mut edge = self.latch_edge((lnode, lx), hr + 1, true)?;
                let outer = |n: &Node| Ok((n.lower_fence()?, upper.clone()));
                if let Some(level) = self.refence_edge(&mut edge, outer, Extra::Last(at, rpid))? {
                    return Ok(Melded::NodeFull {
                        level,
                        right: false,
                    });
                }
                self.remove_separator(&mut NodeMut::new(table, &mut tx), tpos);
                self.set_root_at(RootSlot::Table(tpos as u32), &mut tx, lpid);
                edge.len()
            }
        };
        self.repartitioned(false, pages + 1);
        Ok(Melded::Done)
    }

    /// The inner edge of a partition from its latched root down to the node at `level`:
    /// the rightmost nodes (`rightmost`) or the leftmost, each latched exclusively while its
    /// parent is held.
    fn latch_edge<'t>(
        &'t self,
        root: (Node, ExclusiveGuard<'t>),
        level: u16,
        rightmost: bool,
    ) -> Result<Vec<(Node, ExclusiveGuard<'t>)>, Restart> {
        let mut edge = vec![root];
        loop {
            let node = edge.last().expect("the root").0;
            if node.level() <= level {
                break;
            }
            let child = if rightmost {
                node.upper_child()
            } else {
                node.child(0)?
            };
            let (child, latch) = self.page(child)?;
            edge.push((child, latch.exclusive()));
        }
        Ok(edge)
    }

    /// Rebuilds every node of `edge` with the fences `outer` gives it, the last one with
    /// `extra` too; `Some(level)` (and nothing written) if the node at `level` would not fit.
    #[allow(clippy::type_complexity)]
    fn refence_edge(
        &self,
        edge: &mut [(Node, ExclusiveGuard)],
        outer: impl Fn(&Node) -> Result<(Option<Vec<u8>>, Option<Vec<u8>>), Restart>,
        extra: Extra,
    ) -> Result<Option<u16>, Restart> {
        let last = edge.len() - 1;
        let mut plans = Vec::with_capacity(edge.len());
        for (i, (node, _)) in edge.iter().enumerate() {
            let (lo, hi) = outer(node)?;
            let extra = if i == last { extra } else { Extra::None };
            if node.rebuilt_size(lo.as_deref(), hi.as_deref(), extra)? > node.page_size() {
                return Ok(Some(node.level()));
            }
            plans.push((lo, hi, extra));
        }
        for ((node, x), (lo, hi, extra)) in edge.iter_mut().zip(plans) {
            self.rebuild_node(
                &mut NodeMut::new(*node, x),
                lo.as_deref(),
                hi.as_deref(),
                extra,
            );
        }
        Ok(None)
    }
}
