//! [`PartitionedTree::slice`]: one partition cut in two along the path to a key (PLP,
//! appendix A.3.2). Every node on the path is cut at the key: the part up to it goes to a
//! fresh page, the rest stays in place (so the right-hand sub-tree keeps its pages, the
//! rightmost leaf included), and the fresh pages form the new left partition, whose root
//! the table receives under the new boundary. Pages written: two per level and the table.

use super::PartitionedTree;
use crate::engine::TreeCore;
use crate::error::Error;
use crate::node::{inline_key_max, Node, NodeMut, TABLE_LEVEL};
use crate::page::PageId;
use crate::smo::Spare;
use crate::sync::{ExclusiveGuard, OptimisticGuard, Restart};

/// How one attempt at a slice ended.
enum Sliced {
    Done {
        height: u16,
    },
    /// The key is a boundary already.
    Exists,
    /// The table has no room for another boundary.
    TableFull(usize),
    /// A part of the node at this level would not fit in a page: split it first.
    NodeFull(u16),
    OutOfSpace,
}

/// A node on the path, with its snapshot.
struct Step<'t> {
    node: Node,
    guard: OptimisticGuard<'t>,
}

impl PartitionedTree {
    /// Cuts the partition that holds `at` in two: the keys up to and including `at` form a
    /// new partition, the keys above it stay in the old one, and `at` becomes a boundary.
    /// Only the pages on the path to `at` change (two per level, and the table): no entry
    /// is copied to another page, whatever the partition holds. Concurrent operations of
    /// every kind stay correct.
    ///
    /// Errors, with the tree unchanged: [`Error::BoundaryExists`] if `at` is a boundary
    /// already; [`Error::KeyTooLarge`] if `at` is longer than a sixteenth of the page size
    /// (boundaries are stored whole in every node on the path and in the table);
    /// [`Error::TooManyPartitions`] when the table page holds no more boundaries;
    /// [`Error::OutOfSpace`] when the memory budget refuses the pages.
    ///
    /// ```
    /// use contree::{Error, PartitionedTree};
    /// let tree = PartitionedTree::new();
    /// tree.insert(b"apple", b"1").unwrap();
    /// tree.insert(b"pear", b"2").unwrap();
    /// tree.slice(b"m").unwrap();
    /// assert_eq!(tree.partitions(), 2);
    /// assert!(matches!(tree.slice(b"m"), Err(Error::BoundaryExists { .. })));
    /// assert_eq!(tree.get(b"pear"), Some(b"2".to_vec()));
    /// ```
    pub fn slice(&self, at: &[u8]) -> Result<(), Error> {
        let core = &*self.core;
        let max = inline_key_max(core.config().page_size);
        if at.len() > max {
            return Err(Error::KeyTooLarge { len: at.len(), max });
        }
        // A node too full for its parts is split first; its halves always take a slice.
        for _ in 0..16 {
            match core.retry(|| core.slice_attempt(at)) {
                Sliced::Done { height } => {
                    core.tidy_after_slice(at, height);
                    return Ok(());
                }
                Sliced::Exists => return Err(Error::BoundaryExists { key: at.to_vec() }),
                Sliced::TableFull(partitions) => {
                    return Err(Error::TooManyPartitions { partitions })
                }
                Sliced::NodeFull(level) => core.split_for(at, level, false, 0, 0)?,
                Sliced::OutOfSpace => return Err(core.out_of_space()),
            }
        }
        Err(core.out_of_space())
    }
}

impl TreeCore {
    fn slice_attempt(&self, at: &[u8]) -> Result<Sliced, Restart> {
        let dir = self.directory();
        let ((table, table_guard), tpos, exists) = self.table_position(at)?;
        if exists {
            table_guard.validate()?;
            return Ok(Sliced::Exists);
        }
        if !table.fits(at, 4)? {
            let partitions = table.count() + 1;
            table_guard.validate()?;
            return Ok(Sliced::TableFull(partitions));
        }
        // The path, root first, by optimistic coupling.
        let mut path: Vec<Step> = Vec::new();
        let root_pid = table.child(tpos)?;
        let (node, latch) = self.page(root_pid)?;
        let guard = latch.optimistic();
        table_guard.validate()?;
        let height = node.level();
        if height == TABLE_LEVEL {
            return Err(Restart);
        }
        path.push(Step { node, guard });
        while let Some(last) = path.last() {
            let level = last.node.level();
            if level == 0 {
                break;
            }
            let (pos, exact) = last.node.lower_bound(at, dir)?;
            if exact {
                // A separator is `at` already: the cut goes along it, nothing below moves.
                break;
            }
            let child = last.node.child(pos)?;
            let (node, latch) = self.page(child)?;
            let guard = latch.optimistic();
            last.guard.validate()?;
            if node.level() + 1 != level {
                return Err(Restart);
            }
            path.push(Step { node, guard });
        }
        // Fresh pages before any latch (see `smo::split`): one left part per level.
        let mut spare = Spare::take(self, path.len());
        // Latched top-down: the table and the inner nodes at the versions read, the leaf
        // waited for (its parent is held, so it is still the child on the path).
        let mut table_x = table_guard.upgrade_exclusive()?;
        let bottom = path.pop().expect("a path ends somewhere");
        let mut held: Vec<(Node, ExclusiveGuard)> = Vec::with_capacity(path.len() + 1);
        for step in path {
            held.push((step.node, step.guard.upgrade_exclusive()?));
        }
        let bottom_x = if held.is_empty() || !bottom.node.is_leaf() {
            bottom.guard.upgrade_exclusive()?
        } else {
            bottom.guard.latch().exclusive()
        };
        held.push((bottom.node, bottom_x));
        // Where each node is cut, checked to fit; `below` of the bottom node: the child that
        // moves whole to the left when the cut runs along a separator.
        let mut cuts = Vec::with_capacity(held.len());
        let mut below: PageId = 0;
        for (node, _) in &held {
            let (pos, found) = node.lower_bound(at, dir)?;
            let ends = match (node.is_leaf(), found) {
                (true, true) => (pos + 1, pos + 1),
                (true, false) => (pos, pos),
                (false, true) => {
                    below = node.child(pos)?;
                    (pos, pos + 1)
                }
                (false, false) => (pos, pos),
            };
            let (l, r) = node.slice_sizes(ends, at)?;
            if l > node.page_size() || r > node.page_size() {
                return Ok(Sliced::NodeFull(node.level()));
            }
            cuts.push(ends);
        }
        let Some(fresh) = spare.use_or_allocate() else {
            return Ok(Sliced::OutOfSpace);
        };
        // Bottom-up: each level's left part takes the left part below as its upper child.
        for ((node, x), (&ends, &left_pid)) in held.iter_mut().zip(cuts.iter().zip(&fresh)).rev() {
            let (left, left_latch) = self.page(left_pid)?;
            let mut lx = left_latch.exclusive();
            let left = NodeMut::new(left, &mut lx);
            self.slice_node(&mut NodeMut::new(*node, x), left, ends, at, below);
            below = left_pid;
        }
        let mut table_mut = NodeMut::new(table, &mut table_x);
        self.add_separator(&mut table_mut, at, below);
        self.repartitioned(true, 2 * held.len() + 1);
        Ok(Sliced::Done { height })
    }

    /// After a slice: the roots of both new partitions lose the levels of one child that a
    /// cut left at their top, and the leaves on either side of the cut merge with a
    /// neighbour if the cut left them underfull (best effort, as after removals).
    fn tidy_after_slice(&self, at: &[u8], height: u16) {
        let mut above = at.to_vec();
        above.push(0);
        for key in [at, &above[..]] {
            for _ in 0..height {
                let _ = self.try_collapse_root(crate::engine::Target::Key(key, 0));
            }
            self.try_merge(key, 0);
        }
    }
}
