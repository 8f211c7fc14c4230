//! The atomic per-key operations: read-modify-write steps on one key, each decided and
//! applied under the key's leaf latch, so each is linearizable for its key: by the one
//! engine behind `insert` and `remove` ([`Tree::modify`]), or in place
//! ([`Tree::update_with`], which keeps the value's length and allocates nothing).

use super::combine::serve_waiters;
use super::write::Edit;
use crate::engine::descent::LeafHold;
use crate::error::Error;
use crate::node::NodeMut;
use crate::policy::Divert;
use crate::sync::reentry::InClosure;
use crate::Tree;

impl Tree {
    /// Changes the value of `key` in place under the leaf's exclusive latch and returns what
    /// `f` returns, or `None` if the key is absent. The value keeps its length (use
    /// [`fetch_update`](Self::fetch_update) to change it); this is the cheapest atomic
    /// read-modify-write, with no allocation. `f` runs exactly once if the key is present.
    ///
    /// # Panics
    ///
    /// If `f` calls into this tree: that call would wait for the latch `f` runs under,
    /// forever, so it panics with a message saying so (calls into other trees are fine).
    /// If `f` panics, the panic propagates, the latch is released and the tree stays valid;
    /// what `f` wrote into an inline value before panicking stays written (an out-of-line
    /// value, longer than [`Config::max_inline_value_len`](crate::Config::max_inline_value_len),
    /// is changed through a copy that is written back only when `f` returns).
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
        let mut f = Some(f);
        match self.update_with_try(key, &mut f) {
            Some(out) => out,
            None => self.update_with_settled(key, f),
        }
    }

    /// [`update_with_once`](Self::update_with_once) in the tree's line mode.
    #[inline(always)]
    fn update_with_try<F: FnOnce(&mut [u8]) -> R, R>(
        &self,
        key: &[u8],
        f: &mut Option<F>,
    ) -> Option<Option<R>> {
        match self.core.policy.lines.enabled() {
            true => self.update_with_once::<_, _, true>(key, f),
            false => self.update_with_once::<_, _, false>(key, f),
        }
    }

    /// [`update_with`](Self::update_with) of a key in a hot range of the side structure:
    /// under the range's shard mutex, tried again until it runs (the range may be merged
    /// into the tree meanwhile). Out of line: in `update_with`'s loop, its setup cost every
    /// update 36 instructions (callgrind, 938 -> 902).
    #[cold]
    #[inline(never)]
    fn update_with_settled<F: FnOnce(&mut [u8]) -> R, R>(
        &self,
        key: &[u8],
        mut f: Option<F>,
    ) -> Option<R> {
        loop {
            if let Some(Some(out)) = self.side_settle(key, || self.update_with_try(key, &mut f)) {
                return out;
            }
            if let Some(out) = self.update_with_try(key, &mut f) {
                return out;
            }
        }
    }

    /// One [`update_with`](Self::update_with), which runs `f` if it is still there: `None`
    /// if the key lies in a hot range of the side structure whose shard this thread does not
    /// hold.
    /// `LINES`: line mode is on (`sync::lines`), so the leaf may be held by its stretch
    /// locks and may switch; a separate copy, so that the default path carries no line-mode
    /// code (+60 instructions per update when it did). Out of line: inlined, the two copies
    /// left the leaf search out of line instead.
    #[inline(never)]
    fn update_with_once<F: FnOnce(&mut [u8]) -> R, R, const LINES: bool>(
        &self,
        key: &[u8],
        f: &mut Option<F>,
    ) -> Option<Option<R>> {
        let core = &*self.core;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let out = core.retry(
            #[inline(always)]
            || {
                let (node, hold) = match LINES {
                    true => core.update_leaf(key)?,
                    false => {
                        let (node, x) = core.exclusive_leaf(key)?;
                        (node, LeafHold::Latched(x))
                    }
                };
                let mut x = match hold {
                    LeafHold::Latched(x) => x,
                    // In line mode (`sync::lines`): no latch.
                    LeafHold::Lines(snapshot) => {
                        return self.update_in_lines(node, snapshot, key, f)
                    }
                };
                if core.side.blocks(key) {
                    return Ok(None);
                }
                let latch = x.latch_addr();
                let slow_path = x.slow_path();
                let mut node = NodeMut::new(node, &mut x);
                let (pos, found, hint) = node.lower_bound_hinted(key, core.directory())?;
                if !found {
                    return Ok(Some(None));
                }
                let mark = InClosure::enter(core.id(), "update_with");
                // A hinted value is inline: no stub to look for.
                let stub = match hint.get() {
                    Some(_) => None,
                    None => node.stub(pos)?,
                };
                let (out, inline) = match stub {
                    None => (f.take().map(|f| f(node.value_mut_hinted(pos, hint))), true),
                    Some(stub) => {
                        // Out of line: the closure changes a copy, written back in place.
                        let mut value = core.blob_value(stub);
                        let out = f.take().map(|f| f(&mut value));
                        core.overwrite_blob(stub, &value);
                        (out, false)
                    }
                };
                drop(mark);
                split_at = core.policy.after_change(&mut node, pos, slow_path, core);
                if core.policy.combining.has_waiters(latch) {
                    serve_waiters(core, &mut node, latch, &mut split_at);
                }
                let switch =
                    LINES && inline && split_at.is_none() && core.line_switch(&mut node, latch);
                if switch {
                    x.set_lines();
                }
                Ok(Some(out))
            },
        );
        if let Some(sep) = split_at {
            core.contention_split(&sep);
        }
        out
    }

    /// Sets the value of `key` to what `f` makes of the current one, atomically, and
    /// returns the previous value.
    ///
    /// `f` sees the current value (`None` if the key is absent) and returns the new one;
    /// `None` removes the key (as sled's `fetch_and_update`; unlike std's atomic
    /// `fetch_update`, where `None` aborts). The new value may have any length up to the
    /// value limit. Nothing else can change the key between `f` seeing the value and the
    /// new one being stored: `f` runs under the leaf's exclusive latch.
    ///
    /// `f` may run more than once: when the new value does not fit in the leaf, the leaf is
    /// split and `f` runs again on the value current then; only the last result is stored.
    /// So `f` should compute, not count (no side effects that must happen once).
    ///
    /// Fails with [`Error::KeyTooLarge`], [`Error::ValueTooLarge`] (the value `f`
    /// returned) or [`Error::OutOfSpace`], leaving the tree unchanged.
    ///
    /// # Panics
    ///
    /// If `f` calls into this tree (that call would wait for the latch `f` runs under,
    /// forever): the re-entrant call panics with a message saying so. Calls into other trees
    /// are fine. If `f` panics, the panic propagates and the key keeps its value.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// let incr = |v: Option<&[u8]>| {
    ///     let n = v.map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()));
    ///     Some((n + 1).to_le_bytes().to_vec())
    /// };
    /// assert_eq!(tree.fetch_update(b"hits", incr).unwrap(), None);
    /// assert_eq!(tree.fetch_update(b"hits", incr).unwrap(), Some(1u64.to_le_bytes().to_vec()));
    /// assert_eq!(tree.get(b"hits"), Some(2u64.to_le_bytes().to_vec()));
    /// // Values may change length; `None` removes.
    /// tree.fetch_update(b"hits", |_| Some(b"many".to_vec())).unwrap();
    /// assert_eq!(tree.get(b"hits"), Some(b"many".to_vec()));
    /// tree.fetch_update(b"hits", |_| None).unwrap();
    /// assert!(!tree.contains_key(b"hits"));
    /// ```
    pub fn fetch_update(
        &self,
        key: &[u8],
        mut f: impl FnMut(Option<&[u8]>) -> Option<Vec<u8>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.modify(key, Some("fetch_update"), |old| {
            let edit = match f(old) {
                Some(new) => Edit::Put(new),
                None => Edit::Remove,
            };
            (edit, old.map(<[u8]>::to_vec))
        })
    }

    /// Stores `new` under `key` if its value is `current`, atomically.
    ///
    /// `current` and `new` are `None` for "absent": `compare_exchange(k, None, Some(v))`
    /// inserts only if `k` is absent, `compare_exchange(k, Some(v), None)` removes only if
    /// the value is `v`. Returns `Ok(Ok(()))` when the value was `current` (and is now
    /// `new`), `Ok(Err(actual))` with the actual value, unchanged, otherwise. Among threads
    /// racing to exchange the same `current`, exactly one wins.
    ///
    /// Fails with [`Error::KeyTooLarge`], [`Error::ValueTooLarge`] or
    /// [`Error::OutOfSpace`], leaving the tree unchanged.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert_eq!(tree.compare_exchange(b"k", None, Some(b"a")).unwrap(), Ok(()));
    /// assert_eq!(
    ///     tree.compare_exchange(b"k", None, Some(b"b")).unwrap(),
    ///     Err(Some(b"a".to_vec()))
    /// );
    /// assert_eq!(tree.compare_exchange(b"k", Some(b"a"), Some(b"bb")).unwrap(), Ok(()));
    /// assert_eq!(tree.compare_exchange(b"k", Some(b"bb"), None).unwrap(), Ok(()));
    /// assert!(tree.is_empty());
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn compare_exchange(
        &self,
        key: &[u8],
        current: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<Result<(), Option<Vec<u8>>>, Error> {
        // The key first, as every write reports it.
        self.core.check_key(key)?;
        if let Some(new) = new {
            self.core.check_value(new)?;
        }
        self.modify(key, None, |actual| {
            if actual == current {
                (new.map_or(Edit::Remove, Edit::Put), Ok(()))
            } else {
                (Edit::Keep, Err(actual.map(<[u8]>::to_vec)))
            }
        })
    }

    /// Removes `key` if `pred` holds for its value, atomically; returns the removed value.
    ///
    /// `pred` runs once, under the leaf's exclusive latch, if the key is present. Returns
    /// `None` if the key is absent or `pred` returned `false`.
    ///
    /// # Panics
    ///
    /// If `pred` calls into this tree (see [`fetch_update`](Self::fetch_update)). If
    /// `pred` panics, the panic propagates and the entry stays.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"session", b"expired").unwrap();
    /// assert_eq!(tree.remove_if(b"session", |v| v == b"live"), None);
    /// assert_eq!(tree.remove_if(b"session", |v| v == b"expired"), Some(b"expired".to_vec()));
    /// assert!(tree.is_empty());
    /// ```
    pub fn remove_if(&self, key: &[u8], pred: impl FnOnce(&[u8]) -> bool) -> Option<Vec<u8>> {
        if key.len() > self.core.config().max_key_len() {
            return None;
        }
        let mut pred = Some(pred);
        self.modify(key, Some("remove_if"), |old| match old {
            Some(v) if pred.take().is_some_and(|pred| pred(v)) => {
                (Edit::<&[u8]>::Remove, Some(v.to_vec()))
            }
            _ => (Edit::Keep, None),
        })
        .unwrap_or(None)
    }

    /// Inserts `key` with `value` if the key is absent; returns whether it inserted. An
    /// existing value is left as it is.
    ///
    /// Fails with [`Error::KeyTooLarge`], [`Error::ValueTooLarge`] or
    /// [`Error::OutOfSpace`], leaving the tree unchanged.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert!(tree.insert_if_absent(b"id", b"first").unwrap());
    /// assert!(!tree.insert_if_absent(b"id", b"second").unwrap());
    /// assert_eq!(tree.get(b"id"), Some(b"first".to_vec()));
    /// ```
    pub fn insert_if_absent(&self, key: &[u8], value: &[u8]) -> Result<bool, Error> {
        self.core.check_key(key)?;
        self.core.check_value(value)?;
        self.modify(key, None, |old| match old {
            Some(_) => (Edit::Keep, false),
            None => (Edit::Put(value), true),
        })
    }

    /// The value of `key`, inserting `make()` first if the key is absent.
    ///
    /// `make` runs at most once, only when the key was found absent, and holds no latch,
    /// so it may use the tree. If another thread inserts the key between that check and
    /// the insert, its value is kept and returned, and what `make` made is dropped.
    ///
    /// Fails with [`Error::KeyTooLarge`], [`Error::ValueTooLarge`] or
    /// [`Error::OutOfSpace`], leaving the tree unchanged.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// let v = tree.get_or_insert_with(b"config", || b"defaults".to_vec()).unwrap();
    /// assert_eq!(v, b"defaults");
    /// let v = tree.get_or_insert_with(b"config", || unreachable!()).unwrap();
    /// assert_eq!(v, b"defaults");
    /// ```
    pub fn get_or_insert_with(
        &self,
        key: &[u8],
        make: impl FnOnce() -> Vec<u8>,
    ) -> Result<Vec<u8>, Error> {
        self.core.check_key(key)?;
        if let Some(v) = self.get(key) {
            return Ok(v);
        }
        let value = make();
        self.core.check_value(&value)?;
        let existing = self.modify(key, None, |old| match old {
            Some(v) => (Edit::Keep, Some(v.to_vec())),
            None => (Edit::Put(&value[..]), None),
        })?;
        Ok(existing.unwrap_or(value))
    }
}
