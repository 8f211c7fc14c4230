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
//! level, leaves first) and [`BTree::reclaim`] (an insert that hit the memory budget).

use crate::btree::{BTree, Target, Visit};
use crate::latch::{ExclusiveGuard, OptimisticGuard, Restart};
use crate::node::{common_prefix, entry_space, node_prefix, Node, Scratch, HEADER};
use crate::page::PageId;
use std::sync::atomic::Ordering;

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

/// A small xorshift generator for the space manager's random picks.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (which must not be 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

/// A member of a group with its optimistic snapshot.
struct Member<'t> {
    pid: PageId,
    node: Node,
    guard: OptimisticGuard<'t>,
}

/// One entry of the run: entry `index` of member `member`, or (`sep`) the parent key at
/// slot `index` that lies between member `member` and the next one.
#[derive(Clone, Copy, Debug)]
struct Item {
    member: usize,
    index: usize,
    sep: bool,
    key_len: usize,
    value_len: usize,
}

/// The group's entries as one sorted run.
struct Run<'a> {
    parent: Node,
    nodes: &'a [Node],
    items: Vec<Item>,
    leaf: bool,
}

/// Bytes a node with these fence and prefix lengths and `entries` bytes of entries takes.
fn node_size(prefix: usize, lower: usize, upper: usize, entries: usize) -> usize {
    HEADER + prefix + lower + upper + entries
}

impl<'a> Run<'a> {
    /// Lists the entries of `nodes` (children `lo..` of `parent`), pulling the parent keys
    /// between them down when they are inner nodes. Reads optimistically.
    fn optimistic_new(parent: Node, lo: usize, nodes: &'a [Node]) -> Result<Run<'a>, Restart> {
        let leaf = nodes[0].is_leaf();
        let mut items = Vec::new();
        for (k, n) in nodes.iter().enumerate() {
            if k > 0 && !leaf {
                let slot = lo + k - 1;
                let e = parent.entry(slot)?;
                items.push(Item {
                    member: k - 1,
                    index: slot,
                    sep: true,
                    key_len: parent.prefix_len() + e.suffix_len,
                    value_len: 4,
                });
            }
            let plen = n.prefix_len();
            for i in 0..n.count() {
                let e = n.entry(i)?;
                items.push(Item {
                    member: k,
                    index: i,
                    sep: false,
                    key_len: plen + e.suffix_len,
                    value_len: e.value_len,
                });
            }
        }
        Ok(Run {
            parent,
            nodes,
            items,
            leaf,
        })
    }

    /// Writes the full key of item `j` into `out`.
    fn key(&self, j: usize, out: &mut Vec<u8>) -> Result<(), Restart> {
        out.clear();
        let it = self.items[j];
        if it.sep {
            self.parent.push_key(it.index, out)
        } else {
            self.nodes[it.member].push_key(it.index, out)
        }
    }

    /// The child page item `j` points to (inner runs only).
    fn child(&self, j: usize) -> Result<PageId, Restart> {
        let it = self.items[j];
        if it.sep {
            Ok(self.nodes[it.member].upper_child())
        } else {
            self.nodes[it.member].child(it.index)
        }
    }

    /// The item that becomes the separator after the node `(start, end)`: its last entry
    /// for leaves, the entry right after it (pushed up) for inner nodes.
    fn separator(&self, end: usize) -> usize {
        if self.leaf {
            end - 1
        } else {
            end
        }
    }

    /// Cuts the run from the right into nodes of at most `page` bytes, each as full as it
    /// can be. Returns the `(start, end)` item ranges from left to right, or `None` if more
    /// than `max_nodes` nodes are needed. Reads optimistically.
    fn optimistic_plan(
        &self,
        page: usize,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        max_nodes: usize,
    ) -> Result<Option<Vec<(usize, usize)>>, Restart> {
        let items = &self.items;
        let space = |range: &[Item], plen: usize| -> usize {
            range
                .iter()
                .map(|x| entry_space(x.key_len.saturating_sub(plen), x.value_len))
                .sum()
        };
        let mut chunks = Vec::new();
        let mut end = items.len();
        let mut upper_len = upper.map_or(0, <[u8]>::len);
        let (mut first, mut last) = (Vec::new(), Vec::new());
        loop {
            if chunks.len() == max_nodes {
                return Ok(None);
            }
            if end == 0 {
                // An empty group, or an inner node left with only its upper child.
                chunks.push((0, 0));
                break;
            }
            self.key(end - 1, &mut last)?;
            let (mut start, mut plen, mut sum) = (end, 0, 0);
            while start > 0 {
                let c = start - 1;
                self.key(c, &mut first)?;
                let p = common_prefix(&first, &last);
                let s = if start == end || p != plen {
                    space(&items[c..end], p)
                } else {
                    sum + entry_space(items[c].key_len.saturating_sub(p), items[c].value_len)
                };
                let lower_len = match c {
                    0 => lower.map_or(0, <[u8]>::len),
                    _ => items[c - 1].key_len,
                };
                if node_size(p, lower_len, upper_len, s) > page {
                    break;
                }
                (start, plen, sum) = (c, p, s);
            }
            if start == end {
                // Every entry fits in an empty page; only a torn read gets here.
                return Err(Restart);
            }
            chunks.push((start, end));
            if start == 0 {
                break;
            }
            upper_len = items[start - 1].key_len;
            end = if self.leaf { start } else { start - 1 };
        }
        chunks.reverse();
        Ok(Some(chunks))
    }

    /// The prefix of the parent with the group's `x - 1` inner separators replaced by the
    /// plan's: the common prefix of its new first and last key.
    fn optimistic_parent_prefix(
        &self,
        chunks: &[(usize, usize)],
        lo: usize,
    ) -> Result<Vec<u8>, Restart> {
        let parent = self.parent;
        let count = parent.count();
        let hi = lo + self.nodes.len() - 1;
        let first_sep = chunks.first().filter(|_| chunks.len() > 1);
        let last_sep = chunks.len().checked_sub(2).map(|i| chunks[i]);
        let (mut first, mut last) = (Vec::new(), Vec::new());
        let have_first = if lo > 0 {
            parent.push_key(0, &mut first)?;
            true
        } else if let Some(&(_, end)) = first_sep {
            self.key(self.separator(end), &mut first)?;
            true
        } else if hi < count {
            parent.push_key(hi, &mut first)?;
            true
        } else {
            false
        };
        let have_last = if hi < count {
            parent.push_key(count - 1, &mut last)?;
            true
        } else if let Some((_, end)) = last_sep {
            self.key(self.separator(end), &mut last)?;
            true
        } else if lo > 0 {
            parent.push_key(lo - 1, &mut last)?;
            true
        } else {
            false
        };
        Ok(node_prefix(
            parent.lower_fence()?,
            parent.upper_fence()?,
            have_first.then_some(&first[..]),
            have_last.then_some(&last[..]),
        )
        .to_vec())
    }

    /// Whether the parent, with the group's `x - 1` inner separators replaced by the plan's,
    /// fits in a page. Reads optimistically.
    fn optimistic_parent_fits(
        &self,
        chunks: &[(usize, usize)],
        lo: usize,
        page: usize,
    ) -> Result<bool, Restart> {
        let parent = self.parent;
        let count = parent.count();
        let hi = lo + self.nodes.len() - 1;
        let seps: Vec<usize> = chunks[..chunks.len() - 1]
            .iter()
            .map(|&(_, end)| self.separator(end))
            .collect();
        let lower = parent.lower_fence()?;
        let upper = parent.upper_fence()?;
        let plen = self.optimistic_parent_prefix(chunks, lo)?.len();
        let old_plen = parent.prefix_len();
        let mut entries = 0;
        for i in (0..lo).chain(hi..count) {
            let e = parent.entry(i)?;
            entries += entry_space((old_plen + e.suffix_len).saturating_sub(plen), 4);
        }
        for &s in &seps {
            entries += entry_space(self.items[s].key_len.saturating_sub(plen), 4);
        }
        let fences = lower.map_or(0, <[u8]>::len) + upper.map_or(0, <[u8]>::len);
        Ok(node_size(plen, fences, 0, entries) <= page)
    }

    /// Builds the node for items `start..end` into `scratch`. Exclusive latches held.
    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        scratch: &mut Scratch,
        level: u16,
        (start, end): (usize, usize),
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        upper_child: PageId,
    ) {
        let (mut first, mut last) = (Vec::new(), Vec::new());
        let nonempty = start < end;
        if nonempty {
            self.key(start, &mut first).expect("latched");
            self.key(end - 1, &mut last).expect("latched");
        }
        let prefix = node_prefix(
            lower,
            upper,
            nonempty.then_some(&first[..]),
            nonempty.then_some(&last[..]),
        )
        .to_vec();
        let mut b = scratch.builder(level, lower, upper, &prefix);
        let mut key = Vec::new();
        let mut j = start;
        while j < end {
            let it = self.items[j];
            if it.sep {
                self.key(j, &mut key).expect("latched");
                let child = self.nodes[it.member].upper_child();
                b.push(&key, &child.to_ne_bytes());
                j += 1;
                continue;
            }
            // A stretch of entries of one member is copied in one go.
            let mut stop = j + 1;
            while stop < end && !self.items[stop].sep && self.items[stop].member == it.member {
                stop += 1;
            }
            let last_index = self.items[stop - 1].index;
            b.copy_range(&self.nodes[it.member], it.index..last_index + 1);
            j = stop;
        }
        b.finish(upper_child);
    }
}

/// The plan that packs `members` (children `lo..` of `parent`) into at most `max_nodes`
/// nodes, and whether the parent can take its separators; `None` if more nodes are needed.
#[allow(clippy::type_complexity)]
fn optimistic_group_plan(
    parent: Node,
    lo: usize,
    members: &[Member],
    max_nodes: usize,
) -> Result<Option<(Vec<(usize, usize)>, bool)>, Restart> {
    let page = parent.page_size();
    let nodes: Vec<Node> = members.iter().map(|m| m.node).collect();
    let run = Run::optimistic_new(parent, lo, &nodes)?;
    let lower = nodes[0].lower_fence()?;
    let upper = nodes[nodes.len() - 1].upper_fence()?;
    let Some(chunks) = run.optimistic_plan(page, lower, upper, max_nodes)? else {
        return Ok(None);
    };
    let parent_fits = run.optimistic_parent_fits(&chunks, lo, page)?;
    Ok(Some((chunks, parent_fits)))
}

impl BTree {
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
        self.xmerge_attempts.fetch_add(1, Ordering::Relaxed);
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
            let pid = pnode.child(pos)?;
            let (node, latch) = self.page(pid)?;
            let Some(guard) = latch.try_optimistic() else {
                break;
            };
            parent.guard.validate()?;
            if node.level() != level {
                return Err(Restart);
            }
            if node.is_leaf() && node.is_hot() {
                break;
            }
            free += node.free_space();
            let member = Member { pid, node, guard };
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
                optimistic_group_plan(pnode, lo, &members, members.len() - 1)?
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
                optimistic_group_plan(pnode, lo, &members, members.len())?
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
        // Latch everything, parent first, without waiting; the upgrades validate the reads.
        let Some(_px) = parent.guard.try_upgrade_exclusive()? else {
            return Ok(None);
        };
        let mut latched: Vec<(PageId, Node, ExclusiveGuard)> = Vec::with_capacity(members.len());
        for m in members {
            let Some(x) = m.guard.try_upgrade_exclusive()? else {
                return Ok(None);
            };
            latched.push((m.pid, m.node, x));
        }
        let nodes: Vec<Node> = latched.iter().map(|m| m.1).collect();
        let freed = self.apply_xmerge(pnode, lo, &latched, &nodes, &chunks);
        let empty_root = pnode.count() == 0 && self.root.load(Ordering::Acquire) == parent.pid;
        drop(latched);
        drop(_px);
        if empty_root {
            let _ = self.try_collapse_root();
        }
        Ok(Some(Merged { freed, lo }))
    }

    /// Writes the plan: new nodes over the rightmost members, the new parent, and frees the
    /// leftmost members. Every latch is held exclusively. Returns the pages freed.
    fn apply_xmerge(
        &self,
        mut pnode: Node,
        lo: usize,
        latched: &[(PageId, Node, ExclusiveGuard)],
        nodes: &[Node],
        chunks: &[(usize, usize)],
    ) -> usize {
        let run = Run::optimistic_new(pnode, lo, nodes).expect("latched");
        let page = pnode.page_size();
        let level = pnode.level() - 1;
        let (x, m) = (latched.len(), chunks.len());
        let survivors = &latched[x - m..];
        let group_lower = nodes[0].lower_fence().expect("latched").map(<[u8]>::to_vec);
        let group_upper = nodes[x - 1]
            .upper_fence()
            .expect("latched")
            .map(<[u8]>::to_vec);
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
        let plower = pnode.lower_fence().expect("latched").map(<[u8]>::to_vec);
        let pupper = pnode.upper_fence().expect("latched").map(<[u8]>::to_vec);
        let pprefix = run.optimistic_parent_prefix(chunks, lo).expect("latched");
        let mut pscratch = Scratch::new(page);
        {
            let mut b = pscratch.builder(
                pnode.level(),
                plower.as_deref(),
                pupper.as_deref(),
                &pprefix,
            );
            b.copy_range(&pnode, 0..lo);
            for (sep, s) in seps.iter().zip(survivors) {
                b.push(sep, &s.0.to_ne_bytes());
            }
            b.copy_range(&pnode, hi..count);
            b.finish(pnode.upper_child());
        }
        // Commit: nothing was written before this point.
        for (scratch, s) in built.iter_mut().zip(survivors) {
            let mut node = s.1;
            scratch.copy_into(&mut node);
        }
        pscratch.copy_into(&mut pnode);
        for freed in &latched[..x - m] {
            self.pages.free(freed.0);
        }
        if x > m {
            self.xmerges.fetch_add(1, Ordering::Relaxed);
        }
        self.pages_freed
            .fetch_add((x - m) as u64, Ordering::Relaxed);
        x - m
    }

    /// Descends to a node at `level` choosing a random child at every step, and returns it
    /// with the inverse of the probability of having picked it (the product of the child
    /// counts on the way). `None` if the tree is not that tall. Never waits for a latch.
    pub(crate) fn optimistic_random_node(
        &self,
        level: u16,
        rng: &mut Rng,
    ) -> Result<Option<(Visit<'_>, f64)>, Restart> {
        let meta = self.meta.optimistic();
        let pid = self.root.load(Ordering::Acquire);
        let (node, latch) = self.page(pid)?;
        let guard = latch.try_optimistic().ok_or(Restart)?;
        meta.validate()?;
        let mut here = Visit { pid, node, guard };
        let mut weight = 1.0;
        loop {
            let l = here.node.level();
            here.guard.validate()?;
            if l == level {
                return Ok(Some((here, weight)));
            }
            if l < level {
                return Ok(None);
            }
            let n = here.node.count() + 1;
            weight *= n as f64;
            let child = here.node.child(rng.below(n))?;
            let (node, latch) = self.page(child)?;
            let guard = latch.try_optimistic().ok_or(Restart)?;
            here.guard.validate()?;
            here = Visit {
                pid: child,
                node,
                guard,
            };
        }
    }

    /// An estimate of the leaves' fill factor from `samples` random leaves, weighted by the
    /// inverse of their chance of being picked; `None` if no sample succeeded.
    pub(crate) fn optimistic_sample_fill(&self, rng: &mut Rng, samples: usize) -> Option<f64> {
        let page = self.config().page_size as f64;
        let (mut used, mut total) = (0.0, 0.0);
        for _ in 0..samples {
            if let Ok(Some((leaf, weight))) = self.optimistic_random_node(0, rng) {
                let u = leaf.node.used_space() as f64;
                if leaf.guard.validate().is_ok() {
                    used += weight * u;
                    total += weight * page;
                }
            }
        }
        (total > 0.0).then(|| used / total)
    }

    /// XMerge on a random group, as the space manager runs it: a random parent of leaves
    /// (one pick in 16 goes to a higher level instead), a random first child, growing to the
    /// right. Returns the pages freed.
    pub(crate) fn optimistic_xmerge_random(&self, rng: &mut Rng) -> usize {
        let root_level = self.optimistic_root_level();
        if root_level == 0 {
            return 0;
        }
        let level = if root_level >= 2 && rng.below(16) == 0 {
            2 + rng.below(root_level as usize - 1) as u16
        } else {
            1
        };
        let mut attempt = || -> Result<Option<Merged>, Restart> {
            let Some((parent, _)) = self.optimistic_random_node(level, rng)? else {
                return Ok(None);
            };
            let count = parent.node.count();
            if count == 0 {
                return Ok(None);
            }
            let start = rng.below(count);
            parent.guard.validate()?;
            self.optimistic_xmerge(parent, start, Grow::Right, false)
        };
        match attempt() {
            Ok(Some(m)) => m.freed,
            _ => 0,
        }
    }

    /// The level of the root (0 when it is a leaf).
    pub(crate) fn optimistic_root_level(&self) -> u16 {
        self.retry(|| {
            let meta = self.meta.optimistic();
            let (root, latch) = self.page(self.root.load(Ordering::Acquire))?;
            let guard = latch.optimistic();
            meta.validate()?;
            let level = root.level();
            guard.validate()?;
            Ok(level)
        })
    }

    /// XMerge over the whole tree, leaves first; stops once `want` pages are freed. Returns
    /// the pages freed.
    pub(crate) fn compact_up_to(&self, want: usize) -> usize {
        let mut freed = 0;
        let mut parent_level = 1;
        while freed < want && parent_level <= self.optimistic_root_level() {
            freed += self.sweep(parent_level, want - freed);
            parent_level += 1;
        }
        for _ in 0..4 {
            if self.try_collapse_root().is_ok() {
                break;
            }
        }
        freed
    }

    /// [`Tree::compact`](crate::Tree::compact).
    pub(crate) fn compact(&self) -> usize {
        self.compact_up_to(usize::MAX)
    }

    /// One pass over the nodes at `parent_level`, right to left; in each, groups that end at
    /// the previous group's partly filled leftmost node and grow to the left. Returns the
    /// pages freed; stops once `want` are.
    fn sweep(&self, parent_level: u16, want: usize) -> usize {
        let mut freed = 0;
        // A key inside the parent being swept (its upper fence); `None`: the rightmost.
        let mut cursor: Option<Vec<u8>> = None;
        loop {
            let mut end = usize::MAX;
            let mut lower = None;
            while end > 0 {
                let target = match &cursor {
                    Some(k) => Target::Key(k, parent_level),
                    None => Target::Rightmost(parent_level),
                };
                let Some((parent, fence, count)) = self.optimistic_parent_for_sweep(target) else {
                    return freed;
                };
                lower = fence;
                end = end.min(count);
                if end == 0 {
                    break;
                }
                match self.optimistic_xmerge(parent, end, Grow::Left, true) {
                    Ok(Some(m)) => {
                        freed += m.freed;
                        end = m.lo;
                    }
                    _ => end -= 1,
                }
                if freed >= want {
                    return freed;
                }
            }
            match lower {
                Some(l) => cursor = Some(l),
                None => return freed,
            }
        }
    }

    /// The node at `target`, a copy of its lower fence and its key count, all validated;
    /// `None` when the tree became too short or stays busy.
    #[allow(clippy::type_complexity)]
    fn optimistic_parent_for_sweep(
        &self,
        target: Target,
    ) -> Option<(Visit<'_>, Option<Vec<u8>>, usize)> {
        let level = match target {
            Target::Key(_, l) | Target::Rightmost(l) => l,
        };
        for _ in 0..64 {
            if self.optimistic_root_level() < level {
                return None;
            }
            let attempt = || -> Result<(Visit<'_>, Option<Vec<u8>>, usize), Restart> {
                let (here, _) = self.optimistic_descend(target)?;
                let lower = here.node.lower_fence()?.map(<[u8]>::to_vec);
                let count = here.node.count();
                here.guard.validate()?;
                Ok((here, lower, count))
            };
            if let Ok(found) = attempt() {
                return Some(found);
            }
            std::thread::yield_now();
        }
        None
    }

    /// Frees pages for an insert that hit the memory budget: a few random XMerges, then, if
    /// entries were removed since the last sweep that found nothing, a sweep of the tree
    /// until `want` pages are free. Returns the pages freed.
    pub(crate) fn reclaim(&self, want: usize) -> usize {
        let seed = self as *const BTree as u64 ^ self.removals.sum() as u64;
        let mut rng = Rng::new(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let mut freed = 0;
        for _ in 0..16 {
            freed += self.optimistic_xmerge_random(&mut rng);
            if freed >= want {
                return freed;
            }
        }
        let removals = self.removals.sum();
        if removals <= self.reclaim_floor.load(Ordering::Relaxed) {
            return freed;
        }
        let got = self.compact_up_to(want - freed);
        if got == 0 {
            self.reclaim_floor.store(removals, Ordering::Relaxed);
        }
        freed + got
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;
    use std::collections::BTreeMap;

    fn tree(config: Config) -> BTree {
        BTree::with_config(Config {
            space_manager: false,
            ..config
        })
        .unwrap()
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// Inserts `n` random u64 keys; returns the oracle.
    fn fill_random(t: &BTree, n: usize, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let mut x = seed;
        let mut oracle = BTreeMap::new();
        for _ in 0..n {
            let k = xorshift(&mut x).to_be_bytes().to_vec();
            let v = x.to_le_bytes().to_vec();
            t.insert(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        oracle
    }

    fn assert_same(t: &BTree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
        t.check_invariants().unwrap();
        let got: Vec<_> =
            crate::iter::Range::new(t, std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
                .collect();
        let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want);
    }

    /// The first leaf-parent, as a visit, for calling XMerge on chosen children.
    fn leaf_parent<'t>(t: &'t BTree, key: &[u8]) -> Visit<'t> {
        t.retry(|| Ok(t.optimistic_descend(Target::Key(key, 1))?.0))
    }

    #[test]
    fn compact_packs_random_leaves_and_keeps_every_entry() {
        let t = tree(Config::default());
        let oracle = fill_random(&t, 30_000, 7);
        let before = t.stats();
        assert!(before.fill_factor < 0.8, "{before:?}");
        let freed = t.compact();
        let after = t.stats();
        assert!(freed > 0);
        assert_eq!(after.pages_freed, freed as u64);
        assert_eq!(
            after.leaf_pages + after.inner_pages + freed,
            before.leaf_pages + before.inner_pages
        );
        assert!(after.fill_factor >= 0.9, "{after:?}");
        assert_same(&t, &oracle);
        // A second pass finds (almost) nothing left to do.
        assert!(t.compact() <= 2);
    }

    #[test]
    fn a_group_of_full_leaves_frees_nothing_and_changes_nothing() {
        let t = tree(Config::default());
        // Appends leave every leaf full.
        let mut oracle = BTreeMap::new();
        for i in 0u64..20_000 {
            let k = i.to_be_bytes().to_vec();
            t.insert(&k, b"12345678").unwrap();
            oracle.insert(k, b"12345678".to_vec());
        }
        let leaf = t.leaf_page_of(&100u64.to_be_bytes());
        let parent = leaf_parent(&t, &100u64.to_be_bytes());
        let version = t.page(parent.pid).unwrap().1.version();
        let out = t.optimistic_xmerge(parent, 0, Grow::Right, false).unwrap();
        assert!(out.is_none());
        // No latch was taken exclusively: the parent's version did not move.
        assert_eq!(
            t.page(leaf_parent(&t, b"").pid).unwrap().1.version(),
            version
        );
        assert_eq!(t.leaf_page_of(&100u64.to_be_bytes()), leaf);
        assert_eq!(t.stats().xmerges, 0);
        assert_same(&t, &oracle);
    }

    #[test]
    fn merging_changes_prefixes_and_fences() {
        let t = tree(Config {
            merge_threshold: 0.0,
            ..Config::default()
        });
        // Long keys whose prefixes differ by leaf: "p/<group>/<n>".
        let mut oracle = BTreeMap::new();
        for g in 0..40u32 {
            for n in 0..100u32 {
                let k = format!("prefix/{g:04}/{:040}", n * 7919 % 100_003).into_bytes();
                t.insert(&k, &g.to_le_bytes()).unwrap();
                oracle.insert(k, g.to_le_bytes().to_vec());
            }
        }
        // Thin every leaf out: the remaining keys of neighbouring leaves share less prefix.
        let keys: Vec<_> = oracle.keys().cloned().collect();
        for (i, k) in keys.iter().enumerate() {
            if i % 4 != 0 {
                t.remove(k);
                oracle.remove(k);
            }
        }
        let leaves = t.stats().leaf_pages;
        let freed = t.compact();
        assert!(freed * 2 >= leaves, "freed {freed} of {leaves} leaves");
        assert_same(&t, &oracle);
    }

    #[test]
    fn inner_nodes_are_merged_too() {
        let t = tree(Config {
            merge_threshold: 0.0,
            ..Config::default()
        });
        let mut oracle = BTreeMap::new();
        for i in 0u32..60_000 {
            // 200-byte keys: about 19 per inner node, so the tree is four levels tall.
            let mut k = vec![b'k'; 200];
            k[..4].copy_from_slice(&i.wrapping_mul(2_654_435_761).to_be_bytes());
            t.insert(&k, b"v").unwrap();
            oracle.insert(k, b"v".to_vec());
        }
        let keys: Vec<_> = oracle.keys().cloned().collect();
        for (i, k) in keys.iter().enumerate() {
            if i % 16 != 0 {
                t.remove(k);
                oracle.remove(k);
            }
        }
        let before = t.stats();
        assert!(before.height >= 4, "{before:?}");
        t.compact();
        let after = t.stats();
        assert!(
            after.inner_pages * 4 < before.inner_pages,
            "{before:?} {after:?}"
        );
        assert_same(&t, &oracle);
    }

    #[test]
    fn empty_leaves_are_freed() {
        let t = tree(Config {
            merge_threshold: 0.0,
            ..Config::default()
        });
        let mut oracle = fill_random(&t, 20_000, 3);
        let keys: Vec<_> = oracle.keys().cloned().collect();
        for k in &keys[2_000..18_000] {
            t.remove(k);
            oracle.remove(k);
        }
        let leaves = t.stats().leaf_pages;
        let freed = t.compact();
        assert!(freed * 10 >= leaves * 7, "freed {freed} of {leaves}");
        assert_same(&t, &oracle);
        for k in &keys[2_000..18_000] {
            t.insert(k, b"back").unwrap();
            oracle.insert(k.clone(), b"back".to_vec());
        }
        assert_same(&t, &oracle);
    }

    #[test]
    fn hot_and_latched_leaves_are_skipped() {
        let t = tree(Config::default());
        let oracle = fill_random(&t, 30_000, 11);
        let probe = |i: usize| oracle.keys().nth(i).unwrap().clone();
        let (hot_key, busy_key) = (probe(5_000), probe(20_000));
        let hot = t.leaf_page_of(&hot_key);
        let busy = t.leaf_page_of(&busy_key);
        let (mut hot_node, hot_latch) = t.page(hot).unwrap();
        {
            let _x = hot_latch.exclusive();
            hot_node.set_hot(true);
        }
        let hot_count = hot_node.count();
        let (busy_node, busy_latch) = t.page(busy).unwrap();
        let busy_count = busy_node.count();
        let x = busy_latch.exclusive();
        assert!(t.compact() > 0);
        drop(x);
        assert_eq!(t.leaf_page_of(&hot_key), hot);
        assert_eq!(t.leaf_page_of(&busy_key), busy);
        assert_eq!(hot_node.count(), hot_count);
        assert_eq!(busy_node.count(), busy_count);
        assert_same(&t, &oracle);
    }

    #[test]
    fn random_picks_raise_the_fill_factor() {
        let t = tree(Config::default());
        let oracle = fill_random(&t, 30_000, 5);
        let mut rng = Rng::new(42);
        let before = t.stats().fill_factor;
        let estimate = t.optimistic_sample_fill(&mut rng, 256).unwrap();
        assert!((estimate - before).abs() < 0.05, "{estimate} vs {before}");
        let freed: usize = (0..2_000)
            .map(|_| t.optimistic_xmerge_random(&mut rng))
            .sum();
        let after = t.stats();
        assert!(freed > 0);
        assert!(after.fill_factor > before + 0.1, "{before} -> {after:?}");
        assert_same(&t, &oracle);
    }

    #[test]
    fn plan_needs_fewer_nodes_or_gives_up() {
        let t = tree(Config::default());
        let oracle = fill_random(&t, 5_000, 9);
        let first = oracle.keys().next().unwrap().clone();
        let parent = leaf_parent(&t, &first);
        let nodes: Vec<Node> = (0..3)
            .map(|i| t.page(parent.node.child(i).unwrap()).unwrap().0)
            .collect();
        let run = Run::optimistic_new(parent.node, 0, &nodes).unwrap();
        let n: usize = nodes.iter().map(Node::count).sum();
        assert_eq!(run.items.len(), n);
        let lower = nodes[0].lower_fence().unwrap();
        let upper = nodes[2].upper_fence().unwrap();
        // Three leaves about 70% full fit in three pages, not in one.
        let plan = run.optimistic_plan(4096, lower, upper, 3).unwrap().unwrap();
        assert_eq!(plan.last().unwrap().1, n);
        assert_eq!(plan.first().unwrap().0, 0);
        assert!(plan.windows(2).all(|w| w[0].1 == w[1].0));
        assert!(run
            .optimistic_plan(4096, lower, upper, 1)
            .unwrap()
            .is_none());
    }
}
