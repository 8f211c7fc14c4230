//! The XMerge plan: the entries of a group as one sorted run, cut from the right into as
//! few full nodes as fit, with the exact sizes of the new nodes and of the rebuilt parent.
//! Computed from optimistic reads; `build` runs under the exclusive latches.

use super::Member;
use crate::node::{
    common_prefix, entry_space, node_prefix, node_size, prefix_cap, stored_entry_space, Node,
    Scratch,
};
use crate::page::PageId;
use crate::sync::Restart;

/// One entry of the run: entry `index` of member `member`, or (`sep`) the parent key at
/// slot `index` that lies between member `member` and the next one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    member: usize,
    index: usize,
    sep: bool,
    key_len: usize,
    value_len: usize,
    /// Whether the value is the stub of an out-of-line value.
    stub: bool,
}

/// The group's entries as one sorted run.
pub(super) struct Run<'a> {
    parent: Node,
    nodes: &'a [Node],
    pub(super) items: Vec<Item>,
    pub(super) leaf: bool,
}

impl<'a> Run<'a> {
    /// Lists the entries of `nodes` (children `lo..` of `parent`), pulling the parent keys
    /// between them down when they are inner nodes. Reads optimistically.
    pub(super) fn optimistic_new(
        parent: Node,
        lo: usize,
        nodes: &'a [Node],
    ) -> Result<Run<'a>, Restart> {
        let leaf = nodes[0].is_leaf();
        let mut items = Vec::new();
        for (k, n) in nodes.iter().enumerate() {
            if k > 0 && !leaf {
                let slot = lo + k - 1;
                let e = parent.entry(slot)?;
                items.push(Item {
                    member: k - 1,
                    index: slot,
                    sep: true,
                    key_len: parent.prefix_len() + e.suffix_len,
                    value_len: 4,
                    stub: false,
                });
            }
            let plen = n.prefix_len();
            for i in 0..n.count() {
                let e = n.entry(i)?;
                items.push(Item {
                    member: k,
                    index: i,
                    sep: false,
                    key_len: plen + e.suffix_len,
                    value_len: e.value_len,
                    stub: e.stub,
                });
            }
        }
        Ok(Run {
            parent,
            nodes,
            items,
            leaf,
        })
    }

    /// Writes the full key of item `j` into `out`.
    pub(super) fn key(&self, j: usize, out: &mut Vec<u8>) -> Result<(), Restart> {
        out.clear();
        let it = self.items[j];
        if it.sep {
            self.parent.push_key(it.index, out)
        } else {
            self.nodes[it.member].push_key(it.index, out)
        }
    }

    /// The child page item `j` points to (inner runs only).
    pub(super) fn child(&self, j: usize) -> Result<PageId, Restart> {
        let it = self.items[j];
        if it.sep {
            Ok(self.nodes[it.member].upper_child())
        } else {
            self.nodes[it.member].child(it.index)
        }
    }

    /// The item that becomes the separator after the node `(start, end)`: its last entry
    /// for leaves, the entry right after it (pushed up) for inner nodes.
    pub(super) fn separator(&self, end: usize) -> usize {
        if self.leaf {
            end - 1
        } else {
            end
        }
    }

    /// Cuts the run from the right into nodes of at most `page` bytes, each as full as it
    /// can be. Returns the `(start, end)` item ranges from left to right, or `None` if more
    /// than `max_nodes` nodes are needed. Reads optimistically.
    pub(super) fn optimistic_plan(
        &self,
        page: usize,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        max_nodes: usize,
    ) -> Result<Option<Vec<(usize, usize)>>, Restart> {
        let items = &self.items;
        let space = |range: &[Item], plen: usize| -> usize {
            range
                .iter()
                .map(|x| stored_entry_space(x.key_len.saturating_sub(plen), x.value_len, x.stub))
                .sum()
        };
        let mut chunks = Vec::new();
        let mut end = items.len();
        let mut upper_len = upper.map_or(0, <[u8]>::len);
        let (mut first, mut last) = (Vec::new(), Vec::new());
        loop {
            if chunks.len() == max_nodes {
                return Ok(None);
            }
            if end == 0 {
                // An empty group, or an inner node left with only its upper child.
                chunks.push((0, 0));
                break;
            }
            self.key(end - 1, &mut last)?;
            let (mut start, mut plen, mut sum) = (end, 0, 0);
            while start > 0 {
                let c = start - 1;
                self.key(c, &mut first)?;
                let p = common_prefix(&first, &last).min(prefix_cap(page));
                let s = if start == end || p != plen {
                    space(&items[c..end], p)
                } else {
                    sum + {
                        let x = &items[c];
                        stored_entry_space(x.key_len.saturating_sub(p), x.value_len, x.stub)
                    }
                };
                let lower_len = match c {
                    0 => lower.map_or(0, <[u8]>::len),
                    _ => items[c - 1].key_len,
                };
                if node_size(p, lower_len + upper_len, s) > page {
                    break;
                }
                (start, plen, sum) = (c, p, s);
            }
            if start == end {
                // Every entry fits in an empty page; only a torn read gets here.
                return Err(Restart);
            }
            chunks.push((start, end));
            if start == 0 {
                break;
            }
            upper_len = items[start - 1].key_len;
            end = if self.leaf { start } else { start - 1 };
        }
        chunks.reverse();
        Ok(Some(chunks))
    }

    /// The prefix of the parent with the group's `x - 1` inner separators replaced by the
    /// plan's: the common prefix of its new first and last key.
    pub(super) fn optimistic_parent_prefix(
        &self,
        chunks: &[(usize, usize)],
        lo: usize,
    ) -> Result<Vec<u8>, Restart> {
        let parent = self.parent;
        let count = parent.count();
        let hi = lo + self.nodes.len() - 1;
        let first_sep = chunks.first().filter(|_| chunks.len() > 1);
        let last_sep = chunks.len().checked_sub(2).map(|i| chunks[i]);
        let (mut first, mut last) = (Vec::new(), Vec::new());
        let have_first = if lo > 0 {
            parent.push_key(0, &mut first)?;
            true
        } else if let Some(&(_, end)) = first_sep {
            self.key(self.separator(end), &mut first)?;
            true
        } else if hi < count {
            parent.push_key(hi, &mut first)?;
            true
        } else {
            false
        };
        let have_last = if hi < count {
            parent.push_key(count - 1, &mut last)?;
            true
        } else if let Some((_, end)) = last_sep {
            self.key(self.separator(end), &mut last)?;
            true
        } else if lo > 0 {
            parent.push_key(lo - 1, &mut last)?;
            true
        } else {
            false
        };
        let (plower, pupper) = (parent.lower_fence()?, parent.upper_fence()?);
        Ok(node_prefix(
            parent.page_size(),
            plower.as_deref(),
            pupper.as_deref(),
            have_first.then_some(&first[..]),
            have_last.then_some(&last[..]),
        )
        .to_vec())
    }

    /// Whether the parent, with the group's `x - 1` inner separators replaced by the plan's,
    /// fits in a page. Reads optimistically.
    pub(super) fn optimistic_parent_fits(
        &self,
        chunks: &[(usize, usize)],
        lo: usize,
        page: usize,
    ) -> Result<bool, Restart> {
        let parent = self.parent;
        let count = parent.count();
        let hi = lo + self.nodes.len() - 1;
        let seps: Vec<usize> = chunks[..chunks.len() - 1]
            .iter()
            .map(|&(_, end)| self.separator(end))
            .collect();
        let lower = parent.lower_fence()?;
        let upper = parent.upper_fence()?;
        let plen = self.optimistic_parent_prefix(chunks, lo)?.len();
        let old_plen = parent.prefix_len();
        let mut entries = 0;
        for i in (0..lo).chain(hi..count) {
            let e = parent.entry(i)?;
            entries += entry_space((old_plen + e.suffix_len).saturating_sub(plen), 4);
        }
        for &s in &seps {
            entries += entry_space(self.items[s].key_len.saturating_sub(plen), 4);
        }
        let fences = lower.map_or(0, |f| f.len()) + upper.map_or(0, |f| f.len());
        Ok(node_size(plen, fences, entries) <= page)
    }

    /// Builds the node for items `start..end` into `scratch`. Exclusive latches held.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn build(
        &self,
        scratch: &mut Scratch,
        level: u16,
        (start, end): (usize, usize),
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        upper_child: PageId,
    ) {
        let (mut first, mut last) = (Vec::new(), Vec::new());
        let nonempty = start < end;
        if nonempty {
            self.key(start, &mut first).expect("latched");
            self.key(end - 1, &mut last).expect("latched");
        }
        let prefix = node_prefix(
            scratch.node().page_size(),
            lower,
            upper,
            nonempty.then_some(&first[..]),
            nonempty.then_some(&last[..]),
        )
        .to_vec();
        let mut b = scratch.builder(level, lower, upper, &prefix);
        let mut key = Vec::new();
        let mut j = start;
        while j < end {
            let it = self.items[j];
            if it.sep {
                self.key(j, &mut key).expect("latched");
                let child = self.nodes[it.member].upper_child();
                b.push(&key, &child.to_ne_bytes());
                j += 1;
                continue;
            }
            // A stretch of entries of one member is copied in one go.
            let mut stop = j + 1;
            while stop < end && !self.items[stop].sep && self.items[stop].member == it.member {
                stop += 1;
            }
            let last_index = self.items[stop - 1].index;
            b.copy_range(&self.nodes[it.member], it.index..last_index + 1);
            j = stop;
        }
        b.finish(upper_child);
    }
}

/// The plan that packs `members` (children `lo..` of `parent`) into at most `max_nodes`
/// nodes of at most `cap` bytes used (the page size, or less to leave room in each), and
/// whether the parent can take its separators; `None` if more nodes are needed.
#[allow(clippy::type_complexity)]
pub(super) fn optimistic_group_plan(
    parent: Node,
    lo: usize,
    members: &[Member],
    max_nodes: usize,
    cap: usize,
) -> Result<Option<(Vec<(usize, usize)>, bool)>, Restart> {
    let page = parent.page_size();
    let nodes: Vec<Node> = members.iter().map(|m| m.node).collect();
    let run = Run::optimistic_new(parent, lo, &nodes)?;
    let lower = nodes[0].lower_fence()?;
    let upper = nodes[nodes.len() - 1].upper_fence()?;
    let Some(chunks) = run.optimistic_plan(cap, lower.as_deref(), upper.as_deref(), max_nodes)?
    else {
        return Ok(None);
    };
    let parent_fits = run.optimistic_parent_fits(&chunks, lo, page)?;
    Ok(Some((chunks, parent_fits)))
}
