//! A snapshot of the tree's shape, space use and event counters, and [`Tree::stats`] that
//! takes it.

use crate::blob::{self, Place};
use crate::long_key;
use crate::node::TABLE_LEVEL;
use crate::sync::Counter;
use crate::Tree;
use std::sync::atomic::Ordering;

/// Counters and measurements returned by [`Tree::stats`](crate::Tree::stats).
///
/// The shape fields (`height`, page counts, `fill_factor`) come from a walk over all nodes
/// under shared latches, so they are exact when no writer runs at the same time and a close
/// approximation otherwise.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Number of levels; 1 when the root is a leaf. In a
    /// [`PartitionedTree`](crate::PartitionedTree), the tallest partition's, the partition
    /// table not counted.
    pub height: usize,
    /// Partitions of a [`PartitionedTree`](crate::PartitionedTree) (1 for a `Tree`).
    pub partitions: usize,
    /// Slices of a [`PartitionedTree`](crate::PartitionedTree).
    pub slices: u64,
    /// Melds of a [`PartitionedTree`](crate::PartitionedTree).
    pub melds: u64,
    /// Pages written by slices and melds (the partition table included): a few per level,
    /// whatever the partitions hold.
    pub repartition_pages: u64,
    /// Number of leaf nodes.
    pub leaf_pages: usize,
    /// Number of inner nodes.
    pub inner_pages: usize,
    /// Values stored out of line (longer than
    /// [`Config::max_inline_value_len`](crate::Config::max_inline_value_len)).
    pub out_of_line_values: usize,
    /// Keys stored out of line in part (longer than
    /// [`Config::max_inline_key_len`](crate::Config::max_inline_key_len)) in the leaves.
    pub out_of_line_keys: usize,
    /// Pages holding out-of-line bytes (not counted in `fill_factor`): the blob heap's
    /// pages and the page chains of values and key rests too long for a heap page.
    pub blob_pages: usize,
    /// The blob heap's pages (part of `blob_pages`): out-of-line values and key rests shorter
    /// than a page, packed many to a page.
    pub heap_pages: usize,
    /// Bytes of the live chunks in the blob heap, to compare with
    /// `heap_pages * page_size`.
    pub heap_bytes: usize,
    /// Heap pages packed (their chunks moved together) to make room for a new chunk.
    pub heap_packs: u64,
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
    /// Merge attempts of underfull leaves left out: after an attempt at a leaf was declined
    /// (no sibling could take it), the same thread tries that leaf again only once it has
    /// lost another sixteenth of a page, or all of its entries.
    pub merges_skipped: u64,
    /// Operation attempts that restarted from the root since the tree was created: a
    /// conflict in the descent (the index phase), or one in the leaf phase after the leaf
    /// split, merged or was freed.
    pub restarts: u64,
    /// Point reads whose leaf phase (the search and copy in the leaf) met a concurrent
    /// writer of that leaf and ran again on the same leaf, without a new descent (Eunomia's
    /// two phases, [`Config::leaf_phase_restarts`](crate::Config::leaf_phase_restarts)).
    pub leaf_restarts: u64,
    /// Leaves split by Contention Split.
    pub contention_splits: u64,
    /// Periods that ended with unnecessary contention and asked for a Contention Split
    /// (some are skipped: the leaf changed meanwhile, or the parent could not take the key).
    pub contention_split_attempts: u64,
    /// Splits a writer gave up because another thread was splitting the same node; the
    /// writer waited for that split and retried its operation
    /// ([`Config::split_gate`](crate::Config::split_gate)).
    pub split_gate_waits: u64,
    /// Contended Contention Split periods of appends at a leaf's end, which asked for no
    /// split ([`Config::contention_split_appends`](crate::Config::contention_split_appends)
    /// off): the writers of an append hot spot, served by leaf combining instead.
    pub append_hot_periods: u64,
    /// Exclusive leaf-latch acquisitions that had to wait (0 unless the `latch-stats` cargo
    /// feature is on).
    pub latch_slow_paths: u64,
    /// Exclusive leaf-latch acquisitions whose previous holder was another thread, a proxy
    /// for cache-line transfers (0 unless the `latch-stats` cargo feature is on).
    pub latch_handoffs: u64,
    /// Leaf combining ([`Config::combining`](crate::Config::combining)): inserts and
    /// removals that a latch holder applied for a writer that found the leaf latched.
    pub ops_combined: u64,
    /// Leaf combining: critical sections in which a latch holder applied at least one such
    /// operation (`ops_combined / combine_batches` operations per batch).
    pub combine_batches: u64,
    /// The side structure ([`Config::side_structure`](crate::Config::side_structure)): key
    /// ranges hot now.
    pub side_ranges: usize,
    /// The side structure: entries (tombstones included) waiting in it now, not yet merged
    /// into the tree (they are counted in `len`, not in the page counts).
    pub side_entries: usize,
    /// The side structure: inserts and removals it took instead of the tree.
    pub side_diverted: u64,
    /// The side structure: merges of a range into the tree.
    pub side_merges: u64,
    /// The side structure: entries those merges wrote into the tree (`side_merged_entries /
    /// side_merges` entries per merge).
    pub side_merged_entries: u64,
    /// The side structure: key ranges marked hot.
    pub side_ranges_marked: u64,
    /// The side structure: key ranges merged and cooled.
    pub side_ranges_cooled: u64,
    /// Line mode ([`Config::line_mode`](crate::Config::line_mode)): leaves in line mode now.
    pub hot_leaves: usize,
    /// Line mode: switches of a leaf into it.
    pub line_switches: u64,
    /// Line mode: switches out of it (an exclusive latch, a scan or a shared latch met the
    /// leaf in line mode, or an eviction): `line_switches - hot_leaves`.
    pub line_exits: u64,
    /// Line mode: in-place updates made without the leaf latch.
    pub line_updates: u64,
    /// Line mode: such updates that waited for a stretch another updater held.
    pub line_conflicts: u64,
    /// Line mode: cold leaves (no update in line mode for a few milliseconds) whose line
    /// mode a writer of another leaf ended, to take their entry of the process-wide table
    /// (counted in `line_exits` too).
    pub line_evictions: u64,
    /// The conflict-control module
    /// ([`Config::conflict_control`](crate::Config::conflict_control)): in-place updates in line mode that waited for
    /// the advisory lock of their key, held by an update of the same key (or of one with
    /// the same hash).
    pub ccm_waits: u64,
    /// The conflict-control module: point reads and updates of a leaf in line mode that its
    /// mark bits answered "absent" without a search of the leaf.
    pub mark_rejections: u64,
    /// Insert segments ([`Config::insert_segments`](crate::Config::insert_segments)):
    /// inserts of new keys into a leaf in line mode that went into one of its insert
    /// segments, without the leaf latch.
    pub segment_inserts: u64,
    /// Insert segments: records moved into the sorted area of their leaf when its line mode
    /// ended (counted then; a record still in a segment is in neither count's difference).
    pub segment_moves: u64,
    /// Insert segments: segment inserts that waited for their segment, held by another
    /// inserter.
    pub segment_waits: u64,
    /// Groups of siblings XMerge examined (from the space manager, `compact` and the
    /// memory budget).
    pub xmerge_attempts: u64,
    /// Groups XMerge packed into fewer nodes.
    pub xmerges: u64,
    /// Pages XMerge freed.
    pub pages_freed: u64,
    /// Bytes of free pages whose memory is kept for reuse (pool-wide: a pool may serve
    /// several trees).
    pub bytes_free: usize,
    /// Bytes of free pages whose memory went back to the system
    /// ([`Config::return_memory`](crate::Config::return_memory); pool-wide).
    pub bytes_returned: usize,
    /// Huge-page extents ([`Config::huge_pages`](crate::Config::huge_pages)): the 2 MiB
    /// extents of the tree's page pool that filled up and were advised for transparent huge
    /// pages, since the pool was made (pool-wide). Whether the kernel backs them with huge
    /// pages is its choice (its `transparent_hugepage` settings, free memory).
    pub huge_extents: u64,
    /// Fresh pages the space manager faulted in ahead of use
    /// ([`Config::prefault`](crate::Config::prefault); pool-wide, since the pool was made).
    pub pages_prefaulted: u64,
    /// NUMA ([`Config::numa`](crate::Config::numa)): the nodes of the tree's topology.
    pub numa_nodes: usize,
    /// NUMA: point reads that took the NUMA-aware index phase (every point read while a
    /// NUMA part is on; 0 otherwise).
    pub numa_reads: u64,
    /// NUMA: inner-node pages those reads read, the tree's or a replica's.
    pub numa_inner_reads: u64,
    /// NUMA: inner-node pages of the tree those reads read on another node than the
    /// reader's (by the page's node in the pool and the reader's in the topology; a
    /// replica's pages are on the reader's node). Per read: `numa_remote_inner_reads /
    /// numa_reads`.
    pub numa_remote_inner_reads: u64,
    /// NUMA: leaf pages those reads (and the replica reads) read on another node than the
    /// reader's (by the page's node in the pool: with [`Numa::placement`](crate::Numa#structfield.placement)
    /// off every page counts as node 0's). Per read: `numa_remote_leaf_reads / numa_reads`.
    pub numa_remote_leaf_reads: u64,
    /// Page placement ([`Numa::placement`](crate::Numa#structfield.placement)): the pages in use on each
    /// node, indexed by node (pool-wide: all partitions of a
    /// [`PartitionedTree`](crate::PartitionedTree)); empty when placement is off or the
    /// topology has one node.
    pub pages_per_node: Vec<usize>,
    /// Page placement: pages handed to a thread of another node than the page's, because its
    /// own node had no free page while others held plenty (pool-wide).
    pub numa_pages_placed_remote: u64,
    /// Upper-level replicas ([`Numa::replicas`](crate::Numa::replicas)): point reads that
    /// found their leaf through their node's replica.
    pub replica_reads: u64,
    /// Replicas: point reads that found their node's replica stale (or the structure changed
    /// during the read) and descended the tree's own inner nodes.
    pub replica_fallbacks: u64,
    /// Replicas: refreshes that brought a node's replica up to date.
    pub replica_refreshes: u64,
    /// Replicas: inner-node pages copied by refreshes (a refresh copies only the pages whose
    /// original changed).
    pub replica_pages_copied: u64,
    /// Replicas: bytes of page copies, all nodes together (each node's is at most
    /// [`Numa::replica_budget`](crate::Numa::replica_budget)).
    pub replica_bytes: usize,
    /// Replicas: whether some node's replica outgrew its budget and is no longer used (its
    /// copies of the tree's current inner nodes alone would not fit).
    pub replica_over_budget: bool,
    /// Replicas: copies dropped because their pages were no longer inner nodes of the tree
    /// (their memory goes back to the system where the system page divides the page).
    pub replica_copies_dropped: u64,
    /// NUMA (any part on): exclusive acquisitions of a leaf latch by a writer on another
    /// thread than the latch's last holder, on the same node as that holder.
    pub numa_same_node_handoffs: u64,
    /// NUMA: such handoffs from a thread on another node than the last holder's: the
    /// latch word and the leaf's cache lines moved between nodes. Per operation, what the
    /// cohort latch ([`Numa::cohort`](crate::Numa::cohort)) reduces.
    pub numa_cross_node_handoffs: u64,
    /// NUMA: the longest a writer waited for a leaf latch it found taken, in nanoseconds
    /// (a starved writer would show here).
    pub numa_latch_max_wait_ns: u64,
    /// Cohort latches ([`Numa::cohort`](crate::Numa::cohort)): leaf latches this tree
    /// inflated to cohort latches.
    pub cohort_latches: u64,
}

impl Tree {
    /// Shape, space and counters. Walks every node under its shared latch: O(pages).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for i in 0u32..10_000 {
    ///     tree.insert(&i.to_be_bytes(), b"value").unwrap();
    /// }
    /// let stats = tree.stats();
    /// assert_eq!(stats.len, 10_000);
    /// assert!(stats.height >= 2 && stats.splits > 0);
    /// assert!(stats.fill_factor > 0.0 && stats.fill_factor <= 1.0);
    /// ```
    pub fn stats(&self) -> Stats {
        let core = &*self.core;
        // Counted before the gate: the shards' mutexes are never taken under it.
        let side_entries = core.side.entries();
        let _gate = core.space_gate.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = Stats {
            bytes_allocated: core.bytes_in_use(),
            len: core.len(),
            splits: core.events.splits.load(Ordering::Relaxed),
            merges: core.events.merges.load(Ordering::Relaxed),
            merges_skipped: core.counters.sum(Counter::MergesSkipped).max(0) as u64,
            restarts: core.counters.sum(Counter::Restarts).max(0) as u64,
            leaf_restarts: core.counters.sum(Counter::LeafRestarts).max(0) as u64,
            contention_splits: core.events.contention_splits.load(Ordering::Relaxed),
            contention_split_attempts: core
                .events
                .contention_split_attempts
                .load(Ordering::Relaxed),
            split_gate_waits: core.events.split_gate_waits.load(Ordering::Relaxed),
            latch_slow_paths: core.counters.sum(Counter::LatchSlowPaths).max(0) as u64,
            latch_handoffs: core.counters.sum(Counter::LatchHandoffs).max(0) as u64,
            append_hot_periods: core.policy.append_hot_periods(),
            ops_combined: core.counters.sum(Counter::OpsCombined).max(0) as u64,
            combine_batches: core.counters.sum(Counter::CombineBatches).max(0) as u64,
            partitions: 1,
            slices: core.events.slices.load(Ordering::Relaxed),
            melds: core.events.melds.load(Ordering::Relaxed),
            repartition_pages: core.events.repartition_pages.load(Ordering::Relaxed),
            xmerge_attempts: core.events.xmerge_attempts.load(Ordering::Relaxed),
            xmerges: core.events.xmerges.load(Ordering::Relaxed),
            pages_freed: core.events.pages_freed.load(Ordering::Relaxed),
            heap_packs: core.events.heap_packs.load(Ordering::Relaxed),
            side_ranges: core.side.ranges(),
            side_entries,
            side_diverted: core.counters.sum(Counter::SideDiverted).max(0) as u64,
            side_merges: core.side.stats.merges.load(Ordering::Relaxed),
            side_merged_entries: core.side.stats.merged_entries.load(Ordering::Relaxed),
            side_ranges_marked: core.side.stats.ranges_marked.load(Ordering::Relaxed),
            side_ranges_cooled: core.side.stats.ranges_cooled.load(Ordering::Relaxed),
            hot_leaves: crate::sync::lines::count_tree(core.id() as usize),
            line_switches: core.counters.sum(Counter::LineSwitches).max(0) as u64,
            line_updates: core.counters.sum(Counter::LineUpdates).max(0) as u64,
            line_conflicts: core.counters.sum(Counter::LineConflicts).max(0) as u64,
            line_evictions: core.counters.sum(Counter::LineEvictions).max(0) as u64,
            ccm_waits: core.counters.sum(Counter::CcmWaits).max(0) as u64,
            mark_rejections: core.counters.sum(Counter::MarkRejections).max(0) as u64,
            segment_inserts: core.counters.sum(Counter::SegmentInserts).max(0) as u64,
            segment_moves: core.counters.sum(Counter::SegmentMoves).max(0) as u64,
            segment_waits: core.counters.sum(Counter::SegmentWaits).max(0) as u64,
            ..Stats::default()
        };
        s.line_exits = s.line_switches.saturating_sub(s.hot_leaves as u64);
        core.numa_stats(&mut s);
        (s.bytes_free, s.bytes_returned) = core.pool_free_bytes();
        s.huge_extents = core.pool_huge_extents();
        s.pages_prefaulted = core.pool_prefaulted();
        let mut used = 0usize;
        let size = core.config().page_size;
        let long_keys = core.has_long_keys();
        let mut key_chains = std::collections::HashSet::new();
        let root = core.root_id();
        let mut stack = vec![(root, u16::MAX)];
        while let Some((pid, expect_level)) = stack.pop() {
            let Ok((node, latch)) = core.page(pid) else {
                continue;
            };
            // Sizes, stubs and keys only: leaves in line mode stay in it.
            let _s = latch.shared_keeping_lines();
            let level = node.level();
            if expect_level != u16::MAX && level != expect_level {
                continue; // freed and reused under our feet
            }
            if level == TABLE_LEVEL {
                // A partition table: its children are roots of any height.
                s.inner_pages += 1;
                s.partitions = node.count() + 1;
                used += node.used_space();
                stack.extend(
                    (0..=node.count()).filter_map(|i| Some((node.child(i).ok()?, u16::MAX))),
                );
                continue;
            }
            s.height = s.height.max(level as usize + 1);
            used += node.used_space();
            if long_keys {
                // A key blob is named by its entry, separators and fences, and may outlive
                // its entry: count each chain once.
                let mut stubs = Vec::new();
                let _ = long_key::refs_in(&node, &mut stubs);
                key_chains.extend(
                    stubs
                        .into_iter()
                        .filter(|b| matches!(b.at, Place::Chain(_))),
                );
            }
            if level == 0 {
                s.leaf_pages += 1;
                for i in 0..node.count() {
                    if let Ok(Some(stub)) = node.stub(i) {
                        s.out_of_line_values += 1;
                        if let Place::Chain(_) = stub.at {
                            s.blob_pages += blob::pages_for(stub.len, size);
                        }
                    }
                }
                if long_keys {
                    s.out_of_line_keys += long_key::long_entries(&node).unwrap_or(0);
                }
            } else {
                s.inner_pages += 1;
                for i in 0..=node.count() {
                    if let Ok(c) = node.child(i) {
                        stack.push((c, level - 1));
                    }
                }
            }
        }
        s.blob_pages += key_chains
            .iter()
            .map(|b| blob::pages_for(long_key::blob_len(b.len, size).unwrap_or(0), size))
            .sum::<usize>();
        (s.heap_pages, s.heap_bytes) = core.heap_usage();
        s.blob_pages += s.heap_pages;
        let pages = s.leaf_pages + s.inner_pages;
        if pages > 0 {
            s.fill_factor = used as f64 / (pages * core.config().page_size) as f64;
        }
        s
    }
}
