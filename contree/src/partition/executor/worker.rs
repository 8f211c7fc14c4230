//! A worker of the thread-per-core executor: one thread in owner mode (`sync::owner`) that
//! carries out the requests of its queue on the partitions it owns, in queue order.
//!
//! A request for a key the worker does not own (the client's routes were stale: the
//! partition moved, or was sliced or melded) is answered "moved" without touching the tree;
//! the client sends it again by the current routes. Every message is answered exactly once:
//! by the worker, or, if the worker stopped first and the queue dropped the message, by the
//! message's own `Drop` ([`Error::ExecutorStopped`]).

use super::load::LoadReport;
use super::resident::Task;
use super::routes::{Owned, Span};
use crate::error::Error;
use crate::sync::owner::OwnerMode;
use crate::sync::seam::channel::{Receiver, Sender};
use crate::sync::seam::recv_polling;
use crate::{Bytes, PartitionedTree, Tree};
use std::any::Any;
use std::ops::Bound;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One operation of a request to the [`Executor`](crate::Executor).
///
/// Keys and values are [`Bytes`]: up to [`Bytes::INLINE_CAPACITY`] (22) bytes are stored
/// inline, so a batch of short keys and values costs no allocation per operation (build
/// them with `.into()` from byte strings, arrays, slices or vectors).
///
/// ```
/// use contree::Op;
/// let op = Op::Insert(b"key".into(), 7u64.to_be_bytes().into());
/// assert_eq!(op.key(), b"key");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// The value of a key (`Ok(None)`: absent).
    Get(Bytes),
    /// Inserts or replaces a value; answers the previous one.
    Insert(Bytes, Bytes),
    /// Removes a key; answers the removed value.
    Remove(Bytes),
}

impl Op {
    /// The key the operation is about.
    pub fn key(&self) -> &[u8] {
        match self {
            Op::Get(k) | Op::Insert(k, _) | Op::Remove(k) => k,
        }
    }
}

/// The answer to one [`Op`]: the value read, replaced or removed (inline in the [`Bytes`]
/// when it is short).
pub type OpResult = Result<Option<Bytes>, Error>;

/// An entry of a range answer of the executor: a key and its value.
pub type KeyValue = (Vec<u8>, Vec<u8>);

/// What a worker answers for one operation.
pub(super) enum Answer {
    Done(OpResult),
    /// Not this worker's key: the operation comes back.
    Moved(Op),
}

/// Operations for one worker, tagged with their positions in the client's batch.
pub(super) struct Batch {
    /// The client's number of the batch, handed back with the answers.
    pub ticket: u64,
    /// The epoch of the routes the client sent them by (see `routes::Owned`).
    pub epoch: u64,
    pub ops: Vec<(usize, Op)>,
    pub reply: Sender<Part>,
}

/// The answers of one worker to its part of a batch.
pub(super) struct Part {
    pub ticket: u64,
    pub answers: Vec<(usize, Answer)>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // Not carried out (the worker stopped): refused, each of them.
        if !self.ops.is_empty() {
            let answers = self
                .ops
                .drain(..)
                .map(|(i, _)| (i, Answer::Done(Err(Error::ExecutorStopped))))
                .collect();
            let _ = self.reply.send(Part {
                ticket: self.ticket,
                answers,
            });
        }
    }
}

/// A closure run on the worker that owns a key (the PLP "action").
pub(super) type ActionFn = Box<dyn FnOnce(&Local<'_>) -> Box<dyn Any + Send> + Send>;

pub(super) enum ActionAnswer {
    /// The closure's result, or its panic.
    Done(std::thread::Result<Box<dyn Any + Send>>),
    Moved(ActionFn),
    Stopped,
}

pub(super) struct Action {
    pub key: Vec<u8>,
    pub f: Option<ActionFn>,
    pub reply: Sender<ActionAnswer>,
}

impl Drop for Action {
    fn drop(&mut self) {
        if self.f.is_some() {
            let _ = self.reply.send(ActionAnswer::Stopped);
        }
    }
}

pub(super) enum RangeAnswer {
    Done(Vec<KeyValue>),
    Moved,
    Stopped,
}

/// A scan of `(start, end)`, which the client cut to lie in partition `span`.
pub(super) struct RangeScan {
    pub span: Span,
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
    pub limit: usize,
    pub reply: Option<Sender<RangeAnswer>>,
}

impl Drop for RangeScan {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(RangeAnswer::Stopped);
        }
    }
}

/// A message in a worker's queue.
pub(super) enum Msg {
    Batch(Batch),
    Action(Action),
    Range(RangeScan),
    /// From now on (routes epoch `epoch`) the worker owns `spans`; `ack` is answered once
    /// every earlier request was carried out (a partition handed over is quiesced).
    Own {
        spans: Vec<Span>,
        epoch: u64,
        ack: Option<Sender<()>>,
    },
    /// Stop touching the tree: answer `ack`, then wait for the spans owned afterwards and
    /// the routes epoch they belong to.
    Pause {
        ack: Sender<()>,
        resume: Receiver<(Vec<Span>, u64)>,
    },
    /// Answer the load of each owned partition since the last report.
    Report(Sender<Vec<LoadReport>>),
    /// Run a resident task on this worker (`resident`).
    Task(Task),
    Stop,
}

/// What a worker counts (read by `Executor::stats`).
#[derive(Default)]
pub(super) struct WorkerCounters {
    pub requests: AtomicU64,
    pub messages: AtomicU64,
    pub moved: AtomicU64,
    pub parks: AtomicU64,
}

/// The view of an action: the partition it runs on, through its worker's latch-free
/// access. Keys outside the partition are refused with [`Error::OutsidePartition`].
pub struct Local<'a> {
    tree: &'a Tree,
    span: &'a Span,
    worker: usize,
}

impl std::fmt::Debug for Local<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local")
            .field("lower", &self.span.lower)
            .field("upper", &self.span.upper)
            .field("worker", &self.worker)
            .finish()
    }
}

impl Local<'_> {
    fn check(&self, key: &[u8]) -> Result<(), Error> {
        if self.span.contains(key) {
            Ok(())
        } else {
            Err(Error::OutsidePartition { key: key.to_vec() })
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.check(key)?;
        Ok(self.tree.get(key))
    }

    /// Inserts or replaces the value of `key`; returns the previous one.
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.check(key)?;
        self.tree.insert(key, value)
    }

    /// Removes `key`; returns its value.
    pub fn remove(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.check(key)?;
        Ok(self.tree.remove(key))
    }

    /// Up to `limit` entries of the partition in `(start, end)`, in key order (the range is
    /// cut to the partition).
    pub fn range(&self, start: Bound<&[u8]>, end: Bound<&[u8]>, limit: usize) -> Vec<KeyValue> {
        let (start, end) = clip(self.span, start, end);
        scan(self.tree, start, end, limit)
    }

    /// The partition's lower boundary (exclusive; `None`: unbounded).
    pub fn lower(&self) -> Option<&[u8]> {
        self.span.lower.as_deref()
    }

    /// The partition's upper boundary (inclusive; `None`: unbounded).
    pub fn upper(&self) -> Option<&[u8]> {
        self.span.upper.as_deref()
    }

    /// The worker running the action.
    pub fn worker(&self) -> usize {
        self.worker
    }
}

/// `(start, end)` cut to `span`.
pub(super) fn clip(
    span: &Span,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let start = match (&span.lower, start) {
        (Some(l), Bound::Unbounded) => Bound::Excluded(l.clone()),
        (Some(l), Bound::Included(s) | Bound::Excluded(s)) if s <= l.as_slice() => {
            Bound::Excluded(l.clone())
        }
        (_, b) => b.map(<[u8]>::to_vec),
    };
    let end = match (&span.upper, end) {
        (Some(u), Bound::Unbounded) => Bound::Included(u.clone()),
        (Some(u), Bound::Included(e) | Bound::Excluded(e)) if e > u.as_slice() => {
            Bound::Included(u.clone())
        }
        (_, b) => b.map(<[u8]>::to_vec),
    };
    (start, end)
}

/// Up to `limit` entries of `tree` in `(start, end)`.
fn scan(tree: &Tree, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>, limit: usize) -> Vec<KeyValue> {
    if empty(&start, &end) {
        return Vec::new();
    }
    tree.range((start, end))
        .take(limit)
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect()
}

/// Whether no key lies in `(start, end)` (std's ranges panic on such bounds).
pub(super) fn empty(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
        | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
        _ => false,
    }
}

/// Carries out `op` on `tree`. A read copies the value straight into the answer (no
/// allocation for a short one); the old value of an insert or a removal comes from the
/// tree as a vector and moves inline when it is short.
fn apply(tree: &Tree, op: Op) -> OpResult {
    match op {
        Op::Get(k) => Ok(tree.get_with(&k, Bytes::copy_from_slice)),
        Op::Insert(k, v) => tree.insert(&k, &v).map(|old| old.map(Bytes::from)),
        Op::Remove(k) => Ok(tree.remove(&k).map(Bytes::from)),
    }
}

/// A worker's state: its tree, queue, partitions and counters. [`run`] carries out its
/// queue; a resident task (`resident`) serves the queue through it while it waits for
/// other workers.
pub(super) struct Worker {
    pub(super) tree: Arc<PartitionedTree>,
    pub(super) id: usize,
    rx: Receiver<Msg>,
    poll: std::time::Duration,
    pub(super) owned: Owned,
    /// Bumped whenever `owned` changes (a resident task's map from partitions to owned
    /// spans is valid for one value).
    pub(super) rebinds: u64,
    counters: Arc<[WorkerCounters]>,
    /// `Stop` was received (inside a resident task): the loop ends after the task.
    stop: bool,
    /// Whether a resident task runs on this worker now.
    in_task: bool,
    /// Tasks that arrived while another ran, in arrival order.
    deferred: std::collections::VecDeque<Task>,
}

/// The worker's loop: carries out its queue until `Stop` or until every sender is gone.
pub(super) fn run(
    tree: Arc<PartitionedTree>,
    id: usize,
    (rx, poll): (Receiver<Msg>, std::time::Duration),
    (spans, epoch): (Vec<Span>, u64),
    counters: Arc<[WorkerCounters]>,
) {
    // SAFETY: the executor gives every partition to one worker at a time, and only clients'
    // messages (and the worker's own resident tasks, which run on this thread) reach the
    // tree otherwise: no other thread latches a page of this worker's partitions or waits
    // on one. The partition table, which every worker latches, is the shared word; the
    // blob heap latches atomically itself. A partition changes hands only after its old
    // owner answered an `Own` or `Pause` message (the channel orders its writes before the
    // new owner's).
    let _mode = unsafe { OwnerMode::enter(tree.table_latch_addr()) };
    let mut worker = Worker {
        tree,
        id,
        rx,
        poll,
        owned: Owned::new(spans, epoch),
        rebinds: 0,
        counters,
        stop: false,
        in_task: false,
        deferred: Default::default(),
    };
    while !worker.stop {
        if let Some(task) = worker.deferred.pop_front() {
            worker.run_task(task);
            continue;
        }
        let (msg, parked) = recv_polling(&worker.rx, worker.poll);
        if parked {
            worker.counters().parks.fetch_add(1, Ordering::Relaxed);
        }
        let Some(msg) = msg else { break };
        worker.handle(msg);
    }
}

impl Worker {
    pub(super) fn counters(&self) -> &WorkerCounters {
        &self.counters[self.id]
    }

    /// Carries out one message of the queue if one is waiting; whether one was.
    pub(super) fn serve_one(&mut self) -> bool {
        match self.rx.try_recv() {
            Ok(msg) => {
                self.handle(msg);
                true
            }
            Err(_) => false,
        }
    }

    /// Carries out `msg`.
    fn handle(&mut self, msg: Msg) {
        let tree_ref = self.tree.as_tree();
        let id = self.id;
        let counters = &self.counters[id];
        let owned = &mut self.owned;
        counters.messages.fetch_add(1, Ordering::Relaxed);
        match msg {
            Msg::Batch(mut batch) => {
                let ops = std::mem::take(&mut batch.ops);
                counters
                    .requests
                    .fetch_add(ops.len() as u64, Ordering::Relaxed);
                let answers = ops
                    .into_iter()
                    .map(|(i, op)| {
                        if owned.enter_at(op.key(), batch.epoch) {
                            (i, Answer::Done(apply(tree_ref, op)))
                        } else {
                            counters.moved.fetch_add(1, Ordering::Relaxed);
                            (i, Answer::Moved(op))
                        }
                    })
                    .collect();
                let _ = batch.reply.send(Part {
                    ticket: batch.ticket,
                    answers,
                });
            }
            Msg::Action(mut action) => {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                let f = action.f.take().expect("an action is run once");
                let answer = match owned.enter(&action.key) {
                    Some(span) => {
                        let local = Local {
                            tree: tree_ref,
                            span,
                            worker: id,
                        };
                        ActionAnswer::Done(catch_unwind(AssertUnwindSafe(|| f(&local))))
                    }
                    None => {
                        counters.moved.fetch_add(1, Ordering::Relaxed);
                        ActionAnswer::Moved(f)
                    }
                };
                let _ = action.reply.send(answer);
            }
            Msg::Range(mut scan_msg) => {
                counters.requests.fetch_add(1, Ordering::Relaxed);
                let reply = scan_msg.reply.take().expect("answered once");
                let answer = if owned.find(&scan_msg.span.a_key()) == Some(&scan_msg.span) {
                    // Counted at its start where that is a key of the partition.
                    let at = match &scan_msg.start {
                        Bound::Included(k) if scan_msg.span.contains(k) => k.clone(),
                        _ => scan_msg.span.a_key(),
                    };
                    owned.enter(&at);
                    let start = std::mem::replace(&mut scan_msg.start, Bound::Unbounded);
                    let end = std::mem::replace(&mut scan_msg.end, Bound::Unbounded);
                    RangeAnswer::Done(scan(tree_ref, start, end, scan_msg.limit))
                } else {
                    counters.moved.fetch_add(1, Ordering::Relaxed);
                    RangeAnswer::Moved
                };
                let _ = reply.send(answer);
            }
            Msg::Own { spans, epoch, ack } => {
                *owned = std::mem::take(owned).rebind(spans, epoch);
                self.rebinds += 1;
                if let Some(ack) = ack {
                    let _ = ack.send(());
                }
            }
            Msg::Pause { ack, resume } => {
                let _ = ack.send(());
                if let Ok((spans, epoch)) = resume.recv() {
                    *owned = std::mem::take(owned).rebind(spans, epoch);
                    self.rebinds += 1;
                }
            }
            Msg::Report(reply) => {
                let _ = reply.send(owned.report());
            }
            Msg::Task(task) => {
                if self.in_task {
                    self.deferred.push_back(task);
                } else {
                    self.run_task(task);
                }
            }
            Msg::Stop => self.stop = true,
        }
    }

    /// Runs a resident task (`resident`) on this worker, answering its caller.
    fn run_task(&mut self, task: Task) {
        self.in_task = true;
        task.run(self);
        self.in_task = false;
    }

    /// Carries out `op` on this worker's tree (the caller checked that it owns the key and
    /// counts the request).
    pub(super) fn apply(&self, op: Op) -> OpResult {
        apply(self.tree.as_tree(), op)
    }
}
