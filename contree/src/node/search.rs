//! Search inside one node: heads first, whole suffixes only inside a run of equal heads;
//! what a search hands on (a found value's location, [`ValueHint`], and an inner node's
//! child id). Safe to run optimistically (see the module doc of `node`).

use super::{
    head_of, long_key_len, Node, HAS_LOWER, HEADER, OFF_LOWER, OFF_LOWER_LEN, OFF_UPPER,
    OFF_UPPER_LEN, SLOT,
};
use crate::long_key;
use crate::page::{Directory, PageId};
use crate::sync::Restart;
use std::cmp::Ordering;

/// Where a search that found its key read that entry's value to be: its offset and length
/// in the page, inline (not a stub). `NONE` when the search did not decode the entry's
/// length header (a long suffix); then the reader decodes it with [`Node::entry`]. Read
/// optimistically, it is garbage under a race like everything else, and whoever reads the
/// value through it checks the range against the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ValueHint(u64);

impl ValueHint {
    /// No hint.
    pub(crate) const NONE: ValueHint = ValueHint(u64::MAX);

    /// The value at `off`, `len` bytes long (both below 2^32: offsets in a page; packed in
    /// one word, so that the hint travels in a register).
    #[inline(always)]
    pub(crate) fn at(off: usize, len: usize) -> ValueHint {
        ValueHint((off as u64) << 32 | len as u64 & 0xFFFF_FFFF)
    }

    /// The value's offset and length, if hinted.
    #[inline(always)]
    pub(crate) fn get(self) -> Option<(usize, usize)> {
        (self != Self::NONE).then_some(((self.0 >> 32) as usize, self.0 as u32 as usize))
    }
}

impl Node {
    /// Compares the suffix of entry `i` with `suffix` whose head is `head`; `rest` is
    /// `rest_word(suffix)`, `long` the suffix length of a long key's stored form in this
    /// node (see [`long_key_len`]), whose blob is read through `dir` when the inline bytes
    /// tie. With an equal suffix, the entry's [`ValueHint`] when the comparison decoded its
    /// length header (short suffixes; callers that do not use it pay nothing, the function
    /// being inlined).
    #[inline(always)]
    fn cmp_entry(
        &self,
        i: usize,
        head: u32,
        suffix: &[u8],
        rest: Option<u64>,
        long: usize,
        dir: &Directory,
    ) -> Result<(Ordering, ValueHint), Restart> {
        // SAFETY: callers pass `i` below the count read in `lower_bound`.
        let h = unsafe { self.slot_head(i) };
        if h != head {
            return Ok((h.cmp(&head), ValueHint::NONE));
        }
        // SAFETY: as above.
        let off = unsafe { self.slot_offset(i) };
        if let Some(kw) = rest {
            if off + 6 <= self.page.size() {
                // Short suffixes (integer keys): the entry's length header (one byte, or two
                // for a suffix of 8 bytes or a value of 16 and more) and the four bytes after
                // it, which hold its suffix beyond the head (at most four bytes) and then
                // other bytes, masked off. Each branch loads those four bytes by itself:
                // taken from one six-byte array, they were rebuilt byte by byte in some
                // builds (~17 instructions per read, callgrind).
                // SAFETY: `off + 6 <= size`, checked above.
                let [b, v] = unsafe { self.page.array_at::<2>(off) };
                // (suffix length, rest bytes, header length, value length)
                let short = if b < 0x80 {
                    // SAFETY: `off + 1 + 4 <= off + 6 <= size`.
                    let r = u32::from_be_bytes(unsafe { self.page.array_at::<4>(off + 1) });
                    Some(((b >> 4) as usize, r, 1, (b & 0x0F) as usize))
                } else if b < 0xC0 && b & 0x3F <= 8 {
                    // SAFETY: `off + 2 + 4 <= off + 6 <= size`.
                    let r = u32::from_be_bytes(unsafe { self.page.array_at::<4>(off + 2) });
                    Some(((b & 0x3F) as usize, r, 2, v as usize))
                } else {
                    None
                };
                if let Some((len, r, h, value_len)) = short {
                    let keep = !(u64::MAX >> (8 * len.saturating_sub(4)));
                    let w = ((r as u64) << 32) & keep;
                    // Equal heads: the words beyond the heads (zero for a suffix of four
                    // bytes or fewer), then the lengths, order the suffixes.
                    let order = (w, len).cmp(&(kw, suffix.len()));
                    // A short header never flags a stub: the value is inline, after the
                    // header and the suffix's rest.
                    let at = off + h + len.saturating_sub(4);
                    return Ok((order, ValueHint::at(at, value_len)));
                }
            }
        }
        let e = self.entry(i)?;
        let order = if e.suffix_len == long {
            long_key::compare_stored(self.raw(), e.rest_off, e.suffix_len - 4, 4, suffix, dir)?
        } else if e.suffix_len < 4 || suffix.len() < 4 {
            e.suffix_len.cmp(&suffix.len())
        } else {
            self.raw()
                .compare(e.rest_off, e.suffix_len - 4, &suffix[4..])?
        };
        Ok((order, ValueHint::NONE))
    }

    /// Whether `key` lies above the lower fence (always, when there is none); a long fence
    /// is read through `dir`.
    #[inline]
    pub(crate) fn above_lower_fence(&self, key: &[u8], dir: &Directory) -> Result<bool, Restart> {
        if self.flags() & HAS_LOWER == 0 {
            return Ok(true);
        }
        Ok(self.fence_vs(OFF_LOWER, OFF_LOWER_LEN, key, dir)? == Ordering::Less)
    }

    /// The order of the fence at header fields `off_field` and `len_field` against `key`.
    #[inline]
    fn fence_vs(
        &self,
        off_field: usize,
        len_field: usize,
        key: &[u8],
        dir: &Directory,
    ) -> Result<Ordering, Restart> {
        let off = self.header_u32(off_field) as usize;
        let len = self.header_u16(len_field) as usize;
        if len == long_key_len(self.page_size()) {
            long_key::compare_stored(self.raw(), off, len, 0, key, dir)
        } else {
            self.page.compare(off, len, key)
        }
    }

    /// Whether `key` lies inside the node's fences (above the lower one, at most the upper
    /// one; a missing fence is no bound); long fences are read through `dir`.
    pub(crate) fn holds_key(&self, key: &[u8], dir: &Directory) -> Result<bool, Restart> {
        if !self.above_lower_fence(key, dir)? {
            return Ok(false);
        }
        if !self.has_upper_fence() {
            return Ok(true);
        }
        Ok(self.fence_vs(OFF_UPPER, OFF_UPPER_LEN, key, dir)? != Ordering::Less)
    }

    /// The first position whose key is `>= key`, and whether that key equals `key`.
    /// `key` must lie in the node's fence range (then it carries the node's prefix); under
    /// an optimistic race it may not, and the result is garbage but memory-safe.
    #[inline(always)]
    pub(crate) fn lower_bound(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, bool), Restart> {
        let (pos, found, _) = self.search::<true>(key, dir)?;
        Ok((pos, found))
    }

    /// [`lower_bound`](Self::lower_bound), with the found entry's [`ValueHint`].
    #[inline(always)]
    pub(crate) fn lower_bound_hinted(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, bool, ValueHint), Restart> {
        self.search::<true>(key, dir)
    }

    /// Whether `key` carries the node's prefix and sorts after every key of the node, so
    /// that [`lower_bound`](Self::lower_bound) gives `(count, false)` and
    /// `NodeMut::insert_entry_appended` may store it; false for an empty node, for a key
    /// above the keys that lacks the prefix (its insert rebuilds the node with a shorter
    /// one) and for a node whose prefix comes from its fences (the rightmost nodes, which the append
    /// finger asks, have none). Needs no fence compare: the node's keys lie above its lower
    /// fence, so a key above them does too. Safe to run optimistically.
    #[inline(always)]
    pub(crate) fn sorts_after_last(&self, key: &[u8], dir: &Directory) -> Result<bool, Restart> {
        let count = self.count();
        if count == 0 {
            return Ok(false);
        }
        let plen = self.prefix_len();
        if plen > 0 {
            if self.prefix_is_guaranteed() {
                return Ok(false);
            }
            if self.key_vs_prefix(key)? != Ordering::Equal {
                return Ok(false);
            }
        }
        let suffix = &key[plen..];
        let long = long_key_len(self.page_size()).wrapping_sub(plen);
        let (last, _) = self.cmp_entry(
            count - 1,
            head_of(suffix),
            suffix,
            rest_word(suffix),
            long,
            dir,
        )?;
        Ok(last == Ordering::Less)
    }

    /// The search of point reads ([`Tree::get`](crate::Tree::get) and its kin): the same
    /// result as [`lower_bound`](Self::lower_bound), without the append shortcut (it saves
    /// writers a search on the right edge, and would cost a read a comparison in the root),
    /// inlined at every call site. The lean descent calls it once for the root, once in its
    /// loop and once for the leaf, so that each gets branches of its own: their outcomes
    /// differ by level (the root has no fences and often a prefix taken from its keys, a
    /// leaf usually holds the key), and one shared branch would mispredict at every level
    /// change.
    #[inline(always)]
    pub(crate) fn point_search(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, bool), Restart> {
        let (pos, found, _) = self.search::<false>(key, dir)?;
        Ok((pos, found))
    }

    /// [`point_search`](Self::point_search) of a leaf, with the found entry's
    /// [`ValueHint`]: point reads copy the value from it without decoding the entry again.
    #[inline(always)]
    pub(crate) fn point_search_hinted(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, bool, ValueHint), Restart> {
        self.search::<false>(key, dir)
    }

    /// [`lower_bound`](Self::lower_bound), with the append shortcut if `APPEND`. A found key
    /// comes with its entry's [`ValueHint`] where the comparison decoded it. No prefetch of
    /// the probes' lines here: point reads prefetched their leaf (whole or its head) in the
    /// descent (`TreeCore::step_to_leaf`), and writers' searches paid 34 instructions per
    /// `append` for such prefetches (callgrind, 1165 -> 1199).
    #[inline(always)]
    fn search<const APPEND: bool>(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, bool, ValueHint), Restart> {
        self.search_in::<APPEND>(key, dir, self.count())
    }

    /// The inner node's child whose range holds `key`: its position and page id. The
    /// search of [`point_search`](Self::point_search) and [`child`](Self::child) in one,
    /// sharing the node's count (6 instructions per inner level of every descent, callgrind).
    #[inline(always)]
    pub(crate) fn point_child(
        &self,
        key: &[u8],
        dir: &Directory,
    ) -> Result<(usize, PageId), Restart> {
        let count = self.count();
        let (pos, _, _) = self.search_in::<false>(key, dir, count)?;
        Ok((pos, self.child_in(pos, count)?))
    }

    /// The child id at slot `i` of an inner node (or `upper_child` for `i == count`).
    #[inline]
    pub(crate) fn child(&self, i: usize) -> Result<PageId, Restart> {
        self.child_in(i, self.count())
    }

    /// [`child`](Self::child), for a `count` that `count()` returned.
    #[inline(always)]
    pub(crate) fn child_in(&self, i: usize, count: usize) -> Result<PageId, Restart> {
        if i >= count {
            return Ok(self.upper_child());
        }
        // The id is the entry's last four bytes: after the length header and the suffix
        // beyond its head. Only those two lengths are decoded, and one check covers the
        // read (descents run this at every inner level). An id read under a race is
        // memory-safe garbage: the descent validates the parent after using it.
        // SAFETY: `i < count`, a clamped count, so slot `i` ends inside the page.
        let off = unsafe { self.slot_offset(i) };
        if self.page.u8_at(off)? < 0x50 {
            // A one-byte length header and a suffix the head holds whole (at most four
            // bytes, as most suffix-truncated separators are): the id follows the header.
            // Its address depends on the slot's offset alone and the header's byte only
            // decides this (predicted) branch, so the id's load need not wait for the
            // header's (`bench/results/update-path-s66.txt`).
            self.page.check(off + 1, 4)?;
            // SAFETY: `off + 1 + 4 <= size`, checked above.
            return Ok(u32::from_ne_bytes(unsafe {
                self.page.array_at::<4>(off + 1)
            }));
        }
        // SAFETY: as above.
        let (rest_off, suffix_len) = unsafe { self.suffix_at(i) }?;
        let value_off = rest_off + suffix_len.saturating_sub(4);
        self.page.check(value_off, 4)?;
        // SAFETY: `value_off + 4 <= size`, checked above.
        Ok(u32::from_ne_bytes(unsafe {
            self.page.array_at::<4>(value_off)
        }))
    }

    /// Where entry `i`'s suffix beyond its head starts, and the suffix's length: only the
    /// length header is decoded (the offset is in the page; the rest's bytes are not
    /// checked).
    ///
    /// # Safety
    /// `i` is below a value `count()` returned (counts are clamped), so that slot `i` ends
    /// inside the page.
    #[inline(always)]
    unsafe fn suffix_at(&self, i: usize) -> Result<(usize, usize), Restart> {
        // SAFETY: the caller's contract.
        let off = unsafe { self.slot_offset(i) };
        let b = self.page.u8_at(off)?;
        let (h, suffix_len) = if b < 0x80 {
            (1, (b >> 4) as usize)
        } else if b < 0xC0 {
            (2, (b & 0x3F) as usize)
        } else {
            // The long form: suffix length in the two bytes after the marker.
            let mut l = [0u8; 2];
            self.page.copy_to(off + 1, &mut l)?;
            (5, u16::from_le_bytes(l) as usize)
        };
        Ok((off + h, suffix_len))
    }

    /// [`search`](Self::search) over `count` slots, a value `count()` returned.
    #[inline(always)]
    fn search_in<const APPEND: bool>(
        &self,
        key: &[u8],
        dir: &Directory,
        count: usize,
    ) -> Result<(usize, bool, ValueHint), Restart> {
        let plen = self.prefix_len();
        if plen > 0 && !self.prefix_is_guaranteed() {
            // The prefix comes from the keys; a key without it sorts before or after all of
            // them.
            match self.key_vs_prefix(key)? {
                Ordering::Equal => {}
                Ordering::Less => return Ok((0, false, ValueHint::NONE)),
                Ordering::Greater => return Ok((count, false, ValueHint::NONE)),
            }
        }
        // A key shorter than the prefix: only possible under a race or for a key outside the
        // node's fences (one check for both branches above).
        let Some(suffix) = key.get(plen..) else {
            return Err(Restart);
        };
        let head = head_of(suffix);
        // A long key's stored form has this suffix length here (`plen` is at most the
        // prefix cap, below it).
        let long = long_key_len(self.page_size()).wrapping_sub(plen);
        if count == 0 {
            return Ok((0, false, ValueHint::NONE));
        }
        // Appends (auto-increment keys) go past the last key: decide them with one
        // comparison. On the right edge of the tree nodes have no upper fence and hence no
        // prefix, so all heads of small integer keys are equal there and a search would
        // compare whole suffixes at every step.
        // Only the rightmost node of a level (no upper fence) receives them; elsewhere the
        // check would cost a comparison at every level of every descent.
        if APPEND && !self.has_upper_fence() {
            match self.cmp_entry(count - 1, head, suffix, rest_word(suffix), long, dir)? {
                (Ordering::Less, _) => return Ok((count, false, ValueHint::NONE)),
                (Ordering::Equal, hint) => return Ok((count - 1, true, hint)),
                (Ordering::Greater, _) => {}
            }
        }
        // Heads decide most comparisons: find the run of slots whose head equals the key's.
        let lo = self.first_head_at_least(head, 0, count);
        // SAFETY: `lo < count` (checked first), and `count` is a value `count()` returned,
        // so below `max_slots()`.
        if lo == count || unsafe { self.slot_head(lo) } != head {
            return Ok((lo, false, ValueHint::NONE));
        }
        let rest = rest_word(suffix);
        // SAFETY: `lo + 1 < count` here.
        if lo + 1 == count || unsafe { self.slot_head(lo + 1) } != head {
            // A run of one (most searches that get here: the key's own entry): one compare,
            // outside the loop, whose set-up cost every read ~10 instructions (callgrind).
            return Ok(match self.cmp_entry(lo, head, suffix, rest, long, dir)? {
                (Ordering::Less, _) => (lo + 1, false, ValueHint::NONE),
                (Ordering::Greater, _) => (lo, false, ValueHint::NONE),
                (Ordering::Equal, hint) => (lo, true, hint),
            });
        }
        self.search_run(lo, count, head, suffix, rest, dir)
    }

    /// The binary search of [`search_in`](Self::search_in) when the key's head begins a
    /// run of two or more slots at `lo` whose heads equal it: whole suffixes decide. Out
    /// of line, short suffixes too: random integer keys seldom come here, and their
    /// searches keep their code small (with the short-suffix loop left inline, the ruler's
    /// `insert` cost 65 instructions more).
    ///
    /// A suffix longer than eight bytes (string and long keys) is compared from where the
    /// entries bounding the search so far stop agreeing with it: the entries between two
    /// that share `n` bytes (beyond the head) with the key share them too, as the entries
    /// are sorted. Keys that share a long prefix beyond the node's (paths, URLs, composite
    /// keys) make such runs long, and whole-suffix comparisons dominated their searches.
    #[inline(never)]
    fn search_run(
        &self,
        mut lo: usize,
        count: usize,
        head: u32,
        suffix: &[u8],
        rest: Option<u64>,
        dir: &Directory,
    ) -> Result<(usize, bool, ValueHint), Restart> {
        // A long key's stored form has this suffix length here (see `search_in`).
        let long = long_key_len(self.page_size()).wrapping_sub(self.prefix_len());
        let mut hi = if head == u32::MAX {
            count
        } else {
            self.first_head_at_least(head + 1, lo + 1, count)
        };
        if rest.is_some() {
            // A short suffix: each comparison is a word's.
            while lo < hi {
                let mid = (lo + hi) / 2;
                match self.cmp_entry(mid, head, suffix, rest, long, dir)? {
                    (Ordering::Less, _) => lo = mid + 1,
                    (Ordering::Greater, _) => hi = mid,
                    (Ordering::Equal, hint) => return Ok((mid, true, hint)),
                }
            }
            return Ok((lo, false, ValueHint::NONE));
        }
        // Bytes of the key's rest (its suffix beyond the head) known to equal the rest of
        // the entry below `lo` and of the entry at `hi`; none known before a comparison.
        let (mut below, mut above) = (0, 0);
        let rest = suffix.get(4..).unwrap_or_default();
        while lo < hi {
            let mid = (lo + hi) / 2;
            // SAFETY: `mid < hi <= count`, a value `count()` returned.
            let (rest_off, suffix_len) = unsafe { self.suffix_at(mid) }?;
            let (order, common) = if suffix_len == long {
                let order =
                    long_key::compare_stored(self.raw(), rest_off, suffix_len - 4, 4, suffix, dir)?;
                (order, 0)
            } else if suffix_len < 4 {
                (suffix_len.cmp(&suffix.len()), 0)
            } else {
                self.raw()
                    .compare_from(rest_off, suffix_len - 4, rest, below.min(above))?
            };
            match order {
                Ordering::Less => (lo, below) = (mid + 1, common),
                Ordering::Greater => (hi, above) = (mid, common),
                Ordering::Equal => return Ok((mid, true, ValueHint::NONE)),
            }
        }
        Ok((lo, false, ValueHint::NONE))
    }

    /// The first slot in `from..to` whose head is `>= head` (branch-free binary search);
    /// `to` is at most a value `count()` returned.
    ///
    /// The first probe leaves a power of two of candidates, `span(to - from)`; every later
    /// probe halves them, two probes per trip of the loop. So the loop's trip count depends
    /// only on the bit length of `to - from` (nodes of one level mostly share it), and it is
    /// short enough for its exit to predict.
    ///
    /// The candidates' base and the step are byte offsets into the page, so that a probe's
    /// chain of dependent operations is an add, the load and a conditional move: with an
    /// index, scaling it by the slot size put one more step on the chain of every probe
    /// (reads of a hot set of 50 keys 5-8% faster, `bench/results/search-chain-s58.txt`).
    #[inline]
    pub(super) fn first_head_at_least(&self, head: u32, from: usize, to: usize) -> usize {
        if from >= to {
            return to;
        }
        let n = to - from;
        // Candidates are `base..=base + left` in slots (`to` stands for "none"): slots
        // before `base` hold smaller heads. A probe at `base + step` with
        // `step <= left - step` keeps that: either the answer lies above the probe (`base`
        // moves there, `left - step` remain) or at or below it (`step <= left - step`
        // remain above `base`). `at` is the byte offset of `base`'s slot in the page.
        let p = span(n);
        let probe = |at: usize, step: usize| {
            // SAFETY: in slots, `base + step <= base + left - 1 < to <= count`: the
            // invariant keeps `base + left <= to`, and every step is below `left` (for
            // `n == 1`, `p == 1` and the first step is 0). So the slot at byte offset
            // `at + step` ends inside the page.
            let h = unsafe { self.page.u32_at(at + step) };
            // A data-dependent choice the CPU cannot predict: a conditional move, not a
            // branch.
            std::hint::select_unpredictable(h < head, at + step, at)
        };
        let mut at = probe(HEADER + from * SLOT, (n - p) * SLOT);
        if p >= TAIL {
            // Binary probes until `TAIL` candidates are left, then one count over them.
            let mut step = p / 2 * SLOT;
            while step >= 2 * TAIL * SLOT {
                at = probe(at, step);
                at = probe(at, step / 2);
                step /= 4;
            }
            if step == TAIL * SLOT {
                at = probe(at, step);
            }
            // The answer is the first of the `TAIL` slots from `at` whose head is not
            // smaller, or the slot after them: as the heads are sorted, `at` plus the number
            // of smaller heads among them. Their loads do not wait for each other, where
            // the binary search's last two probes and its final check were a chain of three
            // (hot-set reads ~10% faster at the same instruction count; 8 candidates cost
            // 34 instructions per read more for little more, 16 were slower:
            // `bench/results/search-chain-s58.txt`).
            let mut smaller = 0;
            for k in 0..TAIL {
                // SAFETY: the `TAIL` candidates `base..base + TAIL` lie below
                // `base + left <= to <= count`, so their slots end inside the page.
                smaller += (unsafe { self.page.u32_at(at + k * SLOT) } < head) as usize;
            }
            return (at - HEADER) / SLOT + smaller;
        }
        // The step in bytes: `SLOT` times a power of two, halved exactly down to `SLOT`.
        let mut step = p / 2 * SLOT;
        while step >= 2 * SLOT {
            at = probe(at, step);
            at = probe(at, step / 2);
            step /= 4;
        }
        if step == SLOT {
            at = probe(at, SLOT);
        }
        // SAFETY: one candidate is left: its slot lies below `to <= count`.
        (at - HEADER) / SLOT + (unsafe { self.page.u32_at(at) } < head) as usize
    }
}

/// Candidates left when [`Node::first_head_at_least`] stops probing and counts.
const TAIL: usize = 4;

/// For a key suffix of at most 8 bytes, its bytes beyond the head as a left-aligned
/// big-endian word (see [`Node::cmp_entry`]); `None` for a longer one.
///
/// One load: the suffix's last four bytes hold its rest (the last `n - 4` of them), and two
/// shifts move those to the top (for `n == 4` both shift everything out). `be_word` of the
/// rest took about 25 instructions per point read (callgrind).
#[inline]
fn rest_word(suffix: &[u8]) -> Option<u64> {
    let n = suffix.len();
    if n > 8 {
        return None;
    }
    let Some(last) = suffix.last_chunk::<4>() else {
        // A suffix of at most four bytes is all head.
        return Some(0);
    };
    Some(((u32::from_be_bytes(*last) as u64) << 32) << (8 * (8 - n)))
}

/// The largest power of two below `n`, or 1 for `n <= 2`: the candidates that the first
/// probe of [`Node::first_head_at_least`] over `n` slots leaves.
#[inline(always)]
fn span(n: usize) -> usize {
    1 << (usize::BITS - 1 - ((n.wrapping_sub(1)) | 1).leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::rest_word;
    use crate::node::raw::be_word;

    /// `rest_word` is the suffix's bytes beyond the head as `be_word` makes them, for every
    /// suffix length up to 8, and `None` beyond.
    #[test]
    fn rest_word_is_the_rest_as_a_word() {
        let bytes: Vec<u8> = (1..=12).map(|b| b * 17).collect();
        for n in 0..=12 {
            let suffix = &bytes[..n];
            let want = (n <= 8).then(|| be_word(&suffix[n.min(4)..]));
            assert_eq!(rest_word(suffix), want, "length {n}");
        }
    }
}
