//! The tree operations of the side structure (see the module doc of [`side`](super)):
//! diverted inserts and removals, point reads of hot keys, settling a key before an
//! operation the side structure does not take, merging a range into the tree, and marking a
//! leaf's range hot.

use super::{entry_bytes, pages_for, Held, HotRange, Side, SHARDS};
use crate::sync::seam::Ordering;
use crate::sync::Counter;
use crate::Tree;
use std::sync::Arc;

/// An entry of a merge: a key and its value (`None`: a tombstone).
pub(crate) type SideEntry = (Vec<u8>, Option<Vec<u8>>);

/// What a diverted write did.
pub(crate) enum Diverted<T> {
    /// Done, with this result.
    Done(T),
    /// Not taken (the range was merged meanwhile, or the budget refused the entry): the
    /// caller takes the normal path.
    NotTaken,
}

impl Tree {
    /// The hot range that holds `key`, when the side structure is on and a range is hot.
    #[inline(always)]
    pub(crate) fn side_route(&self, key: &[u8]) -> Option<Arc<HotRange>> {
        let side = &self.core.side;
        if !side.enabled || !Side::any(side.state()) {
            return None;
        }
        side.range_of(key)
    }

    /// Whether a diverted entry of `key` and `value` stays inline in a leaf: only those are
    /// diverted (others take the normal path under the shard's mutex).
    fn side_inline(&self, key: &[u8], value: &[u8]) -> bool {
        let c = self.core.config();
        key.len() <= c.max_inline_key_len() && value.len() <= c.max_inline_value_len()
    }

    /// An insert (`Some(value)`) or removal (`None`) of `key` in hot `range`: the old value
    /// comes from the key's shard, else from the tree; the new entry (a tombstone for a
    /// removal of a present key) goes to the shard. The caller checked the key and value.
    pub(crate) fn side_write(
        &self,
        range: &Arc<HotRange>,
        key: &[u8],
        value: Option<&[u8]>,
    ) -> Diverted<Option<Vec<u8>>> {
        // A call from a closure that holds a shard's mutex would wait for it for ever.
        crate::sync::reentry::check(self.core.id());
        let core = &*self.core;
        if !self.side_inline(key, value.unwrap_or(&[])) {
            return Diverted::NotTaken;
        }
        let i = range.shard_of(key);
        let mut shard = range.shard(i);
        if range.retired.load(Ordering::SeqCst) {
            return Diverted::NotTaken;
        }
        let (old, had) = match shard.map.get(key) {
            Some(e) => (e.clone(), Some(entry_bytes(key, e.as_deref()))),
            None if range.tree_may_hold(key) => (self.tree_get(key), None),
            None => (None, None),
        };
        if value.is_none() && old.is_none() {
            return Diverted::Done(None);
        }
        let bytes = shard.bytes.saturating_sub(had.unwrap_or(0)) + entry_bytes(key, value);
        let need = pages_for(bytes, core.config().page_size);
        if need > shard.reserved {
            if !core.reserve_pages(need - shard.reserved) {
                return Diverted::NotTaken;
            }
            shard.reserved = need;
        }
        shard.bytes = bytes;
        shard.map.insert(key.to_vec(), value.map(<[u8]>::to_vec));
        let full = shard.map.len() * SHARDS >= core.side.merge_entries;
        drop(shard);
        match (value, &old) {
            (Some(_), None) => core.counters.add(Counter::Len, 1),
            (None, Some(_)) => core.counters.add(Counter::Len, -1),
            _ => {}
        }
        core.counters.add(Counter::SideDiverted, 1);
        if full {
            self.side_merge(range, true);
        }
        Diverted::Done(old)
    }

    /// The value of `key` in hot `range`: its shard's entry, else the tree's (read under the
    /// shard's mutex, so that no merge moves it meanwhile); `None` if the range was merged
    /// meanwhile (the caller reads again).
    pub(crate) fn side_read<C, T>(
        &self,
        range: &HotRange,
        key: &[u8],
        ctx: &mut C,
        from_side: impl FnOnce(&mut C, Option<&[u8]>) -> T,
        from_tree: impl FnOnce(&mut C) -> T,
    ) -> Option<T> {
        // A call from a closure that holds a shard's mutex would wait for it for ever.
        crate::sync::reentry::check(self.core.id());
        let shard = range.shard(range.shard_of(key));
        if range.retired.load(Ordering::SeqCst) {
            return None;
        }
        Some(match shard.map.get(key) {
            Some(e) => from_side(ctx, e.as_deref()),
            None => from_tree(ctx),
        })
    }

    /// Runs `op`, a write of `key` that the side structure does not take, while this thread
    /// holds the mutex of the key's shard, after moving the key's entry from the shard into
    /// the tree. `None` if `key` is in no hot range any more (or its range was merged
    /// meanwhile), or the entry could not be moved for want of space: the caller starts
    /// again.
    pub(crate) fn side_settle<R>(&self, key: &[u8], op: impl FnOnce() -> R) -> Option<R> {
        // A call from a closure that holds a shard's mutex would wait for it for ever.
        crate::sync::reentry::check(self.core.id());
        let core = &*self.core;
        let range = core.side.range_of(key)?;
        let i = range.shard_of(key);
        let mut shard = range.shard(i);
        if range.retired.load(Ordering::SeqCst) {
            return None;
        }
        let _held = Held::shard(&range, i);
        range.tree_written.store(true, Ordering::Relaxed);
        if let Some(e) = shard.map.remove(key) {
            let charge = entry_bytes(key, e.as_deref());
            let reserved = shard.reserved;
            let failed = crate::page::with_overdraft_pages(reserved, || {
                self.merge_sorted(vec![(key.to_vec(), e)])
            });
            if let Some(back) = failed.into_iter().next() {
                shard.map.insert(back.0, back.1);
                return None;
            }
            shard.bytes = shard.bytes.saturating_sub(charge);
            let need = pages_for(shard.bytes, core.config().page_size);
            if need < shard.reserved {
                core.unreserve_pages(shard.reserved - need);
                shard.reserved = need;
            }
        }
        Some(op())
    }

    /// Merges `range` into the tree and cools it; with `reheat`, marks the leaf that then
    /// holds its last key hot again if the range is an append range (no upper bound). Entries
    /// that do not fit for want of space stay, and the range with them.
    pub(crate) fn side_merge(&self, range: &Arc<HotRange>, reheat: bool) {
        // A call from a closure that holds a shard's mutex would wait for it for ever.
        crate::sync::reentry::check(self.core.id());
        let core = &*self.core;
        let mut shards: Vec<_> = (0..SHARDS).map(|i| range.shard(i)).collect();
        if range.retired.load(Ordering::SeqCst) {
            return;
        }
        let held = Held::all(range);
        let mut entries: Vec<SideEntry> = Vec::new();
        let mut reserved = 0;
        for s in shards.iter_mut() {
            entries.extend(s.map.take());
            reserved += std::mem::take(&mut s.reserved);
            s.bytes = 0;
        }
        // Sorted runs, one per shard: the stable sort merges them.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let last = entries.last().map(|e| e.0.clone());
        let count = entries.len();
        core.unreserve_pages(reserved);
        let failed = crate::page::with_overdraft_pages(reserved, || self.merge_sorted(entries));
        let side = &core.side;
        side.stats.merges.fetch_add(1, Ordering::Relaxed);
        side.stats
            .merged_entries
            .fetch_add((count - failed.len()) as u64, Ordering::Relaxed);
        range.last_used.store(side.tick(), Ordering::Relaxed);
        if failed.is_empty() {
            range.retired.store(true, Ordering::SeqCst);
            side.unregister(range);
        } else {
            // Out of space even so: the rest stays, charged again as far as the budget goes.
            for (k, v) in failed {
                let s = &mut shards[range.shard_of(&k)];
                s.bytes += entry_bytes(&k, v.as_deref());
                s.map.insert(k, v);
            }
            for s in shards.iter_mut() {
                let need = pages_for(s.bytes, core.config().page_size);
                if core.reserve_pages(need) {
                    s.reserved = need;
                }
            }
        }
        drop(held);
        drop(shards);
        if reheat && range.high.is_none() && side.scans_seen() {
            if let Some(last) = last {
                self.side_heat(&last, false);
            }
        }
    }

    /// Merges every hot range: what seeks of cursors (and so every range read), `compact`,
    /// `check_invariants` and drop call first.
    #[inline]
    pub(crate) fn side_flush_all(&self) {
        let side = &self.core.side;
        if side.enabled && Side::any(side.state()) {
            self.side_flush_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn side_flush_slow(&self) {
        for r in self.core.side.all() {
            self.side_merge(&r, false);
        }
    }

    /// Marks the range of the leaf that holds `key` hot (the policy asked for it), first
    /// merging the least recently used range if the limit is reached. Nothing happens if
    /// the range meets a hot one, or, with `appends_only`, if `key` would not land among
    /// the last slots of its leaf (the insert that takes a request of the sampler may be
    /// another thread's, far from the appends).
    pub(crate) fn side_heat(&self, key: &[u8], appends_only: bool) {
        let core = &*self.core;
        if !core.side.enabled {
            return;
        }
        if let Some(victim) = core.side.victim() {
            self.side_merge(&victim, false);
        }
        let dir = core.directory();
        core.retry(|| {
            let (node, _x) = core.exclusive_leaf(key)?;
            if appends_only {
                let (pos, _) = node.lower_bound(key, dir)?;
                if pos + 1 + crate::node::append_slack(node.count()) < node.count() {
                    return Ok(());
                }
            }
            let expand = |k: Option<Vec<u8>>| -> Result<Option<Vec<u8>>, crate::sync::Restart> {
                let Some(mut k) = k else { return Ok(None) };
                crate::long_key::expand(&mut k, dir)?;
                Ok(Some(k))
            };
            let low = expand(node.lower_fence()?)?;
            let high = expand(node.upper_fence()?)?;
            let tree_max = match node.count() {
                0 => None,
                n => expand(Some(node.key(n - 1)?))?,
            };
            // Registered while the latch is held: see the module doc.
            core.side.register(HotRange::new(low, high, tree_max));
            Ok(())
        });
    }
}
