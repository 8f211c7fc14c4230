//! Leaf policies: the mechanisms that adapt a leaf to how threads use it, behind one seam.
//!
//! The data path asks the policies at named points and acts on their answer:
//! * [`before_latch`](LeafPolicies::before_latch): before a writer latches its leaf; a policy
//!   may divert the operation. Today every operation proceeds: the side structure for hot
//!   ranges (`side`) diverts inserts and removals earlier, once per operation in `insert`
//!   and `remove` rather than once per attempt, and refuses a write that reaches a leaf of
//!   a hot range under the latch (`Side::blocks`).
//! * [`latch_busy`](LeafPolicies::latch_busy): the leaf latch was found taken, before the
//!   writer waits for it; a closure-free insert or removal is handed to the latch holder
//!   there instead ([`combining`]: leaf-level combining).
//! * [`latched`](LeafPolicies::latched): the latch was acquired, with or without a slow path
//!   (the `latch-stats` counters).
//! * [`after_change`](LeafPolicies::after_change): after a leaf change under the latch;
//!   Contention Split answers with a key to split at.
//! * [`before_split`](LeafPolicies::before_split): before a leaf is split for space; a policy
//!   may choose the split position (segmented leaves will reorganise instead).
//! * [`may_merge`](LeafPolicies::may_merge): before a leaf is merged or packed by XMerge.
//!
//! **State.** Mechanism state that lives on the page is confined to the node header's policy
//! area (20 bytes), which the node layer treats as opaque and keeps across in-place rebuilds;
//! this module alone decides its layout ([`PolicyArea`]). State that only hot leaves need and
//! that does not fit there lives off the page: the stretch versions of a leaf in line mode
//! (`sync::lines`), keyed by the leaf's latch address.

pub(crate) mod combining;
mod contention;
pub(crate) mod lines;

use crate::config::Config;
use crate::node::{Node, NodeMut, POLICY_AREA};
use crate::numa::NumaState;
use crate::sync::{ExclusiveGuard, StripedCounters};
pub(crate) use combining::Combining;
pub(crate) use contention::{draw, ContentionSplit};
pub(crate) use lines::LineDetector;

/// Contention Split: the counting periods a split leaf stays hot (see [`PolicyArea::hot`]).
pub(crate) const HOT_PERIODS: u16 = 4;

/// The decoded policy area of a leaf.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyArea {
    /// Contention Split: sampled changes in the current period.
    pub sampled: u16,
    /// Contention Split: sampled changes that found the latch taken.
    pub sampled_slow: u16,
    /// Contention Split: the slot of the last sampled change.
    pub last_slot: Option<u16>,
    /// Contention Split: whether the last sampled change was at the leaf's end (an append).
    pub last_at_end: bool,
    /// Periods left in which merges and XMerge leave this leaf alone (0: not hot). Contention
    /// Split sets it to [`HOT_PERIODS`] on both halves of a split; every later period end takes
    /// one off, and a period without contention clears it, so a mark always expires.
    pub hot: u16,
    /// `latch-stats` and NUMA: the thread tag of the last exclusive holder (0: none), with its
    /// NUMA node + 1 in the top byte while a NUMA part is on.
    pub last_holder: u32,
    /// Line mode's detector (`lines`): handoffs seen among recent sampled updates.
    pub heat: u16,
    /// Line mode's detector: the thread tag of the last sampled update (0: none).
    pub heat_holder: u16,
    /// Line mode's detector: when the last sampled update came (`lines::clock_us`).
    pub heat_at: u32,
}

impl PolicyArea {
    /// Layout: sampled u16, sampled_slow u16, last slot + 1 in the low 15 bits of a u16 (0:
    /// none) with `last_at_end` in its top bit, hot periods u16, last holder u32, heat u16,
    /// heat holder u16, heat time u32; all native-endian. A leaf has fewer than 2^15 slots (pages are at most 64 KiB).
    pub(crate) fn read(node: &Node) -> PolicyArea {
        let a = node.policy_area();
        let u16_at = |i: usize| u16::from_ne_bytes([a[i], a[i + 1]]);
        PolicyArea {
            sampled: u16_at(0),
            sampled_slow: u16_at(2),
            last_slot: (u16_at(4) & 0x7fff).checked_sub(1),
            last_at_end: u16_at(4) & 0x8000 != 0,
            hot: u16_at(6),
            last_holder: u32::from_ne_bytes([a[8], a[9], a[10], a[11]]),
            heat: u16_at(12),
            heat_holder: u16_at(14),
            heat_at: u32::from_ne_bytes([a[16], a[17], a[18], a[19]]),
        }
    }

    pub(crate) fn write(&self, node: &mut NodeMut) {
        let mut a = [0u8; POLICY_AREA];
        a[0..2].copy_from_slice(&self.sampled.to_ne_bytes());
        a[2..4].copy_from_slice(&self.sampled_slow.to_ne_bytes());
        let last =
            self.last_slot.map_or(0, |s| (s + 1) & 0x7fff) | u16::from(self.last_at_end) << 15;
        a[4..6].copy_from_slice(&last.to_ne_bytes());
        a[6..8].copy_from_slice(&self.hot.to_ne_bytes());
        a[8..12].copy_from_slice(&self.last_holder.to_ne_bytes());
        a[12..14].copy_from_slice(&self.heat.to_ne_bytes());
        a[14..16].copy_from_slice(&self.heat_holder.to_ne_bytes());
        a[16..20].copy_from_slice(&self.heat_at.to_ne_bytes());
        node.set_policy_area(a);
    }
}

/// What a policy asks of an operation before the leaf latch is taken.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Divert {
    /// Go on as usual.
    Proceed,
}

/// Where a leaf split for space should cut.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SplitAdvice {
    /// The tree's default: the middle, or the end for appends.
    Default,
}

/// The policies of one tree, fixed at creation from its `Config`.
#[derive(Debug)]
pub(crate) struct LeafPolicies {
    contention: ContentionSplit,
    /// Leaf-level combining (`Config::combining`).
    pub(crate) combining: Combining,
    /// Line mode's detector (`Config::line_mode`).
    pub(crate) lines: LineDetector,
}

impl LeafPolicies {
    pub(crate) fn new(config: &Config) -> LeafPolicies {
        LeafPolicies {
            contention: ContentionSplit::new(config),
            combining: Combining::new(config.combining),
            lines: LineDetector::new(config.line_mode, config.insert_segments),
        }
    }

    /// Before a writer latches the leaf for `key`.
    #[inline]
    pub(crate) fn before_latch(&self, _key: &[u8]) -> Divert {
        Divert::Proceed
    }

    /// The leaf latch was found taken; the writer waits next.
    #[inline]
    pub(crate) fn latch_busy(&self) {}

    /// The leaf latch was acquired; `guard.slow_path()` tells whether it waited. With
    /// `latch-stats`, or with a NUMA part on (`numa`), the holder is recorded and handoffs
    /// counted.
    #[inline]
    pub(crate) fn latched(
        &self,
        node: Node,
        guard: &mut ExclusiveGuard,
        counters: &StripedCounters,
        numa: Option<&NumaState>,
    ) {
        #[cfg(feature = "latch-stats")]
        if guard.slow_path() {
            counters.add(crate::sync::Counter::LatchSlowPaths, 1);
        }
        if cfg!(feature = "latch-stats") || numa.is_some() {
            handoffs(node, guard, counters, numa);
        }
    }

    /// After a change of slot `pos` of the latched leaf `node` of the tree `core`; returns
    /// the key to split the leaf after when Contention Split decides to (a whole key: a long
    /// key is read while the leaf is latched). A contended period of ordered appends asks
    /// the side structure for a hot range instead (`Side::ask_heat`).
    #[inline(always)]
    pub(crate) fn after_change(
        &self,
        node: &mut NodeMut,
        pos: usize,
        slow_path: bool,
        core: &crate::engine::TreeCore,
    ) -> Option<Vec<u8>> {
        let mid = self
            .contention
            .after_change(node, pos, slow_path, &core.side)?;
        let mut key = node.key(mid).ok()?;
        crate::long_key::expand(&mut key, core.directory()).ok()?;
        Some(key)
    }

    /// [`Stats::append_hot_periods`](crate::Stats::append_hot_periods).
    pub(crate) fn append_hot_periods(&self) -> u64 {
        self.contention
            .append_hot_periods
            .load(crate::sync::seam::Ordering::Relaxed)
    }

    /// Before the latched leaf `node` is split for space.
    #[inline]
    pub(crate) fn before_split(&self, _node: &Node) -> SplitAdvice {
        SplitAdvice::Default
    }

    /// Whether `node` may be merged into a neighbour or packed by XMerge: any inner node,
    /// any empty leaf, and any leaf that is not hot.
    #[inline]
    pub(crate) fn may_merge(node: &Node) -> bool {
        !node.is_leaf() || node.count() == 0 || PolicyArea::read(node).hot == 0
    }

    /// Marks both halves of a Contention Split as hot for [`HOT_PERIODS`] periods.
    pub(crate) fn contention_split_done(node: &mut NodeMut) {
        let mut area = PolicyArea::read(node);
        area.hot = HOT_PERIODS;
        area.write(node);
    }
}

/// The thread part of [`PolicyArea::last_holder`]; the NUMA node + 1 is in the top byte
/// (0: no NUMA part on).
const HOLDER_THREAD: u32 = 0xFF_FFFF;

/// Records the holder of the leaf's latch (thread and NUMA node) and counts a handoff (the
/// previous holder was another thread): for `latch-stats`, and same-node or cross-node for
/// the NUMA parts (`numa::cohort`).
#[inline(never)]
fn handoffs(
    node: Node,
    guard: &mut ExclusiveGuard,
    counters: &StripedCounters,
    numa: Option<&NumaState>,
) {
    use crate::sync::Counter;
    thread_local! {
        static ID: u32 = {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % HOLDER_THREAD + 1
        };
    }
    let node_tag = numa.map_or(0, |n| (n.topology.node() as u32 + 1) << 24);
    let me = ID.with(|id| *id) | node_tag;
    let mut node = NodeMut::new(node, guard);
    let mut area = PolicyArea::read(&node);
    let prev = std::mem::replace(&mut area.last_holder, me);
    area.write(&mut node);
    if prev == 0 || prev & HOLDER_THREAD == me & HOLDER_THREAD {
        return;
    }
    #[cfg(feature = "latch-stats")]
    counters.add(Counter::LatchHandoffs, 1);
    if numa.is_some() {
        let counter = if prev >> 24 == me >> 24 {
            Counter::NumaSameHandoffs
        } else {
            Counter::NumaCrossHandoffs
        };
        counters.add(counter, 1);
    }
}
