//! NUMA (`src/numa`): the simulated topology, upper-level replicas kept consistent lazily
//! (never trusted when stale, refreshed by readers), their budget, and the remote inner-node
//! reads they save.

#[path = "support/concurrent.rs"]
mod concurrent;

use contree::{Config, Error, NodeFn, Numa, PartitionedTree, Stats, ThreadMap, Topology, Tree};
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

thread_local! {
    /// The node a test puts this thread on (`ThreadMap::By`).
    static NODE: Cell<usize> = const { Cell::new(0) };
}

/// Runs `f` on a new thread on `node` (a thread's node is asked once and kept).
fn on_node<R: Send>(node: usize, f: impl FnOnce() -> R + Send) -> R {
    thread::scope(|s| {
        s.spawn(|| {
            NODE.with(|n| n.set(node));
            f()
        })
        .join()
        .unwrap()
    })
}

/// Small pages (a deep tree with few keys), no space manager, `nodes` simulated nodes with
/// threads placed by [`on_node`].
fn config(nodes: usize, replicas: bool) -> Config {
    Config {
        page_size: 512,
        space_manager: false,
        numa: Numa {
            topology: Topology::Simulated {
                nodes,
                threads: ThreadMap::By(NodeFn::new(|| NODE.with(Cell::get))),
            },
            replicas,
            ..Numa::default()
        },
        ..Config::default()
    }
}

/// [`config`] with page placement (`Numa::placement`) as given.
fn placed(nodes: usize, replicas: bool, placement: bool) -> Config {
    let mut c = config(nodes, replicas);
    c.numa.placement = placement;
    c
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// The value of key `i` written at `round`: the key, then the round, so that a read of a
/// wrong leaf's entry or of a torn copy shows.
fn value(i: u64, round: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&i.to_le_bytes());
    v[8..].copy_from_slice(&round.to_le_bytes());
    v
}

fn delta(after: &Stats, before: &Stats) -> (u64, u64, u64, u64, u64) {
    (
        after.numa_reads - before.numa_reads,
        after.numa_inner_reads - before.numa_inner_reads,
        after.numa_remote_inner_reads - before.numa_remote_inner_reads,
        after.replica_reads - before.replica_reads,
        after.replica_fallbacks - before.replica_fallbacks,
    )
}

#[test]
fn replicas_save_every_remote_inner_read() {
    // Built on node 0 (every page is node 0's); read from node 3.
    for replicas in [false, true] {
        let tree = Tree::with_config(config(4, replicas)).unwrap();
        for i in 0..20_000 {
            tree.insert(&key(i), &value(i, 0)).unwrap();
        }
        let height = tree.stats().height as u64;
        assert!(height >= 3, "a deep tree: height {height}");
        let before = tree.stats();
        on_node(3, || {
            for i in (0..20_000).step_by(7) {
                assert_eq!(tree.get(&key(i)), Some(value(i, 0).to_vec()));
            }
        });
        let after = tree.stats();
        let (reads, inner, remote, replica_reads, fallbacks) = delta(&after, &before);
        assert_eq!(reads, 20_000 / 7 + 1);
        assert_eq!(after.numa_nodes, 4);
        if replicas {
            // The first read found no copy and refreshed this node's replica: every read
            // went through it, reading no remote inner page.
            assert_eq!(remote, 0);
            assert_eq!((replica_reads, fallbacks), (reads, 0));
            assert_eq!(inner, reads * (height - 1));
            assert_eq!(after.replica_refreshes, 1);
            assert_eq!(
                after.replica_bytes,
                after.replica_pages_copied as usize * 512
            );
            assert_eq!(after.replica_pages_copied as usize, after.inner_pages);
        } else {
            assert_eq!(remote, reads * (height - 1));
            assert_eq!(inner, remote);
            assert_eq!(replica_reads + fallbacks, 0);
        }
        // Reads on node 0 read local pages either way.
        let before = tree.stats();
        on_node(0, || assert!(tree.contains_key(&key(5))));
        assert_eq!(delta(&tree.stats(), &before).2, 0);
        tree.check_invariants().unwrap();
    }
}

#[test]
fn a_stale_replica_is_never_trusted_and_is_refreshed_by_readers() {
    let tree = Tree::with_config(config(2, true)).unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..5_000u64 {
        tree.insert(&key(i * 4), &value(i * 4, 0)).unwrap();
        oracle.insert(i * 4, 0u64);
    }
    on_node(1, || assert!(tree.get(&key(0)).is_some()));
    assert_eq!(tree.stats().replica_refreshes, 1);
    // Splits, merges and new levels behind the replica's back: inserts between the keys and
    // removals of most of them.
    for i in 0..15_000u64 {
        let k = i * 4 / 3 * 3 + 1;
        tree.insert(&key(k), &value(k, 1)).unwrap();
        oracle.insert(k, 1);
    }
    for i in (0..61_000u64).filter(|i| i % 5 != 0) {
        if tree.remove(&key(i)).is_some() {
            oracle.remove(&i);
        }
    }
    let before = tree.stats();
    assert!(before.splits > 0 && before.merges > 0, "{before:?}");
    on_node(1, || {
        for i in 0..61_000u64 {
            let want = oracle.get(&i).map(|&r| value(i, r).to_vec());
            assert_eq!(tree.get(&key(i)), want, "key {i}");
        }
    });
    let after = tree.stats();
    let (reads, _, _, replica_reads, fallbacks) = delta(&after, &before);
    // The first read found the replica stale, fell back after refreshing it... or used it
    // at once: either way one refresh, and every later read went through the replica.
    assert_eq!(after.replica_refreshes, 2);
    assert!(fallbacks <= 1, "{fallbacks} fallbacks");
    assert_eq!(replica_reads + fallbacks, reads);
    // Only the inner pages that changed were copied again.
    assert!(after.replica_pages_copied > before.replica_pages_copied);
    tree.check_invariants().unwrap();
}

#[test]
fn readers_on_four_nodes_beside_splits_merges_and_xmerges_match_the_oracle() {
    // 9 threads on 4 simulated nodes: 4 writers (each owning the keys `k % 4 == w`) insert
    // and remove, 4 readers read keys that never change and keys that do (a value read must
    // be one of that key's), and a compactor packs nodes with XMerge (`compact`), while
    // replicas go stale and are refreshed and pages are placed on their creators' nodes.
    // Then the tree is compared with the writers' oracles.
    const KEYS: u64 = 20_000;
    let tree = Arc::new(Tree::with_config(placed(4, true, true)).unwrap());
    for i in 0..KEYS {
        tree.insert(&key(i * 2), &value(i * 2, 0)).unwrap(); // even keys never change
    }
    let _watchdog = concurrent::watchdog("numa readers", std::time::Duration::from_secs(120));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(8));
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let (tree, start) = (Arc::clone(&tree), Arc::clone(&start));
            thread::spawn(move || {
                on_node(w as usize, || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(w);
                    let mut mine = BTreeMap::new();
                    start.wait();
                    for round in 1..=60_000u64 {
                        let k = rng.gen_range(0..KEYS / 4) * 8 + w * 2 + 1; // odd keys
                        if rng.gen_bool(0.55) {
                            tree.insert(&key(k), &value(k, round)).unwrap();
                            mine.insert(k, round);
                        } else if tree.remove(&key(k)).is_some() {
                            mine.remove(&k);
                        }
                    }
                    mine
                })
            })
        })
        .collect();
    let readers: Vec<_> = (0..4usize)
        .map(|r| {
            let (tree, start, stop) = (Arc::clone(&tree), Arc::clone(&start), Arc::clone(&stop));
            thread::spawn(move || {
                on_node(r, || {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(100 + r as u64);
                    start.wait();
                    let mut reads = 0u64;
                    while !stop.load(Ordering::Relaxed) || reads < 20_000 {
                        let k = rng.gen_range(0..KEYS * 2);
                        let got = tree.get(&key(k));
                        if k % 2 == 0 {
                            assert_eq!(got, Some(value(k, 0).to_vec()), "stable key {k}");
                        } else if let Some(v) = got {
                            assert_eq!(v[..8], k.to_le_bytes(), "key {k} read {v:?}");
                        }
                        reads += 1;
                    }
                    reads
                })
            })
        })
        .collect();
    // The compactor goes on after the writers until XMerge freed a page (the readers read
    // until it stops): on a loaded machine it may not have run while they wrote.
    let writing = Arc::new(AtomicBool::new(true));
    let compactor = {
        let (tree, writing) = (Arc::clone(&tree), Arc::clone(&writing));
        thread::spawn(move || {
            on_node(3, || {
                let mut freed = 0;
                let start = std::time::Instant::now();
                while writing.load(Ordering::Relaxed)
                    || freed == 0 && start.elapsed() < std::time::Duration::from_secs(60)
                {
                    freed += tree.compact();
                    thread::sleep(std::time::Duration::from_millis(20));
                }
                freed
            })
        })
    };
    let mut oracle = BTreeMap::new();
    for w in writers {
        oracle.extend(w.join().unwrap());
    }
    writing.store(false, Ordering::Relaxed);
    let freed = compactor.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(freed > 0, "no XMerge ran beside the readers");
    assert!(tree.stats().xmerges > 0);
    tree.check_invariants().unwrap();
    for i in 0..KEYS {
        oracle.insert(i * 2, 0);
    }
    let got: Vec<(u64, Vec<u8>)> = tree
        .range(..)
        .map(|(k, v)| (u64::from_be_bytes(k[..].try_into().unwrap()), v.to_vec()))
        .collect();
    let want: Vec<(u64, Vec<u8>)> = oracle
        .iter()
        .map(|(&k, &r)| (k, value(k, r).to_vec()))
        .collect();
    assert!(got == want, "the tree differs from the oracle");
    // Every node's readers read through their replica, after the writers stopped at least.
    let s = tree.stats();
    assert!(s.replica_reads > 0 && s.replica_refreshes >= 4, "{s:?}");
    // Point reads on the four nodes all see the final state.
    for node in 0..4 {
        on_node(node, || {
            for (&k, &r) in oracle.iter().step_by(97) {
                assert_eq!(tree.get(&key(k)), Some(value(k, r).to_vec()));
            }
        });
    }
}

#[test]
fn replicas_follow_slices_and_melds_of_a_partitioned_tree() {
    let tree = PartitionedTree::with_config(config(2, true)).unwrap();
    for i in 0..10_000u64 {
        tree.insert(&key(i), &value(i, 0)).unwrap();
    }
    let check = |tree: &PartitionedTree| {
        on_node(1, || {
            for i in (0..10_000u64).step_by(3) {
                assert_eq!(tree.get(&key(i)), Some(value(i, 0).to_vec()), "key {i}");
            }
        })
    };
    check(&tree);
    tree.slice(&key(2_500)).unwrap();
    tree.slice(&key(7_000)).unwrap();
    check(&tree);
    tree.meld(&key(2_500)).unwrap();
    check(&tree);
    // A partition whose root is a leaf: the replica marks it and reads go to the tree.
    tree.slice(&key(9_990)).unwrap();
    check(&tree);
    let s = tree.stats();
    assert!(s.replica_reads > 0 && s.replica_refreshes >= 4, "{s:?}");
    tree.check_invariants().unwrap();
}

/// A replica drops the copies of pages that stopped being inner nodes: when the tree shrinks
/// (its bytes follow), and when a rebuilt tree's inner nodes would not fit beside the old
/// copies (the replica stays in use instead of going over its budget for good).
#[test]
fn copies_of_pages_no_longer_inner_are_dropped_and_the_budget_holds() {
    const N: u64 = 200_000;
    // 4 KiB pages (their memory can go back to the system) and 48-byte keys in scattered
    // order: thousands of leaves, a few dozen inner pages.
    let long = |round: u64, i: u64| {
        let mut k = [round as u8; 48];
        k[..8].copy_from_slice(&(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round).to_be_bytes());
        k
    };
    let make = |budget: usize| {
        let mut c = config(2, true);
        c.page_size = 4096;
        c.numa.replica_budget = budget;
        Tree::with_config(c).unwrap()
    };
    let load = |tree: &Tree, round: u64| {
        for i in 0..N {
            tree.insert(&long(round, i), b"v").unwrap();
        }
    };
    let read = |tree: &Tree, round: u64| {
        on_node(1, || {
            for i in (0..N).step_by(7) {
                assert_eq!(tree.get(&long(round, i)).as_deref(), Some(&b"v"[..]));
            }
        })
    };
    // The inner pages of one load, measured on a tree of the same shape.
    let probe = make(64 << 20);
    load(&probe, 0);
    let inner = probe.stats().inner_pages;
    assert!(inner >= 8, "{inner} inner pages");
    let budget = inner * 4096 * 3 / 2;
    let tree = make(budget);
    load(&tree, 0);
    read(&tree, 0);
    let s = tree.stats();
    assert_eq!(s.replica_bytes, inner * 4096);
    // The tree shrinks to a few keys: the next refresh drops the copies of merged pages.
    for i in 0..N - 10 {
        assert!(tree.remove(&long(0, i)).is_some());
    }
    on_node(1, || {
        for i in N - 10..N {
            assert!(tree.get(&long(0, i)).is_some());
        }
    });
    let s = tree.stats();
    assert!(s.replica_copies_dropped as usize >= inner - 2, "{s:?}");
    assert!(s.replica_bytes <= 2 * 4096, "{s:?}");
    // Rebuilt with other keys, whose inner nodes reuse other pages: the old copies would not
    // fit beside the new ones, and are dropped during the walk.
    for i in N - 10..N {
        assert!(tree.remove(&long(0, i)).is_some());
    }
    load(&tree, 0);
    read(&tree, 0);
    for i in 0..N {
        assert!(tree.remove(&long(0, i)).is_some());
    }
    load(&tree, 1);
    let before = tree.stats();
    read(&tree, 1);
    let s = tree.stats();
    assert!(!s.replica_over_budget, "{s:?}");
    assert!(s.replica_bytes <= budget);
    assert!(
        s.replica_reads - before.replica_reads > N / 7 - 100,
        "{s:?}"
    );
    tree.check_invariants().unwrap();
}

#[test]
fn a_replica_over_its_budget_is_not_used() {
    let mut c = config(2, true);
    c.numa.replica_budget = 512; // one page: the inner levels of a deep tree need more
    let tree = Tree::with_config(c).unwrap();
    for i in 0..5_000u64 {
        tree.insert(&key(i), &value(i, 0)).unwrap();
    }
    on_node(1, || {
        for i in 0..5_000u64 {
            assert_eq!(tree.get(&key(i)), Some(value(i, 0).to_vec()));
        }
    });
    let s = tree.stats();
    assert!(s.replica_over_budget);
    assert_eq!(s.replica_reads, 0);
    assert_eq!(s.replica_fallbacks, 5_000);
    assert!(s.replica_bytes <= 512);
}

#[test]
fn a_tree_of_one_leaf_reads_through_its_replica() {
    let tree = Tree::with_config(config(2, true)).unwrap();
    tree.insert(b"a", b"1").unwrap();
    on_node(1, || {
        assert_eq!(tree.get(b"a"), Some(b"1".to_vec()));
        assert_eq!(tree.get(b"b"), None);
    });
    let s = tree.stats();
    assert_eq!(
        (s.replica_reads, s.replica_bytes, s.numa_inner_reads),
        (2, 0, 0)
    );
}

#[test]
fn invalid_numa_settings_are_refused() {
    for nodes in [0, 65] {
        let c = Config {
            numa: Numa {
                topology: Topology::Simulated {
                    nodes,
                    threads: ThreadMap::RoundRobin,
                },
                ..Numa::default()
            },
            ..Config::default()
        };
        assert!(matches!(
            Tree::with_config(c),
            Err(Error::InvalidConfig {
                field: "numa.topology",
                ..
            })
        ));
    }
    let c = Config {
        numa: Numa {
            replica_budget: 100,
            ..Numa::default()
        },
        ..Config::default()
    };
    assert!(matches!(
        Tree::with_config(c),
        Err(Error::InvalidConfig {
            field: "numa.replica_budget",
            ..
        })
    ));
}

#[test]
fn the_system_topology_with_everything_off_costs_no_state() {
    let tree = Tree::new();
    tree.insert(b"k", b"v").unwrap();
    assert!(tree.get(b"k").is_some());
    let s = tree.stats();
    assert!(s.numa_nodes >= 1);
    assert_eq!((s.numa_reads, s.replica_reads), (0, 0));
}

/// The cohort latch (`Numa::cohort`): writers on four nodes hammer keys of one leaf (their
/// own key each, Contention Split off so that the contention stays) beside inserts and
/// removals that split and merge the leaves around it and readers that scan and read
/// through shared latches; the hot leaf's latch proves hot and is inflated, every handoff is
/// counted as same-node or cross-node, no writer waits forever, and every read and the
/// final contents match what the writers wrote.
#[test]
fn cohort_latches_keep_every_write_beside_splits_merges_and_scans() {
    let tree = Tree::with_config(Config {
        contention_split: false,
        numa: Numa {
            cohort: true,
            ..config(4, false).numa
        },
        ..config(4, false)
    })
    .unwrap();
    const HOT: u64 = 1_000;
    for i in 0..2_000u64 {
        tree.insert(&key(i * 2), &value(i * 2, 0)).unwrap();
    }
    let stop = AtomicBool::new(false);
    let rounds: Vec<u64> = thread::scope(|s| {
        let writers: Vec<_> = (0..8u64)
            .map(|t| {
                let (tree, stop) = (&tree, &stop);
                s.spawn(move || {
                    NODE.with(|n| n.set(t as usize % 4));
                    let k = HOT + t * 2;
                    let mut round = 0;
                    while !stop.load(Ordering::Relaxed) {
                        round += 1;
                        assert!(tree.insert(&key(k), &value(k, round)).unwrap().is_some());
                    }
                    round
                })
            })
            .collect();
        // Splits and merges beside the hot leaf: odd keys come and go.
        s.spawn(|| {
            NODE.with(|n| n.set(1));
            let mut rng = rand::rngs::StdRng::seed_from_u64(16);
            while !stop.load(Ordering::Relaxed) {
                let i = rng.gen_range(0..2_000u64) * 2 + 1;
                tree.insert(&key(i), &value(i, 0)).unwrap();
                if rng.gen_bool(0.5) {
                    tree.remove(&key(i)).unwrap();
                }
            }
        });
        // Readers: scans (shared latches on leaves) and closures over hot values.
        s.spawn(|| {
            NODE.with(|n| n.set(2));
            while !stop.load(Ordering::Relaxed) {
                for (k, v) in tree.range(key(HOT - 8)..key(HOT + 24)) {
                    assert_eq!(v[..8], k.iter().rev().copied().collect::<Vec<_>>());
                }
                tree.get_with(&key(HOT + 2), |v| {
                    assert_eq!(v[..8], (HOT + 2).to_le_bytes())
                });
            }
        });
        // Until the hot latch is inflated (at most 20 s), then 300 ms more.
        let start = std::time::Instant::now();
        while tree.stats().cohort_latches == 0 && start.elapsed().as_secs() < 20 {
            thread::sleep(std::time::Duration::from_millis(10));
        }
        thread::sleep(std::time::Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for (t, &round) in rounds.iter().enumerate() {
        let k = HOT + t as u64 * 2;
        assert_eq!(tree.get(&key(k)).unwrap(), value(k, round), "writer {t}");
    }
    for i in 0..2_000u64 {
        let k = i * 2;
        if !(HOT..HOT + 16).contains(&k) {
            assert_eq!(tree.get(&key(k)).unwrap(), value(k, 0));
        }
    }
    tree.check_invariants().unwrap();
    let s = tree.stats();
    assert!(
        s.cohort_latches >= 1,
        "the hot leaf's latch was inflated: {s:?}"
    );
    assert!(s.numa_same_node_handoffs + s.numa_cross_node_handoffs > 0);
    assert!(s.numa_latch_max_wait_ns > 0);
}

/// Page placement (`Numa::placement`): four threads, one per node, each load, rewrite and
/// partly remove their own key range at once (splits and merges on every node, beside each
/// other at the ranges' edges), with a scanner beside them. Every page lives on the node of
/// the thread that created it: the pages per node add up to the tree's pages, every node
/// holds some, reads of a thread's own keys find their leaf on its node (against every read
/// from nodes 1 to 3 being remote without placement), and the contents match the oracle.
#[test]
fn placement_puts_pages_on_their_creators_node_and_keeps_every_write() {
    const PER: u64 = 3_000;
    let mut remote_share = Vec::new();
    for placement in [false, true] {
        let tree = Tree::with_config(placed(4, false, placement)).unwrap();
        let stop = AtomicBool::new(false);
        let oracles: Vec<BTreeMap<u64, [u8; 16]>> = thread::scope(|s| {
            let scanner = s.spawn(|| {
                NODE.with(|n| n.set(1));
                while !stop.load(Ordering::Relaxed) {
                    let mut last = None;
                    for (k, v) in tree.range(key(PER / 2)..key(3 * PER)) {
                        assert_eq!(v[..8], k.iter().rev().copied().collect::<Vec<_>>());
                        assert!(last.as_ref().is_none_or(|l| *l < k));
                        last = Some(k);
                    }
                }
            });
            let writers: Vec<_> = (0..4u64)
                .map(|t| {
                    let tree = &tree;
                    s.spawn(move || {
                        NODE.with(|n| n.set(t as usize));
                        let mut rng = rand::rngs::StdRng::seed_from_u64(t);
                        let mut oracle = BTreeMap::new();
                        let range = t * PER..(t + 1) * PER;
                        for i in range.clone() {
                            tree.insert(&key(i), &value(i, 0)).unwrap();
                            oracle.insert(i, value(i, 0));
                        }
                        for round in 1..3 {
                            for _ in 0..PER {
                                let i = rng.gen_range(range.clone());
                                if rng.gen_bool(0.4) {
                                    assert_eq!(
                                        tree.remove(&key(i)),
                                        oracle.remove(&i).map(|v| v.to_vec())
                                    );
                                } else {
                                    tree.insert(&key(i), &value(i, round)).unwrap();
                                    oracle.insert(i, value(i, round));
                                }
                            }
                        }
                        oracle
                    })
                })
                .collect();
            let oracles = writers.into_iter().map(|w| w.join().unwrap()).collect();
            stop.store(true, Ordering::Relaxed);
            scanner.join().unwrap();
            oracles
        });
        tree.check_invariants().unwrap();
        let all: BTreeMap<u64, [u8; 16]> =
            oracles.iter().flatten().map(|(&k, &v)| (k, v)).collect();
        assert!(tree
            .iter()
            .map(|(k, v)| (u64::from_be_bytes(k[..].try_into().unwrap()), v.to_vec()))
            .eq(all.iter().map(|(&k, v)| (k, v.to_vec()))));
        // Each thread reads its own keys.
        let before = tree.stats();
        for (t, oracle) in oracles.iter().enumerate() {
            on_node(t, || {
                for (&i, v) in oracle {
                    assert_eq!(tree.get(&key(i)).as_deref(), Some(&v[..]));
                }
            });
        }
        let s = tree.stats();
        let reads = s.numa_reads - before.numa_reads;
        let remote = s.numa_remote_leaf_reads - before.numa_remote_leaf_reads;
        assert_eq!(reads, all.len() as u64);
        remote_share.push(remote as f64 / reads as f64);
        if placement {
            assert_eq!(s.pages_per_node.len(), 4);
            assert!(
                s.pages_per_node.iter().all(|&n| n > 0),
                "{:?}",
                s.pages_per_node
            );
            assert_eq!(
                s.pages_per_node.iter().sum::<usize>(),
                s.leaf_pages + s.inner_pages + s.blob_pages + s.heap_pages
            );
        } else {
            assert!(s.pages_per_node.is_empty());
        }
    }
    // Without placement every page is node 0's: the reads of nodes 1 to 3 are all remote.
    assert!(remote_share[0] > 0.7, "{remote_share:?}");
    assert!(remote_share[1] < 0.05, "{remote_share:?}");
}

/// Placement on one node is the pool without placement: nothing is counted per node.
#[test]
fn placement_on_one_node_changes_nothing() {
    let tree = Tree::with_config(placed(1, false, true)).unwrap();
    for i in 0..5_000 {
        tree.insert(&key(i), &value(i, 0)).unwrap();
    }
    let s = tree.stats();
    assert!(s.pages_per_node.is_empty());
    assert_eq!(
        (s.numa_remote_leaf_reads, s.numa_pages_placed_remote),
        (0, 0)
    );
    assert_eq!(tree.len(), 5_000);
}

/// Placement keeps memory bounded when one node frees what another needs: node 0 loads and
/// then removes a range (its pages go to node 0's free list), node 1 loads as much again.
/// With memory kept (`return_memory` off), node 1 takes node 0's free pages instead of
/// growing the pool by as much again.
#[test]
fn placement_reuses_another_nodes_free_pages_rather_than_growing() {
    let tree = Tree::with_config(Config {
        return_memory: false,
        ..placed(2, false, true)
    })
    .unwrap();
    const N: u64 = 20_000;
    on_node(0, || {
        for i in 0..N {
            tree.insert(&key(i), &value(i, 0)).unwrap();
        }
    });
    let loaded = tree.stats();
    on_node(0, || {
        for i in 0..N {
            assert!(tree.remove(&key(i)).is_some());
        }
    });
    on_node(1, || {
        for i in N..2 * N {
            tree.insert(&key(i), &value(i, 0)).unwrap();
        }
    });
    let s = tree.stats();
    assert_eq!(tree.len(), N as usize);
    assert!(s.numa_pages_placed_remote > 0);
    let held = |s: &Stats| s.bytes_allocated + s.bytes_free;
    // At most a segment (32 pages) of node 0's free pages stays unused beside node 1's own.
    assert!(
        held(&s) <= held(&loaded) + 48 * 512,
        "{} bytes held after, {} after the first load",
        held(&s),
        held(&loaded)
    );
    assert!(s.pages_per_node[0] > 0 && s.pages_per_node[1] > 0);
}
