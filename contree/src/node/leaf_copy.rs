//! A private copy of one leaf, taken optimistically and validated once: what cursors and
//! scans read entries from.
//!
//! Reading entries in place costs a bounds-checked copy of every key and value out of a page
//! that a writer may change, and a validation of the latch after each one. A leaf copy costs
//! one block copy of the leaf's header, slots and heap (not the free space between them) and
//! one validation; after that the copy is private and immutable, so its entries are read as
//! plain slices: a value is borrowed in place, a key is its prefix (written once per leaf)
//! followed by its suffix. The buffer comes from the thread's spare page buffers
//! (`pagebuf`), so a scan allocates nothing once its thread has scanned before.

use super::short_form::{read_slot, Memo, Shape};
use super::{long_key_len, pagebuf, raw::RawPage, EntryLoc, Node, HEADER, OFF_PREFIX, SLOT};
use crate::blob;
use crate::long_key;
use crate::page::Directory;
use crate::sync::Restart;
use crate::Bytes;

mod walk;

/// A copy of one leaf (see the module doc). Empty until the first [`load`](Self::load).
#[derive(Debug, Default)]
pub(crate) struct LeafCopy {
    /// `size` bytes of the leaf, then [`PAD`] bytes that are no part of it.
    buf: Vec<u64>,
    size: usize,
    /// The entry count whose slots [`load`](Self::load) checked to lie inside the copy (0
    /// before a load and after one that failed): slot `i` of the copy is read without a
    /// check once `i` is below it.
    slots: usize,
    /// The out-of-line value of the current entry, when it has one (see [`fetch`]).
    ///
    /// [`fetch`]: Self::fetch
    blob: Vec<u8>,
    /// The out-of-line value fetched last, until [`adopt`](Self::adopt) makes it current.
    spare: Vec<u8>,
    /// The whole key of the long key fetched last (see [`fetch`](Self::fetch)), which
    /// [`read`](Self::read) and [`walk`](Self::walk) hand out for its stored form.
    long_key: Vec<u8>,
    /// The start of every key [`copy_short`](Self::copy_short) builds: the copy's prefix,
    /// then zeros; written by [`load`](Self::load).
    template: KeyTemplate,
}

/// The bytes [`LeafCopy::copy_short`] builds a key in: the prefix (`len` bytes, at most
/// `Bytes::INLINE_CAPACITY`), the head, then a block of the rest.
#[derive(Clone, Copy, Debug)]
struct KeyTemplate {
    bytes: [u8; TEMPLATE],
    /// The prefix's length; [`NO_TEMPLATE`] when the copy's prefix is longer than a `Bytes`
    /// holds inline, or torn, so that no key fits (a `u8`, so that the optimiser knows the
    /// sum with a suffix's length does not wrap: a key that fits has `len <= CAP`).
    len: u8,
}

/// The [`KeyTemplate::len`] of a copy whose keys never fit inline.
const NO_TEMPLATE: u8 = Bytes::INLINE_CAPACITY as u8 + 1;

/// The length of a [`KeyTemplate`]'s bytes.
/// (the prefix, the head and a rest block, rounded up to whole 16-byte moves).
const TEMPLATE: usize = (Bytes::INLINE_CAPACITY + 4 + REST_BLOCK).next_multiple_of(16);

impl Default for KeyTemplate {
    fn default() -> KeyTemplate {
        KeyTemplate {
            bytes: [0; TEMPLATE],
            len: NO_TEMPLATE,
        }
    }
}

/// Where a value lies: in a [`LeafCopy`] (checked to lie inside it when it was read), or
/// in its buffer of the current out-of-line value.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Place {
    off: usize,
    len: usize,
    kind: PlaceKind,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum PlaceKind {
    /// The value's bytes in the copy.
    #[default]
    Inline,
    /// The stub of an out-of-line value, in the copy (not yet adopted).
    Stub,
    /// The current out-of-line value.
    Blob,
}

/// A short entry of a copy (see `LeafCopy::short_entry`): every offset lies inside the copy.
struct Short {
    head: u32,
    suffix_len: usize,
    rest_off: usize,
    rest_len: usize,
    place: Place,
}

/// Room a key buffer needs after the prefix for `LeafCopy::put_short`: the head and the rest
/// of a suffix under 64 bytes, copied in eight-byte blocks.
const SHORT_KEY_ROOM: usize = 4 + 64;

/// The size of the block a key's rest is copied in: a rest of up to 16 bytes (a key of up to
/// 20 bytes after the prefix) takes one 16-byte move; a longer one is copied exactly.
const REST_BLOCK: usize = 16;

/// The bytes [`LeafCopy::copy_short`] reads of an inline value: three words, the last of
/// which holds the value's bytes 16..22 and two bytes past them (see `Bytes::from_words_unchecked`).
const VALUE_READ: usize = 24;

/// The bytes [`LeafCopy::copy_short`] reads from an entry's offset on, with no check but
/// that the offset lies inside the copy: the length header (at most 2 bytes), the rest's
/// block (at most `2 + REST_BLOCK` bytes in) and the value's words (their start at most
/// `2 + 18`, the longest rest of a key that fits inline, bytes in).
const ENTRY_READ: usize = 2 + 18 + VALUE_READ;

/// The bytes a copy's buffer holds past the copy (zeros or a previous user's bytes, never
/// read as part of an entry): room for an [`ENTRY_READ`] from any offset inside the copy.
const PAD: usize = ENTRY_READ.next_multiple_of(8);

/// Copies `src[off..off + len]` to `dst[at..]`: a part that the fixed-size blocks of
/// [`LeafCopy::copy_short`] cannot reach. `None` if it leaves `src` or `dst`.
#[cold]
#[inline(never)]
fn copy_exact(dst: &mut [u8], at: usize, src: &[u8], off: usize, len: usize) -> Option<()> {
    dst.get_mut(at..at.checked_add(len)?)?
        .copy_from_slice(src.get(off..off.checked_add(len)?)?);
    Some(())
}

/// The eight bytes at `p` as a little-endian number.
///
/// # Safety
/// `p..p + 8` lies inside one allocation and is initialised.
#[inline(always)]
unsafe fn le_word(p: *const u8) -> u64 {
    // SAFETY: the caller's contract; an unaligned read of plain bytes.
    u64::from_le_bytes(unsafe { std::ptr::read_unaligned(p as *const [u8; 8]) })
}

/// Whether [`LeafCopy::block_entry`] builds an entry of `shape` in a copy whose prefix is
/// `plen` bytes with its fixed-size moves alone: the rest fits the block, the head and
/// block fit the template after the prefix, and the block and the value's inline block
/// start early enough to end within [`ENTRY_READ`] bytes of the entry.
#[inline(always)]
fn block_ready(plen: usize, shape: &Shape) -> bool {
    shape.value_at - shape.rest_at <= REST_BLOCK
        && plen + 4 + REST_BLOCK <= TEMPLATE
        && shape.rest_at <= 2
        && shape.value_at <= ENTRY_READ - VALUE_READ
}

impl Drop for LeafCopy {
    fn drop(&mut self) {
        pagebuf::give(std::mem::take(&mut self.buf));
    }
}

impl LeafCopy {
    /// Copies `leaf`'s header (without the latch word), slots and heap. The copy is
    /// garbage (but memory-safe to read) until the caller validates the snapshot under
    /// which it read `leaf`; `Restart` if the header was torn.
    #[inline]
    pub(crate) fn load(&mut self, leaf: &Node) -> Result<(), Restart> {
        let size = leaf.page_size();
        self.slots = 0;
        if self.size != size {
            pagebuf::give(std::mem::take(&mut self.buf));
            self.buf = pagebuf::take(size + PAD);
            self.size = size;
        }
        let count = leaf.count();
        let slots_end = HEADER + count * SLOT;
        let heap_top = leaf.heap_top();
        if heap_top < slots_end || heap_top > size {
            return Err(Restart);
        }
        let dst = self.buf.as_mut_ptr() as *mut u8;
        // SAFETY: the buffer holds `size + PAD` bytes and is this copy's own (`&mut self`);
        // `8..slots_end` and `heap_top..size` lie inside it (`slots_end <= heap_top <=
        // size`), and `copy_to_ptr` checks them against the page. The latch word (bytes
        // 0..8) is not copied: it is written atomically by other threads.
        unsafe {
            leaf.raw().copy_to_ptr(8, slots_end - 8, dst.add(8))?;
            leaf.raw()
                .copy_to_ptr(heap_top, size - heap_top, dst.add(heap_top))?;
        }
        self.slots = count;
        self.set_template();
        Ok(())
    }

    /// Frees the byte buffers (out-of-line values, long keys) whose capacity exceeds
    /// `max`, before the copy is kept for a later cursor (`ops::cursor_kit`).
    pub(crate) fn trim(&mut self, max: usize) {
        for b in [&mut self.blob, &mut self.spare, &mut self.long_key] {
            if b.capacity() > max {
                *b = Vec::new();
            }
        }
    }

    /// Writes the key template from the copy's prefix (so that a copy that fails
    /// validation and is loaded again gets its own).
    fn set_template(&mut self) {
        let node = self.node();
        let plen = node.prefix_len();
        let off = node.header_u32(OFF_PREFIX) as usize;
        let mut t = KeyTemplate::default();
        if plen <= Bytes::INLINE_CAPACITY {
            if let Some(p) = self.bytes().get(off..off + plen) {
                t.bytes[..plen].copy_from_slice(p);
                t.len = plen as u8;
            }
        }
        self.template = t;
    }

    /// The copy's bytes.
    #[inline]
    fn bytes(&self) -> &[u8] {
        // SAFETY: `buf` holds at least `size / 8` initialised words, `size` bytes, written
        // only through `&mut self`.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.size) }
    }

    /// A read view of the copy (for searches and fences).
    #[inline]
    pub(crate) fn node(&self) -> Node {
        // SAFETY: the buffer holds `size` bytes and outlives every use of the view, which
        // only reads (views of a copy are used while `&self` is borrowed).
        Node::new(unsafe { RawPage::new(self.buf.as_ptr() as *mut u8, self.size) })
    }

    /// Number of entries.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        if self.size == 0 {
            return 0;
        }
        self.node().count()
    }

    /// Writes the key of entry `i` (below [`count`](Self::count)) into `key` and returns
    /// where its value lies. If `prefix_kept`, `key` already starts with this copy's prefix
    /// (it holds another key of this copy) and only the suffix is rewritten. `None` (leaving
    /// `key` alone: `entry` checks the entry's offsets before `key` is touched, and the copy
    /// below cannot fail after that) if the entry leaves the page, which only a copy that
    /// was not validated holds; an `i` not below the count reads garbage, memory-safely.
    #[inline(always)]
    pub(crate) fn read(&self, i: usize, prefix_kept: bool, key: &mut Vec<u8>) -> Option<Place> {
        if self.size == 0 {
            return None;
        }
        let node = self.node();
        let e = node.entry(i).ok()?;
        let plen = node.prefix_len();
        let bytes = self.bytes();
        let prefix = if prefix_kept && key.len() >= plen {
            None
        } else {
            let off = node.header_u32(OFF_PREFIX) as usize;
            Some(bytes.get(off..off.checked_add(plen)?)?)
        };
        if let Some(p) = prefix {
            key.clear();
            key.extend_from_slice(p);
        }
        let place = self.put_suffix(&node, i, &e, plen, key)?;
        self.whole_key(key);
        Some(place)
    }

    /// [`read`](Self::read) of entry `i` of a copy that `key` already holds a key of (so
    /// its prefix is kept), in a tree without long keys: the key's suffix is written and
    /// the inline value's place returned in one decode of the entry. `None`, leaving `key`
    /// alone, for an out-of-line value (which needs [`fetch`](Self::fetch) first) or an
    /// entry that leaves the page.
    #[inline(always)]
    pub(crate) fn read_inline(&self, i: usize, key: &mut Vec<u8>) -> Option<Place> {
        let node = self.node();
        let plen = node.prefix_len();
        if key.len() < plen {
            return None;
        }
        if let Some(e) = self.short_entry(i) {
            if key.capacity() < plen + SHORT_KEY_ROOM {
                key.reserve(plen + SHORT_KEY_ROOM - key.len());
            }
            self.put_short(&e, plen, key);
            return Some(e.place);
        }
        let e = node.entry(i).ok()?;
        if e.stub {
            return None;
        }
        self.put_suffix(&node, i, &e, plen, key)
    }

    /// Replaces a long key's stored form in `key` by the whole key [`fetch`](Self::fetch)
    /// read for it.
    #[inline(always)]
    fn whole_key(&self, key: &mut Vec<u8>) {
        if key.len() == long_key_len(self.size) {
            key.clear();
            key.extend_from_slice(&self.long_key);
        }
    }

    /// Writes the suffix of entry `i` (located at `e`) after the first `plen` bytes of
    /// `key`, which hold the copy's prefix (`key` may be longer: it is cut to the new key), and returns where the entry's value lies. Makes
    /// room only when `key` has too little (a scan's keys rarely grow). `e` comes from
    /// `entry(i)`, which checked that the suffix lies inside the page, so the `None` of the
    /// checked copy below does not happen.
    #[inline(always)]
    fn put_suffix(
        &self,
        node: &Node,
        i: usize,
        e: &EntryLoc,
        plen: usize,
        key: &mut Vec<u8>,
    ) -> Option<Place> {
        let klen = plen + e.suffix_len;
        if key.capacity() < klen + 4 {
            // `len <= capacity < klen + 4`: no underflow.
            key.reserve(klen + 4 - key.len());
        }
        let rest_len = e.suffix_len.saturating_sub(4);
        // SAFETY: `e` is `entry(i)`, which succeeded: `i` is below the slots a page holds.
        let head = unsafe { node.slot_head(i) }.to_be_bytes();
        let k = key.as_mut_ptr();
        // SAFETY: `key` holds at least `plen` initialised bytes (the caller's contract) and
        // has room for `klen + 4` (ensured above); the four
        // head bytes and the rest go to `plen..plen + 4` and `plen + 4..klen`, inside that
        // room, from the copy, which does not overlap `key` (`entry` checked that the rest,
        // which the value follows, lies inside the copy, and `copy_to_ptr` checks it again:
        // short copies without a call of `memcpy`). After them `key[..klen]` is initialised:
        // prefix, `min(suffix_len, 4)` head bytes, rest.
        unsafe {
            std::ptr::write_unaligned(k.add(plen) as *mut [u8; 4], head);
            if rest_len > 0 {
                node.raw()
                    .copy_to_ptr(e.rest_off, rest_len, k.add(plen + 4))
                    .ok()?;
            }
            key.set_len(klen);
        }
        Some(Place {
            off: e.value_off,
            len: e.value_len,
            kind: if e.stub {
                PlaceKind::Stub
            } else {
                PlaceKind::Inline
            },
        })
    }

    /// If entry `i` of the copy holds the stub of an out-of-line value, copies that value
    /// through `dir` into the spare buffer and returns `true`. Like the copy itself, the
    /// bytes are garbage (and `Restart` may come) until the caller validates the leaf *after*
    /// this call; then [`adopt`](Self::adopt) makes them the value of the entry's place.
    ///
    /// If `long_keys` (the tree has stored a long key; read after the copy validated), a
    /// long key's whole key is read the same way, for `read` to hand out.
    #[inline(always)]
    pub(crate) fn fetch(
        &mut self,
        i: usize,
        dir: &Directory,
        long_keys: bool,
    ) -> Result<bool, Restart> {
        if self.size == 0 {
            return Ok(false);
        }
        let key = long_keys && self.fetch_key(i, dir)?;
        if !self.node().is_stub(i) {
            return Ok(key);
        }
        let e = self.node().entry(i)?;
        self.fetch_at(&e, dir).map(|()| true)
    }

    /// Reads the whole key of entry `i` if it is a long key's stored form (see
    /// [`fetch`](Self::fetch)); whether it was.
    #[cold]
    #[inline(never)]
    fn fetch_key(&mut self, i: usize, dir: &Directory) -> Result<bool, Restart> {
        let node = self.node();
        let e = node.entry(i)?;
        if node.prefix_len() + e.suffix_len != long_key_len(self.size) {
            return Ok(false);
        }
        self.long_key.clear();
        node.push_key(i, &mut self.long_key)?;
        long_key::expand(&mut self.long_key, dir)?;
        Ok(true)
    }

    /// [`fetch`](Self::fetch) of the entry at `e`, which flags a stub.
    #[cold]
    #[inline(never)]
    fn fetch_at(&mut self, e: &EntryLoc, dir: &Directory) -> Result<(), Restart> {
        let stub = self.node().stub_at(e)?.ok_or(Restart)?;
        self.spare.clear();
        blob::read(dir, self.size, stub, &mut self.spare)
    }

    /// The place of a value read by [`read`](Self::read) or [`walk`](Self::walk) once it
    /// can be handed out: a stub's place becomes that of the value [`fetch`](Self::fetch)
    /// copied for the same entry, which becomes the current one.
    #[inline]
    pub(crate) fn adopt(&mut self, place: Place) -> Place {
        if place.kind != PlaceKind::Stub {
            return place;
        }
        std::mem::swap(&mut self.blob, &mut self.spare);
        Place {
            off: 0,
            len: self.blob.len(),
            kind: PlaceKind::Blob,
        }
    }

    /// Entry `i` of the copy when its length header has one of the two short forms (a
    /// suffix under 64 bytes, a value under 256 bytes in the page, never a stub; see
    /// [`Memo::decode`]), decoded straight from the copy's bytes: `None` for the long form,
    /// for an `i` not below the checked count (`slots`), and for an entry that leaves the
    /// page (garbage of a copy that was not validated). The per-entry step of cursors,
    /// which [`entry`](Node::entry) and its checks for shared pages would cost twice over.
    #[inline(always)]
    fn short_entry(&self, i: usize) -> Option<Short> {
        // A copy never loaded, or whose load failed, has `slots` 0.
        if i >= self.slots {
            return None;
        }
        let base = self.buf.as_ptr() as *const u8;
        // SAFETY: `i < slots`, and `load` checked the slots against the copy.
        let (head, off) = unsafe { read_slot(base, i) };
        let shape = Memo::decode(base, self.size, off, 0)?.shape;
        Some(Short {
            head,
            suffix_len: shape.key_len,
            rest_off: off + shape.rest_at,
            rest_len: shape.value_at - shape.rest_at,
            place: Place {
                off: off + shape.value_at,
                len: shape.value_len,
                kind: PlaceKind::Inline,
            },
        })
    }

    /// Entry `i` of the copy as [`Bytes`], built straight from the copy (no key buffer in
    /// between), when it is a short entry (see `short_entry`, whose checks this repeats)
    /// whose key and value both fit inline in a `Bytes`: the per-entry step of a range.
    /// `None` otherwise, and for an entry that leaves the copy (garbage of a copy that was
    /// not validated). Reads the slot unchecked below the checked count (`slots`) and the
    /// entry's bytes as one fixed-size block (the buffer's `PAD` makes room for it at any
    /// offset inside the copy), so the step costs two range checks and the decode.
    #[inline(always)]
    pub(crate) fn copy_short(&self, i: usize) -> Option<(Bytes, Bytes)> {
        self.copy_short_memo(i, &mut Memo::default())
    }

    /// [`copy_short`](Self::copy_short) with a [`Memo`] of the last entry this copy
    /// decoded for it (empty, or decoded from this copy by this function, while the copy
    /// is unchanged): the step of a range's window, which walks one copy.
    ///
    /// This function keeps in `memo` only shapes whose key and value it builds with the
    /// fixed-size moves alone (`block_ready`), so that an entry whose header matches the
    /// memo's takes them with no check but the memo's two (callgrind, the ruler's
    /// `scan100`: the checks of the moves cost every entry 8 instructions of ~48).
    #[inline(always)]
    pub(crate) fn copy_short_memo(&self, i: usize, memo: &mut Memo) -> Option<(Bytes, Bytes)> {
        const CAP: usize = Bytes::INLINE_CAPACITY;
        // A copy never loaded, or whose load failed, has `slots` 0.
        if i >= self.slots {
            return None;
        }
        let base = self.buf.as_ptr() as *const u8;
        // SAFETY: `i < slots`, and `load` checked the slots against the copy.
        let (head, off) = unsafe { read_slot(base, i) };
        // A prefix longer than a `Bytes` holds inline has length `NO_TEMPLATE`: no key fits.
        let plen = self.template.len as usize;
        // SAFETY: `memo` is empty or was decoded from this copy (the caller's contract).
        if let Some(shape) = unsafe { memo.hit(base, off) } {
            // SAFETY: the memo holds only shapes that passed `block_ready` with this copy's
            // `plen` (below), and `off` is at most its `limit`, below the copy's size.
            return Some(unsafe { self.block_entry(base, off, head, plen, shape) });
        }
        let m = Memo::decode(base, self.size, off, plen)?;
        let shape = m.shape;
        if shape.key_len > CAP || shape.value_len > CAP {
            return None;
        }
        if block_ready(plen, &shape) {
            *memo = m;
            // SAFETY: `shape` passed `block_ready`, and `decode` checked `off < size`.
            return Some(unsafe { self.block_entry(base, off, head, plen, shape) });
        }
        // A rest longer than the block (a key of 21 or 22 bytes with a prefix of at most
        // one): the head after the prefix, then the rest copied exactly. `plen <= klen <=
        // CAP`, so the head lies inside the template (`CAP + 4 + REST_BLOCK` is its
        // length); `copy_exact` checks the rest.
        let (rest_at, value_at) = (shape.rest_at, shape.value_at);
        // SAFETY: as in `block_entry`: `off < size`, and the buffer holds `PAD >=
        // ENTRY_READ` bytes more; the copy's own bytes, which nothing writes meanwhile.
        let w = unsafe { &*(base.add(off) as *const [u8; ENTRY_READ]) };
        let mut k = self.template.bytes;
        k.get_mut(plen..plen + 4)?
            .copy_from_slice(&head.to_be_bytes());
        copy_exact(&mut k, plen + 4, w, rest_at, value_at - rest_at)?;
        Some((
            Bytes::copy_from_slice(k.get(..shape.key_len)?),
            Bytes::copy_from_slice(w.get(value_at..value_at + shape.value_len)?),
        ))
    }

    /// The entry at `off` with head `head` and shape `shape`, built in registers as the
    /// words of its two [`Bytes`] (`Bytes::from_words_unchecked`): the key from the template's prefix
    /// words with the suffix (the four head bytes, then the rest's 16-byte block, which may
    /// hold bytes past the key's end that are not part of it) shifted in after the prefix,
    /// the value from three words read at its start. Built in memory and read back as a
    /// whole, the key and both `Bytes` made the range wait for stores to reach the cache
    /// (`bench/results/range-stalls-s61.txt`).
    ///
    /// # Safety
    /// `off` is below the copy's size; `shape` is a short entry's of this copy with key and
    /// value of at most `Bytes::INLINE_CAPACITY` bytes and passed [`block_ready`] with
    /// `plen`, this copy's prefix length.
    #[inline(always)]
    unsafe fn block_entry(
        &self,
        base: *const u8,
        off: usize,
        head: u32,
        plen: usize,
        shape: Shape,
    ) -> (Bytes, Bytes) {
        // SAFETY: `block_ready` (the caller's contract): `rest_at <= 2` and `value_at <=
        // ENTRY_READ - VALUE_READ`, so the rest's block (`rest_at + REST_BLOCK <= 18`) and
        // the value's words end within `ENTRY_READ` bytes of `off`, which is below the
        // copy's size: inside the buffer, which holds `PAD >= ENTRY_READ` bytes more. The
        // copy's own bytes, which nothing writes while `&self` is borrowed. The template's
        // first 24 bytes lie inside its `TEMPLATE >= 24` bytes.
        let (r0, r1, v0, v1, v2, t) = unsafe {
            let w = base.add(off);
            let t = self.template.bytes.as_ptr();
            (
                le_word(w.add(shape.rest_at)),
                le_word(w.add(shape.rest_at + 8)),
                le_word(w.add(shape.value_at)),
                le_word(w.add(shape.value_at + 8)),
                le_word(w.add(shape.value_at + 16)),
                [le_word(t), le_word(t.add(8)), le_word(t.add(16))],
            )
        };
        // The suffix's 20 bytes as little-endian words: the head (big-endian in the slot),
        // then the rest.
        let s0 = u64::from(head.swap_bytes()) | r0 << 32;
        let k = if shape.key_len <= 8 && plen < 8 {
            // A key of one word (integer keys): the suffix after the prefix's bytes.
            [t[0] | s0 << (8 * plen), 0, 0]
        } else {
            let s = [s0, r0 >> 32 | r1 << 32, r1 >> 32];
            // Shifted to byte `plen % 8` of a word, then by `plen / 8` words (`plen <= 22`,
            // the caller's contract through `block_ready`; the prefix's bytes of `t`, zero
            // after).
            let sh = 8 * (plen % 8) as u32;
            let carry = |x: u64| (x >> 1) >> (63 - sh);
            let u = [
                s[0] << sh,
                s[1] << sh | carry(s[0]),
                s[2] << sh | carry(s[1]),
            ];
            match plen / 8 {
                0 => [t[0] | u[0], t[1] | u[1], t[2] | u[2]],
                1 => [t[0], t[1] | u[0], t[2] | u[1]],
                _ => [t[0], t[1], t[2] | u[0]],
            }
        };
        // SAFETY: both lengths are at most `Bytes::INLINE_CAPACITY` (the caller's contract).
        unsafe {
            (
                Bytes::from_words_unchecked(shape.key_len, k[0], k[1], k[2]),
                Bytes::from_words_unchecked(shape.value_len, v0, v1, v2),
            )
        }
    }

    /// Writes the suffix of the short entry `e` after the first `plen` bytes of `key`,
    /// which hold the copy's prefix, and cuts `key` to the entry's key. `key` must have
    /// room for [`SHORT_KEY_ROOM`] bytes after the prefix.
    #[inline(always)]
    fn put_short(&self, e: &Short, plen: usize, key: &mut Vec<u8>) {
        debug_assert!(key.len() >= plen && key.capacity() >= plen + SHORT_KEY_ROOM);
        let k = key.as_mut_ptr();
        // SAFETY: `key` holds at least `plen` initialised bytes and has room for
        // `plen + SHORT_KEY_ROOM` (the caller's contract, checked in debug builds); the head
        // goes to `plen..plen + 4` and the rest's eight-byte blocks (at most 8: `rest_len <
        // 60`) to `plen + 4..plen + 4 + 64`, inside that room. The source blocks end at most
        // 7 bytes past the rest, whose end (the value's start) `short_entry` checked to lie
        // inside the copy: inside the buffer, which holds `PAD >= 7` bytes more. The copy
        // does not overlap `key` (a separate allocation). Afterwards `key[..plen +
        // suffix_len]` is initialised: prefix, head bytes, rest.
        unsafe {
            std::ptr::write_unaligned(k.add(plen) as *mut [u8; 4], e.head.to_be_bytes());
            let src = self.buf.as_ptr().cast::<u8>().add(e.rest_off);
            let dst = k.add(plen + 4);
            let w = std::ptr::read_unaligned(src as *const [u8; 8]);
            std::ptr::write_unaligned(dst as *mut [u8; 8], w);
            let mut j = 8;
            while j < e.rest_len {
                let w = std::ptr::read_unaligned(src.add(j) as *const [u8; 8]);
                std::ptr::write_unaligned(dst.add(j) as *mut [u8; 8], w);
                j += 8;
            }
            key.set_len(plen + e.suffix_len);
        }
    }

    /// The value at `place` (read from this copy by [`read`](Self::read)).
    #[inline]
    pub(crate) fn value(&self, place: Place) -> &[u8] {
        let bytes = match place.kind {
            PlaceKind::Inline => self.bytes(),
            PlaceKind::Blob => &self.blob,
            // Never handed out: `adopt` turns it into a `Blob` place first.
            PlaceKind::Stub => return &[],
        };
        bytes
            .get(place.off..place.off + place.len)
            .unwrap_or_default()
    }
}
