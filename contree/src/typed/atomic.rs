//! The atomic per-key operations of [`TreeMap`], on decoded values: each is the tree's
//! operation of the same name (see `ops::atomic`) with the codecs around it, so each is
//! linearizable for its key. Plus `update_with`, `get_with` and `compact`.
//!
//! Stored bytes that are not a valid encoding of `V` (possible only when written through
//! the bytes API) read as absent here, as in [`TreeMap::get`].

use std::borrow::Borrow;

use super::codec::{KeyCodec, KeyEncode, ValueCodec, ValueEncode};
use super::map::{with_key, with_value};
use super::TreeMap;
use crate::ops::write::Edit;
use crate::Error;

impl<K: KeyCodec, V: ValueCodec> TreeMap<K, V> {
    /// Sets the value of `key` to what `f` makes of the current one, atomically, and
    /// returns the previous value; `f` returning `None` removes the key. See
    /// [`Tree::fetch_update`](crate::Tree::fetch_update): `f` runs under the leaf's
    /// exclusive latch (a call into this map from `f` panics) and may run more than once
    /// when the new value needs a split; only the last result is stored.
    ///
    /// Fails with [`Error::KeyTooLarge`], [`Error::ValueTooLarge`] or
    /// [`Error::OutOfSpace`], leaving the map unchanged.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let hits: TreeMap<String, u64> = TreeMap::new();
    /// for _ in 0..3 {
    ///     hits.fetch_update("/index.html", |n| Some(n.unwrap_or(0) + 1)).unwrap();
    /// }
    /// assert_eq!(hits.get("/index.html"), Some(3));
    /// // `None` removes; the previous value comes back.
    /// assert_eq!(hits.fetch_update("/index.html", |_| None).unwrap(), Some(3));
    /// assert!(hits.is_empty());
    /// ```
    pub fn fetch_update<Q>(
        &self,
        key: &Q,
        mut f: impl FnMut(Option<V>) -> Option<V>,
    ) -> Result<Option<V>, Error>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        // The tree's engine directly: the previous value is decoded in place, not copied.
        with_key(key, |key| {
            self.as_tree().modify(key, Some("fetch_update"), |old| {
                // Decoded twice: once for `f` to own, once to return (`V` need not be
                // `Clone`).
                let edit = match f(old.and_then(V::decode_value_last)) {
                    Some(new) => Edit::Put(new.to_value_bytes()),
                    None => Edit::Remove,
                };
                (edit, old.and_then(V::decode_value_last))
            })
        })
    }

    /// Changes the value of `key` with `f`, atomically; returns what `f` returns, or `None`
    /// if the key is absent. The value is decoded, changed and stored again, so it may
    /// change length (hence the `Result`: the new encoding may be refused as too long, or
    /// need a page the memory budget does not allow; the map is then unchanged).
    ///
    /// As in [`fetch_update`](Self::fetch_update), `f` runs under the leaf's exclusive
    /// latch (a call into this map from `f` panics) and may run more than once; only the
    /// last call's change is stored and its result returned.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let names: TreeMap<u32, String> = TreeMap::new();
    /// names.insert(&1, &"ada".to_string()).unwrap();
    /// let len = names.update_with(&1, |name| {
    ///     name.push_str(" lovelace");
    ///     name.len()
    /// });
    /// assert_eq!(len, Ok(Some(12)));
    /// assert_eq!(names.get(&1).as_deref(), Some("ada lovelace"));
    /// assert_eq!(names.update_with(&2, |name| name.clear()), Ok(None));
    /// ```
    pub fn update_with<Q, R>(
        &self,
        key: &Q,
        mut f: impl FnMut(&mut V) -> R,
    ) -> Result<Option<R>, Error>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        with_key(key, |key| {
            self.as_tree().modify(key, Some("update_with"), |old| {
                // A value that does not decode is absent for the map, and kept as it is.
                match old.and_then(V::decode_value_last) {
                    Some(mut value) => {
                        let out = f(&mut value);
                        (Edit::Put(value.to_value_bytes()), Some(out))
                    }
                    None => (Edit::Keep, None),
                }
            })
        })
    }

    /// Runs `f` on the value of `key`; returns what it returns, or `None` if the key is
    /// absent. The value is copied and decoded without a latch held (see
    /// [`Tree::get_with`](crate::Tree::get_with)), so `f` may use the map.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let map: TreeMap<u8, String> = TreeMap::new();
    /// map.insert(&1, &"hello".to_string()).unwrap();
    /// assert_eq!(map.get_with(&1, |s| s.len()), Some(5));
    /// assert_eq!(map.get_with(&2, |s| s.len()), None);
    /// ```
    pub fn get_with<Q, R>(&self, key: &Q, f: impl FnOnce(&V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        let value = with_key(key, |key| {
            self.as_tree().get_with(key, V::decode_value_last)
        })??;
        Some(f(&value))
    }

    /// Stores `new` under `key` if its value is `current`, atomically (`None` for absent):
    /// `Ok(Ok(()))` if it was, `Ok(Err(actual))` with the actual value otherwise. Values
    /// are compared by their encodings. See
    /// [`Tree::compare_exchange`](crate::Tree::compare_exchange).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let owner: TreeMap<String, u32> = TreeMap::new();
    /// // Take the lock "job-7" for worker 1 only if nobody holds it.
    /// assert_eq!(owner.compare_exchange("job-7", None, Some(&1)), Ok(Ok(())));
    /// assert_eq!(owner.compare_exchange("job-7", None, Some(&2)), Ok(Err(Some(1))));
    /// // Hand it from worker 1 to worker 2, then release it.
    /// assert_eq!(owner.compare_exchange("job-7", Some(&1), Some(&2)), Ok(Ok(())));
    /// assert_eq!(owner.compare_exchange("job-7", Some(&2), None), Ok(Ok(())));
    /// assert!(owner.is_empty());
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn compare_exchange<Q>(
        &self,
        key: &Q,
        current: Option<&V>,
        new: Option<&V>,
    ) -> Result<Result<(), Option<V>>, Error>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        let current = current.map(V::to_value_bytes);
        let r = with_key(key, |key| match new {
            Some(new) => with_value(new, |new| {
                self.as_tree()
                    .compare_exchange(key, current.as_deref(), Some(new))
            }),
            None => self
                .as_tree()
                .compare_exchange(key, current.as_deref(), None),
        })?;
        Ok(r.map_err(|actual| actual.and_then(|a| V::decode_value_last(&a))))
    }

    /// Removes `key` if `pred` holds for its value, atomically; returns the removed value.
    /// `pred` runs once, under the leaf's exclusive latch (a call into this map from `pred`
    /// panics); a value that does not decode is kept.
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let stock: TreeMap<String, u32> = TreeMap::new();
    /// stock.insert("apples", &0).unwrap();
    /// stock.insert("pears", &4).unwrap();
    /// assert_eq!(stock.remove_if("apples", |n| *n == 0), Some(0));
    /// assert_eq!(stock.remove_if("pears", |n| *n == 0), None);
    /// assert_eq!(stock.len(), 1);
    /// ```
    pub fn remove_if<Q>(&self, key: &Q, pred: impl FnOnce(&V) -> bool) -> Option<V>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        let old = with_key(key, |key| {
            self.as_tree()
                .remove_if(key, |v| V::decode_value_last(v).is_some_and(|v| pred(&v)))
        })?;
        V::decode_value_last(&old)
    }

    /// Inserts `key` with `value` if the key is absent; returns whether it inserted. The key
    /// and the value may be given in a borrowed form, as in [`insert`](TreeMap::insert).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let map: TreeMap<u64, String> = TreeMap::new();
    /// assert_eq!(map.insert_if_absent(&7, "first"), Ok(true));
    /// assert_eq!(map.insert_if_absent(&7, &"second".to_string()), Ok(false));
    /// assert_eq!(map.get(&7).as_deref(), Some("first"));
    /// ```
    pub fn insert_if_absent<Q, W>(&self, key: &Q, value: &W) -> Result<bool, Error>
    where
        K: Borrow<Q>,
        V: Borrow<W>,
        Q: KeyEncode + ?Sized,
        W: ValueEncode + ?Sized,
    {
        with_key(key, |key| {
            with_value(value, |value| self.as_tree().insert_if_absent(key, value))
        })
    }

    /// The value of `key`, inserting `make()` first if the key is absent. `make` runs at
    /// most once and holds no latch (it may use the map); if another thread inserts the key
    /// meanwhile, its value is kept and returned. A stored value that does not decode counts
    /// as absent and is replaced. See
    /// [`Tree::get_or_insert_with`](crate::Tree::get_or_insert_with).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let ids: TreeMap<String, u64> = TreeMap::new();
    /// assert_eq!(ids.get_or_insert_with("bob", || 17), Ok(17));
    /// assert_eq!(ids.get_or_insert_with("bob", || 99), Ok(17));
    /// ```
    pub fn get_or_insert_with<Q>(&self, key: &Q, make: impl FnOnce() -> V) -> Result<V, Error>
    where
        K: Borrow<Q>,
        Q: KeyEncode + ?Sized,
    {
        if let Some(value) = self.get(key) {
            return Ok(value);
        }
        let value = make();
        let bytes = value.to_value_bytes();
        let existing = with_key(key, |key| {
            self.as_tree()
                .modify(key, None, |old| match old.and_then(V::decode_value_last) {
                    Some(existing) => (Edit::Keep, Some(existing)),
                    None => (Edit::Put(&bytes[..]), None),
                })
        })?;
        Ok(existing.unwrap_or(value))
    }

    /// XMerge over the whole tree, then the memory of free pages back to the system; returns
    /// the pages freed. See [`Tree::compact`](crate::Tree::compact).
    ///
    /// ```
    /// use contree::TreeMap;
    ///
    /// let map: TreeMap<u32, u32> = TreeMap::new();
    /// for i in 0..10_000 {
    ///     map.insert(&i, &i).unwrap();
    /// }
    /// for i in (0..10_000).filter(|i| i % 4 != 0) {
    ///     map.remove(&i);
    /// }
    /// let before = map.stats().leaf_pages;
    /// map.compact();
    /// assert!(map.stats().leaf_pages < before);
    /// ```
    pub fn compact(&self) -> usize {
        self.as_tree().compact()
    }
}
