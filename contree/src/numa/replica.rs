//! Upper-level replicas, kept consistent lazily (the future work of `numa-btree.md` §5.1):
//! every NUMA node holds its own copy of the tree's inner nodes (`shadow`: copies under the
//! ids of their originals, in that node's memory), and point reads on that node descend the
//! copy, reading no other node's memory above the leaf.
//!
//! **Consistency by the structure sequence.** A replica is a copy of every inner node as it
//! was at one value `s` of the tree's structure sequence (`Events::inner_changes`, see
//! `engine::phases`): every change of an inner node passes through `smo::inner`, which bumps
//! the sequence while the changed nodes are latched. A read on the replica
//! 1. loads the replica's `s` and goes on only if the tree's sequence still equals it;
//! 2. descends the copies (each validated against its copy's latch) to a leaf id of the
//!    tree, and takes the leaf's snapshot;
//! 3. loads the tree's sequence again: if it still equals `s`, no inner node has changed
//!    since the copy was made, up to a time after the leaf snapshot; the leaf is the one the
//!    tree itself would have led to, and the read goes on as any read does (leaf phase,
//!    validation; `engine::phases` on a failed leaf phase). Otherwise it falls back to the
//!    tree's own inner nodes.
//!
//! A leaf that was split, merged, freed, reused by another tree of the pool, or whose fences
//! no longer hold the key has changed which leaf holds which keys, which bumped the sequence
//! before its latch was released and thus before any snapshot that validates; the check in
//! 3. covers all of these at the cost of one load, where checking the leaf's fences and owner
//! could not be made sound (a freed page may hold a blob whose bytes are user data).
//!
//! **Refresh.** Writers never touch replicas: the bump in `smo::inner` is all a change
//! sends. A read that finds its node's replica stale falls back and, every
//! `REFRESH_EVERY`-th time (and the first), refreshes it if no other reader of the node is
//! already doing so: it walks the tree's inner nodes from the root, copying only those whose
//! latch version moved since their copy was made (a version never comes back), and publishes
//! the copy at the sequence it started from if the sequence did not move during the walk.
//! Under a steady stream of splits the walk keeps failing and reads keep falling back: the
//! replica pays for read-mostly trees only, as the thesis found for replication.
//!
//! **Copies that are no longer needed.** A page that stopped being an inner node (merged
//! away, freed, reused as a leaf) keeps its copy until a walk finds that it did not reach
//! it: after every published refresh, and before a walk would go over the budget, the
//! copies the walk has not visited are dropped (their memory goes back to the system where
//! the system page divides the page, `Shadow::discard`; it reads as zeroes) and a page that
//! becomes an inner node again is copied afresh. No reader trusts a dropped copy: dropping
//! happens inside a refresh, which runs only once the tree's sequence moved past the
//! replica's, so every read that could reach a dropped copy fails step 3.

use super::shadow::Shadow;
use super::topology::{system_nodes, Topology};
use crate::engine::TreeCore;
use crate::node::{Node, TABLE_LEVEL};
use crate::page::PageId;
use crate::sync::seam::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::sync::{Counter, OptimisticGuard, Restart};
use std::collections::{HashMap, HashSet};

/// No copy published yet.
const NEVER: u64 = u64::MAX;
/// The root word's flag: the root is a leaf (the replica holds no inner node).
const ROOT_IS_LEAF: u64 = 1 << 32;
/// A stale replica is refreshed on the first and then every this many reads that find it
/// stale (the others fall back at once).
const REFRESH_EVERY: u64 = 64;
/// The version a copy is recorded at when it marks a partition root that is a leaf.
const LEAF_MARK: u64 = u64::MAX;

/// One node's replica (see the module doc), on cache lines of its own.
#[repr(align(128))]
pub(crate) struct Replica {
    /// The structure sequence the copies match ([`NEVER`] before the first refresh).
    seq: AtomicU64,
    /// The root's page id at `seq`, with [`ROOT_IS_LEAF`].
    root: AtomicU64,
    /// Reads that found the replica stale since the last refresh.
    stale: AtomicU64,
    shadow: Shadow,
    page_size: usize,
    budget: usize,
    refresh: Mutex<Refresh>,
    /// Counters of refreshes (written by the refresher only).
    refreshes: AtomicU64,
    pages_copied: AtomicU64,
    bytes: AtomicUsize,
    over_budget: AtomicBool,
    dropped: AtomicU64,
}

/// The refresher's state, under the replica's mutex.
#[derive(Default)]
struct Refresh {
    /// The latch version of each page's original when its copy was written.
    copied: HashMap<PageId, u64>,
    /// The pages the current (or last) walk reached.
    seen: HashSet<PageId>,
    /// Inner pages to visit (a walk's stack).
    stack: Vec<PageId>,
    /// A page being copied.
    buf: Vec<u8>,
}

impl Replica {
    /// An empty replica for node `node` of `topology`, whose copies may take `budget`
    /// bytes; its memory is bound to the node on a real topology of several nodes.
    pub(crate) fn new(
        node: usize,
        page_size: usize,
        budget: usize,
        topology: &Topology,
    ) -> Replica {
        let bind = (matches!(topology, Topology::System) && system_nodes() > 1).then_some(node);
        Replica {
            seq: AtomicU64::new(NEVER),
            root: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            shadow: Shadow::new(page_size, bind),
            page_size,
            budget,
            refresh: Mutex::new(Refresh::default()),
            refreshes: AtomicU64::new(0),
            pages_copied: AtomicU64::new(0),
            bytes: AtomicUsize::new(0),
            over_budget: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
        }
    }

    /// `(refreshes, pages copied, bytes of copies, over budget, copies dropped)`.
    pub(crate) fn counts(&self) -> (u64, u64, usize, bool, u64) {
        (
            self.refreshes.load(Ordering::Relaxed),
            self.pages_copied.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
            self.over_budget.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }

    /// The leaf that holds `key` found through the copies, with its snapshot, the structure
    /// sequence to run the leaf phase under and its id; `None` if the replica is stale or a
    /// copy changed under the read (the caller falls back to the tree).
    #[inline]
    pub(crate) fn leaf<'t>(
        &'t self,
        core: &'t TreeCore,
        key: &[u8],
    ) -> Option<(u64, Node, OptimisticGuard<'t>, PageId)> {
        let s = self.seq.load(Ordering::Acquire);
        if s == NEVER || s != core.structure_seq() {
            return None;
        }
        let (leaf, guard, inner, pid) = self.descend(core, key).ok()?;
        // Step 3 of the module doc: after the leaf's snapshot.
        if core.structure_seq() != s {
            return None;
        }
        core.counters.add(Counter::NumaInnerReads, inner);
        Some((s, leaf, guard, pid))
    }

    /// Step 2 of the module doc: the copies from the root down, then the tree's leaf; with
    /// the number of copies read and the leaf's id.
    fn descend<'t>(
        &'t self,
        core: &'t TreeCore,
        key: &[u8],
    ) -> Result<(Node, OptimisticGuard<'t>, i64, PageId), Restart> {
        let root = self.root.load(Ordering::Acquire);
        let root_pid = root as PageId;
        if root & ROOT_IS_LEAF != 0 {
            let (leaf, latch) = core.page(root_pid)?;
            let guard = latch.optimistic();
            return Ok((leaf, guard, 0, root_pid));
        }
        let (mut node, latch) = self.shadow.page(root_pid)?;
        let mut guard = latch.optimistic();
        let mut level = node.level();
        let mut inner = 1;
        loop {
            if level == 0 {
                return Err(Restart);
            }
            let pos = node.point_search(key, core.directory())?.0;
            let child = node.child(pos)?;
            if level == 1 {
                let (leaf, leaf_guard) = core.step_to_leaf(child, &guard, true)?;
                return Ok((leaf, leaf_guard, inner, child));
            }
            let (next, latch) = self.shadow.page(child)?;
            let next_guard = latch.optimistic();
            guard.validate()?;
            let next_level = next.level();
            if !fits_below(level, next_level) {
                return Err(Restart);
            }
            if level == TABLE_LEVEL {
                // A partition root: any height, or a leaf (its copy is a marker of level 0).
                if next_level == 0 {
                    let (leaf, leaf_guard) = core.step_to_leaf(child, &next_guard, true)?;
                    return Ok((leaf, leaf_guard, inner + 1, child));
                }
            }
            (node, guard, level) = (next, next_guard, next_level);
            inner += 1;
        }
    }

    /// A read found the replica stale: refreshes it if this read's turn has come and no
    /// other reader is refreshing it (see the module doc); whether it is current now.
    #[cold]
    pub(crate) fn refresh_if_due(&self, core: &TreeCore) -> bool {
        let n = self.stale.fetch_add(1, Ordering::Relaxed);
        if !n.is_multiple_of(REFRESH_EVERY) || self.over_budget.load(Ordering::Relaxed) {
            return false;
        }
        let Ok(mut st) = self.refresh.try_lock() else {
            return false;
        };
        self.refresh_locked(core, &mut st)
    }

    fn refresh_locked(&self, core: &TreeCore, st: &mut Refresh) -> bool {
        let s = core.structure_seq();
        if self.seq.load(Ordering::Acquire) == s {
            return true;
        }
        let Ok(root) = self.walk(core, st) else {
            return false;
        };
        if core.structure_seq() != s {
            return false;
        }
        self.root.store(root, Ordering::Release);
        self.seq.store(s, Ordering::Release);
        self.stale.store(0, Ordering::Relaxed);
        self.refreshes.fetch_add(1, Ordering::Relaxed);
        // The published copies are all among those seen; the others are unreachable.
        if st.copied.len() > st.seen.len() {
            self.drop_unseen(st);
        }
        true
    }

    /// Drops the copies of pages the current walk has not reached (see the module doc).
    fn drop_unseen(&self, st: &mut Refresh) {
        let Refresh { copied, seen, .. } = st;
        let before = copied.len();
        copied.retain(|pid, _| {
            let keep = seen.contains(pid);
            if !keep {
                self.shadow.discard(*pid);
            }
            keep
        });
        self.dropped
            .fetch_add((before - copied.len()) as u64, Ordering::Relaxed);
        self.bytes
            .store(copied.len() * self.page_size, Ordering::Relaxed);
    }

    /// Copies every inner node whose original changed since its copy was made, from the
    /// root down; returns the root word. `Restart` where a read did not validate or the
    /// budget ran out (then the replica is marked over budget).
    fn walk(&self, core: &TreeCore, st: &mut Refresh) -> Result<u64, Restart> {
        let meta = core.meta().optimistic();
        let root = core.root_id();
        let (node, latch) = core.page(root)?;
        let guard = latch.optimistic();
        let level = node.level();
        guard.validate()?;
        meta.validate()?;
        st.seen.clear();
        if level == 0 {
            return Ok(root as u64 | ROOT_IS_LEAF);
        }
        st.stack.clear();
        st.stack.push(root);
        while let Some(pid) = st.stack.pop() {
            st.seen.insert(pid);
            let (node, latch) = core.page(pid)?;
            let guard = latch.optimistic();
            let level = node.level();
            if level == 0 {
                // A partition root that is a leaf: its copy marks it so (level 0).
                guard.validate()?;
                if st.copied.get(&pid) != Some(&LEAF_MARK) {
                    st.buf.clear();
                    st.buf.resize(self.page_size, 0);
                    // All zeroes: a node of level 0 with nothing in it.
                    self.write(st, pid, LEAF_MARK)?;
                }
                continue;
            }
            let version = guard.snapshot_version();
            if st.copied.get(&pid) != Some(&version) {
                st.buf.resize(self.page_size, 0);
                // Not the latch word: the copy has its own.
                node.raw().copy_to(8, &mut st.buf[8..])?;
                guard.validate()?;
                self.write(st, pid, version)?;
            }
            if level > 1 {
                // The children, read from the copy just made or found current.
                let (copy, _) = self.shadow.page(pid)?;
                let count = copy.count();
                for i in 0..=count {
                    st.stack.push(copy.child(i)?);
                }
            }
        }
        Ok(root as u64)
    }

    /// Writes `st.buf` as the copy of `pid`, recorded at `version`.
    fn write(&self, st: &mut Refresh, pid: PageId, version: u64) -> Result<(), Restart> {
        let fresh = !st.copied.contains_key(&pid);
        let over = |st: &Refresh| (st.copied.len() + 1) * self.page_size > self.budget;
        if fresh && over(st) {
            // Copies of pages this walk has not reached yet may still be needed: they are
            // copied again when reached.
            self.drop_unseen(st);
            if over(st) {
                self.over_budget.store(true, Ordering::Relaxed);
                return Err(Restart);
            }
        }
        if !self.shadow.write(pid, &st.buf) {
            return Err(Restart);
        }
        st.copied.insert(pid, version);
        self.pages_copied.fetch_add(1, Ordering::Relaxed);
        self.bytes
            .store(st.copied.len() * self.page_size, Ordering::Relaxed);
        Ok(())
    }
}

impl TreeCore {
    /// The NUMA-aware point read's index phase (`ops::read`): the leaf that holds `key`,
    /// its snapshot and the structure sequence for its leaf phase; through this thread's
    /// node's replica where there is a current one, else down the tree's own inner nodes,
    /// counting those that live on another node.
    #[inline(never)]
    pub(crate) fn numa_leaf<'t>(
        &'t self,
        state: &'t super::NumaState,
        key: &[u8],
    ) -> Result<(u64, Node, OptimisticGuard<'t>), Restart> {
        let here = state.topology.node();
        if let Some(replica) = state.replicas.get(here) {
            let mut found = replica.leaf(self, key);
            if found.is_none() && replica.refresh_if_due(self) {
                found = replica.leaf(self, key);
            }
            if let Some((seq, leaf, guard, pid)) = found {
                self.counters.add(Counter::ReplicaReads, 1);
                self.count_remote_leaf(here, pid)?;
                return Ok((seq, leaf, guard));
            }
            self.counters.add(Counter::ReplicaFallbacks, 1);
        }
        self.counters.add(Counter::NumaReads, 1);
        let seq = self.structure_seq();
        let (leaf, guard, inner, remote, pid) = self.counted_leaf(here, key)?;
        self.counters.add(Counter::NumaInnerReads, inner);
        self.counters.add(Counter::NumaRemoteInner, remote);
        self.count_remote_leaf(here, pid)?;
        Ok((seq, leaf, guard))
    }

    /// Counts leaf `pid` as read remotely if it lives on another node than `here`.
    #[inline]
    fn count_remote_leaf(&self, here: usize, pid: PageId) -> Result<(), Restart> {
        let remote = self.directory().node_of(pid)? != here;
        self.counters
            .add(Counter::NumaRemoteLeaf, i64::from(remote));
        Ok(())
    }

    /// [`point_leaf`](TreeCore::point_leaf) on the tree's own inner nodes, counting the inner
    /// nodes read and those that live on another node than `here`; with the leaf's id.
    fn counted_leaf(
        &self,
        here: usize,
        key: &[u8],
    ) -> Result<(Node, OptimisticGuard<'_>, i64, i64, PageId), Restart> {
        let (mut inner, mut remote) = (0, 0);
        let mut visit = |pid: PageId| -> Result<(), Restart> {
            inner += 1;
            remote += i64::from(self.directory().node_of(pid)? != here);
            Ok(())
        };
        let meta = self.meta().optimistic();
        let root = self.root_id();
        let mut pid = root;
        let (mut node, latch) = self.page(root)?;
        let mut guard = latch.optimistic();
        meta.validate()?;
        let mut level = node.level();
        if level != 0 {
            visit(root)?;
        }
        while level != 0 {
            let child = node.child(node.point_search(key, self.directory())?.0)?;
            let (next, latch) = self.page(child)?;
            let next_guard = latch.optimistic();
            guard.validate()?;
            let next_level = next.level();
            if !fits_below(level, next_level) {
                return Err(Restart);
            }
            if next_level != 0 {
                visit(child)?;
            }
            (node, guard, level, pid) = (next, next_guard, next_level, child);
        }
        Ok((node, guard, inner, remote, pid))
    }
}

/// Whether a node read at level `child` can sit below an inner node of level `parent` (not a
/// leaf): one level down, or, below a partition table, a partition root of any height (a torn
/// read of either shows as a level that does not fit).
fn fits_below(parent: u16, child: u16) -> bool {
    if parent == TABLE_LEVEL {
        child < TABLE_LEVEL - 1
    } else {
        child == parent - 1
    }
}
