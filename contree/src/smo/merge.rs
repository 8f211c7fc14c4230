//! Merges after removals (the underflow policy) and root collapse.
//!
//! After a removal leaves a leaf less full than `Config::merge_threshold` of a page (25% by
//! default), the leaf is merged with its right sibling under the same parent (its left one
//! if it is the last child), if the result fits in 3/4 of a page; the left node is freed, so
//! the rightmost node of a level is never the one freed. Merges take latches only with
//! `try`, so they never wait and never slow the remover down: a contended merge is skipped
//! and retried by a later removal. An inner node that underflows is merged the same way,
//! and a root left with a single child is replaced by that child. Leaves that a leaf policy
//! keeps apart (Contention Split's hot leaves) are not merged.

use crate::engine::{Above, Optimistic, Target, TreeCore};
use crate::node::{Node, NodeMut};
use crate::page::PageId;
use crate::policy::LeafPolicies;
use crate::sync::{ExclusiveGuard, Restart};
use std::sync::atomic::Ordering;

enum MergeOutcome {
    Done,
    ParentUnderfull,
    RootSingleChild,
}

impl TreeCore {
    fn is_root(&self, pid: PageId) -> bool {
        self.root_id() == pid
    }

    /// Best-effort merge of the underfull node at `level` holding `key` with a sibling.
    /// Never waits for a latch.
    pub(crate) fn try_merge(&self, key: &[u8], level: u16) {
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
        let Some(mut px) = parent.guard.try_upgrade_exclusive()? else {
            return Ok(MergeOutcome::Done);
        };
        let mut pnode = NodeMut::new(parent.node, &mut px);
        let pcount = pnode.count();
        if pcount == 0 {
            return Ok(if self.is_root(parent.pid) {
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
        let (right, right_latch) = self.page(right_pid)?;
        let (lx, mut rx): (ExclusiveGuard, ExclusiveGuard);
        if left_pid == here.pid {
            let Some(g) = here.guard.try_upgrade_exclusive()? else {
                return Ok(MergeOutcome::Done);
            };
            lx = g;
            let Some(g) = right_latch.try_exclusive() else {
                return Ok(MergeOutcome::Done);
            };
            rx = g;
        } else {
            let Some(g) = left_latch.try_exclusive() else {
                return Ok(MergeOutcome::Done);
            };
            lx = g;
            let Some(g) = here.guard.try_upgrade_exclusive()? else {
                return Ok(MergeOutcome::Done);
            };
            rx = g;
        }
        if !self.is_underfull(&here.node)
            || !LeafPolicies::may_merge(&left)
            || !LeafPolicies::may_merge(&right)
        {
            // Not underfull any more, or kept apart by a leaf policy.
            return Ok(MergeOutcome::Done);
        }
        let sep = pnode.key(left_pos)?;
        let need = Node::merged_space(&left, &right, &sep)?;
        if need > right.page_size() * 3 / 4 {
            return Ok(MergeOutcome::Done);
        }
        self.merge_nodes(&mut NodeMut::new(right, &mut rx), &left, &sep);
        self.remove_separator(&mut pnode, left_pos);
        self.free(left_pid);
        drop(lx);
        self.events.merges.fetch_add(1, Ordering::Relaxed);
        if pnode.count() == 0 && self.is_root(parent.pid) {
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
        let (meta, root) = self.root_snapshot::<Optimistic>()?;
        let Some(_m) = meta.try_upgrade_exclusive()? else {
            return Ok(());
        };
        let Some(_x) = root.guard.try_upgrade_exclusive()? else {
            return Ok(());
        };
        if root.node.is_leaf() || root.node.count() != 0 {
            return Ok(());
        }
        self.collapse_root(root.pid, root.node.upper_child());
        self.events.merges.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
