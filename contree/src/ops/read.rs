//! Point reads: optimistic, validated, never writing to shared memory.

use crate::node::{Node, ValueHint};
use crate::ops::lines::LineRead;
use crate::side::Side;
use crate::sync::{OptimisticGuard, Restart};
use crate::Tree;
use std::mem::MaybeUninit;

/// Values up to this many bytes are copied by [`Tree::get_with`] to the stack; larger ones to
/// a heap buffer.
pub const GET_WITH_INLINE: usize = 256;

/// `$tree.$read::<false>(..)`, or, for a tree with NUMA state (`crate::numa`: replicas,
/// remote counts), `$tree.$read::<true>(..)` out of line. The choice is made before the read
/// builds its closures: a branch inside the inlined read cost 12 instructions per `get`
/// (register pressure), this one 2 (callgrind).
macro_rules! by_numa {
    ($tree:ident, $read:ident($($arg:expr),*)) => {
        if $tree.core.numa.is_some() {
            out_of_line(|| $tree.$read::<true>($($arg),*))
        } else {
            $tree.$read::<false>($($arg),*)
        }
    };
}

/// Runs `f` out of line, as a cold call.
#[cold]
#[inline(never)]
fn out_of_line<R>(f: impl FnOnce() -> R) -> R {
    f()
}

impl Tree {
    /// The one optimistic point read: the lean descent to `key`'s leaf, the leaf search,
    /// `read(leaf, position, found)` (which copies what it needs out of the page), then
    /// validation of the leaf; repeated until a read validates.
    ///
    /// With the side structure on (`side`): a key in a hot range is looked up in its shard
    /// first (`from_side` gets the shard's entry; a tombstone is `None`), and the tree is
    /// read under the shard's mutex when the shard has none. A read of any other key needs
    /// no second look at the ranges: if its key's range was marked after the look, the
    /// key's first diverted write came after it too, so the tree's value the read returns
    /// was the key's value at some point of the read (the Shuttle model `side_structure`).
    #[inline(always)]
    fn read_point<const NUMA: bool, C, T>(
        &self,
        key: &[u8],
        ctx: &mut C,
        mut read: impl FnMut(&mut C, Node, usize, bool, ValueHint) -> Result<T, Restart>,
        mut from_side: impl FnMut(&mut C, Option<&[u8]>) -> T,
    ) -> T {
        let side = &self.core.side;
        if Side::any(side.state()) {
            while let Some(range) = side.range_of(key) {
                let got = self.side_read(&range, key, ctx, &mut from_side, |ctx| {
                    self.read_tree::<NUMA, T>(key, |l, p, f, h| read(ctx, l, p, f, h))
                });
                if let Some(out) = got {
                    return out;
                }
                // The range was merged meanwhile: look again.
            }
        }
        self.read_tree::<NUMA, T>(key, |l, p, f, h| read(ctx, l, p, f, h))
    }

    /// [`read_point`](Self::read_point) of the tree alone.
    #[inline(always)]
    pub(crate) fn read_tree<const NUMA: bool, T>(
        &self,
        key: &[u8],
        read: impl FnMut(Node, usize, bool, ValueHint) -> Result<T, Restart>,
    ) -> T {
        let core = &*self.core;
        if NUMA {
            // Replicas and remote counts (`crate::numa`).
            return self.read_tree_numa(key, read);
        }
        self.read_with(key, read, || {
            let seq = core.structure_seq();
            let (leaf, guard) = core.point_leaf(key)?;
            Ok((seq, leaf, guard))
        })
    }

    /// [`read_tree`](Self::read_tree) with the NUMA-aware index phase.
    #[cold]
    #[inline(never)]
    fn read_tree_numa<T>(
        &self,
        key: &[u8],
        read: impl FnMut(Node, usize, bool, ValueHint) -> Result<T, Restart>,
    ) -> T {
        let numa = self.core.numa.as_deref().expect("a tree with NUMA state");
        self.read_with(key, read, || self.core.numa_leaf(numa, key))
    }

    /// The read: `index_phase` gives the leaf, its snapshot and the structure sequence it
    /// was reached under; then the leaf phase (`engine::phases`): the search, the copy and
    /// the validation, run again on the same leaf while the sequence stands.
    #[inline(always)]
    fn read_with<'t, T>(
        &'t self,
        key: &[u8],
        mut read: impl FnMut(Node, usize, bool, ValueHint) -> Result<T, Restart>,
        mut index_phase: impl FnMut() -> Result<(u64, Node, OptimisticGuard<'t>), Restart>,
    ) -> T {
        let core = &*self.core;
        let mut leaf_phase = |leaf: Node, guard: OptimisticGuard<'_>| {
            // A leaf in line mode never validates (`sync::lines`): a read of it checks the
            // stretch versions of its value instead, and the leaf's keys; its mark bits may
            // answer for an absent key (`sync::ccm`).
            let (pos, found, hint, in_lines) = match guard.lines() {
                false => {
                    let (pos, found, hint) = leaf.point_search_hinted(key, core.directory())?;
                    (pos, found, hint, None)
                }
                true => {
                    let (pos, found, check) = LineRead::begin(core, leaf, guard.latch(), key)?;
                    (pos, found, ValueHint::NONE, Some(check))
                }
            };
            let out = read(leaf, pos, found, hint)?;
            match in_lines {
                None => guard.validate()?,
                Some(check) => {
                    check.end()?;
                    guard.validate_keys()?
                }
            }
            Ok(out)
        };
        core.retry_read(|| {
            let (seq, leaf, mut guard) = index_phase()?;
            let mut tries = 0;
            loop {
                let latch = guard.latch();
                match leaf_phase(leaf, guard) {
                    Ok(out) => return Ok(out),
                    Err(Restart) => {
                        tries += 1;
                        guard = core.leaf_phase_again(seq, latch, tries)?;
                    }
                }
            }
        })
    }

    /// The tree's value of `key`, without the side structure.
    pub(crate) fn tree_get(&self, key: &[u8]) -> Option<Vec<u8>> {
        by_numa!(self, tree_get_in(key))
    }

    #[inline(always)]
    fn tree_get_in<const NUMA: bool>(&self, key: &[u8]) -> Option<Vec<u8>> {
        let dir = self.core.directory();
        self.read_tree::<NUMA, _>(key, |leaf, pos, found, hint| {
            found.then(|| leaf.value(pos, hint, dir)).transpose()
        })
    }

    /// The value stored under `key`, copied out.
    ///
    /// Allocates the returned `Vec`; [`get_into`](Self::get_into) reuses a buffer and
    /// [`get_with`](Self::get_with) allocates nothing.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"v").unwrap();
    /// assert_eq!(tree.get(b"k"), Some(b"v".to_vec()));
    /// assert_eq!(tree.get(b"missing"), None);
    /// ```
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        by_numa!(self, get_in(key))
    }

    #[inline(always)]
    fn get_in<const NUMA: bool>(&self, key: &[u8]) -> Option<Vec<u8>> {
        let dir = self.core.directory();
        self.read_point::<NUMA, _, _>(
            key,
            &mut (),
            |_, leaf, pos, found, hint| found.then(|| leaf.value(pos, hint, dir)).transpose(),
            |_, v| v.map(<[u8]>::to_vec),
        )
    }

    /// Copies the value stored under `key` into `out` and returns `true`, or returns
    /// `false` if `key` is absent. `out` is cleared first either way, so it holds exactly
    /// the value afterwards; its capacity is reused, so a loop of lookups into one buffer
    /// allocates only when a value is longer than any before.
    ///
    /// The read is optimistic (no latch, no write to shared memory): the value is copied and
    /// the leaf's version validated after the copy, and the read repeats if a writer
    /// changed the leaf meanwhile.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"a", b"first").unwrap();
    /// tree.insert(b"b", b"second").unwrap();
    /// let mut buf = Vec::new();
    /// assert!(tree.get_into(b"a", &mut buf));
    /// assert_eq!(buf, b"first");
    /// assert!(tree.get_into(b"b", &mut buf));
    /// assert_eq!(buf, b"second");
    /// assert!(!tree.get_into(b"c", &mut buf));
    /// assert!(buf.is_empty());
    /// ```
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        by_numa!(self, get_into_in(key, out))
    }

    #[inline(always)]
    fn get_into_in<const NUMA: bool>(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        let dir = self.core.directory();
        self.read_point::<NUMA, _, _>(
            key,
            out,
            |out, leaf, pos, found, hint| {
                out.clear();
                if found {
                    leaf.append_value(pos, hint, out, dir)?;
                }
                Ok(found)
            },
            |out, v| {
                out.clear();
                out.extend_from_slice(v.unwrap_or_default());
                v.is_some()
            },
        )
    }

    /// Whether `key` is present.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"v").unwrap();
    /// assert!(tree.contains_key(b"k"));
    /// assert!(!tree.contains_key(b"j"));
    /// ```
    pub fn contains_key(&self, key: &[u8]) -> bool {
        by_numa!(self, contains_key_in(key))
    }

    #[inline(always)]
    fn contains_key_in<const NUMA: bool>(&self, key: &[u8]) -> bool {
        self.read_point::<NUMA, _, _>(
            key,
            &mut (),
            |_, _, _, found, _| Ok(found),
            |_, v| v.is_some(),
        )
    }

    /// Runs `f` on the value bytes of `key`; returns what it returns, or `None` if the key
    /// is absent.
    ///
    /// The value is copied optimistically (the reader writes nothing to shared memory, so
    /// concurrent readers of a hot leaf do not contend) and `f` runs on the copy after the
    /// read validated, holding no latch: `f` may read and write the tree. A value of up to
    /// [`GET_WITH_INLINE`] bytes is copied into a buffer on the stack, so nothing is
    /// allocated; a larger one (and an out-of-line value) into a heap buffer.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"hello").unwrap();
    /// assert_eq!(tree.get_with(b"k", |v| v.len()), Some(5));
    /// tree.insert(b"big", &[7u8; 1000]).unwrap();
    /// assert_eq!(tree.get_with(b"big", |v| v.iter().map(|&b| b as usize).sum::<usize>()), Some(7000));
    /// // No latch is held while `f` runs: it may use the tree.
    /// tree.get_with(b"k", |v| tree.insert(b"copy", v).unwrap());
    /// assert_eq!(tree.get(b"copy"), Some(b"hello".to_vec()));
    /// ```
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        // Not zeroed: a value is copied over its front (the stack buffer costs nothing).
        let mut buf = [MaybeUninit::<u8>::uninit(); GET_WITH_INLINE];
        let read =
            |buf: &mut [MaybeUninit<u8>; GET_WITH_INLINE], leaf: Node, pos, found: bool, hint| {
                found.then(|| leaf.copy_value(pos, hint, buf)).transpose()
            };
        let from_side = |buf: &mut [MaybeUninit<u8>; GET_WITH_INLINE], v: Option<&[u8]>| {
            v.map(|v| {
                let dst = buf.get_mut(..v.len())?;
                for (d, &s) in dst.iter_mut().zip(v) {
                    d.write(s);
                }
                Some(v.len())
            })
        };
        // As `by_numa!`, around the read alone: `f` stays out of the out-of-line call
        // (around all of `get_with` the choice cost 65 instructions per call).
        let inline = if self.core.numa.is_some() {
            out_of_line(|| self.read_point::<true, _, _>(key, &mut buf, read, from_side))
        } else {
            self.read_point::<false, _, _>(key, &mut buf, read, from_side)
        };
        match inline {
            None => None,
            Some(Some(len)) => {
                // SAFETY: `read` or `from_side` answered `len`: they initialised
                // `buf[..len]` (`copy_value` and the loop above write exactly that front).
                let v = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
                Some(f(v))
            }
            Some(None) => {
                // Too large for the stack copy: copy it to the heap.
                let mut heap = Vec::new();
                self.get_into(key, &mut heap).then(|| f(&heap))
            }
        }
    }
}
