//! Raw access to the bytes of one page: the only code in the node layer that dereferences
//! page pointers.
//!
//! Every read here copies bytes out through raw pointers into locals (loads of byte arrays
//! through `*const [u8; N]`, which need no alignment, and `copy_nonoverlapping`) and never
//! forms a reference (`&[u8]`, `&T`) over page bytes, so it
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
        u16::from_ne_bytes(unsafe { *(self.ptr.add(off) as *const [u8; 2]) })
    }

    /// A 32-bit field, as [`u16_at`](Self::u16_at).
    ///
    /// # Safety
    /// `off + 4 <= size`, as for `u16_at`.
    #[inline]
    pub(crate) unsafe fn u32_at(&self, off: usize) -> u32 {
        debug_assert!(off + 4 <= self.size, "page read out of bounds");
        // SAFETY: as in `u16_at`.
        u32::from_ne_bytes(unsafe { *(self.ptr.add(off) as *const [u8; 4]) })
    }

    /// The byte at `off`, bounds-checked.
    #[inline]
    pub(crate) fn u8_at(&self, off: usize) -> Result<u8, Restart> {
        self.check(off, 1)?;
        // SAFETY: checked to lie inside the mapped page; a raw read forms no reference.
        Ok(unsafe { *self.ptr.add(off) })
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
            std::ptr::copy_nonoverlapping(self.ptr.add(off), out.as_mut_ptr().add(out.len()), len);
            out.set_len(out.len() + len);
        }
        Ok(())
    }

    /// Copies the bytes starting at `off` into all of `dst`.
    #[inline]
    pub(crate) fn copy_to(&self, off: usize, dst: &mut [u8]) -> Result<(), Restart> {
        self.check(off, dst.len())?;
        // SAFETY: as in `append_to`; `dst` is a distinct local buffer.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), dst.as_mut_ptr(), dst.len()) };
        Ok(())
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
        let n = len.min(other.len());
        if len <= 8 && other.len() <= 8 {
            // Short suffixes (integer keys): two big-endian words, built by byte loops.
            let mut a = 0u64;
            for i in 0..len {
                // SAFETY: `i < len` and the range was checked to lie inside the page.
                a = (a << 8) | unsafe { *self.ptr.add(off + i) } as u64;
            }
            let a = a.checked_shl(8 * (8 - len as u32)).unwrap_or(0);
            let b = other.iter().fold(0u64, |w, &c| (w << 8) | c as u64);
            let b = b.checked_shl(8 * (8 - other.len() as u32)).unwrap_or(0);
            return Ok(a.cmp(&b).then(len.cmp(&other.len())));
        }
        let mut i = 0;
        while i + 8 <= n {
            // SAFETY: `i + 8 <= n <= len`: inside the checked range.
            let a = u64::from_ne_bytes(unsafe { *(self.ptr.add(off + i) as *const [u8; 8]) });
            let b = u64::from_ne_bytes(other[i..i + 8].try_into().expect("8 bytes"));
            if a != b {
                return Ok(u64::from_be(a).cmp(&u64::from_be(b)));
            }
            i += 8;
        }
        while i < n {
            // SAFETY: `i < n <= len`: inside the checked range.
            let a = unsafe { *self.ptr.add(off + i) };
            if a != other[i] {
                return Ok(a.cmp(&other[i]));
            }
            i += 1;
        }
        Ok(len.cmp(&other.len()))
    }

    /// Asks the CPU to start loading bytes `from..to` of the page (every other cache line:
    /// the adjacent-line prefetcher brings the other half of each 128-byte pair).
    #[inline]
    pub(crate) fn prefetch(&self, from: usize, to: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let mut off = from;
            while off < to.min(self.size) {
                // SAFETY: `off < size`, so the address lies inside the page; a prefetch never
                // faults and has no visible effect.
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

    /// The bytes `off..off + len` as a slice.
    ///
    /// # Safety
    /// No thread may write these bytes while the slice lives: the caller holds the page's
    /// latch in shared or exclusive mode (or owns the page) for at least `'a`.
    #[inline]
    pub(crate) unsafe fn slice<'a>(&self, off: usize, len: usize) -> Result<&'a [u8], Restart> {
        self.check(off, len)?;
        // SAFETY: inside the mapped page (checked); the caller guarantees no concurrent
        // writer for `'a`.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.add(off), len) })
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
