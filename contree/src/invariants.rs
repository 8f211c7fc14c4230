//! The structural check behind [`Tree::check_invariants`](crate::Tree::check_invariants).
//!
//! Walks the whole tree under shared latches (top-down coupling is not needed: the check is
//! meant to run while no writer is active) and verifies for every node: keys strictly
//! ascending, every key inside the node's fences, the stored prefix consistent with the
//! fences (equal to their common prefix unless flagged as derived from the keys), children one level down whose fences are
//! exactly the separators around them, and space accounting inside the page. It also checks
//! that the number of entries equals `len()` and that every allocated page is reachable.

use crate::btree::BTree;
use crate::node::common_prefix;
use crate::page::PageId;

struct Walk<'t> {
    tree: &'t BTree,
    pages: usize,
    entries: usize,
}

impl Walk<'_> {
    fn node(
        &mut self,
        pid: PageId,
        level: Option<u16>,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Result<(), String> {
        let (node, latch) = self
            .tree
            .page(pid)
            .map_err(|_| format!("page {pid} is not mapped"))?;
        let _s = latch.shared();
        self.pages += 1;
        let here = format!("page {pid} (level {})", node.level());
        if let Some(l) = level {
            if node.level() != l {
                return Err(format!("{here}: expected level {l}"));
            }
        }
        let lf = node
            .lower_fence()
            .map_err(|_| format!("{here}: bad lower fence"))?;
        let uf = node
            .upper_fence()
            .map_err(|_| format!("{here}: bad upper fence"))?;
        if lf != lower || uf != upper {
            return Err(format!(
                "{here}: fences {lf:?}..{uf:?} differ from parent's {lower:?}..{upper:?}"
            ));
        }
        let prefix = node.prefix().map_err(|_| format!("{here}: bad prefix"))?;
        if let (Some(l), Some(u)) = (lf, uf) {
            let fence_prefix = &l[..common_prefix(l, u)];
            let ok = if node.prefix_is_guaranteed() {
                prefix == fence_prefix
            } else {
                prefix.starts_with(fence_prefix)
            };
            if !ok {
                return Err(format!(
                    "{here}: prefix {prefix:?} does not fit the fences' common prefix {fence_prefix:?}"
                ));
            }
        } else if node.prefix_is_guaranteed() && !prefix.is_empty() {
            return Err(format!(
                "{here}: an edge node's prefix must be flagged as key-derived"
            ));
        }
        if node.used_space() > node.page_size() {
            return Err(format!("{here}: uses {} bytes", node.used_space()));
        }
        let count = node.count();
        let mut keys = Vec::with_capacity(count);
        for i in 0..count {
            let k = node
                .key(i)
                .map_err(|_| format!("{here}: entry {i} unreadable"))?;
            if let Some(l) = lf {
                if k.as_slice() <= l {
                    return Err(format!("{here}: key {k:?} not above lower fence {l:?}"));
                }
            }
            if let Some(u) = uf {
                if k.as_slice() > u {
                    return Err(format!("{here}: key {k:?} above upper fence {u:?}"));
                }
            }
            if let Some(prev) = keys.last() {
                if *prev >= k {
                    return Err(format!("{here}: keys out of order: {prev:?} then {k:?}"));
                }
            }
            match node.lower_bound(&k) {
                Ok((pos, true)) if pos == i => {}
                other => return Err(format!("{here}: search for key {i} gave {other:?}")),
            }
            keys.push(k);
        }
        if node.is_leaf() {
            self.entries += count;
            return Ok(());
        }
        let children: Vec<PageId> = (0..=count)
            .map(|i| node.child(i))
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{here}: unreadable child id"))?;
        let level = node.level() - 1;
        // The shared latch is held while the children are checked; no writer runs.
        for (i, &child) in children.iter().enumerate() {
            let lo = if i == 0 {
                lf
            } else {
                Some(keys[i - 1].as_slice())
            };
            let hi = if i == count {
                uf
            } else {
                Some(keys[i].as_slice())
            };
            self.node(child, Some(level), lo, hi)?;
        }
        Ok(())
    }
}

pub(crate) fn check(tree: &BTree, root: PageId) -> Result<(), String> {
    let mut walk = Walk {
        tree,
        pages: 0,
        entries: 0,
    };
    walk.node(root, None, None, None)?;
    if walk.entries != tree.len() {
        return Err(format!(
            "{} entries in leaves but len() is {}",
            walk.entries,
            tree.len()
        ));
    }
    let allocated = tree.pages.bytes_in_use() / tree.config().page_size;
    if walk.pages != allocated {
        return Err(format!(
            "{} pages reachable but {allocated} allocated",
            walk.pages
        ));
    }
    Ok(())
}
