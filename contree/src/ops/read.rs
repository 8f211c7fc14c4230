//! Point reads: optimistic, validated, never writing to shared memory.

use crate::engine::Target;
use crate::node::Stable;
use crate::sync::Restart;
use crate::Tree;

/// Values up to this many bytes are read by [`Tree::get_with`] optimistically, through a copy
/// on the stack; larger ones under a shared latch.
pub const GET_WITH_INLINE: usize = 256;

impl Tree {
    /// The value stored under `key`, copied out.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let core = &*self.core;
        core.retry(|| {
            let (leaf, _) = core.optimistic_descend(Target::Key(key, 0))?;
            let (pos, found) = leaf.node.lower_bound(key)?;
            let out = if found {
                Some(leaf.node.value(pos)?)
            } else {
                None
            };
            leaf.guard.validate()?;
            Ok(out)
        })
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        let core = &*self.core;
        core.retry(|| {
            let (leaf, _) = core.optimistic_descend(Target::Key(key, 0))?;
            let (_, found) = leaf.node.lower_bound(key)?;
            leaf.guard.validate()?;
            Ok(found)
        })
    }

    /// Runs `f` on the value bytes of `key` without a heap allocation.
    ///
    /// A value of up to [`GET_WITH_INLINE`] bytes is copied optimistically into a buffer on
    /// the stack and `f` runs on that copy after the read validated: the reader writes
    /// nothing to shared memory, so concurrent readers of a hot leaf do not contend. A
    /// larger value is read under the leaf's shared latch instead (writers to that leaf wait
    /// until `f` returns, so keep `f` short).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"hello").unwrap();
    /// assert_eq!(tree.get_with(b"k", |v| v.len()), Some(5));
    /// tree.insert(b"big", &[7u8; 1000]).unwrap();
    /// assert_eq!(tree.get_with(b"big", |v| v.iter().map(|&b| b as usize).sum::<usize>()), Some(7000));
    /// ```
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let core = &*self.core;
        let mut buf = [0u8; GET_WITH_INLINE];
        let inline = core.retry(|| {
            let (leaf, _) = core.optimistic_descend(Target::Key(key, 0))?;
            let (pos, found) = leaf.node.lower_bound(key)?;
            let out = if found {
                Some(leaf.node.copy_value(pos, &mut buf)?)
            } else {
                None
            };
            leaf.guard.validate()?;
            Ok(out)
        });
        match inline {
            None => None,
            Some(Some(len)) => Some(f(&buf[..len])),
            Some(None) => {
                // Too large for the stack copy: run `f` under the shared latch.
                let mut f = Some(f);
                core.retry(|| -> Result<Option<R>, Restart> {
                    let (leaf, _) = core.optimistic_descend(Target::Key(key, 0))?;
                    let shared = leaf.guard.upgrade_shared()?;
                    let (pos, found) = leaf.node.lower_bound(key)?;
                    if !found {
                        return Ok(None);
                    }
                    let value = Stable::new(leaf.node, &shared).value(pos)?;
                    Ok(f.take().map(|f| f(value)))
                })
            }
        }
    }
}
