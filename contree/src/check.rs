//! The structural check: [`Tree::check_invariants`].
//!
//! Walks the whole tree under shared latches (top-down coupling is not needed: the check is
//! meant to run while no writer is active) and verifies for every node: keys strictly
//! ascending, every key inside the node's fences, the stored prefix consistent with the
//! fences (equal to their common prefix unless flagged as derived from the keys), children one level down whose fences are
//! exactly the separators around them, and space accounting inside the page. It also checks
//! that the number of entries equals `len()` and that every allocated page is reachable.

use crate::blob::{self, Place, Stub};
use crate::engine::TreeCore;
use crate::long_key;
use crate::node::{common_prefix, inline_key_max, prefix_cap, Layout, Node, TABLE_LEVEL};
use crate::page::PageId;
use crate::Tree;
use std::collections::{HashMap, HashSet};

struct Walk<'t> {
    tree: &'t TreeCore,
    /// Partition tables met (at most one, the root).
    tables: usize,
    rightmost_leaf: Option<PageId>,
    pages: usize,
    entries: usize,
    /// Chain pages named by stubs.
    blob_pages: HashSet<PageId>,
    /// Heap chunks named by value stubs and key blobs, with their lengths.
    chunks: HashMap<(PageId, u16), usize>,
    /// Stored forms of long keys found, by their stub.
    key_blobs: HashMap<Stub, u32>,
}

impl Walk<'_> {
    /// The whole key of `stored` (a key as a node stores it), checking a long key's stored
    /// form against its blob and counting it.
    fn whole(&mut self, here: &str, stored: &[u8]) -> Result<Vec<u8>, String> {
        let size = self.tree.config().page_size;
        let Some(stub) = long_key::stub_of(stored, size) else {
            return Ok(stored.to_vec());
        };
        let mut key = stored.to_vec();
        long_key::expand(&mut key, self.tree.directory())
            .map_err(|_| format!("{here}: long key {stub:?} unreadable"))?;
        if key.len() <= inline_key_max(size) || key.len() > long_key::MAX_KEY_LEN {
            return Err(format!("{here}: long key of {} bytes", key.len()));
        }
        let head = crate::node::long_head(size);
        if key[..head] != stored[..head] {
            return Err(format!("{here}: long key {stub:?} differs from its blob"));
        }
        *self.key_blobs.entry(stub).or_default() += 1;
        Ok(key)
    }

    /// Checks that every key blob's reference count is the number of stored forms that
    /// name it, and records its chunk or pages.
    fn key_blobs(&mut self) -> Result<(), String> {
        let size = self.tree.config().page_size;
        let blobs: Vec<(Stub, u32)> = self.key_blobs.iter().map(|(&s, &n)| (s, n)).collect();
        for (stub, named) in blobs {
            let refs = {
                let st = self.tree.heap_lock();
                self.tree.key_refs_of(&st, stub)
            };
            if refs != named {
                return Err(format!(
                    "key blob {stub:?}: count {refs}, named by {named} stored forms"
                ));
            }
            let len = long_key::blob_len(stub.len, size)
                .map_err(|_| format!("key blob {stub:?}: a key of {} bytes", stub.len))?;
            self.named(&format!("key blob {stub:?}"), stub.at, len)?;
        }
        Ok(())
    }

    /// Records the blob of `len` bytes at `at` as named (once), counting a chain's pages.
    fn named(&mut self, here: &str, at: Place, len: usize) -> Result<(), String> {
        let size = self.tree.config().page_size;
        match at {
            Place::Chunk(pid, slot) => {
                if !self.tree.in_heap(len) {
                    return Err(format!("{here}: a chunk of {len} bytes"));
                }
                if self.chunks.insert((pid, slot), len).is_some() {
                    return Err(format!("{here}: chunk {pid}/{slot} named twice"));
                }
            }
            Place::Chain(first) => {
                if self.tree.in_heap(len) {
                    return Err(format!("{here}: a chain of {len} bytes"));
                }
                let ids = blob::chain_pages(self.tree.directory(), size, first, len)
                    .map_err(|_| format!("{here}: names an unmapped blob page"))?;
                if ids.len() != blob::pages_for(len, size) {
                    return Err(format!("{here}: blob of {} pages", ids.len()));
                }
                for pid in ids {
                    if !self.blob_pages.insert(pid) {
                        return Err(format!("{here}: blob page {pid} named twice"));
                    }
                    self.pages += 1;
                }
            }
        }
        Ok(())
    }

    /// Checks the heap: every live chunk is named, with its length, and nothing else; its
    /// pages count as reachable.
    fn heap(&mut self) -> Result<(), String> {
        let live = self.tree.heap_chunks()?;
        let mut pages = HashSet::new();
        for (chunk, len) in &live {
            match self.chunks.get(chunk) {
                Some(named) if named == len => {}
                Some(named) => {
                    return Err(format!(
                        "heap chunk {chunk:?} of {len} bytes named with {named}"
                    ))
                }
                None => return Err(format!("heap chunk {chunk:?} named by no stub")),
            }
            pages.insert(chunk.0);
        }
        if live.len() != self.chunks.len() {
            return Err(format!(
                "{} chunks named but {} live in the heap",
                self.chunks.len(),
                live.len()
            ));
        }
        self.pages += self.tree.heap_lock().page_count();
        if pages.len() != self.tree.heap_lock().page_count() {
            return Err("an empty heap page".into());
        }
        Ok(())
    }

    /// Checks the out-of-line values of `leaf`: each stub names a blob of its length,
    /// longer than an inline value may be, named by no other stub.
    fn blobs(&mut self, here: &str, leaf: &Node) -> Result<(), String> {
        for i in 0..leaf.count() {
            let stub = leaf
                .stub(i)
                .map_err(|_| format!("{here}: entry {i} has a bad stub"))?;
            let Some(stub) = stub else { continue };
            if stub.len <= self.tree.config().max_inline_value_len() {
                return Err(format!(
                    "{here}: entry {i} is out of line with {} bytes",
                    stub.len
                ));
            }
            self.named(&format!("{here}: entry {i}"), stub.at, stub.len)?;
        }
        Ok(())
    }

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
        if node.layout() != Ok(Layout::Slotted) {
            return Err(format!("{here}: unknown layout"));
        }
        let lf = node
            .lower_fence()
            .map_err(|_| format!("{here}: bad lower fence"))?;
        let uf = node
            .upper_fence()
            .map_err(|_| format!("{here}: bad upper fence"))?;
        let (lf, uf) = (lf.as_deref(), uf.as_deref());
        if lf != lower || uf != upper {
            return Err(format!(
                "{here}: fences {lf:?}..{uf:?} differ from parent's {lower:?}..{upper:?}"
            ));
        }
        let size = node.page_size();
        let lf_whole = lf.map(|l| self.whole(&here, l)).transpose()?;
        let uf_whole = uf.map(|u| self.whole(&here, u)).transpose()?;
        let prefix = node.prefix().map_err(|_| format!("{here}: bad prefix"))?;
        let prefix = prefix.as_slice();
        if prefix.len() > prefix_cap(size) {
            return Err(format!("{here}: prefix of {} bytes", prefix.len()));
        }
        if let (Some(l), Some(u)) = (lf, uf) {
            let fence_prefix = &l[..common_prefix(l, u).min(prefix_cap(size))];
            let ok = if node.prefix_is_guaranteed() {
                fence_prefix.starts_with(prefix)
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
        let mut prev: Option<Vec<u8>> = None;
        for i in 0..count {
            let stored = node
                .key(i)
                .map_err(|_| format!("{here}: entry {i} unreadable"))?;
            let k = self.whole(&here, &stored)?;
            if let Some(l) = &lf_whole {
                if k <= *l {
                    return Err(format!("{here}: key {k:?} not above lower fence {l:?}"));
                }
            }
            if let Some(u) = &uf_whole {
                if k > *u {
                    return Err(format!("{here}: key {k:?} above upper fence {u:?}"));
                }
            }
            if let Some(prev) = &prev {
                if *prev >= k {
                    return Err(format!("{here}: keys out of order: {prev:?} then {k:?}"));
                }
            }
            match node.lower_bound(&k, self.tree.directory()) {
                Ok((pos, true)) if pos == i => {}
                other => return Err(format!("{here}: search for key {i} gave {other:?}")),
            }
            prev = Some(k);
            keys.push(stored);
        }
        if node.is_leaf() {
            self.blobs(&here, &node)?;
            self.entries += count;
            if uf.is_none() {
                self.rightmost_leaf = Some(pid);
            }
            return Ok(());
        }
        let children: Vec<PageId> = (0..=count)
            .map(|i| node.child(i))
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{here}: unreadable child id"))?;
        // The children of a partition table are roots of any height.
        let level = if node.level() == TABLE_LEVEL {
            self.tables += 1;
            if self.tables > 1 {
                return Err(format!("{here}: a second partition table"));
            }
            None
        } else {
            Some(node.level() - 1)
        };
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
            self.node(child, level, lo, hi)?;
        }
        Ok(())
    }
}

impl TreeCore {
    /// The check itself; the caller keeps the space manager out.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mut walk = Walk {
            tree: self,
            tables: 0,
            rightmost_leaf: None,
            pages: 0,
            entries: 0,
            blob_pages: HashSet::new(),
            chunks: HashMap::new(),
            key_blobs: HashMap::new(),
        };
        walk.node(self.root_id(), None, None, None)?;
        walk.key_blobs()?;
        walk.heap()?;
        if walk.entries != self.len() {
            return Err(format!(
                "{} entries in leaves but len() is {}",
                walk.entries,
                self.len()
            ));
        }
        let held = self.bytes_in_use() / self.config().page_size;
        if walk.pages != held {
            return Err(format!("{} pages reachable but {held} held", walk.pages));
        }
        if walk.rightmost_leaf != Some(self.rightmost_leaf()) {
            return Err(format!(
                "the rightmost leaf is page {:?}, not page {} as it was made",
                walk.rightmost_leaf,
                self.rightmost_leaf()
            ));
        }
        Ok(())
    }
}

impl Tree {
    /// Checks the structure: key order inside and across nodes, fences, prefixes, levels,
    /// entry counts, that every page the tree holds is reachable and that the rightmost leaf
    /// kept its page. Meant for tests; run it while no writer is active.
    /// The space manager thread pauses while the check runs.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for i in 0u32..5_000 {
    ///     tree.insert(&i.to_le_bytes(), b"v").unwrap();
    /// }
    /// tree.check_invariants().unwrap();
    /// ```
    pub fn check_invariants(&self) -> Result<(), String> {
        // The side structure's entries are counted in `len`: merged first, so that the
        // tree alone holds them.
        self.side_flush_all();
        let _gate = self
            .core
            .space_gate
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.core.check_invariants()
    }
}
