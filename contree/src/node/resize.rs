//! Splitting a node at a chosen position and merging two neighbours, with the exact sizes
//! both would produce (prefixes and fences change, so sizes are computed, not estimated).

use super::{
    append_slack, common_prefix, entry_space, long_key_len, node_prefix, node_size, prefix_cap,
    Builder, Fence, Node, NodeMut, Scratch, HEADER, SLOT,
};
use crate::sync::Restart;

impl Node {
    /// The prefix the part `range` of this node's keys would use under the given fences.
    pub(super) fn prefix_for(
        &self,
        lower: Fence,
        upper: Fence,
        range: std::ops::Range<usize>,
    ) -> Result<Vec<u8>, Restart> {
        if range.is_empty() {
            return Ok(self.prefix_between(lower, upper, None, None));
        }
        // The common prefix of the first and last keys (`node_prefix`), read in place: every
        // key carries this node's prefix, so it is that and what their suffixes share (a
        // split built both keys whole, two allocations each, ~1,800 instructions per
        // long-key split).
        let shared = self.prefix_len() + self.suffixes_common_len(range.start, range.end - 1)?;
        let len = shared.min(prefix_cap(self.page_size()));
        let mut out = Vec::with_capacity(len);
        self.push_key_start(range.start, len, &mut out)?;
        Ok(out)
    }

    /// The prefix of a node of this page size with fences `lower`, `upper` and first and
    /// last keys `first`, `last` (none: no keys).
    pub(super) fn prefix_between(
        &self,
        lower: Fence,
        upper: Fence,
        first: Option<Vec<u8>>,
        last: Option<Vec<u8>>,
    ) -> Vec<u8> {
        let len = node_prefix(
            self.page_size(),
            lower,
            upper,
            first.as_deref(),
            last.as_deref(),
        )
        .len();
        // The prefix is the start of `first` when there are keys, else of `lower`.
        match (first, last) {
            (Some(mut f), Some(_)) => {
                f.truncate(len);
                f
            }
            _ => lower.map_or(Vec::new(), |l| l[..len].to_vec()),
        }
    }

    /// The separator a split at `sep_pos` pushes up: the left half's new upper fence and the
    /// right half's lower one. An inner node pushes its key at `sep_pos` up. A leaf pushes
    /// the shortest key `t` with `key(sep_pos) <= t < key(sep_pos + 1)` (suffix truncation):
    /// the next key's bytes up to the first that differs from this key's, when that is
    /// shorter than this key; else (the last key, a key that the next extends, a long key's
    /// stored form on either side) the key itself. Shorter fences and parent entries: for
    /// random 8-byte keys a parent entry's suffix drops from about 7 bytes to about 2, so
    /// its length header takes one byte, and string keys shed most of their bytes.
    pub(crate) fn split_separator(&self, sep_pos: usize) -> Result<Vec<u8>, Restart> {
        let sep = self.key(sep_pos)?;
        if !self.is_leaf() || sep_pos + 1 >= self.count() {
            return Ok(sep);
        }
        let next = self.key(sep_pos + 1)?;
        let long = long_key_len(self.page_size());
        if sep.len() == long || next.len() == long {
            return Ok(sep);
        }
        // `next > sep` (slots are sorted; garbage under a race, which the caller validates):
        // they first differ at `cut - 1`, where `next` has the greater byte, so its first
        // `cut` bytes sort above `sep` and, a proper prefix, below `next`.
        let cut = common_prefix(&sep, &next) + 1;
        if cut < sep.len() && cut < next.len() {
            return Ok(next[..cut].to_vec());
        }
        Ok(sep)
    }

    /// The page bytes the two halves of a split at `sep_pos` would need (see
    /// [`NodeMut::split`]): headers, fences, and every entry re-encoded under its half's new
    /// prefix.
    pub(crate) fn split_sizes(&self, sep_pos: usize) -> Result<(usize, usize), Restart> {
        let count = self.count();
        let lower = self.lower_fence()?;
        let upper = self.upper_fence()?;
        let sep = self.split_separator(sep_pos)?;
        let plen = self.prefix_len();
        let left_end = if self.is_leaf() { sep_pos + 1 } else { sep_pos };
        let left_plen = self
            .prefix_for(lower.as_deref(), Some(&sep), 0..left_end)?
            .len();
        let right_plen = self
            .prefix_for(Some(&sep), upper.as_deref(), sep_pos + 1..count)?
            .len();
        let (mut left, mut right) = (0, 0);
        for i in 0..count {
            let e = self.entry(i)?;
            let full = plen + e.suffix_len;
            if i < left_end {
                left += e.space(full - left_plen.min(full));
            } else if i > sep_pos {
                right += e.space(full - right_plen.min(full));
            }
        }
        let lower_len = lower.map_or(0, |f| f.len());
        let upper_len = upper.map_or(0, |f| f.len());
        Ok((
            node_size(left_plen, lower_len + sep.len(), left),
            node_size(right_plen, sep.len() + upper_len, right),
        ))
    }

    /// Whether both halves of a split at `sep_pos` surely fit in a page, by
    /// [`split_size_bounds`](Self::split_size_bounds); `false` means "compute exactly".
    /// (The tests check the bound against [`split_sizes`](Self::split_sizes).)
    #[cfg(test)]
    pub(crate) fn split_surely_fits(&self, sep_pos: usize) -> Result<bool, Restart> {
        let size = self.page_size();
        Ok(self
            .split_size_bounds(sep_pos)?
            .is_some_and(|(l, r)| l <= size && r <= size))
    }

    /// Upper bounds of the two halves' sizes after a split at `sep_pos`, by one pass over
    /// the left half's slots instead of [`split_sizes`]' re-encoding of every entry (and
    /// copies of four keys): each half's new prefix is a common prefix of keys that carry
    /// this node's prefix, so no entry grows under it (a shorter suffix never takes a
    /// longer length header or rest), and the new prefix is at most as long as the shorter
    /// of the half's first and last key. `None` for a position that leaves the left half
    /// empty or lies past the entries.
    ///
    /// [`split_sizes`]: Self::split_sizes
    fn split_size_bounds(&self, sep_pos: usize) -> Result<Option<(usize, usize)>, Restart> {
        let count = self.count();
        let left_end = if self.is_leaf() { sep_pos + 1 } else { sep_pos };
        if left_end == 0 || sep_pos >= count {
            return Ok(None);
        }
        let plen = self.prefix_len();
        let (lower_len, upper_len) = self.fence_lens();
        if HEADER + count * SLOT > self.page_size() {
            return Err(Restart);
        }
        // The bytes of the left half's entries (slots and heap), summed over the shorter
        // side: an append split (left half all but nothing) sums none; a middle split
        // half. Every entry lies in `all`, so the other side is the difference.
        let all = count * SLOT + self.entry_heap_bytes();
        let (from, to) = if left_end <= count - left_end {
            (0, left_end)
        } else {
            (left_end, count)
        };
        let mut part = (to - from) * SLOT;
        for i in from..to {
            // SAFETY: `i < count`, and the slots of all `count` entries end inside the page
            // (checked above).
            part += self.heap_len_at(unsafe { self.slot_offset(i) })?;
        }
        let left = if from == 0 {
            part
        } else {
            all.checked_sub(part).ok_or(Restart)?
        };
        let sep = self.entry(sep_pos)?;
        let right = all
            .checked_sub(left)
            .and_then(|r| {
                // An inner node's separator entry goes up, into neither half.
                r.checked_sub(if self.is_leaf() {
                    0
                } else {
                    SLOT + sep.heap_len
                })
            })
            .ok_or(Restart)?;
        let sep_len = plen + sep.suffix_len;
        let shorter = |a: usize, b: usize| -> Result<usize, Restart> {
            Ok(plen + self.entry(a)?.suffix_len.min(self.entry(b)?.suffix_len))
        };
        let left_size = node_size(shorter(0, left_end - 1)?, lower_len + sep_len, left);
        let right_prefix = if sep_pos + 1 < count {
            shorter(sep_pos + 1, count - 1)?
        } else {
            // An empty right half (an append split) takes its fences' common prefix.
            sep_len.min(upper_len)
        };
        let right_size = node_size(right_prefix, sep_len + upper_len, right);
        Ok(Some((left_size, right_size)))
    }

    /// The split position nearest to `preferred` at which both halves fit in a page.
    /// Such a position always exists because stored values and keys are at most a quarter
    /// and a sixteenth of a page (longer values are stored out of line behind an 8-byte
    /// stub; see `Config::max_inline_value_len` and `Config::max_key_len`).
    pub(crate) fn choose_split(&self, preferred: usize) -> Result<usize, Restart> {
        let size = self.page_size();
        self.nearest_split(preferred, |_, (l, r)| l <= size && r <= size)?
            .ok_or(Restart)
    }

    /// As [`choose_split`](Self::choose_split), for a leaf split that makes room for an
    /// insert: the position nearest to `preferred` at which both halves fit and the half
    /// that takes the new key (the left one when `key_pos`, the key's lower bound in this
    /// leaf, is at most the position) keeps `room` bytes free for its entry. A middle split
    /// can leave the key's half as full as the leaf was when the entries on that side are
    /// large; the insert would then split again, and at the memory budget, where making
    /// room packs neighbours back together (`reclaim`), split the same way again. Falls
    /// back to `choose_split` when no position leaves the room.
    pub(crate) fn choose_split_with_room(
        &self,
        preferred: usize,
        key_pos: usize,
        room: usize,
    ) -> Result<usize, Restart> {
        let size = self.page_size();
        let leaves_room = |p: usize, (l, r): (usize, usize)| {
            let taker = if key_pos <= p { l } else { r };
            l <= size && r <= size && taker + room <= size
        };
        match self.nearest_split(preferred, leaves_room)? {
            Some(p) => Ok(p),
            None => self.choose_split(preferred),
        }
    }

    /// The position nearest to `preferred` (then one below, one above, and so on) whose
    /// split sizes (left, right) `accept` takes. `preferred` is tried first on the cheap
    /// upper bounds of [`split_size_bounds`](Self::split_size_bounds) (`accept` must take
    /// smaller sizes whenever it takes larger ones), the others on exact sizes.
    fn nearest_split(
        &self,
        preferred: usize,
        accept: impl Fn(usize, (usize, usize)) -> bool,
    ) -> Result<Option<usize>, Restart> {
        let count = self.count();
        if preferred < count {
            if let Some(bounds) = self.split_size_bounds(preferred)? {
                if accept(preferred, bounds) {
                    debug_assert!(
                        accept(preferred, self.split_sizes(preferred)?),
                        "the split bound holds"
                    );
                    return Ok(Some(preferred));
                }
            }
        }
        let around = (1..count).flat_map(|d| [preferred.checked_sub(d), preferred.checked_add(d)]);
        for p in std::iter::once(Some(preferred)).chain(around).flatten() {
            if p < count && accept(p, self.split_sizes(p)?) {
                return Ok(Some(p));
            }
        }
        Ok(None)
    }

    /// A lower bound of [`merged_space`](Self::merged_space) from the two nodes' entry
    /// counts and heap bytes alone: the header and every entry as it is stored now. No
    /// entry takes less in the merged node (its prefix is at most either node's, so no
    /// suffix gets shorter, and a longer suffix never takes a shorter length header or
    /// rest), and the fences, the prefix and an inner merge's separator only add.
    pub(crate) fn merged_space_at_least(left: &Node, right: &Node) -> usize {
        HEADER
            + (left.count() + right.count()) * SLOT
            + left.entry_heap_bytes()
            + right.entry_heap_bytes()
    }

    /// Space the merge of `left` into `right` would need, with `sep` being the parent key
    /// between them (inner nodes pull it down).
    pub(crate) fn merged_space(left: &Node, right: &Node, sep: &[u8]) -> Result<usize, Restart> {
        let lower = left.lower_fence()?;
        let upper = right.upper_fence()?;
        let plen = Self::merged_prefix(left, right, sep)?.len();
        let mut entries = 0;
        for n in [left, right] {
            let grow = n.prefix_len() - plen.min(n.prefix_len());
            for i in 0..n.count() {
                let e = n.entry(i)?;
                entries += e.space(e.suffix_len + grow);
            }
        }
        if !left.is_leaf() {
            entries += entry_space(sep.len() - plen, 4);
        }
        let fences = lower.map_or(0, |f| f.len()) + upper.map_or(0, |f| f.len());
        Ok(node_size(plen, fences, entries))
    }

    /// The prefix of the node that merging `left` into `right` produces.
    fn merged_prefix(left: &Node, right: &Node, sep: &[u8]) -> Result<Vec<u8>, Restart> {
        let lower = left.lower_fence()?;
        let upper = right.upper_fence()?;
        let first = if left.count() > 0 {
            Some(left.key(0)?)
        } else if !left.is_leaf() {
            Some(sep.to_vec())
        } else if right.count() > 0 {
            Some(right.key(0)?)
        } else {
            None
        };
        let last = if right.count() > 0 {
            Some(right.key(right.count() - 1)?)
        } else if !left.is_leaf() {
            Some(sep.to_vec())
        } else if left.count() > 0 {
            Some(left.key(left.count() - 1)?)
        } else {
            None
        };
        Ok(node_prefix(
            left.page_size(),
            lower.as_deref(),
            upper.as_deref(),
            first.as_deref(),
            last.as_deref(),
        )
        .to_vec())
    }
}

impl NodeMut<'_> {
    /// Splits this node at `sep_pos`: a fresh page `left` receives the lower part, this node
    /// keeps the upper part, and `sep`, the separator key the split pushes up
    /// ([`Node::split_separator`]`(sep_pos)`, which the caller computed to check that the
    /// parent has room for it), becomes the upper fence of `left` and the lower fence of
    /// this node. Leaves keep entry `sep_pos` in `left`; inner nodes move its child to
    /// `left.upper_child` and push its key up. `sep_pos` must be below `count`. Both halves
    /// start with a cleared policy area.
    pub(crate) fn split(&mut self, mut left: NodeMut<'_>, sep_pos: usize, sep: &[u8]) {
        let node = self.node();
        let count = node.count();
        assert!(sep_pos < count, "split position out of range");
        debug_assert_eq!(node.split_separator(sep_pos).ok().as_deref(), Some(sep));
        let lower = node.lower_fence().expect("writable");
        let upper = node.upper_fence().expect("writable");
        let level = node.level();
        let left_end = if level == 0 { sep_pos + 1 } else { sep_pos };
        let left_prefix = node
            .prefix_for(lower.as_deref(), Some(sep), 0..left_end)
            .expect("writable");
        let right_prefix = node
            .prefix_for(Some(sep), upper.as_deref(), sep_pos + 1..count)
            .expect("writable");
        // Left half into the fresh page: as a page copy when it keeps this node's prefix and
        // all but a few entries (an append split, which may leave `append_slack` entries on
        // the right: `smo::split`), else entry by entry. The entries left behind stay as dead
        // heap bytes; their slots' room is contiguous free space.
        let copied = level == 0
            && left_prefix.len() == node.prefix_len()
            && count - left_end <= 1 + append_slack(count)
            && left.copy_as_left_half(&node, left_end, sep, lower.as_deref(), &left_prefix);
        if !copied {
            let mut b = Builder::new(left, level, lower.as_deref(), Some(sep), &left_prefix);
            if level == 0 {
                b.copy_range(&node, 0..sep_pos + 1);
                b.finish(0);
            } else {
                b.copy_range(&node, 0..sep_pos);
                b.finish(node.child(sep_pos).expect("writable"));
            }
        }
        // Right half rebuilt in place through a scratch page.
        let mut scratch = Scratch::new(node.page_size());
        {
            let mut b = scratch.builder(level, Some(sep), upper.as_deref(), &right_prefix);
            b.copy_range(&node, sep_pos + 1..count);
            b.finish(node.upper_child());
        }
        scratch.copy_into(self);
    }

    /// Merges `left` (its left neighbour under the same parent) into this node. `sep` is the
    /// parent key between them. The caller checked that `merged_space` fits and frees `left`
    /// afterwards. The merged node starts with a cleared policy area.
    pub(crate) fn merge_from_left(&mut self, left: &Node, sep: &[u8]) {
        let node = self.node();
        let lower = left.lower_fence().expect("latched");
        let upper = node.upper_fence().expect("writable");
        let prefix = Node::merged_prefix(left, &node, sep).expect("latched");
        let level = node.level();
        let mut scratch = Scratch::new(node.page_size());
        {
            let mut b = scratch.builder(level, lower.as_deref(), upper.as_deref(), &prefix);
            b.copy_range(left, 0..left.count());
            if level != 0 {
                b.push(sep, &left.upper_child().to_ne_bytes());
            }
            b.copy_range(&node, 0..node.count());
            b.finish(node.upper_child());
        }
        scratch.copy_into(self);
    }
}
