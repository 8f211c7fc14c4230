//! Ranges: the double-ended iterator ([`Range`]) and the visitor scans ([`Tree::scan`],
//! [`Tree::scan_rev`]), both built on [`Cursor`]s.
//!
//! A range holds a cursor for each end, started lazily; entries handed out from the front
//! are checked against the back cursor's current key (and the other way round), so the two
//! ends never cross. The cursors re-seek by key whenever their leaf changed, so a range stays
//! correct across concurrent splits and merges.

use super::bounds::KeyRange;
use super::cursor::Cursor;
use crate::engine::Target;
use crate::node::{Memo, ValueHint};
use crate::{Bytes, Tree};
use std::ops::{Bound, ControlFlow, RangeBounds};

/// An entry handed out by a [`Range`].
type Entry = (Bytes, Bytes);

/// Iterator returned by [`Tree::range`](crate::Tree::range),
/// [`Tree::range_of`](crate::Tree::range_of) and [`Tree::iter`](crate::Tree::iter); yields
/// `(key, value)` copies in key order from either end.
///
/// Keys and values are [`Bytes`]: a copy of up to [`Bytes::INLINE_CAPACITY`] (22) bytes is
/// stored inline, so a range over short keys and values allocates nothing per entry. `Bytes`
/// dereferences to `[u8]` and compares equal to slices, arrays and vectors;
/// [`Bytes::into_vec`] (or `Vec::from`) turns one into a `Vec<u8>`. The methods that
/// return a single entry or value ([`Tree::get`](crate::Tree::get),
/// [`Tree::first`](crate::Tree::first), [`Tree::last`](crate::Tree::last), `insert` and
/// `remove`) return `Vec<u8>`s: they copy one entry, and a caller that keeps it usually wants
/// a vector. To look at entries without any copy, use [`Tree::scan`](crate::Tree::scan) or a
/// [`Cursor`](crate::Cursor).
pub struct Range<'t> {
    /// Where the range starts and ends (a bound of up to 22 bytes costs no allocation).
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    tree: &'t Tree,
    /// The cursor of each end, made when that end is first used (most ranges are walked
    /// from one end only, and a cursor costs its buffers).
    front: Option<Cursor<'t>>,
    back: Option<Cursor<'t>>,
    /// Entries handed out from the front cursor's leaf copy past the cursor's own entry
    /// (the fast path of [`Iterator::next`], see `next_short`), and the same from the
    /// back; the cursor is moved over them ([`Range::sync`]) before anything reads its
    /// position.
    front_ahead: usize,
    back_ahead: usize,
    /// The front cursor's window (see [`Window`]), and the back's.
    front_window: Window,
    back_window: Window,
    /// The entry last handed out through a cursor's move had a key or value too long for
    /// a `Bytes` to hold inline: the next step moves the cursor again at once, without
    /// looking for a short entry in the copy or opening the window, which would only fail
    /// on entries of the same sizes.
    long: bool,
    finished: bool,
}

/// The entries of one end's cursor's leaf copy that [`Iterator::next`] (or `next_back`)
/// hands out with no check but the count of entries handed out past the cursor (that end's
/// `ahead`): `len` entries after (before, for the back) entry `base`, the cursor's own,
/// every one known to lie inside the range's end (start) bound because the last of them
/// does. Opened when the cursor enters a leaf while the range is walked from that end only
/// (`Range::open_window`); closed (`len` 0) before anything moves a cursor (`Range::sync`).
/// The fast path of the fast path: `next_short` checks, for every entry, that the other
/// end is unused, that the cursor has the entry, and the bound. `memo` holds the length
/// header the window decoded last (see [`Memo`]); it is emptied whenever the window
/// opens, and the cursor does not move while the window is open, so it always comes from
/// the cursor's current copy.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    base: usize,
    len: usize,
    memo: Memo,
}

impl std::fmt::Debug for Range<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Range")
            .field("start", &self.start)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

/// Whether `key` lies at or after the start bound.
#[inline]
fn above(bound: Bound<&[u8]>, key: &[u8]) -> bool {
    match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => key >= b,
        Bound::Excluded(b) => key > b,
    }
}

/// Whether `key` lies at or before the end bound.
#[inline]
fn below(bound: Bound<&[u8]>, key: &[u8]) -> bool {
    match bound {
        Bound::Unbounded => true,
        Bound::Included(b) => key <= b,
        Bound::Excluded(b) => key < b,
    }
}

/// Positions `c` on the first entry at or after `start`.
fn seek_start(c: &mut Cursor<'_>, start: Bound<&[u8]>) -> bool {
    match start {
        Bound::Unbounded => c.seek_to_first(),
        Bound::Included(k) => c.seek(k),
        Bound::Excluded(k) => c.seek_after(k),
    }
}

/// Positions `c` on the last entry at or before `end`.
fn seek_end(c: &mut Cursor<'_>, end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Unbounded => c.seek_to_last(),
        Bound::Included(k) => c.seek_for_prev(k),
        Bound::Excluded(k) => c.seek_before(k),
    }
}

/// The visitor scans: walks `range` with `c` (ascending if `FORWARD`), calling `f` until
/// it breaks. Each leaf is walked in one go through its copy (see [`Cursor::walk_leaf`]).
#[inline]
fn visit<const FORWARD: bool, R>(
    mut c: Cursor<'_>,
    range: &impl KeyRange,
    f: &mut impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
) -> Option<R> {
    let mut ok = if FORWARD {
        seek_start(&mut c, range.start())
    } else {
        seek_end(&mut c, range.end())
    };
    let mut inside = |k: &[u8], v: &[u8]| {
        let inside = if FORWARD {
            below(range.end(), k)
        } else {
            above(range.start(), k)
        };
        if !inside {
            return ControlFlow::Break(None);
        }
        f(k, v).map_break(Some)
    };
    while ok {
        if let ControlFlow::Break(r) = c.walk_leaf::<FORWARD, _>(&mut inside) {
            return r;
        }
        ok = if FORWARD { c.next() } else { c.prev() };
    }
    None
}

impl<'t> Range<'t> {
    pub(crate) fn new(tree: &'t Tree, start: Bound<Bytes>, end: Bound<Bytes>) -> Self {
        Range {
            start,
            end,
            tree,
            front: None,
            back: None,
            front_ahead: 0,
            back_ahead: 0,
            front_window: Window::default(),
            back_window: Window::default(),
            long: false,
            finished: false,
        }
    }

    /// Moves both cursors over the entries the fast paths handed out past them.
    #[inline]
    fn sync(&mut self) {
        self.front_window.len = 0;
        self.back_window.len = 0;
        if self.front_ahead > 0 {
            if let Some(front) = &mut self.front {
                front.skip::<true>(self.front_ahead);
            }
            self.front_ahead = 0;
        }
        if self.back_ahead > 0 {
            if let Some(back) = &mut self.back {
                back.skip::<false>(self.back_ahead);
            }
            self.back_ahead = 0;
        }
    }

    /// The fast path of [`Iterator::next`] (`FORWARD`) and of `next_back` while the range
    /// is walked from that end only: the entry after (before) the last one handed out,
    /// straight from that end's cursor's leaf copy (see [`Cursor::peek_short`]), checked
    /// against the end (start) bound. `None` when it takes the general path (no such entry
    /// in the copy, or not a short one).
    #[inline(always)]
    fn next_short<const FORWARD: bool>(&mut self) -> Option<Option<Entry>> {
        let (cursor, other, ahead) = if FORWARD {
            (&self.front, &self.back, &mut self.front_ahead)
        } else {
            (&self.back, &self.front, &mut self.back_ahead)
        };
        if other.is_some() || self.finished {
            return None;
        }
        let (k, v) = cursor.as_ref()?.peek_short::<FORWARD>(*ahead + 1)?;
        let inside = if FORWARD {
            below(self.end.as_ref().map(Bytes::as_slice), &k)
        } else {
            above(self.start.as_ref().map(Bytes::as_slice), &k)
        };
        if inside {
            *ahead += 1;
            Some(Some((k, v)))
        } else {
            self.finished = true;
            Some(None)
        }
    }

    /// The next entry of the open window from the front (`FORWARD`) or back, if there is
    /// one and it is short (see [`Cursor::peek_short`]); `None` sends the caller down the
    /// general path, which closes the window.
    #[inline(always)]
    fn window_next<const FORWARD: bool>(&mut self) -> Option<Entry> {
        let (window, cursor, ahead) = if FORWARD {
            (&mut self.front_window, &self.front, &mut self.front_ahead)
        } else {
            (&mut self.back_window, &self.back, &mut self.back_ahead)
        };
        let a = *ahead;
        if a >= window.len {
            return None;
        }
        let index = if FORWARD {
            window.base + 1 + a
        } else {
            window.base - 1 - a
        };
        let entry = cursor.as_ref()?.short_at_memo(index, &mut window.memo)?;
        *ahead = a + 1;
        Some(entry)
    }

    /// Opens the window of the front (`FORWARD`) or back end after that end's cursor moved
    /// (see [`Window`]): over the rest of its leaf copy, if the range is walked from that
    /// end only and the copy's last (first) entry is short and inside the bound.
    #[inline]
    fn open_window<const FORWARD: bool>(&mut self) {
        let (cursor, other, ahead) = if FORWARD {
            (&self.front, &self.back, self.front_ahead)
        } else {
            (&self.back, &self.front, self.back_ahead)
        };
        if other.is_some() || self.finished || ahead != 0 {
            return;
        }
        let Some((index, count)) = cursor.as_ref().and_then(Cursor::position) else {
            return;
        };
        let len = if FORWARD { count - 1 - index } else { index };
        if len == 0 {
            return;
        }
        let inside = match (FORWARD, &self.end, &self.start) {
            (true, Bound::Unbounded, _) | (false, _, Bound::Unbounded) => true,
            _ => cursor
                .as_ref()
                .and_then(|c| c.peek_short::<FORWARD>(len))
                .is_some_and(|(k, _)| {
                    if FORWARD {
                        below(self.end.as_ref().map(Bytes::as_slice), &k)
                    } else {
                        above(self.start.as_ref().map(Bytes::as_slice), &k)
                    }
                }),
        };
        if inside {
            let window = if FORWARD {
                &mut self.front_window
            } else {
                &mut self.back_window
            };
            *window = Window {
                base: index,
                len,
                memo: Memo::default(),
            };
        }
    }

    /// The entry the front cursor moved to, if it lies before every entry the back end
    /// returned (or before the end bound).
    #[inline]
    fn front_entry(&self, moved: bool) -> Option<(&[u8], &[u8])> {
        let (k, v) = if moved {
            self.front.as_ref()?.entry()
        } else {
            None
        }?;
        let limit = match &self.back {
            Some(back) => Bound::Excluded(back.key()?),
            None => self.end.as_ref().map(Bytes::as_slice),
        };
        below(limit, k).then_some((k, v))
    }

    /// As [`front_entry`](Self::front_entry), for the back end.
    #[inline]
    fn back_entry(&self, moved: bool) -> Option<(&[u8], &[u8])> {
        let (k, v) = if moved {
            self.back.as_ref()?.entry()
        } else {
            None
        }?;
        let limit = match &self.front {
            Some(front) => Bound::Excluded(front.key()?),
            None => self.start.as_ref().map(Bytes::as_slice),
        };
        above(limit, k).then_some((k, v))
    }
}

impl Range<'_> {
    /// The next entry from the front, passed to `copy` (which copies what the caller
    /// wants of it); `None` once the range is used up.
    #[inline]
    fn next_with<T>(&mut self, copy: impl FnOnce(&[u8], &[u8]) -> T) -> Option<T> {
        if self.finished {
            return None;
        }
        self.sync();
        let moved = match &mut self.front {
            Some(front) => front.next(),
            None => {
                let front = self.front.insert(self.tree.cursor());
                seek_start(front, self.start.as_ref().map(Bytes::as_slice))
            }
        };
        match self.front_entry(moved) {
            Some((k, v)) => Some(copy(k, v)),
            None => {
                self.finished = true;
                None
            }
        }
    }

    /// As [`next_with`](Self::next_with), from the back.
    #[inline]
    fn next_back_with<T>(&mut self, copy: impl FnOnce(&[u8], &[u8]) -> T) -> Option<T> {
        if self.finished {
            return None;
        }
        self.sync();
        let moved = match &mut self.back {
            Some(back) => back.prev(),
            None => {
                let back = self.back.insert(self.tree.cursor());
                seek_end(back, self.end.as_ref().map(Bytes::as_slice))
            }
        };
        match self.back_entry(moved) {
            Some((k, v)) => Some(copy(k, v)),
            None => {
                self.finished = true;
                None
            }
        }
    }

    /// [`Iterator::next`] (`FORWARD`) or `next_back` of one half of each entry, for
    /// [`Tree::keys`] and [`Tree::values`]: an entry from the window or the cursor's copy
    /// (both halves short, built without an allocation) gives up the half `half` takes;
    /// any other entry is copied by `copy`, which copies only that half (a long value is
    /// never copied for a key). The window opens after a move as it does for a range.
    #[inline(always)]
    pub(crate) fn next_half<const FORWARD: bool, T>(
        &mut self,
        half: impl Fn(Entry) -> T,
        copy: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Option<T> {
        if let Some(entry) = self.window_next::<FORWARD>() {
            return Some(half(entry));
        }
        if self.long {
            return self.next_moved::<FORWARD, T>(copy);
        }
        self.next_half_general::<FORWARD, T>(half, copy)
    }

    /// [`next_half`](Self::next_half) outside the window: the entry after (before) the
    /// last one from the cursor's copy (`next_short`), or from the cursor's move (which may
    /// enter a leaf: the window opens over it).
    #[inline(never)]
    fn next_half_general<const FORWARD: bool, T>(
        &mut self,
        half: impl Fn(Entry) -> T,
        copy: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Option<T> {
        if !self.long {
            if let Some(entry) = self.next_short::<FORWARD>() {
                return entry.map(half);
            }
        }
        self.next_moved::<FORWARD, T>(copy)
    }

    /// The entry after (before) the last one from the cursor's move, copied by `copy`;
    /// notes whether it was [`long`](Range::long), and if not opens the window.
    #[inline]
    fn next_moved<const FORWARD: bool, T>(
        &mut self,
        copy: impl FnOnce(&[u8], &[u8]) -> T,
    ) -> Option<T> {
        let mut long = false;
        let copy = |k: &[u8], v: &[u8]| {
            long = k.len().max(v.len()) > Bytes::INLINE_CAPACITY;
            copy(k, v)
        };
        let out = if FORWARD {
            self.next_with(copy)
        } else {
            self.next_back_with(copy)
        };
        self.long = long;
        if !long {
            self.open_window::<FORWARD>();
        }
        out
    }
}

/// Copies an entry out of a cursor.
#[inline]
fn copy_entry(k: &[u8], v: &[u8]) -> Entry {
    (Bytes::copy_from_slice(k), Bytes::copy_from_slice(v))
}

impl Iterator for Range<'_> {
    type Item = Entry;

    // Small enough to inline into every loop (the window's step); the rest is one call.
    #[inline(always)]
    fn next(&mut self) -> Option<Entry> {
        match self.window_next::<true>() {
            Some(entry) => Some(entry),
            None => self.next_half_general::<true, _>(|e| e, copy_entry),
        }
    }
}

impl DoubleEndedIterator for Range<'_> {
    #[inline(always)]
    fn next_back(&mut self) -> Option<Entry> {
        match self.window_next::<false>() {
            Some(entry) => Some(entry),
            None => self.next_half_general::<false, _>(|e| e, copy_entry),
        }
    }
}

/// Once a range returned `None`, it returns `None` for good, from either end.
impl std::iter::FusedIterator for Range<'_> {}

/// A bound over borrowed bytes, copied.
pub(crate) fn owned_bound(b: Bound<&[u8]>) -> Bound<Bytes> {
    b.map(Bytes::copy_from_slice)
}

impl Tree {
    /// A double-ended iterator over the entries whose keys lie in `range`, in key order.
    ///
    /// The iterator copies one leaf at a time (optimistically, validating the leaf's
    /// version) and remembers the last key it returned, so it stays correct across
    /// concurrent splits and merges: it never returns a key twice or out of order, and
    /// returns every key that stayed in the tree for the whole scan. The entries of one
    /// leaf are handed out from its copy, each as it was when the copy was taken; a key
    /// written into that leaf after the copy (by another thread, or by the caller between
    /// two calls of `next`) may or may not be returned.
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
    /// assert_eq!(keys, [b"b", b"c"]);
    /// let (last, _) = tree.range(..).next_back().unwrap();
    /// assert_eq!(last, b"d");
    /// assert_eq!(last.into_vec(), b"d".to_vec());
    /// ```
    pub fn range(&self, range: impl KeyRange) -> Range<'_> {
        Range::new(self, owned_bound(range.start()), owned_bound(range.end()))
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
    /// assert_eq!(keys, [b"b", b"c"]);
    /// assert_eq!(tree.range_of(&b"c"[..]..).count(), 2);
    /// assert_eq!(tree.range_of(b"a".to_vec()..=b"b".to_vec()).count(), 2);
    /// ```
    pub fn range_of<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Range<'_> {
        Range::new(
            self,
            owned_bound(range.start_bound().map(K::as_ref)),
            owned_bound(range.end_bound().map(K::as_ref)),
        )
    }

    /// All entries in key order: a double-ended iterator, as [`range`](Self::range)`(..)`
    /// (also what `for (k, v) in &tree` iterates).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for (k, v) in [(b"b", b"2"), (b"a", b"1")] {
    ///     tree.insert(k, v).unwrap();
    /// }
    /// let entries: Vec<(Vec<u8>, Vec<u8>)> =
    ///     tree.iter().map(|(k, v)| (k.into_vec(), v.into_vec())).collect();
    /// assert_eq!(entries, [(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), b"2".to_vec())]);
    /// assert_eq!(tree.iter().rev().next().unwrap().0, b"b");
    /// ```
    pub fn iter(&self) -> Range<'_> {
        Range::new(self, Bound::Unbounded, Bound::Unbounded)
    }

    /// The entry with the smallest key, or `None` if the tree is empty.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert_eq!(tree.first(), None);
    /// tree.insert(b"b", b"2").unwrap();
    /// tree.insert(b"a", b"1").unwrap();
    /// assert_eq!(tree.first(), Some((b"a".to_vec(), b"1".to_vec())));
    /// ```
    pub fn first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if let Some(entry) = self.edge_entry::<false>() {
            return entry;
        }
        let mut c = self.cursor();
        c.seek_to_first();
        c.entry().map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    /// The entry with the largest key, or `None` if the tree is empty.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"b", b"2").unwrap();
    /// tree.insert(b"a", b"1").unwrap();
    /// assert_eq!(tree.last(), Some((b"b".to_vec(), b"2".to_vec())));
    /// ```
    pub fn last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if let Some(entry) = self.edge_entry::<true>() {
            return entry;
        }
        let mut c = self.cursor();
        c.seek_to_last();
        c.entry().map(|(k, v)| (k.to_vec(), v.to_vec()))
    }

    /// [`first`](Self::first) (or [`last`](Self::last) if `LAST`) as a point read: the
    /// edge leaf is reached by the point reads' descent (the rightmost leaf by the
    /// optimistic descent), its first (last) entry copied out of the page and the leaf
    /// validated, with no cursor and no copy of the leaf (callgrind, 10^6 keys: `first`
    /// 1,756 -> 928 instructions, about a `get`'s 873). The smallest key of a non-empty
    /// leftmost leaf is the tree's: the leaf holds every key up to its upper fence. `None` sends the caller to
    /// the cursor: an empty edge leaf (a removal emptied it and its merge is pending; the
    /// cursor moves on to the next leaf) and a tree that has stored a long key (whose
    /// stored form the cursor expands). Hot ranges of the side structure are merged into
    /// the tree first, as before a cursor's seek; a leaf in line mode fails the validation,
    /// which ends line mode (moving its insert segments' records into the page), and the
    /// read restarts.
    fn edge_entry<const LAST: bool>(&self) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
        let core = &*self.core;
        if core.has_long_keys() {
            return None;
        }
        core.side.note_scan();
        self.side_flush_all();
        core.retry_read(|| {
            let (node, guard) = if LAST {
                let (leaf, _) = core.optimistic_descend(Target::Rightmost(0))?;
                (leaf.node, leaf.guard)
            } else {
                core.point_leaf(&[])?
            };
            let count = node.count();
            if count == 0 {
                guard.validate()?;
                return Ok(None);
            }
            let i = if LAST { count - 1 } else { 0 };
            let mut key = Vec::new();
            node.push_key(i, &mut key)?;
            let value = node.value(i, ValueHint::NONE, core.directory())?;
            guard.validate()?;
            // Asked again after the validation: a long key inserted since the first look
            // may be the entry read (its stored form). The flag is set before a stored form
            // enters a leaf, under the latch whose version this read validated.
            if core.has_long_keys() {
                return Ok(None);
            }
            Ok(Some(Some((key, value))))
        })
    }

    /// Calls `f` with every entry whose key lies in `range`, in ascending key order, until
    /// `f` returns [`ControlFlow::Break`]; returns the value it broke with, or `None` if it
    /// visited the whole range.
    ///
    /// Keys and values are borrowed from a buffer the scan reuses: nothing is allocated per
    /// entry. No latch is held while `f` runs, so `f` may read and write the tree. Entries
    /// are seen as a [`Cursor`] sees them: each was in the tree during the scan, none twice,
    /// none that stayed in the tree skipped.
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// let tree = contree::Tree::new();
    /// for i in 0u32..100 {
    ///     tree.insert(&i.to_be_bytes(), &[i as u8]).unwrap();
    /// }
    /// // Sum the values of the first ten keys from 50 on.
    /// let (mut sum, mut n) = (0u32, 0);
    /// tree.scan(50u32.to_be_bytes().., |_k, v| {
    ///     sum += v[0] as u32;
    ///     n += 1;
    ///     if n == 10 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    /// });
    /// assert_eq!(sum, (50..60).sum::<u32>());
    /// // Find the first key whose value is divisible by 7, from 1 on.
    /// let found = tree.scan(1u32.to_be_bytes().., |k, v| {
    ///     if v[0] % 7 == 0 { ControlFlow::Break(k.to_vec()) } else { ControlFlow::Continue(()) }
    /// });
    /// assert_eq!(found, Some(7u32.to_be_bytes().to_vec()));
    /// ```
    pub fn scan<R>(
        &self,
        range: impl KeyRange,
        mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
    ) -> Option<R> {
        visit::<true, R>(self.cursor(), &range, &mut f)
    }

    /// As [`scan`](Self::scan), in descending key order.
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// let tree = contree::Tree::new();
    /// for k in [b"a", b"b", b"c", b"d"] {
    ///     tree.insert(k, b"").unwrap();
    /// }
    /// let mut keys = Vec::new();
    /// tree.scan_rev(b"b"..b"d", |k, _| {
    ///     keys.push(k.to_vec());
    ///     ControlFlow::<()>::Continue(())
    /// });
    /// assert_eq!(keys, vec![b"c".to_vec(), b"b".to_vec()]);
    /// ```
    pub fn scan_rev<R>(
        &self,
        range: impl KeyRange,
        mut f: impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
    ) -> Option<R> {
        visit::<false, R>(self.cursor(), &range, &mut f)
    }
}
