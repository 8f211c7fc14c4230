//! NUMA awareness (`numa-btree.md`): the topology (`topology`), upper-level replicas per
//! node kept consistent lazily (`replica`, over the sparse page copies of `shadow`), the
//! tree's side of NUMA-aware leaf latches (`cohort`, over `sync::cohort`), and
//! the switches that turn each part on ([`Numa`], in [`Config::numa`](crate::Config::numa)).
//! Page placement lives in the page pool (`page::lists`, `page::memory`).
//!
//! Everything is off by default: a tree whose NUMA parts are all off (on the system's
//! topology) holds no NUMA state and its operations take the paths they take without this
//! module (one load and a never-taken branch per point read). A simulated topology
//! ([`Topology::Simulated`]) runs every part on a one-node machine, and its point reads count
//! the inner pages they read on another node than their thread's (by the node of the
//! page's segment in the pool: node 0 until placement puts pages elsewhere).

pub(crate) mod cohort;
pub(crate) mod replica;
mod shadow;
pub(crate) mod topology;

pub use topology::{NodeFn, ThreadMap, Topology, MAX_NUMA_NODES};

use crate::engine::TreeCore;
use crate::sync::Counter;
use crate::Error;
use replica::Replica;
use topology::Resolved;

/// The NUMA parts of a tree and their switches ([`Config::numa`](crate::Config::numa)).
/// All off by default: they are measured to pay only on machines with several NUMA nodes,
/// and then only for read-heavy work (`docs/design.md`).
///
/// ```
/// use contree::{Config, Numa, ThreadMap, Topology, Tree};
/// let numa = Numa {
///     topology: Topology::Simulated { nodes: 2, threads: ThreadMap::RoundRobin },
///     replicas: true,
///     ..Numa::default()
/// };
/// let tree = Tree::with_config(Config { numa, ..Config::default() }).unwrap();
/// for i in 0u32..10_000 {
///     tree.insert(&i.to_be_bytes(), b"v").unwrap();
/// }
/// assert_eq!(tree.get(&7u32.to_be_bytes()), Some(b"v".to_vec()));
/// let stats = tree.stats();
/// // This thread's node has a replica of the inner levels now, refreshed by its first read.
/// assert!(stats.replica_refreshes >= 1);
/// assert!(stats.replica_bytes > 0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Numa {
    /// Where the topology comes from. Default [`Topology::System`].
    pub topology: Topology,
    /// Upper-level replicas: every node keeps its own copy of the tree's inner levels,
    /// and point reads (`get`, `get_into`, `get_with`, `contains_key`) descend their
    /// node's copy, touching no other node's memory above the leaf. A copy is refreshed by
    /// the readers of its node when it finds the tree's structure changed (a split or merge
    /// anywhere), never by writers; until then those reads descend the tree itself. A stale
    /// copy is never trusted: a read uses it only while the tree's structure sequence
    /// (`engine::phases`) still equals the one the copy was made at. Counted in
    /// [`Stats::replica_reads`](crate::Stats::replica_reads) and the other `replica_`
    /// fields. Default `false`.
    pub replicas: bool,
    /// The most bytes of inner-node copies one node's replica may hold. A replica that would
    /// need more stops being used (reads descend the tree;
    /// [`Stats::replica_over_budget`](crate::Stats::replica_over_budget)). At least one page.
    /// Default 64 MiB (the inner levels of a tree of 10^7 short keys take about 2 MiB).
    pub replica_budget: usize,
    /// NUMA-aware leaf latches (lock cohorting, `numa-btree.md` §3.3): a leaf latch that
    /// writers keep finding taken is inflated to a cohort latch (`sync::cohort`), whose
    /// waiting writers queue per node; a releasing writer passes the latch to a waiter on
    /// its own node first, at most 64 times in a row, and shared holders count themselves
    /// per node instead of in the latch word. The latch word, the guards and optimistic
    /// reads stay as they are. Counted in
    /// [`Stats::cohort_latches`](crate::Stats::cohort_latches) and the `numa_` handoff
    /// fields. Default `false`: on one node it only moves waiting around, and it pays only
    /// where a latch's cache line is expensive to move between nodes.
    pub cohort: bool,
    /// Node-local pages: the page pool hands a thread pages of its own node, so a leaf or
    /// inner node lives on the node of the thread that created it (by a split, a merge's
    /// rewrite, a load). Each segment of the pool belongs to one node: on a real topology of
    /// several nodes its memory is bound there (`mbind`), on a simulated one it is only
    /// labelled, so that point reads count the pages they read on another node
    /// ([`Stats::numa_remote_leaf_reads`](crate::Stats::numa_remote_leaf_reads)). A thread
    /// whose node has no free page takes one of another node only while the other nodes
    /// hold at least a segment of free pages (so memory stays within a segment per node of
    /// the pool without placement). Counted in
    /// [`Stats::pages_per_node`](crate::Stats::pages_per_node) and
    /// [`Stats::numa_pages_placed_remote`](crate::Stats::numa_pages_placed_remote). No effect
    /// on one node. Default `false`: it pays where threads keep to their own key ranges (a
    /// partitioned or thread-per-core service) on a machine with several nodes; for uniform
    /// access most pages are remote to most threads either way.
    ///
    /// ```
    /// use contree::{Config, NodeFn, Numa, ThreadMap, Topology, Tree};
    /// use std::cell::Cell;
    /// thread_local!(static NODE: Cell<usize> = const { Cell::new(0) });
    /// let numa = Numa {
    ///     topology: Topology::Simulated {
    ///         nodes: 2,
    ///         threads: ThreadMap::By(NodeFn::new(|| NODE.with(Cell::get))),
    ///     },
    ///     placement: true,
    ///     ..Numa::default()
    /// };
    /// let tree = Tree::with_config(Config { numa, ..Config::default() }).unwrap();
    /// std::thread::scope(|s| {
    ///     for node in 0..2u32 {
    ///         let tree = &tree;
    ///         s.spawn(move || {
    ///             NODE.with(|n| n.set(node as usize));
    ///             for i in 0..20_000u32 {
    ///                 tree.insert(&(node << 24 | i).to_be_bytes(), b"v").unwrap();
    ///             }
    ///         });
    ///     }
    /// });
    /// // Both nodes created pages of their own.
    /// let per_node = tree.stats().pages_per_node;
    /// assert_eq!(per_node.len(), 2);
    /// assert!(per_node.iter().all(|&pages| pages > 10));
    /// ```
    pub placement: bool,
}

impl Default for Numa {
    fn default() -> Self {
        Numa {
            topology: Topology::System,
            replicas: false,
            replica_budget: 64 << 20,
            cohort: false,
            placement: false,
        }
    }
}

impl Numa {
    /// Checks the fields (see [`Config::validate`](crate::Config::validate)).
    pub(crate) fn validate(&self, page_size: usize) -> Result<(), Error> {
        if let Topology::Simulated { nodes, .. } = self.topology {
            if !(1..=MAX_NUMA_NODES).contains(&nodes) {
                return Err(Error::InvalidConfig {
                    field: "numa.topology",
                    reason: format!(
                        "{nodes} simulated nodes is not between 1 and {MAX_NUMA_NODES}"
                    ),
                });
            }
        }
        if self.replica_budget < page_size {
            return Err(Error::InvalidConfig {
                field: "numa.replica_budget",
                reason: format!(
                    "{} bytes is less than a page of {page_size} bytes",
                    self.replica_budget
                ),
            });
        }
        Ok(())
    }

    /// Whether any part is on, or the topology is simulated (a measurement: point reads
    /// count the inner pages they read on other nodes); else the tree holds no NUMA state.
    fn any(&self) -> bool {
        self.replicas
            || self.cohort
            || self.placement
            || matches!(self.topology, Topology::Simulated { .. })
    }

    /// Where the page pool places pages: `None` unless placement is on over several nodes.
    pub(crate) fn placement(&self) -> Option<crate::page::Placement> {
        let topology = Resolved::new(&self.topology);
        (self.placement && topology.nodes() > 1).then(|| crate::page::Placement {
            topology,
            bind: matches!(self.topology, Topology::System),
        })
    }
}

/// A tree's NUMA state: its topology and its parts that are on.
pub(crate) struct NumaState {
    pub(crate) topology: Resolved,
    /// One replica per node, if replicas are on.
    pub(crate) replicas: Vec<Replica>,
    /// The inflation of hot leaf latches to cohort latches, if on.
    pub(crate) cohort: Option<cohort::Cohort>,
    /// The longest a writer waited for a leaf latch, in nanoseconds.
    pub(crate) max_wait_ns: std::sync::atomic::AtomicU64,
}

impl NumaState {
    /// The state `numa` asks for (validated), or `None` if every part is off.
    pub(crate) fn new(numa: &Numa, page_size: usize) -> Option<Box<NumaState>> {
        if !numa.any() {
            return None;
        }
        let topology = Resolved::new(&numa.topology);
        let replicas = if numa.replicas {
            (0..topology.nodes())
                .map(|node| Replica::new(node, page_size, numa.replica_budget, &numa.topology))
                .collect()
        } else {
            Vec::new()
        };
        Some(Box::new(NumaState {
            topology,
            replicas,
            cohort: numa.cohort.then(cohort::Cohort::new),
            max_wait_ns: std::sync::atomic::AtomicU64::new(0),
        }))
    }
}

impl TreeCore {
    /// Fills the `numa_` and `replica_` fields of `s`.
    pub(crate) fn numa_stats(&self, s: &mut crate::Stats) {
        let count = |c| self.counters.sum(c).max(0) as u64;
        s.replica_reads = count(Counter::ReplicaReads);
        s.numa_reads = count(Counter::NumaReads) + s.replica_reads;
        s.numa_inner_reads = count(Counter::NumaInnerReads);
        s.numa_remote_inner_reads = count(Counter::NumaRemoteInner);
        s.numa_remote_leaf_reads = count(Counter::NumaRemoteLeaf);
        (s.pages_per_node, s.numa_pages_placed_remote) = self.pool_placement();
        s.replica_fallbacks = count(Counter::ReplicaFallbacks);
        s.numa_same_node_handoffs = count(Counter::NumaSameHandoffs);
        s.numa_cross_node_handoffs = count(Counter::NumaCrossHandoffs);
        let Some(state) = &self.numa else {
            s.numa_nodes = Resolved::new(&self.config().numa.topology).nodes();
            return;
        };
        s.numa_nodes = state.topology.nodes();
        s.numa_latch_max_wait_ns = state.max_wait_ns.load(std::sync::atomic::Ordering::Relaxed);
        if let Some(c) = &state.cohort {
            s.cohort_latches = c.inflated.load(std::sync::atomic::Ordering::Relaxed);
        }
        for replica in &state.replicas {
            let (refreshes, copied, bytes, over, dropped) = replica.counts();
            s.replica_copies_dropped += dropped;
            s.replica_refreshes += refreshes;
            s.replica_pages_copied += copied;
            s.replica_bytes += bytes;
            s.replica_over_budget |= over;
        }
    }
}
