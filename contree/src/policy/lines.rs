//! Line mode's detector (`Config::line_mode`; the mechanism is `sync::lines`): which leaves
//! are updated in place by many threads at once, the contention Eunomia's adaptive
//! detector looks for (`eunomia-contended-index.md` §5.3).
//!
//! A software tree sees no HTM aborts, and on an oversubscribed machine a hot leaf's latch is
//! rarely found taken (its holders are seldom preempted), so the slow-path share Contention
//! Split counts stays near zero. What makes a hot leaf expensive is its latch word and the
//! leaf's bytes moving from core to core with every update of another thread. So the
//! detector counts *handoffs* of in-place updates: one update in [`SAMPLE`] under the
//! leaf's latch is sampled; a sampled update from another thread than the last sampled one,
//! within [`WINDOW_US`] microseconds of it, adds 2 to the leaf's heat, one from the same
//! thread takes 1 off, and a longer gap clears it. At [`HEAT_TO_SWITCH`] the leaf switches to
//! line mode. A leaf updated by one thread, or now and then (uniform workloads: each leaf
//! sees an update every few milliseconds), never heats up. The state lives in the leaf's
//! policy area (heat, the last sampled thread's tag, its time).
//!
//! With insert segments on (`sync::segments`), latched inserts of new keys are samples too:
//! handoffs of inserts heat a leaf as those of updates do.
//!
//! Line mode ends at any exclusive acquisition of the leaf (`sync::lines`); a leaf that keeps
//! its hot updates heats up and switches again.

use super::contention::draw;
use super::PolicyArea;
use crate::config::LineMode;
use crate::node::NodeMut;
use std::cell::Cell;
use std::sync::OnceLock;
use std::time::Instant;

/// One in-place update in `SAMPLE` is sampled (a power of two).
const SAMPLE: u32 = 8;
/// Sampled updates further apart than this, in microseconds, are not contention.
const WINDOW_US: u32 = 100;
/// The heat at which a leaf switches to line mode: 16 handoffs in a row, or more with
/// updates of one thread in between.
const HEAT_TO_SWITCH: u16 = 32;

/// The detector of one tree.
#[derive(Debug)]
pub(crate) struct LineDetector {
    mode: LineMode,
    /// Line mode is on and leaves in it take inserts in segments (`Config::insert_segments`).
    segments: bool,
}

crate::sync::seam::model_local! {
    static TAG: Cell<u16> = const { Cell::new(0) };
}

/// A non-zero tag per thread (distinct for up to 65,535 threads; a repeat only blurs the
/// detector).
fn tag() -> u16 {
    TAG.with(|t| {
        if t.get() == 0 {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            t.set((n % 0xffff) as u16 + 1);
        }
        t.get()
    })
}

/// Microseconds since the first call in this process (wraps after 71 minutes; a wrap only
/// misjudges one gap). Also the clock of the cohort latch's record of waits (`numa::cohort`).
pub(crate) fn clock_us() -> u32 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_micros() as u32
}

impl LineDetector {
    pub(crate) fn new(mode: LineMode, insert_segments: bool) -> Self {
        LineDetector {
            mode,
            segments: mode != LineMode::Off && insert_segments,
        }
    }

    /// Whether inserts take the path that may put them in a segment (`sync::segments`) and
    /// may switch their leaf to line mode.
    #[inline]
    pub(crate) fn segments(&self) -> bool {
        self.segments
    }

    /// Whether leaves may switch at all (`LineMode::Off` keeps every update on the latch).
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.mode != LineMode::Off
    }

    /// After an in-place update of an inline value of the latched leaf `node`: whether the
    /// leaf should switch to line mode now (the caller takes its entry and sets the bit).
    #[inline]
    pub(crate) fn after_update(&self, node: &mut NodeMut) -> bool {
        match self.mode {
            LineMode::Off => false,
            LineMode::Always => true,
            LineMode::Auto => draw() & (SAMPLE - 1) == 0 && sampled(node, clock_us(), tag()),
        }
    }
}

/// One sampled update by the thread tagged `me` at `now` (see the module doc).
#[cold]
#[inline(never)]
fn sampled(node: &mut NodeMut, now: u32, me: u16) -> bool {
    let mut area = PolicyArea::read(node);
    let recent = area.heat_holder != 0 && now.wrapping_sub(area.heat_at) <= WINDOW_US;
    area.heat = if !recent {
        0
    } else if area.heat_holder != me {
        area.heat.saturating_add(2)
    } else {
        area.heat.saturating_sub(1)
    };
    (area.heat_holder, area.heat_at) = (me, now);
    let switch = area.heat >= HEAT_TO_SWITCH;
    if switch {
        area.heat = 0;
    }
    area.write(node);
    switch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Scratch;

    /// Handoffs close together heat a leaf until it switches; one thread alone, or gaps
    /// longer than the window, never do.
    #[test]
    fn handoffs_close_together_switch_a_leaf() {
        let mut page = Scratch::new(4096);
        let mut node = page.node_mut();
        node.init(0, None, None, &[]);
        // Two threads alternating every microsecond: 16 handoffs switch.
        let switched = (0..40u32).position(|t| sampled(&mut node, t, 1 + (t % 2) as u16));
        assert_eq!(switched, Some(16));
        // One thread alone: never.
        assert!((100..1000u32).all(|t| !sampled(&mut node, t, 5)));
        // Alternating threads, but a sample every 200 microseconds: never.
        assert!((0..1000u32).all(|i| !sampled(&mut node, 10_000 + i * 200, 1 + (i % 2) as u16)));
        // A run of one thread cools a leaf: 2 up per handoff, 1 down per repeat.
        let mut t = 1_000_000;
        let mut step = |node: &mut NodeMut, me| {
            t += 1;
            sampled(node, t, me)
        };
        // 14 samples: 13 handoffs, heat 26.
        for _ in 0..7 {
            assert!(!step(&mut node, 1) && !step(&mut node, 2));
        }
        assert_eq!(PolicyArea::read(&node.node()).heat, 26);
        assert!((0..40).all(|_| !step(&mut node, 2)));
        assert_eq!(PolicyArea::read(&node.node()).heat, 0);
    }
}
