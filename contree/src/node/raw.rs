//! Raw access to the bytes of one page: the only code in the node layer that dereferences
//! page pointers.
//!
//! Every read here copies bytes out through raw pointers into locals, each one a call of
//! [`RawPage::load`] (a load of a byte array through `*const [u8; N]`, which needs no
//! alignment), and never forms a reference (`&[u8]`, `&T`) over page bytes, so it
//! is the way optimistic readers look at a page that a writer may be changing at the same
//! time. Offsets and lengths that come from the page itself are checked against the page size
//! before they address memory ([`RawPage::check`]); a value that fails the check makes the
//! reader restart. Whatever a racing read returns is garbage until the caller validates the
//! latch version.
//!
//! Writes go through the same pointer but are reachable only from [`NodeMut`], which needs a
//! write capability (see the module doc of `node`).
//!
//! [`NodeMut`]: super::NodeMut

use crate::sync::Restart;
use std::cmp::Ordering;

/// A page: its address and size. `Copy`; holding one proves nothing about latches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawPage {
    ptr: *mut u8,
    size: usize,
}

impl RawPage {
    /// Wraps page memory.
    ///
    /// # Safety
    /// `ptr` must point to `size` bytes (at least the node header) that stay mapped while
    /// the view or any copy of it is used; the page pool never unmaps a page while a tree
    /// that could name it lives.
    #[inline]
    pub(crate) unsafe fn new(ptr: *mut u8, size: usize) -> RawPage {
        RawPage { ptr, size }
    }

    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    /// The address of the page (the latch word lives in its first eight bytes).
    #[inline]
    pub(crate) fn addr(&self) -> *mut u8 {
        self.ptr
    }

    /// `Restart` unless `off..off + len` lies inside the page.
    #[inline]
    pub(crate) fn check(&self, off: usize, len: usize) -> Result<(), Restart> {
        match off.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Restart),
        }
    }

    /// A 16-bit field at a fixed header offset or in a slot (no run-time check: this sits
    /// on the search path).
    ///
    /// # Safety
    /// `off + 2 <= size`: `off` is a constant header offset (below `HEADER`) or lies in the
    /// slot of an index below the node's clamped count, which ends inside the page.
    #[inline]
    pub(crate) unsafe fn u16_at(&self, off: usize) -> u16 {
        debug_assert!(off + 2 <= self.size, "page read out of bounds");
        // SAFETY: the two bytes lie inside the page (the caller's contract), which stays
        // mapped (`new`); a raw unaligned read forms no reference over bytes a writer may
        // change.
        u16::from_ne_bytes(unsafe { self.load::<2>(off) })
    }

    /// A 32-bit field, as [`u16_at`](Self::u16_at).
    ///
    /// # Safety
    /// `off + 4 <= size`, as for `u16_at`.
    #[inline]
    pub(crate) unsafe fn u32_at(&self, off: usize) -> u32 {
        debug_assert!(off + 4 <= self.size, "page read out of bounds");
        // SAFETY: as in `u16_at`.
        u32::from_ne_bytes(unsafe { self.load::<4>(off) })
    }

    /// The `N` bytes at `off`, copied out (no run-time check: this sits on the search path).
    ///
    /// # Safety
    /// `off + N <= size`.
    #[inline]
    pub(crate) unsafe fn array_at<const N: usize>(&self, off: usize) -> [u8; N] {
        // SAFETY: the caller's contract.
        unsafe { self.load::<N>(off) }
    }

    /// The byte at `off`, bounds-checked.
    #[inline]
    pub(crate) fn u8_at(&self, off: usize) -> Result<u8, Restart> {
        self.check(off, 1)?;
        // SAFETY: checked to lie inside the mapped page.
        Ok(unsafe { self.load::<1>(off) }[0])
    }

    /// Appends the bytes `off..off + len` to `out`.
    #[inline]
    pub(crate) fn append_to(
        &self,
        off: usize,
        len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), Restart> {
        self.check(off, len)?;
        out.reserve(len);
        // SAFETY: the source range lies inside the mapped page (checked); the destination
        // is the vector's spare capacity, reserved above, which the source cannot overlap;
        // the copy reads through raw pointers and forms no reference over page bytes. The
        // new length covers exactly the initialised bytes.
        unsafe {
            self.copy_out(off, out.as_mut_ptr().add(out.len()), len);
            out.set_len(out.len() + len);
        }
        Ok(())
    }

    /// Copies the bytes `off..off + len` to `dst`.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes of writes and does not overlap the page.
    #[inline]
    pub(crate) unsafe fn copy_to_ptr(
        &self,
        off: usize,
        len: usize,
        dst: *mut u8,
    ) -> Result<(), Restart> {
        self.check(off, len)?;
        // SAFETY: the source range lies inside the page (checked); `dst` is the caller's.
        unsafe { self.copy_out(off, dst, len) };
        Ok(())
    }

    /// Copies the bytes starting at `off` into all of `dst`.
    #[inline]
    pub(crate) fn copy_to(&self, off: usize, dst: &mut [u8]) -> Result<(), Restart> {
        self.check(off, dst.len())?;
        // SAFETY: as in `append_to`; `dst` is a distinct local buffer.
        unsafe { self.copy_out(off, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `len` page bytes from `off` to `dst` with word loads and stores written out
    /// here: a copy of up to 16 bytes costs no call (the optimiser may still turn the loop
    /// for longer copies into a call of `memcpy`), and ThreadSanitizer, where `load` stays
    /// out of line and the loop stays a loop, attributes a racing read to
    /// [`load`](Self::load), a `RawPage` function at the top of the stack (its suppression
    /// names them), while the stores into `dst` run in [`store`], outside `RawPage`, so a race
    /// between two writers is still reported.
    ///
    /// # Safety
    /// `off..off + len` lies inside the page (checked by the caller); `dst` is valid for
    /// `len` bytes of writes and does not overlap the page.
    #[inline]
    unsafe fn copy_out(&self, off: usize, dst: *mut u8, len: usize) {
        // Every block below stays inside `off..off + len` of the page and `dst[..len]` (the
        // caller's contract). The last copy of each case may overlap the one before: it
        // writes the same bytes again.
        #[cfg(not(contree_tsan))]
        if len > 48 {
            // Blocks (a leaf copied for a cursor, long keys' entries in a split): the C
            // library's vector copy, which beats the word loop from about six words on
            // (from 256 bytes down to 48: 3,262 -> 3,204 instructions per insert of 100k
            // path/URL keys, callgrind). Under ThreadSanitizer the word loop below runs
            // instead, so that racing reads are still attributed to `load`.
            // SAFETY: the caller's contract; raw pointers, no reference over page bytes.
            unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), dst, len) };
            return;
        }
        if len > 16 {
            let mut i = 0;
            while i + 8 <= len {
                // SAFETY: `i + 8 <= len` (see above).
                unsafe { store(dst.add(i), self.load::<8>(off + i)) };
                i += 8;
            }
            if i < len {
                // SAFETY: `len >= 8` (see above).
                unsafe { store(dst.add(len - 8), self.load::<8>(off + len - 8)) };
            }
        } else if len >= 8 {
            // Most entries and values: two words, no loop (the compiler would turn a loop
            // into a call of `memcpy`).
            // SAFETY: `8 <= len <= 16` (see above).
            unsafe {
                store(dst, self.load::<8>(off));
                store(dst.add(len - 8), self.load::<8>(off + len - 8));
            }
        } else if len >= 4 {
            // SAFETY: `len >= 4` (see above).
            unsafe {
                store(dst, self.load::<4>(off));
                store(dst.add(len - 4), self.load::<4>(off + len - 4));
            }
        } else if len >= 2 {
            // SAFETY: `len >= 2` (see above).
            unsafe {
                store(dst, self.load::<2>(off));
                store(dst.add(len - 2), self.load::<2>(off + len - 2));
            }
        } else if len == 1 {
            // SAFETY: `len == 1` (see above).
            unsafe { store(dst, self.load::<1>(off)) };
        }
    }

    /// The `N` page bytes at `off`: one plain load of a byte array (no alignment needed, no
    /// reference formed).
    ///
    /// # Safety
    /// `off + N <= size`.
    // Under ThreadSanitizer (`scripts/tsan.sh` sets `--cfg contree_tsan`) every racing read
    // must show this function as the top frame; inlined, the optimiser may merge loads of
    // several call sites and attribute them to the caller.
    #[cfg_attr(not(contree_tsan), inline)]
    #[cfg_attr(contree_tsan, inline(never))]
    unsafe fn load<const N: usize>(&self, off: usize) -> [u8; N] {
        debug_assert!(off + N <= self.size, "page read out of bounds");
        // SAFETY: inside the mapped page (the caller's contract); a raw read of a byte
        // array forms no reference over bytes a writer may change.
        unsafe { *(self.ptr.add(off) as *const [u8; N]) }
    }

    /// [`compare`](Self::compare) of bytes whose first `skip` are known to equal `other`'s,
    /// with the length of the two's common prefix: the comparison starts at byte `skip`
    /// (clamped to the shorter of the two, so that a `skip` read under a race stays memory
    /// safe; the answer is then garbage, as every optimistic read's is until validated).
    /// For the binary search inside a run of equal heads (`Node::search_run`).
    #[inline]
    pub(crate) fn compare_from(
        &self,
        off: usize,
        len: usize,
        other: &[u8],
        skip: usize,
    ) -> Result<(Ordering, usize), Restart> {
        self.check(off, len)?;
        let n = len.min(other.len());
        let mut i = skip.min(n);
        // Eight bytes at a time; the first differing byte is the lowest one of the
        // little-endian words' xor, and the big-endian words order the two.
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n <= len`: inside the checked range.
            let a = unsafe { self.load::<8>(off + i) };
            let b: [u8; 8] = other[i..i + 8].try_into().expect("8 bytes");
            let x = u64::from_le_bytes(a) ^ u64::from_le_bytes(b);
            if x != 0 {
                let at = i + (x.trailing_zeros() / 8) as usize;
                return Ok((u64::from_be_bytes(a).cmp(&u64::from_be_bytes(b)), at));
            }
            i += 8;
        }
        if i < n && n >= 8 {
            // The tail as the last eight bytes, which overlap bytes known equal.
            // SAFETY: `8 <= n <= len`: `n - 8 .. n` lies inside the checked range.
            let a = unsafe { self.load::<8>(off + n - 8) };
            let b: [u8; 8] = other[n - 8..n].try_into().expect("8 bytes");
            let x = u64::from_le_bytes(a) ^ u64::from_le_bytes(b);
            if x != 0 {
                let at = n - 8 + (x.trailing_zeros() / 8) as usize;
                return Ok((u64::from_be_bytes(a).cmp(&u64::from_be_bytes(b)), at));
            }
            i = n;
        }
        while i < n {
            // SAFETY: `i < n <= len`: inside the checked range.
            let a = unsafe { self.load::<1>(off + i) }[0];
            if a != other[i] {
                return Ok((a.cmp(&other[i]), i));
            }
            i += 1;
        }
        Ok((len.cmp(&other.len()), n))
    }

    /// How many of the page bytes `a..a + len` equal the bytes `b..b + len` in order
    /// before the first that differs (`len` when all do).
    pub(crate) fn common_len(&self, a: usize, b: usize, len: usize) -> Result<usize, Restart> {
        self.check(a, len)?;
        self.check(b, len)?;
        let mut i = 0;
        while i + 8 <= len {
            // SAFETY: `i + 8 <= len`: inside both checked ranges.
            let (x, y) = unsafe { (self.load::<8>(a + i), self.load::<8>(b + i)) };
            let d = u64::from_le_bytes(x) ^ u64::from_le_bytes(y);
            if d != 0 {
                return Ok(i + (d.trailing_zeros() / 8) as usize);
            }
            i += 8;
        }
        // SAFETY: `i < len`: inside both checked ranges.
        while i < len && unsafe { self.load::<1>(a + i) == self.load::<1>(b + i) } {
            i += 1;
        }
        Ok(i)
    }

    /// Compares the page bytes `off..off + len` with `other`, as slices compare.
    #[inline]
    pub(crate) fn compare(
        &self,
        off: usize,
        len: usize,
        other: &[u8],
    ) -> Result<Ordering, Restart> {
        self.check(off, len)?;
        if len <= 8 && other.len() <= 8 {
            // Short suffixes (integer keys): compare as two big-endian words.
            let a = if off + 8 <= self.size {
                // SAFETY: `off + 8 <= size`: inside the mapped page; the bytes past `len`
                // are masked off below.
                let w = u64::from_be_bytes(unsafe { self.load::<8>(off) });
                w & (!0u64).checked_shl(64 - 8 * len as u32).unwrap_or(0)
            } else if off + len >= 8 {
                // The bytes end the page (a node's prefix, its first entries): the word
                // that ends with them, the bytes before them shifted out.
                // SAFETY: `8 <= off + len <= size` (checked above): inside the mapped page.
                let w = u64::from_be_bytes(unsafe { self.load::<8>(off + len - 8) });
                w.checked_shl(64 - 8 * len as u32).unwrap_or(0)
            } else {
                let mut w = 0u64;
                for i in 0..len {
                    // SAFETY: `i < len` and the range was checked to lie inside the page.
                    w = (w << 8) | unsafe { self.load::<1>(off + i) }[0] as u64;
                }
                w.checked_shl(8 * (8 - len as u32)).unwrap_or(0)
            };
            return Ok(a.cmp(&be_word(other)).then(len.cmp(&other.len())));
        }
        Ok(self.compare_from(off, len, other, 0)?.0)
    }

    /// Asks the CPU to start loading the first `N` bytes of the page, as
    /// [`prefetch`](Self::prefetch) does, in straight-line code: the loop has a constant trip
    /// count and unrolls, so the descent pays no loop branch. Pages of a tree are at least
    /// `MIN_PAGE_SIZE` bytes, larger than any `N` the descent asks for, so the bounds branch
    /// always goes the same way; a smaller page falls back to the clamped loop.
    ///
    /// Every line is asked for. Asking for every other one, counting on an adjacent-line
    /// prefetcher to bring the other half of each 128-byte pair, left half the head to
    /// demand misses on this machine's AMD EPYC: `ycsb-c` at one thread went 3.3-4.3 ->
    /// 4.4-4.7 Mops/s (four interleaved pairs) with every line prefetched.
    #[inline(always)]
    pub(crate) fn prefetch_head<const N: usize>(&self) {
        #[cfg(target_arch = "x86_64")]
        {
            if N > self.size {
                self.prefetch(0, N);
                return;
            }
            let mut off = 0;
            while off < N {
                // SAFETY: `off < N <= size`, so the address lies inside the page; a prefetch
                // never faults and has no visible effect.
                unsafe { prefetch_line(self.ptr.add(off)) };
                off += LINE;
            }
        }
    }

    /// Asks the CPU to start loading bytes `from..to` of the page, every cache line of them
    /// (see [`prefetch_head`](Self::prefetch_head)).
    #[inline]
    pub(crate) fn prefetch(&self, from: usize, to: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let mut off = from;
            while off < to.min(self.size) {
                // SAFETY: `off < size`, so the address lies inside the page; a prefetch never
                // faults and has no visible effect.
                unsafe { prefetch_line(self.ptr.add(off)) };
                off += LINE;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (from, to);
    }

    /// The bytes `off..off + len` as a mutable slice.
    ///
    /// # Safety
    /// The caller has the right to write the page (an exclusive latch, an owner token or a
    /// scratch buffer it owns) for at least `'a`, and forms no other reference to these bytes
    /// meanwhile.
    #[inline]
    pub(crate) unsafe fn slice_mut<'a>(&self, off: usize, len: usize) -> &'a mut [u8] {
        assert!(
            off.checked_add(len).is_some_and(|end| end <= self.size),
            "node write out of page bounds"
        );
        // SAFETY: inside the mapped page (asserted); the caller guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }
}

/// Asks the CPU to start loading the cache line at `p`.
///
/// # Safety
/// `p` lies inside a mapped page (a prefetch never faults, but the address is formed with
/// `add`, which must stay inside the allocation).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefetch_line(p: *const u8) {
    // SAFETY: a prefetch has no visible effect and never faults; `p` is the caller's.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
}

/// Stores `N` bytes at `dst` (see [`RawPage::copy_out`]).
///
/// # Safety
/// `dst` is valid for `N` bytes of writes.
#[inline]
unsafe fn store<const N: usize>(dst: *mut u8, w: [u8; N]) {
    // SAFETY: the caller's contract; a byte array needs no alignment.
    unsafe { *(dst as *mut [u8; N]) = w }
}

/// The bytes of `s` (at most 8) as a big-endian word, left-aligned and padded with zeros.
/// Two overlapping loads instead of a byte loop: the second load puts the last bytes in
/// place, and the bytes both loads cover are the same.
#[inline]
pub(crate) fn be_word(s: &[u8]) -> u64 {
    let n = s.len();
    debug_assert!(n <= 8);
    let shift = 8 * (8 - n as u32) % 64;
    if n >= 4 {
        let hi = u32::from_be_bytes(s[..4].try_into().expect("4 bytes")) as u64;
        let lo = u32::from_be_bytes(s[n - 4..].try_into().expect("4 bytes")) as u64;
        (hi << 32) | (lo << shift)
    } else if n >= 2 {
        let hi = u16::from_be_bytes(s[..2].try_into().expect("2 bytes")) as u64;
        let lo = u16::from_be_bytes(s[n - 2..].try_into().expect("2 bytes")) as u64;
        (hi << 48) | (lo << shift)
    } else if n == 1 {
        (s[0] as u64) << 56
    } else {
        0
    }
}

/// The cache line size the prefetches step by.
const LINE: usize = 64;

/// Length of the longest common prefix of two byte strings: eight bytes at a time (long
/// keys share prefixes of dozens of bytes, and splits and prefixes compare them).
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (mut wa, mut wb) = (a[..n].chunks_exact(8), b[..n].chunks_exact(8));
    let mut i = 0;
    for (x, y) in (&mut wa).zip(&mut wb) {
        let d = u64::from_le_bytes(x.try_into().expect("8 bytes"))
            ^ u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if d != 0 {
            // The lowest set bit of a little-endian difference is in the first byte that
            // differs.
            return i + (d.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + wa
        .remainder()
        .iter()
        .zip(wb.remainder())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `compare` orders like slices for every length pair up to 12 bytes, at offsets where
    /// an 8-byte load fits and at the very end of the page (the byte-loop path).
    #[test]
    fn compare_matches_slice_order() {
        // `compare` of `page[off..off + len]` with `other` orders as the slices do.
        let agrees = |page: &mut [u8], off: usize, len: usize, other: &[u8]| {
            // SAFETY: `page` outlives the view and nothing else accesses it meanwhile.
            let raw = unsafe { RawPage::new(page.as_mut_ptr(), page.len()) };
            let want = page[off..off + len].cmp(other);
            assert_eq!(
                raw.compare(off, len, other),
                Ok(want),
                "{len} {} {off}",
                other.len()
            );
        };
        let mut page = vec![0u8; 64];
        let mut next = crate::node::tests::rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..2000 {
            let len = (next() % 13) as usize;
            let olen = (next() % 13) as usize;
            for b in page.iter_mut() {
                *b = (next() % 4) as u8; // few symbols: many equal prefixes
            }
            let other: Vec<u8> = (0..olen).map(|_| (next() % 4) as u8).collect();
            for off in [0, 64 - len] {
                agrees(&mut page, off, len, &other);
            }
        }
        // Long equal prefixes (the word loop, then the overlapping tail word): the other
        // side is the page's bytes, cut or extended, with at most one byte changed.
        let mut page: Vec<u8> = (0..64).map(|_| next() as u8).collect();
        for _ in 0..4000 {
            let len = (next() % 41) as usize;
            let off = (next() % (64 - len as u64 + 1)) as usize;
            let olen = (len as i64 + (next() % 5) as i64 - 2).clamp(0, (64 - off) as i64) as usize;
            let mut other = page[off..off + olen].to_vec();
            if olen > 0 && !next().is_multiple_of(3) {
                let at = (next() % olen as u64) as usize;
                other[at] = other[at].wrapping_add(if next().is_multiple_of(2) { 1 } else { 255 });
            }
            // Sometimes a difference in the first byte.
            if len > 0 && next().is_multiple_of(8) {
                page[off] ^= 1;
            }
            agrees(&mut page, off, len, &other);
        }
    }

    /// `compare_from` gives the slices' order and their common prefix's length from every
    /// start up to that length (the bytes before it are known equal), across the word
    /// loop, the overlapping tail word and the byte loop, at the page's end too; a start
    /// beyond both lengths (a value read under a race) stays in bounds.
    #[test]
    fn compare_from_gives_order_and_common_prefix() {
        let mut next = crate::node::tests::rng(0x2545_F491_4F6C_DD1D);
        let mut page: Vec<u8> = vec![0; 64];
        let rounds = if cfg!(miri) { 300 } else { 6000 };
        for round in 0..rounds {
            for b in page.iter_mut() {
                *b = (next() % 2) as u8; // two symbols: long common prefixes
            }
            let len = (next() % 41) as usize;
            let off = if round % 4 == 0 {
                64 - len
            } else {
                (next() % (64 - len as u64 + 1)) as usize
            };
            // The other side: the page's bytes cut or extended, with one byte changed
            // in two rounds of three.
            let olen = (len + (next() % 9) as usize).saturating_sub(4).min(64);
            let mut other: Vec<u8> = (0..olen)
                .map(|i| page.get(off + i).copied().unwrap_or(1))
                .collect();
            if olen > 0 && !next().is_multiple_of(3) {
                let at = (next() % olen as u64) as usize;
                other[at] ^= 1;
            }
            let a = page[off..off + len].to_vec();
            let common = a.iter().zip(&other).take_while(|(x, y)| x == y).count();
            let skip = (next() % (common as u64 + 1)) as usize;
            // SAFETY: `page` outlives the view and nothing else accesses it meanwhile.
            let raw = unsafe { RawPage::new(page.as_mut_ptr(), page.len()) };
            assert_eq!(
                raw.compare_from(off, len, &other, skip),
                Ok((a.cmp(&other), common)),
                "{off} {len} {olen} {skip}"
            );
            // A garbage start: clamped, some answer, no out-of-bounds read (Miri).
            let _ = raw.compare_from(off, len, &other, 1000);
        }
        // SAFETY: as above.
        let raw = unsafe { RawPage::new(page.as_mut_ptr(), page.len()) };
        assert_eq!(raw.compare_from(60, 8, b"", 0), Err(Restart));
    }

    /// The prefetches form addresses inside the page only, whatever the page size (Miri
    /// checks the pointer arithmetic).
    #[test]
    fn prefetches_stay_in_page() {
        for size in [64usize, 1000, 2048, 4096] {
            let mut page = vec![0u8; size];
            // SAFETY: `page` outlives the view and nothing else accesses it meanwhile.
            let raw = unsafe { RawPage::new(page.as_mut_ptr(), page.len()) };
            raw.prefetch_head::<1024>();
            raw.prefetch_head::<4096>();
            raw.prefetch(512, 4096);
        }
    }

    #[test]
    fn copies_every_length() {
        let mut page: Vec<u8> = (0..100u8).collect();
        // SAFETY: `page` outlives the view and nothing else accesses it meanwhile.
        let raw = unsafe { RawPage::new(page.as_mut_ptr(), page.len()) };
        // Every length through the word loop and past it (the library copy above 48).
        for off in [0, 3] {
            for len in 0..=96 {
                let mut out = vec![7u8];
                raw.append_to(off, len, &mut out).unwrap();
                assert_eq!(out[1..], page[off..off + len]);
                assert_eq!(out[0], 7);
                let mut buf = vec![0u8; len];
                raw.copy_to(off, &mut buf).unwrap();
                assert_eq!(buf, page[off..off + len]);
            }
        }
        assert_eq!(raw.append_to(99, 2, &mut Vec::new()), Err(Restart));
    }

    #[test]
    fn be_word_left_aligns() {
        assert_eq!(be_word(&[]), 0);
        assert_eq!(be_word(&[1]), 1 << 56);
        assert_eq!(be_word(&[1, 2, 3]), 0x0102_0300_0000_0000);
        assert_eq!(be_word(&[1, 2, 3, 4, 5]), 0x0102_0304_0500_0000);
        assert_eq!(be_word(&[1, 2, 3, 4, 5, 6, 7, 8]), 0x0102_0304_0506_0708);
    }
}
