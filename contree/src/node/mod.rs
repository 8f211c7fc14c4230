//! The slotted page: the byte layout of every node, leaf or inner, and the typed views that
//! read and write it.
//!
//! ```text
//! 0   latch word (8 bytes, owned by `sync::latch`, never touched here)
//! 8   level u16 (0 = leaf)        10  count u16
//! 12  heap_top u32                16  heap_live u32 (live heap bytes, fences included)
//! 20  prefix_len u16              22  lower_len u16      24  upper_len u16
//! 26  flags u16 (HAS_LOWER, HAS_UPPER, PREFIX_FROM_KEYS; bits 8..12: the layout)
//! 28  lower_off u32               32  upper_off u32      36  upper_child u32 (inner)
//! 40  prefix_off u32
//! 44  policy area, 20 bytes: opaque here, owned by `policy` (the leaf policies' state)
//! 64  slot array: `count` slots of 6 bytes { head: u32, offset: u16 }, sorted by key
//! ... free space ...
//! heap_top .. page_size: entries and fence keys, growing down from the end of the page
//! ```
//!
//! A node holds the keys in `(lower fence, upper fence]`; a missing fence is infinite. All
//! keys of a node share a prefix that is stored once in the heap and cut from every key: the
//! common prefix of its first and last key when it is built (split, merge, compaction), or
//! the first key an empty node receives. When that prefix is longer than the common prefix
//! of the fences (always so on the edges of the tree, where a fence is missing) the node is
//! flagged `PREFIX_FROM_KEYS`: a key in its range may lack the prefix, searches check for
//! that, and inserting such a key rebuilds the node with a shorter prefix. A slot's `head` is
//! the first four bytes of the key's suffix, big-endian and zero-padded, so most comparisons
//! of a binary search never leave the slot array. A heap entry is `lengths suffix[4..] value`,
//! where `lengths` takes one byte for short suffixes and values (see [`entry_space`]). A
//! value over the inline limit is stored out of line (`crate::blob`): the entry holds an
//! 8-byte stub in its place, flagged in the long `lengths` header (see [`lens_len`]).
//!
//! Inner nodes store child page ids as 4-byte values: the child at slot `i` holds the keys
//! in `(key[i-1], key[i]]` and `upper_child` holds the keys above the last key.
//!
//! **Layouts.** Every node today has the slotted layout ([`Layout::Slotted`]); the layout is
//! a field of the header so that a second leaf layout (segmented leaves) can be added behind
//! the same views: a reader that finds a layout it does not know restarts.
//!
//! **Views and the memory model.**
//! * [`Node`] is a `Copy` read view. It reads only through [`raw::RawPage`], which copies
//!   bytes into locals through raw pointers and never forms a reference over page bytes, and
//!   it bounds-checks every offset and length it read from the page. So it may be used
//!   optimistically, while a writer changes the page: every result is then garbage but
//!   memory-safe, and the caller validates the latch version before trusting it.
//!   Everything it returns is a copy (`Vec<u8>`, integers, orderings).
//! * [`NodeMut`] writes. It can only be made from a write capability ([`WriteCapability`]):
//!   an exclusive latch guard of that very page, an [`OwnerToken`] (a thread that owns a
//!   sub-tree exclusively, for the partition executor), or a [`Scratch`] buffer. Segmented
//!   leaves will add a segment guard that covers one segment. Under a `NodeMut`, values can
//!   be borrowed as slices, since no other thread writes the page.

mod builder;
mod capability;
pub(crate) use capability::{NodeMut, OwnerToken, WriteCapability};
mod edit;
mod export;
mod leaf_copy;
pub(crate) mod pagebuf;
pub(crate) mod raw;
mod reshape;
mod resize;
mod search;
pub(crate) use search::ValueHint;
mod short_form;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_resize;

pub(crate) use builder::{Builder, Scratch};
pub(crate) use leaf_copy::{LeafCopy, Place};
pub(crate) use reshape::Extra;
pub(crate) use short_form::Memo;

use crate::blob::{self, Stub, STUB_LEN};
use crate::page::{Directory, PageId};
use crate::sync::Restart;
pub(crate) use raw::common_prefix;
use raw::RawPage;
use std::mem::MaybeUninit;

/// The level of a multi-rooted tree's partition table (`crate::partition`): an inner node
/// above the partitions' roots, whose separators are the partition boundaries and whose
/// children are roots of any height. Only the root prologue of the descent passes it.
pub(crate) const TABLE_LEVEL: u16 = u16::MAX;

pub(crate) const HEADER: usize = 64;
pub(crate) const SLOT: usize = 6;
/// Bytes at the start of a node that a descent prefetches as soon as it knows the node's
/// page, before it reads the node's header: header and the first ~160 slots. Inner nodes
/// and writers' leaves, and point reads' leaves unless `Config::leaf_prefetch` asks for whole
/// leaves ([`LEAF_PREFETCH`]).
pub(crate) const DESCENT_PREFETCH: usize = 1024;
// Every page of a tree holds the whole prefetched head (`RawPage::prefetch_head` falls back to
// a clamped loop for smaller pages, which only tests make).
const _: () = assert!(DESCENT_PREFETCH <= crate::config::MIN_PAGE_SIZE);
/// Bytes at the start of a leaf that point descents prefetch as soon as they know the
/// leaf's page where `Config::leaf_prefetch` asks for whole leaves: the whole of a page of
/// the default size, so that the line of the entry the search ends at (anywhere in the
/// heap) loads together with the header and slots instead of one miss later. Cursors, which
/// copy the leaf, skip it (`engine::point::KeepParent`).
pub(crate) const LEAF_PREFETCH: usize = 4096;
const _: () = assert!(LEAF_PREFETCH <= crate::config::MIN_PAGE_SIZE);
// `LeafPrefetch::Whole` asks for more than `Head` (a size sweep once left them equal).
const _: () = assert!(LEAF_PREFETCH > DESCENT_PREFETCH);
/// Bytes of the policy area in the header.
pub(crate) const POLICY_AREA: usize = 20;

/// Slots short of a leaf's end at which a change still counts as an append: appends from
/// several threads take their keys in one order and arrive in another (Contention Split,
/// `policy::contention`; splits of the rightmost leaf, `smo::split`). At most a sixteenth
/// of the leaf's entries.
pub(crate) const APPEND_SLACK: usize = 8;

/// The slots short of the end of a leaf of `count` entries at which a change still counts
/// as an append ([`APPEND_SLACK`], at most a sixteenth of the leaf).
pub(crate) fn append_slack(count: usize) -> usize {
    APPEND_SLACK.min(count / 16)
}
const _: () = assert!(OFF_POLICY + POLICY_AREA == HEADER);

const HAS_LOWER: u16 = 1;
const HAS_UPPER: u16 = 2;
/// The prefix is longer than the common prefix of the fences (or a fence is missing): a key
/// in the node's range may lack it.
const PREFIX_FROM_KEYS: u16 = 4;
const LAYOUT_SHIFT: u32 = 8;
const LAYOUT_MASK: u16 = 0xF << LAYOUT_SHIFT;

const OFF_LEVEL: usize = 8;
const OFF_COUNT: usize = 10;
const OFF_HEAP_TOP: usize = 12;
const OFF_HEAP_LIVE: usize = 16;
const OFF_PREFIX_LEN: usize = 20;
const OFF_LOWER_LEN: usize = 22;
const OFF_UPPER_LEN: usize = 24;
const OFF_FLAGS: usize = 26;
const OFF_LOWER: usize = 28;
const OFF_UPPER: usize = 32;
const OFF_UPPER_CHILD: usize = 36;
const OFF_PREFIX: usize = 40;
const OFF_POLICY: usize = 44;

/// The layout of a node's slots and heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Sorted slots with 4-byte heads over a heap growing down from the end of the page.
    Slotted,
}

/// A fence key: `None` is infinite (minus infinity for a lower fence, plus infinity for an
/// upper fence).
pub(crate) type Fence<'a> = Option<&'a [u8]>;

/// The first four bytes of `suffix`, big-endian, zero-padded.
#[inline]
pub(crate) fn head_of(suffix: &[u8]) -> u32 {
    if let Some(h) = suffix.first_chunk::<4>() {
        return u32::from_be_bytes(*h);
    }
    // Fewer than 4 bytes: pad with zeros. One comparison per length, not a byte loop (the
    // suffixes of appends under a prefix taken from their keys are this short: the loop
    // cost an append 27 instructions, callgrind).
    match *suffix {
        [] => 0,
        [a] => (a as u32) << 24,
        [a, b] => (a as u32) << 24 | (b as u32) << 16,
        [a, b, c, ..] => (a as u32) << 24 | (b as u32) << 16 | (c as u32) << 8,
    }
}

/// Bytes the length header of an entry takes: one byte for a suffix below 8 and a value
/// below 16 bytes (`0sss_vvvv`), two for a suffix below 64 and a value below 256
/// (`10ss_ssss vvvv_vvvv`), otherwise a marker byte `11bx_xxxx` and two little-endian u16.
/// The bit `b` ([`STUB_MARK`]) of the long form flags a value stored out of line: the entry
/// holds its stub (see `crate::blob`), so a stub always takes the long form.
#[inline]
fn lens_len(suffix_len: usize, value_len: usize, stub: bool) -> usize {
    if stub {
        5
    } else if suffix_len < 8 && value_len < 16 {
        1
    } else if suffix_len < 64 && value_len < 256 {
        2
    } else {
        5
    }
}

/// The marker bit of the long length header that flags an out-of-line value's stub.
const STUB_MARK: u8 = 0x20;

/// `blob::read`, out of the point reads' inlined code: their values are mostly inline.
#[cold]
#[inline(never)]
fn read_blob(dir: &Directory, size: usize, stub: Stub, out: &mut Vec<u8>) -> Result<(), Restart> {
    blob::read(dir, size, stub, out)
}

/// The size rule, part one: bytes one entry takes in a node (slot, length header, suffix
/// beyond the head, value as stored: inline bytes, or the stub of an out-of-line value).
#[inline]
pub(crate) fn stored_entry_space(suffix_len: usize, value_len: usize, stub: bool) -> usize {
    SLOT + lens_len(suffix_len, value_len, stub) + suffix_len.saturating_sub(4) + value_len
}

/// [`stored_entry_space`] of an entry whose value is inline (every entry of an inner node).
#[inline]
pub(crate) fn entry_space(suffix_len: usize, value_len: usize) -> usize {
    stored_entry_space(suffix_len, value_len, false)
}

/// The size rule, part two: bytes a node with a prefix of `prefix` bytes, fences of
/// `fences` bytes together and `entries` bytes of entries takes. Every size computation of
/// the tree (inserts, splits, merges, XMerge plans) adds up these two rules.
#[inline]
pub(crate) fn node_size(prefix: usize, fences: usize, entries: usize) -> usize {
    HEADER + prefix + fences + entries
}

/// The longest key a node of `page_size` bytes stores whole (a sixteenth of the page). A
/// longer key (see `crate::long_key`) is stored in its *stored form*: its first
/// [`long_head`] bytes followed by the 8-byte stub of a blob that holds the whole key,
/// [`long_key_len`] bytes in all, a length no key stored whole has. Nodes move stored forms
/// as opaque bytes; only searches (which compare a real key with them) and the paths that
/// hand keys out read the blob.
#[inline]
pub(crate) fn inline_key_max(page_size: usize) -> usize {
    page_size / 16
}

/// Bytes the stored form of a long key takes (see [`inline_key_max`]).
#[inline]
pub(crate) fn long_key_len(page_size: usize) -> usize {
    inline_key_max(page_size) + 1
}

/// Bytes of a long key kept inline in its stored form, before the stub.
#[inline]
pub(crate) fn long_head(page_size: usize) -> usize {
    long_key_len(page_size) - STUB_LEN
}

/// The longest prefix a node of `page_size` bytes uses: it ends at least four bytes before
/// the stub of a long key's stored form, so that prefixes and slot heads hold key bytes
/// only.
#[inline]
pub(crate) fn prefix_cap(page_size: usize) -> usize {
    long_head(page_size) - 4
}

/// The prefix a node of `page_size` bytes with these fences and these first and last keys
/// uses (see the module doc): the keys' common prefix, or for an empty node the fences'
/// common prefix, cut to [`prefix_cap`].
pub(crate) fn node_prefix<'a>(
    page_size: usize,
    lower: Fence<'a>,
    upper: Fence<'a>,
    first: Option<&'a [u8]>,
    last: Option<&'a [u8]>,
) -> &'a [u8] {
    let p: &[u8] = match (lower, upper, first, last) {
        (_, _, Some(f), Some(t)) => &f[..common_prefix(f, t)],
        (Some(l), Some(u), _, _) => &l[..common_prefix(l, u)],
        _ => &[],
    };
    &p[..p.len().min(prefix_cap(page_size))]
}

/// A leaf value as an entry stores it: inline bytes, or the stub of an out-of-line value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stored<'a> {
    Inline(&'a [u8]),
    Stub([u8; STUB_LEN]),
}

impl Stored<'_> {
    /// The bytes the entry holds and whether they are a stub.
    pub(crate) fn parts(&self) -> (&[u8], bool) {
        match self {
            Stored::Inline(v) => (v, false),
            Stored::Stub(s) => (s, true),
        }
    }
}

/// A read view of one page (see the module doc). Copyable; safe to use while a writer
/// changes the page, with every result validated by the caller before it is trusted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    page: RawPage,
}

/// Where the parts of one heap entry are; every offset lies inside the page.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryLoc {
    pub suffix_len: usize,
    pub rest_off: usize,
    pub value_off: usize,
    /// Bytes of the value in the page: the value, or its stub.
    pub value_len: usize,
    /// Whether the value is out of line: the page holds its stub (see `crate::blob`).
    pub stub: bool,
    /// Bytes of the heap entry (without the slot).
    pub heap_len: usize,
}

impl EntryLoc {
    /// Bytes this entry takes in a node where its suffix is `suffix_len` bytes long.
    #[inline]
    pub(crate) fn space(&self, suffix_len: usize) -> usize {
        stored_entry_space(suffix_len, self.value_len, self.stub)
    }
}

impl Node {
    /// Wraps a page.
    #[inline]
    pub(crate) fn new(page: RawPage) -> Node {
        Node { page }
    }

    #[inline]
    pub(crate) fn raw(&self) -> RawPage {
        self.page
    }

    // ---- header ---------------------------------------------------------------------

    pub(crate) fn page_size(&self) -> usize {
        self.page.size()
    }
    #[inline]
    pub(crate) fn level(&self) -> u16 {
        self.header_u16(OFF_LEVEL)
    }
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.level() == 0
    }
    /// Number of entries, clamped to what the page can hold (optimistic readers may see a
    /// torn value).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        let c = self.header_u16(OFF_COUNT) as usize;
        // `c <= u16::MAX`, so the product cannot overflow; the division is left for torn
        // values only.
        if HEADER + c * SLOT <= self.page.size() {
            c
        } else {
            self.max_slots()
        }
    }
    fn heap_top(&self) -> usize {
        self.header_u32(OFF_HEAP_TOP) as usize
    }
    fn heap_live(&self) -> usize {
        self.header_u32(OFF_HEAP_LIVE) as usize
    }
    #[inline]
    pub(crate) fn prefix_len(&self) -> usize {
        self.header_u16(OFF_PREFIX_LEN) as usize
    }
    #[inline]
    fn flags(&self) -> u16 {
        self.header_u16(OFF_FLAGS)
    }
    /// The node's layout; `Restart` for a value no layout has (a torn read).
    pub(crate) fn layout(&self) -> Result<Layout, Restart> {
        match (self.flags() & LAYOUT_MASK) >> LAYOUT_SHIFT {
            0 => Ok(Layout::Slotted),
            _ => Err(Restart),
        }
    }
    #[inline]
    pub(crate) fn upper_child(&self) -> PageId {
        self.header_u32(OFF_UPPER_CHILD)
    }

    /// A copy of the policy area (see `policy`).
    #[inline]
    pub(crate) fn policy_area(&self) -> [u8; POLICY_AREA] {
        let mut a = [0u8; POLICY_AREA];
        self.page
            .copy_to(OFF_POLICY, &mut a)
            .expect("the header lies inside the page");
        a
    }

    /// Replaces `out` with the fence behind `flag` and returns `true`, or returns `false`
    /// if the node has no such fence.
    fn copy_fence(
        &self,
        flag: u16,
        off: usize,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool, Restart> {
        if self.flags() & flag == 0 {
            return Ok(false);
        }
        let off = self.header_u32(off) as usize;
        let len = self.header_u16(len) as usize;
        out.clear();
        self.page.append_to(off, len, out)?;
        Ok(true)
    }

    fn fence_at(&self, flag: u16, off: usize, len: usize) -> Result<Option<Vec<u8>>, Restart> {
        let mut out = Vec::new();
        Ok(self.copy_fence(flag, off, len, &mut out)?.then_some(out))
    }

    /// The lengths of the lower and upper fence (0 for a missing one), without copying them.
    #[inline]
    pub(crate) fn fence_lens(&self) -> (usize, usize) {
        let len = |flag: u16, off: usize| {
            if self.flags() & flag == 0 {
                0
            } else {
                self.header_u16(off) as usize
            }
        };
        (len(HAS_LOWER, OFF_LOWER_LEN), len(HAS_UPPER, OFF_UPPER_LEN))
    }

    /// Heap bytes held by entries: the live heap less the fences and the prefix.
    #[inline]
    pub(crate) fn entry_heap_bytes(&self) -> usize {
        let (lower, upper) = self.fence_lens();
        self.heap_live()
            .saturating_sub(lower + upper + self.prefix_len())
    }

    /// A copy of the lower fence (exclusive); `None` is minus infinity.
    pub(crate) fn lower_fence(&self) -> Result<Option<Vec<u8>>, Restart> {
        self.fence_at(HAS_LOWER, OFF_LOWER, OFF_LOWER_LEN)
    }

    /// A copy of the upper fence (inclusive); `None` is plus infinity.
    pub(crate) fn upper_fence(&self) -> Result<Option<Vec<u8>>, Restart> {
        self.fence_at(HAS_UPPER, OFF_UPPER, OFF_UPPER_LEN)
    }

    /// Whether the node has an upper fence (is not the rightmost of its level).
    #[inline]
    pub(crate) fn has_upper_fence(&self) -> bool {
        self.flags() & HAS_UPPER != 0
    }

    /// Whether the node lies on an edge of the tree: a fence is missing.
    #[inline]
    pub(crate) fn is_edge(&self) -> bool {
        self.flags() & (HAS_LOWER | HAS_UPPER) != HAS_LOWER | HAS_UPPER
    }

    /// A copy of the prefix shared by every key of the node.
    pub(crate) fn prefix(&self) -> Result<Vec<u8>, Restart> {
        let len = self.prefix_len();
        let mut out = Vec::with_capacity(len);
        if len > 0 {
            self.page
                .append_to(self.header_u32(OFF_PREFIX) as usize, len, &mut out)?;
        }
        Ok(out)
    }

    /// `Equal` when `key` starts with the node's prefix; otherwise how `key` orders against
    /// the prefix. The short form (a prefix of at most 8 bytes, a key of at least 8) is
    /// inlined: on the edge nodes, whose prefix comes from their keys (the root, and every
    /// node on the leftmost and rightmost paths), it is a few instructions where the call
    /// cost ~80 (callgrind, dense integer keys). The prefix sits at the end of the page (a
    /// word read from where it starts would leave the page), so it is read as the word that
    /// ends where it ends.
    #[inline(always)]
    pub(crate) fn key_vs_prefix(&self, key: &[u8]) -> Result<std::cmp::Ordering, Restart> {
        let len = self.prefix_len();
        if len == 0 {
            return Ok(std::cmp::Ordering::Equal);
        }
        let off = self.header_u32(OFF_PREFIX) as usize;
        let end = off + len;
        if len <= 8 && key.len() >= 8 && end >= 8 && end <= self.page.size() {
            // The first `len` bytes of both as big-endian words.
            // SAFETY: `8 <= end <= size`, checked above.
            let p = u64::from_be_bytes(unsafe { self.page.array_at::<8>(end - 8) });
            let k = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
            let shift = 64 - 8 * len as u32;
            return Ok((k >> shift).cmp(&(p << shift >> shift)));
        }
        self.key_vs_long_prefix(key, off, len)
    }

    /// [`key_vs_prefix`](Self::key_vs_prefix) of a prefix of `len` bytes at `off` that the
    /// short form does not decide.
    #[inline(never)]
    fn key_vs_long_prefix(
        &self,
        key: &[u8],
        off: usize,
        len: usize,
    ) -> Result<std::cmp::Ordering, Restart> {
        let head = &key[..len.min(key.len())];
        // `key` starts with the prefix exactly when its first `len` bytes equal it.
        Ok(self.page.compare(off, len, head)?.reverse())
    }

    /// Whether every key in the node's fence range carries the prefix (the prefix is the
    /// fences' common prefix); otherwise a key in range may lack it.
    #[inline]
    pub(crate) fn prefix_is_guaranteed(&self) -> bool {
        self.flags() & PREFIX_FROM_KEYS == 0
    }

    /// Bytes in use: header, slots and live heap bytes.
    pub(crate) fn used_space(&self) -> usize {
        HEADER + self.count() * SLOT + self.heap_live()
    }

    /// Bytes that could be used after a compaction.
    pub(crate) fn free_space(&self) -> usize {
        self.page.size().saturating_sub(self.used_space())
    }

    /// Free bytes between the slots and the heap, usable without a compaction.
    #[cfg(test)]
    pub(crate) fn contiguous_space(&self) -> usize {
        self.heap_top().saturating_sub(HEADER + self.count() * SLOT)
    }

    // ---- slots and entries ----------------------------------------------------------

    /// A 16-bit header field at the constant offset `off` (below `HEADER`). The check folds
    /// away: every caller passes a constant.
    #[inline]
    fn header_u16(&self, off: usize) -> u16 {
        assert!(off + 2 <= HEADER, "not a header offset");
        // SAFETY: header offsets lie below `HEADER`, and every page is larger than that.
        unsafe { self.page.u16_at(off) }
    }

    /// A 32-bit header field at the constant offset `off` (below `HEADER`).
    #[inline]
    fn header_u32(&self, off: usize) -> u32 {
        assert!(off + 4 <= HEADER, "not a header offset");
        // SAFETY: as in `header_u16`.
        unsafe { self.page.u32_at(off) }
    }

    /// The most slots a page can hold; `count()` is clamped to it.
    #[inline]
    fn max_slots(&self) -> usize {
        (self.page.size() - HEADER) / SLOT
    }

    /// The head of slot `i`.
    ///
    /// # Safety
    /// `i < max_slots()`, which holds for any `i` below a value `count()` returned (counts
    /// are clamped), so that the slot ends inside the page.
    #[inline]
    unsafe fn slot_head(&self, i: usize) -> u32 {
        debug_assert!(i < self.max_slots());
        // SAFETY: the caller guarantees that slot `i` ends inside the page.
        unsafe { self.page.u32_at(HEADER + i * SLOT) }
    }

    /// The heap offset of slot `i`.
    ///
    /// # Safety
    /// As for [`slot_head`](Self::slot_head).
    #[inline]
    unsafe fn slot_offset(&self, i: usize) -> usize {
        debug_assert!(i < self.max_slots());
        // SAFETY: the caller guarantees that slot `i` ends inside the page.
        (unsafe { self.page.u16_at(HEADER + i * SLOT + 4) }) as usize
    }

    /// Starts loading the first [`DESCENT_PREFETCH`] bytes of the page (header and first
    /// slots) into the cache, in straight-line code.
    #[inline(always)]
    pub(crate) fn prefetch_head(&self) {
        self.page.prefetch_head::<DESCENT_PREFETCH>();
    }

    /// Starts loading the first [`LEAF_PREFETCH`] bytes of a leaf's page (header, slots and
    /// heap of a default-sized page) into the cache, in straight-line code.
    #[inline(always)]
    pub(crate) fn prefetch_leaf(&self) {
        self.page.prefetch_head::<LEAF_PREFETCH>();
    }

    /// Decodes the length header at `off`: (suffix length, value length, header bytes,
    /// whether the value is a stub).
    #[inline]
    fn lens_at(&self, off: usize) -> Result<(usize, usize, usize, bool), Restart> {
        let b = self.page.u8_at(off)?;
        if b < 0x80 {
            return Ok(((b >> 4) as usize, (b & 0x0F) as usize, 1, false));
        }
        if b < 0xC0 {
            let v = self.page.u8_at(off + 1)?;
            return Ok(((b & 0x3F) as usize, v as usize, 2, false));
        }
        let mut l = [0u8; 4];
        self.page.copy_to(off + 1, &mut l)?;
        let s = u16::from_le_bytes([l[0], l[1]]) as usize;
        let v = u16::from_le_bytes([l[2], l[3]]) as usize;
        Ok((s, v, 5, b & STUB_MARK != 0))
    }

    /// The heap bytes of the entry whose length header is at `off` (header, rest of the
    /// suffix, value or stub), checked to lie inside the page.
    #[inline(always)]
    pub(crate) fn heap_len_at(&self, off: usize) -> Result<usize, Restart> {
        let (suffix_len, value_len, h, _) = self.lens_at(off)?;
        let len = h + suffix_len.saturating_sub(4) + value_len;
        self.page.check(off, len)?;
        Ok(len)
    }

    /// Locates the parts of entry `i`; every offset it returns lies inside the page.
    #[inline]
    pub(crate) fn entry(&self, i: usize) -> Result<EntryLoc, Restart> {
        // `i < max_slots()`, without a division (and without overflow: counts fit in 16 bits).
        if i > u16::MAX as usize || HEADER + (i + 1) * SLOT > self.page.size() {
            return Err(Restart);
        }
        // SAFETY: `i < max_slots()`, checked above.
        let off = unsafe { self.slot_offset(i) };
        let (suffix_len, value_len, h, stub) = self.lens_at(off)?;
        let rest_off = off + h;
        let rest = suffix_len.saturating_sub(4);
        let value_off = rest_off + rest;
        let heap_len = h + rest + value_len;
        self.page.check(value_off, value_len)?;
        Ok(EntryLoc {
            suffix_len,
            rest_off,
            value_off,
            value_len,
            stub,
            heap_len,
        })
    }

    /// Whether the length header of entry `i` flags an out-of-line value: one byte read, for
    /// the paths that must not pay a whole [`entry`](Self::entry) per entry to learn that
    /// (cursor steps). Garbage but memory-safe optimistically, like every read here.
    #[inline(always)]
    pub(crate) fn is_stub(&self, i: usize) -> bool {
        if i > u16::MAX as usize || HEADER + (i + 1) * SLOT > self.page.size() {
            return false;
        }
        // SAFETY: `i < max_slots()`, checked above.
        let off = unsafe { self.slot_offset(i) };
        const STUB_HEADER: u8 = 0xC0 | STUB_MARK;
        matches!(self.page.u8_at(off), Ok(b) if b & STUB_HEADER == STUB_HEADER)
    }

    /// The stub of entry `i` if its value is out of line (see `crate::blob`).
    #[inline]
    pub(crate) fn stub(&self, i: usize) -> Result<Option<Stub>, Restart> {
        if !self.is_stub(i) {
            return Ok(None);
        }
        let e = self.entry(i)?;
        self.stub_at(&e)
    }

    /// The stub of the entry at `e` if its value is out of line.
    #[inline]
    pub(crate) fn stub_at(&self, e: &EntryLoc) -> Result<Option<Stub>, Restart> {
        if !e.stub {
            return Ok(None);
        }
        if e.value_len != STUB_LEN {
            return Err(Restart);
        }
        let mut b = [0u8; STUB_LEN];
        self.page.copy_to(e.value_off, &mut b)?;
        Ok(Some(Stub::decode(b)))
    }

    /// A copy of the value of entry `i`; an out-of-line value is read through `dir` (and
    /// is, like everything an optimistic reader copies, garbage until the leaf validates).
    /// `hint` is the search's [`ValueHint`] for entry `i` (or `ValueHint::NONE`).
    #[inline]
    pub(crate) fn value(
        &self,
        i: usize,
        hint: ValueHint,
        dir: &Directory,
    ) -> Result<Vec<u8>, Restart> {
        let (value_off, value_len) = match hint.get() {
            Some(at) => at,
            None => {
                let e = self.entry(i)?;
                if e.stub {
                    let mut out = Vec::new();
                    let stub = self.stub_at(&e)?.ok_or(Restart)?;
                    read_blob(dir, self.page.size(), stub, &mut out)?;
                    return Ok(out);
                }
                (e.value_off, e.value_len)
            }
        };
        // Sized up front: `append_to`'s growth of an empty vector is a call of its own
        // (+90 instructions per `get`, callgrind).
        let mut out = Vec::with_capacity(value_len);
        self.page.append_to(value_off, value_len, &mut out)?;
        Ok(out)
    }

    /// Appends the value of entry `i` to `out` (as [`value`](Self::value)).
    #[inline]
    pub(crate) fn append_value(
        &self,
        i: usize,
        hint: ValueHint,
        out: &mut Vec<u8>,
        dir: &Directory,
    ) -> Result<(), Restart> {
        if let Some((value_off, value_len)) = hint.get() {
            return self.page.append_to(value_off, value_len, out);
        }
        let e = self.entry(i)?;
        if e.stub {
            let stub = self.stub_at(&e)?.ok_or(Restart)?;
            return read_blob(dir, self.page.size(), stub, out);
        }
        self.page.append_to(e.value_off, e.value_len, out)
    }

    /// Copies the value of entry `i` into the front of `buf` (initialising those bytes)
    /// and returns its length, or `None` (copying nothing) if it is longer than `buf` or
    /// out of line. `hint` is the search's [`ValueHint`] for entry `i` (or `ValueHint::NONE`).
    #[inline]
    pub(crate) fn copy_value(
        &self,
        i: usize,
        hint: ValueHint,
        buf: &mut [MaybeUninit<u8>],
    ) -> Result<Option<usize>, Restart> {
        let (value_off, value_len) = match hint.get() {
            Some(at) => at,
            None => {
                let e = self.entry(i)?;
                if e.stub {
                    return Ok(None);
                }
                (e.value_off, e.value_len)
            }
        };
        if value_len > buf.len() {
            return Ok(None);
        }
        // SAFETY: `buf` is valid for `value_len <= buf.len()` bytes of writes (any bytes
        // are valid `MaybeUninit<u8>`s) and, a caller's own buffer, does not overlap the
        // page; `copy_to_ptr` checks the source range against the page.
        unsafe {
            self.page
                .copy_to_ptr(value_off, value_len, buf.as_mut_ptr().cast())?;
        }
        Ok(Some(value_len))
    }

    /// Appends the full key `i` to `out`, growing it at most once (a key of 100 bytes or
    /// more grew it twice, prefix then suffix: a `realloc` per key of a long-key split).
    pub(crate) fn push_key(&self, i: usize, out: &mut Vec<u8>) -> Result<(), Restart> {
        self.push_key_start(i, usize::MAX, out)
    }

    /// Appends the first `limit` bytes of key `i` (all of a shorter one) to `out`, as
    /// [`push_key`](Self::push_key) does.
    pub(crate) fn push_key_start(
        &self,
        i: usize,
        limit: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Restart> {
        let e = self.entry(i)?;
        let plen = self.prefix_len();
        let len = plen.min(limit);
        let suffix_len = e.suffix_len.min(limit - len);
        out.reserve(len + suffix_len);
        if len > 0 {
            self.page
                .append_to(self.header_u32(OFF_PREFIX) as usize, len, out)?;
        }
        // SAFETY: `entry(i)` succeeded, so `i < max_slots()`.
        let head = unsafe { self.slot_head(i) }.to_be_bytes();
        out.extend_from_slice(&head[..suffix_len.min(4)]);
        self.page
            .append_to(e.rest_off, suffix_len.saturating_sub(4), out)
    }

    /// The length of the common prefix of the suffixes of entries `a` and `b` (of their
    /// keys beyond the node's prefix), read in place.
    pub(crate) fn suffixes_common_len(&self, a: usize, b: usize) -> Result<usize, Restart> {
        let (ea, eb) = (self.entry(a)?, self.entry(b)?);
        let n = ea.suffix_len.min(eb.suffix_len);
        // SAFETY: `entry` succeeded for both, so both are below `max_slots()`.
        let (ha, hb) = unsafe { (self.slot_head(a), self.slot_head(b)) };
        // The heads hold the first four suffix bytes, big-endian (zero-padded).
        let heads = ((ha ^ hb).leading_zeros() / 8) as usize;
        if heads < 4 || n <= 4 {
            return Ok(heads.min(n));
        }
        Ok(4 + self.page.common_len(ea.rest_off, eb.rest_off, n - 4)?)
    }

    /// The inline value bytes of the entry at `e`, writable by an in-place updater of a leaf
    /// in line mode: the stretch locks `_lock` cover them (`sync::lines`).
    ///
    /// # Safety
    /// `e` was read from this leaf, `_lock` locks the stretches that cover
    /// `e.value_off..e.value_off + e.value_len`, and the leaf's snapshot validated after
    /// they were locked: no exclusive holder writes the page until the lock is dropped, no
    /// other updater writes these bytes, and optimistic readers form no references over
    /// page bytes.
    // The lock is the write capability: a `&mut` borrowed from it, as `NodeMut` borrows one
    // from an exclusive guard (the contract above says why it is unique).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn value_in_lines<'l>(
        &self,
        e: &EntryLoc,
        _lock: &'l crate::sync::lines::LineLock,
    ) -> &'l mut [u8] {
        // SAFETY: the caller's contract; `slice_mut` asserts the page bounds.
        unsafe { self.page.slice_mut(e.value_off, e.value_len) }
    }

    /// The full key `i`.
    pub(crate) fn key(&self, i: usize) -> Result<Vec<u8>, Restart> {
        let mut k = Vec::new();
        self.push_key(i, &mut k)?;
        Ok(k)
    }
}
