//! The space manager: one background thread per tree that runs XMerge on random nodes
//! while the tree's fill factor is below [`Config::fill_target`](crate::Config::fill_target).
//!
//! **Rounds.** Each round estimates the fill factor from 32 random leaves (weighted by the
//! inverse of the chance of picking each, so the estimate is unbiased) and, if it is below
//! the target, runs XMerge on 8 random groups (`TreeCore::optimistic_xmerge_random`).
//!
//! **Pacing.** After a round that freed pages, the thread sleeps for as long as the round took
//! times `(1 - share) / share`, with `share` =
//! [`Config::space_manager_share`](crate::Config::space_manager_share): it uses at most that
//! share of one core however fast the tree grows, which keeps its cost per insert bounded
//! (measured in `docs/design.md`). After a round that found the tree full enough or freed
//! nothing it sleeps 10 ms, doubling up to one second while that lasts; it never spins. A
//! share of 1.0 removes every pause (a stress-test setting).
//!
//! **Sharing.** The thread holds an `Arc` of the tree's shared state and takes the tree's
//! `space_gate` for each round, so `stats` and `check_invariants` see no change from it. It
//! is stopped and joined when the tree is dropped.

use super::Rng;
use crate::engine::TreeCore;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Leaves sampled per round to estimate the fill factor.
const SAMPLES: usize = 32;
/// Random XMerge attempts per round.
const ATTEMPTS: usize = 8;
/// The pause after a round with nothing to do, doubled while that lasts, up to `IDLE_MAX`.
const IDLE_MIN: Duration = Duration::from_millis(10);
const IDLE_MAX: Duration = Duration::from_secs(1);

/// The handle of a running space manager; dropping it stops the thread and waits for it.
pub(crate) struct SpaceManager {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SpaceManager {
    /// Starts the thread for `btree`.
    pub(crate) fn start(core: Arc<TreeCore>) -> SpaceManager {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("contree-space".into())
            .spawn(move || run(&core, &flag))
            .expect("spawn the space manager thread");
        SpaceManager {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SpaceManager {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// One round: `None` if the fill factor is at the target (or unknown), else the pages freed.
fn round(core: &TreeCore, rng: &mut Rng, target: f64) -> Option<usize> {
    let _gate = core.space_gate.lock().unwrap_or_else(|e| e.into_inner());
    core.retry_deferred_merges();
    let fill = core.optimistic_sample_fill(rng, SAMPLES)?;
    if fill >= target {
        return None;
    }
    Some(
        (0..ATTEMPTS)
            .map(|_| core.optimistic_xmerge_random(rng))
            .sum(),
    )
}

fn run(core: &TreeCore, stop: &AtomicBool) {
    let share = core.config().space_manager_share;
    let target = core.config().fill_target;
    let mut rng = Rng::new((core as *const TreeCore as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut idle = IDLE_MIN;
    while !stop.load(Ordering::Acquire) {
        let started = Instant::now();
        let freed = round(core, &mut rng, target);
        let pause = if share >= 1.0 {
            Duration::ZERO
        } else if matches!(freed, Some(n) if n > 0) {
            idle = IDLE_MIN;
            started.elapsed().mul_f64((1.0 - share) / share)
        } else {
            let pause = idle;
            idle = (idle * 2).min(IDLE_MAX);
            pause
        };
        if pause.is_zero() {
            std::thread::yield_now();
        } else {
            std::thread::park_timeout(pause);
        }
    }
}
