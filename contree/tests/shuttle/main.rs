//! Deterministic simulation of the whole tree with Shuttle.
//!
//! Built with the `shuttle` feature, the tree takes every atomic, mutex, yield and
//! thread-local of its protocols from Shuttle (`src/sync/seam.rs`): each atomic operation
//! is a point where Shuttle's scheduler picks the thread that runs next, latches that wait
//! yield to it, and a schedule replays exactly from its seed. Each model below runs a few
//! threads of random operations on a tree with 512-byte pages (the `small-pages` feature
//! that `shuttle` implies), so that a handful of operations splits, merges, packs (XMerge),
//! splits for contention, moves values in and out of line and grows or shrinks the tree
//! by a level, all while other threads descend, write and scan.
//!
//! Every execution is checked three ways: every operation's result is linearizable
//! (`history.rs`: per key, with each scan's view of each key it covered as an observation),
//! a final scan in both directions and `len()` agree, and `check_invariants()` holds. After
//! all its executions a model checks that the structure changes it is about happened.
//!
//! Schedules: `CONTREE_SHUTTLE_ITERATIONS` (default 300) random schedules and as many PCT
//! schedules (depth 3) per model. A failure prints Shuttle's seed (random scheduler; replay
//! with `SHUTTLE_RANDOM_SEED=<seed>`) or schedule (PCT; replay with `shuttle::replay`).
//! `CONTREE_SHUTTLE_TRACE=1` prints each call and return as it happens, for executions that
//! hang (Shuttle's step bound) or panic inside the tree before the history is dumped.
//!
//! Run: `cargo test -p contree --release --features shuttle --test shuttle`
//! (`scripts/test.sh` runs it after the workspace tests; a longer run:
//! `CONTREE_SHUTTLE_ITERATIONS=20000 cargo test ...`).

mod executor;
mod history;
mod models;

use contree::{Config, Error, LineMode, Numa, PartitionedTree, ThreadMap, Topology, Tree};
use history::{check_linearizable, Event, History, Op, Res};
use shuttle::rand::{thread_rng, Rng};
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A model: the tree's configuration and the workload of its threads.
#[derive(Clone)]
struct Model {
    config: Config,
    /// Keys in the model's key set.
    keys: usize,
    /// Every other key of the set is longer than the 512-byte page's inline key limit.
    long_keys: bool,
    /// Which keys the tree holds before the threads start.
    initially: fn(usize) -> bool,
    threads: usize,
    ops_per_thread: usize,
    /// Half of all keys a thread picks lie in this window of neighbouring keys (one leaf or
    /// two), so that threads meet on the same keys and latches.
    hot: std::ops::Range<usize>,
    /// Longest value written: above 128 bytes values go out of line (blob heap or pages).
    max_value: usize,
    /// Relative weights of point writes, point reads, scans, `compact()` and slices or
    /// melds (a weight above 0 makes the tree a `PartitionedTree`).
    weights: [u32; 5],
    /// Yields inside each `update_with` closure: a holder that keeps its leaf latched for
    /// that long (as a descheduled one would), so that writers that find the latch taken
    /// hand their operations to it (leaf combining).
    holder_yields: usize,
    /// The side structure (`Config::side_structure` must be on): the hot window's leaf is
    /// marked hot before the threads start, and every odd thread marks the leaf of a key it
    /// picks before one of its operations, chosen at random.
    mark_hot: bool,
    /// Extra weight of `update_with` among point writes (each of the eight kinds weighs 1).
    update_bias: u32,
}

/// Totals over all executions of a model (std atomics: read outside the executions).
#[derive(Default)]
struct Totals {
    executions: AtomicU64,
    slices: AtomicU64,
    melds: AtomicU64,
    splits: AtomicU64,
    merges: AtomicU64,
    contention_splits: AtomicU64,
    /// Splits given up for another thread's split of the same node (`smo::gate`).
    split_gate_waits: AtomicU64,
    xmerges: AtomicU64,
    out_of_space: AtomicU64,
    out_of_line: AtomicU64,
    max_height: AtomicU64,
    ops_combined: AtomicU64,
    side_diverted: AtomicU64,
    line_updates: AtomicU64,
    line_exits: AtomicU64,
    line_evictions: AtomicU64,
    /// Reads and updates answered "absent" by a leaf's mark bits (`sync::ccm`).
    mark_rejections: AtomicU64,
    /// Inserts into a leaf's insert segments and records moved out of them
    /// (`sync::segments`).
    segment_inserts: AtomicU64,
    segment_moves: AtomicU64,
    /// Point reads' leaf phases run again on the same leaf (`engine::phases`).
    leaf_restarts: AtomicU64,
    /// Leaf latches inflated to cohort latches (`Numa::cohort`).
    cohort_latches: AtomicU64,
}

/// The seed of the schedulers' sequence of schedules: fixed by default, so that the default
/// test run is the same run every time; `CONTREE_SHUTTLE_SEED` picks another (`random`: one
/// from the clock, printed).
fn seed() -> u64 {
    match std::env::var("CONTREE_SHUTTLE_SEED").as_deref() {
        Err(_) => 0x5eed_c0de,
        Ok("random") => {
            let s = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            eprintln!("CONTREE_SHUTTLE_SEED={s}");
            s
        }
        Ok(s) => s
            .parse()
            .expect("CONTREE_SHUTTLE_SEED: a number or `random`"),
    }
}

fn iterations() -> usize {
    std::env::var("CONTREE_SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000)
}

/// Key `i` of the set: sorted by `i`. Long keys share a long prefix, so that their rests go
/// out of line and nodes compress them by prefix.
fn key(model: &Model, i: usize) -> Vec<u8> {
    let mut k = format!("k{i:03}").into_bytes();
    if model.long_keys && i % 2 == 1 {
        k.extend_from_slice(&[b'~'; 40]);
        k.extend_from_slice(format!("{i}").as_bytes());
    }
    k
}

/// The value key `i` starts with: lengths vary from 8 to 138 bytes; the first byte is even
/// for even keys.
fn initial_value(i: usize) -> Vec<u8> {
    let mut v = vec![i as u8; 8 + (i * 37) % 131];
    v[0] = (i % 256) as u8;
    v
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn small_config() -> Config {
    Config {
        page_size: 512,
        space_manager: false,
        merge_threshold: 0.4,
        ..Config::default()
    }
}

/// A fresh value: unique in the execution (thread and sequence number after the first
/// byte), of a random length up to the model's maximum.
fn fresh_value(model: &Model, thread: usize, seq: usize) -> Vec<u8> {
    let mut rng = thread_rng();
    let len = match rng.gen_range(0..4) {
        0 => rng.gen_range(3..16),
        1 | 2 => rng.gen_range(16..model.max_value.min(128) + 1),
        _ => rng.gen_range(3..model.max_value + 1),
    };
    let mut v = vec![rng.gen::<u8>(); len];
    v[1] = thread as u8;
    v[2] = seq as u8;
    v
}

fn pick_key(model: &Model) -> usize {
    let mut rng = thread_rng();
    if rng.gen_bool(0.5) && !model.hot.is_empty() {
        rng.gen_range(model.hot.clone())
    } else {
        rng.gen_range(0..model.keys)
    }
}

fn failed<T>(r: Result<T, Error>, ok: impl FnOnce(T) -> Res) -> Res {
    match r {
        Ok(v) => ok(v),
        Err(Error::OutOfSpace { .. }) => Res::Failed,
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

/// One point operation on a random key, recorded.
fn point_op(
    model: &Model,
    tree: &Tree,
    keys: &[Vec<u8>],
    history: &History,
    thread: usize,
    seq: usize,
    write: bool,
) {
    let mut rng = thread_rng();
    let i = pick_key(model);
    let k = &keys[i][..];
    let value = |rng_seq: usize| fresh_value(model, thread, rng_seq);
    if !write {
        history.run(thread, i, Op::Get, || Res::Val(tree.get(k)));
        return;
    }
    match rng.gen_range(0..8 + model.update_bias) {
        0 | 1 => {
            let v = value(seq);
            history.run(thread, i, Op::Insert(v.clone()), || {
                failed(tree.insert(k, &v), Res::Val)
            });
        }
        2 => {
            history.run(thread, i, Op::Remove, || Res::Val(tree.remove(k)));
        }
        3 | 8.. => {
            history.run(thread, i, Op::Update, || {
                Res::Len(tree.update_with(k, |v| {
                    for _ in 0..model.holder_yields {
                        shuttle::thread::yield_now();
                    }
                    // `history::flip_ends`, with a yield between its two bytes: a reader
                    // that runs then and accepts the value has read a torn one.
                    v[0] = !v[0];
                    if let Some(last) = v.len().checked_sub(1).filter(|&l| l > 0) {
                        shuttle::thread::yield_now();
                        v[last] = !v[last];
                    }
                    v.len()
                }))
            });
        }
        4 => {
            let new = rng.gen_bool(0.8).then(|| value(seq));
            history.run(thread, i, Op::FetchUpdate(new.clone()), || {
                failed(tree.fetch_update(k, |_| new.clone()), Res::Val)
            });
        }
        5 => {
            // Expect what the key held when this thread last looked: often right.
            let current = tree.get(k);
            let new = rng.gen_bool(0.8).then(|| value(seq));
            history.run(
                thread,
                i,
                Op::CompareExchange(current.clone(), new.clone()),
                || {
                    failed(
                        tree.compare_exchange(k, current.as_deref(), new.as_deref()),
                        Res::Cas,
                    )
                },
            );
        }
        6 => {
            let v = value(seq);
            history.run(thread, i, Op::InsertIfAbsent(v.clone()), || {
                failed(tree.insert_if_absent(k, &v), Res::Bool)
            });
        }
        7 => {
            history.run(thread, i, Op::RemoveIfEven, || {
                Res::Val(tree.remove_if(k, |v| v[0] % 2 == 0))
            });
        }
    }
}

/// Records what a scan returned as observations of every key of the set it covered.
/// `covered` is the range of key indexes the scan passed over.
#[allow(clippy::too_many_arguments)]
fn record_scan(
    history: &History,
    thread: usize,
    index: &HashMap<Vec<u8>, usize>,
    seen: Vec<(Vec<u8>, Vec<u8>)>,
    forward: bool,
    covered: std::ops::Range<usize>,
    call: u64,
    ret: u64,
) {
    let mut found: HashMap<usize, Vec<u8>> = HashMap::new();
    let mut last: Option<usize> = None;
    for (k, v) in seen {
        let Some(&i) = index.get(&k) else {
            panic!("thread {thread}: a scan returned a key that was never written: {k:?}");
        };
        assert!(
            covered.contains(&i),
            "thread {thread}: a scan over keys {covered:?} returned key {i}"
        );
        if let Some(l) = last {
            assert!(
                if forward { i > l } else { i < l },
                "thread {thread}: a scan returned key {i} after key {l} (forward: {forward})"
            );
        }
        last = Some(i);
        found.insert(i, v);
    }
    for i in covered {
        history.push(Event {
            key: i,
            thread,
            op: Op::Observe,
            res: Res::Val(found.remove(&i)),
            call,
            ret,
        });
    }
}

/// A scan of a random range of the key set with a random limit, through one of the four
/// scanning interfaces (the iterator both ways, `scan`, `scan_rev`), recorded.
fn scan_op(
    model: &Model,
    tree: &Tree,
    keys: &[Vec<u8>],
    index: &HashMap<Vec<u8>, usize>,
    history: &History,
    thread: usize,
) {
    let mut rng = thread_rng();
    let lo = rng.gen_range(0..model.keys);
    let hi = rng.gen_range(lo..model.keys + 1);
    let limit = if rng.gen_bool(0.5) {
        rng.gen_range(1..6)
    } else {
        usize::MAX
    };
    let forward = rng.gen_bool(0.5);
    let bounds = (
        Bound::Included(keys[lo].clone()),
        if hi == model.keys {
            Bound::Unbounded
        } else {
            Bound::Excluded(keys[hi].clone())
        },
    );
    let via_closure = rng.gen_bool(0.5);
    history.note(thread, || {
        format!(
            "scan keys {lo}..{hi} {} via {}, limit {limit}",
            if forward { "forward" } else { "backward" },
            if via_closure {
                "scan/scan_rev"
            } else {
                "range"
            }
        )
    });
    let call = history.now();
    let mut seen = Vec::new();
    if via_closure {
        let mut f = |k: &[u8], v: &[u8]| {
            seen.push((k.to_vec(), v.to_vec()));
            if seen.len() == limit {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        if forward {
            tree.scan(bounds, &mut f);
        } else {
            tree.scan_rev(bounds, &mut f);
        }
    } else {
        let range = tree.range(bounds);
        let entries: Box<dyn Iterator<Item = _>> = if forward {
            Box::new(range)
        } else {
            Box::new(range.rev())
        };
        for (k, v) in entries.take(limit) {
            seen.push((k.to_vec(), v.to_vec()));
        }
    }
    let ret = history.now();
    // A scan cut short by its limit covered the keys up to its last one.
    let covered = match (seen.len() == limit, seen.last()) {
        (true, Some((k, _))) => {
            let last = index[k];
            if forward {
                lo..last + 1
            } else {
                last..hi
            }
        }
        _ => lo..hi,
    };
    record_scan(history, thread, index, seen, forward, covered, call, ret);
}

/// One execution of `model`.
fn execution(model: &Model, totals: &Totals) {
    let keys: Arc<Vec<Vec<u8>>> = Arc::new((0..model.keys).map(|i| key(model, i)).collect());
    let index: Arc<HashMap<Vec<u8>, usize>> = Arc::new(
        keys.iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i))
            .collect(),
    );
    let tree = Arc::new(if model.weights[4] > 0 {
        Subject::Parted(PartitionedTree::with_config(model.config.clone()).unwrap())
    } else {
        Subject::Plain(Tree::with_config(model.config.clone()).unwrap())
    });
    // Filled in a scattered order (a stride prime to the key count), so that splits leave
    // leaves half full and removals soon merge them.
    let stride = (7..).find(|s| gcd(*s, model.keys) == 1).unwrap();
    for i in (0..model.keys)
        .map(|j| j * stride % model.keys)
        .filter(|&i| (model.initially)(i))
    {
        tree.insert(&keys[i], &initial_value(i)).unwrap();
    }
    if model.mark_hot {
        tree.side_mark(&keys[model.hot.start]);
    }
    let history = Arc::new(History::default());
    let model = Arc::new(model.clone());
    let handles: Vec<_> = (0..model.threads)
        .map(|t| {
            let (tree, keys, index, history, model) = (
                tree.clone(),
                keys.clone(),
                index.clone(),
                history.clone(),
                model.clone(),
            );
            shuttle::thread::spawn(move || {
                let total: u32 = model.weights.iter().sum();
                let mark_at = thread_rng().gen_range(0..model.ops_per_thread);
                for seq in 0..model.ops_per_thread {
                    if model.mark_hot && t % 2 == 1 && seq == mark_at {
                        tree.side_mark(&keys[pick_key(&model)]);
                    }
                    let mut pick = thread_rng().gen_range(0..total);
                    let mut kind = 0;
                    while pick >= model.weights[kind] {
                        pick -= model.weights[kind];
                        kind += 1;
                    }
                    match kind {
                        0 => point_op(&model, &tree, &keys, &history, t, seq, true),
                        1 => point_op(&model, &tree, &keys, &history, t, seq, false),
                        2 => scan_op(&model, &tree, &keys, &index, &history, t),
                        3 => history.note(t, || format!("compact() -> {}", tree.compact())),
                        _ => reshape_op(&model, &tree, &keys, &history, t),
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    // The structure, and the final state seen by both scan directions.
    let name = |i: usize| format!("{i} ({:?})", String::from_utf8_lossy(&keys[i]));
    if let Err(e) = tree.check_invariants() {
        panic!(
            "invariant broken: {e}\nthe execution (scans: only the entries they saw):\n{}",
            history.dump(name)
        );
    }
    let forward: Vec<(Vec<u8>, Vec<u8>)> =
        tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let mut backward: Vec<(Vec<u8>, Vec<u8>)> = tree
        .iter()
        .rev()
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    backward.reverse();
    assert_eq!(forward, backward, "the two scan directions disagree");
    assert_eq!(tree.len(), forward.len(), "len() disagrees with a scan");
    let (call, ret) = (history.now(), history.now());
    record_scan(
        &history,
        usize::MAX,
        &index,
        forward,
        true,
        0..model.keys,
        call,
        ret,
    );

    let events = history.take_events();
    let outcome = check_linearizable(
        &events,
        model.keys,
        |i| (model.initially)(i).then(|| initial_value(i)),
        name,
    );
    if let Err(report) = outcome {
        panic!("{report}the execution:\n{}", history.dump(name));
    }

    let s = tree.stats();
    totals.executions.fetch_add(1, Ordering::Relaxed);
    totals.splits.fetch_add(s.splits, Ordering::Relaxed);
    totals.merges.fetch_add(s.merges, Ordering::Relaxed);
    totals
        .contention_splits
        .fetch_add(s.contention_splits, Ordering::Relaxed);
    totals
        .split_gate_waits
        .fetch_add(s.split_gate_waits, Ordering::Relaxed);
    totals.xmerges.fetch_add(s.xmerges, Ordering::Relaxed);
    totals.out_of_line.fetch_add(
        (s.out_of_line_values + s.out_of_line_keys) as u64,
        Ordering::Relaxed,
    );
    totals.out_of_space.fetch_add(
        events.iter().filter(|e| e.res == Res::Failed).count() as u64,
        Ordering::Relaxed,
    );
    totals
        .max_height
        .fetch_max(s.height as u64, Ordering::Relaxed);
    totals
        .ops_combined
        .fetch_add(s.ops_combined, Ordering::Relaxed);
    totals
        .side_diverted
        .fetch_add(s.side_diverted, Ordering::Relaxed);
    totals
        .line_updates
        .fetch_add(s.line_updates, Ordering::Relaxed);
    totals.line_exits.fetch_add(s.line_exits, Ordering::Relaxed);
    totals
        .line_evictions
        .fetch_add(s.line_evictions, Ordering::Relaxed);
    totals
        .mark_rejections
        .fetch_add(s.mark_rejections, Ordering::Relaxed);
    totals
        .segment_inserts
        .fetch_add(s.segment_inserts, Ordering::Relaxed);
    totals
        .segment_moves
        .fetch_add(s.segment_moves, Ordering::Relaxed);
    totals
        .leaf_restarts
        .fetch_add(s.leaf_restarts, Ordering::Relaxed);
    totals.slices.fetch_add(s.slices, Ordering::Relaxed);
    totals.melds.fetch_add(s.melds, Ordering::Relaxed);
    totals
        .cohort_latches
        .fetch_add(s.cohort_latches, Ordering::Relaxed);
}

/// The tree a model runs on: a `Tree`, or a `PartitionedTree` for models that slice and
/// meld (every other operation goes through its `Deref` to `Tree`).
enum Subject {
    Plain(Tree),
    Parted(PartitionedTree),
}

impl std::ops::Deref for Subject {
    type Target = Tree;
    fn deref(&self) -> &Tree {
        match self {
            Subject::Plain(t) => t,
            Subject::Parted(p) => p,
        }
    }
}

/// A slice at a key of the set, or a meld at one of the boundaries (which another thread
/// may have melded meanwhile). Neither changes the contents, so the history only notes it.
fn reshape_op(model: &Model, tree: &Subject, keys: &[Vec<u8>], history: &History, t: usize) {
    let Subject::Parted(tree) = tree else {
        unreachable!("reshapes run on a PartitionedTree")
    };
    let bounds = tree.boundaries();
    if !bounds.is_empty() && thread_rng().gen_bool(0.5) {
        let at = &bounds[thread_rng().gen_range(0..bounds.len())];
        let r = tree.meld(at);
        assert!(
            matches!(r, Ok(()) | Err(Error::NoSuchBoundary { .. })),
            "{r:?}"
        );
        history.note(t, || format!("meld({at:?}) -> {r:?}"));
    } else {
        let at = &keys[pick_key(model)];
        let r = tree.slice(at);
        assert!(
            matches!(
                r,
                Ok(())
                    | Err(Error::BoundaryExists { .. })
                    | Err(Error::KeyTooLarge { .. })
                    | Err(Error::OutOfSpace { .. })
            ),
            "{r:?}"
        );
        history.note(t, || format!("slice({at:?}) -> {r:?}"));
    }
}

/// Runs `body` under [`iterations`] schedules of the random scheduler and as many of the
/// PCT scheduler (depth 3), both seeded by [`seed`].
fn run_schedules(body: impl Fn() + Send + Sync + Clone + 'static) {
    run_schedules_n(iterations(), body);
}

/// [`run_schedules`] with `n` schedules of each scheduler.
fn run_schedules_n(n: usize, body: impl Fn() + Send + Sync + Clone + 'static) {
    let mut config = shuttle::Config::new();
    config.silence_warnings = true;
    shuttle::Runner::new(RandomScheduler::new_from_seed(seed(), n), config.clone())
        .run(body.clone());
    shuttle::Runner::new(PctScheduler::new_from_seed(seed(), 3, n), config).run(body);
}

/// Runs `model` under the random and the PCT scheduler; returns the totals.
fn check(model: Model) -> Arc<Totals> {
    let totals = Arc::new(Totals::default());
    if let Ok(path) = std::env::var("CONTREE_SHUTTLE_REPLAY") {
        // A file holding a schedule that a failure printed (PCT prints schedules, not
        // seeds): runs it on the model named on the command line
        // (`cargo test ... --test shuttle <model>`).
        let schedule = std::fs::read_to_string(&path).expect("CONTREE_SHUTTLE_REPLAY: a file");
        let schedule: String = schedule.split_whitespace().collect();
        let (m, t) = (model, totals.clone());
        shuttle::replay(move || execution(&m, &t), schedule.trim_matches('"'));
        return totals;
    }
    let t = totals.clone();
    run_schedules(move || execution(&model, &t));
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    eprintln!(
        "{} executions: {} splits ({} waits at split gates), {} merges, {} contention splits, {} XMerges, {} out of space, \
         {} out-of-line entries at the end, height up to {}, {} operations combined, \
         {} diverted to the side structure, {} updates in line mode, {} line mode exits ({} evictions), \
         {} mark-bit rejections, {} segment inserts, {} records moved, {} leaf phases run again, {} slices, {} melds, {} cohort latches",
        get(&totals.executions),
        get(&totals.splits),
        get(&totals.split_gate_waits),
        get(&totals.merges),
        get(&totals.contention_splits),
        get(&totals.xmerges),
        get(&totals.out_of_space),
        get(&totals.out_of_line),
        get(&totals.max_height),
        get(&totals.ops_combined),
        get(&totals.side_diverted),
        get(&totals.line_updates),
        get(&totals.line_exits),
        get(&totals.line_evictions),
        get(&totals.mark_rejections),
        get(&totals.segment_inserts),
        get(&totals.segment_moves),
        get(&totals.leaf_restarts),
        get(&totals.slices),
        get(&totals.melds),
        get(&totals.cohort_latches),
    );
    totals
}
