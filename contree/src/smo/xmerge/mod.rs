//! XMerge ("Contention and Space Management in B-Trees", §4 and Listing 2): frees pages by
//! packing a group of up to [`Config::xmerge_group`](crate::Config::xmerge_group)
//! neighbouring children of one parent into one node fewer.
//!
//! **Group.** Starting from one child, the group grows by one neighbour at a time (to the
//! right for the space manager's random picks, as in the paper; to the left for the sweeps of
//! [`Tree::compact`](crate::Tree::compact), which walk each parent from right to left) until
//! the free space of its members adds up to about a page. A member must be free of writers at
//! that moment and must not be a leaf that Contention Split marked hot; the group stops
//! growing at the first neighbour that is neither.
//!
//! **Plan.** The members' entries form one sorted run (for inner nodes with the parent keys
//! between the members pulled down, each carrying the upper child of the member on its
//! left). The run is cut from the right: each new node takes as many entries as fit in a page
//! under its new fences and prefix, so every node but the leftmost ends up full. The plan
//! holds when the run fits in fewer nodes than the group has and the parent can take the new
//! separators (prefixes and fences change, so both are computed exactly, not estimated from
//! the free space alone); otherwise nothing changes.
//!
//! **Apply.** The plan is computed from optimistic reads. Then the parent and every member
//! are upgraded to exclusive with `try`, which validates that nothing changed since the reads
//! and never waits: a failed upgrade abandons the plan. The new nodes are built in scratch
//! pages and copied over the rightmost members, the parent is rebuilt with the new
//! separators, and the leftmost members, now unreferenced, are freed. Readers that passed
//! through any of these nodes fail validation and restart; no page is written before all
//! latches are held, so an abandoned attempt changes nothing.
//!
//! **Callers.** The space manager (random nodes, paced), `Tree::compact` (sweeps of every
//! level, leaves first) and `reclaim` (an insert that hit the memory budget); see `space`.

use crate::engine::{TreeCore, Visit};
use crate::long_key::KeyRefs;
use crate::node::{Node, NodeMut, Scratch, HEADER};
use crate::page::PageId;
use crate::policy::LeafPolicies;
use crate::sync::{ExclusiveGuard, OptimisticGuard, Restart};
use plan::{optimistic_group_plan, Run};
use std::sync::atomic::Ordering;

mod plan;
#[cfg(test)]
mod tests;

/// The direction in which a group grows from its first member.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Grow {
    Right,
    Left,
}

/// What a successful XMerge did.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Merged {
    /// Pages freed.
    pub freed: usize,
    /// The parent slot of the leftmost node left in the group, the only one not full.
    pub lo: usize,
}

/// A member of a group with its optimistic snapshot.
struct Member<'t> {
    pid: PageId,
    node: Node,
    guard: OptimisticGuard<'t>,
}

impl TreeCore {
    /// XMerge on the children of `parent` starting at child `start` and growing towards
    /// `grow`. Returns what it freed, `None` if the group could not free a page or a latch
    /// was not free at once.
    ///
    /// With `shift`, a group that cannot free a page is still packed to the right (the
    /// leftmost member keeps all its free space, and `Merged::freed` is 0), so that the next
    /// group of a sweep, which ends at that member, starts with the free space collected so
    /// far.
    pub(crate) fn optimistic_xmerge(
        &self,
        parent: Visit<'_>,
        start: usize,
        grow: Grow,
        shift: bool,
    ) -> Result<Option<Merged>, Restart> {
        self.events.xmerge_attempts.fetch_add(1, Ordering::Relaxed);
        let pnode = parent.node;
        let count = pnode.count();
        if pnode.is_leaf() || count == 0 || start > count {
            return Ok(None);
        }
        let page = pnode.page_size();
        let level = pnode.level() - 1;
        let mut members: Vec<Member> = Vec::with_capacity(self.config().xmerge_group);
        let mut free = 0;
        let mut found = None;
        for step in 0..self.config().xmerge_group {
            let pos = match grow {
                Grow::Right => start + step,
                Grow::Left => match start.checked_sub(step) {
                    Some(p) => p,
                    None => break,
                },
            };
            if pos > count {
                break;
            }
            let Some(member) = self.optimistic_member(&parent, pos, level)? else {
                break;
            };
            free += member.node.free_space();
            match grow {
                Grow::Right => members.push(member),
                Grow::Left => members.insert(0, member),
            }
            // Merging saves a header; prefixes and fences can cost or save a little more,
            // which the exact plan below accounts for.
            if members.len() < 2 || free + HEADER < page {
                continue;
            }
            let lo = if grow == Grow::Right { start } else { pos };
            if let Some((chunks, parent_fits)) =
                optimistic_group_plan(pnode, lo, &members, members.len() - 1, page)?
            {
                if !parent_fits {
                    return Ok(None);
                }
                found = Some((lo, chunks));
                break;
            }
        }
        // Carrying free space on pays only when there is enough of it to free a page soon.
        if found.is_none() && shift && members.len() >= 2 && free >= page / 2 {
            let lo = match grow {
                Grow::Right => start,
                Grow::Left => start + 1 - members.len(),
            };
            if let Some((chunks, parent_fits)) =
                optimistic_group_plan(pnode, lo, &members, members.len(), page)?
            {
                // Worth it only if the leftmost member gains free space.
                let (start0, end0) = chunks[0];
                if parent_fits && end0 - start0 < members[0].node.count() {
                    found = Some((lo, chunks));
                }
            }
        }
        let Some((lo, chunks)) = found else {
            return Ok(None);
        };
        let freed = self.latch_and_apply(parent, lo, members, &chunks)?;
        Ok(freed.map(|freed| Merged { freed, lo }))
    }

    /// Member `pos` of the group under `parent` (whose children are at `level`), with its
    /// snapshot; `None` if a writer holds it or a leaf policy keeps it apart.
    fn optimistic_member<'t>(
        &'t self,
        parent: &Visit<'t>,
        pos: usize,
        level: u16,
    ) -> Result<Option<Member<'t>>, Restart> {
        let pid = parent.node.child(pos)?;
        let (node, latch) = self.page(pid)?;
        let Some(guard) = latch.try_optimistic() else {
            return Ok(None);
        };
        parent.guard.validate()?;
        if node.level() != level {
            return Err(Restart);
        }
        // A leaf in line mode (`sync::lines`) is hot: left alone, as leaves Contention Split
        // marked hot are (latching it would end the mode).
        if guard.lines() || !LeafPolicies::may_merge(&node) {
            return Ok(None);
        }
        Ok(Some(Member { pid, node, guard }))
    }

    /// Latches the parent and every member, without waiting (the upgrades validate the
    /// reads), and applies the plan. Returns the pages freed, `None` if a latch was taken.
    fn latch_and_apply(
        &self,
        parent: Visit<'_>,
        lo: usize,
        members: Vec<Member>,
        chunks: &[(usize, usize)],
    ) -> Result<Option<usize>, Restart> {
        let pnode = parent.node;
        let Some(mut px) = parent.guard.try_upgrade_exclusive()? else {
            return Ok(None);
        };
        let mut latched: Vec<(PageId, Node, ExclusiveGuard)> = Vec::with_capacity(members.len());
        for m in members {
            let Some(x) = m.guard.try_upgrade_exclusive()? else {
                return Ok(None);
            };
            latched.push((m.pid, m.node, x));
        }
        let (freed, lost) =
            self.apply_xmerge(NodeMut::new(pnode, &mut px), lo, &mut latched, chunks);
        let empty_root = pnode.count() == 0 && self.is_root(parent.pid);
        drop(latched);
        drop(px);
        self.release_keys(&lost);
        if empty_root {
            self.try_collapse_roots();
        }
        Ok(Some(freed))
    }

    /// Spreads the free space of the siblings around child `pos` of `parent` evenly over
    /// them (a group of up to `xmerge_group` around it, as many nodes as before), so that
    /// the node at `pos` gets room without a new page: what an insert does at the memory
    /// budget instead of a split. Returns whether the group was rewritten; `false` when its
    /// members together have less than a sixteenth of a page free, or a latch was taken.
    pub(crate) fn optimistic_spread(&self, parent: Visit<'_>, pos: usize) -> Result<bool, Restart> {
        let pnode = parent.node;
        let count = pnode.count();
        if pnode.is_leaf() || pos > count {
            return Ok(false);
        }
        self.events.xmerge_attempts.fetch_add(1, Ordering::Relaxed);
        let page = pnode.page_size();
        let level = pnode.level() - 1;
        let group = self.config().xmerge_group;
        let lo = pos.saturating_sub(group / 2);
        let mut members: Vec<Member> = Vec::with_capacity(group);
        let mut free = 0;
        for p in lo..=count.min(lo + group - 1) {
            match self.optimistic_member(&parent, p, level)? {
                Some(m) => {
                    free += m.node.free_space();
                    members.push(m);
                }
                None if p <= pos => return Ok(false),
                None => break,
            }
        }
        let n = members.len();
        if n < 2 || free < page / 16 {
            return Ok(false);
        }
        // Cut with a smaller page so that every node keeps most of its share of the free
        // space; prefixes and fences change, so ask for less if that does not fit.
        for share in [free * 3 / (4 * n), free / (2 * n)] {
            let cap = page - share;
            if let Some((chunks, true)) = optimistic_group_plan(pnode, lo, &members, n, cap)? {
                return Ok(self
                    .latch_and_apply(parent, lo, members, &chunks)?
                    .is_some());
            }
        }
        Ok(false)
    }

    /// Writes the plan: new nodes over the rightmost members, the new parent, and frees the
    /// leftmost members. Every latch is held exclusively. Returns the pages freed and the
    /// key blobs whose stored forms the rewrite dropped (released by the caller once the
    /// latches are).
    fn apply_xmerge(
        &self,
        mut pnode: NodeMut,
        lo: usize,
        latched: &mut [(PageId, Node, ExclusiveGuard)],
        chunks: &[(usize, usize)],
    ) -> (usize, Vec<crate::blob::Stub>) {
        let nodes: Vec<Node> = latched.iter().map(|m| m.1).collect();
        let mut refs = KeyRefs::new(self);
        for n in nodes.iter().chain([&pnode.node()]) {
            refs.before(n);
        }
        let run = Run::optimistic_new(pnode.node(), lo, &nodes).expect("latched");
        let page = pnode.page_size();
        let level = pnode.level() - 1;
        let (x, m) = (latched.len(), chunks.len());
        let group_lower = nodes[0].lower_fence().expect("latched");
        let group_upper = nodes[x - 1].upper_fence().expect("latched");
        // Separator keys between the new nodes, left to right.
        let seps: Vec<Vec<u8>> = chunks[..m - 1]
            .iter()
            .map(|&(_, end)| {
                let mut k = Vec::new();
                run.key(run.separator(end), &mut k).expect("latched");
                k
            })
            .collect();
        let mut built = Vec::with_capacity(m);
        for (j, &chunk) in chunks.iter().enumerate() {
            let lower = if j == 0 {
                group_lower.as_deref()
            } else {
                Some(&seps[j - 1][..])
            };
            let upper = if j == m - 1 {
                group_upper.as_deref()
            } else {
                Some(&seps[j][..])
            };
            let upper_child = match (run.leaf, j == m - 1) {
                (true, _) => 0,
                (false, true) => nodes[x - 1].upper_child(),
                (false, false) => run.child(chunk.1).expect("latched"),
            };
            let mut scratch = Scratch::new(page);
            run.build(&mut scratch, level, chunk, lower, upper, upper_child);
            built.push(scratch);
        }
        // The parent: its slots lo..hi (the group's inner separators) become the new ones.
        let hi = lo + x - 1;
        let count = pnode.count();
        let plower = pnode.lower_fence().expect("latched");
        let pupper = pnode.upper_fence().expect("latched");
        let pprefix = run.optimistic_parent_prefix(chunks, lo).expect("latched");
        let mut pscratch = Scratch::new(page);
        {
            let old = pnode.node();
            let mut b = pscratch.builder(
                pnode.level(),
                plower.as_deref(),
                pupper.as_deref(),
                &pprefix,
            );
            b.copy_range(&old, 0..lo);
            for (sep, s) in seps.iter().zip(&latched[x - m..]) {
                b.push(sep, &s.0.to_ne_bytes());
            }
            b.copy_range(&old, hi..count);
            b.finish(old.upper_child());
        }
        // Commit: nothing was written before this point.
        for (scratch, s) in built.iter_mut().zip(&mut latched[x - m..]) {
            self.rewrite_node(&mut NodeMut::new(s.1, &mut s.2), scratch);
        }
        self.rewrite_node(&mut pnode, &mut pscratch);
        for s in &latched[x - m..] {
            refs.after(&s.1);
        }
        refs.after(&pnode);
        let lost = refs.settle(self);
        for freed in &latched[..x - m] {
            self.free(freed.0);
        }
        if x > m {
            self.events.xmerges.fetch_add(1, Ordering::Relaxed);
        }
        self.events
            .pages_freed
            .fetch_add((x - m) as u64, Ordering::Relaxed);
        (x - m, lost)
    }
}
