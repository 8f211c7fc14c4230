//! The public face of the tree: [`Tree`] and its operations.
//!
//! A `Tree` owns its shared state ([`BTree`](crate::btree::BTree), in an `Arc`) and, when
//! [`Config::space_manager`] is on, the background space manager thread, which shares that
//! state. Dropping the tree stops and joins the thread before the pages are released. Every
//! operation is a thin call into `btree` (point operations, splits, merges), `iter` (ranges)
//! or `xmerge` (compaction).

use crate::btree::BTree;
use crate::config::Config;
use crate::error::Error;
use crate::iter::Range;
use crate::space_manager::SpaceManager;
use crate::stats::Stats;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

pub use crate::btree::GET_WITH_INLINE;

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
    /// Declared first so that it is dropped (its thread stopped and joined) first.
    _space_manager: Option<SpaceManager>,
    btree: Arc<BTree>,
}

impl Default for Tree {
    fn default() -> Self {
        Self::new()
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
    /// An empty tree with the default [`Config`].
    pub fn new() -> Tree {
        Self::with_config(Config::default()).expect("the default config is valid")
    }

    /// An empty tree with `config`, or [`Error::InvalidConfig`] naming the bad field.
    ///
    /// With [`Config::space_manager`] on (the default) this starts the tree's space manager
    /// thread.
    pub fn with_config(config: Config) -> Result<Tree, Error> {
        let btree = Arc::new(BTree::with_config(config)?);
        let space_manager = btree
            .config()
            .space_manager
            .then(|| SpaceManager::start(Arc::clone(&btree)));
        Ok(Tree {
            _space_manager: space_manager,
            btree,
        })
    }

    /// The configuration the tree was built with.
    pub fn config(&self) -> &Config {
        self.btree.config()
    }

    /// The value stored under `key`, copied out.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.btree.get(key)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.btree.contains_key(key)
    }

    /// Runs `f` on the value bytes of `key` without a heap allocation.
    ///
    /// A value of up to [`GET_WITH_INLINE`] bytes is copied optimistically into a buffer on
    /// the stack and `f` runs on that copy after the read validated: the reader writes
    /// nothing to shared memory, so concurrent readers of a hot leaf do not contend. A
    /// larger value is read under the leaf's shared latch instead (writers to that leaf wait
    /// until `f` returns, so keep `f` short).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"hello").unwrap();
    /// assert_eq!(tree.get_with(b"k", |v| v.len()), Some(5));
    /// tree.insert(b"big", &[7u8; 1000]).unwrap();
    /// assert_eq!(tree.get_with(b"big", |v| v.iter().map(|&b| b as usize).sum::<usize>()), Some(7000));
    /// ```
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.btree.get_with(key, f)
    }

    /// Inserts or replaces the value of `key`; returns the previous value.
    ///
    /// Fails with [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`] for oversized input and
    /// with [`Error::OutOfSpace`] when a split needs a page the memory budget does not
    /// allow; in every error case the tree's contents are unchanged.
    ///
    /// When the budget is reached, the insert first runs XMerge to free pages (see
    /// [`compact`](Self::compact)) and fails only if that frees none.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.btree.insert(key, value)
    }

    /// Changes the value of `key` in place under the leaf's exclusive latch and returns what
    /// `f` returns, or `None` if the key is absent. The value keeps its length.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"counter", &0u64.to_le_bytes()).unwrap();
    /// tree.update_with(b"counter", |v| {
    ///     let n = u64::from_le_bytes(v.try_into().unwrap()) + 1;
    ///     v.copy_from_slice(&n.to_le_bytes());
    /// });
    /// assert_eq!(tree.get(b"counter"), Some(1u64.to_le_bytes().to_vec()));
    /// ```
    pub fn update_with<R>(&self, key: &[u8], f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        self.btree.update_with(key, f)
    }

    /// Removes `key`; returns its value.
    pub fn remove(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.btree.remove(key)
    }

    /// A double-ended iterator over the entries whose keys lie in `range`, in key order.
    ///
    /// The iterator copies one leaf at a time under a shared latch and remembers the last
    /// key it returned, so it stays correct across concurrent splits and merges: it never
    /// returns a key twice or out of order, and returns every key that stayed in the tree
    /// for the whole scan.
    ///
    /// ```
    /// use std::ops::Bound::{Excluded, Included};
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     tree.insert(k, b"").unwrap();
    /// }
    /// let keys: Vec<_> = tree
    ///     .range((Included(&b"b"[..]), Excluded(&b"d"[..])))
    ///     .map(|(k, _)| k)
    ///     .collect();
    /// assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
    /// let last = tree.range(..).next_back();
    /// assert_eq!(last.map(|(k, _)| k), Some(b"d".to_vec()));
    /// ```
    pub fn range<R: RangeBounds<[u8]>>(&self, range: R) -> Range<'_> {
        Range::new(
            &self.btree,
            owned_bound(range.start_bound()),
            owned_bound(range.end_bound()),
        )
    }

    /// Like [`range`](Self::range), for bounds given as anything that is bytes: arrays,
    /// slices, `Vec<u8>`, strings. (`std::ops::Range<&[u8]>` does not implement
    /// `RangeBounds<[u8]>`, so `tree.range(a..b)` does not compile for slices.)
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in ["a", "b", "c", "d"] {
    ///     tree.insert(k.as_bytes(), b"").unwrap();
    /// }
    /// let keys: Vec<_> = tree.range_of("b".."d").map(|(k, _)| k).collect();
    /// assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(tree.range_of(&b"c"[..]..).count(), 2);
    /// assert_eq!(tree.range_of(b"a".to_vec()..=b"b".to_vec()).count(), 2);
    /// ```
    pub fn range_of<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Range<'_> {
        Range::new(
            &self.btree,
            owned_bound(range.start_bound().map(K::as_ref)),
            owned_bound(range.end_bound().map(K::as_ref)),
        )
    }

    /// All entries in key order.
    pub fn iter(&self) -> Range<'_> {
        Range::new(&self.btree, Bound::Unbounded, Bound::Unbounded)
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.iter().next()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.iter().next_back()
    }

    /// Number of entries. Kept in striped per-thread counters, so it costs no shared hot
    /// word on the write path; exact when no writer runs concurrently.
    pub fn len(&self) -> usize {
        self.btree.len()
    }

    /// Whether the tree has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs XMerge over the whole tree, leaves first and then each inner level, and returns
    /// the number of pages it freed.
    ///
    /// Within every parent, groups of up to [`Config::xmerge_group`] neighbouring children
    /// whose free space adds up to a page are packed into one node fewer, from right to left,
    /// so that afterwards nearly every node is full. Nodes that another thread holds latched
    /// and leaves that Contention Split marked hot are skipped, so `compact` never waits and
    /// may run beside other operations. Freed pages are kept for reuse by this tree (they
    /// are not returned to the system) and stop counting in
    /// [`Stats::bytes_allocated`].
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// let mut x = 1u64;
    /// for _ in 0..20_000 {
    ///     // Random keys: the leaves end up about 70% full.
    ///     x ^= x << 13;
    ///     x ^= x >> 7;
    ///     x ^= x << 17;
    ///     tree.insert(&x.to_be_bytes(), &x.to_le_bytes()).unwrap();
    /// }
    /// let before = tree.stats();
    /// let freed = tree.compact();
    /// let after = tree.stats();
    /// assert!(freed > 0);
    /// assert_eq!(after.leaf_pages + after.inner_pages + freed, before.leaf_pages + before.inner_pages);
    /// assert!(after.fill_factor > 0.9);
    /// ```
    pub fn compact(&self) -> usize {
        self.btree.compact()
    }

    /// The page id of the leaf that holds `key` (for tests and diagnostics: two keys share a
    /// leaf latch exactly when they share a leaf).
    #[doc(hidden)]
    pub fn leaf_page_of(&self, key: &[u8]) -> u32 {
        self.btree.leaf_page_of(key)
    }

    /// Shape, space and counters. Walks every node under its shared latch: O(pages).
    pub fn stats(&self) -> Stats {
        self.btree.stats()
    }

    /// Checks the structure: key order inside and across nodes, fences, prefixes, levels,
    /// entry counts and that every allocated page is reachable. Meant for tests; run it
    /// while no writer is active.
    /// The space manager thread pauses while the check runs.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.btree.check_invariants()
    }
}

/// A bound over borrowed bytes, copied.
fn owned_bound(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    b.map(<[u8]>::to_vec)
}
