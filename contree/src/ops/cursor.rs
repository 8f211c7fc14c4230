//! The cursor: a position in the tree that moves entry by entry in either direction, and
//! the machinery under every scan ([`Tree::scan`], [`Tree::range`], `first`, `last`).
//!
//! A cursor reads one entry at a time, optimistically (no latch, nothing written to shared
//! memory): it copies the entry's key and value into two buffers it reuses and validates the
//! leaf's version before it hands them out. Moving to the neighbour in the same leaf costs
//! that copy and one validation against the snapshot taken when the cursor entered the leaf,
//! with no descent and no copy of the entries it does not hand out. When the leaf changed
//! (the snapshot fails) or is used up, the cursor descends again from the root to the key
//! after (or before) its current one, so a concurrent split or merge can neither make it skip
//! an entry nor return one twice. A seek costs a point lookup.
//!
//! Keys and values are borrowed from the cursor's buffers: no allocation per entry once they
//! have grown to the largest entry, and no latch is held while the caller looks at them, so
//! the caller may call into the tree (even write to it) between moves.

use crate::engine::{Target, TreeCore};
use crate::node::Node;
use crate::sync::{OptimisticGuard, Restart};
use crate::Tree;

/// A position in a [`Tree`] that moves forward and backward, entry by entry, handing out
/// borrowed keys and values (see [`Tree::cursor`]).
///
/// A cursor is *positioned* on an entry after a successful seek or move, and unpositioned
/// before the first seek and after a move past either end (then [`key`](Self::key) and
/// [`value`](Self::value) return `None`, and only a seek positions it again).
///
/// Consistency under concurrent writes: each entry a cursor hands out was in the tree, with
/// that value, at some moment during the move that produced it; moving in one direction
/// never returns a key twice or out of order, and never skips a key that stayed in the tree
/// meanwhile.
pub struct Cursor<'t> {
    tree: &'t TreeCore,
    /// Two (key, value) buffers: `bufs[cur]` holds the current entry (while `positioned`);
    /// the next entry is read into the other one, which becomes current once the read
    /// validated, so a failed read leaves the current entry intact.
    bufs: [(Vec<u8>, Vec<u8>); 2],
    cur: usize,
    /// Whether the spare key buffer starts with the prefix of the leaf in `at`.
    spare_has_prefix: bool,
    positioned: bool,
    /// The leaf the current entry was read from, while it may still be unchanged.
    at: Option<At<'t>>,
    /// Scratch: the key a descent starts from.
    seek: Vec<u8>,
    /// Scratch: a fence copied out of a leaf.
    fence: Vec<u8>,
}

/// Where the current entry came from: the leaf, the snapshot it was validated against, its
/// index and the leaf's entry count under that snapshot.
struct At<'t> {
    node: Node,
    guard: OptimisticGuard<'t>,
    index: usize,
    count: usize,
}

/// Which entry a descent positions the cursor on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seek {
    /// The first entry `>=` the seek key.
    AtOrAfter,
    /// The last entry of the tree.
    Last,
    /// The last entry `<=` the seek key.
    AtOrBefore,
    /// The last entry `<` the seek key.
    Below,
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("key", &self.key())
            .finish_non_exhaustive()
    }
}

impl<'t> Cursor<'t> {
    pub(crate) fn new(tree: &'t TreeCore) -> Self {
        Cursor {
            tree,
            bufs: Default::default(),
            cur: 0,
            spare_has_prefix: false,
            positioned: false,
            at: None,
            seek: Vec::new(),
            fence: Vec::new(),
        }
    }

    /// Positions the cursor on the first entry whose key is `>= key`; returns whether there
    /// is one.
    pub fn seek(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::AtOrAfter)
    }

    /// Positions the cursor on the first entry whose key is `> key`; returns whether there
    /// is one.
    pub fn seek_after(&mut self, key: &[u8]) -> bool {
        // The keys above `key` are the keys at or above `key ++ [0]`.
        self.seek_by(key, true, Seek::AtOrAfter)
    }

    /// Positions the cursor on the last entry whose key is `<= key`; returns whether there
    /// is one.
    pub fn seek_for_prev(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::AtOrBefore)
    }

    /// Positions the cursor on the last entry whose key is `< key`; returns whether there
    /// is one.
    pub fn seek_before(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::Below)
    }

    /// Sets the seek key to `key` (with a zero byte appended if `zero`) and descends.
    fn seek_by(&mut self, key: &[u8], zero: bool, how: Seek) -> bool {
        self.seek.clear();
        self.seek.extend_from_slice(key);
        if zero {
            self.seek.push(0);
        }
        self.load(how)
    }

    /// Positions the cursor on the first entry of the tree; returns whether there is one.
    pub fn seek_to_first(&mut self) -> bool {
        self.seek(&[])
    }

    /// Positions the cursor on the last entry of the tree; returns whether there is one.
    pub fn seek_to_last(&mut self) -> bool {
        self.load(Seek::Last)
    }

    /// Whether the cursor is positioned on an entry.
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.positioned
    }

    /// The key and value of the current entry.
    #[inline]
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        self.positioned.then(|| {
            let (k, v) = &self.bufs[self.cur];
            (k.as_slice(), v.as_slice())
        })
    }

    /// The key of the current entry.
    #[inline]
    pub fn key(&self) -> Option<&[u8]> {
        self.positioned.then(|| self.bufs[self.cur].0.as_slice())
    }

    /// The value of the current entry.
    #[inline]
    pub fn value(&self) -> Option<&[u8]> {
        self.positioned.then(|| self.bufs[self.cur].1.as_slice())
    }

    /// Moves to the next entry (in key order); returns whether there is one. An
    /// unpositioned cursor stays unpositioned.
    // Not `Iterator::next`: the entry is borrowed from the cursor, which an `Iterator`
    // cannot hand out.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> bool {
        if !self.positioned {
            return false;
        }
        if let Some(at) = &self.at {
            if at.index + 1 < at.count && self.step(at.index + 1) {
                return true;
            }
        }
        self.leave_forward()
    }

    /// Moves to the previous entry; returns whether there is one. An unpositioned cursor
    /// stays unpositioned.
    #[inline]
    pub fn prev(&mut self) -> bool {
        if !self.positioned {
            return false;
        }
        if let Some(at) = &self.at {
            if at.index > 0 && self.step(at.index - 1) {
                return true;
            }
        }
        self.leave_backward()
    }

    /// Reads entry `index` of the current leaf into the spare buffers and, if the leaf is
    /// unchanged, makes it the current entry. On failure the current entry stays and the
    /// leaf is forgotten.
    #[inline]
    fn step(&mut self, index: usize) -> bool {
        let Some(at) = &mut self.at else {
            return false;
        };
        let (key, value) = &mut self.bufs[self.cur ^ 1];
        let read = at.node.copy_entry(index, self.spare_has_prefix, key, value);
        if read.is_ok() && at.guard.validate().is_ok() {
            at.index = index;
            self.cur ^= 1;
            // Both buffers now hold keys of this leaf.
            self.spare_has_prefix = true;
            return true;
        }
        self.at = None;
        self.spare_has_prefix = false;
        false
    }

    /// The cursor is past an end.
    fn unposition(&mut self) -> bool {
        self.positioned = false;
        self.at = None;
        self.spare_has_prefix = false;
        false
    }

    /// The leaf is used up going forward, or changed: descend to the key after the
    /// current one (after the leaf's upper fence, when the leaf is unchanged and used up:
    /// the keys above the fence are in the leaves to the right).
    #[cold]
    fn leave_forward(&mut self) -> bool {
        if let Some(at) = self.at.take() {
            let read = at.node.copy_upper_fence(&mut self.seek);
            match (read, at.guard.validate()) {
                (Ok(false), Ok(())) => return self.unposition(),
                (Ok(true), Ok(())) => {
                    self.seek.push(0);
                    return self.load(Seek::AtOrAfter);
                }
                // Torn read: go on from the current key instead.
                _ => {}
            }
        }
        self.seek.clear();
        self.seek.extend_from_slice(&self.bufs[self.cur].0);
        self.seek.push(0);
        self.load(Seek::AtOrAfter)
    }

    /// As [`leave_forward`](Self::leave_forward), going backward: the keys at or below the
    /// lower fence are in the leaves to the left.
    #[cold]
    fn leave_backward(&mut self) -> bool {
        if let Some(at) = self.at.take() {
            let read = at.node.copy_lower_fence(&mut self.seek);
            match (read, at.guard.validate()) {
                (Ok(false), Ok(())) => return self.unposition(),
                (Ok(true), Ok(())) => return self.load(Seek::AtOrBefore),
                // Torn read: go on from the current key instead.
                _ => {}
            }
        }
        self.seek.clear();
        self.seek.extend_from_slice(&self.bufs[self.cur].0);
        self.load(Seek::Below)
    }

    /// Positions the cursor by a descent (see [`Seek`]), moving past leaves that hold no
    /// entry on the wanted side of the seek key: right after their upper fence, left at
    /// their lower fence.
    fn load(&mut self, mut how: Seek) -> bool {
        let tree = self.tree;
        loop {
            let (key, value) = &mut self.bufs[self.cur];
            let (seek, fence) = (&mut self.seek, &mut self.fence);
            let (at, has_fence) = tree.retry(|| -> Result<(Option<At<'_>>, bool), Restart> {
                let target = match how {
                    Seek::Last => Target::Rightmost(0),
                    _ => Target::Key(seek, 0),
                };
                let (leaf, _) = tree.optimistic_descend(target)?;
                let node = leaf.node;
                let count = node.count();
                // The entry to read, if the leaf has one on the wanted side.
                let index = match how {
                    Seek::AtOrAfter => Some(node.lower_bound(seek)?.0).filter(|&i| i < count),
                    Seek::Last => count.checked_sub(1),
                    Seek::AtOrBefore => {
                        let (pos, found) = node.lower_bound(seek)?;
                        (pos + found as usize).checked_sub(1)
                    }
                    Seek::Below => node.lower_bound(seek)?.0.checked_sub(1),
                };
                if let Some(index) = index {
                    node.copy_entry(index, false, key, value)?;
                    leaf.guard.validate()?;
                    let at = At {
                        node,
                        guard: leaf.guard,
                        index,
                        count,
                    };
                    return Ok((Some(at), false));
                }
                let has = if how == Seek::AtOrAfter {
                    node.copy_upper_fence(fence)?
                } else {
                    node.copy_lower_fence(fence)?
                };
                leaf.guard.validate()?;
                Ok((None, has))
            });
            if let Some(at) = at {
                self.at = Some(at);
                self.positioned = true;
                self.spare_has_prefix = false;
                return true;
            }
            if !has_fence {
                return self.unposition();
            }
            std::mem::swap(&mut self.seek, &mut self.fence);
            if how == Seek::AtOrAfter {
                // The keys above the upper fence are at or after `fence ++ [0]`.
                self.seek.push(0);
            } else {
                // The keys at or below the lower fence are in the leaves to the left.
                how = Seek::AtOrBefore;
            }
        }
    }
}

impl Tree {
    /// A cursor over this tree, not yet positioned: start it with
    /// [`seek`](Cursor::seek), [`seek_for_prev`](Cursor::seek_for_prev),
    /// [`seek_to_first`](Cursor::seek_to_first) or [`seek_to_last`](Cursor::seek_to_last).
    ///
    /// A cursor copies a few entries of one leaf at a time into a buffer it reuses and
    /// hands out borrowed keys and values: it allocates nothing per entry and holds no latch
    /// between calls.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"b", b"c"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek(b"b"));
    /// assert_eq!(c.key(), Some(&b"b"[..]));
    /// assert!(c.next());
    /// assert_eq!(c.entry(), Some((&b"c"[..], &b"v"[..])));
    /// assert!(!c.next()); // past the end: unpositioned
    /// assert!(c.seek_to_last() && c.prev());
    /// assert_eq!(c.key(), Some(&b"b"[..]));
    /// assert!(c.seek_for_prev(b"bz"));
    /// assert_eq!(c.key(), Some(&b"b"[..]));
    /// ```
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor::new(&self.core)
    }
}
