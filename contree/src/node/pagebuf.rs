//! Buffers reused per thread: page-sized ones for the scratch pages of rebuilds
//! ([`Scratch`]) and the leaf copies of cursors ([`LeafCopy`], a page and a few bytes of
//! padding), and small byte buffers for the keys of cursors.
//!
//! Each thread keeps up to [`KEPT`] spare buffers. [`take`] hands out a spare of the right
//! size (or allocates a zeroed one), [`give`] puts one back, so a split or a scan neither
//! allocates nor zeroes a page. A buffer's bytes are what its last user left there: every
//! user writes the bytes it reads (a rebuild formats the header and writes every slot and
//! heap byte, a leaf copy copies them from a page).
//!
//! [`Scratch`]: super::Scratch
//! [`LeafCopy`]: super::LeafCopy

use std::cell::Cell;

/// The most spare buffers one thread keeps (a range holds two leaf copies, a split two
/// scratch pages).
const KEPT: usize = 4;

thread_local! {
    static SPARES: Cell<Vec<Vec<u64>>> = const { Cell::new(Vec::new()) };
}

/// A buffer of `size` bytes (a multiple of 8), 8-byte aligned: a spare of this thread, or a
/// new zeroed one.
#[inline]
pub(crate) fn take(size: usize) -> Vec<u64> {
    let words = size / 8;
    let spare = SPARES
        .try_with(|s| {
            let mut v = s.take();
            let found = v.iter().rposition(|b| b.len() == words);
            let b = found.map(|i| v.swap_remove(i));
            s.set(v);
            b
        })
        .ok()
        .flatten();
    spare.unwrap_or_else(|| vec![0u64; words])
}

/// Gives `buf` back to this thread's spares (or frees it if there are enough, or during
/// thread teardown).
#[inline]
pub(crate) fn give(buf: Vec<u64>) {
    if buf.is_empty() {
        return;
    }
    let _ = SPARES.try_with(|s| {
        let mut v = s.take();
        if v.len() < KEPT {
            v.push(buf);
        }
        s.set(v);
    });
}

/// The most byte buffers one thread keeps, and the largest capacity it keeps.
const KEPT_BYTES: usize = 8;
const KEPT_BYTES_CAPACITY: usize = 4096;

thread_local! {
    static BYTE_SPARES: Cell<Vec<Vec<u8>>> = const { Cell::new(Vec::new()) };
}

/// An empty byte buffer: a spare of this thread (with its capacity), or a new one. The
/// key buffers of cursors come from here, so a scan allocates nothing once its thread has
/// scanned before.
#[inline]
pub(crate) fn take_bytes() -> Vec<u8> {
    BYTE_SPARES
        .try_with(|s| {
            let mut v = s.take();
            let b = v.pop();
            s.set(v);
            b
        })
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// Gives `buf` back to this thread's spares, emptied (or frees it: when it has no or a
/// large capacity, when there are enough, or during thread teardown).
#[inline]
pub(crate) fn give_bytes(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > KEPT_BYTES_CAPACITY {
        return;
    }
    buf.clear();
    let _ = BYTE_SPARES.try_with(|s| {
        let mut v = s.take();
        if v.len() < KEPT_BYTES {
            v.push(buf);
        }
        s.set(v);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spares_are_reused_by_size_and_bounded() {
        let a = take(4096);
        let pa = a.as_ptr();
        give(a);
        // A buffer of another size is not handed out for this one.
        let b = take(8192);
        assert_eq!(b.len(), 1024);
        let a = take(4096);
        assert_eq!(a.as_ptr(), pa);
        give(a);
        give(b);
        for _ in 0..2 * KEPT {
            give(vec![0u64; 512]);
        }
        assert_eq!(
            SPARES.with(|s| {
                let v = s.take();
                let n = v.len();
                s.set(v);
                n
            }),
            KEPT
        );
    }
}
