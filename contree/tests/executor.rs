//! The thread-per-core `Executor`: client threads against per-client `BTreeMap` oracles
//! while partitions move, slice and meld (per-key order kept), range scans across
//! partitions, actions, shutdown with requests in flight (every request answered or
//! refused, none lost), bad input, and the rebalancer: slicing and spreading a hot range,
//! and clients against their oracles while it repartitions under a moving hotspot.
//!
//! Run: `cargo test -p contree --test executor`.

use contree::{
    Client, Config, Error, Executor, ExecutorConfig, Op, OpResult, RebalanceConfig, Rebalanced,
};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn key(i: u64) -> Vec<u8> {
    i.to_be_bytes().to_vec()
}

fn executor(workers: usize, boundaries: &[u64], page_size: usize) -> Executor {
    Executor::with_config(ExecutorConfig {
        workers,
        boundaries: boundaries.iter().map(|&b| key(b)).collect(),
        tree: Config {
            page_size,
            ..Config::default()
        },
        rebalance: None,
        ..ExecutorConfig::default()
    })
    .unwrap()
}

#[path = "support/ops_oracle.rs"]
mod ops_oracle;
use ops_oracle::expect;

/// A random batch over the keys `c + n * clients` of client `c`, with repeated keys so that
/// order within a batch matters.
fn batch(rng: &mut StdRng, c: u64, clients: u64, keys: u64, len: usize, round: u64) -> Vec<Op> {
    (0..len)
        .map(|j| {
            let k = key(c + clients * rng.gen_range(0..keys));
            match rng.gen_range(0..10) {
                0..=4 => Op::Insert(k.into(), format!("{round}/{j}").into_bytes().into()),
                5..=6 => Op::Remove(k.into()),
                _ => Op::Get(k.into()),
            }
        })
        .collect()
}

/// The tree holds exactly the union of the clients' oracles (their keys are disjoint).
fn same_as_oracles(
    tree: &contree::PartitionedTree,
    oracles: Vec<BTreeMap<Vec<u8>, Vec<u8>>>,
    when: &str,
) {
    let mut all = BTreeMap::new();
    for o in oracles {
        all.extend(o);
    }
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree
        .range(..)
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    assert!(
        got.into_iter().eq(all),
        "{when}: the tree differs from the oracles"
    );
    tree.check_invariants().unwrap();
}

#[test]
fn clients_match_their_oracles_while_partitions_move_slice_and_meld() {
    const CLIENTS: u64 = 3;
    const KEYS: u64 = 3000;
    let exec = executor(3, &[2000, 5000], 512);
    let oracles = clients_while_changing(&exec, CLIENTS, KEYS, 0, |c, client, rng, oracle| {
        for round in 0..1500 {
            let len = if round % 3 == 0 { 1 } else { 64 };
            let ops = batch(rng, c, CLIENTS, KEYS, len, round);
            let want: Vec<OpResult> = ops.iter().map(|op| expect(oracle, op)).collect();
            let got = client.execute(ops);
            assert_eq!(got, want, "client {c}, round {round}");
            if round % 50 == 0 {
                range_matches(client, (c, CLIENTS), oracle, round);
            }
        }
    });
    exec.check_invariants().unwrap();
    let stats = exec.stats();
    assert!(stats.moves > 0);
    assert_eq!(stats.owners.len(), exec.boundaries().len() + 1);
    let total: usize = oracles.iter().map(BTreeMap::len).sum();
    assert_eq!(exec.len(), total);
    let tree = exec.shutdown();
    same_as_oracles(&tree, oracles, "after the run");
}

/// A range over the keys of client `c` of `clients` (across the partitions) holds what its
/// oracle holds.
fn range_matches(
    client: &mut Client,
    (c, clients): (u64, u64),
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
    round: u64,
) {
    let all = client
        .range(Bound::Unbounded, Bound::Unbounded, usize::MAX)
        .unwrap();
    let mine: Vec<_> = all
        .into_iter()
        .filter(|(k, _)| u64::from_be_bytes(k[..8].try_into().unwrap()) % clients == c)
        .collect();
    let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(mine == want, "client {c}: range differs, round {round}");
}

/// What a client's oracle holds: the entries of its keys.
type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

/// Runs `clients` client threads of `exec` while the partitions change
/// (`change_partitions`, keys below `keys * clients`): client `c` runs `body(c, client, rng,
/// oracle)` with a generator seeded `seed + c` and an empty oracle, which it returns. The
/// partitions stop changing before the clients' results are unwrapped, so a client that
/// panics fails the test instead of leaving the control loop running.
fn clients_while_changing(
    exec: &Executor,
    clients: u64,
    keys: u64,
    seed: u64,
    body: impl Fn(u64, &mut Client, &mut StdRng, &mut Oracle) + Sync,
) -> Vec<Oracle> {
    let stop = AtomicBool::new(false);
    let (stop, body) = (&stop, &body);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let mut client = exec.client();
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed + c);
                    let mut oracle = BTreeMap::new();
                    body(c, &mut client, &mut rng, &mut oracle);
                    oracle
                })
            })
            .collect();
        let control = s.spawn(move || change_partitions(exec, stop, keys * clients));
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        stop.store(true, Ordering::Relaxed);
        let oracles = joined.into_iter().map(|r| r.unwrap()).collect();
        let changes = control.join().unwrap();
        assert!(changes > 10, "the partitions changed {changes} times only");
        oracles
    })
}

/// Until `stop`: moves partitions (also there and straight back), slices and melds them
/// at random keys below `keys`; returns how many changes it made.
fn change_partitions(exec: &Executor, stop: &AtomicBool, keys: u64) -> usize {
    let mut rng = StdRng::seed_from_u64(99);
    let workers = exec.workers();
    let mut changes = 0;
    while !stop.load(Ordering::Relaxed) {
        let parts = exec.owners().len();
        match rng.gen_range(0..5) {
            0 | 1 => exec
                .move_partition(rng.gen_range(0..parts), rng.gen_range(0..workers))
                .unwrap(),
            2 => {
                // There and back: the old owner gets the partition again at once.
                let p = rng.gen_range(0..parts);
                let from = exec.owners()[p];
                exec.move_partition(p, (from + 1) % workers).unwrap();
                exec.move_partition(p, from).unwrap();
            }
            3 => match exec.slice(&key(rng.gen_range(0..keys))) {
                Ok(())
                | Err(Error::BoundaryExists { .. })
                | Err(Error::TooManyPartitions { .. }) => {}
                Err(e) => panic!("slice: {e}"),
            },
            _ => {
                let bounds = exec.boundaries();
                if bounds.len() > 1 {
                    exec.meld(&bounds[rng.gen_range(0..bounds.len())]).unwrap();
                }
            }
        }
        changes += 1;
        std::thread::yield_now();
    }
    changes
}

#[test]
fn pipelined_clients_keep_per_key_order_while_partitions_move_there_and_back() {
    const CLIENTS: u64 = 3;
    const KEYS: u64 = 100;
    const DEPTH: usize = 4;
    let exec = executor(3, &[60, 180], 512);
    let oracles = clients_while_changing(&exec, CLIENTS, KEYS, 10, |c, client, rng, oracle| {
        let mut round = 0;
        for _ in 0..60 {
            // The oracle takes each batch in submission order; the answers must come back
            // in that order and match.
            let mut wants = std::collections::VecDeque::new();
            let mut pipeline = client.pipeline(DEPTH);
            let check = |got: Vec<OpResult>, wants: &mut std::collections::VecDeque<_>| {
                let (r, want): (u64, Vec<OpResult>) = wants.pop_front().expect("a batch in flight");
                assert_eq!(got, want, "client {c}, round {r}");
            };
            for _ in 0..50 {
                let len = if round % 5 == 0 { 1 } else { 32 };
                let ops = batch(rng, c, CLIENTS, KEYS, len, round);
                let want: Vec<OpResult> = ops.iter().map(|op| expect(oracle, op)).collect();
                wants.push_back((round, want));
                if let Some(got) = pipeline.submit(ops) {
                    check(got, &mut wants);
                }
                assert!(pipeline.in_flight() <= DEPTH);
                round += 1;
            }
            while let Some(got) = pipeline.wait() {
                check(got, &mut wants);
            }
            assert!(wants.is_empty());
            drop(pipeline);
            range_matches(client, (c, CLIENTS), oracle, round);
        }
    });
    let stats = exec.stats();
    assert!(stats.moves > 0);
    assert!(
        stats.moved.iter().sum::<u64>() > 0,
        "no request was refused: the moves did not meet the pipelines"
    );
    let tree = exec.shutdown();
    same_as_oracles(&tree, oracles, "after the pipelined run");
}

#[test]
fn a_dropped_pipeline_carries_out_what_was_submitted() {
    let exec = executor(2, &[50], 4096);
    let mut client = exec.client();
    {
        let mut pipeline = client.pipeline(3);
        for i in 0..10u64 {
            let ops = (0..10)
                .map(|j| Op::Insert(key(i * 10 + j).into(), b"v".into()))
                .collect();
            let answers = pipeline.submit(ops);
            // The first three go out at once; then each submit waits for the oldest.
            assert_eq!(
                answers.map(|a| a.len()),
                (i >= 3).then_some(10),
                "batch {i}"
            );
        }
        assert_eq!(pipeline.in_flight(), 3);
        // An empty batch is a batch, answered in its turn.
        assert_eq!(pipeline.submit(Vec::new()).map(|a| a.len()), Some(10));
        assert_eq!(pipeline.wait().map(|a| a.len()), Some(10));
        assert_eq!(pipeline.in_flight(), 2);
        // Dropped with two batches in flight.
    }
    // The answers of the dropped pipeline are gone: the client's next request gets its own.
    assert_eq!(client.get(&key(99)).unwrap(), Some(b"v".to_vec()));
    assert_eq!(exec.len(), 100);
}

#[test]
fn workers_write_only_their_partitions() {
    let exec = executor(4, &[100, 200, 300], 4096);
    let mut client = exec.client();
    for p in 0..4u64 {
        let worker = client
            .run(&key(p * 100 + 50), |local| local.worker())
            .unwrap();
        assert_eq!(worker, p as usize % 4);
    }
    exec.move_partition(3, 0).unwrap();
    let worker = client.run(&key(350), |local| local.worker()).unwrap();
    assert_eq!(worker, 0);
    // An action's view refuses keys of other partitions.
    let out = client
        .run(&key(150), |local| {
            (
                local.insert(&key(150), b"in"),
                local.insert(&key(250), b"out"),
                local.lower().map(<[u8]>::to_vec),
                local.upper().map(<[u8]>::to_vec),
            )
        })
        .unwrap();
    assert_eq!(out.0, Ok(None));
    assert_eq!(out.1, Err(Error::OutsidePartition { key: key(250) }));
    assert_eq!((out.2, out.3), (Some(key(100)), Some(key(200))));
    assert_eq!(client.get(&key(250)).unwrap(), None);
    let stats = exec.stats();
    assert_eq!(stats.moves, 1);
    assert_eq!(stats.owners, vec![0, 1, 2, 0]);
    assert!(stats.requests.iter().sum::<u64>() >= 6);
}

#[test]
fn a_panicking_action_reaches_its_client_and_the_worker_goes_on() {
    let exec = executor(2, &[], 4096);
    let mut client = exec.client();
    client.insert(b"k", b"v").unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        client.run(b"k", |_| panic!("inside the action")).unwrap();
    }));
    assert!(caught.is_err());
    assert_eq!(client.get(b"k").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn ranges_cross_partitions_in_order() {
    let exec = executor(3, &[10, 20, 30, 40], 512);
    let mut client = exec.client();
    let ops = (0..50u64)
        .map(|i| Op::Insert(key(i).into(), key(i * 2).into()))
        .collect();
    assert!(client.execute(ops).iter().all(|r| r == &Ok(None)));
    let keys = |r: Vec<(Vec<u8>, Vec<u8>)>| -> Vec<u64> {
        r.into_iter()
            .map(|(k, _)| u64::from_be_bytes(k.try_into().unwrap()))
            .collect()
    };
    let (a, b) = (key(5), key(35));
    let r = client
        .range(Bound::Included(&a[..]), Bound::Excluded(&b[..]), usize::MAX)
        .unwrap();
    assert_eq!(keys(r), (5..35).collect::<Vec<_>>());
    let r = client
        .range(
            Bound::Excluded(&key(10)[..]),
            Bound::Included(&key(20)[..]),
            100,
        )
        .unwrap();
    assert_eq!(keys(r), (11..=20).collect::<Vec<_>>());
    let r = client
        .range(Bound::Unbounded, Bound::Unbounded, 25)
        .unwrap();
    assert_eq!(keys(r), (0..25).collect::<Vec<_>>());
    let r = client
        .range(Bound::Included(&b[..]), Bound::Included(&a[..]), 10)
        .unwrap();
    assert!(r.is_empty());
}

#[test]
fn shutdown_answers_or_refuses_every_request() {
    const CLIENTS: u64 = 3;
    for round in 0..3u64 {
        let exec = executor(2, &[1000], 4096);
        let started = std::sync::Barrier::new(CLIENTS as usize + 1);
        let (tree, oracles) = std::thread::scope(|s| {
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let mut client = exec.client();
                    let started = &started;
                    s.spawn(move || {
                        let mut rng = StdRng::seed_from_u64(c + 10 * round);
                        let mut oracle = BTreeMap::new();
                        let mut refused = 0;
                        for i in 0u64.. {
                            if i == 20 {
                                started.wait();
                            }
                            let ops = batch(&mut rng, c, CLIENTS, 700, 16, i);
                            let got = client.execute(ops.clone());
                            for (op, got) in ops.iter().zip(got) {
                                match got {
                                    Err(Error::ExecutorStopped) => refused += 1,
                                    got => assert_eq!(got, expect(&mut oracle, op)),
                                }
                            }
                            if refused > 0 && i > 20 {
                                // Stopped: every later request is refused too.
                                assert_eq!(
                                    client.get(&key(c)).unwrap_err(),
                                    Error::ExecutorStopped
                                );
                                assert!(client.run(&key(c), |_| ()).is_err());
                                let r = client.range(Bound::Unbounded, Bound::Unbounded, 1);
                                assert_eq!(r.unwrap_err(), Error::ExecutorStopped);
                                return oracle;
                            }
                        }
                        unreachable!()
                    })
                })
                .collect();
            started.wait();
            let tree = exec.shutdown();
            let oracles: Vec<_> = clients.into_iter().map(|h| h.join().unwrap()).collect();
            (tree, oracles)
        });
        // What was answered is in the tree; what was refused is not.
        same_as_oracles(&tree, oracles, &format!("round {round}"));
    }
}

/// `ExecutorConfig::poll`: zero parks a worker at every empty queue, a long poll never
/// (while the test runs); both answer every request as the oracle does.
#[test]
fn waiting_workers_poll_their_queue_before_they_park() {
    for (poll, parks_each_time) in [(Duration::ZERO, true), (Duration::from_secs(30), false)] {
        let exec = Executor::with_config(ExecutorConfig {
            workers: 2,
            boundaries: vec![key(500)],
            rebalance: None,
            poll,
            ..ExecutorConfig::default()
        })
        .unwrap();
        let mut client = exec.client();
        let mut rng = StdRng::seed_from_u64(7);
        let mut oracle = BTreeMap::new();
        for round in 0..200 {
            let ops = batch(&mut rng, 0, 1, 1000, 1 + round as usize % 8, round);
            let want: Vec<OpResult> = ops.iter().map(|op| expect(&mut oracle, op)).collect();
            assert_eq!(client.execute(ops), want, "poll {poll:?}, round {round}");
        }
        let stats = exec.stats();
        let (parks, messages): (u64, u64) = (stats.parks.iter().sum(), stats.messages.iter().sum());
        assert!(messages >= 200, "{stats:?}");
        if parks_each_time {
            // Every message but those already queued when the worker looked was waited for.
            assert!(
                parks >= 200,
                "poll {poll:?}: {parks} parks for {messages} messages"
            );
        } else {
            assert_eq!(parks, 0, "poll {poll:?}: {stats:?}");
        }
        exec.check_invariants().unwrap();
    }
}

#[test]
fn dropping_the_executor_refuses_later_requests() {
    let exec = executor(2, &[], 4096);
    let mut client = exec.client();
    client.insert(b"a", b"1").unwrap();
    drop(exec);
    assert_eq!(client.insert(b"b", b"2"), Err(Error::ExecutorStopped));
    assert_eq!(client.get(b"a"), Err(Error::ExecutorStopped));
}

/// `config` is refused with `InvalidConfig` naming `field`.
fn refused(config: ExecutorConfig, field: &str) {
    let got = Executor::with_config(config);
    assert!(
        matches!(&got, Err(Error::InvalidConfig { field: f, .. }) if *f == field),
        "{got:?}"
    );
}

#[test]
fn bad_input_returns_errors_and_changes_nothing() {
    refused(
        ExecutorConfig {
            workers: 0,
            ..Default::default()
        },
        "workers",
    );
    refused(
        ExecutorConfig {
            workers: 1,
            boundaries: vec![key(5), key(5)],
            ..Default::default()
        },
        "boundaries",
    );
    refused(
        ExecutorConfig {
            workers: 2,
            rebalance: Some(RebalanceConfig {
                imbalance: 0.5,
                ..RebalanceConfig::default()
            }),
            ..Default::default()
        },
        "rebalance.imbalance",
    );
    let exec = executor(2, &[100], 4096);
    let mut client = exec.client();
    client.insert(&key(1), b"v").unwrap();
    assert_eq!(
        exec.slice(&key(100)),
        Err(Error::BoundaryExists { key: key(100) })
    );
    assert_eq!(
        exec.meld(&key(7)),
        Err(Error::NoSuchBoundary { key: key(7) })
    );
    assert!(exec.move_partition(2, 0).is_err());
    assert!(exec.move_partition(0, 2).is_err());
    let huge = vec![7u8; contree::MAX_KEY_LEN + 1];
    assert!(matches!(
        client.insert(&huge, b"v"),
        Err(Error::KeyTooLarge { .. })
    ));
    let big = vec![0u8; contree::MAX_VALUE_LEN + 1];
    assert!(matches!(
        client.insert(&key(2), &big),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(exec.boundaries(), vec![key(100)]);
    assert_eq!(exec.owners(), vec![0, 1]);
    assert_eq!(exec.len(), 1);
    exec.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "called from an executor worker")]
fn a_client_inside_an_action_panics_clearly() {
    let exec = executor(1, &[], 4096);
    let mut client = exec.client();
    let mut inner = exec.client();
    // The action's panic comes back to this thread.
    client
        .run(b"k", move |_| {
            let _ = inner.get(b"k");
        })
        .unwrap();
}

#[test]
#[should_panic(expected = "from one of its workers")]
fn rebalancing_inside_an_action_panics_clearly() {
    let exec = std::sync::Arc::new(executor(1, &[], 4096));
    let mut client = exec.client();
    let inner = std::sync::Arc::clone(&exec);
    // The action's panic comes back to this thread (the action's handle of the executor
    // is dropped on the worker as it unwinds; this thread's is the last one).
    client
        .run(b"k", move |_| {
            inner.rebalance();
        })
        .unwrap();
}

/// `rounds` batches of 64 inserts into keys `from..from + width`.
fn hot_load(client: &mut Client, rng: &mut StdRng, from: u64, width: u64, rounds: usize) {
    for _ in 0..rounds {
        let ops = (0..64)
            .map(|_| Op::Insert(key(from + rng.gen_range(0..width)).into(), b"v".into()))
            .collect();
        assert!(client.execute(ops).iter().all(Result::is_ok));
    }
}

/// Requests each worker carried out while `f` ran.
fn requests_during(exec: &Executor, f: impl FnOnce()) -> Vec<u64> {
    let before = exec.stats().requests;
    f();
    let after = exec.stats().requests;
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

#[test]
fn rebalancing_slices_a_hot_partition_and_spreads_its_load() {
    // One partition, on worker 0; all requests go to a narrow range of it.
    let exec = executor(2, &[], 4096);
    let mut client = exec.client();
    let mut rng = StdRng::seed_from_u64(7);
    hot_load(&mut client, &mut rng, 1_000_000, 10_000, 100);
    let done = exec.rebalance();
    assert!(done.slices >= 1 && done.moves >= 1, "{done:?}");
    let at = u64::from_be_bytes(exec.boundaries()[0][..].try_into().unwrap());
    assert!(
        (1_002_000..1_008_000).contains(&at),
        "sliced at {at}, not near the load's median"
    );
    let shares = requests_during(&exec, || {
        hot_load(&mut client, &mut rng, 1_000_000, 10_000, 100)
    });
    let total: u64 = shares.iter().sum();
    assert!(
        shares.iter().all(|&r| r * 4 > total),
        "each worker carries a fair share now: {shares:?}"
    );
    assert_eq!(exec.rebalance(), Rebalanced::default(), "balanced: no step");
    // The hot range moves to another partition: it is sliced and spread in turn.
    hot_load(&mut client, &mut rng, 0, 10_000, 100);
    let again = exec.rebalance();
    assert!(again.slices >= 1 && again.moves >= 1, "{again:?}");
    let shares = requests_during(&exec, || hot_load(&mut client, &mut rng, 0, 10_000, 100));
    let total: u64 = shares.iter().sum();
    assert!(shares.iter().all(|&r| r * 4 > total), "{shares:?}");
    // A single hot key cannot be divided: no slice at it.
    let before = exec.boundaries();
    for _ in 0..5 {
        hot_load(&mut client, &mut rng, 77, 1, 100);
        exec.rebalance();
    }
    let after = exec.boundaries();
    assert!(after.len() <= before.len() + 1, "{before:?} -> {after:?}");
    let stats = exec.stats();
    assert_eq!(stats.rebalance_rounds, 8);
    assert!(stats.slices >= 2 && stats.moves >= 2, "{stats:?}");
    exec.check_invariants().unwrap();
}

#[test]
fn clients_match_their_oracles_while_the_rebalancer_repartitions() {
    const CLIENTS: u64 = 2;
    const KEYS: u64 = 20_000;
    let exec = Executor::with_config(ExecutorConfig {
        workers: 2,
        tree: Config {
            page_size: 512,
            ..Config::default()
        },
        rebalance: Some(RebalanceConfig {
            interval: Duration::from_millis(5),
            min_requests: 200,
            ..RebalanceConfig::default()
        }),
        ..ExecutorConfig::default()
    })
    .unwrap();
    let oracles: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let mut client = exec.client();
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(c);
                    let mut oracle = BTreeMap::new();
                    for round in 0..1500u64 {
                        // 90% of the keys in a window that moves every 300 rounds.
                        let hot = (round / 300) * (KEYS / 5);
                        let ops: Vec<Op> = (0..64)
                            .map(|j| {
                                let n = if rng.gen_range(0..10) < 9 {
                                    hot + rng.gen_range(0..KEYS / 20)
                                } else {
                                    rng.gen_range(0..KEYS)
                                };
                                let k = key(c + CLIENTS * n);
                                match rng.gen_range(0..10) {
                                    0..=4 => Op::Insert(
                                        k.into(),
                                        format!("{round}/{j}").into_bytes().into(),
                                    ),
                                    5 => Op::Remove(k.into()),
                                    _ => Op::Get(k.into()),
                                }
                            })
                            .collect();
                        let want: Vec<OpResult> =
                            ops.iter().map(|op| expect(&mut oracle, op)).collect();
                        assert_eq!(client.execute(ops), want, "client {c}, round {round}");
                    }
                    oracle
                })
            })
            .collect();
        clients.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let stats = exec.stats();
    assert!(stats.rebalance_rounds > 0);
    assert!(
        stats.slices > 0 && stats.moves > 0,
        "the rebalancer sliced {} and moved {} times",
        stats.slices,
        stats.moves
    );
    exec.check_invariants().unwrap();
    let tree = exec.shutdown();
    same_as_oracles(&tree, oracles, "after the run");
}

/// Resident tasks (`Executor::on_workers`), one per worker, and a client thread, each
/// against its own oracle while partitions move (there and back), slice and meld: every
/// answer is the oracle's (per-key order kept through refusals), and the tree ends as the
/// union of the oracles.
#[test]
fn residents_and_a_client_match_their_oracles_while_partitions_change() {
    const WORKERS: u64 = 3;
    const SOURCES: u64 = WORKERS + 1;
    const KEYS: u64 = 2000;
    let exec = executor(WORKERS as usize, &[2000, 5000], 512);
    let stop = AtomicBool::new(false);
    /// Stops the partition changes however the scope ends (a failed check must not leave
    /// the scope waiting for them).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let (oracles, client_oracle, changes) = std::thread::scope(|s| {
        let control = s.spawn(|| change_partitions(&exec, &stop, KEYS * SOURCES));
        let stopper = StopOnDrop(&stop);
        let mut client = exec.client();
        let client_thread = s.spawn(move || {
            let mut rng = StdRng::seed_from_u64(500);
            let mut oracle = Oracle::new();
            for round in 0..400 {
                let ops = batch(&mut rng, WORKERS, SOURCES, KEYS, 64, round);
                let want: Vec<OpResult> = ops.iter().map(|op| expect(&mut oracle, op)).collect();
                assert_eq!(client.execute(ops), want, "client, round {round}");
            }
            oracle
        });
        let oracles = exec
            .on_workers(|resident| {
                let me = resident.worker() as u64;
                let mut rng = StdRng::seed_from_u64(700 + me);
                let mut oracle = Oracle::new();
                for round in 0..600 {
                    let len = if round % 5 == 0 { 1 } else { 64 };
                    let ops = batch(&mut rng, me, SOURCES, KEYS, len, round);
                    let want: Vec<OpResult> =
                        ops.iter().map(|op| expect(&mut oracle, op)).collect();
                    assert_eq!(resident.execute(ops), want, "worker {me}, round {round}");
                    if round % 100 == 0 {
                        // A single operation of each kind, through the conveniences.
                        let k = key(me + SOURCES * rng.gen_range(0..KEYS));
                        let v = format!("one/{round}").into_bytes();
                        let old = oracle.insert(k.clone(), v.clone());
                        assert_eq!(resident.insert(&k, &v).unwrap(), old);
                        assert_eq!(resident.get(&k).unwrap(), Some(v.clone()));
                        assert_eq!(resident.remove(&k).unwrap(), Some(v));
                        oracle.remove(&k);
                    }
                }
                oracle
            })
            .unwrap();
        let client_oracle = client_thread.join().unwrap();
        drop(stopper);
        (oracles, client_oracle, control.join().unwrap())
    });
    assert!(changes > 10, "the partitions changed {changes} times only");
    let refused: u64 = exec.stats().moved.iter().sum();
    assert!(
        refused > 0,
        "no operation was refused: the moves were not exercised"
    );
    assert_eq!(oracles.len(), WORKERS as usize);
    exec.check_invariants().unwrap();
    let mut all = oracles;
    all.push(client_oracle);
    let tree = exec.shutdown();
    same_as_oracles(&tree, all, "after the residents");
}

/// Operations on a worker's own keys are carried out without a message: with one
/// partition per worker and each task touching its own partition only, no batch message
/// reaches any worker.
#[test]
fn a_resident_carries_out_its_own_keys_without_messages() {
    let exec = executor(2, &[1000], 4096);
    let before = exec.stats().messages;
    let counts = exec
        .on_workers(|resident| {
            let base = 1000 * resident.worker() as u64;
            let ops: Vec<Op> = (base + 1..base + 1000)
                .map(|i| Op::Insert(key(i).into(), b"v".into()))
                .collect();
            resident.execute(ops).len()
        })
        .unwrap();
    assert_eq!(counts, vec![999, 999]);
    let after = exec.stats().messages;
    // One task message per worker, and the pauses of `stats` itself.
    let sent: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let stats_pause = exec.stats().messages[0] - after[0];
    assert!(
        sent.iter().all(|&m| m == 1 + stats_pause),
        "messages per worker {sent:?} (stats pauses {stats_pause})"
    );
    assert_eq!(exec.len(), 1998);
}

#[test]
fn a_panicking_task_is_resumed_after_every_worker_finished() {
    let exec = executor(2, &[1000], 4096);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        exec.on_workers(|resident| {
            if resident.worker() == 1 {
                panic!("inside the task");
            }
            // The other worker's batch to worker 1 is answered all the same.
            resident.insert(&key(1500), b"v").unwrap()
        })
    }));
    assert!(caught.is_err());
    let mut client = exec.client();
    assert_eq!(client.get(&key(1500)).unwrap(), Some(b"v".to_vec()));
    exec.check_invariants().unwrap();
}

#[test]
#[should_panic(expected = "called from an executor worker")]
fn a_client_inside_a_task_panics_clearly() {
    let exec = executor(1, &[], 4096);
    let _ = exec.on_workers(|_| {
        let mut inner = exec.client();
        let _ = inner.get(b"k");
    });
}

/// Two threads run resident tasks at once: a worker that gets the second task while it
/// runs the first defers it, and each task's batches to the other worker are served
/// meanwhile (no deadlock, whichever task each worker took first); every task sees its
/// own writes.
#[test]
fn concurrent_resident_tasks_each_run_on_every_worker() {
    let exec = executor(2, &[1000], 4096);
    let counts: Vec<Vec<usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2u64)
            .map(|t| {
                let exec = &exec;
                s.spawn(move || {
                    exec.on_workers(|resident| {
                        let me = resident.worker() as u64;
                        let mut n = 0;
                        for round in 0..200u64 {
                            // Keys of both partitions, disjoint per task and worker.
                            let ops: Vec<Op> = (0..16u64)
                                .map(|j| {
                                    let k = key((j * 131 + round) % 2000 * 4 + t * 2 + me);
                                    Op::Insert(k.into(), round.to_be_bytes().into())
                                })
                                .collect();
                            n += resident.execute(ops).len();
                            // Its key of `j = 0`, just written.
                            let k = key(round % 2000 * 4 + t * 2 + me);
                            let got = resident.get(&k).unwrap();
                            assert_eq!(
                                got,
                                Some(round.to_be_bytes().to_vec()),
                                "task {t} worker {me} round {round}"
                            );
                        }
                        n
                    })
                    .unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(counts, vec![vec![3200, 3200], vec![3200, 3200]]);
    exec.check_invariants().unwrap();
}
