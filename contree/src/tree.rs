//! The public [`Tree`]: its state, its construction and its whole-tree queries. Each
//! operation is implemented, with its docs, in the module that owns it: point reads in
//! `ops::read`, point writes in `ops::write`, ranges in `ops::scan`, `compact` in `space`,
//! `stats` in `stats` and `check_invariants` in `check`.
//!
//! A `Tree` holds its shared state ([`TreeCore`], in an `Arc`). When
//! [`Config::space_manager`] is on, the process-wide space manager (`space::manager`) holds a
//! weak reference to that state; dropping the tree releases its pages at once, or when a
//! round of the space manager in progress on it ends.

use crate::config::Config;
use crate::engine::{Target, TreeCore};
use crate::error::Error;
use std::sync::Arc;

/// A concurrent B+Tree over byte keys and byte values, ordered by memcmp.
///
/// All operations take `&self`; share a tree between threads with `Arc<Tree>` or scoped
/// threads.
///
/// ```
/// use contree::Tree;
/// let tree = Tree::new();
/// assert_eq!(tree.insert(b"k", b"v1").unwrap(), None);
/// assert_eq!(tree.insert(b"k", b"v2").unwrap(), Some(b"v1".to_vec()));
/// tree.update_with(b"k", |v| v[1] = b'3');
/// assert_eq!(tree.get(b"k"), Some(b"v3".to_vec()));
/// assert_eq!(tree.remove(b"k"), Some(b"v3".to_vec()));
/// assert!(tree.is_empty());
/// ```
pub struct Tree {
    pub(crate) core: Arc<TreeCore>,
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Tree {
    /// Frees the tree's memory before returning: the side structure is merged, and the
    /// space manager lets go of the tree first (waiting for a round in progress on it,
    /// which is short).
    fn drop(&mut self) {
        // The side structure's entries go into the tree, and its charge back to the pool
        // (which other trees may share).
        self.side_flush_all();
        if self.core.config().space_manager {
            crate::space::manager::release(&self.core);
        }
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree")
            .field("len", &self.len())
            .field("config", self.config())
            .finish()
    }
}

impl Tree {
    /// An empty tree with the default [`Config`] (as `Tree::default()`).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert!(tree.is_empty());
    /// ```
    pub fn new() -> Tree {
        Self::with_config(Config::default()).expect("the default config is valid")
    }

    /// An empty tree with `config`, or [`Error::InvalidConfig`] naming the bad field.
    ///
    /// With [`Config::space_manager`] on (the default) the tree joins the space manager, one
    /// background thread shared by all trees of the process, started by the first tree that
    /// needs it. If that thread cannot be started, the tree works without it (removals,
    /// the reclaim at the memory budget and [`compact`](Self::compact) still free space);
    /// this never fails or panics.
    ///
    /// ```
    /// use contree::{Config, Error, Tree};
    /// let tree = Tree::with_config(Config { page_size: 8192, ..Config::default() }).unwrap();
    /// assert_eq!(tree.config().page_size, 8192);
    /// let bad = Tree::with_config(Config { page_size: 1000, ..Config::default() });
    /// assert!(matches!(bad, Err(Error::InvalidConfig { field: "page_size", .. })));
    /// ```
    pub fn with_config(config: Config) -> Result<Tree, Error> {
        Ok(Tree::with_core(TreeCore::new(config)?))
    }

    /// A tree over `core` (a `PartitionedTree`'s has its table installed), joined to the
    /// space manager if its config says so.
    pub(crate) fn with_core(core: TreeCore) -> Tree {
        let core = Arc::new(core);
        if core.config().space_manager {
            crate::space::manager::register(&core);
        }
        Tree { core }
    }

    /// The configuration the tree was built with.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert_eq!(tree.config(), &contree::Config::default());
    /// ```
    pub fn config(&self) -> &Config {
        self.core.config()
    }

    /// Number of entries. Kept in striped per-thread counters, so it costs no shared hot
    /// word on the write path; exact when no writer runs concurrently.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"a", b"1").unwrap();
    /// tree.insert(b"b", b"2").unwrap();
    /// tree.insert(b"a", b"3").unwrap();
    /// assert_eq!(tree.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.core.len()
    }

    /// Whether the tree has no entries.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert!(tree.is_empty());
    /// tree.insert(b"k", b"v").unwrap();
    /// assert!(!tree.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Marks the key range of the leaf that holds `key` hot in the side structure, as its
    /// policy does on appends from several threads (for tests and diagnostics; nothing
    /// happens if [`Config::side_structure`] is `Off`, or if the range meets a hot one).
    #[doc(hidden)]
    pub fn side_mark(&self, key: &[u8]) {
        self.side_heat(key, false);
    }

    /// The page id of the leaf that holds `key` (for tests and diagnostics: two keys share a
    /// leaf latch exactly when they share a leaf).
    #[doc(hidden)]
    pub fn leaf_page_of(&self, key: &[u8]) -> u32 {
        let core = &*self.core;
        core.retry(|| {
            let (leaf, _) = core.optimistic_descend(Target::Key(key, 0))?;
            leaf.guard.validate()?;
            Ok(leaf.pid)
        })
    }
}
