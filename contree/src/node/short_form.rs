//! The short forms of an entry's length header in a leaf copy (`leaf_copy`): their decode,
//! and the [`Memo`] that lets scans decode one header per run of entries of one shape.
//!
//! Everything here reads a private copy's buffer: `size` bytes of the leaf, then `PAD`
//! bytes (see `leaf_copy`) that keep a two-byte header read at any offset below `size`
//! inside the buffer.

use super::{HEADER, SLOT};

/// Slot `i` of the copy at `base`: its head and its entry's offset.
///
/// # Safety
/// `i` is below the entry count whose slots the copy's `load` checked to lie inside the
/// copy (`LeafCopy::slots`); the copy is private and immutable while it is read.
#[inline(always)]
pub(super) unsafe fn read_slot(base: *const u8, i: usize) -> (u32, usize) {
    // SAFETY: the caller's contract: `HEADER + (i + 1) * SLOT <= size`, inside the buffer.
    unsafe {
        let slot = base.add(HEADER + i * SLOT);
        (
            std::ptr::read_unaligned(slot as *const u32),
            std::ptr::read_unaligned(slot.add(4) as *const u16) as usize,
        )
    }
}

/// The shape of a short entry, from its length header: the key's length (the copy's prefix
/// and the suffix), the value's length, and where the rest of the suffix and the value
/// start after the entry's offset.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Shape {
    pub(super) key_len: usize,
    pub(super) value_len: usize,
    pub(super) rest_at: usize,
    pub(super) value_at: usize,
}

/// A short entry's decoded length header, reused for the entries after it that have the
/// same header (with fixed-size keys and values, every entry of a leaf has): the per-entry
/// step of scans then checks the header's bytes and the entry's offset instead of decoding
/// the header and checking where the entry ends.
///
/// `form` is the header's bytes under `mask` (the first byte, or both for the two-byte
/// form; the empty memo's mask of 0 with `form` 0xFFFF matches no entry), `limit` the
/// largest offset at which an entry of this shape ends inside the copy it was decoded
/// from. A memo is only used with the copy it was decoded from (while that copy is
/// unchanged), whose size bounds `limit`. (Read with another copy of the same size, a
/// memo would still read inside that copy's buffer, since every copy of a tree has the
/// tree's page size, and hand out wrong shapes only: `scans_match_oracle` fails when a
/// range's window keeps the memo of the leaf before.)
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memo {
    form: u16,
    mask: u16,
    limit: usize,
    pub(super) shape: Shape,
}

impl Default for Memo {
    fn default() -> Memo {
        Memo {
            form: 0xFFFF,
            mask: 0,
            limit: 0,
            shape: Shape::default(),
        }
    }
}

impl Memo {
    /// The shape of the entry at `off` in the copy at `base` if its header is the memo's
    /// (`None`: decode it).
    ///
    /// # Safety
    /// `base` is the buffer of the copy the memo was decoded from (or any copy's, for the
    /// empty memo), unchanged since.
    #[inline(always)]
    pub(super) unsafe fn hit(&self, base: *const u8, off: usize) -> Option<Shape> {
        // SAFETY: `off <= limit`, and `limit` is below the size of the copy at `base` (the
        // caller's contract), whose buffer holds `PAD >= 2` bytes more.
        let same = off <= self.limit
            && u16::from_le_bytes(unsafe {
                std::ptr::read_unaligned(base.add(off) as *const [u8; 2])
            }) & self.mask
                == self.form;
        same.then_some(self.shape)
    }

    /// Decodes the length header of the entry at `off` in the copy at `base` (`size`
    /// bytes, then `PAD`), whose keys start with `plen` prefix bytes: the memo of its
    /// shape, or `None` if it is not one of the two short forms (a one-byte header: suffix
    /// under 8 bytes, value under 16; a two-byte one: suffix under 64, value under 256) or
    /// does not end
    /// inside the copy (garbage of a copy that was not validated).
    #[inline(always)]
    pub(super) fn decode(base: *const u8, size: usize, off: usize, plen: usize) -> Option<Memo> {
        if off >= size {
            return None;
        }
        // SAFETY: `off < size`, and the buffer holds `size + PAD` bytes (`PAD >= 2`).
        let h = unsafe { std::ptr::read_unaligned(base.add(off) as *const [u8; 2]) };
        let (suffix_len, value_len, header_len, mask) = if h[0] < 0x80 {
            ((h[0] >> 4) as usize, (h[0] & 0x0F) as usize, 1, 0x00FF)
        } else if h[0] < 0xC0 {
            ((h[0] & 0x3F) as usize, h[1] as usize, 2, 0xFFFF)
        } else {
            return None;
        };
        let value_at = header_len + suffix_len.saturating_sub(4);
        let end = value_at + value_len;
        if off + end > size {
            return None;
        }
        Some(Memo {
            form: u16::from_le_bytes(h) & mask,
            mask,
            limit: size - end,
            shape: Shape {
                key_len: plen + suffix_len,
                value_len,
                rest_at: header_len,
                value_at,
            },
        })
    }
}
