//! The multi-rooted tree ([`PartitionedTree`]): a partition table over sub-trees that share
//! one tree's state (page pool, blob heap, counters, space manager), and slice and meld, which
//! change the partitions by changing the pages on one path (PLP, appendix A.3).
//!
//! **The table** is a page at the root of the tree, formatted as an inner node at level
//! [`TABLE_LEVEL`]: its separators are the partition boundaries and its children the
//! partitions' roots, of any height. Partition `i` holds the keys in `(b[i-1], b[i]]`, as
//! every node of the tree holds the keys between its fences, so a partition's nodes have the
//! partition's boundaries as their outer fences and a cursor crosses from one partition to
//! the next as it crosses leaves. The table is read optimistically, like any node, by the
//! root prologue of the descent (`engine::descent::table_step`), which hands on the table's
//! snapshot as the guard of the partition root's slot ([`RootSlot::Table`]): a root that
//! grows or collapses is published in its slot under the table's latch, as a tree's root is
//! under the meta latch. Nothing else of the tree knows about partitions: splits, merges and
//! XMerge stay inside one parent, hence inside one partition.
//!
//! **Slice and meld** (`slice`, `meld`) latch the table and the path they change top-down,
//! exclusively (inner nodes by upgrading the snapshots of their descent, the leaf by waiting
//! for it while its parent is held: no thread waits for a parent while holding a child), so
//! every concurrent operation either finished before or restarts on a changed version. They
//! keep the pages of the right-hand side in place, so the rightmost leaf keeps its page (see
//! `engine`), and bump [`TreeCore::generation`] all the same.
//!
//! [`RootSlot::Table`]: crate::engine::RootSlot::Table

pub(crate) mod executor;
mod meld;
mod slice;

use crate::config::Config;
use crate::engine::TreeCore;
use crate::error::Error;
use crate::node::{NodeMut, TABLE_LEVEL};
use crate::page::PageId;
use crate::sync::seam::Ordering;
use crate::sync::Restart;
use crate::Tree;

/// A multi-rooted B+Tree: the same operations as [`Tree`] (through `Deref`: point and
/// atomic operations, ranges, cursors and scans across partition boundaries, `len`, `stats`,
/// `compact`, `check_invariants`), over partitions of the key space, each a sub-tree of its
/// own under a partition table. [`slice`](Self::slice) cuts a partition in two and
/// [`meld`](Self::meld) joins two neighbours; both change only the pages on one path, never
/// the entries, and run concurrently with every other operation.
///
/// Partition `i` holds the keys in `(b[i-1], b[i]]` of the boundaries `b` that
/// [`boundaries`](Self::boundaries) lists: a boundary belongs to the partition on its left,
/// as a separator belongs to the node on its left.
///
/// ```
/// use contree::PartitionedTree;
/// let tree = PartitionedTree::new();
/// for i in 0u32..1000 {
///     tree.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// tree.slice(&500u32.to_be_bytes()).unwrap();
/// assert_eq!(tree.boundaries(), vec![500u32.to_be_bytes().to_vec()]);
/// // Every operation of `Tree`, across the boundary.
/// assert_eq!(tree.range(&498u32.to_be_bytes()[..]..&503u32.to_be_bytes()[..]).count(), 5);
/// assert_eq!(tree.len(), 1000);
/// tree.meld(&500u32.to_be_bytes()).unwrap();
/// assert!(tree.boundaries().is_empty());
/// tree.check_invariants().unwrap();
/// ```
pub struct PartitionedTree {
    tree: Tree,
}

impl Default for PartitionedTree {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for PartitionedTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionedTree")
            .field("len", &self.len())
            .field("partitions", &self.partitions())
            .field("config", self.config())
            .finish()
    }
}

impl std::ops::Deref for PartitionedTree {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        &self.tree
    }
}

impl PartitionedTree {
    /// An empty tree of one partition with the default [`Config`].
    ///
    /// ```
    /// let tree = contree::PartitionedTree::new();
    /// assert_eq!(tree.partitions(), 1);
    /// ```
    pub fn new() -> PartitionedTree {
        Self::with_config(Config::default()).expect("the default config is valid")
    }

    /// An empty tree of one partition with `config`, or [`Error::InvalidConfig`] naming the
    /// bad field (as [`Tree::with_config`]).
    ///
    /// ```
    /// use contree::{Config, PartitionedTree};
    /// let tree = PartitionedTree::with_config(Config { page_size: 8192, ..Config::default() });
    /// assert_eq!(tree.unwrap().config().page_size, 8192);
    /// ```
    pub fn with_config(config: Config) -> Result<PartitionedTree, Error> {
        let mut core = TreeCore::new(config)?;
        core.install_table()?;
        Ok(PartitionedTree {
            tree: Tree::with_core(core),
        })
    }

    /// The tree as a [`Tree`] (which `Deref` also gives).
    pub fn as_tree(&self) -> &Tree {
        &self.tree
    }

    /// The partition boundaries in ascending order: partition `i` holds the keys above
    /// boundary `i - 1` up to and including boundary `i` (the first has no lower bound, the
    /// last no upper one). Empty for a tree of one partition.
    ///
    /// ```
    /// let tree = contree::PartitionedTree::new();
    /// tree.slice(b"m").unwrap();
    /// tree.slice(b"f").unwrap();
    /// assert_eq!(tree.boundaries(), vec![b"f".to_vec(), b"m".to_vec()]);
    /// ```
    pub fn boundaries(&self) -> Vec<Vec<u8>> {
        self.tree.core.table_copy().boundaries
    }

    /// The address of the partition table's latch word (the one page every worker of the
    /// executor latches atomically, `sync::owner`).
    pub(crate) fn table_latch_addr(&self) -> usize {
        let core = &self.tree.core;
        let (_, latch) = core.page(core.root_id()).expect("the table's page");
        latch as *const crate::sync::HybridLatch as usize
    }

    /// The number of partitions (one more than the boundaries).
    pub fn partitions(&self) -> usize {
        self.tree.core.table_copy().roots.len()
    }
}

/// The partition table's read view and snapshot.
type TableSnapshot<'t> = (crate::node::Node, crate::sync::OptimisticGuard<'t>);

/// A consistent copy of the partition table.
pub(crate) struct TableCopy {
    pub boundaries: Vec<Vec<u8>>,
    pub roots: Vec<PageId>,
}

impl TreeCore {
    /// Puts a partition table of one partition above the root of this tree, which no other
    /// thread uses yet.
    fn install_table(&mut self) -> Result<(), Error> {
        self.partitioned = true;
        let pid = self.allocate(1).ok_or_else(|| self.out_of_space())?[0];
        let (node, latch) = self.page(pid).expect("a fresh page");
        let mut x = latch.exclusive();
        let mut table = NodeMut::new(node, &mut x);
        table.init(TABLE_LEVEL, None, None, &[]);
        table.set_upper_child(self.root_id());
        let _m = self.meta().exclusive();
        self.set_root(pid);
        Ok(())
    }

    /// A snapshot of the partition table page, if this tree has one (a tree without one
    /// reads nothing: its root may be a leaf that a writer holds).
    fn table_snapshot(&self) -> Result<Option<TableSnapshot<'_>>, Restart> {
        self.table_snapshot_waiting::<true>()
    }

    /// [`table_snapshot`](Self::table_snapshot); without `WAIT`, `Restart` at once where
    /// a slice or meld holds the table (for callers that hold latches themselves: a slice
    /// may wait for them while it holds the table).
    fn table_snapshot_waiting<const WAIT: bool>(
        &self,
    ) -> Result<Option<TableSnapshot<'_>>, Restart> {
        if !self.partitioned {
            return Ok(None);
        }
        // The table is the root for the tree's whole life: its id needs no meta snapshot.
        let (node, latch) = self.page(self.root_id())?;
        let guard = if WAIT {
            latch.optimistic()
        } else {
            latch.try_optimistic().ok_or(Restart)?
        };
        Ok(Some((node, guard)))
    }

    /// A snapshot of the table of this partitioned tree and the position of `at` among its
    /// boundaries (`true`: `at` is one); for slice and meld.
    fn table_position(&self, at: &[u8]) -> Result<(TableSnapshot<'_>, usize, bool), Restart> {
        let Some((table, guard)) = self.table_snapshot()? else {
            unreachable!("a PartitionedTree has a table");
        };
        let (pos, found) = table.lower_bound(at, self.directory())?;
        Ok(((table, guard), pos, found))
    }

    /// The level of the root in slot `pos` of the table `table` (the caller validates the
    /// table's snapshot afterwards). Never waits.
    fn optimistic_root_level_at(
        &self,
        table: &crate::node::Node,
        pos: usize,
    ) -> Result<u16, Restart> {
        let (root, latch) = self.page(table.child(pos)?)?;
        let guard = latch.try_optimistic().ok_or(Restart)?;
        let level = root.level();
        guard.validate()?;
        Ok(level)
    }

    /// A consistent copy of the partition table (one partition, no boundaries, for a tree
    /// without one).
    pub(crate) fn table_copy(&self) -> TableCopy {
        self.retry(|| {
            let Some((node, guard)) = self.table_snapshot()? else {
                return Ok(TableCopy {
                    boundaries: Vec::new(),
                    roots: vec![self.root_id()],
                });
            };
            let count = node.count();
            let boundaries = (0..count).map(|i| node.key(i)).collect::<Result<_, _>>()?;
            let roots = (0..=count)
                .map(|i| node.child(i))
                .collect::<Result<_, _>>()?;
            guard.validate()?;
            Ok(TableCopy { boundaries, roots })
        })
    }

    /// Whether `pid` is the root of a partition (never for a tree without a table). Never
    /// waits (merges and XMerge ask it while they hold latches): `false` when a slice or a
    /// meld keeps the table, which makes the caller treat the node as an inner node that
    /// is not a root (a merge then goes one level up, where the descent tells).
    pub(crate) fn is_partition_root(&self, pid: PageId) -> bool {
        let attempt = || -> Result<bool, Restart> {
            let Some((node, guard)) = self.table_snapshot_waiting::<false>()? else {
                return Ok(false);
            };
            let mut found = false;
            for i in 0..=node.count() {
                found |= node.child(i)? == pid;
            }
            guard.validate()?;
            Ok(found)
        };
        (0..16).find_map(|_| attempt().ok()).unwrap_or(false)
    }

    /// A key of each root's range to descend to it by (`None`: the rightmost): one per
    /// partition, the partition's upper boundary.
    pub(crate) fn root_targets(&self) -> Vec<Option<Vec<u8>>> {
        let table = self.table_copy();
        let mut targets: Vec<Option<Vec<u8>>> = table.boundaries.into_iter().map(Some).collect();
        targets.push(None);
        targets
    }

    /// The level of the tallest partition's root; `None` for a tree without a table.
    pub(crate) fn optimistic_tallest_partition(&self) -> Result<Option<u16>, Restart> {
        let Some((node, guard)) = self.table_snapshot()? else {
            return Ok(None);
        };
        let mut tallest = 0;
        for i in 0..=node.count() {
            tallest = tallest.max(self.optimistic_root_level_at(&node, i)?);
        }
        guard.validate()?;
        Ok(Some(tallest))
    }

    /// For a sweep of the nodes at `level` about to descend to `key` (`None`: the rightmost):
    /// `Some(lower boundary)` when the partition holding it is shorter than `level`, so that
    /// the sweep goes on in the partition to the left (`Some(None)`: there is none). `None`
    /// for a tree without a table and for a partition tall enough.
    pub(crate) fn short_partition(
        &self,
        key: Option<&[u8]>,
        level: u16,
    ) -> Option<Option<Vec<u8>>> {
        let attempt = || -> Result<Option<Option<Vec<u8>>>, Restart> {
            let Some((node, guard)) = self.table_snapshot()? else {
                return Ok(None);
            };
            let pos = match key {
                Some(k) => node.point_search(k, self.directory())?.0,
                None => node.count(),
            };
            let root_level = self.optimistic_root_level_at(&node, pos)?;
            let lower = match pos {
                0 => None,
                p => Some(node.key(p - 1)?),
            };
            guard.validate()?;
            Ok((root_level < level).then_some(lower))
        };
        (0..64).find_map(|_| attempt().ok()).flatten()
    }

    /// Counts a slice or a meld that wrote `pages` pages, and invalidates what caches the
    /// rightmost leaf or a root.
    fn repartitioned(&self, slice: bool, pages: usize) {
        let events = &self.events;
        if slice {
            events.slices.fetch_add(1, Ordering::Relaxed);
        } else {
            events.melds.fetch_add(1, Ordering::Relaxed);
        }
        events
            .repartition_pages
            .fetch_add(pages as u64, Ordering::Relaxed);
        self.bump_generation();
    }
}
