//! The tree: descent with optimistic lock coupling, the point operations, splits and merges.
//!
//! **Descent.** A reader takes an optimistic snapshot of the meta latch (which guards the
//! root id), then of the root, and walks down: it reads the child id, takes the child's
//! snapshot and validates the parent. Nothing is written to shared memory on the way down.
//! The leaf is then used in the mode the operation needs: validated optimistically (`get`,
//! `contains_key`), upgraded to shared (`get_with`, scans) or upgraded to exclusive (writes).
//! An upgrade fails if the node changed since the snapshot, and the operation restarts.
//!
//! **Restarts.** Inner functions return `Result<_, Restart>` and use `?`; only the public
//! operations loop.
//!
//! **Splits.** An insert that does not fit releases its leaf and splits it: it descends
//! again, upgrades parent then child to exclusive (top-down, so latches are always taken
//! in tree order), and if the parent has no room for the separator splits the parent first.
//! The split position is the middle, except on the rightmost node of a level when the new key
//! goes past its last key (an append, as with auto-increment keys): then the node is split
//! at its end so the left node stays full.
//!
//! **Merges (underflow policy).** After a removal leaves a leaf less full than
//! `Config::merge_threshold` of a page (25% by default), the leaf is merged with its right
//! sibling under the same parent (its left one if it is the last child), if the result fits in
//! 3/4 of a page; the left node is freed. Merges take latches only with `try`, so they never
//! wait and never slow the remover down: a contended merge is skipped and retried by a later
//! removal. An inner node that underflows is merged the same way, and a root left with a
//! single child is replaced by that child.

use crate::config::Config;
use crate::contention::ContentionPolicy;
use crate::error::Error;
use crate::latch::{ExclusiveGuard, HybridLatch, OptimisticGuard, Restart};
use crate::node::Node;
use crate::page::{PageAllocator, PageId};
use crate::stats::Stats;
use crate::striped::StripedCounter;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The shared state of a [`Tree`](crate::Tree): pages, root, counters and every operation.
/// The public `Tree` holds it in an `Arc`, which the space manager thread shares.
pub(crate) struct BTree {
    pub(crate) pages: PageAllocator,
    config: Config,
    /// Guards `root`: optimistic readers validate it after reading the root id.
    pub(crate) meta: HybridLatch,
    pub(crate) root: AtomicU32,
    len: StripedCounter,
    restarts: StripedCounter,
    splits: AtomicU64,
    merges: AtomicU64,
    contention: ContentionPolicy,
    contention_splits: AtomicU64,
    contention_split_attempts: AtomicU64,
    latch_slow_paths: StripedCounter,
    latch_handoffs: StripedCounter,
    pub(crate) xmerge_attempts: AtomicU64,
    pub(crate) xmerges: AtomicU64,
    pub(crate) pages_freed: AtomicU64,
    /// Removals so far, for [`reclaim`](BTree::reclaim).
    pub(crate) removals: StripedCounter,
    /// `removals` when a reclaiming sweep last freed nothing (-1: never).
    pub(crate) reclaim_floor: AtomicI64,
    /// Held by the space manager while it works and by `stats` and `check_invariants`
    /// while they walk the tree, so that those see no change the manager makes.
    pub(crate) space_gate: Mutex<()>,
}

// SAFETY: all shared state is reached through atomics, latches and the page allocator, whose
// raw page pointers are only dereferenced under the latch protocol described in the module
// docs of `latch`, `node` and this module.
unsafe impl Send for BTree {}
// SAFETY: as above; every method takes `&self` and synchronizes through the node latches.
unsafe impl Sync for BTree {}

/// Where a descent should end.
#[derive(Clone, Copy)]
pub(crate) enum Target<'k> {
    /// The node at `level` whose range holds the key.
    Key(&'k [u8], u16),
    /// The rightmost node at `level`.
    Rightmost(u16),
}

/// A node reached by a descent, with its optimistic snapshot.
pub(crate) struct Visit<'t> {
    pub pid: PageId,
    pub node: Node,
    pub guard: OptimisticGuard<'t>,
}

/// What lies above the node a descent ended at.
pub(crate) enum Above<'t> {
    /// The node is the root; the guard is the meta latch's snapshot.
    Root(OptimisticGuard<'t>),
    /// The parent and the slot in it that leads to the node.
    Parent(Visit<'t>, usize),
}

/// Values up to this many bytes are read by [`Tree::get_with`](crate::Tree::get_with) optimistically, through a
/// copy on the stack; larger ones under a shared latch.
pub const GET_WITH_INLINE: usize = 256;

/// What an optimistic read into a stack buffer found.
enum InlineRead {
    Absent,
    Copied(usize),
    TooLarge,
}

/// The result of an insert attempt that did not fit.
struct NeedSplit;

impl BTree {
    /// See [`Tree::with_config`](crate::Tree::with_config).
    pub(crate) fn with_config(config: Config) -> Result<BTree, Error> {
        config.validate()?;
        let pages = PageAllocator::new(config.page_size, config.max_memory);
        let root = pages.allocate(1).map_err(|_| Error::OutOfSpace {
            max_memory: pages.max_memory(),
            in_use: pages.bytes_in_use(),
        })?[0];
        let tree = BTree {
            pages,
            config: config.clone(),
            meta: HybridLatch::new(),
            root: AtomicU32::new(root),
            len: StripedCounter::new(),
            restarts: StripedCounter::new(),
            splits: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            contention: ContentionPolicy::new(&config),
            contention_splits: AtomicU64::new(0),
            contention_split_attempts: AtomicU64::new(0),
            latch_slow_paths: StripedCounter::new(),
            latch_handoffs: StripedCounter::new(),
            xmerge_attempts: AtomicU64::new(0),
            xmerges: AtomicU64::new(0),
            pages_freed: AtomicU64::new(0),
            removals: StripedCounter::new(),
            reclaim_floor: AtomicI64::new(-1),
            space_gate: Mutex::new(()),
        };
        {
            let (mut node, latch) = tree.page(root).expect("fresh page");
            let _x = latch.exclusive();
            node.init(0, None, None, &[]);
        }
        Ok(tree)
    }

    /// See [`Tree::config`](crate::Tree::config).
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    // ---- page access ------------------------------------------------------------------

    /// The node view and latch of page `pid`.
    #[inline]
    pub(crate) fn page(&self, pid: PageId) -> Result<(Node, &HybridLatch), Restart> {
        let ptr = self.pages.page(pid)?;
        // SAFETY: `ptr` addresses a whole page that stays mapped as long as `self` lives;
        // the first 8 bytes of every page are its latch word, 8-aligned (pages are
        // 4096-aligned) and only ever accessed atomically.
        unsafe {
            Ok((
                Node::from_raw(ptr, self.pages.page_size()),
                &*(ptr as *const HybridLatch),
            ))
        }
    }

    fn out_of_space(&self) -> Error {
        Error::OutOfSpace {
            max_memory: self.pages.max_memory(),
            in_use: self.pages.bytes_in_use(),
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<(), Error> {
        let max = self.config.max_key_len();
        if key.len() > max {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max,
            });
        }
        Ok(())
    }

    fn check_value(&self, value: &[u8]) -> Result<(), Error> {
        let max = self.config.max_value_len();
        if value.len() > max {
            return Err(Error::ValueTooLarge {
                len: value.len(),
                max,
            });
        }
        Ok(())
    }

    /// Runs `attempt` until it does not restart, counting restarts.
    #[inline]
    pub(crate) fn retry<T>(&self, mut attempt: impl FnMut() -> Result<T, Restart>) -> T {
        let mut attempts = 0u32;
        loop {
            match attempt() {
                Ok(v) => return v,
                Err(Restart) => {
                    self.restarts.add(1);
                    // Retry at once a few times (a restart usually means one concurrent
                    // write), then give the CPU away.
                    attempts += 1;
                    if attempts < 4 {
                        for _ in 0..(1 << attempts) {
                            std::hint::spin_loop();
                        }
                    } else {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    // ---- descent ----------------------------------------------------------------------

    /// Descends optimistically to the node `target` names; returns it and what lies above.
    /// Every snapshot returned was valid when the next one was taken.
    pub(crate) fn optimistic_descend(
        &self,
        target: Target,
    ) -> Result<(Visit<'_>, Above<'_>), Restart> {
        let meta = self.meta.optimistic();
        let pid = self.root.load(Ordering::Acquire);
        let (node, latch) = self.page(pid)?;
        let guard = latch.optimistic();
        meta.validate()?;
        let mut above = Above::Root(meta);
        let mut here = Visit { pid, node, guard };
        let target_level = match target {
            Target::Key(_, l) | Target::Rightmost(l) => l,
        };
        loop {
            let level = here.node.level();
            if level == target_level {
                here.guard.validate()?;
                return Ok((here, above));
            }
            if level < target_level {
                here.guard.validate()?;
                return Err(Restart);
            }
            let pos = match target {
                Target::Key(key, _) => here.node.lower_bound(key)?.0,
                Target::Rightmost(_) => here.node.count(),
            };
            let child = here.node.child(pos)?;
            let (node, latch) = self.page(child)?;
            if level == 1 {
                // The child is a leaf, most likely not in cache: start loading its header and
                // slots together instead of one miss after another.
                node.prefetch(0, crate::node::DESCENT_PREFETCH);
            }
            let guard = latch.optimistic();
            here.guard.validate()?;
            above = Above::Parent(here, pos);
            here = Visit {
                pid: child,
                node,
                guard,
            };
        }
    }

    /// Descends to the leaf that holds `key` and latches it exclusively. Inner nodes are
    /// passed optimistically; the leaf latch is acquired with waiting (it sleeps if the leaf
    /// stays busy) and the parent is validated afterwards, so writers to a hot leaf queue up
    /// on its latch instead of restarting from the root. The guard reports whether the
    /// acquisition took the slow path.
    pub(crate) fn optimistic_exclusive_leaf(
        &self,
        key: &[u8],
    ) -> Result<(Node, ExclusiveGuard<'_>), Restart> {
        let meta = self.meta.optimistic();
        let pid = self.root.load(Ordering::Acquire);
        let (mut node, latch) = self.page(pid)?;
        let mut guard = latch.optimistic();
        meta.validate()?;
        if node.level() == 0 {
            guard.validate()?;
            drop(guard);
            let x = latch.exclusive();
            meta.validate()?;
            if !node.is_leaf() {
                return Err(Restart);
            }
            #[cfg(feature = "latch-stats")]
            self.count_latch(node, x.slow_path());
            return Ok((node, x));
        }
        loop {
            let level = node.level();
            let (pos, _) = node.lower_bound(key)?;
            let child = node.child(pos)?;
            let (child_node, child_latch) = self.page(child)?;
            if level == 1 {
                // The id is consistent before we wait on its latch, and still the right
                // child after we got it.
                guard.validate()?;
                let x = child_latch.exclusive();
                guard.validate()?;
                if !child_node.is_leaf() {
                    return Err(Restart);
                }
                #[cfg(feature = "latch-stats")]
                self.count_latch(child_node, x.slow_path());
                return Ok((child_node, x));
            }
            let child_guard = child_latch.optimistic();
            guard.validate()?;
            node = child_node;
            guard = child_guard;
        }
    }

    /// `latch-stats`: counts a slow exclusive acquisition and a handoff (the previous holder
    /// of this leaf's latch was another thread) in striped counters.
    #[cfg(feature = "latch-stats")]
    fn count_latch(&self, mut node: Node, slow_path: bool) {
        thread_local! {
            static ID: u32 = {
                static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
                NEXT.fetch_add(1, Ordering::Relaxed)
            };
        }
        if slow_path {
            self.latch_slow_paths.add(1);
        }
        let me = ID.with(|id| *id);
        let prev = node.swap_last_holder(me);
        if prev != 0 && prev != me {
            self.latch_handoffs.add(1);
        }
    }

    /// Feeds a leaf change to Contention Split; returns the separator key to split at when
    /// the leaf's period ended with unnecessary contention.
    #[inline]
    fn note_change(&self, node: &mut Node, pos: usize, slow_path: bool) -> Option<Vec<u8>> {
        let mid = self.contention.after_change(node, pos, slow_path)?;
        node.key(mid).ok()
    }

    /// Splits the leaf holding `sep` right after `sep` (Contention Split). Best effort: it
    /// gives up when the leaf changed so that the split no longer separates anything, when
    /// the parent cannot take the key even after splitting it, or when memory is exhausted.
    fn contention_split(&self, sep: &[u8]) {
        self.contention_split_attempts
            .fetch_add(1, Ordering::Relaxed);
        for _ in 0..2 {
            match self.retry(|| self.split_attempt(sep, 0, Some(sep))) {
                SplitOutcome::Done => return,
                SplitOutcome::ParentFull => {
                    if self.split_for(sep, 1).is_err() {
                        return;
                    }
                }
                SplitOutcome::OutOfSpace => return,
            }
        }
    }

    // ---- point reads ------------------------------------------------------------------

    /// See [`Tree::get`](crate::Tree::get).
    pub(crate) fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.retry(|| self.optimistic_get(key))
    }

    fn optimistic_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Restart> {
        let (leaf, _) = self.optimistic_descend(Target::Key(key, 0))?;
        let (pos, found) = leaf.node.lower_bound(key)?;
        let out = if found {
            Some(leaf.node.value(pos)?.to_vec())
        } else {
            None
        };
        leaf.guard.validate()?;
        Ok(out)
    }

    /// See [`Tree::contains_key`](crate::Tree::contains_key).
    pub(crate) fn contains_key(&self, key: &[u8]) -> bool {
        self.retry(|| self.optimistic_contains(key))
    }

    fn optimistic_contains(&self, key: &[u8]) -> Result<bool, Restart> {
        let (leaf, _) = self.optimistic_descend(Target::Key(key, 0))?;
        let (_, found) = leaf.node.lower_bound(key)?;
        leaf.guard.validate()?;
        Ok(found)
    }

    /// See [`Tree::get_with`](crate::Tree::get_with).
    pub(crate) fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let mut buf = [0u8; GET_WITH_INLINE];
        match self.retry(|| self.optimistic_get_inline(key, &mut buf)) {
            InlineRead::Absent => None,
            InlineRead::Copied(len) => Some(f(&buf[..len])),
            InlineRead::TooLarge => {
                let mut f = Some(f);
                self.retry(|| {
                    let (leaf, _) = self.optimistic_descend(Target::Key(key, 0))?;
                    let _shared = leaf.guard.upgrade_shared()?;
                    let (pos, found) = leaf.node.lower_bound(key)?;
                    if !found {
                        return Ok(None);
                    }
                    let value = leaf.node.value(pos)?;
                    Ok(f.take().map(|f| f(value)))
                })
            }
        }
    }

    fn optimistic_get_inline(&self, key: &[u8], buf: &mut [u8]) -> Result<InlineRead, Restart> {
        let (leaf, _) = self.optimistic_descend(Target::Key(key, 0))?;
        let (pos, found) = leaf.node.lower_bound(key)?;
        let out = if !found {
            InlineRead::Absent
        } else {
            let value = leaf.node.value(pos)?;
            match buf.get_mut(..value.len()) {
                Some(dst) => {
                    dst.copy_from_slice(value);
                    InlineRead::Copied(value.len())
                }
                None => InlineRead::TooLarge,
            }
        };
        leaf.guard.validate()?;
        Ok(out)
    }

    // ---- writes -----------------------------------------------------------------------

    /// See [`Tree::insert`](crate::Tree::insert).
    pub(crate) fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.check_key(key)?;
        self.check_value(value)?;
        let mut split_at = None;
        loop {
            match self.retry(|| self.insert_attempt(key, value, &mut split_at)) {
                Ok(old) => {
                    if old.is_none() {
                        self.len.add(1);
                    }
                    if let Some(sep) = split_at {
                        self.contention_split(&sep);
                    }
                    return Ok(old);
                }
                Err(NeedSplit) => {
                    self.split_for(key, 0)?;
                }
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn insert_attempt(
        &self,
        key: &[u8],
        value: &[u8],
        split_at: &mut Option<Vec<u8>>,
    ) -> Result<Result<Option<Vec<u8>>, NeedSplit>, Restart> {
        let (mut node, x) = self.optimistic_exclusive_leaf(key)?;
        let (pos, found) = node.lower_bound(key)?;
        if found {
            let e = node.entry(pos)?;
            let old = node.bytes(e.value_off, e.value_len)?.to_vec();
            if old.len() == value.len() {
                node.value_mut(pos).copy_from_slice(value);
                *split_at = self.note_change(&mut node, pos, x.slow_path());
                return Ok(Ok(Some(old)));
            }
            let need = node.space_needed(key.len(), value.len());
            if need > node.free_space() + e.heap_len + crate::node::SLOT {
                return Ok(Err(NeedSplit));
            }
            node.remove_at(pos);
            let ok = node.insert_entry(pos, key, value);
            debug_assert!(ok);
            *split_at = self.note_change(&mut node, pos, x.slow_path());
            return Ok(Ok(Some(old)));
        }
        if node.insert_entry(pos, key, value) {
            *split_at = self.note_change(&mut node, pos, x.slow_path());
            Ok(Ok(None))
        } else {
            Ok(Err(NeedSplit))
        }
    }

    /// See [`Tree::update_with`](crate::Tree::update_with).
    pub(crate) fn update_with<R>(&self, key: &[u8], f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let mut f = Some(f);
        let mut split_at = None;
        let out = self.retry(|| {
            let (mut node, x) = self.optimistic_exclusive_leaf(key)?;
            let (pos, found) = node.lower_bound(key)?;
            if !found {
                return Ok(None);
            }
            let out = f.take().map(|f| f(node.value_mut(pos)));
            split_at = self.note_change(&mut node, pos, x.slow_path());
            Ok(out)
        });
        if let Some(sep) = split_at {
            self.contention_split(&sep);
        }
        out
    }

    /// See [`Tree::remove`](crate::Tree::remove).
    pub(crate) fn remove(&self, key: &[u8]) -> Option<Vec<u8>> {
        if key.len() > self.config.max_key_len() {
            return None;
        }
        let mut split_at = None;
        let (old, underfull) = self.retry(|| {
            let (mut node, x) = self.optimistic_exclusive_leaf(key)?;
            let (pos, found) = node.lower_bound(key)?;
            if !found {
                return Ok((None, false));
            }
            let old = node.value(pos)?.to_vec();
            node.remove_at(pos);
            split_at = self.note_change(&mut node, pos, x.slow_path());
            Ok((Some(old), self.is_underfull(&node)))
        });
        if old.is_some() {
            self.len.add(-1);
            self.removals.add(1);
            if let Some(sep) = split_at {
                self.contention_split(&sep);
            } else if underfull {
                self.try_merge(key, 0);
            }
        }
        old
    }

    fn is_underfull(&self, node: &Node) -> bool {
        node.count() == 0
            || (node.used_space() as f64) < self.config.merge_threshold * node.page_size() as f64
    }

    // ---- splits -------------------------------------------------------------------------

    /// Splits the node at `level` that holds `key`, splitting its ancestors first where
    /// they lack room for the separator.
    ///
    /// When the memory budget refuses a page, XMerge frees some ([`BTree::reclaim`]) and the
    /// split is tried again; `OutOfSpace` is returned only if that frees nothing.
    fn split_for(&self, key: &[u8], level: u16) -> Result<(), Error> {
        let mut reclaims = 0;
        loop {
            match self.retry(|| self.split_attempt(key, level, None)) {
                SplitOutcome::Done => return Ok(()),
                SplitOutcome::ParentFull => self.split_for(key, level + 1)?,
                SplitOutcome::OutOfSpace => {
                    reclaims += 1;
                    // A root split takes two pages.
                    if reclaims > 4 || self.reclaim(2) == 0 {
                        return Err(self.out_of_space());
                    }
                }
            }
        }
    }

    /// One try at splitting the node at `level` that holds `key`: in the middle (or at the
    /// end for appends), or, for Contention Split, right after the key `at`.
    fn split_attempt(
        &self,
        key: &[u8],
        level: u16,
        at: Option<&[u8]>,
    ) -> Result<SplitOutcome, Restart> {
        let (here, above) = self.optimistic_descend(Target::Key(key, level))?;
        // Latch top-down first; every node read below happens under an exclusive latch.
        let mut node = here.node;
        let (_above_x, parent) = match above {
            Above::Root(meta) => (meta.upgrade_exclusive()?, None),
            Above::Parent(parent, _) => (parent.guard.upgrade_exclusive()?, Some(parent.node)),
        };
        let _x = here.guard.upgrade_exclusive()?;
        let count = node.count();
        if count < 2 && level > 0 || count == 0 {
            // Nothing to split (another thread emptied it); the caller retries its insert.
            return Ok(SplitOutcome::Done);
        }
        let append = node.upper_fence()?.is_none() && node.lower_bound(key)?.0 == count;
        let preferred = match (at, append, level) {
            (Some(sep), _, _) => match node.lower_bound(sep)? {
                // Only a split with entries on both sides separates anything.
                (pos, true) if pos + 1 < count => pos,
                _ => return Ok(SplitOutcome::Done),
            },
            (None, true, 0) => count - 1,
            (None, true, _) => count - 2,
            (None, false, _) => (count - 1) / 2,
        };
        // Fences and prefixes change in a split: take the nearest position where both
        // halves fit.
        let sep_pos = node.choose_split(preferred)?;
        match parent {
            None => {
                let Ok(ids) = self.pages.allocate(2) else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let (left_pid, root_pid) = (ids[0], ids[1]);
                let (mut left, left_latch) = self.page(left_pid)?;
                let (mut root, root_latch) = self.page(root_pid)?;
                let _lx = left_latch.exclusive();
                let _rx = root_latch.exclusive();
                let sep = node.split(&mut left, sep_pos);
                root.init(level + 1, None, None, &[]);
                let ok = root.insert_entry(0, &sep, &left_pid.to_ne_bytes());
                assert!(ok, "a fresh root holds one separator");
                root.set_upper_child(here.pid);
                self.root.store(root_pid, Ordering::Release);
                self.splits.fetch_add(1, Ordering::Relaxed);
                if at.is_some() {
                    self.contention_splits.fetch_add(1, Ordering::Relaxed);
                    node.set_hot(true);
                    left.set_hot(true);
                }
                Ok(SplitOutcome::Done)
            }
            Some(mut pnode) => {
                if !pnode.fits(&node.key(sep_pos)?, 4) {
                    return Ok(SplitOutcome::ParentFull);
                }
                let Ok(ids) = self.pages.allocate(1) else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let left_pid = ids[0];
                let (mut left, left_latch) = self.page(left_pid)?;
                let _lx = left_latch.exclusive();
                let sep = node.split(&mut left, sep_pos);
                let (pos, found) = pnode.lower_bound(&sep)?;
                debug_assert!(!found);
                let ok = pnode.insert_entry(pos, &sep, &left_pid.to_ne_bytes());
                assert!(ok, "separator must fit: checked before the split");
                self.splits.fetch_add(1, Ordering::Relaxed);
                if at.is_some() {
                    self.contention_splits.fetch_add(1, Ordering::Relaxed);
                    node.set_hot(true);
                    left.set_hot(true);
                }
                Ok(SplitOutcome::Done)
            }
        }
    }

    // ---- merges -------------------------------------------------------------------------

    /// Best-effort merge of the underfull node at `level` holding `key` with a sibling.
    /// Never waits for a latch.
    fn try_merge(&self, key: &[u8], level: u16) {
        for _ in 0..4 {
            match self.merge_attempt(key, level) {
                Ok(MergeOutcome::ParentUnderfull) => {
                    self.try_merge(key, level + 1);
                    return;
                }
                Ok(MergeOutcome::RootSingleChild) => {
                    let _ = self.try_collapse_root();
                    return;
                }
                Ok(MergeOutcome::Done) => return,
                Err(Restart) => {}
            }
        }
    }

    fn merge_attempt(&self, key: &[u8], level: u16) -> Result<MergeOutcome, Restart> {
        let (here, above) = self.optimistic_descend(Target::Key(key, level))?;
        let Above::Parent(parent, pos) = above else {
            return Ok(MergeOutcome::Done);
        };
        let mut pnode = parent.node;
        let Some(_px) = parent.guard.try_upgrade_exclusive()? else {
            return Ok(MergeOutcome::Done);
        };
        let pcount = pnode.count();
        if pcount == 0 {
            return Ok(if pnode_is_root(self, parent.pid) {
                MergeOutcome::RootSingleChild
            } else {
                MergeOutcome::Done
            });
        }
        // The pair (left slot, right child) to merge.
        let (left_pos, left_pid, right_pid) = if pos < pcount {
            (pos, here.pid, pnode.child(pos + 1)?)
        } else {
            (pcount - 1, pnode.child(pcount - 1)?, here.pid)
        };
        let (left, left_latch) = self.page(left_pid)?;
        let (mut right, right_latch) = self.page(right_pid)?;
        let (lx, _rx): (ExclusiveGuard, ExclusiveGuard);
        if left_pid == here.pid {
            let Some(g) = here.guard.try_upgrade_exclusive()? else {
                return Ok(MergeOutcome::Done);
            };
            lx = g;
            let Some(g) = right_latch.try_exclusive() else {
                return Ok(MergeOutcome::Done);
            };
            _rx = g;
        } else {
            let Some(g) = left_latch.try_exclusive() else {
                return Ok(MergeOutcome::Done);
            };
            lx = g;
            let Some(g) = here.guard.try_upgrade_exclusive()? else {
                return Ok(MergeOutcome::Done);
            };
            _rx = g;
        }
        if !self.is_underfull(&here.node) || left.is_hot() || right.is_hot() {
            // Not underfull any more, or split by Contention Split and still hot.
            return Ok(MergeOutcome::Done);
        }
        let sep = pnode.key(left_pos)?;
        let need = Node::merged_space(&left, &right, &sep)?;
        if need > right.page_size() * 3 / 4 {
            return Ok(MergeOutcome::Done);
        }
        right.merge_from_left(&left, &sep);
        pnode.remove_at(left_pos);
        self.pages.free(left_pid);
        drop(lx);
        self.merges.fetch_add(1, Ordering::Relaxed);
        if pnode.count() == 0 && pnode_is_root(self, parent.pid) {
            return Ok(MergeOutcome::RootSingleChild);
        }
        Ok(if self.is_underfull(&pnode) {
            MergeOutcome::ParentUnderfull
        } else {
            MergeOutcome::Done
        })
    }

    /// Replaces an inner root that has no keys by its only child.
    pub(crate) fn try_collapse_root(&self) -> Result<(), Restart> {
        let meta = self.meta.optimistic();
        let pid = self.root.load(Ordering::Acquire);
        let (root, latch) = self.page(pid)?;
        let guard = latch.optimistic();
        meta.validate()?;
        let Some(_m) = meta.try_upgrade_exclusive()? else {
            return Ok(());
        };
        let Some(_x) = guard.try_upgrade_exclusive()? else {
            return Ok(());
        };
        if root.is_leaf() || root.count() != 0 {
            return Ok(());
        }
        let child = root.upper_child();
        self.root.store(child, Ordering::Release);
        self.pages.free(pid);
        self.merges.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    // ---- whole-tree operations ---------------------------------------------------------

    /// See [`Tree::len`](crate::Tree::len).
    pub(crate) fn len(&self) -> usize {
        self.len.sum().max(0) as usize
    }

    /// See [`Tree::leaf_page_of`](crate::Tree::leaf_page_of).
    pub(crate) fn leaf_page_of(&self, key: &[u8]) -> u32 {
        self.retry(|| {
            let (leaf, _) = self.optimistic_descend(Target::Key(key, 0))?;
            leaf.guard.validate()?;
            Ok(leaf.pid)
        })
    }

    /// See [`Tree::stats`](crate::Tree::stats).
    pub(crate) fn stats(&self) -> Stats {
        let _gate = self.space_gate.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = Stats {
            bytes_allocated: self.pages.bytes_in_use(),
            len: self.len(),
            splits: self.splits.load(Ordering::Relaxed),
            merges: self.merges.load(Ordering::Relaxed),
            restarts: self.restarts.sum().max(0) as u64,
            contention_splits: self.contention_splits.load(Ordering::Relaxed),
            contention_split_attempts: self.contention_split_attempts.load(Ordering::Relaxed),
            latch_slow_paths: self.latch_slow_paths.sum().max(0) as u64,
            latch_handoffs: self.latch_handoffs.sum().max(0) as u64,
            xmerge_attempts: self.xmerge_attempts.load(Ordering::Relaxed),
            xmerges: self.xmerges.load(Ordering::Relaxed),
            pages_freed: self.pages_freed.load(Ordering::Relaxed),
            ..Stats::default()
        };
        let mut used = 0usize;
        let root = self.root.load(Ordering::Acquire);
        let mut stack = vec![(root, u16::MAX)];
        while let Some((pid, expect_level)) = stack.pop() {
            let Ok((node, latch)) = self.page(pid) else {
                continue;
            };
            let _s = latch.shared();
            let level = node.level();
            if expect_level != u16::MAX && level != expect_level {
                continue; // freed and reused under our feet
            }
            s.height = s.height.max(level as usize + 1);
            used += node.used_space();
            if level == 0 {
                s.leaf_pages += 1;
            } else {
                s.inner_pages += 1;
                for i in 0..=node.count() {
                    if let Ok(c) = node.child(i) {
                        stack.push((c, level - 1));
                    }
                }
            }
        }
        let pages = s.leaf_pages + s.inner_pages;
        if pages > 0 {
            s.fill_factor = used as f64 / (pages * self.config.page_size) as f64;
        }
        s
    }

    /// See [`Tree::check_invariants`](crate::Tree::check_invariants).
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let _gate = self.space_gate.lock().unwrap_or_else(|e| e.into_inner());
        crate::invariants::check(self, self.root.load(Ordering::Acquire))
    }
}

fn pnode_is_root(tree: &BTree, pid: PageId) -> bool {
    tree.root.load(Ordering::Acquire) == pid
}

enum SplitOutcome {
    Done,
    ParentFull,
    OutOfSpace,
}

enum MergeOutcome {
    Done,
    ParentUnderfull,
    RootSingleChild,
}
