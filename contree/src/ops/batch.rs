//! Batches: [`Tree::insert_many`] and [`Tree::get_many`] take their keys in any order and
//! visit them in key order, so that neighbouring keys meet warm caches and the same leaf
//! (and an ascending run of new keys appends at the right end).

use crate::error::Error;
use crate::Tree;

/// The indices of `keys` in ascending key order (stable: equal keys keep their order).
fn key_order<'k>(keys: impl Iterator<Item = &'k [u8]>) -> Vec<usize> {
    let all: Vec<&[u8]> = keys.collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&i| all[i]);
    order
}

impl Tree {
    /// The values of `keys`, in the order of `keys` (`None` for an absent key).
    ///
    /// The lookups run in ascending key order, which is faster than calling
    /// [`get`](Self::get) in random order; a key given several times is looked up once.
    /// Each lookup is linearizable on its own; the batch is not a snapshot (under
    /// concurrent writers two values may come from different moments).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"a", b"1").unwrap();
    /// tree.insert(b"c", b"3").unwrap();
    /// let got = tree.get_many([&b"c"[..], b"b", b"a", b"c"]);
    /// assert_eq!(got, [Some(b"3".to_vec()), None, Some(b"1".to_vec()), Some(b"3".to_vec())]);
    /// // Any bytes will do as keys: vectors, strings, arrays.
    /// assert_eq!(tree.get_many(vec!["a".to_string()]), [Some(b"1".to_vec())]);
    /// ```
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Option<Vec<u8>>> {
        let keys: Vec<K> = keys.into_iter().collect();
        let order = key_order(keys.iter().map(AsRef::as_ref));
        let mut out = vec![None; keys.len()];
        let mut prev: Option<usize> = None;
        for &i in &order {
            let key = keys[i].as_ref();
            out[i] = match prev {
                Some(p) if keys[p].as_ref() == key => out[p].clone(),
                _ => self.get(key),
            };
            prev = Some(i);
        }
        out
    }

    /// Inserts (or replaces) every entry of `entries`, all or nothing; returns how many
    /// keys were new (the others replaced a value).
    ///
    /// The semantics, precisely:
    /// * **Bad input changes nothing.** Every key and value is checked first; a key or
    ///   value over the limits returns [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`]
    ///   before anything is written.
    /// * **Order.** The entries are written in ascending key order (for locality; an
    ///   ascending run of new keys appends). A key given several times gets the value of
    ///   its last occurrence, as inserting the entries one by one in the given order would.
    /// * **All or nothing on [`Error::OutOfSpace`].** If the memory budget runs out
    ///   midway, the call undoes its own writes before it returns the error: it removes
    ///   the keys it added, then puts back the values it replaced. Each undo is a
    ///   [`compare_exchange`](Self::compare_exchange) from the value this call wrote, so a
    ///   key another thread changed meanwhile keeps that thread's value. (Should putting
    ///   back a replaced value longer than its replacement find no room even after a
    ///   [`compact`](Self::compact), which the removals make very unlikely, that key keeps
    ///   the new value.)
    /// * **Not atomic for concurrent readers.** Entries become visible one by one, and on
    ///   failure they may have been seen before the undo.
    ///
    /// The call collects `entries` and keeps the replaced values until it returns.
    ///
    /// ```
    /// use contree::{Config, Error, Tree};
    /// let tree = Tree::new();
    /// tree.insert(b"b", b"old").unwrap();
    /// let new = tree.insert_many([(&b"c"[..], &b"3"[..]), (b"a", b"1"), (b"b", b"2")]).unwrap();
    /// assert_eq!(new, 2);
    /// assert_eq!(tree.get(b"b"), Some(b"2".to_vec()));
    /// // An oversized value anywhere in the batch: nothing is written.
    /// let huge = vec![0u8; tree.config().max_value_len() + 1];
    /// let err = tree.insert_many([(&b"d"[..], &b""[..]), (b"e", &huge)]).unwrap_err();
    /// assert!(matches!(err, Error::ValueTooLarge { .. }));
    /// assert!(!tree.contains_key(b"d"));
    /// // Out of space midway: nothing is written either.
    /// let small = Tree::with_config(Config { max_memory: 8 * 4096, ..Config::default() }).unwrap();
    /// let batch = (0u32..10_000).map(|i| (i.to_be_bytes(), [7u8; 100]));
    /// assert!(matches!(small.insert_many(batch), Err(Error::OutOfSpace { .. })));
    /// assert!(small.is_empty());
    /// ```
    pub fn insert_many<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<usize, Error> {
        let entries: Vec<(K, V)> = entries.into_iter().collect();
        for (k, v) in &entries {
            self.core.check_key(k.as_ref())?;
            self.core.check_value(v.as_ref())?;
        }
        let mut order = key_order(entries.iter().map(|(k, _)| k.as_ref()));
        // Of equal keys keep the last occurrence (the sort is stable).
        order.dedup_by(|later, earlier| {
            let same = entries[*later].0.as_ref() == entries[*earlier].0.as_ref();
            if same {
                *earlier = *later;
            }
            same
        });
        // What each write replaced, for the undo.
        let mut done: Vec<(usize, Option<Vec<u8>>)> = Vec::with_capacity(order.len());
        for &i in &order {
            let (k, v) = &entries[i];
            match self.insert(k.as_ref(), v.as_ref()) {
                Ok(old) => done.push((i, old)),
                Err(e) => {
                    self.undo_inserts(&entries, &done);
                    return Err(e);
                }
            }
        }
        Ok(done.iter().filter(|(_, old)| old.is_none()).count())
    }

    /// Undoes the writes of a failed [`insert_many`](Self::insert_many): removes the keys
    /// it added (which frees room), then puts back the values it replaced, each only if
    /// the key still holds the value the batch wrote.
    fn undo_inserts<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        entries: &[(K, V)],
        done: &[(usize, Option<Vec<u8>>)],
    ) {
        for (i, _) in done.iter().filter(|(_, old)| old.is_none()) {
            let (k, v) = &entries[*i];
            let _ = self.compare_exchange(k.as_ref(), Some(v.as_ref()), None);
        }
        for (i, old) in done {
            let (Some(old), (k, v)) = (old, &entries[*i]) else {
                continue;
            };
            let put_back = || self.compare_exchange(k.as_ref(), Some(v.as_ref()), Some(old));
            if let Err(Error::OutOfSpace { .. }) = put_back() {
                self.compact();
                let _ = put_back();
            }
        }
    }
}
