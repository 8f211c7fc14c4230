//! Removing many entries: [`Tree::retain`], [`Tree::remove_range`] and [`Tree::clear`].
//!
//! Each walks its range with a visitor scan ([`Tree::scan`]), which holds no latch while
//! its callback runs, and removes entries one by one through the per-key operations, so
//! a user closure never runs under a latch and every removal is linearizable for its key.
//! None of them is atomic as a whole: concurrent readers see the entries go one by one.

use super::bounds::KeyRange;
use crate::Tree;
use std::ops::ControlFlow;

impl Tree {
    /// Keeps only the entries for which `f(key, value)` returns `true`, removing the others,
    /// in ascending key order.
    ///
    /// `f` runs with no latch held, so it may read and write the tree. A removal is a
    /// compare-and-remove ([`compare_exchange`](Self::compare_exchange)`(key,
    /// Some(judged), None)`): an entry is removed only if its value is still the one `f`
    /// judged. If another thread changed the value in between, `f` judges the new value
    /// (so `f` may see a key more than once, each time with a newer value); if another
    /// thread removed the key, nothing happens.
    ///
    /// Under concurrent writers, every entry that stays in the tree for the whole call is
    /// judged; an entry inserted, or changed, after the scan passed its key is not judged
    /// (again) and stays.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for i in 0u8..10 {
    ///     tree.insert(&[i], &[i * 10]).unwrap();
    /// }
    /// // Keep the even keys.
    /// tree.retain(|k, _v| k[0] % 2 == 0);
    /// assert_eq!(tree.len(), 5);
    /// assert!(tree.keys().all(|k| k[0] % 2 == 0));
    /// // `f` sees the values too.
    /// tree.retain(|_k, v| v[0] < 50);
    /// assert_eq!(tree.len(), 3);
    /// ```
    pub fn retain(&self, mut f: impl FnMut(&[u8], &[u8]) -> bool) {
        self.scan(.., |k, v| {
            if !f(k, v) {
                // The value `f` judged last, when it is no longer the scanned one.
                let mut newer: Option<Vec<u8>> = None;
                loop {
                    let judged = newer.as_deref().unwrap_or(v);
                    match self.compare_exchange(k, Some(judged), None) {
                        // Changed meanwhile: judge the new value.
                        Ok(Err(Some(actual))) if !f(k, &actual) => newer = Some(actual),
                        // Removed; or removed by another thread, or changed to a value
                        // `f` keeps, meanwhile. (A removal of a key read from the tree is
                        // never refused.)
                        _ => break,
                    }
                }
            }
            ControlFlow::<()>::Continue(())
        });
    }

    /// Removes the entries whose keys lie in `range`; returns how many this call removed.
    ///
    /// Takes the same ranges as [`range`](Self::range). Keys are removed in ascending
    /// order, each as the scan reaches it (with its value then). Under concurrent writers,
    /// a key inserted into the range after the scan passed its position stays, and a key
    /// another thread removes first is not counted.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in ["a", "b", "c", "d", "e"] {
    ///     tree.insert(k.as_bytes(), b"").unwrap();
    /// }
    /// assert_eq!(tree.remove_range("b".."d"), 2);
    /// assert_eq!(tree.remove_range(&b"d"[..]..=&b"z"[..]), 2);
    /// let left: Vec<_> = tree.keys().collect();
    /// assert_eq!(left, [b"a"]);
    /// assert_eq!(tree.remove_range(..), 1);
    /// assert!(tree.is_empty());
    /// ```
    pub fn remove_range(&self, range: impl KeyRange) -> usize {
        let mut removed = 0;
        self.scan(range, |k, _| {
            if self.remove(k).is_some() {
                removed += 1;
            }
            ControlFlow::<()>::Continue(())
        });
        removed
    }

    /// Removes every entry (as [`remove_range`](Self::remove_range)`(..)`).
    ///
    /// Not atomic: concurrent readers see the entries go one by one, and an entry inserted
    /// concurrently behind the removal's position stays. The tree's pages are merged and
    /// freed as they empty, as with any removal.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for i in 0u32..1000 {
    ///     tree.insert(&i.to_be_bytes(), b"v").unwrap();
    /// }
    /// tree.clear();
    /// assert!(tree.is_empty());
    /// assert_eq!(tree.iter().count(), 0);
    /// ```
    pub fn clear(&self) {
        self.remove_range(..);
    }
}
