//! The space manager: one background thread per process, shared by every tree that has
//! [`Config::space_manager`](crate::Config::space_manager) on, which runs XMerge on random
//! nodes of a tree while its fill factor is below
//! [`Config::fill_target`](crate::Config::fill_target).
//!
//! **Rounds.** A round for one tree retries its deferred merges, gives the memory of free
//! pages beyond the pool's reserve back to the system (`page/release.rs`), estimates its fill factor
//! from 32 random leaves (weighted by the inverse of the chance of picking each, so the
//! estimate is unbiased) and, if it is below the target, runs XMerge on 8 random groups
//! (`TreeCore::optimistic_xmerge_random`).
//!
//! **Pacing, per tree.** After a round that freed pages, the tree's next round waits for as
//! long as the round took times `(1 - share) / share`, with `share` =
//! [`Config::space_manager_share`](crate::Config::space_manager_share): the work for one tree
//! uses at most that share of one core however fast the tree grows (measured in
//! `docs/design.md`). After a round that found the tree full enough or freed nothing the tree
//! waits 10 ms, doubling up to one second while that lasts, whatever the share: a share of
//! 1.0 removes the pause after productive rounds only (a stress-test setting), so even a
//! fill target the tree can never reach (1.0) costs no busy core. The thread runs the tree whose turn comes first and sleeps
//! until the next turn; it never spins.
//!
//! **Fresh pages ahead** ([`Config::prefault`](crate::Config::prefault), `page/prefault.rs`).
//! Whenever the thread wakes it faults in the rest of the segment of fresh pages that each
//! pool in its care asked for (a writer started it); while it finds such work it wakes
//! again soon, more often when it came late ([`Poll`]: a few looks per segment the writers
//! fill), and after 16 ms without any only rounds look. Writers never wake it: waking a
//! sleeping thread cost the waker 22 us at the median on the shared VM (an interprocessor
//! interrupt), a writer's p999 in a long-key load. Not paced by the share: the work is what
//! the writers would otherwise do themselves, inside their splits.
//!
//! **Sharing.** The service holds a weak reference to each tree's shared state. Dropping a
//! [`Tree`](crate::Tree) takes it off the list and waits for a round in progress (rounds are
//! short and never wait for a latch), so the tree's memory is freed by the dropping thread,
//! before `drop` returns, never later by the service thread. A round takes the tree's `space_gate`, so `stats` and
//! `check_invariants` see no change from it. The thread is started by the first tree that
//! asks for it; if it cannot be started, that tree runs without it (merges, the reclaim at
//! the budget and [`Tree::compact`](crate::Tree::compact) still free space) and the next tree
//! tries again. No tree ever costs a thread of its own.

use super::Rng;
use crate::engine::TreeCore;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Leaves sampled per round to estimate the fill factor.
const SAMPLES: usize = 32;
/// Random XMerge attempts per round.
const ATTEMPTS: usize = 8;
/// The pause after a round with nothing to do, doubled while that lasts, up to `IDLE_MAX`.
const IDLE_MIN: Duration = Duration::from_millis(10);
const IDLE_MAX: Duration = Duration::from_secs(1);
/// Fresh pages ahead: the first and shortest pause between looks while pools grow, and
/// the longest (see [`Poll`]).
const POLL_MIN: Duration = Duration::from_millis(1);
const POLL_MAX: Duration = Duration::from_millis(16);
const QUIET_LOOKS: u32 = 3;

/// One tree the service looks after.
struct Entry {
    tree: Weak<TreeCore>,
    rng: Rng,
    /// When its next round is due.
    next: Instant,
    /// The pause after its next idle round.
    idle: Duration,
}

/// The process-wide service: the trees and the thread (once started).
#[derive(Default)]
struct Service {
    trees: Mutex<Vec<Entry>>,
    thread: Mutex<Option<Thread>>,
    /// Held by the thread from taking a strong reference to a tree until it lets it go, so
    /// that [`release`] can wait for the end of a round.
    round: Mutex<()>,
}

/// Puts the calling thread (the service's) under Linux's `SCHED_BATCH` policy: the same
/// share of the CPU as before, but its wake-ups never preempt a running thread, so a round
/// or a prefault that wakes up on a writer's CPU waits for the writer's time slice or for
/// another CPU instead of stalling it (a writer stalled 100-180 us at such wake-ups in a
/// long-key load, `bench/results/prefault-s54.txt`). Best effort; nothing elsewhere.
fn background_policy() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: changes only the calling thread's scheduling policy; `param` is a valid
        // `sched_param` for the call's duration.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
    }
}

/// Faults in what the pools of the trees in the service's care asked for, under `round`
/// (a dropping tree waits for it, as for a round): `None` if none asked, else the most pages
/// that writers had taken from a segment before the thread came to it.
fn prefault(svc: &Service) -> Option<usize> {
    if !crate::page::prefault::take_any_wanted() {
        return None;
    }
    let _round = lock(&svc.round);
    let trees: Vec<Arc<TreeCore>> = lock(&svc.trees)
        .iter()
        .filter_map(|e| e.tree.upgrade())
        .collect();
    let late = trees.iter().filter_map(|core| core.prefault_ahead()).max();
    // The trees are let go before `round`.
    drop(trees);
    late
}

/// When the thread looks for fresh pages to fault in (see [`prefault`]) while pools grow.
/// The aim is a few looks per segment that writers fill, whatever their rate: the pause
/// halves (down to [`POLL_MIN`]) after a look that came after writers had taken a quarter
/// of their segment, and doubles after [`QUIET_LOOKS`] looks in a row that found nothing;
/// once it passes [`POLL_MAX`] only rounds look.
#[derive(Clone, Copy, Debug, Default)]
struct Poll {
    /// The pause before the next look; `None`: no looks between rounds.
    pause: Option<Duration>,
    /// Looks in a row that found nothing.
    quiet: u32,
}

impl Poll {
    /// After a look that found `late` (see [`prefault`]).
    fn next(self, late: Option<usize>) -> Poll {
        let now = self.pause.unwrap_or(POLL_MIN);
        match late {
            None if self.pause.is_none() => self,
            None if self.quiet + 1 < QUIET_LOOKS => Poll {
                quiet: self.quiet + 1,
                ..self
            },
            None => Poll {
                pause: Some(now * 2).filter(|&p| p <= POLL_MAX),
                quiet: 0,
            },
            Some(taken) if taken > crate::page::SEGMENT_PAGES / 4 => Poll {
                pause: Some((now / 2).max(POLL_MIN)),
                quiet: 0,
            },
            Some(_) => Poll {
                pause: Some(now),
                quiet: 0,
            },
        }
    }
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(Service::default)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Puts `core` in the service's care, starting the thread if it is not running. Returns
/// `false` (and leaves the tree out) if the thread cannot be started.
pub(crate) fn register(core: &Arc<TreeCore>) -> bool {
    register_in(service(), core, || {
        std::thread::Builder::new()
            .name("contree-space".into())
            .spawn(|| run(service()))
            .ok()
            .map(|h| h.thread().clone())
    })
}

/// `register` with the service and the way to start its thread given.
fn register_in(
    svc: &Service,
    core: &Arc<TreeCore>,
    spawn: impl FnOnce() -> Option<Thread>,
) -> bool {
    let mut thread = lock(&svc.thread);
    if thread.is_none() {
        match spawn() {
            Some(t) => *thread = Some(t),
            None => return false,
        }
    }
    let seed = (Arc::as_ptr(core) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    lock(&svc.trees).push(Entry {
        tree: Arc::downgrade(core),
        rng: Rng::new(seed),
        next: Instant::now(),
        idle: IDLE_MIN,
    });
    if let Some(t) = thread.as_ref() {
        t.unpark();
    }
    true
}

/// Takes `core` out of the service's care and waits until the thread holds no strong
/// reference to it (the end of a round in progress), so that dropping the caller's reference
/// afterwards frees the tree at once.
pub(crate) fn release(core: &TreeCore) {
    release_in(service(), core);
}

fn release_in(svc: &Service, core: &TreeCore) {
    lock(&svc.trees).retain(|e| !std::ptr::eq(e.tree.as_ptr(), core));
    // The thread takes a strong reference only under `trees` and `round` and lets it go
    // before it unlocks `round`: once the entry is gone, passing through `round` is enough.
    drop(lock(&svc.round));
}

/// Trees in the service's care (tests).
#[cfg(test)]
pub(crate) fn registered(core: &Arc<TreeCore>) -> bool {
    lock(&service().trees)
        .iter()
        .any(|e| std::ptr::eq(e.tree.as_ptr(), Arc::as_ptr(core)))
}

/// One round: `None` if the fill factor is at the target (or unknown), else the pages freed.
fn round(core: &TreeCore, rng: &mut Rng) -> Option<usize> {
    let _gate = core.space_gate.lock().unwrap_or_else(|e| e.into_inner());
    core.retry_deferred_merges();
    core.release_memory(false);
    core.collapse_extents();
    let fill = core.optimistic_sample_fill(rng, SAMPLES)?;
    if fill >= core.config().fill_target {
        return None;
    }
    Some(
        (0..ATTEMPTS)
            .map(|_| core.optimistic_xmerge_random(rng))
            .sum(),
    )
}

fn run(svc: &Service) {
    background_policy();
    let mut poll = Poll::default();
    loop {
        let late = prefault(svc);
        poll = poll.next(late);
        let poll = poll.pause;
        let round_lock = lock(&svc.round);
        // The tree whose turn comes first; dropped trees leave the list.
        let due = {
            let mut trees = lock(&svc.trees);
            trees.retain(|e| e.tree.strong_count() > 0);
            let now = Instant::now();
            match trees.iter_mut().min_by_key(|e| e.next) {
                Some(e) if e.next <= now => e.tree.upgrade().map(|t| (t, e.rng.clone())),
                Some(e) => {
                    let wait = e.next - now;
                    drop(trees);
                    drop(round_lock);
                    std::thread::park_timeout(poll.map_or(wait, |p| p.min(wait)));
                    continue;
                }
                None => {
                    drop(trees);
                    drop(round_lock);
                    std::thread::park_timeout(poll.unwrap_or(IDLE_MAX));
                    continue;
                }
            }
        };
        let Some((core, mut rng)) = due else {
            continue;
        };
        let started = Instant::now();
        let freed = round(&core, &mut rng);
        let share = core.config().space_manager_share;
        let mut trees = lock(&svc.trees);
        let Some(e) = trees
            .iter_mut()
            .find(|e| std::ptr::eq(e.tree.as_ptr(), Arc::as_ptr(&core)))
        else {
            continue;
        };
        e.rng = rng;
        let pause = if matches!(freed, Some(n) if n > 0) {
            e.idle = IDLE_MIN;
            started.elapsed().mul_f64((1.0 - share) / share)
        } else {
            let pause = e.idle;
            e.idle = (e.idle * 2).min(IDLE_MAX);
            pause
        };
        e.next = Instant::now() + pause;
        drop(trees);
        // Let the tree go before `round`, which a dropping tree waits for.
        drop(core);
        drop(round_lock);
        if pause.is_zero() {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Tree};
    #[test]
    fn trees_share_one_thread_and_leave_when_dropped() {
        let trees: Vec<Tree> = (0..50).map(|_| Tree::new()).collect();
        for t in &trees {
            assert!(registered(&t.core));
        }
        let core = Arc::clone(&trees[0].core);
        drop(trees);
        // The service holds only weak references (or a round's, briefly).
        let start = Instant::now();
        while Arc::strong_count(&core) > 1 {
            assert!(start.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_dropped_tree_is_freed_before_drop_returns() {
        // With no pause between rounds the thread nearly always holds a tree; the drop must
        // still free it (else its memory would be freed later, by the service thread).
        let config = Config {
            space_manager_share: 1.0,
            fill_target: 1.0,
            ..Config::default()
        };
        for _ in 0..200 {
            let t = Tree::with_config(config.clone()).unwrap();
            for i in 0..2_000u64 {
                t.insert(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes(), b"v")
                    .unwrap();
            }
            let weak = Arc::downgrade(&t.core);
            drop(t);
            assert_eq!(weak.strong_count(), 0, "the service still held the tree");
        }
    }

    #[test]
    fn a_tree_is_left_out_when_the_thread_cannot_be_started() {
        let svc = Service::default();
        let t = Tree::with_config(Config {
            space_manager: false,
            ..Config::default()
        })
        .unwrap();
        assert!(!register_in(&svc, &t.core, || None));
        assert!(lock(&svc.trees).is_empty());
        // The next tree tries again.
        assert!(register_in(&svc, &t.core, || Some(std::thread::current())));
        assert_eq!(lock(&svc.trees).len(), 1);
    }
}
