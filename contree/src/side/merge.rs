//! The merge of the side structure into the tree (see the module doc of
//! [`side`](super)): sorted entries written a leaf latch per run of keys that share a leaf.

use super::ops::SideEntry;
use crate::node::NodeMut;
use crate::ops::write::{put_inline, Edit};
use crate::sync::{Counter, Restart};
use crate::Tree;

impl Tree {
    /// Writes `entries` (in ascending key order, distinct; `None` removes) into the tree:
    /// the merge of the side structure (`side`), whose caller holds the shards of the keys.
    /// A run of entries that share a leaf and stay inline is applied under one latch; an
    /// entry that needs a split, a long key or an out-of-line value takes
    /// [`modify_keeping`](Self::modify_keeping). The entry count (`len`) is left as it is:
    /// the diverted writes counted. Returns the entries it could not write (the budget
    /// refused the pages), in order.
    pub(crate) fn merge_sorted(&self, entries: Vec<SideEntry>) -> Vec<SideEntry> {
        let core = &*self.core;
        let dir = core.directory();
        let (key_max, value_max) = (
            core.config().max_inline_key_len(),
            core.config().max_inline_value_len(),
        );
        let lean = |(k, v): &SideEntry| {
            k.len() <= key_max && v.as_ref().is_none_or(|v| v.len() <= value_max)
        };
        let mut failed = Vec::new();
        let mut i = 0;
        while i < entries.len() {
            let mut next = i;
            let mut underfull = false;
            if lean(&entries[i]) {
                next = core.retry(|| -> Result<usize, Restart> {
                    let (node, mut x) = core.exclusive_leaf(&entries[i].0)?;
                    let mut node = NodeMut::new(node, &mut x);
                    let mut j = i;
                    // Entries already applied by an attempt that restarted are applied
                    // again: the same value, or a removal of an absent key.
                    while j < entries.len() && lean(&entries[j]) {
                        let (k, v) = &entries[j];
                        if j > i && !node.holds_key(k, dir)? {
                            break;
                        }
                        let (pos, found) = node.lower_bound(k, dir)?;
                        if found && node.is_stub(pos) {
                            break;
                        }
                        match v {
                            Some(v) if put_inline(&mut node, pos, k, found, v)?.is_err() => break,
                            Some(_) => {}
                            None if found => {
                                node.remove_at(pos);
                                underfull = core.is_underfull(&node);
                            }
                            None => {}
                        }
                        j += 1;
                    }
                    Ok(j)
                });
            }
            if next > i {
                if underfull {
                    core.try_merge(&entries[next - 1].0, 0);
                }
                i = next;
                continue;
            }
            let (k, v) = &entries[i];
            // The general path counts the entry it adds or removes: taken back.
            let out = match v {
                Some(v) => self.modify(k, None, |old| (Edit::Put(v), old.is_none())),
                None => self.modify(k, None, |old| (Edit::<&[u8]>::Remove, old.is_some())),
            };
            match (out, v) {
                (Ok(true), Some(_)) => core.counters.add(Counter::Len, -1),
                (Ok(true), None) => core.counters.add(Counter::Len, 1),
                (Ok(false), _) => {}
                (Err(_), _) => failed.push(entries[i].clone()),
            }
            i += 1;
        }
        failed
    }
}
