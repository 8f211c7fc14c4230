//! The tree's shared state ([`TreeCore`]) and the one descent (`descent`).
//!
//! A `TreeCore` is what every operation works on; the public [`Tree`](crate::Tree) holds it
//! in an `Arc`, which the space manager thread shares. Its fields are grouped by who writes
//! them:
//! * **Hot words** (`HotWords`, on cache lines of their own): the meta latch, the root id and
//!   the page directory. Every operation reads them; only root changes write them.
//! * **Events** (`Events`, on cache lines of their own): counters of rare events (splits,
//!   merges, XMerges, pages held), written by structure changes and the space manager.
//! * **Striped counters** (`StripedCounters`): the data-path counters (`len`, restarts), in
//!   one lazily allocated block.
//!
//! **Rightmost leaf.** A tree's rightmost leaf keeps its page id for the tree's whole life:
//! a split keeps the upper half in place, a merge moves the left node into the right one, and
//! XMerge writes its packed nodes over the rightmost members of a group, so the rightmost
//! leaf is never the page that is freed; a root split moves the old root's upper half into
//! the same page, and collapsing a root frees the inner root, never the leaf. An emptied
//! rightmost leaf therefore stays (it absorbs its left neighbour when they merge).
//! `check_invariants` asserts it. Later structure changes that move it (slice, meld of a
//! multi-rooted tree) must bump [`TreeCore::generation`], which invalidates anything that
//! caches the rightmost leaf.

pub(crate) mod descent;
mod phases;
mod point;

use crate::blob::Place;
use crate::config::Config;
use crate::error::Error;
use crate::node::raw::RawPage;
use crate::node::{Node, NodeMut};
use crate::page::{Directory, PageId, PagePool};
use crate::policy::LeafPolicies;
use crate::smo::Deferred;
use crate::sync::seam::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::sync::{Backoff, Counter, HybridLatch, Restart, StripedCounters};
use std::sync::Arc;

pub(crate) use descent::{Above, OptimisticNoWait, RandomRoute, RootSlot, Target, Visit};
pub(crate) use point::LeafParent;

/// The words every operation reads, on cache lines of their own.
#[repr(align(128))]
struct HotWords {
    /// Guards `root`: optimistic readers validate it after reading the root id.
    meta: HybridLatch,
    root: AtomicU32,
    /// The address of the root's page, stored with `root` (under the meta latch): the
    /// descents start from it without a directory lookup (about 20 instructions and two
    /// dependent loads per operation). Pages are never unmapped (`page::release`), so a
    /// stale address read by an optimistic reader is as harmless as a stale id: the meta
    /// latch's validation catches it. A std atomic under Shuttle too: only the meta latch
    /// orders it.
    root_page: std::sync::atomic::AtomicPtr<u8>,
    directory: Directory,
    /// Whether point reads prefetch their whole leaf (`Config::leaf_prefetch`, resolved
    /// when the tree is made); read at every point read's leaf step.
    whole_leaf: bool,
}

/// Whether the last exclusive descent ended at the rightmost leaf: then the next one tries
/// the append finger first (`descent`). Written only when it changes, on a line of its own:
/// where writers meet on the rightmost leaf it changes often (each time the finger finds the
/// leaf's latch taken and the writer descends instead), and beside [`HotWords`] each change
/// took from every other thread the line that every descent reads first (`seq-insert`, two
/// writers: perf put ~3% of the samples on loads of that line).
#[repr(align(128))]
struct AppendHint(AtomicBool);

/// Counters of structure changes; written rarely, never on the data path.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Events {
    pub splits: AtomicU64,
    pub merges: AtomicU64,
    pub contention_splits: AtomicU64,
    pub contention_split_attempts: AtomicU64,
    /// Splits given up because another thread held the node's split gate (`smo::gate`).
    pub split_gate_waits: AtomicU64,
    pub xmerge_attempts: AtomicU64,
    pub xmerges: AtomicU64,
    pub pages_freed: AtomicU64,
    /// Heap pages packed to make room for a chunk (`heap`).
    pub heap_packs: AtomicU64,
    /// Every change of an inner node bumps it (`smo::inner`); upper-level replicas compare
    /// it to know whether they are current, and it is the structure sequence of point reads'
    /// two phases (`phases`).
    pub inner_changes: AtomicU64,
    /// Slices and melds of a multi-rooted tree (`crate::partition`), and the pages they
    /// wrote.
    pub slices: AtomicU64,
    pub melds: AtomicU64,
    pub repartition_pages: AtomicU64,
    /// Pages this tree holds from its pool.
    pub pages_held: AtomicUsize,
    /// `splits` + 1 at the last split of the rightmost leaf for a key a few slots short of
    /// its end (0: none yet): appends arrive out of order (`smo::split`).
    pub append_disorder: AtomicU64,
}

/// The shared state of one tree: see the module doc.
pub(crate) struct TreeCore {
    hot: HotWords,
    appending: AppendHint,
    pool: Arc<PagePool>,
    config: Config,
    pub(crate) policy: LeafPolicies,
    pub(crate) counters: StripedCounters,
    pub(crate) events: Events,
    /// The page of the rightmost leaf, fixed for the tree's life (see the module doc).
    rightmost_leaf: PageId,
    /// Its address (fixed too: pages are never unmapped), so that the append finger needs no
    /// directory lookup; never written after construction (an atomic only to keep the tree
    /// `Send` and `Sync`; its relaxed load is a plain load).
    rightmost_page: std::sync::atomic::AtomicPtr<u8>,
    /// Bumped by structure changes that move the rightmost leaf or the root to another tree
    /// (slice and meld of a multi-rooted tree).
    generation: AtomicU64,
    /// The space generation (`space::sweep`) at which a reclaim last freed nothing
    /// (`u64::MAX`: never): reclaiming is not tried again until it changes.
    pub(crate) reclaim_idle: AtomicU64,
    /// The space generation at the last reclaiming sweep.
    pub(crate) last_sweep: AtomicU64,
    /// Where the next sweep at the budget starts: a key of the leaf parent the last one
    /// stopped in (`None`: the rightmost), so that sweeps move on instead of walking the
    /// part they packed again.
    pub(crate) sweep_resume: Mutex<Option<Vec<u8>>>,
    /// Merges that found a latch taken, retried by later operations (`smo::merge`).
    pub(crate) deferred: Deferred,
    /// Held by the space manager while it works and by `stats` and `check_invariants`
    /// while they walk the tree, so that those see no change the manager makes.
    pub(crate) space_gate: Mutex<()>,
    /// Whether a long key was ever stored (`long_key`): structure changes count stored
    /// forms only then.
    pub(crate) long_keys: AtomicBool,
    /// The blob heap's index of its pages; also held while the reference count of a key
    /// blob changes (`heap`, `long_key`).
    pub(crate) heap: Mutex<crate::heap::HeapState>,
    /// The side structure for hot ranges (`side`).
    pub(crate) side: crate::side::Side,
    /// One splitter per node (`smo::gate`).
    pub(crate) gates: crate::smo::SplitGates,
    /// Whether the root is a partition table (`crate::partition`), for the paths that look
    /// at the table outside a descent; set before the tree is shared, never changed.
    pub(crate) partitioned: bool,
    /// The NUMA parts that are on (`crate::numa`); `None` when all are off.
    pub(crate) numa: Option<Box<crate::numa::NumaState>>,
}

impl TreeCore {
    /// An empty tree with `config` (already validated) over its own page pool.
    pub(crate) fn new(config: Config) -> Result<TreeCore, Error> {
        config.validate()?;
        let pool = PagePool::placed(
            config.page_size,
            config.max_memory,
            config.return_memory,
            crate::page::Huge::of(&config),
            config.prefault && config.space_manager,
            config.numa.placement(),
        );
        Self::in_pool(config, pool)
    }

    /// An empty tree whose pages come from `pool` (which may serve other trees too).
    pub(crate) fn in_pool(config: Config, pool: Arc<PagePool>) -> Result<TreeCore, Error> {
        let root = pool.allocate(1).map_err(|_| Error::OutOfSpace {
            max_memory: pool.max_memory(),
            in_use: pool.bytes_in_use(),
        })?[0];
        let numa = crate::numa::NumaState::new(&config.numa, config.page_size);
        let directory = Directory::of(&pool);
        let root_page = directory.page(root).expect("a page just allocated");
        let tree = TreeCore {
            hot: HotWords {
                meta: HybridLatch::new(),
                root: AtomicU32::new(root),
                root_page: std::sync::atomic::AtomicPtr::new(root_page),
                directory,
                whole_leaf: config.leaf_prefetch.whole(),
            },
            appending: AppendHint(AtomicBool::new(false)),
            pool,
            policy: LeafPolicies::new(&config),
            side: crate::side::Side::new(&config),
            gates: crate::smo::SplitGates::new(config.split_gate),
            config,
            counters: StripedCounters::default(),
            events: Events::default(),
            rightmost_leaf: root,
            rightmost_page: std::sync::atomic::AtomicPtr::new(root_page),
            generation: AtomicU64::new(0),
            reclaim_idle: AtomicU64::new(u64::MAX),
            last_sweep: AtomicU64::new(0),
            sweep_resume: Mutex::new(None),
            deferred: Deferred::default(),
            space_gate: Mutex::new(()),
            long_keys: AtomicBool::new(false),
            heap: Mutex::default(),
            partitioned: false,
            numa,
        };
        tree.events.pages_held.store(1, Ordering::Relaxed);
        {
            let (node, latch) = tree.page(root).expect("fresh page");
            let mut x = latch.exclusive();
            NodeMut::new(node, &mut x).init(0, None, None, &[]);
        }
        Ok(tree)
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The tree's identity for the re-entry guard (`sync::reentry`): its address.
    #[inline(always)]
    pub(crate) fn id(&self) -> *const () {
        self as *const TreeCore as *const ()
    }

    /// The meta latch, which guards the root id.
    #[inline]
    pub(crate) fn meta(&self) -> &HybridLatch {
        &self.hot.meta
    }

    /// The root's page id (validate the meta latch after reading it).
    #[inline]
    pub(crate) fn root_id(&self) -> PageId {
        self.hot.root.load(Ordering::Acquire)
    }

    /// The root's page: [`page`](Self::page) of [`root_id`](Self::root_id) without the
    /// directory lookup (validate the meta latch after reading the page).
    #[inline(always)]
    pub(crate) fn root_page(&self) -> (Node, &HybridLatch) {
        self.page_at(
            self.hot
                .root_page
                .load(std::sync::atomic::Ordering::Acquire),
        )
    }

    /// Publishes a new root; the caller holds the meta latch exclusively.
    pub(crate) fn set_root(&self, pid: PageId) {
        let ptr = self.hot.directory.page(pid).expect("a root in use");
        self.hot.root.store(pid, Ordering::Release);
        self.hot
            .root_page
            .store(ptr, std::sync::atomic::Ordering::Release);
    }

    /// See [`AppendHint`].
    #[inline]
    pub(crate) fn appending(&self) -> bool {
        self.appending.0.load(Ordering::Relaxed)
    }

    /// Sets the [`AppendHint`], writing its line only on a change.
    #[inline]
    pub(crate) fn set_appending(&self, on: bool) {
        if self.appending() != on {
            self.appending.0.store(on, Ordering::Relaxed);
        }
    }

    /// The page id of the rightmost leaf.
    #[inline]
    pub(crate) fn rightmost_leaf(&self) -> PageId {
        self.rightmost_leaf
    }

    /// The rightmost leaf's page: [`page`](Self::page) of
    /// [`rightmost_leaf`](Self::rightmost_leaf) without the directory lookup.
    #[inline(always)]
    pub(crate) fn rightmost_page(&self) -> (Node, &HybridLatch) {
        self.page_at(
            self.rightmost_page
                .load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// See the field.
    #[allow(dead_code)] // read by tests
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Bumps [`generation`](Self::generation) (slice and meld, `crate::partition`).
    pub(crate) fn bump_generation(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    // ---- pages ------------------------------------------------------------------------

    /// The read view and latch of page `pid`.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<(Node, &HybridLatch), Restart> {
        Ok(self.page_at(self.hot.directory.page(pid)?))
    }

    /// The read view and latch of the page at `ptr`, an address the directory gave for a
    /// page of this tree's pool.
    #[inline(always)]
    fn page_at(&self, ptr: *mut u8) -> (Node, &HybridLatch) {
        // SAFETY: `ptr` addresses a whole page of the pool (the directory's translation of
        // a page id, or a copy of one kept by `TreeCore`), which stays mapped while this
        // tree holds the pool: pages are never unmapped; the first 8 bytes of every page are
        // its latch word, 8-aligned (pages are 4096-aligned) and only ever accessed
        // atomically.
        unsafe {
            (
                Node::new(RawPage::new(ptr, self.config.page_size)),
                &*(ptr as *const HybridLatch),
            )
        }
    }

    /// Takes `n` pages from the pool.
    pub(crate) fn allocate(&self, n: usize) -> Option<Vec<PageId>> {
        let ids = self.pool.allocate(n).ok()?;
        self.events.pages_held.fetch_add(n, Ordering::Relaxed);
        Some(ids)
    }

    /// Returns page `pid` to the pool (its exclusive latch is held by the caller).
    pub(crate) fn free(&self, pid: PageId) {
        self.pool.free(pid);
        self.events.pages_held.fetch_sub(1, Ordering::Relaxed);
    }

    /// Returns pages no reader validates to the pool, without latching them: a blob's
    /// (`crate::blob`) or a split's unused spares (`smo::split`).
    pub(crate) fn free_pages(&self, ids: &[PageId]) {
        self.pool.free_many(ids);
        self.events
            .pages_held
            .fetch_sub(ids.len(), Ordering::Relaxed);
    }

    /// The page directory, for translations outside `page` (blob pages).
    #[inline]
    pub(crate) fn directory(&self) -> &Directory {
        &self.hot.directory
    }

    /// Gives the memory of free pages of the pool back to the system (`page/release.rs`):
    /// those beyond the pool's reserve, or all of them.
    pub(crate) fn release_memory(&self, all: bool) -> usize {
        self.pool.release(all)
    }

    /// After a removal, for a tree without the space manager: `release_memory(false)` once
    /// the pool's free pages exceed twice its reserve (two loads otherwise).
    #[inline]
    pub(crate) fn release_memory_if_many(&self) {
        if !self.config.space_manager {
            self.pool.release_if_many();
        }
    }

    /// Free page bytes of the pool kept for reuse, and given back to the system.
    pub(crate) fn pool_free_bytes(&self) -> (usize, usize) {
        (self.pool.bytes_free(), self.pool.bytes_returned())
    }

    /// Collapses the pool's full huge-page extents that wait for the space manager.
    pub(crate) fn collapse_extents(&self) {
        self.pool.collapse_pending();
    }

    /// The space manager's part of `Config::prefault`: faults in the segment of fresh pages
    /// a writer asked for, if any (`page::prefault`): `None` if none, else the pages of it
    /// writers had taken already.
    pub(crate) fn prefault_ahead(&self) -> Option<usize> {
        self.pool.prefault_ahead()
    }

    /// Pages of the pool faulted in ahead of use (`Stats::pages_prefaulted`).
    pub(crate) fn pool_prefaulted(&self) -> u64 {
        self.pool.prefaulted()
    }

    /// Huge-page extents of the pool advised for huge pages (`Stats::huge_extents`).
    pub(crate) fn pool_huge_extents(&self) -> u64 {
        self.pool.huge_extents()
    }

    /// Under page placement (`Numa::placement`), the pool's pages in use per node and the
    /// pages it handed to a thread of another node; empty and 0 without.
    pub(crate) fn pool_placement(&self) -> (Vec<usize>, u64) {
        (self.pool.pages_per_node(), self.pool.pages_placed_remote())
    }

    /// Page bytes this tree holds.
    pub(crate) fn bytes_in_use(&self) -> usize {
        self.events.pages_held.load(Ordering::Relaxed) * self.config.page_size
    }

    /// Whether `Config::max_memory` sets a budget (the default sets none).
    pub(crate) fn has_memory_budget(&self) -> bool {
        self.config.max_memory != usize::MAX
    }

    /// Takes `n` pages of the budget without pages (the side structure's charge); `false` if
    /// the budget does not allow them.
    pub(crate) fn reserve_pages(&self, n: usize) -> bool {
        self.pool.reserve_budget(n)
    }

    /// Gives back `n` pages taken by [`reserve_pages`](Self::reserve_pages).
    pub(crate) fn unreserve_pages(&self, n: usize) {
        self.pool.unreserve_budget(n)
    }

    pub(crate) fn out_of_space(&self) -> Error {
        Error::OutOfSpace {
            max_memory: self.pool.max_memory(),
            in_use: self.pool.bytes_in_use(),
        }
    }

    // ---- input checks and restarts ----------------------------------------------------

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<(), Error> {
        let max = self.config.max_key_len();
        if key.len() > max {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max,
            });
        }
        Ok(())
    }

    pub(crate) fn check_value(&self, value: &[u8]) -> Result<(), Error> {
        let max = self.config.max_value_len();
        if value.len() > max {
            return Err(Error::ValueTooLarge {
                len: value.len(),
                max,
            });
        }
        Ok(())
    }

    /// Runs `attempt` until it does not restart, counting restarts. Always inlined: the
    /// attempt is the caller's body (a writer's whole leaf phase); left to the optimiser,
    /// `insert`'s copy was once put out of line, with 80 instructions of prologue and
    /// epilogue per append (callgrind).
    #[inline(always)]
    pub(crate) fn retry<T>(&self, mut attempt: impl FnMut() -> Result<T, Restart>) -> T {
        let mut backoff = Backoff::default();
        loop {
            match attempt() {
                Ok(v) => return v,
                Err(Restart) => self.restarted(&mut backoff),
            }
        }
    }

    /// Counts a restart of an optimistic loop and backs off before its next attempt.
    #[inline]
    pub(crate) fn restarted(&self, backoff: &mut Backoff) {
        self.counters.add(Counter::Restarts, 1);
        backoff.snooze();
    }

    /// [`retry`](Self::retry) for point reads, which count nothing else: the restart count
    /// is out of line. Inlined, the optimiser hoisted the counter's thread-local lookup out
    /// of the loop, so that every read paid for it before its first attempt (24
    /// instructions per `get`, 18 per `get_with`, callgrind); writers keep `retry`, whose
    /// hoisted lookup serves their other counters too (out of line there, insert cost 21
    /// more).
    #[inline(always)]
    pub(crate) fn retry_read<T>(&self, mut attempt: impl FnMut() -> Result<T, Restart>) -> T {
        let mut backoff = Backoff::default();
        loop {
            match attempt() {
                Ok(v) => return v,
                Err(Restart) => {
                    self.count_restart();
                    backoff.snooze();
                }
            }
        }
    }

    /// Counts a restart, out of line.
    #[cold]
    #[inline(never)]
    fn count_restart(&self) {
        self.counters.add(Counter::Restarts, 1);
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.counters.sum(Counter::Len).max(0) as usize
    }

    /// Whether `node` is emptier than the merge threshold allows.
    pub(crate) fn is_underfull(&self, node: &Node) -> bool {
        node.count() == 0
            || (node.used_space() as f64) < self.config.merge_threshold * node.page_size() as f64
    }
}

impl Drop for TreeCore {
    /// A tree that shares its pool gives its pages back; a tree that owns its pool lets the
    /// pool's drop release them.
    fn drop(&mut self) {
        // Leaves in line mode give their entries of the process-wide table back.
        crate::sync::lines::release_tree(self.id() as usize);
        if Arc::strong_count(&self.pool) == 1 {
            return;
        }
        let mut stack = vec![self.root_id()];
        // Key blobs are named by stored forms in several nodes: each is freed once. Heap
        // chunks go with their pages, at the end.
        let mut key_blobs = Vec::new();
        while let Some(pid) = stack.pop() {
            if let Ok((node, _)) = self.page(pid) {
                if self.has_long_keys() {
                    let _ = crate::long_key::refs_in(&node, &mut key_blobs);
                }
                if !node.is_leaf() {
                    stack.extend((0..=node.count()).filter_map(|i| node.child(i).ok()));
                } else {
                    for i in 0..node.count() {
                        if let Ok(Some(stub)) = node.stub(i) {
                            if let Place::Chain(_) = stub.at {
                                self.free_blob(stub);
                            }
                        }
                    }
                }
            }
            self.pool.free(pid);
        }
        key_blobs.sort_unstable();
        key_blobs.dedup();
        let mut heap = std::mem::take(self.heap.get_mut().unwrap_or_else(|e| e.into_inner()));
        for stub in key_blobs {
            if let Place::Chain(_) = stub.at {
                self.free_key_blob(&mut heap, stub);
            }
        }
        let pages: Vec<PageId> = heap.pages().collect();
        self.free_pages(&pages);
    }
}

#[cfg(test)]
mod tests {
    use super::descent::Owned;
    use super::*;
    use crate::node::OwnerToken;
    use crate::{Config, Tree};

    fn tree() -> Tree {
        Tree::with_config(Config {
            space_manager: false,
            ..Config::default()
        })
        .unwrap()
    }

    #[test]
    fn an_owner_writes_without_latches() {
        let t = tree();
        for i in 0u64..10_000 {
            t.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
        }
        // SAFETY: no other thread uses the tree while the token lives.
        let mut token = unsafe { OwnerToken::new() };
        let key = 4_321u64.to_be_bytes();
        let versions_before;
        {
            let r = t
                .core
                .descend(&mut Target::Key(&key, 0), &Owned(&token))
                .unwrap();
            let (_, latch) = t.core.page(r.pid).unwrap();
            versions_before = latch.version();
            let mut node = NodeMut::new(r.node, &mut token);
            let (pos, found) = node.lower_bound(&key, t.core.directory()).unwrap();
            assert!(found);
            node.overwrite_value(pos, &7u64.to_le_bytes());
            // No latch was taken: the version did not move.
            assert_eq!(latch.version(), versions_before);
        }
        assert_eq!(t.get(&key), Some(7u64.to_le_bytes().to_vec()));
        t.check_invariants().unwrap();
    }

    #[test]
    fn the_rightmost_leaf_keeps_its_page() {
        let t = tree();
        let rightmost = t.core.rightmost_leaf();
        for i in 0u64..50_000 {
            t.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        assert_eq!(t.leaf_page_of(&u64::MAX.to_be_bytes()), rightmost);
        for i in (0u64..50_000).rev() {
            t.remove(&i.to_be_bytes());
        }
        assert_eq!(t.leaf_page_of(&u64::MAX.to_be_bytes()), rightmost);
        t.check_invariants().unwrap();
        assert_eq!(t.core.generation(), 0);
    }

    #[test]
    fn an_unwritten_tree_has_no_counter_block() {
        let t = tree();
        assert_eq!(t.core.counters.bytes(), 0);
        assert!(t.get(b"k").is_none());
        assert_eq!(t.core.counters.bytes(), 0);
        t.insert(b"k", b"v").unwrap();
        assert!(t.core.counters.bytes() > 0);
    }

    #[test]
    fn trees_share_a_pool_and_return_their_pages() {
        let pool = PagePool::new(4096, 64 << 20, true);
        let a = TreeCore::in_pool(Config::default(), Arc::clone(&pool)).unwrap();
        let b = TreeCore::in_pool(Config::default(), Arc::clone(&pool)).unwrap();
        assert_eq!(pool.bytes_in_use(), 2 * 4096);
        assert_ne!(a.root_id(), b.root_id());
        drop(a);
        assert_eq!(pool.bytes_in_use(), 4096);
        drop(b);
        assert_eq!(pool.bytes_in_use(), 0);
    }

    #[test]
    fn hot_words_sit_apart_from_events() {
        assert!(std::mem::align_of::<HotWords>() >= 128);
        assert!(std::mem::align_of::<Events>() >= 128);
    }
}
