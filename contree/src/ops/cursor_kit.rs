//! The buffers of a [`Cursor`](super::Cursor) (its leaf copy, key, seek and fence
//! buffers), kept per thread from one cursor to the next.
//!
//! Every scan, range, `first` and `last` makes a cursor and drops it. Taking its four
//! buffers one by one from the per-thread spares of `node::pagebuf`, and giving them back,
//! cost about 400 instructions per scan (a thread-local access and a search of the spares
//! per buffer), and a fence buffer was allocated and freed whenever the scan crossed a
//! leaf. A thread keeps one whole kit instead, taken and given back in one thread-local
//! access each: a visitor scan costs 178 instructions less (callgrind,
//! `bench/results/speed-callgrind.txt`). The kit is boxed, so that taking and giving it
//! back moves a pointer, not the few hundred bytes of its buffers' headers and the leaf
//! copy's key template. A second cursor of the thread at once (a range walked from both
//! ends) finds no kit and takes its buffers from the spares, as before.

use crate::node::{pagebuf, LeafCopy};
use std::cell::Cell;

/// The largest capacity of a kit's byte buffers that a thread keeps (a larger one, left by
/// a long key or an out-of-line value, is freed rather than held by an idle thread).
const KEPT_CAPACITY: usize = 4096;

/// A cursor's buffers.
#[derive(Default)]
pub(super) struct Kit {
    pub leaf: LeafCopy,
    pub key: Vec<u8>,
    pub seek: Vec<u8>,
    pub fence: Vec<u8>,
}

thread_local! {
    static KIT: Cell<Option<Box<Kit>>> = const { Cell::new(None) };
}

/// This thread's kit, or one made from the spares (the key and seek buffers come empty).
#[inline]
pub(super) fn take() -> Box<Kit> {
    match KIT.try_with(Cell::take) {
        Ok(Some(kit)) => kit,
        _ => Box::new(Kit {
            leaf: LeafCopy::default(),
            key: pagebuf::take_bytes(),
            seek: pagebuf::take_bytes(),
            fence: Vec::new(),
        }),
    }
}

/// Keeps `kit` as this thread's (emptied, its large buffers freed), or, if the thread
/// holds one already, gives its buffers to the spares.
#[inline]
pub(super) fn give(mut kit: Box<Kit>) {
    for b in [&mut kit.key, &mut kit.seek, &mut kit.fence] {
        b.clear();
        if b.capacity() > KEPT_CAPACITY {
            *b = Vec::new();
        }
    }
    kit.leaf.trim(KEPT_CAPACITY);
    let refused = KIT
        .try_with(|slot| match slot.take() {
            None => {
                slot.set(Some(kit));
                None
            }
            held => {
                slot.set(held);
                Some(kit)
            }
        })
        .unwrap_or(None);
    if let Some(kit) = refused {
        let Kit { key, seek, .. } = *kit;
        pagebuf::give_bytes(key);
        pagebuf::give_bytes(seek);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_one_kit_and_frees_large_buffers() {
        let mut kit = take();
        kit.key.extend_from_slice(b"some key");
        kit.fence.reserve(2 * KEPT_CAPACITY);
        let key_ptr = kit.key.as_ptr();
        give(kit);
        let kit = take();
        // The same key buffer, emptied; the large fence buffer was not kept.
        assert_eq!(kit.key.as_ptr(), key_ptr);
        assert!(kit.key.is_empty());
        assert_eq!(kit.fence.capacity(), 0);
        // A second kit at once comes from the spares, and going back it is refused.
        let other = take();
        assert_ne!(other.key.as_ptr(), key_ptr);
        give(kit);
        give(other);
        assert_eq!(take().key.as_ptr(), key_ptr);
    }
}
