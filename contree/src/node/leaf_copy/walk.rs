//! The visitor scans' walk over a leaf copy ([`LeafCopy::walk`]): the general step, and the
//! lean loop over short entries with its key word (`walk_short`).

use super::{le_word, LeafCopy, Place, SHORT_KEY_ROOM};
use crate::node::long_key_len;
use crate::node::short_form::{read_slot, Memo};
use crate::page::Directory;
use crate::sync::Restart;
use std::ops::ControlFlow;

/// The `P` of [`LeafCopy::walk_short`] for a prefix of 8 bytes or more: no key word.
const NO_WORD: usize = 8;

impl LeafCopy {
    /// Calls `f` with the entries `from + 1`, `from + 2`, ... (`FORWARD`) or `from - 1`,
    /// `from - 2`, ... of the copy, below `count`, until `f` breaks; `key` holds key `from`
    /// of this copy and holds the key of the last entry `f` saw when the walk returns, whose
    /// index and place it returns (`None` if there was no further entry). The
    /// visitor scans' loop: the prefix stays in `key`, and no entry is validated on its own
    /// (the copy was, as a whole), except one with an out-of-line value: that value is
    /// fetched through `dir` and `validate` (the leaf's snapshot) checked before the entry
    /// is handed out. When that check fails the walk stops before the entry, with `stale`
    /// set (the third part of the result).
    #[inline(always)]
    pub(crate) fn walk<const FORWARD: bool, R>(
        &mut self,
        from: usize,
        count: usize,
        key: &mut Vec<u8>,
        blobs: (&Directory, &dyn Fn() -> Result<(), Restart>, bool),
        f: &mut impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
    ) -> (Option<(usize, Place)>, ControlFlow<R>, bool) {
        if self.size == 0 {
            return (None, ControlFlow::Continue(()), false);
        }
        let node = self.node();
        let plen = node.prefix_len();
        if key.len() < plen {
            return (None, ControlFlow::Continue(()), false);
        }
        // Room for short entries' keys, made once (a scan's keys rarely grow).
        if key.capacity() < plen + SHORT_KEY_ROOM {
            key.reserve(plen + SHORT_KEY_ROOM - key.len());
        }
        // Without long keys, runs of short entries take the lean loop; the others (and every
        // entry in a tree that has stored a long key) the general step.
        let lean = !blobs.2;
        let mut i = from;
        // The last entry `f` saw, and its place when the general step read it (a short
        // entry's place is decoded again once the walk ends).
        let mut seen: Option<(usize, Option<Place>)> = None;
        let mut stale = false;
        let flow = loop {
            if lean {
                // One loop per prefix length under 8, so that its key word's shift is a
                // constant (see `walk_short`).
                let (stop, short_seen, flow) = match plen {
                    0 => self.walk_short::<FORWARD, R, 0>(i, count, plen, key, f),
                    1 => self.walk_short::<FORWARD, R, 1>(i, count, plen, key, f),
                    2 => self.walk_short::<FORWARD, R, 2>(i, count, plen, key, f),
                    3 => self.walk_short::<FORWARD, R, 3>(i, count, plen, key, f),
                    4 => self.walk_short::<FORWARD, R, 4>(i, count, plen, key, f),
                    5 => self.walk_short::<FORWARD, R, 5>(i, count, plen, key, f),
                    6 => self.walk_short::<FORWARD, R, 6>(i, count, plen, key, f),
                    7 => self.walk_short::<FORWARD, R, 7>(i, count, plen, key, f),
                    _ => self.walk_short::<FORWARD, R, NO_WORD>(i, count, plen, key, f),
                };
                if short_seen {
                    seen = Some((
                        if FORWARD {
                            stop - 1
                        } else {
                            stop.wrapping_add(1)
                        },
                        None,
                    ));
                }
                if let ControlFlow::Break(r) = flow {
                    break ControlFlow::Break(r);
                }
                i = stop;
            } else {
                i = if FORWARD { i + 1 } else { i.wrapping_sub(1) };
            }
            if i >= count {
                break ControlFlow::Continue(());
            }
            let Ok(e) = node.entry(i) else {
                break ControlFlow::Continue(());
            };
            if e.stub && self.fetch_at(&e, blobs.0).and_then(|_| blobs.1()).is_err() {
                stale = true;
                break ControlFlow::Continue(());
            }
            let long = blobs.2 && plen + e.suffix_len == long_key_len(self.size);
            if long && self.fetch_key(i, blobs.0).and_then(|_| blobs.1()).is_err() {
                stale = true;
                break ControlFlow::Continue(());
            }
            let Some(place) = self.put_suffix(&node, i, &e, plen, key) else {
                break ControlFlow::Continue(());
            };
            if long {
                self.whole_key(key);
            }
            let place = self.adopt(place);
            seen = Some((i, Some(place)));
            if let ControlFlow::Break(r) = f(key, self.value(place)) {
                break ControlFlow::Break(r);
            }
        };
        let last = seen
            .and_then(|(i, place)| Some((i, place.or_else(|| Some(self.short_entry(i)?.place))?)));
        (last, flow, stale)
    }

    /// The lean loop of [`walk`](Self::walk): hands `f` the entries after (`FORWARD`) or
    /// before entry `from` while they are short (see `short_entry`, whose checks this makes
    /// with the copy's base, size and checked slot count held in registers), writing each
    /// key's suffix after the `plen` prefix bytes `key` holds (`key` must have room for
    /// [`SHORT_KEY_ROOM`] more). Returns the index it stopped at (the first entry not
    /// handed out: past the checked count, or not short), whether it handed out any entry
    /// (then `key` holds the last one's key, which lies next to the stop), and `f`'s flow:
    /// on a break the stop is the entry after (before) the one `f` broke at.
    ///
    /// `P` is `plen` when it is under 8 ([`NO_WORD`] otherwise): then a key of up to 8
    /// bytes is written with one 8-byte store from offset 0, put together in a register
    /// from the prefix (read once), the head and the rest (shifted by the constant `P`
    /// bytes). A visitor that loads the key's first word (an integer key read with
    /// `u64::from_be_bytes(k[..8])`) then loads from one store, which the CPU forwards;
    /// written as the head and the rest behind the prefix, that load spanned the prefix and
    /// two stores and waited for them to reach the cache, about 5 ns an entry
    /// (`bench/results/scan-key-store-s61.txt`, `scan-key-word-s62.txt`).
    #[inline(always)]
    fn walk_short<const FORWARD: bool, R, const P: usize>(
        &self,
        from: usize,
        count: usize,
        plen: usize,
        key: &mut Vec<u8>,
        f: &mut impl FnMut(&[u8], &[u8]) -> ControlFlow<R>,
    ) -> (usize, bool, ControlFlow<R>) {
        debug_assert!(key.len() >= plen && key.capacity() >= plen + SHORT_KEY_ROOM);
        let base = self.buf.as_ptr() as *const u8;
        let size = self.size;
        let end = count.min(self.slots);
        let k = key.as_mut_ptr();
        let mut i = from;
        let mut klen = None;
        // The prefix as the low bytes of a little-endian word (byte `j` of the key is byte
        // `j` of the word).
        let prefix_word = if P < NO_WORD {
            let mut p = [0u8; 8];
            if let (Some(d), Some(s)) = (p.get_mut(..P), key.get(..P)) {
                d.copy_from_slice(s);
            }
            u64::from_le_bytes(p)
        } else {
            0
        };
        // Two loops: the outer one decodes the length header of the next entry (its shape),
        // the inner one hands out that entry and the entries after it while their headers
        // are the same (all of them, in a leaf of fixed-size keys and values). Inside the
        // inner loop the shape is invariant, so it stays in registers across `f`'s call;
        // as values carried around one loop the compiler shuffled them between registers
        // around every call.
        let flow = 'outer: loop {
            let n = if FORWARD { i + 1 } else { i.wrapping_sub(1) };
            if n >= end {
                break ControlFlow::Continue(());
            }
            // SAFETY: `n < end <= slots`, and `load` checked the slots against the copy.
            let (mut head, mut off) = unsafe { read_slot(base, n) };
            let Some(memo) = Memo::decode(base, size, off, plen) else {
                break ControlFlow::Continue(());
            };
            let shape = memo.shape;
            klen = Some(shape.key_len);
            let mut n = n;
            loop {
                let rest_off = off + shape.rest_at;
                let rest_len = shape.value_at - shape.rest_at;
                let value_off = off + shape.value_at;
                // SAFETY: `key` holds at least `plen` initialised bytes (its prefix) and has room
                // for `plen + SHORT_KEY_ROOM` (the caller's contract, checked in debug builds);
                // the head goes to `plen..plen + 4` and the rest's eight-byte blocks (at most 8:
                // `rest_len < 60`) to `plen + 4..plen + 4 + 64`, inside that room. The source
                // blocks end at most 7 bytes past the rest, whose end (`value_off`) lies inside
                // the copy with the value after it (the decode checked that for this offset, or
                // `off <= limit` for an entry of the shape it checked): inside the buffer, which
                // holds `PAD >= 7` bytes more. `key` is a separate allocation. Afterwards
                // `key[..shape.key_len]` is initialised (prefix, head, rest).
                // SAFETY (the key's words): with `P < 8` and a key of at most 8 bytes, 8 bytes
                // are written at offset 0 of `key` instead (inside its room: `SHORT_KEY_ROOM >=
                // 8`) and 4 bytes read at the rest's start (inside the 8 read otherwise); the
                // word holds the prefix, the head and the rest, so `key[..shape.key_len]` is the
                // same key. With a key of 9 to 16 bytes, 16 bytes are written at offset 0
                // (`SHORT_KEY_ROOM >= 16`) and 12 read at the rest's start: they end at most 12
                // bytes past the rest's start, itself at most the value's offset, inside the
                // copy: inside the buffer, which holds `PAD >= 12` bytes more.
                let (kb, v) = unsafe {
                    let src = base.add(rest_off);
                    if P < NO_WORD && shape.key_len <= 8 {
                        let rest =
                            u32::from_le_bytes(std::ptr::read_unaligned(src as *const [u8; 4]));
                        let suffix = u64::from(u32::from_le_bytes(head.to_be_bytes()))
                            | u64::from(rest) << 32;
                        let word = prefix_word | suffix << (8 * (P % NO_WORD));
                        std::ptr::write_unaligned(k as *mut [u8; 8], word.to_le_bytes());
                    } else if P < NO_WORD && shape.key_len <= 16 {
                        // Two words: the suffix's 16 bytes (the head, then 12 bytes of the rest,
                        // of which at most `16 - P - 4` are the key's) shifted by the constant.
                        let r0 = le_word(src);
                        let r1 = u32::from_le_bytes(std::ptr::read_unaligned(
                            src.add(8) as *const [u8; 4]
                        ));
                        let s0 = u64::from(u32::from_le_bytes(head.to_be_bytes())) | r0 << 32;
                        let s1 = r0 >> 32 | u64::from(r1) << 32;
                        let sh = 8 * (P % NO_WORD);
                        let carry = if sh == 0 { 0 } else { s0 >> ((64 - sh) % 64) };
                        std::ptr::write_unaligned(
                            k as *mut [u8; 8],
                            (prefix_word | s0 << sh).to_le_bytes(),
                        );
                        std::ptr::write_unaligned(
                            k.add(8) as *mut [u8; 8],
                            (carry | s1 << sh).to_le_bytes(),
                        );
                    } else {
                        std::ptr::write_unaligned(k.add(plen) as *mut [u8; 4], head.to_be_bytes());
                        let dst = k.add(plen + 4);
                        let w = std::ptr::read_unaligned(src as *const [u8; 8]);
                        std::ptr::write_unaligned(dst as *mut [u8; 8], w);
                        let mut j = 8;
                        while j < rest_len {
                            let w = std::ptr::read_unaligned(src.add(j) as *const [u8; 8]);
                            std::ptr::write_unaligned(dst.add(j) as *mut [u8; 8], w);
                            j += 8;
                        }
                    }
                    (
                        std::slice::from_raw_parts(k as *const u8, shape.key_len),
                        std::slice::from_raw_parts(base.add(value_off), shape.value_len),
                    )
                };
                i = n;
                if let ControlFlow::Break(r) = f(kb, v) {
                    break 'outer ControlFlow::Break(r);
                }
                n = if FORWARD { i + 1 } else { i.wrapping_sub(1) };
                if n >= end {
                    break 'outer ControlFlow::Continue(());
                }
                // SAFETY: as above.
                (head, off) = unsafe { read_slot(base, n) };
                // SAFETY: `memo` was decoded from this copy, unchanged since.
                if unsafe { memo.hit(base, off) }.is_none() {
                    // Another shape: the outer loop decodes it (reading the slot again).
                    continue 'outer;
                }
            }
        };
        if let Some(len) = klen {
            // SAFETY: the last key written is initialised up to `len` (see above), inside
            // the capacity.
            unsafe { key.set_len(len) };
        }
        let stop = if FORWARD { i + 1 } else { i.wrapping_sub(1) };
        (stop, klen.is_some(), flow)
    }
}
