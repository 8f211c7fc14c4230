//! Batches: [`Tree::insert_many`] and [`Tree::get_many`] take their keys in any order and
//! visit them in key order, so that neighbouring keys meet warm caches and the same leaf
//! (and an ascending run of new keys appends at the right end).

use crate::blob::{Stub, STUB_LEN};
use crate::error::Error;
use crate::ops::write::Edit;
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
    ///   the keys it added, then puts back the values it replaced. Each undo applies only
    ///   if the key still holds the value this call wrote (a compare-and-exchange), so a
    ///   key another thread changed meanwhile keeps that thread's value.
    /// * **Replaced values are held until the call returns.** A replaced value stored out
    ///   of line (longer than
    ///   [`Config::max_inline_value_len`](crate::Config::max_inline_value_len)) keeps its
    ///   pages until the batch succeeds, so that the undo puts it back without writing it
    ///   again: at the budget a batch that replaces large values needs room for the old
    ///   and the new ones at once. Putting back an inline value longer than its
    ///   replacement may need a leaf split; the undo puts back the values that need no
    ///   more room first and retries after a [`compact`](Self::compact). Should such a
    ///   put-back still find no room (another thread took the room the undo freed, or
    ///   the batch's own splits spent the budget), it takes the pages it needs past the
    ///   budget (at most 8 pages for the whole pool at a time), so the tree can hold a
    ///   few pages more than [`Config::max_memory`](crate::Config::max_memory) after a
    ///   failed batch, until removals give them back; writes that need a new page fail
    ///   with [`Error::OutOfSpace`] meanwhile.
    /// * **Not atomic for concurrent readers.** Entries become visible one by one, and on
    ///   failure they may have been seen before the undo.
    ///
    /// The call collects `entries` and keeps copies of the replaced inline values until
    /// it returns.
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
        let mut done: Vec<Replaced> = Vec::with_capacity(order.len());
        for &i in &order {
            let (k, v) = &entries[i];
            let mut kept = None;
            match self.insert_keeping(k.as_ref(), v.as_ref(), Some(&mut kept)) {
                Ok(old) => done.push(Replaced {
                    entry: i,
                    old: match (old, kept) {
                        (None, _) => Old::Absent,
                        (Some(_), Some(stub)) => Old::Blob(stub),
                        (Some(bytes), None) => Old::Bytes(bytes),
                    },
                }),
                Err(e) => {
                    self.undo_inserts(&entries, done);
                    return Err(e);
                }
            }
        }
        let new = done.iter().filter(|r| matches!(r.old, Old::Absent)).count();
        for r in done {
            if let Old::Blob(stub) = r.old {
                self.core.free_blob(stub);
            }
        }
        Ok(new)
    }

    /// Undoes the writes of a failed [`insert_many`](Self::insert_many), each only if the
    /// key still holds the value the batch wrote: first it removes the keys the batch
    /// added, then it puts back the values it replaced, those that take no more room than
    /// their replacement first (all of these free room), the others after them, each
    /// retried once after a [`compact`](Self::compact) if the budget refuses it. A replaced
    /// out-of-line value goes back as the blob the batch kept, which needs no new room for
    /// its bytes. Frees the kept blobs that do not go back.
    fn undo_inserts<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        entries: &[(K, V)],
        mut done: Vec<Replaced>,
    ) {
        let inline_max = self.core.config().max_inline_value_len();
        let stored = |len: usize| if len > inline_max { STUB_LEN } else { len };
        // The room each put-back needs beyond its replacement's, smallest first.
        done.sort_by_key(|r| {
            let new = stored(entries[r.entry].1.as_ref().len()) as isize;
            match &r.old {
                Old::Absent => isize::MIN,
                Old::Blob(_) => STUB_LEN as isize - new,
                Old::Bytes(b) => stored(b.len()) as isize - new,
            }
        });
        for r in done {
            let (k, v) = &entries[r.entry];
            let (k, v) = (k.as_ref(), v.as_ref());
            let undo = |old: &Old| -> Result<bool, Error> {
                self.modify(k, None, |actual| {
                    if actual != Some(v) {
                        return (Edit::Keep, false);
                    }
                    let edit = match old {
                        Old::Absent => Edit::Remove,
                        Old::Blob(stub) => Edit::PutStub(*stub),
                        Old::Bytes(b) => Edit::Put(&b[..]),
                    };
                    (edit, true)
                })
            };
            // A put-back the budget refuses even after a `compact` (its leaf must split and
            // the batch's own splits, or another thread, spent the budget) takes its pages
            // past the budget: a failed batch changes nothing.
            let refused = |r: &Result<bool, Error>| matches!(r, Err(Error::OutOfSpace { .. }));
            let mut put_back = undo(&r.old);
            if refused(&put_back) {
                self.compact();
                put_back = undo(&r.old);
            }
            if refused(&put_back) {
                put_back = crate::page::with_overdraft(|| undo(&r.old));
            }
            if let (Old::Blob(stub), Ok(false) | Err(_)) = (r.old, put_back) {
                self.core.free_blob(stub);
            }
        }
    }
}

/// What one write of [`Tree::insert_many`] replaced.
struct Replaced {
    /// The index of its entry.
    entry: usize,
    old: Old,
}

/// A key's value before the batch wrote it.
enum Old {
    Absent,
    /// An out-of-line value, whose blob the batch keeps (no entry names it) until it ends.
    Blob(Stub),
    /// A value stored inline, or one overwritten in place.
    Bytes(Vec<u8>),
}
