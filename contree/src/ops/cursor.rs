//! The cursor: a position in the tree that moves entry by entry in either direction, and
//! the machinery under every scan ([`Tree::scan`], [`Tree::range`], `first`, `last`).
//!
//! A cursor reads a leaf through a private copy ([`LeafCopy`]): when it enters a leaf it
//! copies the leaf's header, slots and heap into a buffer it reuses, validates the leaf's
//! version once, and then searches and reads the copy as plain memory. Moving to the
//! neighbour in the same leaf writes the neighbour's key into the cursor's key buffer and
//! validates the leaf's version against the snapshot taken when the cursor entered it (one
//! load, nothing written to shared memory), so every entry handed out is still in the tree
//! when the move returns. When the leaf changed (the snapshot fails) or is used up, the
//! cursor descends again from the root to the key after (or before) its current one, so a
//! concurrent split or merge can neither make it skip an entry nor return one twice. A seek
//! costs a point lookup and the copy of one leaf.
//!
//! A value stored out of line (`crate::blob`) is not in the copy: the cursor copies its
//! blob pages into a spare buffer when it moves onto the entry, *then* validates the leaf's
//! version (a chain freed and reused under it fails that validation), and only then adopts
//! the spare buffer as the value it hands out.
//!
//! Keys and values are borrowed from the cursor: no allocation per entry, and no latch is
//! held while the caller looks at them, so the caller may call into the tree (even write
//! to it) between moves.

use super::cursor_kit::{self, Kit};
use crate::engine::{LeafParent, Target, TreeCore};
use crate::node::{Memo, Node, Place};
use crate::page::Directory;
use crate::sync::{Backoff, OptimisticGuard, Restart};
use crate::{Bytes, Tree};
use std::mem::ManuallyDrop;
use std::ops::ControlFlow;

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
    /// The tree, for the side structure's merge before each seek (`side`).
    owner: &'t Tree,
    /// The buffers (kept per thread from one cursor to the next, `cursor_kit`): the copy of
    /// the leaf the current entry was read from (`leaf`, while positioned), the current key
    /// (`key`, while positioned; it starts with the prefix of `leaf`), the key a descent
    /// starts from (`seek`) and a fence a descent moves on to while `seek` may still be
    /// needed (`fence`). Given back when the cursor drops, and never used after that.
    kit: ManuallyDrop<Box<Kit>>,
    /// Where the current value lies in `kit.leaf`.
    value: Place,
    positioned: bool,
    /// The snapshot of the leaf behind `kit.leaf`, while the leaf may still be unchanged.
    at: Option<At<'t>>,
    /// The parent the descent to the leaf behind `kit.leaf` stepped from (or the sibling
    /// step, [`TreeCore::sibling_leaf`]): a move past the leaf's fence reaches the next
    /// leaf through it while it is unchanged, instead of descending from the root.
    parent: Option<LeafParent<'t>>,
}

/// Where the current entry came from: the snapshot the leaf copy was validated against, the
/// entry's index and the copy's entry count.
struct At<'t> {
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

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: `drop` runs once, and nothing uses `kit` after it.
        cursor_kit::give(unsafe { ManuallyDrop::take(&mut self.kit) });
    }
}

impl std::fmt::Debug for Cursor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cursor")
            .field("key", &self.key())
            .finish_non_exhaustive()
    }
}

impl<'t> Cursor<'t> {
    pub(crate) fn new(owner: &'t Tree) -> Self {
        Cursor {
            tree: &owner.core,
            owner,
            kit: ManuallyDrop::new(cursor_kit::take()),
            value: Place::default(),
            positioned: false,
            at: None,
            parent: None,
        }
    }

    /// Positions the cursor on the first entry whose key is `>= key`; returns whether there
    /// is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek(b"b"));
    /// assert_eq!(c.key(), Some(&b"c"[..]));
    /// assert!(c.seek(b"c"));
    /// assert_eq!(c.key(), Some(&b"c"[..]));
    /// assert!(!c.seek(b"f"));
    /// ```
    pub fn seek(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::AtOrAfter)
    }

    /// Positions the cursor on the first entry whose key is `> key`; returns whether there
    /// is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek_after(b"c"));
    /// assert_eq!(c.key(), Some(&b"e"[..]));
    /// assert!(!c.seek_after(b"e"));
    /// ```
    pub fn seek_after(&mut self, key: &[u8]) -> bool {
        // The keys above `key` are the keys at or above `key ++ [0]`.
        self.seek_by(key, true, Seek::AtOrAfter)
    }

    /// Positions the cursor on the last entry whose key is `<= key`; returns whether there
    /// is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek_for_prev(b"d"));
    /// assert_eq!(c.key(), Some(&b"c"[..]));
    /// assert!(c.seek_for_prev(b"c"));
    /// assert_eq!(c.key(), Some(&b"c"[..]));
    /// assert!(!c.seek_for_prev(b"0"));
    /// ```
    pub fn seek_for_prev(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::AtOrBefore)
    }

    /// Positions the cursor on the last entry whose key is `< key`; returns whether there
    /// is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek_before(b"c"));
    /// assert_eq!(c.key(), Some(&b"a"[..]));
    /// assert!(!c.seek_before(b"a"));
    /// ```
    pub fn seek_before(&mut self, key: &[u8]) -> bool {
        self.seek_by(key, false, Seek::Below)
    }

    /// Sets the seek key to `key` (with a zero byte appended if `zero`) and descends.
    fn seek_by(&mut self, key: &[u8], zero: bool, how: Seek) -> bool {
        self.kit.seek.clear();
        self.kit.seek.extend_from_slice(key);
        if zero {
            self.kit.seek.push(0);
        }
        self.load(how)
    }

    /// Positions the cursor on the first entry of the tree; returns whether there is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek_to_first());
    /// assert_eq!(c.key(), Some(&b"a"[..]));
    /// assert!(!contree::Tree::new().cursor().seek_to_first());
    /// ```
    pub fn seek_to_first(&mut self) -> bool {
        self.seek(&[])
    }

    /// Positions the cursor on the last entry of the tree; returns whether there is one.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(c.seek_to_last());
    /// assert_eq!(c.key(), Some(&b"e"[..]));
    /// ```
    pub fn seek_to_last(&mut self) -> bool {
        self.load(Seek::Last)
    }

    /// Whether the cursor is positioned on an entry.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert!(!c.is_valid()); // not yet positioned
    /// c.seek_to_last();
    /// assert!(c.is_valid());
    /// c.next(); // past the end
    /// assert!(!c.is_valid());
    /// ```
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.positioned
    }

    /// The key and value of the current entry.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// assert_eq!(c.entry(), None);
    /// c.seek(b"a");
    /// assert_eq!(c.entry(), Some((&b"a"[..], &b"v"[..])));
    /// ```
    #[inline]
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        self.positioned
            .then(|| (self.kit.key.as_slice(), self.kit.leaf.value(self.value)))
    }

    /// The key of the current entry.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// c.seek(b"d");
    /// assert_eq!(c.key(), Some(&b"e"[..]));
    /// ```
    #[inline]
    pub fn key(&self) -> Option<&[u8]> {
        self.positioned.then_some(self.kit.key.as_slice())
    }

    /// The value of the current entry.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// c.seek(b"d");
    /// assert_eq!(c.value(), Some(&b"v"[..]));
    /// ```
    #[inline]
    pub fn value(&self) -> Option<&[u8]> {
        self.positioned.then(|| self.kit.leaf.value(self.value))
    }

    /// Moves to the next entry (in key order); returns whether there is one. An
    /// unpositioned cursor stays unpositioned.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// c.seek_to_first();
    /// let mut keys = vec![c.key().unwrap().to_vec()];
    /// while c.next() {
    ///     keys.push(c.key().unwrap().to_vec());
    /// }
    /// assert_eq!(keys, [b"a", b"c", b"e"]);
    /// ```
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
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"c", b"e"] {
    ///     tree.insert(k, b"v").unwrap();
    /// }
    /// let mut c = tree.cursor();
    /// c.seek_to_last();
    /// assert!(c.prev());
    /// assert_eq!(c.key(), Some(&b"c"[..]));
    /// assert!(c.prev() && !c.prev());
    /// ```
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

    /// Calls `f` with the current entry and then with each following (`FORWARD`) or
    /// preceding entry of the current leaf copy, until `f` breaks or the copy is used up;
    /// the cursor stays on the last entry `f` saw. The entries after the current one are
    /// not validated one by one: each was in the tree when the copy was validated, during
    /// the walk's scan, which is what the visitor scans promise (see [`Tree::scan`]).
    #[inline]
    pub(crate) fn walk_leaf<const FORWARD: bool, R>(
        &mut self,
        f: &mut impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
    ) -> ControlFlow<R> {
        if !self.positioned {
            return ControlFlow::Continue(());
        }
        f(&self.kit.key, self.kit.leaf.value(self.value))?;
        let Some(at) = &mut self.at else {
            return ControlFlow::Continue(());
        };
        let guard = &at.guard;
        let validate = || guard.validate();
        let kit = &mut **self.kit;
        let (last, flow, stale) = kit.leaf.walk::<FORWARD, R>(
            at.index,
            at.count,
            &mut kit.key,
            (self.tree.directory(), &validate, self.tree.has_long_keys()),
            f,
        );
        if let Some((index, place)) = last {
            at.index = index;
            self.value = place;
        }
        if stale {
            // The leaf changed under an out-of-line value: the next move descends again.
            self.at = None;
        }
        flow
    }

    /// A range's per-entry step: entry `ahead` places after (`FORWARD`) or before the
    /// current one in the leaf copy, as [`Bytes`], if the copy has it and it is short (see
    /// [`LeafCopy::copy_short`]). Neither moves the cursor nor validates the leaf: the copy
    /// was validated when the cursor entered the leaf, during the range's walk, so the
    /// entry was in the tree then (what the visitor scans rely on too); the range moves the
    /// cursor with [`skip`](Self::skip) before it needs the cursor's own position.
    #[inline(always)]
    pub(crate) fn peek_short<const FORWARD: bool>(&self, ahead: usize) -> Option<(Bytes, Bytes)> {
        let at = self.at.as_ref()?;
        let index = if FORWARD {
            at.index + ahead
        } else {
            at.index.checked_sub(ahead)?
        };
        if index >= at.count {
            return None;
        }
        self.short_at(index)
    }

    /// The index of the current entry in the leaf copy and the copy's entry count, while
    /// the copy may still be the leaf as it is (see [`peek_short`](Self::peek_short)).
    #[inline]
    pub(crate) fn position(&self) -> Option<(usize, usize)> {
        self.at.as_ref().map(|at| (at.index, at.count))
    }

    /// Entry `index` of the leaf copy as [`Bytes`], if the copy has it and it is short: what
    /// [`peek_short`](Self::peek_short) hands out, for an index the caller took from
    /// [`position`](Self::position).
    #[inline(always)]
    pub(crate) fn short_at(&self, index: usize) -> Option<(Bytes, Bytes)> {
        self.kit.leaf.copy_short(index)
    }

    /// [`short_at`](Self::short_at) with a [`Memo`] of the entries this cursor's leaf copy
    /// decoded last (see [`LeafCopy::copy_short_memo`](crate::node::LeafCopy::copy_short_memo)):
    /// the memo must be empty or come from this function on this cursor while it has not
    /// moved (its copy is unchanged).
    #[inline(always)]
    pub(crate) fn short_at_memo(&self, index: usize, memo: &mut Memo) -> Option<(Bytes, Bytes)> {
        self.kit.leaf.copy_short_memo(index, memo)
    }

    /// Moves the cursor onto the entry `ahead` places after (`FORWARD`) or before the
    /// current one, which a range handed out through [`peek_short`](Self::peek_short):
    /// without validating the leaf (the entry was handed out already), rewriting the key
    /// buffer once.
    #[cold]
    pub(crate) fn skip<const FORWARD: bool>(&mut self, ahead: usize) {
        let Some(at) = &mut self.at else {
            return;
        };
        let index = if FORWARD {
            at.index + ahead
        } else {
            at.index - ahead
        };
        // `peek_short` read the same entry of the same immutable copy with the same
        // decode (`short_entry`), and the key buffer holds a key of this copy (so it starts
        // with the copy's prefix), so this cannot fail. (If it did, the cursor would forget
        // the leaf and descend again from its current key, handing out the skipped
        // entries a second time.)
        let kit = &mut **self.kit;
        match kit.leaf.read_inline(index, &mut kit.key) {
            Some(place) => {
                at.index = index;
                self.value = place;
            }
            None => self.at = None,
        }
    }

    /// Makes entry `index` of the leaf copy the current entry if the leaf is unchanged
    /// since the copy. On failure the current entry stays and the leaf is forgotten.
    #[inline]
    fn step(&mut self, index: usize) -> bool {
        let Some(at) = &mut self.at else {
            return false;
        };
        if !self.tree.has_long_keys() {
            // The common case: one validation (the copy is private, so reading it after
            // the validation reads what was there at the copy), one decode of the entry.
            if at.guard.validate().is_err() {
                self.at = None;
                return false;
            }
            let kit = &mut **self.kit;
            if let Some(place) = kit.leaf.read_inline(index, &mut kit.key) {
                at.index = index;
                self.value = place;
                return true;
            }
            // An out-of-line value: the general path below.
        }
        // An out-of-line value is fetched first, then the snapshot validated for both.
        let fetched = self
            .kit
            .leaf
            .fetch(index, self.tree.directory(), self.tree.has_long_keys());
        if fetched.is_ok() && at.guard.validate().is_ok() {
            let kit = &mut **self.kit;
            if let Some(place) = kit.leaf.read(index, true, &mut kit.key) {
                at.index = index;
                self.value = self.kit.leaf.adopt(place);
                return true;
            }
        }
        self.at = None;
        false
    }

    /// The cursor is past an end.
    fn unposition(&mut self) -> bool {
        self.positioned = false;
        self.at = None;
        self.parent = None;
        false
    }

    /// The leaf is used up going forward, or changed: descend to the key after the
    /// current one (after the leaf's upper fence, when the leaf is used up and unchanged
    /// since the copy: the keys above the fence are in the leaves to the right; a leaf that
    /// changed may hold new keys between the current one and its fence, so the cursor
    /// descends to the key after the current one instead).
    #[cold]
    fn leave_forward(&mut self) -> bool {
        if let Some(at) = self.at.take().filter(|at| at.guard.validate().is_ok()) {
            return match self.fence(&at, true) {
                Ok(false) => self.unposition(),
                Ok(true) => {
                    self.kit.seek.push(0);
                    let near = self.parent.take();
                    self.load_near(Seek::AtOrAfter, near)
                }
                Err(Restart) => self.reseek_from_current(true),
            };
        }
        self.reseek_from_current(true)
    }

    /// As [`leave_forward`](Self::leave_forward), going backward: the keys at or below the
    /// lower fence are in the leaves to the left.
    #[cold]
    fn leave_backward(&mut self) -> bool {
        if let Some(at) = self.at.take().filter(|at| at.guard.validate().is_ok()) {
            return match self.fence(&at, false) {
                Ok(false) => self.unposition(),
                Ok(true) => {
                    let near = self.parent.take();
                    self.load_near(Seek::AtOrBefore, near)
                }
                Err(Restart) => self.reseek_from_current(false),
            };
        }
        self.reseek_from_current(false)
    }

    /// Copies the upper (`upper`) or lower fence of the leaf copy into `seek` as a whole
    /// key (see [`whole_fence`]), validating the leaf that `at` holds the snapshot of.
    fn fence(&mut self, at: &At<'_>, upper: bool) -> Result<bool, Restart> {
        let node = self.kit.leaf.node();
        whole_fence(
            &node,
            upper,
            &mut self.kit.seek,
            self.tree.directory(),
            &at.guard,
        )
    }

    /// Descends to the entry after (`forward`) or before the current key.
    fn reseek_from_current(&mut self, forward: bool) -> bool {
        self.kit.seek.clear();
        let kit = &mut **self.kit;
        kit.seek.extend_from_slice(&kit.key);
        if forward {
            self.kit.seek.push(0);
            self.load(Seek::AtOrAfter)
        } else {
            self.load(Seek::Below)
        }
    }

    /// Positions the cursor by a descent (see [`Seek`]), moving past leaves that hold no
    /// entry on the wanted side of the seek key: right after their upper fence, left at
    /// their lower fence.
    fn load(&mut self, how: Seek) -> bool {
        self.load_near(how, None)
    }

    /// [`load`](Self::load) for a seek key that is a fence of a leaf `near` led to (the
    /// key right after its upper fence, or its lower fence): the leaf is reached by the
    /// step to its sibling under that parent while the parent is unchanged (see
    /// [`TreeCore::sibling_leaf`]), by a descent otherwise. So is the next leaf after one
    /// that holds no entry on the wanted side.
    fn load_near(&mut self, mut how: Seek, mut near: Option<LeafParent<'t>>) -> bool {
        let tree = self.tree;
        // Entries of hot ranges are merged into the tree first (`side`): a seek sees every
        // write that completed before it.
        self.owner.core.side.note_scan();
        self.owner.side_flush_all();
        // The passes below that fail after the copy validated (a blob read that restarts)
        // back off like the descent's own restarts: the writer they wait for may be off
        // the CPU.
        let mut backoff = Backoff::default();
        loop {
            let (seek, copy) = {
                let kit = &mut **self.kit;
                (&kit.seek, &mut kit.leaf)
            };
            let forward = how == Seek::AtOrAfter;
            // The sibling step; on any failure (the parent changed, no sibling under it, a
            // copy that does not validate), the descent.
            let stepped = near.take().and_then(|parent| {
                let (leaf, guard, pos) = tree.sibling_leaf(&parent, forward).ok()??;
                copy.load(&leaf).ok()?;
                guard.validate().ok()?;
                Some((guard, Some(LeafParent { pos, ..parent })))
            });
            let sibling = stepped.is_some();
            let (guard, parent) = stepped.unwrap_or_else(|| {
                tree.retry(|| {
                    let mut parent = None;
                    let (node, guard) = match how {
                        Seek::Last => {
                            let (leaf, _) = tree.optimistic_descend(Target::Rightmost(0))?;
                            (leaf.node, leaf.guard)
                        }
                        _ => tree.point_leaf_to(seek, &mut parent)?,
                    };
                    copy.load(&node)?;
                    guard.validate()?;
                    Ok((guard, parent))
                })
            });
            // The copy is validated: its search and reads see one consistent leaf.
            let node = copy.node();
            let count = copy.count();
            let dir = tree.directory();
            let searched = match how {
                Seek::Last => Ok(count.checked_sub(1)),
                // A sibling holds only keys after the seek key (the key right after the
                // fence it starts above), or (going backward) at or below it (the fence it
                // ends at): no search.
                _ if sibling => Ok(if forward {
                    Some(0)
                } else {
                    count.checked_sub(1)
                }),
                _ => node.lower_bound(seek, dir).map(|(pos, found)| match how {
                    Seek::AtOrAfter => Some(pos),
                    Seek::AtOrBefore => (pos + found as usize).checked_sub(1),
                    _ => pos.checked_sub(1),
                }),
            };
            // A search that restarts read a long key's blob while it moved or was reused
            // (the leaf itself may be unchanged): search again, never read it as "no entry
            // in this leaf", which would skip the leaf.
            let Ok(index) = searched else {
                tree.restarted(&mut backoff);
                continue;
            };
            let index = index.filter(|&i| i < count);
            let long_keys = tree.has_long_keys();
            if long_keys && guard.validate().is_err() {
                // The search may have read long keys' blobs after the copy validated.
                tree.restarted(&mut backoff);
                continue;
            }
            if let Some(index) = index {
                // An out-of-line value is fetched, then the leaf validated again; if it
                // changed meanwhile, the descent is repeated.
                match self.kit.leaf.fetch(index, dir, long_keys) {
                    Ok(false) => {}
                    Ok(true) if guard.validate().is_ok() => {}
                    _ => {
                        tree.restarted(&mut backoff);
                        continue;
                    }
                }
                let kit = &mut **self.kit;
                if let Some(place) = kit.leaf.read(index, false, &mut kit.key) {
                    self.value = self.kit.leaf.adopt(place);
                    self.at = Some(At {
                        guard,
                        index,
                        count,
                    });
                    self.parent = parent;
                    self.positioned = true;
                    return true;
                }
            }
            match whole_fence(
                &node,
                how == Seek::AtOrAfter,
                &mut self.kit.fence,
                dir,
                &guard,
            ) {
                Ok(true) => {
                    let kit = &mut **self.kit;
                    std::mem::swap(&mut kit.seek, &mut kit.fence)
                }
                Ok(false) => return self.unposition(),
                // A long fence's blob was read after the copy validated and the leaf changed
                // since: descend again with the same seek key.
                Err(Restart) => {
                    tree.restarted(&mut backoff);
                    continue;
                }
            }
            // The leaf's fence was read from its validated copy: its sibling under an
            // unchanged parent holds the keys next to it.
            near = parent;
            if how == Seek::AtOrAfter {
                // The keys above the upper fence are at or after `fence ++ [0]`.
                self.kit.seek.push(0);
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
    /// A cursor copies one leaf at a time into a buffer it reuses (optimistically: no latch,
    /// no write to shared memory) and hands out borrowed keys and values: it allocates
    /// nothing per entry and holds no latch between calls.
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
        Cursor::new(self)
    }
}

/// Copies the upper (`upper`) or lower fence of `node`, a leaf copy, into `out` as a whole
/// key: a long key's stored form is read through its blob, and then `guard` (the snapshot
/// the copy was validated against) validated again. `false` if the leaf has no such fence.
fn whole_fence(
    node: &Node,
    upper: bool,
    out: &mut Vec<u8>,
    dir: &Directory,
    guard: &OptimisticGuard<'_>,
) -> Result<bool, Restart> {
    let has = if upper {
        node.copy_upper_fence(out)?
    } else {
        node.copy_lower_fence(out)?
    };
    if has && crate::long_key::stub_of(out, node.page_size()).is_some() {
        crate::long_key::expand(out, dir)?;
        guard.validate()?;
    }
    Ok(has)
}
