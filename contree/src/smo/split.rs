//! Splits: for space (an insert that does not fit) and for contention (Contention Split).
//!
//! An insert that does not fit releases its leaf and splits it: it descends again, upgrades
//! parent then child to exclusive (top-down, so latches are always taken in tree order), and
//! if the parent has no room for the separator splits the parent first. The split position
//! is the middle, except on the rightmost node of a level when the new key goes past its last
//! key (an append, as with auto-increment keys): then the node is split at its end so the
//! left node stays full. The node keeps the upper half in place, so the rightmost node of
//! each level keeps its page.

use crate::engine::{Above, Target, TreeCore};
use crate::error::Error;
use crate::long_key::KeyRefs;
use crate::node::NodeMut;
use crate::policy::{LeafPolicies, SplitAdvice};
use crate::space::Room;
use crate::sync::Restart;
use std::sync::atomic::Ordering;

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
            match self.retry(|| self.split_attempt(sep, 0, Some(sep), 0)) {
                SplitOutcome::Done => return,
                SplitOutcome::ParentFull => {
                    if self.split_for(sep, 1, false, 0).is_err() {
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
    pub(crate) fn split_for(
        &self,
        key: &[u8],
        level: u16,
        spread: bool,
        room: usize,
    ) -> Result<(), Error> {
        let mut reclaims = 0;
        loop {
            match self.retry(|| self.split_attempt(key, level, None, room)) {
                SplitOutcome::Done => {
                    self.retry_deferred_merge();
                    return Ok(());
                }
                SplitOutcome::ParentFull => self.split_for(key, level + 1, spread, 0)?,
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
    /// [`split_for`](Self::split_for)).
    fn split_attempt(
        &self,
        key: &[u8],
        level: u16,
        at: Option<&[u8]>,
        room: usize,
    ) -> Result<SplitOutcome, Restart> {
        let (here, above) = self.optimistic_descend(Target::Key(key, level))?;
        // Latch top-down first; every node read below happens under an exclusive latch.
        let (mut above_x, parent) = match above {
            Above::Root(meta) => (meta.upgrade_exclusive()?, None),
            Above::Parent(parent, _) => (parent.guard.upgrade_exclusive()?, Some(parent.node)),
        };
        let mut x = here.guard.upgrade_exclusive()?;
        let mut node = NodeMut::new(here.node, &mut x);
        let count = node.count();
        let append = count > 0
            && !node.has_upper_fence()
            && node.lower_bound(key, self.directory())?.0 == count;
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
            (None, true, 0) => count - 1,
            (None, true, _) => count - 2,
            (None, false, _) => (count - 1) / 2,
        };
        // Fences and prefixes change in a split: take the nearest position where both
        // halves fit.
        let sep_pos = if room > 0 && level == 0 && !append {
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
        if let Some(p) = &parent {
            refs.before(p);
        }
        match parent {
            None => {
                let Some(ids) = self.allocate(2) else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let (left_pid, root_pid) = (ids[0], ids[1]);
                let (left, left_latch) = self.page(left_pid)?;
                let (root, root_latch) = self.page(root_pid)?;
                let mut lx = left_latch.exclusive();
                let mut rx = root_latch.exclusive();
                let sep = self.split_node(&mut node, NodeMut::new(left, &mut lx), sep_pos);
                let root_node = NodeMut::new(root, &mut rx);
                self.grow_root(root_node, root_pid, level + 1, &sep, left_pid, here.pid);
                self.split_done(&mut node, NodeMut::new(left, &mut lx), contention);
                for n in [&*node, &left, &root] {
                    refs.after(n);
                }
                let lost = refs.settle(self);
                assert!(lost.is_empty(), "a split drops no stored form");
                drop(above_x);
                Ok(SplitOutcome::Done)
            }
            Some(pnode) => {
                let mut pnode = NodeMut::new(pnode, &mut above_x);
                if !pnode.fits(&node.key(sep_pos)?, 4)? {
                    return Ok(SplitOutcome::ParentFull);
                }
                let Some(ids) = self.allocate(1) else {
                    return Ok(SplitOutcome::OutOfSpace);
                };
                let left_pid = ids[0];
                let (left, left_latch) = self.page(left_pid)?;
                let mut lx = left_latch.exclusive();
                let sep = self.split_node(&mut node, NodeMut::new(left, &mut lx), sep_pos);
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
