//! Space management: the background space manager (`manager`), the XMerge sweeps and the
//! reclaim at the memory budget (`sweep`), and [`Tree::compact`].

pub(crate) mod manager;
mod sweep;

pub(crate) use sweep::Room;

use crate::Tree;

/// Passes of [`Tree::compact`] at most (it stops at the first that frees nothing).
const MAX_COMPACT_PASSES: usize = 8;

/// A small xorshift generator for the space manager's random picks.
#[derive(Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (which must not be 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (((self.next() >> 32) * n as u64) >> 32) as usize
    }
}

impl Tree {
    /// Runs XMerge over the whole tree, leaves first and then each inner level, and returns
    /// the number of pages it freed.
    ///
    /// Within every parent, groups of up to [`Config::xmerge_group`](crate::Config::xmerge_group)
    /// neighbouring children whose free space adds up to a page are packed into one node
    /// fewer, from right to left, so that afterwards nearly every node is full. Nodes that
    /// another thread holds latched, leaves in line mode
    /// ([`Config::line_mode`](crate::Config::line_mode)) and non-empty leaves that Contention
    /// Split marked hot (for a few of its counting periods) are skipped,
    /// so `compact` never waits and may run beside other operations. Freed pages stop
    /// counting in [`Stats::bytes_allocated`](crate::Stats::bytes_allocated); with
    /// [`Config::return_memory`](crate::Config::return_memory) (the default, on Linux) the
    /// memory of every free page then goes back to the system
    /// ([`Stats::bytes_returned`](crate::Stats::bytes_returned)), so the process's resident
    /// memory follows.
    ///
    /// ```
    /// use contree::{Config, Tree};
    /// // Without the background space manager, which would otherwise also pack leaves
    /// // between the two `stats` calls below.
    /// let tree = Tree::with_config(Config { space_manager: false, ..Config::default() }).unwrap();
    /// let mut x = 1u64;
    /// for _ in 0..20_000 {
    ///     // Random keys: the leaves end up about 70% full.
    ///     x ^= x << 13;
    ///     x ^= x >> 7;
    ///     x ^= x << 17;
    ///     tree.insert(&x.to_be_bytes(), &x.to_le_bytes()).unwrap();
    /// }
    /// let before = tree.stats();
    /// let freed = tree.compact();
    /// let after = tree.stats();
    /// assert!(freed > 0);
    /// assert_eq!(after.leaf_pages + after.inner_pages + freed, before.leaf_pages + before.inner_pages);
    /// assert!(after.fill_factor > 0.9);
    /// # #[cfg(target_os = "linux")]
    /// assert_eq!(after.bytes_free, 0);
    /// ```
    pub fn compact(&self) -> usize {
        self.side_flush_all();
        // Packing one level can bring nodes of different parents together (the parents are
        // packed too), so passes repeat until one frees nothing: one call reaches the
        // fixpoint. Each pass visits every node once; a few passes suffice.
        let mut freed = 0;
        for _ in 0..MAX_COMPACT_PASSES {
            let pass = self.core.compact_up_to(usize::MAX);
            freed += pass;
            if pass == 0 {
                break;
            }
        }
        self.core.release_memory(true);
        freed
    }
}
