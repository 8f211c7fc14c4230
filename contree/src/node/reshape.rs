//! The node changes of a multi-rooted tree's slice and meld (`crate::partition`): cutting a
//! node in two at a key that need not be stored in it, and rebuilding a node with new fences
//! and one more child at an end. Both come with the exact sizes they would produce (prefixes
//! and fences change), so that the caller checks before it writes.

use super::{entry_space, node_size, Builder, Fence, Node, NodeMut, Scratch};
use crate::page::PageId;
use crate::sync::Restart;

/// One more child at an end of a rebuilt inner node ([`NodeMut::rebuild`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Extra<'a> {
    /// No child is added.
    None,
    /// `(sep, child)` becomes the first entry: `child` holds the keys up to `sep`.
    First(&'a [u8], PageId),
    /// The upper child moves to a last entry under `sep`, and `child` becomes the upper
    /// child.
    Last(&'a [u8], PageId),
}

impl Node {
    /// Bytes the entries `range` take re-encoded under a prefix of `plen` bytes.
    fn entries_space(&self, range: std::ops::Range<usize>, plen: usize) -> Result<usize, Restart> {
        let own = self.prefix_len();
        let mut total = 0;
        for i in range {
            let e = self.entry(i)?;
            let full = own + e.suffix_len;
            total += e.space(full - plen.min(full));
        }
        Ok(total)
    }

    /// The page bytes the two parts of [`NodeMut::slice`] with these arguments would take.
    pub(crate) fn slice_sizes(
        &self,
        (left_end, right_start): (usize, usize),
        at: &[u8],
    ) -> Result<(usize, usize), Restart> {
        let count = self.count();
        let lower = self.lower_fence()?;
        let upper = self.upper_fence()?;
        let lp = self
            .prefix_for(lower.as_deref(), Some(at), 0..left_end)?
            .len();
        let rp = self
            .prefix_for(Some(at), upper.as_deref(), right_start..count)?
            .len();
        let flen = |f: &Option<Vec<u8>>| f.as_ref().map_or(0, |f| f.len());
        Ok((
            node_size(
                lp,
                flen(&lower) + at.len(),
                self.entries_space(0..left_end, lp)?,
            ),
            node_size(
                rp,
                at.len() + flen(&upper),
                self.entries_space(right_start..count, rp)?,
            ),
        ))
    }

    /// The prefix of this node rebuilt with fences `lower`, `upper` and `extra`.
    fn rebuilt_prefix(&self, lower: Fence, upper: Fence, extra: Extra) -> Result<Vec<u8>, Restart> {
        let count = self.count();
        let first = match extra {
            Extra::First(sep, _) => Some(sep.to_vec()),
            _ if count > 0 => Some(self.key(0)?),
            Extra::Last(sep, _) => Some(sep.to_vec()),
            _ => None,
        };
        let last = match extra {
            Extra::Last(sep, _) => Some(sep.to_vec()),
            _ if count > 0 => Some(self.key(count - 1)?),
            Extra::First(sep, _) => Some(sep.to_vec()),
            _ => None,
        };
        Ok(self.prefix_between(lower, upper, first, last))
    }

    /// The page bytes [`NodeMut::rebuild`] with these arguments would take.
    pub(crate) fn rebuilt_size(
        &self,
        lower: Fence,
        upper: Fence,
        extra: Extra,
    ) -> Result<usize, Restart> {
        let plen = self.rebuilt_prefix(lower, upper, extra)?.len();
        let mut entries = self.entries_space(0..self.count(), plen)?;
        if let Extra::First(sep, _) | Extra::Last(sep, _) = extra {
            entries += entry_space(sep.len() - plen.min(sep.len()), 4);
        }
        let fences = lower.map_or(0, |f| f.len()) + upper.map_or(0, |f| f.len());
        Ok(node_size(plen, fences, entries))
    }
}

impl NodeMut<'_> {
    /// Cuts this node at key `at` (a whole key, stored inline): the fresh page `left`
    /// receives entries `0..left_end` with fences `(lower, at]` and upper child
    /// `left_upper`, this node keeps entries `right_start..count` with fences
    /// `(at, upper]`. A leaf passes `left_end == right_start` (its first key above `at`)
    /// and no upper child (0). An inner node passes the slot of the child whose range holds
    /// `at` as both ends, that child keeping its page on the right and `left_upper` being
    /// the page that took its keys up to `at`; or, when its separator at `pos` is `at`
    /// itself, `(pos, pos + 1)` and that separator's child as `left_upper`, which moves to
    /// the left whole. The caller checked [`Node::slice_sizes`]. Both parts start with a
    /// cleared policy area.
    pub(crate) fn slice(
        &mut self,
        left: NodeMut<'_>,
        (left_end, right_start): (usize, usize),
        at: &[u8],
        left_upper: PageId,
    ) {
        let node = self.node();
        let count = node.count();
        assert!(
            left_end <= right_start && right_start <= count,
            "slice position out of range"
        );
        let lower = node.lower_fence().expect("writable");
        let upper = node.upper_fence().expect("writable");
        let level = node.level();
        let lp = node
            .prefix_for(lower.as_deref(), Some(at), 0..left_end)
            .expect("writable");
        let rp = node
            .prefix_for(Some(at), upper.as_deref(), right_start..count)
            .expect("writable");
        let mut b = Builder::new(left, level, lower.as_deref(), Some(at), &lp);
        b.copy_range(&node, 0..left_end);
        b.finish(left_upper);
        let mut scratch = Scratch::new(node.page_size());
        {
            let mut b = scratch.builder(level, Some(at), upper.as_deref(), &rp);
            b.copy_range(&node, right_start..count);
            b.finish(node.upper_child());
        }
        scratch.copy_into(self);
    }

    /// Rebuilds this inner node in place with fences `(lower, upper]` and `extra`; the
    /// caller checked [`Node::rebuilt_size`]. The policy area is cleared.
    pub(crate) fn rebuild(&mut self, lower: Fence, upper: Fence, extra: Extra) {
        let node = self.node();
        let prefix = node.rebuilt_prefix(lower, upper, extra).expect("writable");
        let mut scratch = Scratch::new(node.page_size());
        {
            let mut b = scratch.builder(node.level(), lower, upper, &prefix);
            if let Extra::First(sep, child) = extra {
                b.push(sep, &child.to_ne_bytes());
            }
            b.copy_range(&node, 0..node.count());
            let upper_child = match extra {
                Extra::Last(sep, child) => {
                    b.push(sep, &node.upper_child().to_ne_bytes());
                    child
                }
                _ => node.upper_child(),
            };
            b.finish(upper_child);
        }
        scratch.copy_into(self);
    }

    /// Points slot `pos` of this inner node (`count`: the upper child) at `child`.
    pub(crate) fn set_child(&mut self, pos: usize, child: PageId) {
        if pos == self.count() {
            self.set_upper_child(child);
        } else {
            self.overwrite_value(pos, &child.to_ne_bytes());
        }
    }
}
