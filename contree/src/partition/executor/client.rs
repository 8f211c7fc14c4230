//! The client side of the thread-per-core executor: routes requests to the workers that
//! own their keys, batches them per worker, and waits for the answers.

use super::pipeline::Pipeline;
use super::routes::{Published, Routes};
use super::worker::{
    clip, empty, Action, ActionAnswer, ActionFn, Batch, KeyValue, Local, Msg, Op, OpResult, Part,
    RangeAnswer, RangeScan,
};
use crate::error::Error;
use crate::sync::seam::channel::{self, Receiver, Sender};
use crate::sync::seam::recv_polling;
use std::any::Any;
use std::ops::Bound;
use std::sync::Arc;

/// What the executor shares with its clients: the workers' queues and the routes.
pub(super) struct Hub {
    pub queues: Vec<Sender<Msg>>,
    pub routes: Published,
    /// How long a client polls for an answer before it parks (`ExecutorConfig::poll`).
    pub poll: std::time::Duration,
}

impl Hub {
    /// Sends each non-empty group of `groups` (operations with their positions in batch
    /// `ticket`, routed by routes epoch `epoch`) to its worker as one message, answered to
    /// `reply`; returns the number of messages.
    pub(super) fn send_parts(
        &self,
        groups: Vec<Vec<(usize, Op)>>,
        ticket: u64,
        epoch: u64,
        reply: &Sender<Part>,
    ) -> usize {
        let mut parts = 0;
        for (w, ops) in groups.into_iter().enumerate() {
            if ops.is_empty() {
                continue;
            }
            parts += 1;
            let batch = Batch {
                ticket,
                epoch,
                ops,
                reply: reply.clone(),
            };
            // A stopped worker: the message comes back and its `Drop` refuses it.
            let _ = self.queues[w].send(Msg::Batch(batch));
        }
        parts
    }
}

/// A handle that sends requests to an [`Executor`](crate::Executor)'s workers and waits
/// for their answers. Make one per client thread with
/// [`Executor::client`](crate::Executor::client); it is `Send`, and outlives the executor
/// safely: requests to a stopped executor fail with [`Error::ExecutorStopped`].
///
/// Requests of one client are carried out in the order they are made, and the operations
/// of one batch in batch order for each key, also while partitions move between workers.
///
/// Calling a client from inside an action (a closure run on a worker) is a programming
/// error and panics: the worker would wait for itself. An action uses its
/// [`Local`] view instead.
pub struct Client {
    pub(super) hub: Arc<Hub>,
    routes: Arc<Routes>,
    /// Where the workers answer this client's batches.
    pub(super) tx: Sender<Part>,
    pub(super) rx: Receiver<Part>,
    /// The number of the next batch.
    ticket: u64,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("workers", &self.hub.queues.len())
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(super) fn new(hub: Arc<Hub>) -> Client {
        let routes = hub.routes.get();
        let (tx, rx) = channel::unbounded();
        Client {
            hub,
            routes,
            tx,
            rx,
            ticket: 0,
        }
    }

    /// The routes, refreshed if they changed (one load when they did not).
    #[inline]
    fn routes(&mut self) -> &Routes {
        if !self.routes_current() {
            self.routes = self.hub.routes.get();
        }
        &self.routes
    }

    /// [`routes`](Self::routes), shared.
    pub(super) fn current_routes(&mut self) -> Arc<Routes> {
        self.routes();
        Arc::clone(&self.routes)
    }

    /// Whether the client's copy of the routes is the published one.
    #[inline]
    fn routes_current(&self) -> bool {
        self.hub.routes.is_current(&self.routes)
    }

    /// The number of a new batch.
    pub(super) fn next_ticket(&mut self) -> u64 {
        self.ticket += 1;
        self.ticket
    }

    fn not_on_a_worker(what: &str) {
        assert!(
            !crate::sync::owner::active(),
            "Client::{what} called from an executor worker (inside an action): the worker would \
             wait for itself; use the action's Local view"
        );
    }

    /// Carries out `ops` and returns the answer of each, in order: the operations are
    /// grouped by the worker that owns their keys, one message per worker, and the workers
    /// run in parallel. Operations on the same key take effect in batch order.
    ///
    /// ```
    /// use contree::{Executor, Op};
    /// let exec = Executor::new(2).unwrap();
    /// let mut client = exec.client();
    /// let answers = client.execute(vec![
    ///     Op::Insert(b"k".into(), b"v".into()),
    ///     Op::Get(b"k".into()),
    ///     Op::Remove(b"k".into()),
    /// ]);
    /// assert_eq!(answers, vec![Ok(None), Ok(Some(b"v".into())), Ok(Some(b"v".into()))]);
    /// ```
    pub fn execute(&mut self, ops: Vec<Op>) -> Vec<OpResult> {
        Self::not_on_a_worker("execute");
        let mut pipeline = Pipeline::new(self, 1);
        pipeline.submit(ops);
        pipeline.wait().expect("the batch just submitted")
    }

    /// A [`Pipeline`] of up to `depth` batches in flight at once (at least 1): the client
    /// builds its next batch while the workers carry out the previous ones. Answers come
    /// back in submission order, and operations on one key take effect in submission
    /// order, as with [`execute`](Self::execute).
    pub fn pipeline(&mut self, depth: usize) -> Pipeline<'_> {
        Self::not_on_a_worker("pipeline");
        Pipeline::new(self, depth)
    }

    single_key_ops!();

    /// Runs `f` on the worker that owns `key`, with a [`Local`] view of the partition that
    /// holds it (the PLP "action": several operations on one partition in one message,
    /// atomic with respect to every other request, since the worker runs one message at a
    /// time). A panic in `f` is resumed in the caller.
    ///
    /// ```
    /// let exec = contree::Executor::new(2).unwrap();
    /// let mut client = exec.client();
    /// client.insert(b"counter", &1u64.to_be_bytes()).unwrap();
    /// // A read-modify-write on the owning worker.
    /// let next = client
    ///     .run(b"counter", |local| {
    ///         let old = local.get(b"counter")?.unwrap();
    ///         let next = u64::from_be_bytes(old.try_into().unwrap()) + 1;
    ///         local.insert(b"counter", &next.to_be_bytes())?;
    ///         Ok::<u64, contree::Error>(next)
    ///     })
    ///     .unwrap();
    /// assert_eq!(next.unwrap(), 2);
    /// ```
    pub fn run<R: Send + 'static>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(&Local<'_>) -> R + Send + 'static,
    ) -> Result<R, Error> {
        Self::not_on_a_worker("run");
        let mut f: ActionFn =
            Box::new(move |local: &Local<'_>| Box::new(f(local)) as Box<dyn Any + Send>);
        loop {
            let worker = self.routes().worker_of(key);
            let (reply, answer) = channel::bounded(1);
            let action = Action {
                key: key.to_vec(),
                f: Some(f),
                reply,
            };
            let _ = self.hub.queues[worker].send(Msg::Action(action));
            match recv_polling(&answer, self.hub.poll).0 {
                Some(ActionAnswer::Done(Ok(out))) => {
                    return Ok(*out.downcast::<R>().expect("the action's own type"))
                }
                Some(ActionAnswer::Done(Err(panic))) => std::panic::resume_unwind(panic),
                Some(ActionAnswer::Moved(back)) => {
                    f = back;
                    crate::sync::seam::yield_now();
                }
                Some(ActionAnswer::Stopped) | None => return Err(Error::ExecutorStopped),
            }
        }
    }

    /// Up to `limit` entries in `(start, end)`, in key order: the range is cut by partition,
    /// each piece scanned by its owner, and the pieces joined in order (each piece is
    /// consistent on its own, as a range of a [`Tree`](crate::Tree) is).
    ///
    /// ```
    /// use std::ops::Bound;
    /// let exec = contree::Executor::with_config(contree::ExecutorConfig {
    ///     workers: 2,
    ///     boundaries: vec![b"m".to_vec()],
    ///     ..Default::default()
    /// })
    /// .unwrap();
    /// let mut client = exec.client();
    /// for k in [b"a", b"m", b"n", b"z"] {
    ///     client.insert(k, b"v").unwrap();
    /// }
    /// let keys: Vec<Vec<u8>> = client
    ///     .range(Bound::Included(&b"b"[..]), Bound::Unbounded, 10)
    ///     .unwrap()
    ///     .into_iter()
    ///     .map(|(k, _)| k)
    ///     .collect();
    /// assert_eq!(keys, vec![b"m".to_vec(), b"n".to_vec(), b"z".to_vec()]);
    /// ```
    pub fn range(
        &mut self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KeyValue>, Error> {
        Self::not_on_a_worker("range");
        let mut out: Vec<KeyValue> = Vec::new();
        let mut from: Bound<Vec<u8>> = start.map(<[u8]>::to_vec);
        let end_owned: Bound<Vec<u8>> = end.map(<[u8]>::to_vec);
        while out.len() < limit {
            let routes = self.routes();
            // The partition holding the first key of what is left.
            let p = match &from {
                Bound::Unbounded => 0,
                Bound::Included(k) => routes.partition_of(k),
                Bound::Excluded(k) => {
                    let mut next = k.clone();
                    next.push(0);
                    routes.partition_of(&next)
                }
            };
            let span = routes.span(p);
            let worker = routes.owners[p];
            let (s, e) = clip(&span, from.as_ref().map(Vec::as_slice), end);
            if !empty(&s, &e) {
                let (reply, answer) = channel::bounded(1);
                let scan = RangeScan {
                    span: span.clone(),
                    start: s,
                    end: e,
                    limit: limit - out.len(),
                    reply: Some(reply),
                };
                let _ = self.hub.queues[worker].send(Msg::Range(scan));
                match recv_polling(&answer, self.hub.poll).0 {
                    Some(RangeAnswer::Done(entries)) => out.extend(entries),
                    Some(RangeAnswer::Moved) => {
                        crate::sync::seam::yield_now();
                        continue;
                    }
                    Some(RangeAnswer::Stopped) | None => return Err(Error::ExecutorStopped),
                }
            }
            // On to the next partition, if the range goes on past this one.
            match span.upper {
                Some(u) if !past(&end_owned, &u) => from = Bound::Excluded(u),
                _ => break,
            }
        }
        out.truncate(limit);
        Ok(out)
    }
}

/// Whether the range end `end` lies at or before `key`.
fn past(end: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match end {
        Bound::Unbounded => false,
        Bound::Included(e) => e.as_slice() <= key,
        Bound::Excluded(e) => e.as_slice() <= key,
    }
}
