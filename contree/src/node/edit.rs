//! Writes to one node: formatting, inserting and removing entries, compaction and prefix
//! shortening. Every function here needs a [`NodeMut`], that is a write capability.

use super::Layout;
use super::{
    common_prefix, head_of, lens_len, node_size, stored_entry_space, Fence, Node, NodeMut, Scratch,
    HAS_LOWER, HAS_UPPER, HEADER, LAYOUT_SHIFT, OFF_COUNT, OFF_FLAGS, OFF_HEAP_LIVE, OFF_HEAP_TOP,
    OFF_LEVEL, OFF_LOWER, OFF_LOWER_LEN, OFF_PREFIX, OFF_PREFIX_LEN, OFF_UPPER, OFF_UPPER_LEN,
    POLICY_AREA, PREFIX_FROM_KEYS, SLOT, STUB_MARK,
};
use crate::sync::Restart;

impl Node {
    /// Space an insert of a key of `key_len` bytes that carries the node prefix needs, with
    /// a stored value of `value_len` bytes (a stub if `stub`).
    pub(crate) fn space_needed(&self, key_len: usize, value_len: usize, stub: bool) -> usize {
        stored_entry_space(key_len.saturating_sub(self.prefix_len()), value_len, stub)
    }

    /// Whether `key` and an inline value of `value_len` bytes can be inserted.
    pub(crate) fn fits(&self, key: &[u8], value_len: usize) -> Result<bool, Restart> {
        self.fits_stored(key, value_len, false)
    }

    /// Whether `key` and a stored value of `value_len` bytes (a stub if `stub`) can be
    /// inserted, possibly after compaction or (in an edge node) after shortening the prefix.
    fn fits_stored(&self, key: &[u8], value_len: usize, stub: bool) -> Result<bool, Restart> {
        let prefix = self.prefix()?;
        if key.starts_with(&prefix) {
            return Ok(self.space_needed(key.len(), value_len, stub) <= self.free_space());
        }
        let keep = self.shortened_prefix_len(&prefix, key);
        Ok(
            self.reprefixed_size(keep)? + stored_entry_space(key.len() - keep, value_len, stub)
                <= self.page_size(),
        )
    }

    /// The prefix length a node whose prefix is `prefix` takes on to receive `key`, which
    /// lacks it: their common prefix, one byte shorter on an edge of the tree (a node
    /// missing a fence), where keys arrive in order (appends, prepends) and a prefix that
    /// just fits the keys present would have to be cut again as soon as the key's last
    /// differing byte carries over (every 256 dense integer keys; see [`edge_prefix_len`]).
    fn shortened_prefix_len(&self, prefix: &[u8], key: &[u8]) -> usize {
        let keep = common_prefix(prefix, key);
        if self.is_edge() {
            keep.saturating_sub(EDGE_SLACK)
        } else {
            keep
        }
    }

    /// Bytes the node would use with its prefix shortened to `new_len` bytes.
    fn reprefixed_size(&self, new_len: usize) -> Result<usize, Restart> {
        let grow = self.prefix_len() - new_len.min(self.prefix_len());
        let fences =
            self.lower_fence()?.map_or(0, |f| f.len()) + self.upper_fence()?.map_or(0, |f| f.len());
        let mut entries = 0;
        for i in 0..self.count() {
            let e = self.entry(i)?;
            entries += e.space(e.suffix_len + grow);
        }
        Ok(node_size(new_len, fences, entries))
    }
}

/// Copies `src` into `dst` (of the same length) with at most two word moves per copy of up
/// to 16 bytes, where `copy_from_slice` calls the C library's `memcpy` for any length not
/// known at compile time (most key rests and values are short). The second move of each
/// case overlaps the first: it writes the same bytes again.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    assert_eq!(dst.len(), n, "a copy between slices of one length");
    if n > 16 {
        dst.copy_from_slice(src);
    } else if n >= 8 {
        dst[..8].copy_from_slice(&src[..8]);
        dst[n - 8..].copy_from_slice(&src[n - 8..]);
    } else if n >= 4 {
        dst[..4].copy_from_slice(&src[..4]);
        dst[n - 4..].copy_from_slice(&src[n - 4..]);
    } else if n > 0 {
        dst[0] = src[0];
        dst[n / 2] = src[n / 2];
        dst[n - 1] = src[n - 1];
    }
}

/// Encodes the length header of an entry with a suffix of `sl` bytes and a value (a stub if
/// `stub`) of `vl` bytes into `header`, which is `lens_len(sl, vl, stub)` bytes long.
#[inline(always)]
fn lens_into(header: &mut [u8], sl: usize, vl: usize, stub: bool) {
    match header.len() {
        1 => header[0] = ((sl << 4) | vl) as u8,
        2 => {
            header[0] = 0x80 | sl as u8;
            header[1] = vl as u8;
        }
        _ => {
            header[0] = if stub { 0xC0 | STUB_MARK } else { 0xC0 };
            header[1..3].copy_from_slice(&(sl as u16).to_le_bytes());
            header[3..5].copy_from_slice(&(vl as u16).to_le_bytes());
        }
    }
}

/// How many bytes a prefix that keys (not fences) decide is kept short of them on an edge
/// of the tree. One byte turns a prefix rebuild every 256 dense appends into one every
/// 65,536 for one byte more per entry in the two edge nodes of each level.
const EDGE_SLACK: usize = 1;

/// The prefix length (of `key`) an empty node with these fences adopts for its first key,
/// `key`: the whole key inside the tree, where later keys shorten it if they must; on an edge
/// (a fence missing) the common prefix of `key` and the fence it has, less [`EDGE_SLACK`],
/// so that in-order keys (appends after a split at the node's end) keep it for long.
fn edge_prefix_len(lower: Fence, upper: Fence, key: &[u8]) -> usize {
    match (lower, upper) {
        (Some(_), Some(_)) => key.len(),
        (Some(f), None) | (None, Some(f)) => common_prefix(f, key).saturating_sub(EDGE_SLACK),
        (None, None) => key.len().saturating_sub(EDGE_SLACK),
    }
}

/// Whether every key between the fences carries `prefix`, so that a search need not check
/// it (else the node is flagged `PREFIX_FROM_KEYS`): every key in `(l, u]` starts with the
/// fences' common prefix, so with any prefix of it.
fn prefix_guaranteed(lower: Fence, upper: Fence, prefix: &[u8]) -> bool {
    match (lower, upper) {
        (Some(l), Some(u)) => common_prefix(l, u) >= prefix.len() && l.starts_with(prefix),
        _ => prefix.is_empty(),
    }
}

impl NodeMut<'_> {
    /// Formats the page as an empty slotted node whose keys will all start with `prefix`.
    /// The policy area is cleared.
    pub(crate) fn init(&mut self, level: u16, lower: Fence, upper: Fence, prefix: &[u8]) {
        let size = self.page_size();
        let prefix = &prefix[..prefix.len().min(super::prefix_cap(size))];
        self.bytes_mut(8, HEADER - 8).fill(0);
        self.write_u16(OFF_LEVEL, level);
        self.write_u32(OFF_HEAP_TOP, size as u32);
        let mut flags = (Layout::Slotted as u16) << LAYOUT_SHIFT;
        if let Some(l) = lower {
            let off = self.heap_alloc(l.len());
            self.bytes_mut(off, l.len()).copy_from_slice(l);
            self.write_u32(OFF_LOWER, off as u32);
            self.write_u16(OFF_LOWER_LEN, l.len() as u16);
            flags |= HAS_LOWER;
        }
        if let Some(u) = upper {
            let off = self.heap_alloc(u.len());
            self.bytes_mut(off, u.len()).copy_from_slice(u);
            self.write_u32(OFF_UPPER, off as u32);
            self.write_u16(OFF_UPPER_LEN, u.len() as u16);
            flags |= HAS_UPPER;
        }
        if !prefix_guaranteed(lower, upper, prefix) {
            flags |= PREFIX_FROM_KEYS;
        }
        self.write_u16(OFF_FLAGS, flags);
        if !prefix.is_empty() {
            let off = self.heap_alloc(prefix.len());
            self.bytes_mut(off, prefix.len()).copy_from_slice(prefix);
            self.write_u32(OFF_PREFIX, off as u32);
        }
        self.write_u16(OFF_PREFIX_LEN, prefix.len() as u16);
    }

    fn heap_alloc(&mut self, len: usize) -> usize {
        let top = self.heap_top() - len;
        self.write_u32(OFF_HEAP_TOP, top as u32);
        let live = self.heap_live() + len;
        self.write_u32(OFF_HEAP_LIVE, live as u32);
        top
    }

    /// Makes this fresh page the left half of a split of the leaf `src` that keeps entries
    /// `0..keep` under `src`'s own prefix, with `sep` as the new upper fence: a copy of
    /// `src`'s header, first `keep` slots and heap (the other entries' bytes stay behind as
    /// dead heap bytes), then the fence. Costs a page copy instead of re-encoding every
    /// entry: the append split, where the left half keeps (almost) all of them. Returns
    /// false, writing nothing, when the heap has no contiguous room for the fence. The
    /// policy area starts cleared, as after `init`.
    /// `lower` is `src`'s lower fence and `prefix` its prefix (the split has both at hand).
    pub(super) fn copy_as_left_half(
        &mut self,
        src: &Node,
        keep: usize,
        sep: &[u8],
        lower: Fence,
        prefix: &[u8],
    ) -> bool {
        let count = src.count();
        let size = src.page_size();
        let slots_end = HEADER + keep * SLOT;
        let heap_top = src.heap_top();
        if keep > count || slots_end + sep.len() > heap_top || heap_top > size {
            return false;
        }
        let mut dead = src.upper_fence().expect("latched").map_or(0, |u| u.len());
        for i in keep..count {
            dead += src.entry(i).expect("latched").heap_len;
        }
        self.copy_heap_from(src, 8, 8, slots_end - 8);
        self.copy_heap_from(src, heap_top, heap_top, size - heap_top);
        self.set_count(keep);
        self.set_heap(heap_top, src.heap_live() - dead);
        let off = self.heap_alloc(sep.len());
        self.bytes_mut(off, sep.len()).copy_from_slice(sep);
        self.write_u32(OFF_UPPER, off as u32);
        self.write_u16(OFF_UPPER_LEN, sep.len() as u16);
        // The flags `init` would set for these fences and this prefix.
        let mut flags = self.flags() | HAS_UPPER;
        if prefix_guaranteed(lower, Some(sep), prefix) {
            flags &= !PREFIX_FROM_KEYS;
        } else {
            flags |= PREFIX_FROM_KEYS;
        }
        self.write_u16(OFF_FLAGS, flags);
        self.set_policy_area([0; POLICY_AREA]);
        true
    }

    pub(super) fn set_count(&mut self, n: usize) {
        self.write_u16(OFF_COUNT, n as u16);
    }

    pub(super) fn set_heap(&mut self, top: usize, live: usize) {
        self.write_u32(OFF_HEAP_TOP, top as u32);
        self.write_u32(OFF_HEAP_LIVE, live as u32);
    }

    pub(super) fn write_slot(&mut self, i: usize, head: u32, off: usize) {
        let slot = self.bytes_mut(HEADER + i * SLOT, SLOT);
        slot[..4].copy_from_slice(&head.to_ne_bytes());
        slot[4..].copy_from_slice(&(off as u16).to_ne_bytes());
    }

    /// [`insert_at`](NodeMut::insert_at) for the tree's inserts: an empty edge node first
    /// adopts the key as its prefix (later keys shorten it), so that the root and the edge
    /// nodes get a prefix too.
    pub(crate) fn insert_entry(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        self.insert_stored_as::<false, false>(pos, key, value)
    }

    /// [`insert_entry`](NodeMut::insert_entry) at the end (`pos` is the count) of a
    /// non-empty node, of a key that carries the node's prefix and sorts after every key,
    /// as the append finger's look found ([`Node::sorts_after_last`]): neither an empty
    /// node's new prefix nor the prefix compare applies (the look compared it; again here it
    /// cost an append ~20 instructions, callgrind).
    pub(crate) fn insert_entry_appended(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        self.insert_stored_as::<false, true>(pos, key, value)
    }

    /// [`insert_entry`](NodeMut::insert_entry) of a stored value: the stub of an
    /// out-of-line value if `stub`.
    #[inline]
    pub(crate) fn insert_stored(
        &mut self,
        pos: usize,
        key: &[u8],
        value: &[u8],
        stub: bool,
    ) -> bool {
        if stub {
            self.insert_stored_as::<true, false>(pos, key, value)
        } else {
            self.insert_stored_as::<false, false>(pos, key, value)
        }
    }

    /// [`insert_stored`](NodeMut::insert_stored) with the form known at compile time, so
    /// that the inline inserts pay nothing for stubs; `APPENDED` as for
    /// [`insert_entry_appended`](Self::insert_entry_appended) (a copy of its own: the flag
    /// passed at run time cost random inserts ~15 instructions, callgrind).
    fn insert_stored_as<const STUB: bool, const APPENDED: bool>(
        &mut self,
        pos: usize,
        key: &[u8],
        value: &[u8],
    ) -> bool {
        if APPENDED {
            debug_assert!(pos == self.count() && pos > 0, "an append to an empty node");
            debug_assert_eq!(
                self.key_vs_prefix(key),
                Ok(std::cmp::Ordering::Equal),
                "an append without the node's prefix"
            );
            return self.insert_suffix_at(pos, &key[self.prefix_len()..], value, STUB);
        }
        if self.count() == 0 {
            self.reprefix_empty(key);
        }
        self.insert_at_stored::<STUB>(pos, key, value)
    }

    /// Before the first entry of an empty node: gives the node the prefix its fences and
    /// `key` allow (an edge node's is bounded: see `edge_prefix_len`), unless it has
    /// `key` itself as its prefix.
    #[cold]
    #[inline(never)]
    fn reprefix_empty(&mut self, key: &[u8]) {
        if self.prefix().expect("writable") == key {
            return;
        }
        let lower = self.lower_fence().expect("writable");
        let upper = self.upper_fence().expect("writable");
        let upper_child = self.upper_child();
        let policy = self.policy_area();
        let len = edge_prefix_len(lower.as_deref(), upper.as_deref(), key);
        self.init(
            self.level(),
            lower.as_deref(),
            upper.as_deref(),
            &key[..len],
        );
        self.set_upper_child(upper_child);
        self.set_policy_area(policy);
    }

    /// Inserts `key`/`value` at `pos` (which must keep the order). Returns false, changing
    /// nothing, if the entry does not fit even after compaction. In an edge node, a key that
    /// does not carry the prefix makes the node rebuild itself with the common prefix of the
    /// old prefix and the key.
    #[cfg(test)]
    pub(crate) fn insert_at(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        self.insert_at_stored::<false>(pos, key, value)
    }

    #[inline(always)]
    fn insert_at_stored<const STUB: bool>(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        let plen = self.prefix_len();
        // A prefix the fences guarantee is carried by every key in the node's range, as the
        // key to insert is (the writer's descent or search found this node for it): only a
        // prefix taken from the keys is compared (the search compared it too; again here it
        // cost every insert into an inner leaf ~14 instructions, callgrind).
        if plen > 0
            && !self.prefix_is_guaranteed()
            && self.key_vs_prefix(key) != Ok(std::cmp::Ordering::Equal)
        {
            return self.insert_reprefixed::<STUB>(pos, key, value);
        }
        debug_assert_eq!(
            self.key_vs_prefix(key),
            Ok(std::cmp::Ordering::Equal),
            "a key outside the node's fences"
        );
        self.insert_suffix_at(pos, &key[plen..], value, STUB)
    }

    /// [`insert_at_stored`](Self::insert_at_stored) of a key without the node's prefix (an
    /// edge node's, which its keys decide): the node is rebuilt with the prefix it shares
    /// with `key` first.
    #[cold]
    #[inline(never)]
    fn insert_reprefixed<const STUB: bool>(
        &mut self,
        pos: usize,
        key: &[u8],
        value: &[u8],
    ) -> bool {
        assert!(
            !self.prefix_is_guaranteed(),
            "key outside the node's fences"
        );
        if !self.fits_stored(key, value.len(), STUB).expect("writable") {
            return false;
        }
        let new_len = self.shortened_prefix_len(&self.prefix().expect("writable"), key);
        self.rebuild_with_prefix_len(new_len);
        self.insert_suffix_at(pos, &key[self.prefix_len()..], value, STUB)
    }

    /// Writes the entry of `suffix` (the key less the node's prefix) at `pos`, compacting
    /// the heap first when its free bytes are not contiguous; false, writing nothing, when
    /// the node has no room. The length header is sized once, and the header, suffix rest
    /// and value are written into one checked slice of the heap (the common insert: every
    /// write of a separate bounds-checked field cost about 60 instructions, callgrind
    /// `append`).
    #[inline(always)]
    fn insert_suffix_at(&mut self, pos: usize, suffix: &[u8], value: &[u8], stub: bool) -> bool {
        let count = self.count();
        let h = lens_len(suffix.len(), value.len(), stub);
        let rest = &suffix[suffix.len().min(4)..];
        let heap_len = h + rest.len() + value.len();
        let slots_end = HEADER + (count + 1) * SLOT;
        if self.heap_top() < slots_end + heap_len {
            // No contiguous room: room after a compaction, or none.
            if SLOT + heap_len > self.free_space() {
                return false;
            }
            self.compact();
        }
        let off = self.heap_alloc(heap_len);
        let e = self.bytes_mut(off, heap_len);
        let (header, e) = e.split_at_mut(h);
        let (rest_bytes, value_bytes) = e.split_at_mut(rest.len());
        lens_into(header, suffix.len(), value.len(), stub);
        copy_short(rest_bytes, rest);
        copy_short(value_bytes, value);
        // Shift slots [pos, count) right by one (nothing to shift for an append).
        if pos < count {
            let start = HEADER + pos * SLOT;
            let end = HEADER + count * SLOT;
            self.bytes_mut(start, end - start + SLOT)
                .copy_within(0..end - start, SLOT);
        }
        self.write_slot(pos, head_of(suffix), off);
        self.set_count(count + 1);
        true
    }

    /// Encodes the heap entry of `suffix`/`value` (a stub if `stub`) at `off`.
    #[inline(always)]
    pub(super) fn write_entry(&mut self, off: usize, suffix: &[u8], value: &[u8], stub: bool) {
        let mut w = off + self.write_lens(off, suffix.len(), value.len(), stub);
        let rest = &suffix[suffix.len().min(4)..];
        copy_short(self.bytes_mut(w, rest.len()), rest);
        w += rest.len();
        copy_short(self.bytes_mut(w, value.len()), value);
    }

    /// Writes the length header of an entry at `off` (flagging a stub if `stub`); returns
    /// its length. The rest of the suffix and the value follow it.
    #[inline(always)]
    pub(super) fn write_lens(&mut self, off: usize, sl: usize, vl: usize, stub: bool) -> usize {
        let h = lens_len(sl, vl, stub);
        lens_into(self.bytes_mut(off, h), sl, vl, stub);
        h
    }

    /// Copies `len` heap bytes at `src_off` of `src`, another page, to `off` in this node.
    #[inline]
    pub(super) fn copy_heap_from(&mut self, src: &Node, src_off: usize, off: usize, len: usize) {
        assert!(
            src.raw().addr() != self.raw().addr(),
            "a heap copy between two distinct pages"
        );
        let dst = self.bytes_mut(off, len);
        src.raw()
            .copy_to(src_off, dst)
            .expect("entry of a readable node");
    }

    /// Replaces the value of entry `pos` by one of the same length.
    pub(crate) fn overwrite_value(&mut self, pos: usize, value: &[u8]) {
        copy_short(self.value_mut(pos), value);
    }

    /// Removes entry `pos`.
    pub(crate) fn remove_at(&mut self, pos: usize) {
        let count = self.count();
        let e = self.entry(pos).expect("entry of a writable node");
        let live = self.heap_live() - e.heap_len;
        self.write_u32(OFF_HEAP_LIVE, live as u32);
        let start = HEADER + pos * SLOT;
        let end = HEADER + count * SLOT;
        self.bytes_mut(start, end - start)
            .copy_within(SLOT..end - start, 0);
        self.set_count(count - 1);
        if count == 1 {
            // An empty node reclaims its whole heap except the fences.
            self.compact();
        }
    }

    /// Cuts an edge node's prefix to what an empty edge node adopts for its first key
    /// ([`edge_prefix_len`]) where that is shorter and the entries still fit; does nothing
    /// inside the tree. For the rightmost half of a split that left it a few entries
    /// (`smo::split`): with the prefix those dense keys share, the next appends lacked it
    /// within 256 keys and rebuilt the leaf under its latch.
    pub(crate) fn shorten_edge_prefix(&mut self) {
        if !self.is_edge() || self.count() == 0 {
            return;
        }
        let (Ok(lower), Ok(upper), Ok(first)) =
            (self.lower_fence(), self.upper_fence(), self.key(0))
        else {
            return;
        };
        let len = edge_prefix_len(lower.as_deref(), upper.as_deref(), &first);
        if len < self.prefix_len()
            && self
                .reprefixed_size(len)
                .is_ok_and(|size| size <= self.page_size())
        {
            self.rebuild_with_prefix_len(len);
        }
    }

    /// Rewrites the node so that all free space is contiguous.
    pub(crate) fn compact(&mut self) {
        self.rebuild_with_prefix_len(self.prefix_len());
    }

    /// Rewrites the node with its prefix cut to `new_len` bytes (at most the current
    /// length); all free space ends up contiguous. The policy area is kept.
    fn rebuild_with_prefix_len(&mut self, new_len: usize) {
        let node = self.node();
        let mut scratch = Scratch::new(node.page_size());
        let lower = node.lower_fence().expect("writable");
        let upper = node.upper_fence().expect("writable");
        let mut prefix = node.prefix().expect("writable");
        prefix.truncate(new_len);
        {
            let mut b = scratch.builder(node.level(), lower.as_deref(), upper.as_deref(), &prefix);
            b.copy_range(&node, 0..node.count());
            b.finish(node.upper_child());
        }
        let policy = node.policy_area();
        scratch.copy_into(self);
        self.set_policy_area(policy);
    }
}
