//! Copying entries and fences out of a node into buffers that the caller reuses: the one
//! read of the cursors and scans. Safe to run optimistically (see
//! the module doc of `node`); the caller validates the latch after the copy.

use super::{Node, OFF_PREFIX};
use crate::sync::Restart;

impl Node {
    /// Copies entry `i` (its full key and its value) into `key` and `value`, replacing
    /// their contents. If `prefix_kept`, `key` already starts with this node's prefix (it
    /// holds another key of the node read under the same snapshot) and only the suffix is
    /// rewritten. Returns `Restart` if `i` is not below the count or the entry's offsets
    /// leave the page: only a torn read sees that.
    #[inline]
    pub(crate) fn copy_entry(
        &self,
        i: usize,
        prefix_kept: bool,
        key: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<(), Restart> {
        if i >= self.count() {
            return Err(Restart);
        }
        let e = self.entry(i)?;
        let plen = self.prefix_len();
        let klen = plen + e.suffix_len;
        let keep = prefix_kept && key.len() >= plen;
        // Room for the key and the 4-byte head store; `reserve` keeps the bytes `key`
        // holds (its prefix, when kept).
        key.reserve((klen + 4).saturating_sub(key.len()));
        value.clear();
        value.reserve(e.value_len);
        // SAFETY: `i < count()`, so the slot lies inside the page.
        let head = unsafe { self.slot_head(i) }.to_be_bytes();
        let hlen = e.suffix_len.min(4);
        let k = key.as_mut_ptr();
        // SAFETY: `key` has room for `klen + 4` bytes and `value` for `value_len` (reserved
        // above); neither overlaps the page. `copy_to_ptr` checks the page ranges. After the
        // copies `key[..klen]` is initialised: the prefix (kept: `key` held at least `plen`
        // initialised bytes, or copied again), the head bytes and the rest;
        // `value[..value_len]` is the value.
        unsafe {
            if !keep {
                self.page
                    .copy_to_ptr(self.header_u32(OFF_PREFIX) as usize, plen, k)?;
            }
            std::ptr::write_unaligned(k.add(plen) as *mut [u8; 4], head);
            self.page
                .copy_to_ptr(e.rest_off, e.suffix_len - hlen, k.add(plen + hlen))?;
            key.set_len(klen);
            self.page
                .copy_to_ptr(e.value_off, e.value_len, value.as_mut_ptr())?;
            value.set_len(e.value_len);
        }
        Ok(())
    }

    /// Replaces `out` with the upper fence and returns `true`, or returns `false` (leaving
    /// `out` alone) if the node has none.
    pub(crate) fn copy_upper_fence(&self, out: &mut Vec<u8>) -> Result<bool, Restart> {
        self.copy_fence(
            super::HAS_UPPER,
            super::OFF_UPPER,
            super::OFF_UPPER_LEN,
            out,
        )
    }

    /// As [`copy_upper_fence`](Self::copy_upper_fence), for the lower fence.
    pub(crate) fn copy_lower_fence(&self, out: &mut Vec<u8>) -> Result<bool, Restart> {
        self.copy_fence(
            super::HAS_LOWER,
            super::OFF_LOWER,
            super::OFF_LOWER_LEN,
            out,
        )
    }
}
