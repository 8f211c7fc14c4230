//! Reclaiming space with XMerge: random groups (the space manager), sweeps of the whole tree
//! ([`Tree::compact`](crate::Tree::compact)) and the reclaim that precedes an
//! `OutOfSpace` error.

use super::Rng;
use crate::engine::{OptimisticNoWait, RandomRoute, Target, TreeCore, Visit};
use crate::smo::xmerge::{Grow, Merged};
use crate::sync::{Counter, Restart};
use std::sync::atomic::Ordering;

/// What `reclaim` achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// Pages were freed: the split can take one.
    Freed,
    /// The node got room without a split: the operation can go on.
    Made,
    /// Nothing.
    None,
}

impl TreeCore {
    /// Descends to a node at `level` choosing a random child at every step, and returns it
    /// with the inverse of the probability of having picked it (the product of the child
    /// counts on the way). Never waits for a latch.
    pub(crate) fn optimistic_random_node(
        &self,
        level: u16,
        rng: &mut Rng,
    ) -> Result<(Visit<'_>, f64), Restart> {
        let mut route = RandomRoute {
            level,
            rng,
            weight: 1.0,
        };
        let r = self.descend(&mut route, &OptimisticNoWait {})?;
        // `validate_keys`: the callers read the node's structure, which a leaf in line mode
        // (`sync::lines`) keeps; a full validation of a line-mode snapshot always fails and
        // ends the mode, so every sample that landed on a hot leaf switched it back.
        r.guard.validate_keys()?;
        let visit = Visit {
            pid: r.pid,
            node: r.node,
            guard: r.guard,
        };
        Ok((visit, route.weight))
    }

    /// An estimate of the leaves' fill factor from `samples` random leaves, weighted by the
    /// inverse of their chance of being picked; `None` if no sample succeeded.
    pub(crate) fn optimistic_sample_fill(&self, rng: &mut Rng, samples: usize) -> Option<f64> {
        let page = self.config().page_size as f64;
        let (mut used, mut total) = (0.0, 0.0);
        for _ in 0..samples {
            if let Ok((leaf, weight)) = self.optimistic_random_node(0, rng) {
                let u = leaf.node.used_space() as f64;
                // The header only: see `optimistic_random_node`.
                if leaf.guard.validate_keys().is_ok() {
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
            let (parent, _) = self.optimistic_random_node(level, rng)?;
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

    /// The level of the root (0 when it is a leaf; in a multi-rooted tree, of the tallest
    /// partition's root). Never waits: 0 when a writer keeps the root (a one-leaf tree under
    /// a long `update_with`), which leaves nothing to sweep.
    pub(crate) fn optimistic_root_level(&self) -> u16 {
        for _ in 0..64 {
            let attempt = || -> Result<u16, Restart> {
                if let Some(tallest) = self.optimistic_tallest_partition()? {
                    return Ok(tallest);
                }
                let (_, _, root) =
                    self.root_snapshot::<OptimisticNoWait>(&mut Target::Rightmost(0))?;
                let level = root.node.level();
                root.guard.validate()?;
                Ok(level)
            };
            if let Ok(level) = attempt() {
                return level;
            }
            crate::sync::seam::yield_now();
        }
        0
    }

    /// XMerge over the whole tree, leaves first; stops once `want` pages are freed. Returns
    /// the pages freed.
    pub(crate) fn compact_up_to(&self, want: usize) -> usize {
        self.retry_deferred_merges();
        let mut freed = 0;
        let mut parent_level = 1;
        while freed < want && parent_level <= self.optimistic_root_level() {
            freed += self.sweep(parent_level, want - freed, None).0;
            parent_level += 1;
        }
        self.try_collapse_roots();
        freed
    }

    /// One pass over the nodes at `parent_level`, right to left from the one holding
    /// `start` (`None`: the rightmost); in each, groups that end at the previous group's
    /// partly filled leftmost node and grow to the left. Returns the pages freed, stopping
    /// once `want` are, and where to go on (`None`: the pass reached the left end).
    fn sweep(
        &self,
        parent_level: u16,
        want: usize,
        start: Option<Vec<u8>>,
    ) -> (usize, Option<Vec<u8>>) {
        let mut freed = 0;
        // A key inside the parent being swept (its lower fence); `None`: the rightmost.
        let mut cursor = start;
        loop {
            if let Some(floor) = self.short_partition(cursor.as_deref(), parent_level) {
                // A partition with no nodes at this level: on to the one to its left.
                match floor {
                    Some(l) => {
                        cursor = Some(l);
                        continue;
                    }
                    None => return (freed, None),
                }
            }
            let mut end = usize::MAX;
            let mut lower = None;
            while end > 0 {
                let target = match &cursor {
                    Some(k) => Target::Key(k, parent_level),
                    None => Target::Rightmost(parent_level),
                };
                let Some((parent, fence, count)) = self.optimistic_parent_for_sweep(target) else {
                    return (freed, None);
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
                    return (freed, cursor);
                }
            }
            match lower {
                Some(l) => cursor = Some(l),
                None => return (freed, None),
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
                let (here, _) = self.nowait_descend(target)?;
                let mut lower = here.node.lower_fence()?;
                if let Some(l) = &mut lower {
                    crate::long_key::expand(l, self.directory())?;
                }
                let count = here.node.count();
                here.guard.validate()?;
                Ok((here, lower, count))
            };
            if let Ok(found) = attempt() {
                return Some(found);
            }
            crate::sync::seam::yield_now();
        }
        None
    }

    /// A number that grows with every change that can make space reclaimable: removals
    /// (free space in leaves) and splits (half-empty nodes).
    fn space_generation(&self) -> u64 {
        self.counters.sum(Counter::Removals).max(0) as u64
            + self.events.splits.load(Ordering::Relaxed)
    }

    /// Makes room for a split of the node at `level` holding `key` that hit the memory
    /// budget. Bounded work, in steps, each only if the ones before did not succeed:
    /// 1. XMerge on the neighbours of that node, growing to the left and to the right, to free
    ///    a page for the split;
    /// 2. if `spread`, spreading the free space of the siblings around the node evenly over
    ///    them (`optimistic_spread`): the node gets room and needs no split ([`Room::Made`]);
    /// 3. XMerge on 4 random groups;
    /// 4. a sweep of the leaves (see [`compact`](crate::Tree::compact)) that starts where the
    ///    last one stopped and stops once it has freed a sixteenth of the tree's pages, at
    ///    most once per `pages` removals and splits, so that sweeps cost O(1) page visits per
    ///    operation amortized and never walk the stretch the last one packed again.
    ///
    /// Steps 1 and 2 look at a few nodes. When steps 3 and 4 free nothing, they are not tried
    /// again until a removal or a split happens (the space generation changes): until then
    /// an insert that needs a page and finds no room next to its node fails after steps 1
    /// and 2.
    pub(crate) fn reclaim(&self, key: &[u8], level: u16, want: usize, spread: bool) -> Room {
        let mut freed = 0;
        for grow in [Grow::Left, Grow::Right] {
            freed += self.xmerge_near(key, level + 1, grow);
            if freed >= want {
                return Room::Freed;
            }
        }
        if spread && self.spread_near(key, level + 1) {
            return Room::Made;
        }
        let generation = self.space_generation();
        if self.reclaim_idle.load(Ordering::Relaxed) == generation {
            return if freed > 0 { Room::Freed } else { Room::None };
        }
        let seed =
            (self as *const TreeCore as u64 ^ generation).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut rng = Rng::new(seed);
        for _ in 0..4 {
            freed += self.optimistic_xmerge_random(&mut rng);
            if freed >= want {
                return Room::Freed;
            }
        }
        let held = self.events.pages_held.load(Ordering::Relaxed);
        let cooled = generation >= self.last_sweep.load(Ordering::Relaxed) + held as u64;
        if cooled {
            // Leaves only (they are nearly all the pages), from where the last sweep
            // stopped: each sweep packs a new stretch of the tree.
            self.last_sweep.store(generation, Ordering::Relaxed);
            self.retry_deferred_merges();
            let mut resume = self.sweep_resume.lock().unwrap_or_else(|e| e.into_inner());
            let (n, next) = self.sweep(1, (want - freed).max(held / 16), resume.take());
            *resume = next;
            freed += n;
        }
        if freed > 0 {
            return Room::Freed;
        }
        self.reclaim_idle.store(generation, Ordering::Relaxed);
        Room::None
    }

    /// The node at `parent_level` holding `key`, validated, and the slot of its child that
    /// holds `key`.
    fn optimistic_parent_of(
        &self,
        key: &[u8],
        parent_level: u16,
    ) -> Result<(Visit<'_>, usize), Restart> {
        let (parent, _) = self.nowait_descend(Target::Key(key, parent_level))?;
        let pos = parent.node.lower_bound(key, self.directory())?.0;
        parent.guard.validate()?;
        Ok((parent, pos))
    }

    /// See `reclaim`, step 2.
    fn spread_near(&self, key: &[u8], parent_level: u16) -> bool {
        let attempt = || -> Result<bool, Restart> {
            let (parent, pos) = self.optimistic_parent_of(key, parent_level)?;
            self.optimistic_spread(parent, pos)
        };
        attempt().unwrap_or(false)
    }

    /// XMerge on the children of the node at `parent_level` holding `key`, from the child
    /// holding `key` towards `grow`. Returns the pages freed.
    fn xmerge_near(&self, key: &[u8], parent_level: u16, grow: Grow) -> usize {
        let attempt = || -> Result<Option<Merged>, Restart> {
            let (parent, pos) = self.optimistic_parent_of(key, parent_level)?;
            self.optimistic_xmerge(parent, pos, grow, false)
        };
        match attempt() {
            Ok(Some(m)) => m.freed,
            _ => 0,
        }
    }
}
