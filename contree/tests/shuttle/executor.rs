//! The thread-per-core executor (`src/partition/executor/`) under Shuttle: its workers,
//! clients and ownership changes run on the seam's channels, threads and mutexes, so each
//! message sent and received is a point where Shuttle picks the next thread.
//!
//! Two pipelining clients (two batches in flight each) write and read their own keys, one
//! in each of two partitions, while a control thread moves a partition to the other worker
//! and back, slices it and melds it again. Every answer must be what the client's own
//! operations, in submission order, make it: a refused operation sent again after a later
//! one of the same client on the same key was carried out shows as a stale or too new
//! value. Publishing new routes before the new owner has its partition, or a worker that
//! carries out a batch routed before it took a key back, fails this model.

use contree::{Executor, ExecutorConfig, Op, OpResult};
use shuttle::rand::{thread_rng, Rng};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

#[path = "../support/ops_oracle.rs"]
mod ops_oracle;
use ops_oracle::expect;

/// Two workers, the boundary `m` between their partitions, no rebalancer.
fn model_executor() -> Arc<Executor> {
    Arc::new(
        Executor::with_config(ExecutorConfig {
            workers: 2,
            boundaries: vec![b"m".to_vec()],
            tree: super::small_config(),
            rebalance: None,
            // Under Shuttle a wait parks at once whatever this says.
            poll: std::time::Duration::ZERO,
        })
        .unwrap(),
    )
}

/// Three random operations on `keys` (a value names `source`, `round` and the position),
/// and the answers they must get from `oracle`, which they change.
fn random_batch(
    keys: &[Vec<u8>; 2],
    source: u8,
    round: u8,
    oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>,
) -> (Vec<Op>, Vec<OpResult>) {
    let mut rng = thread_rng();
    let ops: Vec<Op> = (0..3u8)
        .map(|j| {
            let k = keys[rng.gen_range(0..2)].clone();
            match rng.gen_range(0..3) {
                0 => Op::Get(k.into()),
                1 => Op::Remove(k.into()),
                _ => Op::Insert(k.into(), [source, round, j].into()),
            }
        })
        .collect();
    let want = ops.iter().map(|op| expect(oracle, op)).collect();
    (ops, want)
}

/// One client's run: three batches of three operations on its keys `a{c}` (left of the
/// boundary `m`) and `z{c}` (right of it), two in flight at once; checks every answer.
fn client_run(exec: &Executor, c: usize) {
    let keys = [format!("a{c}").into_bytes(), format!("z{c}").into_bytes()];
    let mut client = exec.client();
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut wants: VecDeque<Vec<OpResult>> = VecDeque::new();
    let mut pipeline = client.pipeline(2);
    let check = |got: Vec<OpResult>, wants: &mut VecDeque<Vec<OpResult>>| {
        let want = wants.pop_front().expect("a batch in flight");
        assert_eq!(got, want, "client {c}");
    };
    for round in 0..3u8 {
        let (ops, want) = random_batch(&keys, c as u8, round, &mut oracle);
        wants.push_back(want);
        if let Some(got) = pipeline.submit(ops) {
            check(got, &mut wants);
        }
    }
    while let Some(got) = pipeline.wait() {
        check(got, &mut wants);
    }
    assert!(wants.is_empty());
}

static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Executions are short (a few hundred scheduling points), and the interleavings that
/// matter are rare (a client descheduled between reading the routes and sending its
/// batch while a partition moves away and back): twenty times the models' schedules.
#[test]
fn executor_pipelines_keep_each_clients_order_through_moves() {
    super::run_schedules_n(20 * super::iterations(), || {
        let exec = model_executor();
        let mut threads: Vec<_> = (0..2)
            .map(|c| {
                let exec = Arc::clone(&exec);
                shuttle::thread::spawn(move || client_run(&exec, c))
            })
            .collect();
        let control = Arc::clone(&exec);
        threads.push(shuttle::thread::spawn(move || {
            // There and back, twice, then a slice and a meld (every worker paused meanwhile).
            for _ in 0..2 {
                control.move_partition(0, 1).unwrap();
                control.move_partition(0, 0).unwrap();
            }
            control.slice(b"f").unwrap();
            control.meld(b"f").unwrap();
        }));
        for t in threads {
            t.join().unwrap();
        }
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let exec = Arc::try_unwrap(exec).expect("every thread is done");
        assert_eq!(exec.boundaries(), vec![b"m".to_vec()]);
        exec.shutdown().check_invariants().unwrap();
    });
    eprintln!(
        "{} executions",
        RUNS.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// Resident tasks (`Executor::on_workers`) under Shuttle: each of the two workers runs
/// three batches of three operations on its keys `a{w}` (left of the boundary `m`) and
/// `z{w}` (right of it), carrying out those of its own partition itself and sending the
/// others, and serving its queue while it waits; meanwhile a control thread moves a
/// partition to the other worker and back, slices it and melds it again. Every answer must
/// be what the worker's own operations, in batch order, make it: a refused operation
/// carried out after a later one on the same key, or a worker that stops serving its queue
/// while it waits (a deadlock, which Shuttle reports), fails this model.
#[test]
fn resident_tasks_keep_each_workers_order_through_moves() {
    super::run_schedules_n(5 * super::iterations(), || {
        let exec = model_executor();
        let control = Arc::clone(&exec);
        let changes = shuttle::thread::spawn(move || {
            control.move_partition(0, 1).unwrap();
            control.move_partition(0, 0).unwrap();
            control.slice(b"f").unwrap();
            control.meld(b"f").unwrap();
        });
        exec.on_workers(|resident| {
            let w = resident.worker();
            let keys = [format!("a{w}").into_bytes(), format!("z{w}").into_bytes()];
            let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for round in 0..3u8 {
                let (ops, want) = random_batch(&keys, w as u8, round, &mut oracle);
                assert_eq!(resident.execute(ops), want, "worker {w}, round {round}");
            }
        })
        .unwrap();
        changes.join().unwrap();
        let exec = Arc::try_unwrap(exec).expect("every thread is done");
        assert_eq!(exec.boundaries(), vec![b"m".to_vec()]);
        exec.shutdown().check_invariants().unwrap();
    });
}
