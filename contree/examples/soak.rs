//! The soak (issue 17, part 4): many mixed concurrent operations with every structure change
//! active, each checked as it returns, and the whole tree checked at the end.
//!
//! `scripts/soak.sh [ops] [threads] [seed]` (default 10^8 operations, 8 threads), or
//! `cargo run --release -p contree --example soak -- --ops N --threads T --seed S`.
//!
//! The tree: 1 KiB pages (the tests' `small-pages` build), a tight memory budget, merges,
//! Contention Split set to act often, the space manager (XMerge) running, values from empty
//! to 2 KiB (the larger ones out of line in the blob heap). The key space:
//! - *owned* keys: each has one writer thread, which keeps an oracle of them (keys of the
//!   threads interleave, so they share leaves). The writer inserts, replaces, updates in
//!   place, removes, compare-exchanges and reads them, in phases that grow the tree to its
//!   budget (inserts then fail with `OutOfSpace`, which must change nothing) and shrink it
//!   (merges, XMerge, `compact()`);
//! - *stable* keys: inserted first, never written again; every read and scan must see them;
//! - *counters*: 8-byte counters in one leaf that every thread increments (`update_with`,
//!   so Contention Split splits their leaf); the increments must all be there at the end.
//!
//! Every value names its key and version and carries padding derived from both, so a torn,
//! stale-for-another-key or misplaced value is caught by any reader. Scans (both
//! directions, bounded) must ascend (or descend), contain every stable key of their range,
//! and agree exactly with the scanning thread's oracle on its own keys. Every 1/65536 of the
//! operations a thread calls `compact()`. At the end: `check_invariants`, the contents equal
//! the oracles, stable keys and counters merged, and `len()` agrees.
//!
//! Prints progress every 10 s and a summary: operations by kind, errors by kind, and
//! mismatches (the first ones in full). Exits non-zero on any mismatch.

use contree::{Config, Error, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const OWNED_PER_THREAD: u32 = 12_000;
const STABLE: u32 = 20_000;
const COUNTERS: u32 = 16;
const PHASE_OPS: u64 = 150_000;

struct Args {
    ops: u64,
    threads: usize,
    seed: u64,
}

fn args() -> Args {
    let mut a = Args {
        ops: 100_000_000,
        threads: 8,
        seed: 1,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = argv.get(i + 1).map(|v| v.replace('_', ""));
        let number = || -> u64 {
            value
                .as_deref()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{} needs a number", argv[i]))
        };
        match argv[i].as_str() {
            "--ops" => a.ops = number(),
            "--threads" => a.threads = number().max(1) as usize,
            "--seed" => a.seed = number(),
            other => panic!("unknown argument {other}: --ops N --threads T --seed S"),
        }
        i += 2;
    }
    a
}

// ---- keys and values ----------------------------------------------------------------------

/// Owned key `i` of thread `t`, stable key `i`, counter `i`: all in one ordered space, owned
/// keys of different threads interleaved, stable keys among them.
fn owned_key(t: usize, i: u32) -> Vec<u8> {
    let mut k = b"o".to_vec();
    k.extend_from_slice(&(i * 2).to_be_bytes());
    k.push(t as u8);
    k
}

fn stable_key(i: u32) -> Vec<u8> {
    let mut k = b"o".to_vec();
    k.extend_from_slice(&(i * (2 * OWNED_PER_THREAD / STABLE).max(1) * 2 + 1).to_be_bytes());
    k.push(0xff);
    k
}

fn counter_key(i: u32) -> Vec<u8> {
    format!("counter{i:02}").into_bytes()
}

/// A value for `key` at `version`, `len` bytes (at least 12): the key's hash, the version,
/// then padding that depends on both.
fn value(key: &[u8], version: u32, len: usize) -> Vec<u8> {
    let h = hash(key);
    let mut v = Vec::with_capacity(len.max(12));
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    let mut x = h ^ u64::from(version).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while v.len() < len.max(12) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(x as u8);
    }
    v
}

fn hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether `v` is a whole value of `key` (any version).
fn well_formed(key: &[u8], v: &[u8]) -> bool {
    if v.len() < 12 {
        return false;
    }
    let version = u32::from_le_bytes(v[8..12].try_into().unwrap());
    v == value(key, version, v.len()).as_slice()
}

fn value_len(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..100) {
        0..=89 => rng.gen_range(12..64),
        90..=97 => rng.gen_range(64..256),
        _ => rng.gen_range(256..2048),
    }
}

// ---- results --------------------------------------------------------------------------------

/// A thread's own keys and their values.
type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Default)]
struct Tally {
    ops: [u64; 10],
    out_of_space: u64,
    other_errors: u64,
    increments: Vec<u64>,
    mismatches: u64,
}

const KINDS: [&str; 10] = [
    "insert",
    "remove",
    "update_with",
    "compare_exchange",
    "get (own)",
    "get (other, stable)",
    "counter",
    "scan forward",
    "scan backward",
    "compact",
];

struct Shared {
    tree: Tree,
    done: AtomicU64,
    stop: AtomicBool,
    mismatch_log: Mutex<Vec<String>>,
    /// The stable keys, ascending.
    stable: Vec<Vec<u8>>,
}

impl Shared {
    fn mismatch(&self, tally: &mut Tally, what: String) {
        tally.mismatches += 1;
        let mut log = self.mismatch_log.lock().unwrap();
        if log.len() < 20 {
            eprintln!("MISMATCH: {what}");
            log.push(what);
        }
    }
}

fn worker(shared: &Shared, me: usize, threads: usize, ops: u64, seed: u64) -> (Tally, Oracle) {
    let tree = &shared.tree;
    let mut rng = StdRng::seed_from_u64(seed ^ (me as u64 + 1).wrapping_mul(0x9E37_79B9));
    let mut mine: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut t = Tally {
        increments: vec![0; COUNTERS as usize],
        ..Tally::default()
    };
    let mut version = 0u32;
    for n in 0..ops {
        if n % 4096 == 0 {
            shared.done.fetch_add(4096.min(ops - n), Ordering::Relaxed);
            if shared.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        if n % 65_536 == 65_535 {
            t.ops[9] += 1;
            tree.compact();
            continue;
        }
        // Phases: growing (inserts win) and shrinking (removes win), shifted per thread.
        let growing = ((n + me as u64 * PHASE_OPS / 3) / PHASE_OPS).is_multiple_of(2);
        let i = rng.gen_range(0..OWNED_PER_THREAD);
        let k = owned_key(me, i);
        let r = rng.gen_range(0..1000);
        let (insert_share, remove_share) = if growing { (450, 550) } else { (150, 550) };
        if r < insert_share {
            t.ops[0] += 1;
            version += 1;
            let v = value(&k, version, value_len(&mut rng));
            match tree.insert(&k, &v) {
                Ok(old) => {
                    let want = mine.insert(k.clone(), v);
                    if old != want {
                        shared.mismatch(
                            &mut t,
                            format!("insert {k:?}: old {old:?}, oracle {want:?}"),
                        );
                    }
                }
                Err(Error::OutOfSpace { .. }) => {
                    t.out_of_space += 1;
                    // Nothing changed.
                    if tree.get(&k) != mine.get(&k).cloned() {
                        shared.mismatch(&mut t, format!("failed insert of {k:?} changed it"));
                    }
                }
                Err(e) => {
                    t.other_errors += 1;
                    shared.mismatch(&mut t, format!("insert {k:?}: unexpected {e}"));
                }
            }
        } else if r < remove_share {
            t.ops[1] += 1;
            let got = tree.remove(&k);
            let want = mine.remove(&k);
            if got != want {
                shared.mismatch(&mut t, format!("remove {k:?}: {got:?}, oracle {want:?}"));
            }
        } else if r < 620 {
            t.ops[2] += 1;
            // In place: a new version of the same length.
            version += 1;
            let ver = version;
            let key = k.clone();
            let got = tree.update_with(&k, |v| {
                let fresh = value(&key, ver, v.len());
                v.copy_from_slice(&fresh);
            });
            match (got, mine.get_mut(&k)) {
                (Some(()), Some(v)) => *v = value(&k, ver, v.len()),
                (None, None) => {}
                (got, want) => {
                    let what = format!("update_with {k:?}: {got:?}, oracle {want:?}");
                    shared.mismatch(&mut t, what);
                }
            }
        } else if r < 660 {
            t.ops[3] += 1;
            // Either the right current value or a wrong one.
            version += 1;
            let new = value(&k, version, value_len(&mut rng));
            let right = rng.gen_bool(0.8);
            let current = if right {
                mine.get(&k).cloned()
            } else {
                Some(value(&k, 0, 3))
            };
            match tree.compare_exchange(&k, current.as_deref(), Some(&new)) {
                Ok(Ok(())) => {
                    if !right {
                        shared.mismatch(
                            &mut t,
                            format!("compare_exchange {k:?} took a wrong current"),
                        );
                    }
                    mine.insert(k, new);
                }
                Ok(Err(actual)) => {
                    if right || actual != mine.get(&k).cloned() {
                        let what = format!("compare_exchange {k:?}: refused, actual {actual:?}");
                        shared.mismatch(&mut t, what);
                    }
                }
                Err(Error::OutOfSpace { .. }) => {
                    t.out_of_space += 1;
                    if tree.get(&k) != mine.get(&k).cloned() {
                        shared.mismatch(&mut t, format!("failed compare_exchange changed {k:?}"));
                    }
                }
                Err(e) => {
                    t.other_errors += 1;
                    shared.mismatch(&mut t, format!("compare_exchange {k:?}: unexpected {e}"));
                }
            }
        } else if r < 780 {
            t.ops[4] += 1;
            let got = tree.get(&k);
            if got.as_ref() != mine.get(&k) {
                shared.mismatch(
                    &mut t,
                    format!("get {k:?}: {got:?}, oracle {:?}", mine.get(&k)),
                );
            }
        } else if r < 880 {
            t.ops[5] += 1;
            // Another thread's key (whole if present) or a stable key (always present).
            if rng.gen_bool(0.5) {
                let other = owned_key(rng.gen_range(0..threads), i);
                if let Some(v) = tree.get(&other) {
                    if !well_formed(&other, &v) {
                        shared.mismatch(&mut t, format!("get {other:?}: malformed {v:?}"));
                    }
                }
            } else {
                let s = stable_key(rng.gen_range(0..STABLE));
                match tree.get(&s) {
                    Some(v) if well_formed(&s, &v) => {}
                    v => shared.mismatch(&mut t, format!("stable {s:?}: {v:?}")),
                }
            }
        } else if r < 960 {
            t.ops[6] += 1;
            let c = rng.gen_range(0..COUNTERS);
            let got = tree.update_with(&counter_key(c), |v| {
                let x = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
                v[..8].copy_from_slice(&x.to_le_bytes());
            });
            match got {
                Some(()) => t.increments[c as usize] += 1,
                None => shared.mismatch(&mut t, format!("counter {c} missing")),
            }
        } else {
            let forward = rng.gen_bool(0.5);
            t.ops[if forward { 7 } else { 8 }] += 1;
            scan(shared, &mut t, me, &mine, &mut rng, forward);
        }
    }
    (t, mine)
}

/// A bounded scan from a random owned key of `me`: order, stable keys of the range, and
/// `me`'s own keys of the range exactly as its oracle has them.
fn scan(
    shared: &Shared,
    t: &mut Tally,
    me: usize,
    mine: &BTreeMap<Vec<u8>, Vec<u8>>,
    rng: &mut StdRng,
    forward: bool,
) {
    let tree = &shared.tree;
    let from = owned_key(me, rng.gen_range(0..OWNED_PER_THREAD));
    let limit = rng.gen_range(1..200);
    let items: Vec<(Vec<u8>, Vec<u8>)> = if forward {
        tree.range((Bound::Included(from.as_slice()), Bound::Unbounded))
            .take(limit)
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect()
    } else {
        tree.range((Bound::Unbounded, Bound::Included(from.as_slice())))
            .rev()
            .take(limit)
            .map(|(k, v)| (k.into_vec(), v.into_vec()))
            .collect()
    };
    for w in items.windows(2) {
        if (w[0].0 < w[1].0) != forward || w[0].0 == w[1].0 {
            shared.mismatch(
                t,
                format!("scan out of order: {:?} then {:?}", w[0].0, w[1].0),
            );
            return;
        }
    }
    // The range the scan covered, as ascending bounds.
    let (lo, hi): (Vec<u8>, Option<Vec<u8>>) = match (forward, items.len() == limit) {
        (true, true) => (from.clone(), Some(items.last().unwrap().0.clone())),
        (true, false) => (from.clone(), None),
        (false, true) => (items.last().unwrap().0.clone(), Some(from.clone())),
        (false, false) => (Vec::new(), Some(from.clone())),
    };
    let within = |k: &[u8]| k >= lo.as_slice() && hi.as_deref().is_none_or(|h| k <= h);
    let mut got_mine = Vec::new();
    let mut got_stable = 0usize;
    for (k, v) in &items {
        if !k.starts_with(b"counter") && !well_formed(k, v) {
            shared.mismatch(t, format!("scan: malformed value of {k:?}"));
        }
        if k.len() == 6 && k[5] == me as u8 {
            got_mine.push((k, v));
        } else if k.len() == 6 && k[5] == 0xff {
            got_stable += 1;
        }
    }
    let want_mine: Vec<_> = mine
        .range(lo.clone()..)
        .take_while(|(k, _)| within(k))
        .collect();
    let mut got_sorted = got_mine.clone();
    got_sorted.sort();
    if got_sorted != want_mine {
        let what = format!(
            "scan ({}) from {from:?}: {} own keys, oracle {}",
            if forward { "forward" } else { "backward" },
            got_sorted.len(),
            want_mine.len()
        );
        shared.mismatch(t, what);
    }
    let want_stable = shared.stable[..]
        .partition_point(|k| hi.as_deref().is_none_or(|h| k.as_slice() <= h))
        - shared
            .stable
            .partition_point(|k| k.as_slice() < lo.as_slice());
    if got_stable != want_stable {
        let what = format!("scan from {from:?}: {got_stable} stable keys of {want_stable}");
        shared.mismatch(t, what);
    }
}

fn main() {
    let a = args();
    let config = Config {
        page_size: 1024,
        max_memory: 8 << 20,
        contention_sample_shift: 1,
        contention_period_shift: 6,
        contention_threshold: 0.05,
        fill_target: 0.9,
        space_manager_share: 1.0,
        ..Config::default()
    };
    println!(
        "# soak: {} ops, {} threads, seed {}; {config:?}",
        a.ops, a.threads, a.seed
    );
    let shared = Shared {
        tree: Tree::with_config(config).expect("config"),
        done: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        mismatch_log: Mutex::new(Vec::new()),
        stable: (0..STABLE).map(stable_key).collect(),
    };
    assert!(shared.stable.windows(2).all(|w| w[0] < w[1]));
    for i in 0..STABLE {
        let k = stable_key(i);
        shared
            .tree
            .insert(&k, &value(&k, 0, 16 + (i % 48) as usize))
            .unwrap();
    }
    for c in 0..COUNTERS {
        shared
            .tree
            .insert(&counter_key(c), &0u64.to_le_bytes())
            .unwrap();
    }
    let start = Instant::now();
    let results: Vec<(Tally, Oracle)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..a.threads)
            .map(|me| {
                let shared = &shared;
                let per = a.ops / a.threads as u64;
                s.spawn(move || worker(shared, me, a.threads, per, a.seed))
            })
            .collect();
        let reporter = s.spawn(|| {
            let mut next = Duration::from_secs(10);
            while !handles_done(&shared, a.ops) {
                std::thread::sleep(Duration::from_millis(100));
                if start.elapsed() >= next {
                    next += Duration::from_secs(10);
                    let done = shared.done.load(Ordering::Relaxed);
                    let st = shared.tree.stats();
                    println!(
                        "{:>6.0} s: {done} ops ({:.2} Mops/s); {} entries, {} leaves, height {}, \
                         {} splits, {} merges, {} contention splits, {} xmerges, {} KiB",
                        start.elapsed().as_secs_f64(),
                        done as f64 / start.elapsed().as_secs_f64() / 1e6,
                        st.len,
                        st.leaf_pages,
                        st.height,
                        st.splits,
                        st.merges,
                        st.contention_splits,
                        st.xmerges,
                        st.bytes_allocated >> 10
                    );
                }
            }
        });
        let results = handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(e) => {
                    shared.stop.store(true, Ordering::Relaxed);
                    std::panic::resume_unwind(e)
                }
            })
            .collect();
        shared.stop.store(true, Ordering::Relaxed);
        reporter.join().unwrap();
        results
    });
    let elapsed = start.elapsed();

    // The end: the whole tree against the merged oracles.
    let tree = &shared.tree;
    let mut total = Tally {
        increments: vec![0; COUNTERS as usize],
        ..Tally::default()
    };
    let mut expect: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (t, mine) in results {
        for (a, b) in total.ops.iter_mut().zip(t.ops) {
            *a += b;
        }
        for (a, b) in total.increments.iter_mut().zip(&t.increments) {
            *a += b;
        }
        total.out_of_space += t.out_of_space;
        total.other_errors += t.other_errors;
        total.mismatches += t.mismatches;
        expect.extend(mine);
    }
    for i in 0..STABLE {
        let k = stable_key(i);
        let v = value(&k, 0, 16 + (i % 48) as usize);
        expect.insert(k, v);
    }
    for c in 0..COUNTERS {
        expect.insert(
            counter_key(c),
            total.increments[c as usize].to_le_bytes().to_vec(),
        );
    }
    let mut end_problems = Vec::new();
    if let Err(e) = tree.check_invariants() {
        end_problems.push(format!("invariants: {e}"));
    }
    let got: BTreeMap<Vec<u8>, Vec<u8>> = tree
        .iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    if got != expect {
        let differing = got
            .iter()
            .zip(&expect)
            .find(|(g, e)| g != e)
            .map(|(g, e)| format!("first difference: {:?} vs expected {:?}", g.0, e.0));
        end_problems.push(format!(
            "contents: {} entries, expected {}; {}",
            got.len(),
            expect.len(),
            differing.unwrap_or_default()
        ));
    }
    if tree.len() != expect.len() {
        end_problems.push(format!("len() {} expected {}", tree.len(), expect.len()));
    }
    let st = tree.stats();
    let ops: u64 = total.ops.iter().sum();
    println!(
        "# soak done: {ops} operations by {} threads in {:.1} s ({:.2} Mops/s)",
        a.threads,
        elapsed.as_secs_f64(),
        ops as f64 / elapsed.as_secs_f64() / 1e6
    );
    for (kind, n) in KINDS.iter().zip(total.ops) {
        println!("#   {kind:<20} {n}");
    }
    println!(
        "# errors: {} OutOfSpace (each checked to change nothing), {} other",
        total.out_of_space, total.other_errors
    );
    println!(
        "# counters: {} increments, all present",
        total.increments.iter().sum::<u64>()
    );
    println!(
        "# structure: {} splits, {} merges, {} contention splits, {} xmerges, {} heap packs, \
         {} pages freed; final {} entries, height {}, fill {:.3}, {} KiB",
        st.splits,
        st.merges,
        st.contention_splits,
        st.xmerges,
        st.heap_packs,
        st.pages_freed,
        st.len,
        st.height,
        st.fill_factor,
        st.bytes_allocated >> 10
    );
    println!(
        "# mismatches: {} during the run, {} at the end",
        total.mismatches,
        end_problems.len()
    );
    for p in &end_problems {
        println!("#   {p}");
    }
    if total.mismatches > 0 || !end_problems.is_empty() {
        std::process::exit(1);
    }
}

fn handles_done(shared: &Shared, ops: u64) -> bool {
    shared.stop.load(Ordering::Relaxed) || shared.done.load(Ordering::Relaxed) >= ops
}
