//! Point writes: the leaf is latched exclusively at the end of an optimistic descent, the
//! leaf policies are asked at their named points, and structure changes (`smo`) follow when
//! a leaf is full, underfull, or contended.

use crate::error::Error;
use crate::node::{NodeMut, SLOT};
use crate::policy::Divert;
use crate::sync::{Counter, Restart};
use crate::Tree;

/// An insert that did not fit in its leaf.
struct NeedSplit;

impl Tree {
    /// Inserts or replaces the value of `key`; returns the previous value.
    ///
    /// Fails with [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`] for oversized input and
    /// with [`Error::OutOfSpace`] when a split needs a page the memory budget does not
    /// allow; in every error case the tree's contents are unchanged.
    ///
    /// When the budget is reached, the insert first runs XMerge to free pages (see
    /// [`compact`](Self::compact)): on the neighbours of its leaf, on a few random groups,
    /// and now and then over the whole tree, a bounded amount of work. It fails if that frees
    /// none; until a removal or a split changes the tree, further inserts that need a page
    /// then fail at once instead of trying again.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let core = &*self.core;
        core.check_key(key)?;
        core.check_value(value)?;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let mut rounds = 0;
        loop {
            let attempt = core.retry(|| -> Result<Result<Option<Vec<u8>>, NeedSplit>, Restart> {
                let (node, mut x) = core.exclusive_leaf(key)?;
                let slow_path = x.slow_path();
                let mut node = NodeMut::new(node, &mut x);
                let (pos, found) = node.lower_bound(key)?;
                if found {
                    let e = node.entry(pos)?;
                    let old = node.value(pos)?;
                    if e.value_len == value.len() {
                        node.overwrite_value(pos, value);
                    } else {
                        let need = node.space_needed(key.len(), value.len());
                        if need > node.free_space() + e.heap_len + SLOT {
                            return Ok(Err(NeedSplit));
                        }
                        node.remove_at(pos);
                        let ok = node.insert_entry(pos, key, value);
                        debug_assert!(ok);
                    }
                    split_at = core.policy.after_change(&mut node, pos, slow_path);
                    return Ok(Ok(Some(old)));
                }
                if node.insert_entry(pos, key, value) {
                    split_at = core.policy.after_change(&mut node, pos, slow_path);
                    Ok(Ok(None))
                } else {
                    Ok(Err(NeedSplit))
                }
            });
            match attempt {
                Ok(old) => {
                    if old.is_none() {
                        core.counters.add(Counter::Len, 1);
                    }
                    if let Some(sep) = split_at {
                        core.contention_split(&sep);
                    }
                    return Ok(old);
                }
                Err(NeedSplit) => {
                    // At the memory budget the first rounds may get room by spreading the
                    // neighbours' free space instead of a split (`reclaim`).
                    rounds += 1;
                    core.split_for(key, 0, rounds <= 2)?
                }
            }
        }
    }

    /// Changes the value of `key` in place under the leaf's exclusive latch and returns what
    /// `f` returns, or `None` if the key is absent. The value keeps its length.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"counter", &0u64.to_le_bytes()).unwrap();
    /// tree.update_with(b"counter", |v| {
    ///     let n = u64::from_le_bytes(v.try_into().unwrap()) + 1;
    ///     v.copy_from_slice(&n.to_le_bytes());
    /// });
    /// assert_eq!(tree.get(b"counter"), Some(1u64.to_le_bytes().to_vec()));
    /// ```
    pub fn update_with<R>(&self, key: &[u8], f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let core = &*self.core;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut f = Some(f);
        let mut split_at = None;
        let out = core.retry(|| {
            let (node, mut x) = core.exclusive_leaf(key)?;
            let slow_path = x.slow_path();
            let mut node = NodeMut::new(node, &mut x);
            let (pos, found) = node.lower_bound(key)?;
            if !found {
                return Ok(None);
            }
            let out = f.take().map(|f| f(node.value_mut(pos)));
            split_at = core.policy.after_change(&mut node, pos, slow_path);
            Ok(out)
        });
        if let Some(sep) = split_at {
            core.contention_split(&sep);
        }
        out
    }

    /// Removes `key`; returns its value.
    pub fn remove(&self, key: &[u8]) -> Option<Vec<u8>> {
        let core = &*self.core;
        if key.len() > core.config().max_key_len() {
            return None;
        }
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let (old, underfull) = core.retry(|| {
            let (node, mut x) = core.exclusive_leaf(key)?;
            let slow_path = x.slow_path();
            let mut node = NodeMut::new(node, &mut x);
            let (pos, found) = node.lower_bound(key)?;
            if !found {
                return Ok((None, false));
            }
            let old = node.value(pos)?;
            node.remove_at(pos);
            split_at = core.policy.after_change(&mut node, pos, slow_path);
            Ok((Some(old), core.is_underfull(&node)))
        });
        if old.is_some() {
            core.counters.add(Counter::Len, -1);
            core.counters.add(Counter::Removals, 1);
            if let Some(sep) = split_at {
                core.contention_split(&sep);
            } else if underfull {
                core.try_merge(key, 0);
            }
        }
        core.retry_deferred_merge();
        core.release_memory_if_many();
        old
    }
}
