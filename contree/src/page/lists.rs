//! The pool's free pages and fresh pages, kept per NUMA node when pages are placed
//! (`Numa::placement`, `PagePool::placed`); one set of lists otherwise.
//!
//! **Segments belong to nodes.** A node takes fresh pages from a segment of its own: when its
//! current segment is used up it takes the next segment no node has taken yet, and that
//! segment's memory is bound to the node (its directory entry says which). A page therefore
//! lives on one node for the pool's whole life, and a freed page goes back to its node's
//! lists. With one node this is the pool without placement: segments are taken in order.
//!
//! **Which page a thread gets.** Its node's free pages (the most recently freed first), then
//! its node's pages whose memory went back to the system, then the fresh pages left in its
//! node's current segment; then, if the other nodes together hold at least a segment's worth
//! of free pages whose memory is still there, one of the node holding most
//! ([`FreeList::donor`]: memory the pool holds anyway, rather than a new segment; counted as
//! a page placed remotely); then a fresh page of a new segment of its own, and only when no
//! fresh page can be had any free page of another node. A pool under placement thus holds at
//! most a segment's worth of free pages per node more than one without.

use super::{segment_pages, PageId, MAX_PAGES, SEGMENT_PAGES, SEGMENT_SHIFT};

/// One node's pages.
#[derive(Default)]
pub(super) struct NodeLists {
    /// Free pages whose memory is still held, the most recently freed last.
    pub(super) free: Vec<PageId>,
    /// Free pages whose memory went back to the system (`release`), each with the latch
    /// version its next life must exceed.
    pub(super) returned: Vec<(PageId, u64)>,
    /// The node's next fresh page and the end of the segment it is in (equal when the node
    /// has no segment to take fresh pages from).
    fresh: usize,
    fresh_end: usize,
}

/// The free and fresh pages of a pool (see the module doc), under the pool's mutex.
pub(super) struct FreeList {
    pub(super) nodes: Vec<NodeLists>,
    /// The first segment that no node has taken yet.
    next_segment: usize,
    /// Huge-page extents whose last segment opened, to advise once the mutex is released
    /// (`segments`), by their first segments.
    pub(super) collapse: Vec<usize>,
    /// When the space manager last collapsed extents (`segments::collapse_pending`).
    pub(super) collapsed_at: Option<std::time::Instant>,
}

impl FreeList {
    /// Lists for `nodes` nodes (at least one).
    pub(super) fn new(nodes: usize) -> FreeList {
        FreeList {
            nodes: (0..nodes.max(1)).map(|_| NodeLists::default()).collect(),
            next_segment: 0,
            collapse: Vec::new(),
            collapsed_at: None,
        }
    }

    /// Free pages whose memory is held, on all nodes.
    pub(super) fn free_len(&self) -> usize {
        self.nodes.iter().map(|l| l.free.len()).sum()
    }

    /// Free pages whose memory went back to the system, on all nodes.
    pub(super) fn returned_len(&self) -> usize {
        self.nodes.iter().map(|l| l.returned.len()).sum()
    }

    /// The fresh page `node` takes next, taking the next segment for it if its current one
    /// is used up; `None` past the last page a pool may have. The page is not taken until
    /// [`take_fresh`](Self::take_fresh).
    pub(super) fn fresh_page(&mut self, node: usize) -> Option<usize> {
        let lists = &mut self.nodes[node];
        if lists.fresh == lists.fresh_end {
            let first = self.next_segment << SEGMENT_SHIFT;
            if first >= MAX_PAGES {
                return None;
            }
            lists.fresh = first;
            lists.fresh_end = first + segment_pages(self.next_segment);
            self.next_segment += 1;
        }
        Some(lists.fresh)
    }

    /// The fresh pages left in `node`'s current segment: the next one and the segment's end
    /// (`None` when it has none left).
    pub(super) fn fresh_range(&self, node: usize) -> Option<(usize, usize)> {
        let lists = &self.nodes[node];
        (lists.fresh < lists.fresh_end).then_some((lists.fresh, lists.fresh_end))
    }

    /// The fresh page `node` takes next from its current segment, if that has one left.
    pub(super) fn current_fresh(&self, node: usize) -> Option<usize> {
        let lists = &self.nodes[node];
        (lists.fresh < lists.fresh_end).then_some(lists.fresh)
    }

    /// Takes the page [`fresh_page`](Self::fresh_page) or
    /// [`current_fresh`](Self::current_fresh) named.
    pub(super) fn take_fresh(&mut self, node: usize) {
        let lists = &mut self.nodes[node];
        debug_assert!(lists.fresh < lists.fresh_end);
        lists.fresh += 1;
    }

    /// The node other than `node` to take a free page from before `node` takes a fresh one:
    /// the one holding most free pages, if the other nodes hold at least a segment's worth.
    pub(super) fn donor(&self, node: usize) -> Option<usize> {
        if self.nodes.len() == 1 {
            return None;
        }
        let others = self.free_len() - self.nodes[node].free.len();
        if others < SEGMENT_PAGES {
            return None;
        }
        self.most_free(node)
    }

    /// The node other than `node` holding most free pages whose memory is held, if any does.
    pub(super) fn most_free(&self, node: usize) -> Option<usize> {
        (0..self.nodes.len())
            .filter(|&o| o != node && !self.nodes[o].free.is_empty())
            .max_by_key(|&o| self.nodes[o].free.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_node_takes_segments_in_order_and_skips_the_ends_of_small_ones() {
        let mut l = FreeList::new(1);
        let mut got = Vec::new();
        for _ in 0..40 {
            let p = l.fresh_page(0).unwrap();
            l.take_fresh(0);
            got.push(p);
        }
        // Segments 0..5 hold 1, 2, 4, 8 and 16 pages, then 32.
        assert_eq!(&got[..4], &[0, 32, 33, 64]);
        assert_eq!(got[31], 5 * SEGMENT_PAGES);
        assert_eq!(got.len(), 40);
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn nodes_take_segments_of_their_own() {
        let mut l = FreeList::new(3);
        let seg = |p: usize| p >> SEGMENT_SHIFT;
        let a = l.fresh_page(2).unwrap();
        l.take_fresh(2);
        let b = l.fresh_page(0).unwrap();
        l.take_fresh(0);
        let c = l.fresh_page(0).unwrap();
        // Node 2 took segment 0 (one page); node 0 took segment 1 and stays in it.
        assert_eq!((seg(a), seg(b), seg(c)), (0, 1, 1));
        l.take_fresh(0);
        let d = l.fresh_page(2).unwrap();
        assert_eq!(seg(d), 2);
    }

    #[test]
    fn a_donor_needs_a_segment_of_free_pages_elsewhere() {
        let mut l = FreeList::new(3);
        l.nodes[1].free.extend(0..(SEGMENT_PAGES as u32 - 1));
        assert_eq!(l.donor(0), None);
        l.nodes[2].free.push(1000);
        assert_eq!(l.donor(0), Some(1));
        assert_eq!(l.donor(1), None);
        assert_eq!(l.most_free(1), Some(2));
        assert_eq!(FreeList::new(1).donor(0), None);
    }

    std::thread_local! {
        /// The simulated node of a test thread.
        static NODE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A pool placing pages on `nodes` simulated nodes, a thread's node being what it set
    /// in `NODE` before its first allocation.
    fn placed_pool(nodes: usize, return_memory: bool, bind: bool) -> Arc<PagePool> {
        use crate::numa::{NodeFn, ThreadMap, Topology};
        let topology = Topology::Simulated {
            nodes,
            threads: ThreadMap::By(NodeFn::new(|| NODE.with(|n| n.get()))),
        };
        let placement = Placement {
            topology: crate::numa::topology::Resolved::new(&topology),
            bind,
        };
        PagePool::placed(
            4096,
            usize::MAX,
            return_memory,
            Huge::Advise,
            false,
            Some(placement),
        )
    }

    use super::super::{Arc, Directory, Huge, PagePool, Placement};

    #[test]
    fn each_thread_gets_pages_of_its_node_and_freed_pages_go_home() {
        let pool = placed_pool(4, true, false);
        let dir = Directory::of(&pool);
        let per_node: Vec<Vec<PageId>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|node| {
                    let pool = &pool;
                    s.spawn(move || {
                        NODE.with(|n| n.set(node));
                        (0..100)
                            .flat_map(|i| pool.allocate(1 + i % 3).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (node, ids) in per_node.iter().enumerate() {
            assert_eq!(ids.len(), 199);
            assert!(ids.iter().all(|&p| dir.node_of(p).unwrap() == node));
        }
        let mut all: Vec<PageId> = per_node.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4 * 199, "a page handed out twice");
        assert_eq!(pool.pages_per_node(), vec![199; 4]);
        // Node 3's pages, freed by any thread, go back to node 3.
        pool.free_many(&per_node[3][..20]);
        assert_eq!(pool.pages_per_node(), vec![199, 199, 199, 179]);
        assert_eq!(pool.lock().nodes[3].free.len(), 20);
        // A thread of node 0 does not take them (fewer than a segment's worth)...
        let more = pool.allocate(1).unwrap();
        assert_eq!(dir.node_of(more[0]).unwrap(), 0);
        assert_eq!(pool.pages_placed_remote(), 0);
        // ...and release keeps each node's share of the reserve (777 pages in use: 48 over
        // 4 nodes).
        assert_eq!(pool.release(false), 20 - 12);
        assert_eq!(pool.lock().nodes[3].returned.len(), 8);
        assert_eq!(pool.release(true), 12);
        // Node 3 gets its own pages back, their memory returned and renewed.
        std::thread::scope(|s| {
            s.spawn(|| {
                NODE.with(|n| n.set(3));
                let again = pool.allocate(20).unwrap();
                assert!(again.iter().all(|&p| dir.node_of(p).unwrap() == 3));
                assert!(again.iter().all(|p| per_node[3][..20].contains(p)));
            });
        });
        assert_eq!(pool.bytes_returned(), 0);
    }

    #[test]
    fn a_node_without_free_pages_takes_another_nodes_plenty_before_a_fresh_segment() {
        let pool = placed_pool(2, false, false);
        let dir = Directory::of(&pool);
        // This thread is node 0 (the default of `NODE`).
        let ids = pool.allocate(3 * SEGMENT_PAGES).unwrap();
        let (node1, taken) = std::thread::scope(|s| {
            s.spawn(|| {
                NODE.with(|n| n.set(1));
                let own = pool.allocate(1).unwrap();
                pool.free_many(&ids);
                // Node 1 still has fresh pages in its own segment: they come first.
                let next = pool.allocate(SEGMENT_PAGES - 1).unwrap();
                (own, next)
            })
            .join()
            .unwrap()
        });
        assert_eq!(dir.node_of(node1[0]).unwrap(), 1);
        assert!(taken.iter().all(|&p| dir.node_of(p).unwrap() == 1));
        assert_eq!(pool.pages_placed_remote(), 0);
        std::thread::scope(|s| {
            s.spawn(|| {
                NODE.with(|n| n.set(1));
                // Node 1's segment (segment 8) is used up: node 0's free pages (three
                // segments' worth) serve before a new segment is opened.
                let remote = pool.allocate(1).unwrap();
                assert_eq!(dir.node_of(remote[0]).unwrap(), 0);
            });
        });
        assert_eq!(pool.pages_placed_remote(), 1);
        assert_eq!(pool.pages_per_node(), vec![1, SEGMENT_PAGES]);
    }

    /// Segments bound to their nodes come from `memory::map` (here a node the machine may
    /// not have: binding is best effort) and go back to it when the pool is dropped.
    #[test]
    fn bound_segments_are_memory_like_any_other() {
        let pool = placed_pool(2, true, true);
        let dir = Directory::of(&pool);
        let mine = pool.allocate(3 * SEGMENT_PAGES).unwrap();
        let theirs = std::thread::scope(|s| {
            s.spawn(|| {
                NODE.with(|n| n.set(1));
                pool.allocate(SEGMENT_PAGES + 1).unwrap()
            })
            .join()
            .unwrap()
        });
        for &p in mine.iter().chain(&theirs) {
            let page = dir.page(p).unwrap();
            // SAFETY: byte 100 of a page of a mapped segment, handed out to this test.
            unsafe { page.add(100).write(p as u8) };
            // SAFETY: as above.
            assert_eq!(unsafe { page.add(100).read() }, p as u8);
        }
        assert!(theirs.iter().all(|&p| dir.node_of(p).unwrap() == 1));
        pool.free_many(&mine);
        assert!(pool.release(true) > 0);
        assert_eq!(pool.pages_per_node(), vec![0, SEGMENT_PAGES + 1]);
    }
}
