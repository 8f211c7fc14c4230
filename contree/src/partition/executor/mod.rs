//! The thread-per-core executor ([`Executor`]): N worker threads, each the owner of a set of
//! partitions of a [`PartitionedTree`], which it reads and writes without latches; clients
//! reach the tree only through the workers' queues (PLP §3 and appendix A.4).
//!
//! **Why it is correct.** The tree is the executor's own: no `&Tree` leaves it, so no
//! thread but a partition's worker ever latches that partition's pages (outside access is
//! impossible by type). A worker runs in owner mode (`sync::owner`): its latch acquisitions
//! are plain stores of the latch word instead of read-modify-writes, and its releases still
//! publish the next version with a release store, so that the optimistic reads that do
//! cross partitions (a cursor stepping to the leaf after its partition's last one, the
//! append finger's look at the rightmost leaf) stay correct. The partition table is the one
//! shared page; workers latch it atomically, which happens only when a partition's root
//! grows or collapses. The blob heap latches its pages atomically too.
//!
//! **Ownership changes** never overlap an owner's work: [`Executor::move_partition`] gives
//! the old owner the smaller set through its queue and waits for its answer (every request
//! queued before has then been carried out) before the new owner gets the partition through
//! its own queue, and publishes the new routes only then (so a request routed by them never
//! reaches its owner early, which pipelining clients rely on, see [`Pipeline`]);
//! [`slice`](Executor::slice), [`meld`](Executor::meld), [`compact`](Executor::compact), [`stats`](Executor::stats) and
//! [`check_invariants`](Executor::check_invariants) pause every worker through its queue and
//! run on the caller's thread with ordinary latches. Requests that a worker finds are not its
//! own (stale routes) go back to the client, which sends them again by the new routes; no
//! request is lost, and one client's requests keep their order.
//!
//! **Repartitioning.** Each worker counts its requests per partition and samples their
//! keys ([`load`]); with [`ExecutorConfig::rebalance`] set (the default), a rebalancer thread
//! asks for those loads every interval and, when they are uneven, moves partitions between
//! workers, slices hot ones and melds cold ones ([`rebalance`]) through the same
//! [`move_partition`](Executor::move_partition), [`slice`](Executor::slice) and
//! [`meld`](Executor::meld) a user calls, so it keeps their guarantees.
//!
//! **Shutdown.** Dropping the executor (or [`shutdown`](Executor::shutdown)) stops each
//! worker after the requests already in its queue; requests that come later are refused
//! with [`Error::ExecutorStopped`] and change nothing.

/// The single-key operations of a type with `execute(&mut self, Vec<Op>) -> Vec<OpResult>`
/// ([`Client`] and [`Resident`]): each is a batch of one.
macro_rules! single_key_ops {
    () => {
        /// Carries out one operation (a batch of one).
        fn one(
            &mut self,
            op: $crate::partition::executor::Op,
        ) -> $crate::partition::executor::OpResult {
            self.execute(vec![op]).pop().expect("one answer")
        }

        /// The value of `key`.
        pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, $crate::Error> {
            self.one($crate::partition::executor::Op::Get(key.into()))
                .map(|v| v.map($crate::Bytes::into_vec))
        }

        /// Inserts or replaces the value of `key`; returns the previous one.
        pub fn insert(
            &mut self,
            key: &[u8],
            value: &[u8],
        ) -> Result<Option<Vec<u8>>, $crate::Error> {
            self.one($crate::partition::executor::Op::Insert(
                key.into(),
                value.into(),
            ))
            .map(|v| v.map($crate::Bytes::into_vec))
        }

        /// Removes `key`; returns its value.
        pub fn remove(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, $crate::Error> {
            self.one($crate::partition::executor::Op::Remove(key.into()))
                .map(|v| v.map($crate::Bytes::into_vec))
        }
    };
}

mod client;
mod load;
mod pipeline;
mod rebalance;
mod resident;
mod routes;
mod worker;

pub use client::Client;
pub use pipeline::Pipeline;
pub use rebalance::{RebalanceConfig, Rebalanced};
pub use resident::Resident;
pub use worker::{KeyValue, Local, Op, OpResult};

use crate::config::Config;
use crate::error::Error;
use crate::partition::PartitionedTree;
use crate::stats::Stats;
use crate::sync::seam::channel::{self, RecvTimeoutError, Sender};
use crate::sync::seam::thread::{self, JoinHandle};
use crate::sync::seam::{Mutex, MutexGuard};
use client::Hub;
use rebalance::Step;
use routes::{Published, Routes};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use worker::{Msg, WorkerCounters};

/// How an [`Executor`] is built.
#[derive(Clone, Debug)]
pub struct ExecutorConfig {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// The partition boundaries to start with (ascending, distinct): partition `i` goes to
    /// worker `i % workers`. Empty: one partition, on worker 0.
    pub boundaries: Vec<Vec<u8>>,
    /// The tree's configuration. The executor turns off what would reach the partitions
    /// from other threads: the space manager (use [`Executor::compact`]), the side
    /// structure, leaf combining and line mode (none of which an owner needs: nobody
    /// contends for its leaves).
    pub tree: Config,
    /// Repartitioning under skew by a rebalancer thread (default on, with
    /// [`RebalanceConfig::default`]); `None` keeps partitions and owners as they are
    /// unless the user changes them.
    pub rebalance: Option<RebalanceConfig>,
    /// How long a worker whose queue is empty, and a client waiting for an answer, poll
    /// their channel (yielding the CPU between polls) before they park on it (default
    /// 50 µs; zero parks at once). A parked thread is woken through the scheduler, which
    /// costs tens of microseconds where the other cores idle (a virtual machine's halted
    /// vCPUs): on 2 cores polling doubled the rate of single requests and took YCSB-A
    /// batches of 64 from 0.38-0.49x to 0.59-0.82x the shared tree's rate
    /// (`bench/results/tpc-executor.txt`). The cost is CPU burnt while a
    /// thread waits, at most `poll` per wait; the yields give the core to any other thread
    /// that wants it.
    pub poll: std::time::Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            boundaries: Vec::new(),
            tree: Config::default(),
            rebalance: Some(RebalanceConfig::default()),
            poll: std::time::Duration::from_micros(50),
        }
    }
}

/// What an [`Executor`] did: the tree's [`Stats`] and the workers' counters.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ExecutorStats {
    /// The tree's statistics.
    pub tree: Stats,
    /// Requests (operations, actions and range pieces) each worker received, moved ones
    /// included.
    pub requests: Vec<u64>,
    /// Messages each worker received (a batch is one).
    pub messages: Vec<u64>,
    /// Times each worker found its queue empty for a whole poll
    /// ([`ExecutorConfig::poll`]) and parked.
    pub parks: Vec<u64>,
    /// Requests each worker sent back because it did not own their keys (stale routes).
    pub moved: Vec<u64>,
    /// Partitions moved between workers (by the user or the rebalancer).
    pub moves: u64,
    /// Partitions sliced (by the user or the rebalancer).
    pub slices: u64,
    /// Pairs of partitions melded (by the user or the rebalancer).
    pub melds: u64,
    /// Rounds of rebalancing run.
    pub rebalance_rounds: u64,
    /// The worker of each partition, in key order.
    pub owners: Vec<usize>,
}

/// A thread-per-core front of a [`PartitionedTree`]: each worker thread owns some
/// partitions and carries out the requests for their keys without latches; clients send
/// requests, batches, range scans and closures ("actions") through [`Client`]s; a
/// rebalancer thread evens out the workers' loads (see [`RebalanceConfig`]). See the module
/// documentation (`partition::executor` in the source) for why it is correct.
///
/// ```
/// use contree::{Executor, ExecutorConfig, Op};
/// let exec = Executor::with_config(ExecutorConfig {
///     workers: 2,
///     boundaries: vec![500u32.to_be_bytes().to_vec()],
///     rebalance: None,
///     ..Default::default()
/// })
/// .unwrap();
/// let mut client = exec.client();
/// let batch = (0u32..1000)
///     .map(|i| Op::Insert(i.to_be_bytes().into(), b"v".into()))
///     .collect();
/// assert!(client.execute(batch).iter().all(|r| r == &Ok(None)));
/// assert_eq!(client.get(&7u32.to_be_bytes()).unwrap(), Some(b"v".to_vec()));
/// exec.move_partition(1, 0).unwrap();
/// assert_eq!(exec.len(), 1000);
/// let tree = exec.shutdown();
/// tree.check_invariants().unwrap();
/// ```
pub struct Executor {
    control: Arc<Control>,
    handles: Vec<JoinHandle<()>>,
    /// The rebalancer thread and the sender whose drop stops it.
    rebalancer: Option<(Sender<()>, JoinHandle<()>)>,
    rebalance: RebalanceConfig,
}

/// What the executor's control side shares with the rebalancer thread.
struct Control {
    tree: Arc<PartitionedTree>,
    hub: Arc<Hub>,
    counters: Arc<[WorkerCounters]>,
    /// Serialises the changes of routes and ownership.
    lock: Mutex<()>,
    moves: AtomicU64,
    slices: AtomicU64,
    melds: AtomicU64,
    rounds: AtomicU64,
    /// Partitions at which a slice found the table page full (no slice is planned beyond).
    table_full: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("workers", &self.handles.len())
            .field("partitions", &self.control.hub.routes.get().owners.len())
            .field("rebalancing", &self.rebalancer.is_some())
            .finish_non_exhaustive()
    }
}

impl Executor {
    /// An executor of `workers` threads over an empty tree of one partition (on worker 0;
    /// the rebalancer, or [`slice`](Self::slice) and
    /// [`move_partition`](Self::move_partition), spread it).
    pub fn new(workers: usize) -> Result<Executor, Error> {
        Self::with_config(ExecutorConfig {
            workers,
            ..ExecutorConfig::default()
        })
    }

    /// An executor built as `config` says; [`Error::InvalidConfig`] for no workers, bad
    /// boundaries, a bad rebalancing policy or a bad tree configuration.
    pub fn with_config(config: ExecutorConfig) -> Result<Executor, Error> {
        if config.workers == 0 {
            return Err(Error::InvalidConfig {
                field: "workers",
                reason: "an executor needs at least one worker".into(),
            });
        }
        if config.boundaries.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::InvalidConfig {
                field: "boundaries",
                reason: "the boundaries must ascend strictly".into(),
            });
        }
        if let Some(policy) = &config.rebalance {
            policy.validate()?;
        }
        let tree = PartitionedTree::with_config(Config {
            space_manager: false,
            side_structure: crate::config::SideStructure::Off,
            combining: false,
            line_mode: crate::config::LineMode::Off,
            ..config.tree
        })?;
        for b in &config.boundaries {
            tree.slice(b)?;
        }
        let partitions = config.boundaries.len() + 1;
        let routes = Routes {
            epoch: 0,
            boundaries: config.boundaries.clone(),
            owners: (0..partitions).map(|p| p % config.workers).collect(),
        };
        let tree = Arc::new(tree);
        let counters: Arc<[WorkerCounters]> = (0..config.workers)
            .map(|_| WorkerCounters::default())
            .collect();
        let mut queues = Vec::with_capacity(config.workers);
        let mut handles = Vec::with_capacity(config.workers);
        for id in 0..config.workers {
            let (tx, rx) = channel::unbounded();
            queues.push(tx);
            let (tree, counters, spans) = (
                Arc::clone(&tree),
                Arc::clone(&counters),
                (routes.spans_of(id), routes.epoch),
            );
            let handle = thread::Builder::new()
                .name(format!("contree-worker-{id}"))
                .spawn(move || worker::run(tree, id, (rx, config.poll), spans, counters))
                .expect("spawn an executor worker");
            handles.push(handle);
        }
        let control = Arc::new(Control {
            tree,
            hub: Arc::new(Hub {
                queues,
                poll: config.poll,
                routes: Published::new(routes),
            }),
            counters,
            lock: Mutex::new(()),
            moves: AtomicU64::new(0),
            slices: AtomicU64::new(0),
            melds: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            table_full: std::sync::atomic::AtomicUsize::new(usize::MAX),
        });
        let rebalancer = config.rebalance.clone().map(|policy| {
            let (stop, stopped) = channel::bounded::<()>(0);
            let control = Arc::clone(&control);
            let handle = thread::Builder::new()
                .name("contree-rebalancer".into())
                .spawn(move || {
                    // Dropping `stop` ends the wait at once.
                    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(policy.interval)
                    {
                        control.rebalance(&policy);
                    }
                })
                .expect("spawn the executor's rebalancer");
            (stop, handle)
        });
        Ok(Executor {
            control,
            handles,
            rebalancer,
            rebalance: config.rebalance.unwrap_or_default(),
        })
    }

    /// A new client (one per client thread).
    pub fn client(&self) -> Client {
        Client::new(Arc::clone(&self.control.hub))
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.handles.len()
    }

    /// The partition boundaries, ascending (see [`PartitionedTree::boundaries`]).
    pub fn boundaries(&self) -> Vec<Vec<u8>> {
        self.control.hub.routes.get().boundaries.clone()
    }

    /// The worker of each partition, in key order.
    pub fn owners(&self) -> Vec<usize> {
        self.control.hub.routes.get().owners.clone()
    }

    /// The number of entries (from the tree's counters; no worker is asked).
    pub fn len(&self) -> usize {
        self.control.tree.len()
    }

    /// Whether the tree holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives partition `partition` (an index into the partitions in key order) to worker
    /// `to`: the old owner finishes every request queued for it first, and requests that
    /// reach it later go to the new owner. Ownership only: no page is touched.
    /// [`Error::InvalidConfig`] for a partition or worker that does not exist.
    pub fn move_partition(&self, partition: usize, to: usize) -> Result<(), Error> {
        self.control.move_partition(partition, to).map(|_| ())
    }

    /// Slices the partition holding `at` in two at `at` ([`PartitionedTree::slice`]) while
    /// the workers pause; both halves stay with the partition's worker.
    pub fn slice(&self, at: &[u8]) -> Result<(), Error> {
        self.control.slice(at)
    }

    /// Melds the two partitions that meet at boundary `at` ([`PartitionedTree::meld`])
    /// while the workers pause; the joined partition goes to the left one's worker.
    pub fn meld(&self, at: &[u8]) -> Result<(), Error> {
        self.control.meld(at)
    }

    /// Runs one round of rebalancing now, by the configured policy (or
    /// [`RebalanceConfig::default`] if the executor has none): reads each worker's load per
    /// partition since the last round and moves, slices and melds partitions where the
    /// loads are uneven. Returns what it did.
    pub fn rebalance(&self) -> Rebalanced {
        self.control.rebalance(&self.rebalance)
    }

    /// Runs XMerge over the whole tree while the workers pause (see [`Tree::compact`]):
    /// the executor's tree has no space manager thread, so this is how its pages are
    /// packed after many removals. Returns the pages freed.
    ///
    /// [`Tree::compact`]: crate::Tree::compact
    pub fn compact(&self) -> usize {
        self.control.paused(|tree, _| (tree.compact(), None))
    }

    /// The tree's statistics and the workers' counters; the tree's part is read while the
    /// workers pause.
    pub fn stats(&self) -> ExecutorStats {
        let c = &self.control;
        let tree = c.paused(|tree, _| (tree.stats(), None));
        let read = |f: fn(&WorkerCounters) -> &AtomicU64| {
            c.counters
                .iter()
                .map(|w| f(w).load(Ordering::Relaxed))
                .collect()
        };
        ExecutorStats {
            tree,
            requests: self.requests(),
            messages: read(|w| &w.messages),
            parks: read(|w| &w.parks),
            moved: read(|w| &w.moved),
            moves: c.moves.load(Ordering::Relaxed),
            slices: c.slices.load(Ordering::Relaxed),
            melds: c.melds.load(Ordering::Relaxed),
            rebalance_rounds: c.rounds.load(Ordering::Relaxed),
            owners: self.owners(),
        }
    }

    /// Requests each worker received so far (as [`ExecutorStats::requests`]), read without
    /// pausing anyone: cheap enough to watch the load as it happens.
    pub fn requests(&self) -> Vec<u64> {
        self.control
            .counters
            .iter()
            .map(|w| w.requests.load(Ordering::Relaxed))
            .collect()
    }

    /// Checks the tree's invariants while the workers pause ([`Tree::check_invariants`]).
    ///
    /// [`Tree::check_invariants`]: crate::Tree::check_invariants
    pub fn check_invariants(&self) -> Result<(), String> {
        self.control
            .paused(|tree, _| (tree.check_invariants(), None))
    }

    /// Stops the workers once they have carried out the requests queued so far, and
    /// returns the tree. Requests sent later are refused with [`Error::ExecutorStopped`].
    pub fn shutdown(self) -> PartitionedTree {
        let tree = Arc::clone(&self.control.tree);
        // Stops and joins the rebalancer and the workers, which drop their handles of the
        // tree.
        drop(self);
        Arc::try_unwrap(tree)
            .unwrap_or_else(|_| unreachable!("the workers, which held the tree, have stopped"))
    }

    fn stop(&mut self) {
        // The rebalancer first: it sends to the workers.
        if let Some((stop, handle)) = self.rebalancer.take() {
            drop(stop);
            if let Err(panic) = handle.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(panic);
                }
            }
        }
        for queue in &self.control.hub.queues {
            let _ = queue.send(Msg::Stop);
        }
        for handle in self.handles.drain(..) {
            if let Err(panic) = handle.join() {
                // A worker panicked outside an action (a bug): say so.
                if !std::thread::panicking() {
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Control {
    fn workers(&self) -> usize {
        self.hub.queues.len()
    }

    /// The control lock; panics on a worker (inside an action), which would wait for
    /// itself.
    fn lock(&self) -> MutexGuard<'_, ()> {
        Self::not_on_a_worker();
        self.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn not_on_a_worker() {
        assert!(
            !crate::sync::owner::active(),
            "an Executor's partitions were changed, paused or rebalanced from one of its \
             workers (inside an action): the worker would wait for itself"
        );
    }

    /// [`Executor::move_partition`]; `Ok(false)` if `to` owned the partition already.
    fn move_partition(&self, partition: usize, to: usize) -> Result<bool, Error> {
        let _c = self.lock();
        let current = self.hub.routes.get();
        if partition >= current.owners.len() || to >= self.workers() {
            return Err(Error::InvalidConfig {
                field: "partition",
                reason: format!(
                    "no partition {partition} or worker {to} ({} partitions, {} workers)",
                    current.owners.len(),
                    self.workers()
                ),
            });
        }
        let from = current.owners[partition];
        if from == to {
            return Ok(false);
        }
        let mut next = current.next();
        next.owners[partition] = to;
        let (from_spans, to_spans, epoch) = (next.spans_of(from), next.spans_of(to), next.epoch);
        // The old owner lets go after what it has queued; only then the new one takes it,
        // and only then are the new routes published: a request routed by them reaches the
        // new owner after its `Own`, so the new owner never refuses a request for being
        // early (a pipelining client relies on that, see `routes::Owned`). Meanwhile
        // requests by the old routes reach the old owner, which answers "moved", and
        // their clients wait for the new routes.
        let (ack, acked) = channel::bounded(1);
        let released = self.hub.queues[from]
            .send(Msg::Own {
                spans: from_spans,
                epoch,
                ack: Some(ack),
            })
            .is_ok()
            && acked.recv().is_ok();
        if !released {
            // The old owner stopped: requests by the current routes reach its queue, whose
            // messages refuse themselves.
            return Err(Error::ExecutorStopped);
        }
        let taken = self.hub.queues[to]
            .send(Msg::Own {
                spans: to_spans,
                epoch,
                ack: None,
            })
            .is_ok();
        // Published even if the new owner stopped: requests then reach its queue and are
        // refused, rather than bounce off the old owner forever.
        self.hub.routes.set(next);
        if !taken {
            return Err(Error::ExecutorStopped);
        }
        self.moves.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Runs `f` on the caller's thread while every worker waits in its queue, then gives
    /// each worker the spans of `routes` (the routes `f` returns, if any; else the current
    /// ones).
    fn paused<R>(&self, f: impl FnOnce(&PartitionedTree, &Routes) -> (R, Option<Routes>)) -> R {
        let _c = self.lock();
        let mut resumes = Vec::with_capacity(self.workers());
        for queue in &self.hub.queues {
            let (ack, acked) = channel::bounded(1);
            let (resume, resumed) = channel::bounded(1);
            if queue
                .send(Msg::Pause {
                    ack,
                    resume: resumed,
                })
                .is_ok()
            {
                // A worker that stopped answers nothing, and touches nothing either.
                let _ = acked.recv();
            }
            resumes.push(resume);
        }
        let current = self.hub.routes.get();
        let (out, next) = f(&self.tree, &current);
        let routes = match next {
            Some(next) => {
                self.hub.routes.set(next.clone());
                next
            }
            None => (*current).clone(),
        };
        for (id, resume) in resumes.into_iter().enumerate() {
            let _ = resume.send((routes.spans_of(id), routes.epoch));
        }
        out
    }

    fn slice(&self, at: &[u8]) -> Result<(), Error> {
        self.paused(|tree, routes| match tree.slice(at) {
            Ok(()) => {
                let p = routes.partition_of(at);
                let mut next = routes.next();
                next.boundaries.insert(p, at.to_vec());
                next.owners.insert(p, routes.owners[p]);
                (Ok(()), Some(next))
            }
            Err(e) => (Err(e), None),
        })?;
        self.slices.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn meld(&self, at: &[u8]) -> Result<(), Error> {
        self.paused(|tree, routes| match tree.meld(at) {
            Ok(()) => {
                let p = routes.partition_of(at);
                let mut next = routes.next();
                next.boundaries.remove(p);
                next.owners.remove(p + 1);
                (Ok(()), Some(next))
            }
            Err(e) => (Err(e), None),
        })?;
        self.melds.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// One round of rebalancing by `policy`: the workers' load reports, the plan, and its
    /// steps, until one fails (the partitions changed meanwhile; the next round sees).
    fn rebalance(&self, policy: &RebalanceConfig) -> Rebalanced {
        Self::not_on_a_worker();
        self.rounds.fetch_add(1, Ordering::Relaxed);
        let mut reports = Vec::new();
        for queue in &self.hub.queues {
            let (reply, replied) = channel::bounded(1);
            if queue.send(Msg::Report(reply)).is_ok() {
                reports.extend(replied.recv().unwrap_or_default());
            }
        }
        let routes = self.hub.routes.get();
        let limits = rebalance::Limits {
            max_boundary: crate::node::inline_key_max(self.tree.as_tree().config().page_size),
            max_partitions: self.table_full.load(Ordering::Relaxed),
        };
        let mut done = Rebalanced::default();
        for step in rebalance::plan(&routes, reports, self.workers(), policy, limits) {
            let ok = match step {
                Step::Move { key, to } => {
                    let p = self.hub.routes.get().partition_of(&key);
                    self.move_partition(p, to)
                        .map(|moved| done.moves += usize::from(moved))
                        .map_err(|_| ())
                }
                Step::Slice { at } => match self.slice(&at) {
                    Err(Error::TooManyPartitions { partitions }) => {
                        self.table_full.store(partitions, Ordering::Relaxed);
                        Err(())
                    }
                    r => r.map(|()| done.slices += 1).map_err(|_| ()),
                },
                Step::Meld { at } => self.meld(&at).map(|()| done.melds += 1).map_err(|_| ()),
            };
            if ok.is_err() {
                break;
            }
        }
        done
    }
}
