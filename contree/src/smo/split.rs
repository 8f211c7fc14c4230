//! Splits: for space (an insert that does not fit) and for contention (Contention Split).
//!
//! An insert that does not fit releases its leaf and splits it: it descends again, upgrades
//! parent then child to exclusive (top-down, so latches are always taken in tree order), and
//! if the parent has no room for the separator splits the parent first. The split position
//! is the middle, except on the rightmost node of a level when the new key goes past its last
//! key (an append, as with auto-increment keys): then the node is split at its end so the
//! left node stays full. A leaf key a few slots short of that end (appends from several
//! threads arrive a little out of order) splits the rightmost leaf right below the key, and
//! while such keys come, splits of the rightmost leaf leave a few entries on the right so
//! that keys arriving late find room. The node keeps the upper half in place, so the
//! rightmost node of each level keeps its page.

use super::gate::{Entry, GateHold};
use crate::engine::{Above, Target, TreeCore};
use crate::error::Error;
use crate::long_key::KeyRefs;
use crate::node::{append_slack, NodeMut};
use crate::page::PageId;
use crate::policy::{LeafPolicies, SplitAdvice};
use crate::space::Room;
use crate::sync::Restart;
use std::sync::atomic::Ordering;

/// Splits (of any node) after a split for an out-of-order append during which splits of the
/// rightmost leaf still leave room for late keys (see `TreeCore::split_attempt`).
const DISORDER_SPLITS: u64 = 64;

enum SplitOutcome {
    Done,
    ParentFull,
    OutOfSpace,
}

impl TreeCore {
    /// Splits the leaf holding `sep` right after `sep` (Contention Split). Best effort: it
    /// gives up when the leaf changed so that the split no longer separates anything, when
    /// the parent cannot take the key even after splitting it, or when memory is exhausted.
    pub(crate) fn contention_split(&self, sep: &[u8]) {
        self.events
            .contention_split_attempts
            .fetch_add(1, Ordering::Relaxed);
        for _ in 0..2 {
            match self.retry(|| self.split_attempt(sep, 0, Some(sep), 0, 0, None)) {
                SplitOutcome::Done => return,
                SplitOutcome::ParentFull => {
                    if self.split_for(sep, 1, false, 0, 0).is_err() {
                        return;
                    }
                }
                SplitOutcome::OutOfSpace => return,
            }
        }
    }

    /// Splits the node at `level` that holds `key`, splitting its ancestors first where
    /// they lack room for the separator.
    ///
    /// When the memory budget refuses a page, `reclaim` frees some (bounded work) and the
    /// split is tried again, or gives the node room without a split (then `Ok` without a
    /// split: the caller retries its operation); `OutOfSpace` if neither. A split
    /// that succeeded retries one deferred merge (`smo::merge`).
    ///
    /// `spread` allows `reclaim` to make room without a split; an operation that got room
    /// that way and still does not fit passes `false` the next time, so it cannot loop.
    /// `room`: bytes the entry being inserted takes (0 for none); a leaf split leaves them
    /// free in the half that takes `key` where some split position does
    /// ([`Node::choose_split_with_room`](crate::node::Node::choose_split_with_room)).
    /// `unless_free`: a leaf that has that many bytes free when the split looks at it (not
    /// 0) is not split (then `Ok`: the caller retries its insert). Threads that found a hot
    /// leaf full one after another (leaf combining hands each its request back) would
    /// otherwise each take pages and descend to split it again; the first split serves
    /// them all. An insert passes it only on its first round, so it cannot loop.
    pub(crate) fn split_for(
        &self,
        key: &[u8],
        level: u16,
        spread: bool,
        room: usize,
        unless_free: usize,
    ) -> Result<(), Error> {
        let mut reclaims = 0;
        // One splitter per node (`gate`); not under a memory budget, whose splits may give
        // the node room without a split and count their rounds (`reclaim`).
        let mut hold = self.gates.hold();
        let budget = self.has_memory_budget();
        loop {
            let mut gate = (!budget).then_some(&mut hold);
            match self.retry(|| {
                let gate = gate.as_deref_mut();
                self.split_attempt(key, level, None, room, unless_free, gate)
            }) {
                SplitOutcome::Done => {
                    self.retry_deferred_merge();
                    return Ok(());
                }
                SplitOutcome::ParentFull => self.split_for(key, level + 1, spread, 0, 0)?,
                SplitOutcome::OutOfSpace => {
                    reclaims += 1;
                    if reclaims > 4 {
                        return Err(self.out_of_space());
                    }
                    // A root split takes two pages.
                    match self.reclaim(key, level, 2, spread) {
                        Room::Freed => {}
                        // The node has room now: the caller retries its operation.
                        Room::Made => return Ok(()),
                        Room::None => return Err(self.out_of_space()),
                    }
                }
            }
        }
    }

    /// One try at splitting the node at `level` that holds `key`: in the middle (or at the
    /// end for appends), or, for Contention Split, right after the key `at`; a leaf split
    /// for an insert leaves `room` bytes free on `key`'s side where it can (see
    /// [`split_for`](Self::split_for)); `unless_free` as there. With a `gate` hold, the
    /// attempt first takes the node's split gate (`gate`); one that had to wait for another
    /// splitter of the node splits only if the node still lacks room.
    fn split_attempt(
        &self,
        key: &[u8],
        level: u16,
        at: Option<&[u8]>,
        room: usize,
        unless_free: usize,
        gate: Option<&mut GateHold<'_>>,
    ) -> Result<SplitOutcome, Restart> {
        if level > 0 && self.shorter_than(key, level)? {
            // The tree (or the key's partition) lost levels since the caller found the node
            // below full (a root collapse, a slice): nothing to split at this level, and a
            // descent to it would restart for ever. The caller retries its operation.
            return Ok(SplitOutcome::Done);
        }
        let (here, above) = self.optimistic_descend(Target::Key(key, level))?;
        let mut unless_free = unless_free;
        if let Some(hold) = gate {
            if hold.enter(here.pid) == Entry::Waited {
                // Another thread split the node while this one waited for its gate, so the
                // descent above is stale: look again, holding the gate.
                self.events.split_gate_waits.fetch_add(1, Ordering::Relaxed);
                return Err(Restart);
            }
            if hold.waited() {
                // Split the node again only if it still lacks room (for a leaf, the
                // insert's); let the caller retry where that is not known (an inner node's
                // room for a separator).
                unless_free = unless_free.max(room);
                if unless_free == 0 {
                    return Ok(SplitOutcome::Done);
                }
            }
        }
        if unless_free > 0 && level == 0 && here.node.free_space() >= unless_free {
            // Another thread split the leaf since the caller found it full.
            here.guard.validate()?;
            return Ok(SplitOutcome::Done);
        }
        // The new page(s) are taken before any latch: the pool's lock and the first touch
        // of a fresh page (a page fault) would otherwise lengthen the time the parent is
        // latched, and every descent through the parent waits that long. Pages not used
        // go back when `spare` drops.
        let pages = if matches!(above, Above::Root(..)) {
            2
        } else {
            1
        };
        let mut spare = Spare::take(self, pages);
        // Latch top-down first; every node read below happens under an exclusive latch.
        let (mut above_x, parent) = match above {
            Above::Root(meta, slot) => (meta.upgrade_exclusive()?, Err(slot)),
            Above::Parent(parent, _) => (parent.guard.upgrade_exclusive()?, Ok(parent.node)),
        };
        let mut x = here.guard.upgrade_exclusive()?;
        let mut node = NodeMut::new(here.node, &mut x);
        let count = node.count();
        // The rightmost node: where the key goes (its lower bound) decides an append.
        let end_pos = if count > 0 && !node.has_upper_fence() {
            Some(node.lower_bound(key, self.directory())?.0)
        } else {
            None
        };
        let append = end_pos == Some(count);
        // A key a few slots short of the rightmost leaf's end: appends from several threads
        // (auto-increment keys) arrive a little out of order, and a key that fills the leaf
        // may sort just below its last ones. Split right below the key, as an append is
        // split at the end: split in the middle instead, the left half stayed half empty
        // for good (no later append goes there), and with each pair of keys swapped every
        // split was such a one (fill factor 0.53 against 0.995 in order).
        let near_append = end_pos.filter(|&pos| {
            level == 0 && at.is_none() && !append && pos > 0 && pos + append_slack(count) >= count
        });
        // While appends arrive out of order (such a split within the last
        // `DISORDER_SPLITS` splits), a split of the rightmost leaf leaves its last few
        // entries (`append_slack`) on the right: a key handed out before the split and
        // inserted after it (its thread was preempted, or asleep on a latch) then finds
        // room on either side, where a full left half took it with a split in the middle.
        let reserve = if level == 0
            && (append || near_append.is_some())
            && self.config().append_reserve
            && self.appends_disordered(near_append.is_some())
        {
            append_slack(count)
        } else {
            0
        };
        if count < 2 && !(append && level == 0) {
            // Nothing to split: another thread removed entries since the insert found the
            // node full, and a node of one entry always has room for another (the inline
            // limits make two entries and both fences fit in a page). A split here would
            // put the one entry on one side and nothing on the other, under a separator
            // equal to a fence: a key the parent already holds. The caller retries its
            // insert, which now fits.
            return Ok(SplitOutcome::Done);
        }
        let SplitAdvice::Default = self.policy.before_split(&node);
        let preferred = match (at, append, level) {
            (Some(sep), _, _) => match node.lower_bound(sep, self.directory())? {
                // Only a split with entries on both sides separates anything.
                (pos, true) if pos + 1 < count => pos,
                _ => return Ok(SplitOutcome::Done),
            },
            (None, true, 0) => count - 1 - reserve,
            (None, true, _) => count - 2,
            (None, false, _) => match near_append {
                // The left half keeps the entries below the key; the key's half, the few
                // above.
                Some(pos) => (pos - 1).min(count - 1 - reserve),
                None => (count - 1) / 2,
            },
        };
        // Fences and prefixes change in a split: take the nearest position where both
        // halves fit.
        // The right half of the rightmost leaf keeps a few entries: it gets an edge prefix
        // for the appends to come (`NodeMut::shorten_edge_prefix`).
        let edge_right = reserve > 0 || near_append.is_some();
        let sep_pos = if room > 0 && level == 0 && !append && near_append.is_none() {
            let key_pos = node.lower_bound(key, self.directory())?.0;
            node.choose_split_with_room(preferred, key_pos, room)?
        } else {
            node.choose_split(preferred)?
        };
        let contention = at.is_some();
        // Long keys: a split only adds stored forms (the separator, in the parent and in
        // both halves' fences), so the counts rise before the latches are released and
        // nothing is left to drop.
        let mut refs = KeyRefs::new(self);
        refs.before(&node);
        if let Ok(p) = &parent {
            refs.before(p);
        }
        let sep = node.split_separator(sep_pos)?;
        match parent {
            Err(slot) => {
                let Some(ids) = spare.use_or_allocate() else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let (left_pid, root_pid) = (ids[0], ids[1]);
                let (left, left_latch) = self.page(left_pid)?;
                let (root, root_latch) = self.page(root_pid)?;
                let mut lx = left_latch.exclusive();
                let mut rx = root_latch.exclusive();
                let (lower, upper) = (node.lower_fence()?, node.upper_fence()?);
                self.split_node(&mut node, NodeMut::new(left, &mut lx), sep_pos, &sep);
                if edge_right {
                    node.shorten_edge_prefix();
                }
                let root_node = NodeMut::new(root, &mut rx);
                self.grow_root(
                    slot,
                    &mut above_x,
                    root_node,
                    root_pid,
                    level + 1,
                    (lower.as_deref(), upper.as_deref()),
                    &sep,
                    (left_pid, here.pid),
                );
                self.split_done(&mut node, NodeMut::new(left, &mut lx), contention);
                for n in [&*node, &left, &root] {
                    refs.after(n);
                }
                let lost = refs.settle(self);
                assert!(lost.is_empty(), "a split drops no stored form");
                drop(above_x);
                Ok(SplitOutcome::Done)
            }
            Ok(pnode) => {
                let mut pnode = NodeMut::new(pnode, &mut above_x);
                if !pnode.fits(&sep, 4)? {
                    return Ok(SplitOutcome::ParentFull);
                }
                let Some(ids) = spare.use_or_allocate() else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let left_pid = ids[0];
                let (left, left_latch) = self.page(left_pid)?;
                let mut lx = left_latch.exclusive();
                self.split_node(&mut node, NodeMut::new(left, &mut lx), sep_pos, &sep);
                if edge_right {
                    node.shorten_edge_prefix();
                }
                self.add_separator(&mut pnode, &sep, left_pid);
                self.split_done(&mut node, NodeMut::new(left, &mut lx), contention);
                for n in [&*node, &left, &*pnode] {
                    refs.after(n);
                }
                let lost = refs.settle(self);
                assert!(lost.is_empty(), "a split drops no stored form");
                Ok(SplitOutcome::Done)
            }
        }
    }

    /// Whether the root over `key` (its partition's, in a multi-rooted tree) is below
    /// `level`.
    #[cold]
    fn shorter_than(&self, key: &[u8], level: u16) -> Result<bool, Restart> {
        let (_, _, root) =
            self.root_snapshot::<crate::engine::OptimisticNoWait>(&mut Target::Key(key, level))?;
        let l = root.node.level();
        root.guard.validate()?;
        Ok(l < level)
    }

    /// Whether appends arrived out of order lately (see `split_attempt`): `now` says that
    /// this split is for such an append, and is recorded.
    fn appends_disordered(&self, now: bool) -> bool {
        let splits = self.events.splits.load(Ordering::Relaxed) + 1;
        if now {
            self.events.append_disorder.store(splits, Ordering::Relaxed);
            return true;
        }
        let last = self.events.append_disorder.load(Ordering::Relaxed);
        last != 0 && splits.wrapping_sub(last) < DISORDER_SPLITS
    }

    fn split_done(&self, node: &mut NodeMut, mut left: NodeMut, contention: bool) {
        self.events.splits.fetch_add(1, Ordering::Relaxed);
        if contention {
            self.events
                .contention_splits
                .fetch_add(1, Ordering::Relaxed);
            LeafPolicies::contention_split_done(node);
            LeafPolicies::contention_split_done(&mut left);
        }
    }
}

/// Pages taken for a split before its latches (see [`TreeCore::split_attempt`]); the ones
/// the split does not use go back to the pool on drop, restarts included. Nothing was
/// written to them, so giving them back changes nothing a reader of a stale id could see.
pub(crate) struct Spare<'t> {
    tree: &'t TreeCore,
    /// The pages the split needs: 2 for a root split, else 1.
    n: usize,
    ids: Option<Vec<PageId>>,
}

impl<'t> Spare<'t> {
    /// Takes `n` pages now, or none if the system refuses them (the split then asks again
    /// under its latches). A tree with a memory budget takes none: pages held by an attempt
    /// that then restarts would make the budget look spent to other threads' splits for a
    /// moment, and turn into `OutOfSpace` errors a budget that has room must not give.
    pub(crate) fn take(tree: &'t TreeCore, n: usize) -> Self {
        let ids = if tree.has_memory_budget() {
            None
        } else {
            tree.allocate(n)
        };
        Spare { tree, n, ids }
    }

    /// The pages taken before, or as many allocated now.
    pub(crate) fn use_or_allocate(&mut self) -> Option<Vec<PageId>> {
        self.ids.take().or_else(|| self.tree.allocate(self.n))
    }
}

impl Drop for Spare<'_> {
    fn drop(&mut self) {
        if let Some(ids) = self.ids.take() {
            self.tree.free_pages(&ids);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Spare;
    use crate::{Config, Tree};

    fn tree(max_memory: usize) -> Tree {
        Tree::with_config(Config {
            space_manager: false,
            max_memory,
            ..Config::default()
        })
        .unwrap()
    }

    #[test]
    fn spare_pages_a_split_does_not_use_go_back() {
        let t = tree(usize::MAX);
        let page = t.config().page_size;
        let held = t.core.bytes_in_use();
        {
            let _spare = Spare::take(&t.core, 2);
            assert_eq!(t.core.bytes_in_use(), held + 2 * page);
        }
        assert_eq!(
            t.core.bytes_in_use(),
            held,
            "an unused spare returns its pages"
        );
        let mut spare = Spare::take(&t.core, 1);
        let ids = spare.use_or_allocate().unwrap();
        assert_eq!(ids.len(), 1);
        drop(spare);
        assert_eq!(
            t.core.bytes_in_use(),
            held + page,
            "a used spare stays held"
        );
        for pid in ids {
            t.core.free(pid);
        }
        assert_eq!(t.core.bytes_in_use(), held);
    }

    #[test]
    fn a_leaf_with_the_room_asked_for_is_not_split() {
        let t = tree(usize::MAX);
        for i in 0u32..10 {
            t.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        let key = 5u32.to_be_bytes();
        t.core.split_for(&key, 0, true, 0, 64).unwrap();
        assert_eq!(t.stats().splits, 0, "the leaf has 64 bytes free");
        t.core.split_for(&key, 0, true, 0, 8192).unwrap();
        assert_eq!(t.stats().splits, 1, "a 4 KiB leaf never has 8 KiB free");
        t.core.split_for(&key, 0, true, 0, 0).unwrap();
        assert_eq!(t.stats().splits, 2, "0: always split");
        t.check_invariants().unwrap();
        assert_eq!(t.len(), 10);
    }

    #[test]
    fn under_a_budget_a_split_takes_its_pages_under_its_latches() {
        let t = tree(4 * 4096);
        let held = t.core.bytes_in_use();
        let free_pages = (4 * 4096 - held) / 4096;
        assert!(Spare::take(&t.core, free_pages + 1)
            .use_or_allocate()
            .is_none());
        let mut spare = Spare::take(&t.core, free_pages);
        assert_eq!(
            t.core.bytes_in_use(),
            held,
            "a spare under a budget holds nothing"
        );
        let ids = spare.use_or_allocate().unwrap();
        assert_eq!(t.core.bytes_in_use(), 4 * 4096);
        for pid in ids {
            t.core.free(pid);
        }
    }
}
