//! Pipelined submission for a [`Client`]: several batches in flight at once, their answers
//! handed back in submission order.
//!
//! **Order.** One client's operations on one key take effect in the order they were
//! submitted, as with [`Client::execute`]. What keeps it with several batches in flight:
//! * every batch in flight was routed by the same routes (epoch): before a batch is sent by
//!   newer routes, every batch in flight is settled (answered, and its refused operations
//!   carried out);
//! * so the batches in flight that hold a key went to one worker, whose queue keeps their
//!   order, and that worker carries out an operation only if it has owned the key since
//!   that epoch (`routes::Owned`): once it refuses one ("moved"), it refuses every later
//!   one of those batches on that key, even if the key came back to it meanwhile;
//! * refused operations are sent again only when nothing else is in flight, in submission
//!   order, by the current routes (again until none is refused).
//!
//! The executor publishes new routes only after the new owner of a partition has its
//! `Own` message in its queue, so a request routed by the current routes is never refused
//! for reaching its owner early.

use super::client::Client;
use super::routes::Routes;
use super::worker::{Answer, Op, OpResult, Part};
use crate::sync::seam::recv_polling;
use std::collections::VecDeque;

/// Batches of one [`Client`] in flight at once: [`submit`](Self::submit) sends a batch
/// without waiting for it (once `depth` batches are in flight, it first waits for the
/// oldest and returns its answers), [`wait`](Self::wait) waits for the oldest. So the
/// client builds its next batch while the workers carry out the previous ones. Answers
/// come back in submission order, and one client's operations on one key take effect in
/// submission order, also while partitions move between workers.
///
/// Dropping a pipeline waits for the batches still in flight (their operations are
/// carried out; their answers are dropped).
///
/// ```
/// use contree::{Executor, Op};
/// let exec = Executor::new(2).unwrap();
/// let mut client = exec.client();
/// let mut pipeline = client.pipeline(4);
/// let mut answered = 0;
/// for round in 0u32..10 {
///     let batch = (0u32..64)
///         .map(|i| Op::Insert((round * 64 + i).to_be_bytes().into(), b"v".into()))
///         .collect();
///     // Once four batches are in flight, each submit hands back the oldest one's answers.
///     if let Some(answers) = pipeline.submit(batch) {
///         answered += answers.len();
///     }
/// }
/// while let Some(answers) = pipeline.wait() {
///     answered += answers.len();
/// }
/// assert_eq!(answered, 640);
/// drop(pipeline);
/// assert_eq!(exec.len(), 640);
/// ```
pub struct Pipeline<'c> {
    client: &'c mut Client,
    depth: usize,
    /// Batches whose answers were not handed back yet, oldest first.
    pending: VecDeque<Pending>,
}

impl std::fmt::Debug for Pipeline<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("depth", &self.depth)
            .field("in_flight", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// A submitted batch.
struct Pending {
    ticket: u64,
    /// The routes epoch its parts in flight were sent by.
    epoch: u64,
    answers: Vec<Option<OpResult>>,
    /// Parts sent to workers and not answered yet.
    parts: usize,
    /// Operations a worker refused ("moved"), with their positions, in batch order.
    moved: Vec<(usize, Op)>,
}

impl Pending {
    fn settled(&self) -> bool {
        self.parts == 0 && self.moved.is_empty()
    }
}

impl<'c> Pipeline<'c> {
    pub(super) fn new(client: &'c mut Client, depth: usize) -> Pipeline<'c> {
        Pipeline {
            client,
            depth: depth.max(1),
            pending: VecDeque::new(),
        }
    }

    /// Sends `ops` as one batch (grouped by the worker that owns their keys, one message
    /// per worker) without waiting for the answers. If `depth` batches are in flight
    /// already, first waits for the oldest and returns its answers.
    pub fn submit(&mut self, ops: Vec<Op>) -> Option<Vec<OpResult>> {
        let done = if self.pending.len() >= self.depth {
            self.wait()
        } else {
            None
        };
        let mut routes = self.client.current_routes();
        let epoch = routes.epoch;
        let unsettled = |p: &Pending| !p.moved.is_empty() || (p.parts > 0 && p.epoch != epoch);
        if self.pending.iter().any(unsettled) {
            // All batches in flight share one routing, and refused operations go again
            // before anything newer (see the module doc).
            self.settle_all();
            routes = self.client.current_routes();
        }
        let ticket = self.client.next_ticket();
        let mut pending = Pending {
            ticket,
            epoch: routes.epoch,
            answers: (0..ops.len()).map(|_| None).collect(),
            parts: 0,
            moved: Vec::new(),
        };
        pending.parts = self.send(&routes, ticket, ops.into_iter().enumerate());
        self.pending.push_back(pending);
        done
    }

    /// Waits for the oldest batch in flight and returns its answers, in batch order;
    /// `None` when no batch is in flight.
    pub fn wait(&mut self) -> Option<Vec<OpResult>> {
        while self.pending.front()?.parts > 0 {
            self.receive();
        }
        if !self.pending.front()?.moved.is_empty() {
            self.settle_all();
        }
        let oldest = self.pending.pop_front()?;
        Some(
            oldest
                .answers
                .into_iter()
                .map(|a| a.expect("every operation is answered"))
                .collect(),
        )
    }

    /// Batches submitted whose answers were not handed back yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Sends `ops` (with their positions in batch `ticket`) by `routes`, one message per
    /// worker; returns the number of messages.
    fn send(&self, routes: &Routes, ticket: u64, ops: impl Iterator<Item = (usize, Op)>) -> usize {
        let client = &*self.client;
        let epoch = routes.epoch;
        let workers = client.hub.queues.len();
        let mut groups: Vec<Vec<(usize, Op)>> = (0..workers).map(|_| Vec::new()).collect();
        for (i, op) in ops {
            groups[routes.worker_of(op.key())].push((i, op));
        }
        client.hub.send_parts(groups, ticket, epoch, &client.tx)
    }

    /// Receives one part and files its answers under its batch.
    fn receive(&mut self) {
        let part: Part = recv_polling(&self.client.rx, self.client.hub.poll)
            .0
            .expect("the client holds a sender");
        let pending = self
            .pending
            .iter_mut()
            .find(|p| p.ticket == part.ticket)
            .expect("a part answers a batch in flight");
        pending.parts -= 1;
        for (i, answer) in part.answers {
            match answer {
                Answer::Done(r) => pending.answers[i] = Some(r),
                Answer::Moved(op) => pending.moved.push((i, op)),
            }
        }
    }

    /// Waits for every part in flight, then sends the refused operations again, oldest
    /// batch first, by the current routes, until none is refused.
    fn settle_all(&mut self) {
        loop {
            while self.pending.iter().any(|p| p.parts > 0) {
                self.receive();
            }
            if self.pending.iter().all(Pending::settled) {
                return;
            }
            // Refused: the routes changed (or are about to be published); send again once
            // they show the new owner, in submission order.
            crate::sync::seam::yield_now();
            // One routing for all of them.
            let routes = self.client.current_routes();
            for k in 0..self.pending.len() {
                let mut moved = std::mem::take(&mut self.pending[k].moved);
                if moved.is_empty() {
                    continue;
                }
                moved.sort_unstable_by_key(|(i, _)| *i);
                let ticket = self.pending[k].ticket;
                self.pending[k].parts = self.send(&routes, ticket, moved.into_iter());
                self.pending[k].epoch = routes.epoch;
            }
        }
    }
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        // Carry out what was submitted, and leave no answer behind in the client's queue.
        self.settle_all();
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::super::worker::{Batch, Msg};
    use super::*;
    use crate::{Executor, ExecutorConfig};

    /// A batch sent by routes older than its worker's ownership of the key is refused,
    /// even though the worker owns the key now: the partition went to another worker and
    /// came back after the batch was routed, and an earlier batch of the same client
    /// may have been refused in between (see the module doc).
    #[test]
    fn a_batch_routed_before_its_worker_took_the_key_back_is_refused() {
        let exec = Executor::with_config(ExecutorConfig {
            workers: 2,
            boundaries: vec![b"m".to_vec()],
            rebalance: None,
            ..Default::default()
        })
        .unwrap();
        let mut client = exec.client();
        let stale = client.current_routes();
        assert_eq!(stale.worker_of(b"a"), 0);
        exec.move_partition(0, 1).unwrap();
        exec.move_partition(0, 0).unwrap();
        let current = client.current_routes();
        assert_eq!(current.worker_of(b"a"), 0);
        let ask = |client: &mut Client, epoch: u64| {
            let batch = Batch {
                ticket: 7,
                epoch,
                ops: vec![(0, Op::Insert(b"a".into(), b"v".into()))],
                reply: client.tx.clone(),
            };
            exec.control.hub.queues[0].send(Msg::Batch(batch)).unwrap();
            let part = client.rx.recv().unwrap();
            assert_eq!(part.ticket, 7);
            matches!(part.answers[0].1, Answer::Moved(_))
        };
        assert!(
            ask(&mut client, stale.epoch),
            "routed before the partition came back"
        );
        assert!(
            !ask(&mut client, current.epoch),
            "routed by the current routes"
        );
        assert_eq!(client.get(b"a").unwrap(), Some(b"v".to_vec()));
    }
}
