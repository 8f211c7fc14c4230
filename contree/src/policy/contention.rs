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
//! **Appends are left alone.** When both the change that ends a contended period and the last
//! sampled one were at the leaf's end, or a few slots short of it (up to 8, and at most a
//! sixteenth of the leaf's entries), the writers are appending (auto-increment keys,
//! timestamps, arriving a little out of order from several threads). A split cannot spread
//! them, since the next key goes to the new right half again; it only leaves a half-empty
//! leaf behind (`hotspots-hot-leaves.md`). Such a period asks for no split (unless
//! [`Config::contention_split_appends`](crate::Config)) and is counted in
//! `Stats::append_hot_periods`: leaf combining (`policy::combining`) serves those writers.
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
use crate::node::{append_slack, NodeMut};
use crate::side::Side;
use crate::sync::seam::{AtomicU64, Ordering};
use std::cell::Cell;

/// The decision rule, fixed at tree creation from the `Config`.
#[derive(Debug)]
pub(crate) struct ContentionSplit {
    enabled: bool,
    /// `Config::contention_split_appends`.
    split_appends: bool,
    /// Contended periods of appends that asked for no split (module doc).
    pub(crate) append_hot_periods: AtomicU64,
    sample_mask: u32,
    period_mask: u32,
    threshold: f64,
}

crate::sync::seam::model_local! {
    static RNG: Cell<u32> = const { Cell::new(0) };
}

/// A per-thread xorshift32 draw.
#[inline]
pub(crate) fn draw() -> u32 {
    // The thread-local's address alone through `with`: a closure this small is inlined,
    // where one holding the draw (and its seeding call) was left out of line on the update
    // path, a call and an indirect call to the key's accessor per change (callgrind).
    let c = RNG.with(|c| c as *const Cell<u32>);
    // SAFETY: `c` is this thread's `RNG`, which has no destructor and so lives as long as
    // the thread; a `Cell` is only ever touched by its own thread.
    let c = unsafe { &*c };
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
}

impl ContentionSplit {
    pub(crate) fn new(config: &Config) -> Self {
        let mask = |shift: u32| (1u32 << shift.min(31)) - 1;
        ContentionSplit {
            enabled: config.contention_split,
            split_appends: config.contention_split_appends,
            append_hot_periods: AtomicU64::new(0),
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
    #[inline(always)]
    pub(crate) fn after_change(
        &self,
        node: &mut NodeMut,
        pos: usize,
        slow_path: bool,
        side: &Side,
    ) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        let r = draw();
        if r & self.sample_mask != 0 {
            return None;
        }
        self.sampled(node, pos, slow_path, r & self.period_mask == 0, Some(side))
    }

    #[cold]
    #[inline(never)]
    fn sampled(
        &self,
        node: &mut NodeMut,
        pos: usize,
        slow_path: bool,
        period_end: bool,
        side: Option<&Side>,
    ) -> Option<usize> {
        let mut area = PolicyArea::read(node);
        let updates = area.sampled.saturating_add(1);
        let slow = area.sampled_slow.saturating_add(slow_path as u16);
        let pos16 = pos.min(0x7ffd) as u16;
        // An insert at the end leaves `pos` on the last slot; a removal there, past it.
        // Concurrent appends arrive a little out of order: a few slots short counts too
        // (at most a sixteenth of the leaf, so that a small leaf keeps a middle).
        let slack = append_slack(node.count());
        let at_end = pos + 1 + slack >= node.count();
        let (last, last_at_end) = (area.last_slot, area.last_at_end);
        if !period_end {
            (area.sampled, area.sampled_slow) = (updates, slow);
            (area.last_slot, area.last_at_end) = (Some(pos16), at_end);
            area.write(node);
            return None;
        }
        (area.sampled, area.sampled_slow) = (0, 0);
        (area.last_slot, area.last_at_end) = (None, false);
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
        if at_end && last_at_end && last.is_some() && !self.split_appends {
            self.append_hot_periods.fetch_add(1, Ordering::Relaxed);
            if let Some(side) = side {
                side.ask_heat();
            }
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
    use crate::node::APPEND_SLACK;
    use crate::policy::{LeafPolicies, HOT_PERIODS};

    /// The draw is a per-thread xorshift: never zero (xorshift's fixed point, and the mark
    /// of a thread not yet seeded), changing from draw to draw, and seeded apart on another
    /// thread (from its thread-local's address).
    #[test]
    fn draws_are_per_thread_and_never_zero() {
        let mine: Vec<u32> = (0..64).map(|_| draw()).collect();
        assert!(mine.iter().all(|&x| x != 0));
        assert!(mine.windows(2).all(|w| w[0] != w[1]));
        let theirs: Vec<u32> = std::thread::spawn(|| (0..64).map(|_| draw()).collect())
            .join()
            .unwrap();
        assert_ne!(mine, theirs);
    }

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
            cs.sampled(&mut node, 1, false, true, None);
        }
        assert_eq!(PolicyArea::read(&node.node()).hot, 0);
        assert!(LeafPolicies::may_merge(&node.node()));
        // A period without contention clears a mark at once (a real threshold).
        let cs = ContentionSplit::new(&Config::default());
        LeafPolicies::contention_split_done(&mut node);
        cs.sampled(&mut node, 1, false, true, None);
        assert!(LeafPolicies::may_merge(&node.node()));
    }

    /// Contended periods of appends at the leaf's end ask for no split unless
    /// `contention_split_appends` is on; a contended period whose changes are not both at the
    /// end still splits between them.
    #[test]
    fn appends_at_the_end_are_left_to_combining() {
        for split_appends in [false, true] {
            let cs = ContentionSplit::new(&Config {
                contention_split_appends: split_appends,
                ..Config::default()
            });
            let mut page = Scratch::new(4096);
            let mut node = page.node_mut();
            node.init(0, None, None, &[]);
            // 160 entries: the slack is the whole APPEND_SLACK.
            const N: usize = 160;
            for k in 0..N {
                assert!(node.insert_entry(k, &[k as u8], b"v"));
                // Every change found the latch taken; a period ends at the last append.
                let split = cs.sampled(&mut node, k, true, k == N - 1, None);
                assert_eq!(
                    split.is_some(),
                    k == N - 1 && split_appends,
                    "{split_appends} {k}"
                );
            }
            let periods = || cs.append_hot_periods.load(Ordering::Relaxed);
            assert_eq!(periods(), u64::from(!split_appends));
            let end = N - 1;
            // Changes in the middle of the leaf are split between, either way.
            assert_eq!(cs.sampled(&mut node, 2, true, false, None), None);
            assert_eq!(cs.sampled(&mut node, 6, true, true, None), Some(4));
            // A change in the middle after one at the end: not appends, split.
            assert_eq!(cs.sampled(&mut node, end, true, false, None), None);
            assert_eq!(
                cs.sampled(&mut node, 3, true, true, None),
                Some((3 + end) / 2)
            );
            // A change at the end after one in the middle: not appends either.
            assert_eq!(cs.sampled(&mut node, 3, true, false, None), None);
            assert_eq!(
                cs.sampled(&mut node, end, true, true, None),
                Some((3 + end) / 2)
            );
            // Out of order by up to APPEND_SLACK slots still counts as appends.
            let edge = end - APPEND_SLACK;
            assert_eq!(cs.sampled(&mut node, edge, true, false, None), None);
            let split = cs.sampled(&mut node, end, true, true, None);
            assert_eq!(split, split_appends.then_some((edge + end) / 2));
            assert_eq!(periods(), 2 * u64::from(!split_appends));
            assert_eq!(cs.sampled(&mut node, edge - 1, true, false, None), None);
            assert_eq!(
                cs.sampled(&mut node, end, true, true, None),
                Some((edge - 1 + end) / 2)
            );
        }
    }

    /// A small leaf keeps a middle: the slack is at most a sixteenth of its entries.
    #[test]
    fn small_leaves_count_only_their_last_slots_as_the_end() {
        let cs = ContentionSplit::new(&Config::default());
        let mut page = Scratch::new(4096);
        let mut node = page.node_mut();
        node.init(0, None, None, &[]);
        for k in 0u8..20 {
            assert!(node.insert_entry(k as usize, &[k], b"v"));
        }
        // 20 entries: a slack of 1; slots 18 and 19 are the end, 17 is not.
        assert_eq!(cs.sampled(&mut node, 18, true, false, None), None);
        assert_eq!(cs.sampled(&mut node, 19, true, true, None), None);
        assert_eq!(cs.append_hot_periods.load(Ordering::Relaxed), 1);
        assert_eq!(cs.sampled(&mut node, 17, true, false, None), None);
        assert_eq!(cs.sampled(&mut node, 19, true, true, None), Some(18));
    }

    /// The policy area keeps the last sampled slot and whether it was at the end apart.
    #[test]
    fn last_slot_and_at_end_round_trip() {
        let mut page = Scratch::new(4096);
        let mut node = page.node_mut();
        node.init(0, None, None, &[]);
        for (last_slot, last_at_end) in [(None, false), (Some(0), true), (Some(0x7ffd), false)] {
            let area = PolicyArea {
                sampled: 3,
                sampled_slow: 2,
                last_slot,
                last_at_end,
                hot: 1,
                last_holder: 7,
                heat: 9,
                heat_holder: 3,
                heat_at: 0xdead_beef,
            };
            area.write(&mut node);
            assert_eq!(PolicyArea::read(&node.node()), area);
        }
    }
}
