//! Copying the fences out of a node into buffers that the caller reuses (cursors move on
//! from a leaf at its fences). Safe to run optimistically (see the module doc of `node`);
//! the caller validates the latch after the copy.

use super::Node;
use crate::sync::Restart;

impl Node {
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
