//! Merges after removals (the underflow policy), deferred merges and root collapse.
//!
//! After a removal leaves a node less full than `Config::merge_threshold` of a page (25% by
//! default), or empty, the node is merged with a sibling under the same parent: the right
//! one first, then the left one. The pair merges if the result fits in 3/4 of a page, or, when
//! the node is empty, in a page: an empty node is always freed unless both siblings are so
//! full that their new fence would not fit. The left node of the pair is freed, so the
//! rightmost node of a level is never the one freed. An inner node that underflows is merged
//! the same way, and a root left with a single child is replaced by that child. Leaves that a
//! leaf policy keeps apart (Contention Split's hot leaves) are not merged unless one of the
//! two is empty.
//!
//! **Never waiting.** Merges take latches only with `try`, so they never wait and never slow
//! the remover down. A merge that finds a latch taken is *deferred*: its key and level go to
//! a short list in the tree (`Deferred`), and the next removal, split or space-manager round
//! of any thread retries one of them. So an emptied node is freed even when no later removal
//! touches it (a queue's consumers keep finding the head leaf's neighbour latched).

use crate::engine::{Above, OptimisticNoWait, Target, TreeCore};
use crate::long_key::KeyRefs;
use crate::node::{Node, NodeMut};
use crate::page::PageId;
use crate::policy::LeafPolicies;
use crate::sync::seam::{AtomicUsize, Mutex, Ordering};
use crate::sync::{Counter, ExclusiveGuard, Restart};
use std::cell::Cell;

/// Deferred merges kept at most; more are dropped (the space manager and `compact` still
/// reach those nodes).
const DEFERRED_MAX: usize = 256;

/// The page of a deferred merge whose node is not known (its descent kept restarting).
const NO_PAGE: PageId = PageId::MAX;

/// The fraction of a page (1 / this) a leaf must lose after a declined merge attempt before
/// the same thread attempts it again (see [`TreeCore::try_merge_leaf`]).
const RETRY_STEP: usize = 16;

/// The last leaf whose merge attempt this thread saw declined: its tree, its page's address
/// and its used bytes then (all zero: none).
#[derive(Clone, Copy)]
struct Declined {
    tree: usize,
    page: usize,
    used: usize,
}

crate::sync::seam::model_local! {
    static DECLINED: Cell<Declined> = const { Cell::new(Declined { tree: 0, page: 0, used: 0 }) };
}

/// Merges that found a latch taken, retried later by any thread (see the module doc).
#[derive(Default)]
pub(crate) struct Deferred {
    /// A cheap check for the data path: the list's length.
    len: AtomicUsize,
    /// (a key in the node, its level, its page when deferred): one entry per page.
    list: Mutex<Vec<(Vec<u8>, u16, PageId)>>,
}

enum MergeOutcome {
    Done,
    /// A latch was taken: retry later. Carries the page of the node to merge.
    Busy(PageId),
    ParentUnderfull,
    RootSingleChild,
}

impl TreeCore {
    /// Whether `pid` is a root: the tree's, or a partition's (`crate::partition`).
    pub(crate) fn is_root(&self, pid: PageId) -> bool {
        self.root_id() == pid || self.is_partition_root(pid)
    }

    /// [`try_merge`](Self::try_merge) of the underfull leaf holding `key` that a removal
    /// just left at `used` bytes ([`Node::used_space`]) in the page at `page`, unless this
    /// thread's last attempt at that leaf was declined and the leaf has lost less than a
    /// [`RETRY_STEP`]th of a page since (an empty leaf is always attempted).
    ///
    /// A leaf drained from one end (a queue's consumer, keys removed in order) stays
    /// underfull beside a full sibling for a quarter of its removals: each of them otherwise
    /// descended from the root again to learn that nothing fits. The skip is best-effort
    /// like the merge itself: a page reused by another leaf at the same address may skip
    /// that leaf's attempt until it shrinks by a step, and any removal from it by another
    /// thread, the space manager and `compact` still reach it.
    pub(crate) fn try_merge_leaf(&self, key: &[u8], page: *const u8, used: usize, empty: bool) {
        let tree = self.id() as usize;
        if !empty {
            let d = DECLINED.with(Cell::get);
            let step = self.config().page_size / RETRY_STEP;
            if d.tree == tree && d.page == page as usize && used + step > d.used {
                self.counters.add(Counter::MergesSkipped, 1);
                return;
            }
        }
        self.try_merge(key, 0);
    }

    /// Notes that a merge attempt at `node` (a leaf) was declined (see
    /// [`try_merge_leaf`](Self::try_merge_leaf)).
    fn note_declined(&self, node: &Node) {
        if node.is_leaf() {
            let d = Declined {
                tree: self.id() as usize,
                page: node.raw().addr() as usize,
                used: node.used_space(),
            };
            DECLINED.with(|c| c.set(d));
        }
    }

    /// Best-effort merge of the underfull node at `level` holding `key` with a sibling.
    /// Never waits for a latch; a merge that finds one taken is deferred.
    pub(crate) fn try_merge(&self, key: &[u8], level: u16) {
        for _ in 0..4 {
            let mut lost = Vec::new();
            let outcome = self.merge_attempt(key, level, &mut lost);
            // Stored forms of long keys the merge dropped, now that its latches are released.
            self.release_keys(&lost);
            match outcome {
                Ok(MergeOutcome::ParentUnderfull) => {
                    self.try_merge(key, level + 1);
                    return;
                }
                Ok(MergeOutcome::RootSingleChild) => {
                    if !matches!(self.try_collapse_root(Target::Key(key, 0)), Ok(true)) {
                        let root = self.root_id();
                        self.defer_merge(key, level + 1, root);
                    }
                    return;
                }
                Ok(MergeOutcome::Done) => return,
                Ok(MergeOutcome::Busy(pid)) => {
                    self.defer_merge(key, level, pid);
                    return;
                }
                Err(Restart) => {}
            }
        }
        // Restarted again and again (a writer holds a node on the way): try later.
        self.defer_merge(key, level, NO_PAGE);
    }

    fn defer_merge(&self, key: &[u8], level: u16, pid: PageId) {
        if crate::sync::owner::active() {
            // Not for other threads: the node is this owner's (`sync::owner`).
            return;
        }
        let d = &self.deferred;
        let mut list = d.list.lock().unwrap_or_else(|e| e.into_inner());
        let known = |e: &(Vec<u8>, u16, PageId)| {
            e.1 == level
                && if pid == NO_PAGE {
                    e.0 == key
                } else {
                    e.2 == pid
                }
        };
        if list.len() < DEFERRED_MAX && !list.iter().any(known) {
            list.push((key.to_vec(), level, pid));
            d.len.store(list.len(), Ordering::Relaxed);
        }
    }

    /// Retries one deferred merge, if there is one. Cheap when there is none (one load).
    #[inline]
    pub(crate) fn retry_deferred_merge(&self) {
        if self.deferred.len.load(Ordering::Relaxed) > 0 && !crate::sync::owner::active() {
            self.retry_deferred_merge_slow();
        }
    }

    #[cold]
    fn retry_deferred_merge_slow(&self) {
        let d = &self.deferred;
        let next = {
            let mut list = d.list.lock().unwrap_or_else(|e| e.into_inner());
            // Oldest first: a merge deferred again goes to the back.
            let next = (!list.is_empty()).then(|| list.remove(0));
            d.len.store(list.len(), Ordering::Relaxed);
            next
        };
        if let Some((key, level, _)) = next {
            self.try_merge(&key, level);
        }
    }

    /// Retries every deferred merge once (the space manager and `compact`); returns how
    /// many were tried.
    pub(crate) fn retry_deferred_merges(&self) -> usize {
        let n = self.deferred.len.load(Ordering::Relaxed);
        for _ in 0..n {
            self.retry_deferred_merge();
        }
        n
    }

    /// Deferred merges waiting (tests).
    #[cfg(test)]
    pub(crate) fn deferred_merges(&self) -> usize {
        self.deferred.len.load(Ordering::Relaxed)
    }

    /// Whether the bound from counts and heap bytes ([`Node::merged_space_at_least`]) rules
    /// out merging `node`, child `pos` of `parent`, with either sibling, read from snapshots
    /// before any latch is taken: a node drained from one end beside full siblings stays
    /// underfull for a quarter of a leaf's removals, and each of them otherwise took three
    /// try-latches (parent, node, sibling) to learn the same. `false` whenever in doubt (a
    /// sibling latched or changing, an id that is no page, an empty parent): the latched
    /// attempt decides then, as before. The caller validates `parent` and `node`; a
    /// sibling counts only if its own snapshot validates after the read, so a torn read
    /// never skips a merge that fits. Never waits.
    fn no_sibling_fits(&self, parent: &Node, pos: usize, node: &Node) -> bool {
        let pcount = parent.count();
        if pcount == 0 {
            return false;
        }
        let limit = if node.count() == 0 {
            node.page_size()
        } else {
            node.page_size() * 3 / 4
        };
        let right = (pos < pcount).then_some(pos + 1);
        let left = pos.checked_sub(1);
        for sibling_pos in [right, left].into_iter().flatten() {
            let Ok(pid) = parent.child(sibling_pos) else {
                return false;
            };
            let Ok((sibling, latch)) = self.page(pid) else {
                return false;
            };
            let Some(guard) = latch.try_optimistic() else {
                return false;
            };
            let fits = Node::merged_space_at_least(node, &sibling) <= limit;
            if fits || guard.validate().is_err() {
                return false;
            }
        }
        true
    }

    /// One try of [`try_merge`](Self::try_merge); `lost` receives the key blobs whose stored
    /// forms the merge dropped, to release once every latch is released.
    fn merge_attempt(
        &self,
        key: &[u8],
        level: u16,
        lost: &mut Vec<crate::blob::Stub>,
    ) -> Result<MergeOutcome, Restart> {
        let (here, above) = self.nowait_descend(Target::Key(key, level))?;
        let Above::Parent(parent, pos) = above else {
            // The root: an inner root with a single child is collapsed.
            let single = !here.node.is_leaf() && here.node.count() == 0;
            here.guard.validate()?;
            return Ok(if single {
                MergeOutcome::RootSingleChild
            } else {
                MergeOutcome::Done
            });
        };
        if !self.is_underfull(&here.node) {
            here.guard.validate()?;
            return Ok(MergeOutcome::Done);
        }
        if self.no_sibling_fits(&parent.node, pos, &here.node) {
            // Validated: the verdict was read from the node and its parent as they are.
            parent.guard.validate()?;
            here.guard.validate()?;
            self.note_declined(&here.node);
            return Ok(MergeOutcome::Done);
        }
        let Some(mut px) = parent.guard.try_upgrade_exclusive()? else {
            return Ok(MergeOutcome::Busy(here.pid));
        };
        let Some(mut hx) = here.guard.try_upgrade_exclusive()? else {
            return Ok(MergeOutcome::Busy(here.pid));
        };
        let mut pnode = NodeMut::new(parent.node, &mut px);
        let pcount = pnode.count();
        if pcount == 0 {
            // `here` is the parent's only child: the parent must go first.
            return Ok(if self.is_root(parent.pid) {
                MergeOutcome::RootSingleChild
            } else {
                MergeOutcome::ParentUnderfull
            });
        }
        let node = here.node;
        if !self.is_underfull(&node) {
            return Ok(MergeOutcome::Done);
        }
        let empty = node.count() == 0;
        let limit = if empty {
            node.page_size()
        } else {
            node.page_size() * 3 / 4
        };
        let mut busy = false;
        // The right sibling first (`here` is the left node of the pair), then the left one.
        for right_of_here in [true, false] {
            let (left_pos, sibling_pos) = match right_of_here {
                true if pos < pcount => (pos, pos + 1),
                false if pos > 0 => (pos - 1, pos - 1),
                _ => continue,
            };
            let sibling_pid = pnode.child(sibling_pos)?;
            let (sibling, sibling_latch) = self.page(sibling_pid)?;
            let Some(mut sx) = sibling_latch.try_exclusive() else {
                busy = true;
                continue;
            };
            let (left, left_pid, right, rx): (Node, PageId, Node, &mut ExclusiveGuard) =
                if right_of_here {
                    (node, here.pid, sibling, &mut sx)
                } else {
                    (sibling, sibling_pid, node, &mut hx)
                };
            // Hot leaves stay apart, unless one of the two holds nothing.
            let apart = !LeafPolicies::may_merge(&left) || !LeafPolicies::may_merge(&right);
            if apart && left.count() > 0 && right.count() > 0 {
                continue;
            }
            // The bound from counts first: a node drained from one end (keys removed in
            // order) stays underfull beside a full sibling for a quarter of a leaf's
            // removals, and each of them computed the merged size, a pass over both nodes
            // (10^6 removals in order: 856 -> 336 ns each, `bench/results/merge-bound-s61.txt`).
            if Node::merged_space_at_least(&left, &right) > limit {
                continue;
            }
            let sep = pnode.key(left_pos)?;
            if Node::merged_space(&left, &right, &sep)? > limit {
                continue;
            }
            let mut refs = KeyRefs::new(self);
            for n in [&left, &right, &*pnode] {
                refs.before(n);
            }
            self.merge_nodes(&mut NodeMut::new(right, rx), &left, &sep);
            self.remove_separator(&mut pnode, left_pos);
            refs.after(&right);
            refs.after(&pnode);
            *lost = refs.settle(self);
            self.free(left_pid);
            self.events.merges.fetch_add(1, Ordering::Relaxed);
            // The freed node's latch is released (its version bumped) when its guard drops.
            drop(sx);
            drop(hx);
            if pnode.count() == 0 && self.is_root(parent.pid) {
                return Ok(MergeOutcome::RootSingleChild);
            }
            return Ok(if self.is_underfull(&pnode) {
                MergeOutcome::ParentUnderfull
            } else {
                MergeOutcome::Done
            });
        }
        if !busy {
            self.note_declined(&node);
        }
        Ok(if busy {
            MergeOutcome::Busy(here.pid)
        } else {
            MergeOutcome::Done
        })
    }

    /// Replaces an inner root that has no keys by its only child: the root of the partition
    /// that holds `target` in a multi-rooted tree. `Ok(false)` when a latch is taken.
    pub(crate) fn try_collapse_root(&self, mut target: Target) -> Result<bool, Restart> {
        let (meta, slot, root) = self.root_snapshot::<OptimisticNoWait>(&mut target)?;
        let Some(mut mx) = meta.try_upgrade_exclusive()? else {
            return Ok(false);
        };
        let Some(_x) = root.guard.try_upgrade_exclusive()? else {
            return Ok(false);
        };
        if root.node.is_leaf() || root.node.count() != 0 {
            return Ok(true);
        }
        self.collapse_root(slot, &mut mx, root.pid, root.node.upper_child());
        self.events.merges.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// [`try_collapse_root`](Self::try_collapse_root) for every root of the tree (each
    /// partition's in a multi-rooted tree), a few tries each.
    pub(crate) fn try_collapse_roots(&self) {
        for key in self.root_targets() {
            let target = key
                .as_deref()
                .map_or(Target::Rightmost(0), |k| Target::Key(k, 0));
            let _ = (0..4).any(|_| matches!(self.try_collapse_root(target), Ok(true)));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Tree};

    /// A merge that finds its sibling latched is deferred, and a removal from another leaf
    /// retries it: the emptied leaf does not wait for a removal of its own.
    #[test]
    fn a_merge_that_finds_a_latch_taken_is_retried_by_a_later_removal() {
        let t = Tree::with_config(Config {
            space_manager: false,
            ..Config::default()
        })
        .unwrap();
        let key = |i: u64| i.to_be_bytes();
        for i in 0..2000 {
            t.insert(&key(i), b"value").unwrap();
        }
        let first = t.leaf_page_of(&key(0));
        let next = (0..2000)
            .find(|&i| t.leaf_page_of(&key(i)) != first)
            .unwrap();
        let right = t.leaf_page_of(&key(next));
        let pages = t.stats().leaf_pages;
        let (_, latch) = t.core.page(right).unwrap();
        let held = latch.exclusive();
        for i in 0..next {
            assert!(t.remove(&key(i)).is_some());
        }
        // One entry for the leaf, however many removals found the latch taken.
        assert_eq!(t.core.deferred_merges(), 1);
        assert_eq!(t.leaf_page_of(&key(0)), first);
        drop(held);
        assert!(t.remove(&key(1999)).is_some());
        assert_eq!(t.core.deferred_merges(), 0);
        assert_eq!(t.stats().leaf_pages, pages - 1);
        assert_eq!(t.leaf_page_of(&key(0)), right);
        t.check_invariants().unwrap();
    }

    /// A tree of 4000 ordered keys on 4 KiB pages, without the space manager (no merges but
    /// the removals' own).
    fn ordered_tree() -> Tree {
        let t = Tree::with_config(Config {
            space_manager: false,
            page_size: 4096,
            ..Config::default()
        })
        .unwrap();
        for i in 0..4000u64 {
            t.insert(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
        }
        t
    }

    /// Keys drained from one end: while a leaf is underfull beside a full sibling, its
    /// removals attempt the merge once per step the leaf shrinks (the others are counted
    /// as skipped), and every leaf is merged away as it empties.
    #[test]
    fn a_leaf_drained_in_order_skips_attempts_and_still_merges_when_empty() {
        let t = ordered_tree();
        let pages = t.stats().leaf_pages;
        let key = |i: u64| i.to_be_bytes();
        let mut emptied = 0;
        for i in 0..3000u64 {
            let leaf = t.leaf_page_of(&key(i));
            assert!(t.remove(&key(i)).is_some());
            if t.leaf_page_of(&key(i + 1)) != leaf {
                emptied += 1;
            }
        }
        let s = t.stats();
        assert!(emptied > 5, "{emptied}");
        assert_eq!(s.leaf_pages, pages - emptied, "{s:?}");
        // About a quarter of each drained leaf's removals leave it underfull; all but a
        // few attempts per leaf are skipped.
        assert!(s.merges_skipped > 10 * emptied as u64, "{s:?}");
        t.check_invariants().unwrap();
    }

    /// A skipped attempt only delays a merge that became possible (the sibling shrank
    /// after the attempt was declined) by less than a step of removals: the leaf merges
    /// before its last entry goes.
    #[test]
    fn a_merge_possible_after_a_declined_attempt_happens_within_a_step() {
        let t = ordered_tree();
        let key = |i: u64| i.to_be_bytes();
        let left = t.leaf_page_of(&key(0));
        let first_right = (0..4000)
            .find(|&i| t.leaf_page_of(&key(i)) != left)
            .unwrap();
        let right = t.leaf_page_of(&key(first_right));
        let last_right = (first_right..4000)
            .take_while(|&i| t.leaf_page_of(&key(i)) == right)
            .last()
            .unwrap();
        // Drain the left leaf until an attempt was declined and then one skipped.
        let mut next = 0;
        while t.stats().merges_skipped == 0 {
            assert!(t.remove(&key(next)).is_some());
            next += 1;
            assert!(next < first_right - 1, "no attempt was skipped");
        }
        assert_eq!(t.leaf_page_of(&key(next)), left);
        // The right sibling loses 3/5 of its keys, from its top: not underfull itself, but
        // now the pair fits in 3/4 of a page.
        let half = (last_right - first_right) * 3 / 5;
        for i in (last_right - half..=last_right).rev() {
            assert!(t.remove(&key(i)).is_some());
        }
        let merges = t.stats().merges;
        while t.stats().merges == merges {
            assert!(
                next < first_right - 1,
                "the left leaf was never merged before it emptied"
            );
            assert!(t.remove(&key(next)).is_some());
            next += 1;
        }
        assert_eq!(t.leaf_page_of(&key(next)), right);
        t.check_invariants().unwrap();
    }
}
