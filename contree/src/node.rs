//! The slotted page: the byte layout of every node, leaf or inner.
//!
//! ```text
//! 0   latch word (8 bytes, owned by `latch`, never touched here)
//! 8   level u16 (0 = leaf)        10  count u16
//! 12  heap_top u32                16  heap_live u32 (live heap bytes, fences included)
//! 20  prefix_len u16              22  lower_len u16      24  upper_len u16
//! 26  flags u16 (HAS_LOWER, HAS_UPPER)
//! 28  lower_off u32               32  upper_off u32      36  upper_child u32 (inner)
//! 40  prefix_off u32
//! 44  Contention Split counters: sampled updates u16, sampled slow paths u16, last sampled
//!     slot u16 (`u16::MAX`: none)                  50  hot-until-cool marker u16
//! 52  last exclusive holder u32 (only with the `latch-stats` feature)
//! 56  8 bytes reserved
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
//! that, and inserting such a key rebuilds the node with a shorter prefix
//! ([`Node::insert_at`]). Deriving the prefix from the keys matters most for the root and
//! the right edge, which every append and most descents visit: with fence-only prefixes they
//! would have none, and all heads of keys such as small big-endian integers or `user…`
//! strings would be equal there. A slot's `head` is the
//! first four bytes of the key's suffix, big-endian and zero-padded, so most comparisons of
//! a binary search never leave the slot array. A heap entry is
//! `lengths suffix[4..] value`, where `lengths` takes one byte for short suffixes and values
//! (see [`entry_space`]): the head bytes are not stored twice.
//!
//! Inner nodes store child page ids as 4-byte values: the child at slot `i` holds the keys
//! in `(key[i-1], key[i]]` and `upper_child` holds the keys above the last key.
//!
//! **Optimistic readers.** Functions whose names contain `optimistic`, and every reader
//! reached from them, may run while a writer changes the page. They only read through
//! [`Node::bytes`] and the fixed-width readers, which bounds-check every offset and length
//! against the page size, and they return `Err(Restart)` on anything impossible; the caller
//! validates the latch version before it trusts a result. Writers hold the exclusive latch.

use crate::latch::Restart;
use crate::page::PageId;
use std::cmp::Ordering;

pub(crate) const HEADER: usize = 64;
pub(crate) const SLOT: usize = 6;
/// Bytes at the start of a leaf that the descent prefetches as soon as it knows the leaf's
/// page, before it reads the leaf's header: header and the first ~160 slots.
pub(crate) const DESCENT_PREFETCH: usize = 1024;
const HAS_LOWER: u16 = 1;
const HAS_UPPER: u16 = 2;
/// The prefix is longer than the common prefix of the fences (or a fence is missing): a key
/// in the node's range may lack it.
const PREFIX_FROM_KEYS: u16 = 4;

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
const OFF_CS_UPDATES: usize = 44;
const OFF_CS_SLOW: usize = 46;
const OFF_CS_LAST_SLOT: usize = 48;
const OFF_CS_HOT: usize = 50;
const OFF_LAST_HOLDER: usize = 52;

/// A fence key: `None` is infinite (minus infinity for a lower fence, plus infinity for an
/// upper fence).
pub(crate) type Fence<'a> = Option<&'a [u8]>;

/// The first four bytes of `suffix`, big-endian, zero-padded.
#[inline]
pub(crate) fn head_of(suffix: &[u8]) -> u32 {
    if let Some(h) = suffix.first_chunk::<4>() {
        return u32::from_be_bytes(*h);
    }
    // Fewer than 4 bytes: pad with zeros (a byte loop, not a `memcpy` call).
    let mut h = 0u32;
    for i in 0..4 {
        h = (h << 8) | suffix.get(i).copied().unwrap_or(0) as u32;
    }
    h
}

/// Bytes the length header of an entry takes: one byte for a suffix below 8 and a value
/// below 16 bytes (`0sss_vvvv`), two for a suffix below 64 and a value below 256
/// (`10ss_ssss vvvv_vvvv`), otherwise a marker byte `11xx_xxxx` and two little-endian u16.
#[inline]
fn lens_len(suffix_len: usize, value_len: usize) -> usize {
    if suffix_len < 8 && value_len < 16 {
        1
    } else if suffix_len < 64 && value_len < 256 {
        2
    } else {
        5
    }
}

/// Bytes one entry takes in a node: slot, length header, suffix beyond the head, value.
#[inline]
pub(crate) fn entry_space(suffix_len: usize, value_len: usize) -> usize {
    SLOT + lens_len(suffix_len, value_len) + suffix_len.saturating_sub(4) + value_len
}

/// `a.cmp(b)`, without a library call for the short suffixes typical of integer keys.
#[inline]
fn cmp_short(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() <= 8 && b.len() <= 8 {
        // Byte loops instead of variable-length `memcpy` calls.
        let load = |x: &[u8]| {
            let w = x.iter().fold(0u64, |w, &c| (w << 8) | c as u64);
            w.checked_shl(8 * (8 - x.len() as u32)).unwrap_or(0)
        };
        load(a).cmp(&load(b)).then(a.len().cmp(&b.len()))
    } else {
        a.cmp(b)
    }
}

/// Length of the longest common prefix of two byte strings.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The prefix a node with these fences and these first and last keys uses (see the module
/// doc): the keys' common prefix, or for an empty node the fences' common prefix.
pub(crate) fn node_prefix<'a>(
    lower: Fence<'a>,
    upper: Fence<'a>,
    first: Option<&'a [u8]>,
    last: Option<&'a [u8]>,
) -> &'a [u8] {
    match (lower, upper, first, last) {
        (_, _, Some(f), Some(t)) => &f[..common_prefix(f, t)],
        (Some(l), Some(u), _, _) => &l[..common_prefix(l, u)],
        _ => &[],
    }
}

/// A view of one page. Copyable; whoever holds it must hold the page's latch in the mode its
/// use requires (see the module doc).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    ptr: *mut u8,
    size: usize,
}

/// Where the parts of one heap entry are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EntryLoc {
    pub suffix_len: usize,
    pub rest_off: usize,
    pub value_off: usize,
    pub value_len: usize,
    /// Bytes of the heap entry (without the slot).
    pub heap_len: usize,
}

impl Node {
    /// Wraps page memory.
    ///
    /// # Safety
    /// `ptr` must point to `size` bytes of page memory that stay mapped while the view is
    /// used.
    pub(crate) unsafe fn from_raw(ptr: *mut u8, size: usize) -> Node {
        Node { ptr, size }
    }

    // ---- raw access, bounds-checked -------------------------------------------------

    /// The bytes `off..off + len`, or `Restart` if they are not inside the page.
    #[inline]
    pub(crate) fn bytes(&self, off: usize, len: usize) -> Result<&[u8], Restart> {
        if off.checked_add(len).is_none_or(|end| end > self.size) {
            return Err(Restart);
        }
        // SAFETY: the range lies inside the page, which stays mapped (see `from_raw`).
        // Concurrent writers may change these bytes; such reads are validated against the
        // latch version before use (seqlock pattern, see `docs/design.md`).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) })
    }

    #[inline]
    fn bytes_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.size, "node write out of page bounds");
        // SAFETY: the range lies inside the page; the caller holds the exclusive latch, so
        // no other thread writes these bytes.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }

    #[inline]
    fn read_u16(&self, off: usize) -> u16 {
        debug_assert!(off + 2 <= self.size);
        // SAFETY: every caller passes a constant header offset or a slot offset below
        // `slot_end`, which is clamped to the page; both lie inside the page.
        unsafe { (self.ptr.add(off) as *const u16).read_unaligned() }
    }

    #[inline]
    fn read_u32(&self, off: usize) -> u32 {
        debug_assert!(off + 4 <= self.size);
        // SAFETY: as for `read_u16`.
        unsafe { (self.ptr.add(off) as *const u32).read_unaligned() }
    }

    #[inline]
    fn write_u16(&mut self, off: usize, v: u16) {
        self.bytes_mut(off, 2).copy_from_slice(&v.to_ne_bytes());
    }

    #[inline]
    fn write_u32(&mut self, off: usize, v: u32) {
        self.bytes_mut(off, 4).copy_from_slice(&v.to_ne_bytes());
    }

    // ---- header ---------------------------------------------------------------------

    pub(crate) fn page_size(&self) -> usize {
        self.size
    }
    pub(crate) fn level(&self) -> u16 {
        self.read_u16(OFF_LEVEL)
    }
    pub(crate) fn is_leaf(&self) -> bool {
        self.level() == 0
    }
    /// Number of entries, clamped to what the page can hold (optimistic readers may see a
    /// torn value).
    #[inline]
    pub(crate) fn count(&self) -> usize {
        (self.read_u16(OFF_COUNT) as usize).min((self.size - HEADER) / SLOT)
    }
    fn heap_top(&self) -> usize {
        self.read_u32(OFF_HEAP_TOP) as usize
    }
    fn heap_live(&self) -> usize {
        self.read_u32(OFF_HEAP_LIVE) as usize
    }
    pub(crate) fn prefix_len(&self) -> usize {
        self.read_u16(OFF_PREFIX_LEN) as usize
    }
    fn flags(&self) -> u16 {
        self.read_u16(OFF_FLAGS)
    }
    pub(crate) fn upper_child(&self) -> PageId {
        self.read_u32(OFF_UPPER_CHILD)
    }
    /// The Contention Split counters: (sampled updates, sampled slow paths, last sampled
    /// slot). Written only under the exclusive latch.
    pub(crate) fn contention_counters(&self) -> (u16, u16, u16) {
        (
            self.read_u16(OFF_CS_UPDATES),
            self.read_u16(OFF_CS_SLOW),
            self.read_u16(OFF_CS_LAST_SLOT),
        )
    }

    pub(crate) fn set_contention_counters(&mut self, updates: u16, slow: u16, last_slot: u16) {
        self.write_u16(OFF_CS_UPDATES, updates);
        self.write_u16(OFF_CS_SLOW, slow);
        self.write_u16(OFF_CS_LAST_SLOT, last_slot);
    }

    /// Whether Contention Split recently split this node and its period has not yet ended
    /// without contention; merges leave such nodes alone.
    pub(crate) fn is_hot(&self) -> bool {
        self.read_u16(OFF_CS_HOT) != 0
    }

    pub(crate) fn set_hot(&mut self, hot: bool) {
        self.write_u16(OFF_CS_HOT, hot as u16);
    }

    /// The thread id of the last exclusive holder (`latch-stats` feature).
    #[cfg_attr(not(feature = "latch-stats"), allow(dead_code))]
    pub(crate) fn swap_last_holder(&mut self, thread: u32) -> u32 {
        let prev = self.read_u32(OFF_LAST_HOLDER);
        self.write_u32(OFF_LAST_HOLDER, thread);
        prev
    }

    pub(crate) fn set_upper_child(&mut self, pid: PageId) {
        self.write_u32(OFF_UPPER_CHILD, pid);
    }

    /// The lower fence (exclusive); `None` is minus infinity.
    pub(crate) fn lower_fence(&self) -> Result<Fence<'_>, Restart> {
        if self.flags() & HAS_LOWER == 0 {
            return Ok(None);
        }
        let off = self.read_u32(OFF_LOWER) as usize;
        let len = self.read_u16(OFF_LOWER_LEN) as usize;
        self.bytes(off, len).map(Some)
    }

    /// The upper fence (inclusive); `None` is plus infinity.
    pub(crate) fn upper_fence(&self) -> Result<Fence<'_>, Restart> {
        if self.flags() & HAS_UPPER == 0 {
            return Ok(None);
        }
        let off = self.read_u32(OFF_UPPER) as usize;
        let len = self.read_u16(OFF_UPPER_LEN) as usize;
        self.bytes(off, len).map(Some)
    }

    /// The prefix shared by every key of the node.
    pub(crate) fn prefix(&self) -> Result<&[u8], Restart> {
        let len = self.prefix_len();
        if len == 0 {
            return Ok(&[]);
        }
        self.bytes(self.read_u32(OFF_PREFIX) as usize, len)
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
        self.size.saturating_sub(self.used_space())
    }

    fn contiguous_space(&self) -> usize {
        self.heap_top().saturating_sub(HEADER + self.count() * SLOT)
    }

    // ---- slots and entries ----------------------------------------------------------

    #[inline]
    fn slot_head(&self, i: usize) -> u32 {
        self.read_u32(HEADER + i * SLOT)
    }

    #[inline]
    fn slot_offset(&self, i: usize) -> usize {
        self.read_u16(HEADER + i * SLOT + 4) as usize
    }

    /// Asks the CPU to start loading bytes `from..to` of the page (every other cache line:
    /// the adjacent-line prefetcher brings the other half of each 128-byte pair), so that
    /// the misses of a binary search overlap instead of coming one after another.
    #[inline]
    pub(crate) fn prefetch(&self, from: usize, to: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let mut off = from;
            while off < to.min(self.size) {
                // SAFETY: `off < page size`, so the address lies inside the page; a prefetch
                // never faults and has no visible effect.
                unsafe {
                    std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                        self.ptr.add(off) as *const i8,
                    );
                }
                off += 128;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (from, to);
    }

    /// Decodes the length header at `off`: (suffix length, value length, header bytes).
    #[inline]
    fn lens_at(&self, off: usize) -> Result<(usize, usize, usize), Restart> {
        let b = self.bytes(off, 1)?[0];
        if b < 0x80 {
            return Ok(((b >> 4) as usize, (b & 0x0F) as usize, 1));
        }
        if b < 0xC0 {
            let v = self.bytes(off + 1, 1)?[0];
            return Ok(((b & 0x3F) as usize, v as usize, 2));
        }
        let l = self.bytes(off + 1, 4)?;
        let s = u16::from_le_bytes([l[0], l[1]]) as usize;
        let v = u16::from_le_bytes([l[2], l[3]]) as usize;
        Ok((s, v, 5))
    }

    /// Locates the parts of entry `i`; every offset it returns lies inside the page.
    #[inline]
    pub(crate) fn entry(&self, i: usize) -> Result<EntryLoc, Restart> {
        let off = self.slot_offset(i);
        let (suffix_len, value_len, h) = self.lens_at(off)?;
        let rest_off = off + h;
        let rest = suffix_len.saturating_sub(4);
        let value_off = rest_off + rest;
        let heap_len = h + rest + value_len;
        if value_off + value_len > self.size {
            return Err(Restart);
        }
        Ok(EntryLoc {
            suffix_len,
            rest_off,
            value_off,
            value_len,
            heap_len,
        })
    }

    /// The value bytes of entry `i`.
    #[inline]
    pub(crate) fn value(&self, i: usize) -> Result<&[u8], Restart> {
        let e = self.entry(i)?;
        self.bytes(e.value_off, e.value_len)
    }

    /// The value bytes of entry `i`, writable (exclusive latch held).
    pub(crate) fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let e = self.entry(i).expect("entry of a latched node");
        self.bytes_mut(e.value_off, e.value_len)
    }

    /// The child id at slot `i` of an inner node (or `upper_child` for `i == count`).
    #[inline]
    pub(crate) fn child(&self, i: usize) -> Result<PageId, Restart> {
        if i >= self.count() {
            return Ok(self.upper_child());
        }
        let v = self.value(i)?;
        if v.len() != 4 {
            return Err(Restart);
        }
        Ok(u32::from_ne_bytes([v[0], v[1], v[2], v[3]]))
    }

    /// Appends the suffix of key `i` (the key without the node prefix) to `out`.
    pub(crate) fn push_suffix(&self, i: usize, out: &mut Vec<u8>) -> Result<(), Restart> {
        let e = self.entry(i)?;
        let head = self.slot_head(i).to_be_bytes();
        out.extend_from_slice(&head[..e.suffix_len.min(4)]);
        out.extend_from_slice(self.bytes(e.rest_off, e.suffix_len.saturating_sub(4))?);
        Ok(())
    }

    /// Appends the full key `i` to `out`.
    pub(crate) fn push_key(&self, i: usize, out: &mut Vec<u8>) -> Result<(), Restart> {
        out.extend_from_slice(self.prefix()?);
        self.push_suffix(i, out)
    }

    /// The full key `i`.
    pub(crate) fn key(&self, i: usize) -> Result<Vec<u8>, Restart> {
        let mut k = Vec::with_capacity(self.prefix_len() + 8);
        self.push_key(i, &mut k)?;
        Ok(k)
    }

    /// Compares the suffix of entry `i` with `suffix` whose head is `head`.
    #[inline]
    fn cmp_entry(&self, i: usize, head: u32, suffix: &[u8]) -> Result<Ordering, Restart> {
        let h = self.slot_head(i);
        if h != head {
            return Ok(h.cmp(&head));
        }
        let e = self.entry(i)?;
        if e.suffix_len < 4 || suffix.len() < 4 {
            return Ok(e.suffix_len.cmp(&suffix.len()));
        }
        let rest = self.bytes(e.rest_off, e.suffix_len - 4)?;
        Ok(cmp_short(rest, &suffix[4..]))
    }

    /// The first position whose key is `>= key`, and whether that key equals `key`.
    /// `key` must lie in the node's fence range (then it carries the node's prefix); under
    /// an optimistic race it may not, and the result is garbage but memory-safe.
    #[inline]
    pub(crate) fn lower_bound(&self, key: &[u8]) -> Result<(usize, bool), Restart> {
        let plen = self.prefix_len();
        let count = self.count();
        if plen > 0 && !self.prefix_is_guaranteed() {
            // The prefix comes from the keys; a key without it sorts before or after all of
            // them.
            let prefix = self.prefix()?;
            if !key.starts_with(prefix) {
                return Ok((if key < prefix { 0 } else { count }, false));
            }
        } else if key.len() < plen {
            // Only possible under a race or for a key outside the node's fences.
            return Err(Restart);
        }
        let suffix = &key[plen..];
        let head = head_of(suffix);
        if self.is_leaf() {
            // The descent already prefetched the first `DESCENT_PREFETCH` bytes.
            self.prefetch(DESCENT_PREFETCH, HEADER + count * SLOT);
        }
        if count == 0 {
            return Ok((0, false));
        }
        // Appends (auto-increment keys) go past the last key: decide them with one
        // comparison. On the right edge of the tree nodes have no upper fence and hence no
        // prefix, so all heads of small integer keys are equal there and a search would
        // compare whole suffixes at every step.
        match self.cmp_entry(count - 1, head, suffix)? {
            Ordering::Less => return Ok((count, false)),
            Ordering::Equal => return Ok((count - 1, true)),
            Ordering::Greater => {}
        }
        // Heads decide most comparisons: find the run of slots whose head equals the key's.
        let mut lo = self.first_head_at_least(head, 0, count - 1);
        if lo == count || self.slot_head(lo) != head {
            return Ok((lo, false));
        }
        let mut hi = if lo + 1 == count || self.slot_head(lo + 1) != head {
            lo + 1
        } else if head == u32::MAX {
            count
        } else {
            self.first_head_at_least(head + 1, lo + 1, count)
        };
        // Inside the run, compare whole suffixes.
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.cmp_entry(mid, head, suffix)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok((mid, true)),
            }
        }
        Ok((lo, false))
    }

    /// The first slot in `from..to` whose head is `>= head` (branch-free binary search).
    #[inline]
    fn first_head_at_least(&self, head: u32, from: usize, to: usize) -> usize {
        if from >= to {
            return to;
        }
        let mut base = from;
        let mut n = to - from;
        while n > 1 {
            let half = n / 2;
            let mid = base + half;
            base = if self.slot_head(mid) < head {
                mid
            } else {
                base
            };
            n -= half;
        }
        base + (self.slot_head(base) < head) as usize
    }

    // ---- writes (exclusive latch held) ------------------------------------------------

    /// Formats the page as an empty node whose keys will all start with `prefix`.
    pub(crate) fn init(&mut self, level: u16, lower: Fence, upper: Fence, prefix: &[u8]) {
        let size = self.size;
        self.bytes_mut(8, HEADER - 8).fill(0);
        self.write_u16(OFF_LEVEL, level);
        self.write_u32(OFF_HEAP_TOP, size as u32);
        self.write_u16(OFF_CS_LAST_SLOT, u16::MAX);
        let mut flags = 0;
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
        let guaranteed = match (lower, upper) {
            (Some(l), Some(u)) => common_prefix(l, u) == prefix.len() && l.starts_with(prefix),
            _ => prefix.is_empty(),
        };
        if !guaranteed {
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

    fn set_count(&mut self, n: usize) {
        self.write_u16(OFF_COUNT, n as u16);
    }

    /// Space an insert of a key of `key_len` bytes that carries the node prefix needs.
    pub(crate) fn space_needed(&self, key_len: usize, value_len: usize) -> usize {
        entry_space(key_len.saturating_sub(self.prefix_len()), value_len)
    }

    /// Whether `key`/`value` can be inserted, possibly after compaction or (in an edge
    /// node) after shortening the prefix.
    pub(crate) fn fits(&self, key: &[u8], value_len: usize) -> bool {
        let prefix = self.prefix().expect("latched");
        if key.starts_with(prefix) {
            return self.space_needed(key.len(), value_len) <= self.free_space();
        }
        self.reprefixed_size(common_prefix(prefix, key))
            + entry_space(key.len() - common_prefix(prefix, key), value_len)
            <= self.size
    }

    /// Bytes the node would use with its prefix shortened to `new_len` bytes.
    fn reprefixed_size(&self, new_len: usize) -> usize {
        let grow = self.prefix_len() - new_len;
        let mut total = HEADER + new_len;
        total += self.lower_fence().expect("latched").map_or(0, <[u8]>::len);
        total += self.upper_fence().expect("latched").map_or(0, <[u8]>::len);
        for i in 0..self.count() {
            let e = self.entry(i).expect("latched");
            total += entry_space(e.suffix_len + grow, e.value_len);
        }
        total
    }

    /// [`insert_at`](Node::insert_at) for the tree's inserts: an empty edge node first
    /// adopts the key as its prefix (later keys shorten it), so that the root and the edge
    /// nodes get a prefix too.
    pub(crate) fn insert_entry(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        if self.count() == 0 && self.prefix().expect("latched") != key {
            let lower = self.lower_fence().expect("latched").map(<[u8]>::to_vec);
            let upper = self.upper_fence().expect("latched").map(<[u8]>::to_vec);
            let upper_child = self.upper_child();
            self.init(self.level(), lower.as_deref(), upper.as_deref(), key);
            self.set_upper_child(upper_child);
        }
        self.insert_at(pos, key, value)
    }

    /// Inserts `key`/`value` at `pos` (which must keep the order). Returns false, changing
    /// nothing, if the entry does not fit even after compaction. In an edge node, a key that
    /// does not carry the prefix makes the node rebuild itself with the common prefix of the
    /// old prefix and the key.
    pub(crate) fn insert_at(&mut self, pos: usize, key: &[u8], value: &[u8]) -> bool {
        let plen = self.prefix_len();
        if plen > 0 && !key.starts_with(self.prefix().expect("latched")) {
            assert!(
                !self.prefix_is_guaranteed(),
                "key outside the node's fences"
            );
            if !self.fits(key, value.len()) {
                return false;
            }
            let new_len = common_prefix(self.prefix().expect("latched"), key);
            self.rebuild_with_prefix_len(new_len);
        }
        let plen = self.prefix_len();
        let suffix = &key[plen..];
        let need = entry_space(suffix.len(), value.len());
        if need > self.free_space() {
            return false;
        }
        if need > self.contiguous_space() {
            self.compact();
        }
        self.insert_suffix_at(pos, suffix, value);
        true
    }

    /// Writes one entry; there must be contiguous room for it.
    fn insert_suffix_at(&mut self, pos: usize, suffix: &[u8], value: &[u8]) {
        let count = self.count();
        let heap_len = entry_space(suffix.len(), value.len()) - SLOT;
        let off = self.heap_alloc(heap_len);
        self.write_entry(off, suffix, value);
        // Shift slots [pos, count) right by one.
        let start = HEADER + pos * SLOT;
        let end = HEADER + count * SLOT;
        self.bytes_mut(start, end - start + SLOT)
            .copy_within(0..end - start, SLOT);
        self.write_u32(start, head_of(suffix));
        self.write_u16(start + 4, off as u16);
        self.set_count(count + 1);
    }

    /// Encodes the heap entry of `suffix`/`value` at `off`.
    fn write_entry(&mut self, off: usize, suffix: &[u8], value: &[u8]) {
        let (sl, vl) = (suffix.len(), value.len());
        let h = lens_len(sl, vl);
        let header = self.bytes_mut(off, h);
        match h {
            1 => header[0] = ((sl << 4) | vl) as u8,
            2 => {
                header[0] = 0x80 | sl as u8;
                header[1] = vl as u8;
            }
            _ => {
                header[0] = 0xC0;
                header[1..3].copy_from_slice(&(sl as u16).to_le_bytes());
                header[3..5].copy_from_slice(&(vl as u16).to_le_bytes());
            }
        }
        let mut w = off + h;
        let rest = &suffix[suffix.len().min(4)..];
        self.bytes_mut(w, rest.len()).copy_from_slice(rest);
        w += rest.len();
        self.bytes_mut(w, value.len()).copy_from_slice(value);
    }

    /// Removes entry `pos`.
    pub(crate) fn remove_at(&mut self, pos: usize) {
        let count = self.count();
        let e = self.entry(pos).expect("entry of a latched node");
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

    /// Rewrites the node so that all free space is contiguous.
    pub(crate) fn compact(&mut self) {
        self.rebuild_with_prefix_len(self.prefix_len());
    }

    /// Rewrites the node with its prefix cut to `new_len` bytes (at most the current
    /// length); all free space ends up contiguous.
    fn rebuild_with_prefix_len(&mut self, new_len: usize) {
        let mut scratch = Scratch::new(self.size);
        let lower = self.lower_fence().expect("latched").map(<[u8]>::to_vec);
        let upper = self.upper_fence().expect("latched").map(<[u8]>::to_vec);
        let prefix = self.prefix().expect("latched")[..new_len].to_vec();
        {
            let mut b = scratch.builder(self.level(), lower.as_deref(), upper.as_deref(), &prefix);
            b.copy_range(self, 0..self.count());
            b.finish(self.upper_child());
        }
        let hot = self.is_hot();
        scratch.copy_into(self);
        self.set_hot(hot);
    }

    /// The prefix the part `range` of this node's keys would use under the given fences.
    fn prefix_for(&self, lower: Fence, upper: Fence, range: std::ops::Range<usize>) -> Vec<u8> {
        let (first, last) = if range.is_empty() {
            (None, None)
        } else {
            (
                Some(self.key(range.start).expect("latched")),
                Some(self.key(range.end - 1).expect("latched")),
            )
        };
        node_prefix(lower, upper, first.as_deref(), last.as_deref()).to_vec()
    }

    /// The page bytes the two halves of a split at `sep_pos` would need (see [`split`]):
    /// headers, fences, and every entry re-encoded under its half's new prefix.
    ///
    /// [`split`]: Node::split
    pub(crate) fn split_sizes(&self, sep_pos: usize) -> Result<(usize, usize), Restart> {
        let count = self.count();
        let lower = self.lower_fence()?;
        let upper = self.upper_fence()?;
        let mut sep = Vec::new();
        self.push_key(sep_pos, &mut sep)?;
        let plen = self.prefix_len();
        let left_end = if self.is_leaf() { sep_pos + 1 } else { sep_pos };
        let left_plen = self.prefix_for(lower, Some(&sep), 0..left_end).len();
        let right_plen = self.prefix_for(Some(&sep), upper, sep_pos + 1..count).len();
        let mut left = HEADER + left_plen + lower.map_or(0, <[u8]>::len) + sep.len();
        let mut right = HEADER + right_plen + sep.len() + upper.map_or(0, <[u8]>::len);
        for i in 0..count {
            let e = self.entry(i)?;
            let full = plen + e.suffix_len;
            if i < left_end {
                left += entry_space(full - left_plen.min(full), e.value_len);
            } else if i > sep_pos {
                right += entry_space(full - right_plen.min(full), e.value_len);
            }
        }
        Ok((left, right))
    }

    /// The split position nearest to `preferred` at which both halves fit in a page.
    /// Such a position always exists because entries and keys are at most a quarter and a
    /// sixteenth of a page (see `Config::max_value_len`).
    pub(crate) fn choose_split(&self, preferred: usize) -> Result<usize, Restart> {
        let count = self.count();
        let fits = |pos: usize| -> Result<bool, Restart> {
            let (l, r) = self.split_sizes(pos)?;
            Ok(l <= self.size && r <= self.size)
        };
        for distance in 0..count {
            for pos in [
                preferred.checked_sub(distance),
                preferred.checked_add(distance),
            ] {
                match pos {
                    Some(p) if p < count && (distance > 0 || p == preferred) && fits(p)? => {
                        return Ok(p)
                    }
                    _ => {}
                }
            }
        }
        Err(Restart)
    }

    /// Splits this node at `sep_pos`: a fresh page `left` receives the lower part, this node
    /// keeps the upper part, and the separator key (the new upper fence of `left`) is
    /// returned for the parent. Leaves keep entry `sep_pos` in `left`; inner nodes move its
    /// child to `left.upper_child` and push its key up. `sep_pos` must be below `count`
    /// (leaves) or below `count` with at least one key on the left or right (inner).
    pub(crate) fn split(&mut self, left: &mut Node, sep_pos: usize) -> Vec<u8> {
        let count = self.count();
        assert!(sep_pos < count, "split position out of range");
        let sep = self.key(sep_pos).expect("latched");
        let lower = self.lower_fence().expect("latched").map(<[u8]>::to_vec);
        let upper = self.upper_fence().expect("latched").map(<[u8]>::to_vec);
        let level = self.level();
        let left_end = if level == 0 { sep_pos + 1 } else { sep_pos };
        let left_prefix = self.prefix_for(lower.as_deref(), Some(&sep), 0..left_end);
        let right_prefix = self.prefix_for(Some(&sep), upper.as_deref(), sep_pos + 1..count);
        // Left half into the fresh page.
        {
            let mut b = Builder::new(*left, level, lower.as_deref(), Some(&sep), &left_prefix);
            if level == 0 {
                b.copy_range(self, 0..sep_pos + 1);
                b.finish(0);
            } else {
                b.copy_range(self, 0..sep_pos);
                b.finish(self.child(sep_pos).expect("latched"));
            }
        }
        // Right half rebuilt in place through a scratch page.
        let mut scratch = Scratch::new(self.size);
        {
            let mut b = scratch.builder(level, Some(&sep), upper.as_deref(), &right_prefix);
            b.copy_range(self, sep_pos + 1..count);
            b.finish(self.upper_child());
        }
        scratch.copy_into(self);
        sep
    }

    /// Space the merge of `left` into `right` would need, with `sep` being the parent key
    /// between them (inner nodes pull it down).
    pub(crate) fn merged_space(left: &Node, right: &Node, sep: &[u8]) -> Result<usize, Restart> {
        let lower = left.lower_fence()?;
        let upper = right.upper_fence()?;
        let plen = Self::merged_prefix(left, right, sep)?.len();
        let mut total = HEADER + plen + lower.map_or(0, <[u8]>::len) + upper.map_or(0, <[u8]>::len);
        for n in [left, right] {
            let grow = n.prefix_len() - plen.min(n.prefix_len());
            for i in 0..n.count() {
                let e = n.entry(i)?;
                total += entry_space(e.suffix_len + grow, e.value_len);
            }
        }
        if !left.is_leaf() {
            total += entry_space(sep.len() - plen, 4);
        }
        Ok(total)
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
        Ok(node_prefix(lower, upper, first.as_deref(), last.as_deref()).to_vec())
    }

    /// Merges `left` (its right neighbour under the same parent is `self`) into this node.
    /// `sep` is the parent key between them. The caller checked `merged_space` fits and
    /// frees `left` afterwards.
    pub(crate) fn merge_from_left(&mut self, left: &Node, sep: &[u8]) {
        let lower = left.lower_fence().expect("latched").map(<[u8]>::to_vec);
        let upper = self.upper_fence().expect("latched").map(<[u8]>::to_vec);
        let prefix = Self::merged_prefix(left, self, sep).expect("latched");
        let level = self.level();
        let mut scratch = Scratch::new(self.size);
        {
            let mut b = scratch.builder(level, lower.as_deref(), upper.as_deref(), &prefix);
            b.copy_range(left, 0..left.count());
            if level != 0 {
                b.push(sep, &left.upper_child().to_ne_bytes());
            }
            b.copy_range(self, 0..self.count());
            b.finish(self.upper_child());
        }
        scratch.copy_into(self);
    }
}

/// A page-sized buffer for rebuilding a node out of place.
pub(crate) struct Scratch {
    buf: Vec<u64>,
    size: usize,
}

impl Scratch {
    pub(crate) fn new(size: usize) -> Scratch {
        Scratch {
            buf: vec![0u64; size / 8],
            size,
        }
    }

    fn node(&mut self) -> Node {
        // SAFETY: the buffer holds `size` bytes and outlives the returned view's uses,
        // which all end before `self` is dropped.
        unsafe { Node::from_raw(self.buf.as_mut_ptr() as *mut u8, self.size) }
    }

    pub(crate) fn builder(
        &mut self,
        level: u16,
        lower: Fence,
        upper: Fence,
        prefix: &[u8],
    ) -> Builder {
        Builder::new(self.node(), level, lower, upper, prefix)
    }

    /// Copies everything but the latch word into `dst`.
    pub(crate) fn copy_into(&mut self, dst: &mut Node) {
        let src = self.node();
        let bytes = src.bytes(8, self.size - 8).expect("in bounds");
        dst.bytes_mut(8, self.size - 8).copy_from_slice(bytes);
    }
}

/// Writes entries in order into a freshly initialised node.
pub(crate) struct Builder {
    node: Node,
    key: Vec<u8>,
    /// Header fields kept here while entries are appended, written by `finish`.
    count: usize,
    heap_top: usize,
    heap_live: usize,
}

impl Builder {
    fn new(mut node: Node, level: u16, lower: Fence, upper: Fence, prefix: &[u8]) -> Builder {
        node.init(level, lower, upper, prefix);
        Builder {
            key: Vec::new(),
            count: 0,
            heap_top: node.heap_top(),
            heap_live: node.heap_live(),
            node,
        }
    }

    /// Reserves `heap_len` heap bytes and a slot for the next entry; returns the offset.
    fn reserve(&mut self, heap_len: usize) -> usize {
        assert!(
            HEADER + (self.count + 1) * SLOT + heap_len <= self.heap_top,
            "rebuilt node overflows its page"
        );
        self.heap_top -= heap_len;
        self.heap_live += heap_len;
        self.heap_top
    }

    fn write_slot(&mut self, head: u32, off: usize) {
        let slot = HEADER + self.count * SLOT;
        self.node.write_u32(slot, head);
        self.node.write_u16(slot + 4, off as u16);
        self.count += 1;
    }

    /// Appends an entry whose key without the node prefix is `suffix`.
    fn append(&mut self, suffix: &[u8], value: &[u8]) {
        let off = self.reserve(entry_space(suffix.len(), value.len()) - SLOT);
        self.node.write_entry(off, suffix, value);
        self.write_slot(head_of(suffix), off);
    }

    /// Appends entry `i` of `src` byte for byte (both nodes have the same prefix).
    fn append_verbatim(&mut self, src: &Node, i: usize) {
        let e = src.entry(i).expect("latched");
        let bytes = src.bytes(src.slot_offset(i), e.heap_len).expect("latched");
        let off = self.reserve(e.heap_len);
        self.node.bytes_mut(off, e.heap_len).copy_from_slice(bytes);
        self.write_slot(src.slot_head(i), off);
    }

    /// Appends `key`/`value`; `key` must start with the node prefix.
    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        let plen = self.node.prefix_len();
        assert!(key.len() >= plen, "rebuilt key lacks the node prefix");
        self.append(&key[plen..], value);
    }

    /// Appends entries `range` of `src`, re-encoded under this node's prefix.
    pub(crate) fn copy_range(&mut self, src: &Node, range: std::ops::Range<usize>) {
        let src_plen = src.prefix_len();
        let dst_plen = self.node.prefix_len();
        let mut key = std::mem::take(&mut self.key);
        for i in range {
            key.clear();
            if dst_plen == src_plen {
                // Same prefix (both are common prefixes of these keys): copy the bytes.
                self.append_verbatim(src, i);
            } else if dst_plen > src_plen {
                // Splits: the new suffix is the old one, shortened.
                src.push_suffix(i, &mut key).expect("latched");
                let value = src.value(i).expect("latched");
                self.append(&key[dst_plen - src_plen..], value);
            } else {
                src.push_key(i, &mut key).expect("latched");
                let value = src.value(i).expect("latched");
                self.push(&key, value);
            }
        }
        self.key = key;
    }

    /// Writes the header fields; `upper_child` is ignored by leaves (pass 0).
    pub(crate) fn finish(mut self, upper_child: PageId) {
        self.node.set_count(self.count);
        self.node.write_u32(OFF_HEAP_TOP, self.heap_top as u32);
        self.node.write_u32(OFF_HEAP_LIVE, self.heap_live as u32);
        self.node.set_upper_child(upper_child);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TestPage {
        mem: Vec<u64>,
    }

    impl TestPage {
        fn new(size: usize) -> TestPage {
            TestPage {
                mem: vec![0; size / 8],
            }
        }
        fn node(&mut self) -> Node {
            let size = self.mem.len() * 8;
            // SAFETY: the vector holds `size` bytes and outlives the view in each test.
            unsafe { Node::from_raw(self.mem.as_mut_ptr() as *mut u8, size) }
        }
    }

    fn insert(n: &mut Node, key: &[u8], value: &[u8]) -> bool {
        let (pos, found) = n.lower_bound(key).unwrap();
        assert!(!found);
        n.insert_at(pos, key, value)
    }

    fn keys(n: &Node) -> Vec<Vec<u8>> {
        (0..n.count()).map(|i| n.key(i).unwrap()).collect()
    }

    #[test]
    fn search_finds_inserted_keys_in_order() {
        let mut p = TestPage::new(4096);
        let mut n = p.node();
        n.init(0, None, None, b"");
        let ks: Vec<&[u8]> = vec![
            b"m",
            b"",
            b"abcd",
            b"abc",
            b"abcde",
            b"ab\0",
            b"ab",
            b"zzzzzzzz",
        ];
        for k in &ks {
            assert!(insert(&mut n, k, k));
        }
        let mut sorted = ks.clone();
        sorted.sort();
        assert_eq!(
            keys(&n),
            sorted.iter().map(|k| k.to_vec()).collect::<Vec<_>>()
        );
        for k in &ks {
            let (pos, found) = n.lower_bound(k).unwrap();
            assert!(found);
            assert_eq!(n.value(pos).unwrap(), *k);
        }
        assert_eq!(n.lower_bound(b"abcc").unwrap(), (4, false));
        assert_eq!(n.lower_bound(b"zzzzzzzzz").unwrap(), (8, false));
    }

    #[test]
    fn insert_until_full_then_remove_and_compact() {
        let mut p = TestPage::new(4096);
        let mut n = p.node();
        n.init(0, None, None, b"");
        let mut i = 0u32;
        while insert(&mut n, &(i * 7).to_be_bytes(), &[i as u8; 20]) {
            i += 1;
        }
        assert!(i > 100, "only {i} entries fit");
        let before = n.free_space();
        for j in (0..i).step_by(2) {
            let (pos, found) = n.lower_bound(&(j * 7).to_be_bytes()).unwrap();
            assert!(found);
            n.remove_at(pos);
        }
        assert!(n.free_space() > before);
        // Fragmented space is reused through compaction.
        let mut added = 0;
        while insert(&mut n, &(100_000 + added as u32).to_be_bytes(), &[1; 20]) {
            added += 1;
        }
        assert!(added >= (i / 2) as usize - 1);
        assert_eq!(n.used_space() + n.free_space(), 4096);
    }

    #[test]
    fn split_at_every_position_keeps_all_keys_and_fences() {
        for sep in 0..20 {
            let mut p = TestPage::new(4096);
            let mut q = TestPage::new(4096);
            let mut n = p.node();
            let mut left = q.node();
            n.init(0, Some(b"key0"), Some(b"key9"), b"key");
            assert_eq!(n.prefix_len(), 3);
            let all: Vec<Vec<u8>> = (0..20)
                .map(|i| format!("key1{i:03}").into_bytes())
                .collect();
            for k in &all {
                assert!(insert(&mut n, k, b"v"));
            }
            let s = n.split(&mut left, sep);
            assert_eq!(s, all[sep]);
            assert_eq!(keys(&left), all[..=sep].to_vec());
            assert_eq!(keys(&n), all[sep + 1..].to_vec());
            assert_eq!(left.lower_fence().unwrap(), Some(&b"key0"[..]));
            assert_eq!(left.upper_fence().unwrap(), Some(&s[..]));
            assert_eq!(n.lower_fence().unwrap(), Some(&s[..]));
            assert_eq!(n.upper_fence().unwrap(), Some(&b"key9"[..]));
            // Each half's prefix is its keys' common prefix, at least the fences' "key".
            for half in [&n, &left] {
                let p = half.prefix().unwrap();
                assert!(p.starts_with(b"key"));
                assert!(keys(half).iter().all(|k| k.starts_with(p)));
            }
        }
    }

    #[test]
    fn inner_split_pushes_the_separator_up() {
        let mut p = TestPage::new(4096);
        let mut q = TestPage::new(4096);
        let mut n = p.node();
        let mut left = q.node();
        n.init(1, None, None, b"");
        for i in 0..10u32 {
            assert!(insert(&mut n, &[i as u8 * 2], &(100 + i).to_ne_bytes()));
        }
        n.set_upper_child(999);
        let sep = n.split(&mut left, 4);
        assert_eq!(sep, vec![8]);
        assert_eq!(left.count(), 4);
        assert_eq!(left.upper_child(), 104);
        assert_eq!(n.count(), 5);
        assert_eq!(n.upper_child(), 999);
        assert_eq!(n.child(0).unwrap(), 105);
    }

    #[test]
    fn merge_restores_the_original_node() {
        let mut p = TestPage::new(4096);
        let mut q = TestPage::new(4096);
        let mut n = p.node();
        let mut left = q.node();
        n.init(0, Some(b"a"), Some(b"z"), b"");
        let all: Vec<Vec<u8>> = (0..30).map(|i| format!("m{i:02}").into_bytes()).collect();
        for k in &all {
            assert!(insert(&mut n, k, k));
        }
        let sep = n.split(&mut left, 11);
        let need = Node::merged_space(&left, &n, &sep).unwrap();
        assert!(need <= 4096);
        n.merge_from_left(&left, &sep);
        assert_eq!(keys(&n), all);
        assert_eq!(n.lower_fence().unwrap(), Some(&b"a"[..]));
        assert_eq!(n.upper_fence().unwrap(), Some(&b"z"[..]));
        for (i, k) in all.iter().enumerate() {
            assert_eq!(n.value(i).unwrap(), &k[..]);
        }
    }

    #[test]
    fn inner_merge_pulls_the_separator_down() {
        let mut p = TestPage::new(4096);
        let mut q = TestPage::new(4096);
        let mut n = p.node();
        let mut left = q.node();
        n.init(1, None, None, b"");
        for i in 0..10u32 {
            assert!(insert(&mut n, &[i as u8 * 2], &(100 + i).to_ne_bytes()));
        }
        n.set_upper_child(999);
        let sep = n.split(&mut left, 4);
        n.merge_from_left(&left, &sep);
        assert_eq!(n.count(), 10);
        for i in 0..10 {
            assert_eq!(n.key(i).unwrap(), vec![i as u8 * 2]);
            assert_eq!(n.child(i).unwrap(), 100 + i as u32);
        }
        assert_eq!(n.upper_child(), 999);
    }

    #[test]
    fn short_compare_and_heads_match_slice_order() {
        let samples: Vec<&[u8]> = vec![
            b"",
            b"\0",
            b"\0\0",
            b"a",
            b"a\0",
            b"ab",
            b"abcdefgh",
            b"abcdefg\xff",
            b"\xff",
        ];
        for a in &samples {
            for b in &samples {
                assert_eq!(cmp_short(a, b), a.cmp(b), "{a:?} vs {b:?}");
            }
            let mut padded = a.to_vec();
            padded.resize(4, 0);
            assert_eq!(
                head_of(a),
                u32::from_be_bytes(padded[..4].try_into().unwrap())
            );
        }
    }

    #[test]
    fn large_keys_and_values_use_long_length_headers() {
        let mut p = TestPage::new(8192);
        let mut n = p.node();
        n.init(0, None, None, b"");
        let k = vec![7u8; 300];
        let v = vec![9u8; 2000];
        assert!(insert(&mut n, &k, &v));
        let (pos, found) = n.lower_bound(&k).unwrap();
        assert!(found);
        assert_eq!(n.value(pos).unwrap(), &v[..]);
        assert_eq!(n.key(pos).unwrap(), k);
    }
}
