//! Contention Split (`contention-split-and-xmerge.md` §3, Listing 1): notice threads that
//! serialize on one leaf's latch while changing different entries, and split the leaf
//! between those entries so they stop sharing a latch.
//!
//! After every leaf change (insert, update, remove), made under the leaf's exclusive latch,
//! the writer draws a random number. With probability `2^-contention_sample_shift` it adds
//! the change to the leaf's counters (in the node header: sampled updates, how many of them
//! found the latch taken, and the slot changed). With probability
//! `2^-contention_period_shift` (a subset of the sampled draws) the period ends: if the share
//! of sampled updates that took the latch's slow path reaches `contention_threshold` and the
//! slot just changed differs from the last sampled one, the leaf is split halfway between
//! the two, even when it is not full. The counters then restart.
//!
//! Listing 1 compares the current position with `lastUpdatedPos` after overwriting it; here
//! the previous value is compared, as the text of §3.3 describes.
//!
//! The counters live in the leaf's policy area (see `policy`) and are only touched under the
//! exclusive latch, so they cost no shared word; the random numbers come from a per-thread
//! xorshift generator. A split leaf is marked hot; merges and XMerge leave hot leaves alone
//! (unless they are empty) until a period ends without contention or `HOT_PERIODS` periods
//! have ended, whichever comes first.

use super::PolicyArea;
use crate::config::Config;
use crate::node::NodeMut;
use std::cell::Cell;

/// The decision rule, fixed at tree creation from the `Config`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContentionSplit {
    enabled: bool,
    sample_mask: u32,
    period_mask: u32,
    threshold: f64,
}

crate::sync::seam::model_local! {
    static RNG: Cell<u32> = const { Cell::new(0) };
}

/// A per-thread xorshift32 draw.
#[inline]
fn draw() -> u32 {
    RNG.with(|c| {
        let mut x = c.get();
        if x == 0 {
            // Seed from the address of the thread-local: distinct per thread, never zero
            // (under Shuttle, from the schedule's random source).
            x = crate::sync::seam::seed(c as *const Cell<u32> as usize);
        }
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c.set(x);
        x
    })
}

impl ContentionSplit {
    pub(crate) fn new(config: &Config) -> Self {
        let mask = |shift: u32| (1u32 << shift.min(31)) - 1;
        ContentionSplit {
            enabled: config.contention_split,
            sample_mask: mask(config.contention_sample_shift),
            period_mask: mask(
                config
                    .contention_period_shift
                    .max(config.contention_sample_shift),
            ),
            threshold: config.contention_threshold,
        }
    }

    /// Records a change of slot `pos` in `node` (exclusively latched; `slow_path` tells
    /// whether the latch had to be waited for). Returns the split position (the left node
    /// keeps slots `0..=pos`) when the period ends with unnecessary contention.
    #[inline]
    pub(crate) fn after_change(
        &self,
        node: &mut NodeMut,
        pos: usize,
        slow_path: bool,
    ) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        let r = draw();
        if r & self.sample_mask != 0 {
            return None;
        }
        self.sampled(node, pos, slow_path, r & self.period_mask == 0)
    }

    #[cold]
    fn sampled(
        &self,
        node: &mut NodeMut,
        pos: usize,
        slow_path: bool,
        period_end: bool,
    ) -> Option<usize> {
        let mut area = PolicyArea::read(node);
        let updates = area.sampled.saturating_add(1);
        let slow = area.sampled_slow.saturating_add(slow_path as u16);
        let pos16 = pos.min(u16::MAX as usize - 2) as u16;
        let last = area.last_slot;
        if !period_end {
            (area.sampled, area.sampled_slow, area.last_slot) = (updates, slow, Some(pos16));
            area.write(node);
            return None;
        }
        (area.sampled, area.sampled_slow, area.last_slot) = (0, 0, None);
        let contended =
            slow as f64 >= self.threshold * updates as f64 && slow > 0 || self.threshold == 0.0;
        // A hot mark expires: cleared by a period without contention, and worn down by
        // one at every period end (a threshold of 0.0 counts every period as contended).
        area.hot = if contended {
            area.hot.saturating_sub(1)
        } else {
            0
        };
        area.write(node);
        if !contended {
            return None;
        }
        let last = last.filter(|&l| l != pos16)?;
        if node.count() < 2 {
            return None;
        }
        let (a, b) = if last < pos16 {
            (last, pos16)
        } else {
            (pos16, last)
        };
        let mid = (a as usize + b as usize) / 2;
        (mid + 1 < node.count()).then_some(mid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Scratch;
    use crate::policy::{LeafPolicies, HOT_PERIODS};

    /// A threshold of 0.0 counts every period as contended: the hot mark must still wear
    /// off, one period end at a time.
    #[test]
    fn hot_marks_expire_when_every_period_counts_as_contended() {
        let cs = ContentionSplit::new(&Config {
            contention_threshold: 0.0,
            ..Config::default()
        });
        let mut page = Scratch::new(4096);
        let mut node = page.node_mut();
        node.init(0, None, None, &[]);
        for k in 0u8..4 {
            assert!(node.insert_entry(k as usize, &[k], b"v"));
        }
        LeafPolicies::contention_split_done(&mut node);
        for _ in 0..HOT_PERIODS {
            assert!(!LeafPolicies::may_merge(&node.node()));
            // Not contended by the latch (no slow path), contended by the threshold.
            cs.sampled(&mut node, 1, false, true);
        }
        assert_eq!(PolicyArea::read(&node.node()).hot, 0);
        assert!(LeafPolicies::may_merge(&node.node()));
        // A period without contention clears a mark at once (a real threshold).
        let cs = ContentionSplit::new(&Config::default());
        LeafPolicies::contention_split_done(&mut node);
        cs.sampled(&mut node, 1, false, true);
        assert!(LeafPolicies::may_merge(&node.node()));
    }
}
