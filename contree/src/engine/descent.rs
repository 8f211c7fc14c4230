//! The one descent: from the root to the node at a target level, inner nodes passed with
//! optimistic lock coupling, the node at the end entered in the mode the operation needs.
//!
//! A descent takes an optimistic snapshot of the meta latch (which guards the root id), then
//! of the root, and walks down: it picks a child ([`Route`]), reads its id, takes the child's
//! snapshot and validates the parent. Nothing is written to shared memory on the way down.
//! The node at the target level is entered by the access mode ([`Access`]):
//! * [`Optimistic`]: a snapshot (readers validate it after reading);
//! * [`OptimisticNoWait`]: a snapshot only if no writer holds the latch, at every level
//!   (the space manager never waits for the data path);
//! * [`Exclusive`]: the exclusive latch, waited for (writers to a hot leaf queue on its
//!   latch instead of restarting from the root); the parent is validated before and after,
//!   and the leaf policies are told whether the latch was busy;
//! * [`Owned`]: no latch at all, for a thread that owns the sub-tree exclusively (the
//!   partition executor of a multi-rooted tree); inner nodes are still read through
//!   snapshots, which cost no shared write.
//!
//! Every snapshot returned was valid when the next one was taken; the caller validates the
//! last one (or its upgrade does).
//!
//! Point operations take lean copies of the same protocol, written out for one target (the
//! leaf that holds a key): `point_leaf` for reads, `point_leaf_enter` for writers' leaves.

use super::TreeCore;
use crate::node::{Node, OwnerToken, TABLE_LEVEL};
use crate::page::{Directory, PageId};
use crate::policy::combining::Request;
use crate::sync::{reentry, ExclusiveGuard, HybridLatch, OptimisticGuard, Restart};

/// Where a descent ends: the node at `level` whose range holds a key, or the rightmost node
/// at `level`.
#[derive(Clone, Copy)]
pub(crate) enum Target<'k> {
    Key(&'k [u8], u16),
    Rightmost(u16),
}

/// How a descent picks the child to follow.
pub(crate) trait Route {
    /// The level to stop at.
    fn level(&self) -> u16;
    /// The slot of inner node `node` to follow (`count` for the upper child).
    fn pick(&mut self, node: &Node, dir: &Directory) -> Result<usize, Restart>;
}

impl Route for Target<'_> {
    #[inline]
    fn level(&self) -> u16 {
        match *self {
            Target::Key(_, l) | Target::Rightmost(l) => l,
        }
    }
    // Always: an out-of-line copy of the inner nodes' search cost +280 instructions per
    // update.
    #[inline(always)]
    fn pick(&mut self, node: &Node, dir: &Directory) -> Result<usize, Restart> {
        match *self {
            // Inner nodes only: the point search (no append shortcut; appends reach the
            // rightmost leaf through the append finger, without a descent).
            Target::Key(key, _) => Ok(node.point_search(key, dir)?.0),
            Target::Rightmost(_) => Ok(node.count()),
        }
    }
}

/// A random child at every step; `weight` becomes the inverse of the probability of the
/// node reached (the product of the child counts on the way).
pub(crate) struct RandomRoute<'r> {
    pub level: u16,
    pub rng: &'r mut crate::space::Rng,
    pub weight: f64,
}

impl Route for RandomRoute<'_> {
    fn level(&self) -> u16 {
        self.level
    }
    fn pick(&mut self, node: &Node, _dir: &Directory) -> Result<usize, Restart> {
        let n = node.count() + 1;
        self.weight *= n as f64;
        Ok(self.rng.below(n))
    }
}

/// How the node at the end of a descent is entered (see the module doc).
pub(crate) trait Access<'t> {
    /// What the caller holds on the node it reached.
    type Guard;
    /// Whether the descent waits for writers of inner nodes.
    const WAIT: bool = true;
    /// Enters the node behind `latch`, whose id was read under `above`; `above` is
    /// validated so that the id is known to be the right one while the guard is held.
    fn enter(
        &self,
        latch: &'t HybridLatch,
        above: &OptimisticGuard<'t>,
    ) -> Result<Self::Guard, Restart>;
    /// The node was entered after a wait for a snapshot of the same latch (the root, which
    /// the descent snapshots before it knows that the root is its target).
    #[inline]
    fn waited(_guard: &mut Self::Guard) {}
}

/// A snapshot of the node reached: `WAIT` says whether to wait for a writer (see the module
/// doc: [`Optimistic`] and [`OptimisticNoWait`]).
pub(crate) struct Snapshot<const WAIT: bool>;
/// See the module doc.
pub(crate) type Optimistic = Snapshot<true>;
/// See the module doc.
pub(crate) type OptimisticNoWait = Snapshot<false>;
/// See the module doc; carries the tree whose leaf policies are asked, and the request that a
/// writer hands to the holder of a taken leaf latch instead of waiting for it (leaf
/// combining, `policy::combining`).
pub(crate) struct Exclusive<'t, 'r>(pub &'t TreeCore, pub Option<&'r Request<'r>>);
/// See the module doc; carries the owner's token.
#[allow(dead_code)] // used by the partition executor (issue "Partitions") and tests
pub(crate) struct Owned<'o>(pub &'o OwnerToken);

impl<'t, const WAIT: bool> Access<'t> for Snapshot<WAIT> {
    type Guard = OptimisticGuard<'t>;
    const WAIT: bool = WAIT;
    #[inline]
    fn enter(
        &self,
        latch: &'t HybridLatch,
        above: &OptimisticGuard<'t>,
    ) -> Result<Self::Guard, Restart> {
        let g = TreeCore::inner_snapshot::<Self>(latch)?;
        above.validate()?;
        Ok(g)
    }
}

impl<'t> Exclusive<'t, '_> {
    /// [`enter`](Access::enter)'s slow path: the latch is taken. Hands the request over
    /// (leaf combining) or waits for the latch.
    #[cold]
    #[inline(never)]
    fn wait(&self, latch: &'t HybridLatch) -> Result<ExclusiveGuard<'t>, Restart> {
        self.0.policy.latch_busy();
        if let Some(request) = self.1 {
            if self.0.policy.combining.hand_over(latch, request, false) {
                // Applied by the holder: the descent ends here (see
                // `exclusive_leaf_or_hand_over`).
                return Err(Restart);
            }
        }
        let mut x = self.0.wait_exclusive(latch);
        // Found taken: a slow path even if the hand-over's spin saw it released and the
        // acquisition took it at once (Contention Split counts it).
        x.mark_slow_path();
        Ok(x)
    }
}

impl<'t> Access<'t> for Exclusive<'t, '_> {
    type Guard = ExclusiveGuard<'t>;
    // Always, with the wait out of line: an out-of-line `enter` kept the descent's node and
    // guard in memory, +90 instructions per update.
    #[inline(always)]
    fn enter(
        &self,
        latch: &'t HybridLatch,
        above: &OptimisticGuard<'t>,
    ) -> Result<Self::Guard, Restart> {
        // The id is consistent before we wait on its latch, and still the right child after
        // we got it.
        above.validate()?;
        let x = match latch.try_exclusive() {
            Some(x) => x,
            None => self.wait(latch)?,
        };
        above.validate()?;
        Ok(x)
    }
    /// A writer that waited for the root leaf's snapshot found the leaf latch taken, as one
    /// that waits in `exclusive()` does: Contention Split counts the wait.
    #[inline]
    fn waited(guard: &mut ExclusiveGuard<'t>) {
        guard.mark_slow_path();
    }
}

/// What an in-place updater holds on its leaf ([`ExclusiveOrLines`]).
pub(crate) enum LeafHold<'t> {
    /// The leaf is in line mode (`sync::lines`): a snapshot, validated after the stretches
    /// of the value are locked.
    Lines(OptimisticGuard<'t>),
    /// The exclusive latch, as [`Exclusive`] takes it.
    Latched(ExclusiveGuard<'t>),
}

/// [`Exclusive`] for an in-place update: a leaf in line mode is entered with a snapshot
/// (`sync::lines`), any other as [`Exclusive`] enters it (no request to hand over).
pub(crate) struct ExclusiveOrLines<'t>(pub &'t TreeCore);

impl<'t> Access<'t> for ExclusiveOrLines<'t> {
    type Guard = LeafHold<'t>;
    #[inline(always)]
    fn enter(
        &self,
        latch: &'t HybridLatch,
        above: &OptimisticGuard<'t>,
    ) -> Result<Self::Guard, Restart> {
        above.validate()?;
        let hold = match latch.try_exclusive_or_lines() {
            Ok(Some(x)) => LeafHold::Latched(x),
            Err(snapshot) => LeafHold::Lines(snapshot),
            // Taken: waited for as `Exclusive` waits (no request to hand over).
            Ok(None) => LeafHold::Latched(Exclusive(self.0, None).wait(latch)?),
        };
        above.validate()?;
        Ok(hold)
    }
    #[inline]
    fn waited(guard: &mut LeafHold<'t>) {
        if let LeafHold::Latched(x) = guard {
            x.mark_slow_path();
        }
    }
}

impl<'t> Access<'t> for Owned<'_> {
    type Guard = ();
    #[inline]
    fn enter(&self, _latch: &'t HybridLatch, _above: &OptimisticGuard<'t>) -> Result<(), Restart> {
        Ok(())
    }
}

/// A node reached by a descent, with its optimistic snapshot.
pub(crate) struct Visit<'t> {
    pub pid: PageId,
    pub node: Node,
    pub guard: OptimisticGuard<'t>,
}

/// Where the id of a root is kept: the tree's root word (guarded by the meta latch), or a
/// slot of the partition table of a multi-rooted tree (`crate::partition`; the table is the
/// root page for the tree's whole life), guarded by the table's latch.
#[derive(Clone, Copy)]
pub(crate) enum RootSlot {
    Meta,
    Table(u32),
}

/// What lies above the node a descent ended at.
pub(crate) enum Above<'t> {
    /// The node is a root; the guard is the snapshot of the latch that guards its id (the
    /// meta latch, or a partition table's).
    Root(OptimisticGuard<'t>, RootSlot),
    /// The parent and the slot in it that leads to the node.
    Parent(Visit<'t>, usize),
}

/// The end of a descent: the node, what the access mode holds on it, and what lies above.
pub(crate) struct Reached<'t, G> {
    pub pid: PageId,
    pub node: Node,
    pub guard: G,
    pub above: Above<'t>,
}

impl TreeCore {
    /// A snapshot of `latch` for an inner node of a descent in mode `A`.
    #[inline]
    pub(crate) fn inner_snapshot<'t, A: Access<'t>>(
        latch: &'t HybridLatch,
    ) -> Result<OptimisticGuard<'t>, Restart> {
        if A::WAIT {
            Ok(latch.optimistic())
        } else {
            latch.try_optimistic().ok_or(Restart)
        }
    }

    /// The root prologue: the meta snapshot, the root id, the root's page and snapshot, with
    /// the meta snapshot validated after the root id was used. In a multi-rooted tree the
    /// root is the partition table, and the prologue goes on to the root of the partition
    /// `route` picks ([`table_step`](Self::table_step)).
    #[inline]
    pub(crate) fn root_snapshot<'t, A: Access<'t>>(
        &'t self,
        route: &mut impl Route,
    ) -> Result<(OptimisticGuard<'t>, RootSlot, Visit<'t>), Restart> {
        reentry::check(self.id());
        let meta = Self::inner_snapshot::<A>(self.meta())?;
        let pid = self.root_id();
        let (node, latch) = self.root_page();
        let guard = Self::inner_snapshot::<A>(latch)?;
        meta.validate()?;
        if node.level() == TABLE_LEVEL {
            return self.table_step::<A>(node, guard, route);
        }
        Ok((meta, RootSlot::Meta, Visit { pid, node, guard }))
    }

    /// From the partition table `table` (with its snapshot `above`) to the root of the
    /// partition `route` picks: its visit, and the table's snapshot, validated after the
    /// root's id was used, as the guard of the root's slot.
    #[cold]
    #[inline(never)]
    fn table_step<'t, A: Access<'t>>(
        &'t self,
        table: Node,
        above: OptimisticGuard<'t>,
        route: &mut impl Route,
    ) -> Result<(OptimisticGuard<'t>, RootSlot, Visit<'t>), Restart> {
        let pos = route.pick(&table, self.directory())?;
        let pid = table.child(pos)?;
        let (node, latch) = self.page(pid)?;
        let guard = Self::inner_snapshot::<A>(latch)?;
        above.validate()?;
        if node.level() == TABLE_LEVEL {
            // The page was reused since its id was read (a torn read).
            return Err(Restart);
        }
        Ok((
            above,
            RootSlot::Table(pos as u32),
            Visit { pid, node, guard },
        ))
    }

    /// The one descent (see the module doc).
    #[inline(always)]
    pub(crate) fn descend<'t, A: Access<'t>>(
        &'t self,
        route: &mut impl Route,
        access: &A,
    ) -> Result<Reached<'t, A::Guard>, Restart> {
        let level = route.level();
        let (meta, slot, root) = self.root_snapshot::<A>(route)?;
        if root.node.level() == level {
            // Only the level was read: a leaf in line mode validates (`sync::lines`).
            root.guard.validate_keys()?;
            let mut guard = access.enter(root.guard.latch(), &meta)?;
            if root.guard.slow_path() {
                A::waited(&mut guard);
            }
            if root.node.level() != level {
                return Err(Restart);
            }
            return Ok(Reached {
                pid: root.pid,
                node: root.node,
                guard,
                above: Above::Root(meta, slot),
            });
        }
        let mut here = root;
        loop {
            let l = here.node.level();
            if l <= level {
                // The tree is shorter than the target (or the read was torn).
                here.guard.validate()?;
                return Err(Restart);
            }
            let pos = route.pick(&here.node, self.directory())?;
            let child = here.node.child(pos)?;
            let (node, latch) = self.page(child)?;
            if l == level + 1 {
                if level == 0 {
                    // The child is a leaf, most likely not in cache: start loading its
                    // header and slots together instead of one miss after another. Writers
                    // too: random inserts and updates mostly find their leaf out of cache
                    // (appends reach theirs through the finger, without a descent). The
                    // writers' prefetch once cost `seq-insert` 2%
                    // (bench/results/house-compare.txt), before the finger and while it
                    // asked for every other line only; with every line asked for, `load` at
                    // one thread went +20-28% and `ycsb-a` +15%, `seq-insert` unchanged
                    // (bench/results/prefetch-s49.txt).
                    node.prefetch_head();
                }
                let guard = access.enter(latch, &here.guard)?;
                if node.level() != level {
                    return Err(Restart);
                }
                return Ok(Reached {
                    pid: child,
                    node,
                    guard,
                    above: Above::Parent(here, pos),
                });
            }
            let guard = Self::inner_snapshot::<A>(latch)?;
            here.guard.validate()?;
            here = Visit {
                pid: child,
                node,
                guard,
            };
        }
    }

    /// The optimistic descent to `target`, as a visit and what lies above it.
    #[inline]
    pub(crate) fn optimistic_descend(
        &self,
        target: Target,
    ) -> Result<(Visit<'_>, Above<'_>), Restart> {
        self.snapshot_descend(target, &Optimistic {})
    }

    /// [`optimistic_descend`](Self::optimistic_descend) for work that never waits (merges,
    /// sweeps): `Restart` at once where a writer holds a node on the way.
    #[inline]
    pub(crate) fn nowait_descend(&self, target: Target) -> Result<(Visit<'_>, Above<'_>), Restart> {
        self.snapshot_descend(target, &OptimisticNoWait {})
    }

    #[inline]
    fn snapshot_descend<const WAIT: bool>(
        &self,
        target: Target,
        access: &Snapshot<WAIT>,
    ) -> Result<(Visit<'_>, Above<'_>), Restart> {
        let mut route = target;
        let r = self.descend(&mut route, access)?;
        Ok((
            Visit {
                pid: r.pid,
                node: r.node,
                guard: r.guard,
            },
            r.above,
        ))
    }

    /// Descends to the leaf that holds `key` and latches it exclusively (waiting for it).
    #[inline(always)]
    pub(crate) fn exclusive_leaf(&self, key: &[u8]) -> Result<(Node, ExclusiveGuard<'_>), Restart> {
        let (node, x, _) = self
            .latch_leaf(key, None)?
            .expect("no request to hand over");
        Ok((node, x))
    }

    /// [`exclusive_leaf`](Self::exclusive_leaf) for an in-place update: a leaf in line mode
    /// (`sync::lines`) is held by a snapshot instead. It always descends: the append
    /// finger would latch the rightmost leaf, ending its line mode.
    #[inline]
    pub(crate) fn update_leaf(&self, key: &[u8]) -> Result<(Node, LeafHold<'_>), Restart> {
        let (_, node, mut hold) = self.write_leaf(key, &ExclusiveOrLines(self))?;
        if let LeafHold::Latched(x) = &mut hold {
            self.policy
                .latched(node, x, &self.counters, self.numa.as_deref());
        }
        Ok((node, hold))
    }

    /// The leaf that holds `key`, entered in `access`'s mode: the lean descent
    /// ([`point_leaf_enter`](Self::point_leaf_enter)), or the generic one where a partition
    /// table lies on the way.
    #[inline(always)]
    fn write_leaf<'t, A: Access<'t>>(
        &'t self,
        key: &[u8],
        access: &A,
    ) -> Result<(PageId, Node, A::Guard), Restart> {
        match self.point_leaf_enter(key, access)? {
            Some(found) => Ok(found),
            None => {
                let r = self.descend(&mut Target::Key(key, 0), access)?;
                Ok((r.pid, r.node, r.guard))
            }
        }
    }

    /// [`exclusive_leaf`](Self::exclusive_leaf), or, where the leaf's latch is taken,
    /// `request` handed to its holder (leaf combining, `policy::combining`): `None` when the
    /// holder applied it (its outcome is in the request), else the latched leaf as ever,
    /// with whether `key` is known to sort after every key of it (the append finger's
    /// [`Node::sorts_after_last`], true under the latch: then `lower_bound` is
    /// `(count, false)` and need not run).
    #[inline(always)]
    pub(crate) fn exclusive_leaf_or_hand_over(
        &self,
        key: &[u8],
        request: &Request,
    ) -> Result<Option<(Node, ExclusiveGuard<'_>, bool)>, Restart> {
        match self.latch_leaf(key, Some(request)) {
            Err(Restart) if request.is_done() => Ok(None),
            other => other,
        }
    }

    #[inline(always)]
    fn latch_leaf(
        &self,
        key: &[u8],
        request: Option<&Request>,
    ) -> Result<Option<(Node, ExclusiveGuard<'_>, bool)>, Restart> {
        let finger = if self.appending() {
            let found = self.rightmost_finger(key, request)?;
            if found.is_none() {
                self.set_appending(false);
            }
            found
        } else {
            None
        };
        let (node, mut guard, at_end) = match finger {
            Some(found) => found,
            None => {
                let (pid, node, guard) = self.write_leaf(key, &Exclusive(self, request))?;
                if pid == self.rightmost_leaf() {
                    self.set_appending(true);
                }
                (node, guard, false)
            }
        };
        self.policy
            .latched(node, &mut guard, &self.counters, self.numa.as_deref());
        Ok(Some((node, guard, at_end)))
    }

    /// The append finger: a key above the lower fence of the rightmost leaf belongs to that
    /// leaf, whose page never changes (see the module doc of `engine`), so appends latch it
    /// without a descent. Returns `None` (nothing latched) for any other key; with the
    /// latched leaf, whether `key` sorts after all its keys (see
    /// [`exclusive_leaf_or_hand_over`](Self::exclusive_leaf_or_hand_over)).
    ///
    /// The look compares `key` with the leaf's last key first: a key above it is above the
    /// lower fence too, and the comparison answers the insert's search as well (callgrind
    /// `append`, where the fence compare and the search cost about 130 instructions). Only
    /// a key at or below the last key (appends that arrive out of order, updates) pays the
    /// fence compare.
    /// With a `request`, a taken latch is handed the request (leaf combining; the holder
    /// checks the key against its fences): `Restart` with the request done when the holder
    /// applied it.
    #[inline]
    fn rightmost_finger(
        &self,
        key: &[u8],
        request: Option<&Request>,
    ) -> Result<Option<(Node, ExclusiveGuard<'_>, bool)>, Restart> {
        // The finger is a descent too: a call from a closure that holds a latch of this tree
        // (the rightmost leaf's, it may be) must panic, not wait for itself.
        reentry::check(self.id());
        let (node, latch) = self.rightmost_page();
        let hand_over = || match request {
            Some(r) => {
                self.policy.latch_busy();
                self.policy.combining.hand_over(latch, r, true)
            }
            None => false,
        };
        // A cheap optimistic look first, so that other keys pay no latch.
        let Some(look) = latch.try_optimistic() else {
            if hand_over() {
                return Err(Restart);
            }
            return Ok(None);
        };
        let dir = self.directory();
        let at_end = !node.has_upper_fence() && node.sorts_after_last(key, dir)?;
        let above = at_end || node.above_lower_fence(key, dir)?;
        look.validate()?;
        if !above {
            return Ok(None);
        }
        // Latched at the version the look validated: the fence it compared is still the
        // lower fence, so the key is not compared again.
        let (x, checked) = match look.upgrade_exclusive() {
            Ok(x) => (x, true),
            Err(Restart) => {
                // A writer came in between (or holds the latch): wait, then look again.
                if hand_over() {
                    return Err(Restart);
                }
                self.policy.latch_busy();
                let mut x = self.wait_exclusive(latch);
                x.mark_slow_path();
                (x, false)
            }
        };
        // The lower fence may have risen (a split) since the look.
        if node.level() != 0
            || node.has_upper_fence()
            || !(checked || node.above_lower_fence(key, dir)?)
        {
            return Ok(None);
        }
        // Latched at the look's version, the leaf holds the keys the look compared.
        Ok(Some((node, x, at_end && checked)))
    }
}
