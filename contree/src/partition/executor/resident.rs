//! Resident tasks: thread-per-core without client threads. [`Executor::on_workers`] runs
//! one closure on every worker thread at once; the closure makes its own operations and
//! carries them out through a [`Resident`]: those whose keys its worker owns at once, on
//! its own partitions, with no message and no latch; the others as batches to their
//! owners, whose queues the waiting worker serves meanwhile (so two residents that wait
//! for each other both go on). This is the shared-nothing shape of thread-per-core
//! (one thread per core, each both the source of work and the owner of a slice of the
//! data): no thread hands its work to another through the scheduler, which is what the
//! client-and-worker shape pays per batch on a machine with fewer cores than threads.
//!
//! **Order and moves.** A batch is routed by the current routes. An operation routed to
//! this worker is carried out only if the worker has owned its key since that routing's
//! epoch (`routes::Owned`, as for a message); otherwise it is refused, as a remote worker
//! refuses what it no longer owns. Refused operations are routed again, in batch order,
//! once every part of the batch was answered, until none is refused: one resident's
//! operations on one key take effect in batch order, as one [`Client`](super::Client)'s
//! do, also while partitions move, slice and meld.
//!
//! **Liveness.** A worker carries out its queue only between a resident task's calls into
//! its [`Resident`]: [`Resident::execute`] serves the queue first and while it waits, and
//! [`Resident::serve`] serves it alone. A task that computes for long without either
//! delays the other workers' batches to it, and the executor's ownership changes, by as
//! long.

use super::client::Hub;
use super::routes::Routes;
use super::worker::{Answer, Msg, Op, OpResult, Part, Worker};
use super::Executor;
use crate::error::Error;
use crate::sync::seam::channel::{self, Receiver, Sender};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The closure of a resident task, as the workers see it.
type TaskFn = dyn Fn(&mut Resident<'_>) + Sync;

/// A resident task in a worker's queue.
pub(crate) struct Task {
    /// The caller's closure with its lifetime erased. `on_workers` waits until every task
    /// message was answered, which happens once the closure returned or when the message is
    /// dropped unrun; so the closure outlives every use of this pointer.
    f: *const TaskFn,
    hub: Arc<Hub>,
    reply: Option<Sender<TaskAnswer>>,
}

// SAFETY: `f` points to a `Sync` closure, which any thread may call through a shared
// reference; `hub` and `reply` are `Send`.
unsafe impl Send for Task {}

enum TaskAnswer {
    /// The closure returned, or panicked (its payload).
    Done(std::thread::Result<()>),
    /// The worker stopped before it ran the task.
    Stopped,
}

impl Task {
    /// Runs the task on `worker` and answers its caller.
    pub(super) fn run(mut self, worker: &mut Worker) {
        let reply = self.reply.take().expect("a task runs once");
        let mut resident = Resident::new(worker, Arc::clone(&self.hub));
        // SAFETY: the closure lives until this task is answered (see `f`), which is below.
        let f = unsafe { &*self.f };
        let out = catch_unwind(AssertUnwindSafe(|| f(&mut resident)));
        drop(resident);
        let _ = reply.send(TaskAnswer::Done(out));
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // Dropped unrun: the worker stopped.
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(TaskAnswer::Stopped);
        }
    }
}

impl Executor {
    /// Runs `task` on every worker thread at once, each with a [`Resident`] of its
    /// worker, and returns what each returned, in worker order (the thread-per-core shape
    /// without client threads: see [`Resident`]). Blocks until every worker finished its
    /// task; a panic in a task is resumed here once all finished.
    /// [`Error::ExecutorStopped`] if a worker had stopped.
    ///
    /// Calling it from inside an action or a task is a programming error and panics: the
    /// worker would wait for itself.
    ///
    /// ```
    /// use contree::{Executor, ExecutorConfig, Op};
    /// let exec = Executor::with_config(ExecutorConfig {
    ///     workers: 2,
    ///     boundaries: vec![500u32.to_be_bytes().to_vec()],
    ///     ..Default::default()
    /// })
    /// .unwrap();
    /// // Each worker inserts every key of its own residue class, wherever it lives.
    /// let inserted = exec
    ///     .on_workers(|resident| {
    ///         let me = resident.worker() as u32;
    ///         let ops: Vec<Op> = (0u32..1000)
    ///             .filter(|i| i % 2 == me)
    ///             .map(|i| Op::Insert(i.to_be_bytes().into(), b"v".into()))
    ///             .collect();
    ///         resident.execute(ops).len()
    ///     })
    ///     .unwrap();
    /// assert_eq!(inserted, vec![500, 500]);
    /// assert_eq!(exec.len(), 1000);
    /// ```
    pub fn on_workers<R: Send>(
        &self,
        task: impl Fn(&mut Resident<'_>) -> R + Sync,
    ) -> Result<Vec<R>, Error> {
        assert!(
            !crate::sync::owner::active(),
            "Executor::on_workers called from an executor worker (inside an action or a \
             task): the worker would wait for itself"
        );
        let hub = &self.control.hub;
        let n = hub.queues.len();
        let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
        let run = |resident: &mut Resident<'_>| {
            let out = task(resident);
            *slots[resident.worker()].lock().expect("a slot's lock") = Some(out);
        };
        let f: *const (dyn Fn(&mut Resident<'_>) + Sync + '_) = &run;
        // SAFETY: only the lifetime bound of the trait object changes (the same fat
        // pointer); `Task::f` says why the closure outlives its uses.
        let f: *const TaskFn = unsafe { std::mem::transmute(f) };
        let (tx, rx) = channel::unbounded();
        for queue in &hub.queues {
            let task = Task {
                f,
                hub: Arc::clone(hub),
                reply: Some(tx.clone()),
            };
            // A stopped worker: the message comes back and its `Drop` answers `Stopped`.
            let _ = queue.send(Msg::Task(task));
        }
        drop(tx);
        let (mut panic, mut stopped) = (None, false);
        for _ in 0..n {
            match rx.recv() {
                Ok(TaskAnswer::Done(Ok(()))) => {}
                Ok(TaskAnswer::Done(Err(payload))) => {
                    panic.get_or_insert(payload);
                }
                Ok(TaskAnswer::Stopped) | Err(_) => stopped = true,
            }
        }
        if let Some(payload) = panic {
            resume_unwind(payload);
        }
        if stopped {
            return Err(Error::ExecutorStopped);
        }
        Ok(slots
            .into_iter()
            .map(|s| {
                s.into_inner()
                    .expect("a slot's lock")
                    .expect("every worker ran the task")
            })
            .collect())
    }
}

/// A worker's handle for a resident task ([`Executor::on_workers`]): carries out batches
/// of operations, those on keys of the worker's own partitions directly (no message, no
/// latch: the worker owns them) and the others through their owners' queues, serving its
/// own queue while it waits. Operations on one key take effect in batch order, also while
/// partitions move (see the module doc of `partition::executor::resident`).
///
/// A task should call [`execute`](Self::execute) or [`serve`](Self::serve) regularly: the
/// worker carries out the other workers' batches, clients' requests and the executor's
/// ownership changes only inside those calls while its task runs.
pub struct Resident<'w> {
    worker: &'w mut Worker,
    hub: Arc<Hub>,
    routes: Arc<Routes>,
    /// Where the other workers answer this task's batches.
    tx: Sender<Part>,
    rx: Receiver<Part>,
    ticket: u64,
    /// For each partition of `routes`, the index of the owned span that is exactly it, if
    /// any: own operations then skip the search of the owned spans. Valid for the routes
    /// epoch and the worker's `rebinds` it was built for.
    spans_of: Vec<Option<usize>>,
    spans_for: Option<(u64, u64)>,
    /// The first eight bytes of each boundary of `routes` as a big-endian word (zero
    /// padded), for routing by word compares; valid with `spans_of`.
    words: Vec<u64>,
}

/// The first eight bytes of `key` as a big-endian word, zero padded. Words order keys: if
/// the words of two keys differ, so do the keys, in the same order.
#[inline]
fn word(key: &[u8]) -> u64 {
    match key.first_chunk::<8>() {
        Some(w) => u64::from_be_bytes(*w),
        None => {
            let mut w = [0u8; 8];
            w[..key.len()].copy_from_slice(key);
            u64::from_be_bytes(w)
        }
    }
}

/// The partition of `key` by `routes` (as `Routes::partition_of`), comparing `words` (the
/// boundaries' words) first and whole boundaries only where the words are equal.
#[inline]
fn partition_by_words(routes: &Routes, words: &[u64], key: &[u8]) -> usize {
    let kw = word(key);
    let (mut lo, mut hi) = (0, words.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        let below = match words[mid].cmp(&kw) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => routes.boundaries[mid].as_slice() < key,
        };
        if below {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

impl std::fmt::Debug for Resident<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resident")
            .field("worker", &self.worker.id)
            .field("workers", &self.hub.queues.len())
            .finish_non_exhaustive()
    }
}

impl<'w> Resident<'w> {
    fn new(worker: &'w mut Worker, hub: Arc<Hub>) -> Resident<'w> {
        let routes = hub.routes.get();
        let (tx, rx) = channel::unbounded();
        Resident {
            worker,
            hub,
            routes,
            tx,
            rx,
            ticket: 0,
            spans_of: Vec::new(),
            spans_for: None,
            words: Vec::new(),
        }
    }

    /// The number of this task's worker (`0..workers`).
    pub fn worker(&self) -> usize {
        self.worker.id
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.hub.queues.len()
    }

    /// Carries out the requests waiting in the worker's queue (other workers' batches,
    /// clients' requests, ownership changes); returns how many messages it handled.
    pub fn serve(&mut self) -> usize {
        let mut n = 0;
        while self.worker.serve_one() {
            n += 1;
        }
        n
    }

    /// Carries out `ops` and returns the answer of each, in order. Operations on keys this
    /// worker owns are carried out at once, the others are sent to their owners, one
    /// message per worker; the worker serves its own queue while it waits for them.
    /// Operations on one key take effect in batch order.
    pub fn execute(&mut self, ops: Vec<Op>) -> Vec<OpResult> {
        self.serve();
        let n = ops.len();
        let mut answers: Vec<Option<OpResult>> = (0..n).map(|_| None).collect();
        let mut refused = self.round(ops.into_iter().enumerate(), n, &mut answers);
        while !refused.is_empty() {
            // Refused: the routes changed (or are about to be published); route again
            // once they show the new owners.
            crate::sync::seam::yield_now();
            self.serve();
            let n = refused.len();
            refused = self.round(refused.into_iter(), n, &mut answers);
        }
        answers
            .into_iter()
            .map(|a| a.expect("every operation is answered"))
            .collect()
    }

    /// One routing of the `n` operations `ops` (with their positions): the own ones
    /// carried out, the others sent and waited for. Returns the refused ones, in batch
    /// order.
    fn round(
        &mut self,
        ops: impl Iterator<Item = (usize, Op)>,
        n: usize,
        answers: &mut [Option<OpResult>],
    ) -> Vec<(usize, Op)> {
        if !self.hub.routes.is_current(&self.routes) {
            self.routes = self.hub.routes.get();
        }
        let routes = Arc::clone(&self.routes);
        let me = self.worker.id;
        if self.spans_for != Some((routes.epoch, self.worker.rebinds)) {
            let owned = &self.worker.owned;
            self.spans_of = (0..routes.owners.len())
                .map(|p| (routes.owners[p] == me).then(|| owned.index_of(&routes.span(p)))?)
                .collect();
            self.words = routes.boundaries.iter().map(|b| word(b)).collect();
            self.spans_for = Some((routes.epoch, self.worker.rebinds));
        }
        // Own operations keep their partition, for `spans_of`.
        let mut groups: Vec<Vec<(usize, Op)>> = (0..self.workers()).map(|_| Vec::new()).collect();
        let mut mine: Vec<(usize, usize, Op)> = Vec::new();
        for (j, (i, op)) in ops.enumerate() {
            let p = partition_by_words(&routes, &self.words, op.key());
            debug_assert_eq!(p, routes.partition_of(op.key()), "routing by words");
            let w = routes.owners[p];
            if w == me {
                if mine.capacity() == 0 {
                    mine.reserve_exact(n - j);
                }
                mine.push((p, i, op));
                continue;
            }
            let group = &mut groups[w];
            if group.capacity() == 0 {
                // At most the rest of the batch: no regrowth.
                group.reserve_exact(n - j);
            }
            group.push((i, op));
        }
        // The others' parts first, so that their owners work on them while this worker
        // carries out its own (a worker's part and another's hold different keys: the
        // order on each key stays the batch order).
        self.ticket += 1;
        let mut parts = self
            .hub
            .send_parts(groups, self.ticket, routes.epoch, &self.tx);
        let mut refused = Vec::new();
        let own = mine.len() as u64;
        for (p, i, op) in mine {
            let owned = &mut self.worker.owned;
            let entered = match self.spans_of[p] {
                Some(s) => owned.enter_index_at(s, op.key(), routes.epoch),
                None => owned.enter_at(op.key(), routes.epoch),
            };
            if entered {
                answers[i] = Some(self.worker.apply(op));
            } else {
                refused.push((i, op));
            }
        }
        let counters = self.worker.counters();
        counters.requests.fetch_add(own, Ordering::Relaxed);
        counters
            .moved
            .fetch_add(refused.len() as u64, Ordering::Relaxed);
        let mut idle = 0u32;
        while parts > 0 {
            if let Ok(part) = self.rx.try_recv() {
                debug_assert_eq!(part.ticket, self.ticket, "a part of this round");
                parts -= 1;
                for (i, answer) in part.answers {
                    match answer {
                        Answer::Done(r) => answers[i] = Some(r),
                        Answer::Moved(op) => refused.push((i, op)),
                    }
                }
                idle = 0;
            } else if self.worker.serve_one() {
                idle = 0;
            } else {
                idle += 1;
                if cfg!(feature = "shuttle") || idle > 64 {
                    crate::sync::seam::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        refused.sort_unstable_by_key(|(i, _)| *i);
        refused
    }

    single_key_ops!();
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    /// Routing by words agrees with `Routes::partition_of` on keys and boundaries that are
    /// shorter than a word, longer, and equal in their first eight bytes.
    #[test]
    fn routing_by_words_agrees_with_the_routes() {
        let pieces: [&[u8]; 6] = [b"", b"\0", b"a", b"abcdefgh", b"abcdefgh\0", b"abcdefgi"];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for a in pieces {
            for b in pieces {
                keys.push([a, b].concat());
            }
        }
        keys.sort();
        keys.dedup();
        for step in 1..5 {
            let boundaries: Vec<Vec<u8>> = keys
                .iter()
                .filter(|k| !k.is_empty())
                .step_by(step)
                .cloned()
                .collect();
            let routes = Routes {
                epoch: 0,
                owners: vec![0; boundaries.len() + 1],
                boundaries,
            };
            let words: Vec<u64> = routes.boundaries.iter().map(|b| word(b)).collect();
            for k in &keys {
                assert_eq!(
                    partition_by_words(&routes, &words, k),
                    routes.partition_of(k),
                    "key {k:?}, step {step}"
                );
            }
        }
    }
}
