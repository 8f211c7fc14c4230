//! The range iterator: double-ended, one leaf at a time, re-seeking by key.
//!
//! Each refill descends from the root to the next leaf in the direction of travel, copies the
//! entries that lie beyond the cursor under the leaf's shared latch, and moves the cursor
//! past the leaf's fence. Because the cursor is a key and not a page, a split or merge
//! between two refills cannot make the iterator skip or repeat an entry. Entries handed out
//! from the front and from the back are checked against each other's last key, so the two
//! ends never cross.
//!
//! Each refill reads the leaf under its shared latch, so no writer changes it meanwhile;
//! the reads still go through the node's copying read view.

use crate::engine::{Target, TreeCore};
use crate::sync::Restart;
use crate::Tree;
use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

type Entry = (Vec<u8>, Vec<u8>);

/// Iterator returned by [`Tree::range`](crate::Tree::range) and [`Tree::iter`](crate::Tree::iter); yields `(key, value)` copies in
/// key order from either end.
pub struct Range<'t> {
    tree: &'t TreeCore,
    /// Keys returned from the front are above this bound.
    front: Bound<Vec<u8>>,
    /// Keys returned from the back are below this bound.
    back: Bound<Vec<u8>>,
    /// Where the next forward refill starts (`None`: no leaf left).
    front_cursor: Option<Bound<Vec<u8>>>,
    /// Where the next backward refill starts (`None`: no leaf left).
    back_cursor: Option<Bound<Vec<u8>>>,
    front_buf: VecDeque<Entry>,
    back_buf: Vec<Entry>,
    finished: bool,
}

impl std::fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("front", &self.front)
            .field("back", &self.back)
            .finish_non_exhaustive()
    }
}

fn above(bound: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => key >= b.as_slice(),
        Bound::Excluded(b) => key > b.as_slice(),
    }
}

fn below(bound: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => key <= b.as_slice(),
        Bound::Excluded(b) => key < b.as_slice(),
    }
}

impl<'t> Range<'t> {
    pub(crate) fn new(tree: &'t TreeCore, front: Bound<Vec<u8>>, back: Bound<Vec<u8>>) -> Self {
        let empty = match (&front, &back) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
            _ => false,
        };
        Range {
            tree,
            front_cursor: Some(front.clone()),
            back_cursor: Some(back.clone()),
            front,
            back,
            front_buf: VecDeque::new(),
            back_buf: Vec::new(),
            finished: empty,
        }
    }

    /// Copies the entries at or after `cursor` from the leaf holding it; returns them and
    /// the leaf's upper fence (`None`: it was the last leaf).
    fn optimistic_refill_front(
        tree: &TreeCore,
        cursor: &Bound<Vec<u8>>,
    ) -> Result<(Vec<Entry>, Option<Vec<u8>>), Restart> {
        // Keys strictly above `k` are the keys at or above `k ++ [0]`.
        let key: Vec<u8> = match cursor {
            Bound::Unbounded => Vec::new(),
            Bound::Included(k) => k.clone(),
            Bound::Excluded(k) => {
                let mut s = k.clone();
                s.push(0);
                s
            }
        };
        let (leaf, _) = tree.optimistic_descend(Target::Key(&key, 0))?;
        let _s = leaf.guard.upgrade_shared()?;
        let node = leaf.node;
        let (pos, _) = node.lower_bound(&key)?;
        let mut out = Vec::with_capacity(node.count() - pos);
        for i in pos..node.count() {
            out.push((node.key(i)?, node.value(i)?));
        }
        Ok((out, node.upper_fence()?))
    }

    /// Copies the entries at or before `cursor` from the leaf holding it (descending
    /// order); returns them and the leaf's lower fence (`None`: it was the first leaf).
    fn optimistic_refill_back(
        tree: &TreeCore,
        cursor: &Bound<Vec<u8>>,
    ) -> Result<(Vec<Entry>, Option<Vec<u8>>), Restart> {
        let target = match cursor {
            Bound::Unbounded => Target::Rightmost(0),
            Bound::Included(k) | Bound::Excluded(k) => Target::Key(k, 0),
        };
        let (leaf, _) = tree.optimistic_descend(target)?;
        let _s = leaf.guard.upgrade_shared()?;
        let node = leaf.node;
        let end = match cursor {
            Bound::Unbounded => node.count(),
            Bound::Included(k) => {
                let (pos, found) = node.lower_bound(k)?;
                pos + found as usize
            }
            Bound::Excluded(k) => node.lower_bound(k)?.0,
        };
        let mut out = Vec::with_capacity(end);
        for i in (0..end).rev() {
            out.push((node.key(i)?, node.value(i)?));
        }
        Ok((out, node.lower_fence()?))
    }
}

impl Iterator for Range<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        loop {
            if self.finished {
                return None;
            }
            if let Some((k, v)) = self.front_buf.pop_front() {
                if !below(&self.back, &k) {
                    self.finished = true;
                    return None;
                }
                if !above(&self.front, &k) {
                    continue;
                }
                self.front = Bound::Excluded(k.clone());
                return Some((k, v));
            }
            let Some(cursor) = self.front_cursor.take() else {
                self.finished = true;
                return None;
            };
            let tree = self.tree;
            let (batch, upper) = tree.retry(|| Self::optimistic_refill_front(tree, &cursor));
            self.front_buf.extend(batch);
            self.front_cursor = upper.map(Bound::Excluded);
        }
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Entry> {
        loop {
            if self.finished {
                return None;
            }
            if let Some((k, v)) = self.back_buf.pop() {
                if !above(&self.front, &k) {
                    self.finished = true;
                    return None;
                }
                if !below(&self.back, &k) {
                    continue;
                }
                self.back = Bound::Excluded(k.clone());
                return Some((k, v));
            }
            let Some(cursor) = self.back_cursor.take() else {
                self.finished = true;
                return None;
            };
            let tree = self.tree;
            let (mut batch, lower) = tree.retry(|| Self::optimistic_refill_back(tree, &cursor));
            batch.reverse();
            self.back_buf = batch;
            self.back_cursor = lower.map(Bound::Included);
        }
    }
}

/// A bound over borrowed bytes, copied.
fn owned_bound(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    b.map(<[u8]>::to_vec)
}

impl Tree {
    /// A double-ended iterator over the entries whose keys lie in `range`, in key order.
    ///
    /// The iterator copies one leaf at a time under a shared latch and remembers the last
    /// key it returned, so it stays correct across concurrent splits and merges: it never
    /// returns a key twice or out of order, and returns every key that stayed in the tree
    /// for the whole scan.
    ///
    /// ```
    /// use std::ops::Bound::{Excluded, Included};
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     tree.insert(k, b"").unwrap();
    /// }
    /// let keys: Vec<_> = tree
    ///     .range((Included(&b"b"[..]), Excluded(&b"d"[..])))
    ///     .map(|(k, _)| k)
    ///     .collect();
    /// assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
    /// let last = tree.range(..).next_back();
    /// assert_eq!(last.map(|(k, _)| k), Some(b"d".to_vec()));
    /// ```
    pub fn range<R: RangeBounds<[u8]>>(&self, range: R) -> Range<'_> {
        Range::new(
            &self.core,
            owned_bound(range.start_bound()),
            owned_bound(range.end_bound()),
        )
    }

    /// Like [`range`](Self::range), for bounds given as anything that is bytes: arrays,
    /// slices, `Vec<u8>`, strings. (`std::ops::Range<&[u8]>` does not implement
    /// `RangeBounds<[u8]>`, so `tree.range(a..b)` does not compile for slices.)
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in ["a", "b", "c", "d"] {
    ///     tree.insert(k.as_bytes(), b"").unwrap();
    /// }
    /// let keys: Vec<_> = tree.range_of("b".."d").map(|(k, _)| k).collect();
    /// assert_eq!(keys, vec![b"b".to_vec(), b"c".to_vec()]);
    /// assert_eq!(tree.range_of(&b"c"[..]..).count(), 2);
    /// assert_eq!(tree.range_of(b"a".to_vec()..=b"b".to_vec()).count(), 2);
    /// ```
    pub fn range_of<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Range<'_> {
        Range::new(
            &self.core,
            owned_bound(range.start_bound().map(K::as_ref)),
            owned_bound(range.end_bound().map(K::as_ref)),
        )
    }

    /// All entries in key order.
    pub fn iter(&self) -> Range<'_> {
        Range::new(&self.core, Bound::Unbounded, Bound::Unbounded)
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.iter().next()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.iter().next_back()
    }
}
