//! A snapshot of the tree's shape and space use.

/// Counters and measurements returned by [`Tree::stats`](crate::Tree::stats).
///
/// The shape fields (`height`, page counts, `fill_factor`) come from a walk over all nodes
/// under shared latches, so they are exact when no writer runs at the same time and a close
/// approximation otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Number of levels; 1 when the root is a leaf.
    pub height: usize,
    /// Number of leaf nodes.
    pub leaf_pages: usize,
    /// Number of inner nodes.
    pub inner_pages: usize,
    /// Page bytes in use (pages held by the tree times the page size); freed pages that
    /// wait for reuse are not counted.
    pub bytes_allocated: usize,
    /// Bytes of nodes that hold data (headers, slots, keys, values, fences) divided by the
    /// bytes of all nodes, between 0 and 1.
    pub fill_factor: f64,
    /// Number of entries.
    pub len: usize,
    /// Leaf and inner node splits done since the tree was created.
    pub splits: u64,
    /// Node merges done since the tree was created.
    pub merges: u64,
    /// Operations that had to restart since the tree was created (sampled per thread).
    pub restarts: u64,
    /// Leaves split by Contention Split.
    pub contention_splits: u64,
    /// Periods that ended with unnecessary contention and asked for a Contention Split
    /// (some are skipped: the leaf changed meanwhile, or the parent could not take the key).
    pub contention_split_attempts: u64,
    /// Exclusive leaf-latch acquisitions that had to wait (0 unless the `latch-stats` cargo
    /// feature is on).
    pub latch_slow_paths: u64,
    /// Exclusive leaf-latch acquisitions whose previous holder was another thread, a proxy
    /// for cache-line transfers (0 unless the `latch-stats` cargo feature is on).
    pub latch_handoffs: u64,
    /// Groups of siblings XMerge examined (from the space manager, `compact` and the
    /// memory budget).
    pub xmerge_attempts: u64,
    /// Groups XMerge packed into fewer nodes.
    pub xmerges: u64,
    /// Pages XMerge freed.
    pub pages_freed: u64,
}
