//! Concurrent stress tests with an oracle, run by 4 threads on overlapping key ranges.
//!
//! `mixed_workload_matches_oracle`: 4 threads run (by default) 2 million operations in
//! total — inserts, removes, in-place updates, gets, `get_with`, `contains_key`, and scans
//! in both directions — over one shared key space. Each writable key has exactly one writer
//! thread (keys of different owners are interleaved, so they share leaves), every thread
//! reads and scans everything, some keys are never written after the start ("stable") and
//! some are 8-byte little-endian counters that every thread increments with `update_with`.
//! Checked while running: each result a thread gets for its own keys equals its local
//! model; every value read is self-consistent (it names its key and its padding matches its
//! version, so torn or misplaced values are caught); scans come back strictly sorted, without
//! duplicates, and complete for every key nobody changes during the scan (stable keys,
//! counters, and the scanning thread's own keys). Checked at the end: the counters lost no
//! increment, the contents equal the owners' models merged, `len()` agrees and
//! `check_invariants()` passes.
//!
//! `mixed_workload_at_other_page_sizes` runs it at 512-byte (values out of line in the blob
//! heap, a tree of four levels), 16 KiB and 64 KiB pages.
//!
//! `splits_and_merges_under_load`: 4 KiB pages (`..._at_other_page_sizes`: 512 bytes and
//! 64 KiB); each thread inserts its share of many keys and
//! then removes most of them, for several rounds, while also reading and scanning the other
//! threads' keys. The tree must report both splits and merges, and end exactly as expected.
//!
//! Environment: `CONTREE_STRESS_OPS` sets the operation count of the mixed workload (the
//! split/merge test scales with it; `scripts/tsan.sh` uses a smaller value under
//! ThreadSanitizer), `CONTREE_STRESS_THREADS` raises the thread count (default 4) and
//! `STRESS_SEED` changes the random seed. Run: `cargo test -p contree --test stress`.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Bytes, Config, Tree};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Duration;
use std::time::Instant;

/// Worker threads per test: `CONTREE_STRESS_THREADS`, at least (and by default) 4.
fn threads() -> usize {
    std::env::var("CONTREE_STRESS_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
        .max(4)
}
const DEFAULT_OPS: usize = 2_000_000;

fn total_ops() -> usize {
    std::env::var("CONTREE_STRESS_OPS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(DEFAULT_OPS)
}

fn seed() -> u64 {
    std::env::var("STRESS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED)
}

// ---- keys and values --------------------------------------------------------------------

/// Key `id`: `"s/"`, the big-endian id (so keys sort by id), then 0..12 filler bytes so that
/// key lengths vary.
fn key(id: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(18);
    k.extend_from_slice(b"s/");
    k.extend_from_slice(&id.to_be_bytes());
    k.extend(std::iter::repeat_n(
        b'a' + (id % 26) as u8,
        (id % 7) as usize * 2,
    ));
    k
}

/// The id of a key made by [`key`]; panics (failing the test) on any other byte string.
/// A range item as vectors.
fn vecs((k, v): (Bytes, Bytes)) -> (Vec<u8>, Vec<u8>) {
    (k.into_vec(), v.into_vec())
}

fn key_id(k: &[u8]) -> u32 {
    assert!(k.len() >= 6 && &k[..2] == b"s/", "foreign key {k:x?}");
    let id = u32::from_be_bytes(k[2..6].try_into().unwrap());
    assert_eq!(k, key(id).as_slice(), "malformed key for id {id}");
    id
}

/// A value: id (u32 LE), version (u32 LE), padding length (u8), then padding bytes that
/// depend on id, version and position. Any torn, misplaced or stale-mixed value fails
/// [`check_value`].
fn value(id: u32, version: u32, pad: u8) -> Vec<u8> {
    let mut v = Vec::with_capacity(9 + pad as usize);
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&version.to_le_bytes());
    v.push(pad);
    v.extend((0..pad as u32).map(|j| pad_byte(id, version, j)));
    v
}

fn pad_byte(id: u32, version: u32, j: u32) -> u8 {
    (id.wrapping_mul(31) ^ version.wrapping_mul(17) ^ j) as u8
}

/// Checks that `v` is a whole value written for `id`; returns its version.
fn check_value(id: u32, v: &[u8]) -> u32 {
    assert!(v.len() >= 9, "value of key {id} too short: {v:x?}");
    let vid = u32::from_le_bytes(v[0..4].try_into().unwrap());
    let version = u32::from_le_bytes(v[4..8].try_into().unwrap());
    let pad = v[8] as usize;
    assert_eq!(vid, id, "value of key {id} belongs to key {vid}");
    assert_eq!(v.len(), 9 + pad, "value of key {id} has the wrong length");
    for (j, &b) in v[9..].iter().enumerate() {
        assert_eq!(
            b,
            pad_byte(id, version, j as u32),
            "torn value of key {id} at byte {j}"
        );
    }
    version
}

/// Rewrites a value in place to the next version (same length), as an owner's update.
fn bump_in_place(id: u32, v: &mut [u8]) -> u32 {
    let version = check_value(id, v) + 1_000_000;
    v[4..8].copy_from_slice(&version.to_le_bytes());
    for j in 0..v[8] as u32 {
        v[9 + j as usize] = pad_byte(id, version, j);
    }
    version
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    /// Inserted before the threads start and never written again.
    Stable,
    /// An 8-byte little-endian counter that every thread increments; never removed.
    Counter(usize),
    /// Written (inserted, replaced, updated, removed) only by this thread.
    Owned(usize),
}

struct Layout {
    keys: u32,
    threads: usize,
    counters: Vec<u32>,
    /// The smallest and the largest id that is always present (stable or counter).
    first_fixed: u32,
    last_fixed: u32,
}

impl Layout {
    fn new(keys: u32) -> Layout {
        let mut layout = Layout {
            keys,
            threads: threads(),
            counters: (0..keys).filter(|i| i % 509 == 13).collect(),
            first_fixed: 0,
            last_fixed: 0,
        };
        let fixed = |id: &u32| !matches!(layout.class(*id), Class::Owned(_));
        let first_fixed = (0..keys).find(fixed).unwrap();
        let last_fixed = (0..keys).rev().find(fixed).unwrap();
        layout.first_fixed = first_fixed;
        layout.last_fixed = last_fixed;
        layout
    }

    fn class(&self, id: u32) -> Class {
        if id % 509 == 13 {
            Class::Counter((id / 509) as usize)
        } else if id % 8 == 5 {
            Class::Stable
        } else {
            Class::Owned((id as usize / 3) % self.threads)
        }
    }

    fn stable_value(id: u32) -> Vec<u8> {
        value(id, 0, (id % 40) as u8)
    }

    /// Whether nobody but `me` changes the presence of `id` (so a scan by `me` must see it
    /// exactly when `me`'s model has it).
    fn presence_known_to(&self, id: u32, me: usize, mine: &BTreeMap<u32, Vec<u8>>) -> Option<bool> {
        match self.class(id) {
            Class::Stable | Class::Counter(_) => Some(true),
            Class::Owned(t) if t == me => Some(mine.contains_key(&id)),
            Class::Owned(_) => None,
        }
    }
}

/// Checks a value read for `id` by thread `me`.
fn check_read(
    layout: &Layout,
    me: usize,
    mine: &BTreeMap<u32, Vec<u8>>,
    id: u32,
    got: Option<&[u8]>,
) {
    match layout.class(id) {
        Class::Stable => assert_eq!(
            got,
            Some(Layout::stable_value(id).as_slice()),
            "stable key {id} read wrongly"
        ),
        Class::Counter(_) => {
            let v = got.unwrap_or_else(|| panic!("counter {id} missing"));
            assert_eq!(v.len(), 8, "counter {id} has length {}", v.len());
        }
        Class::Owned(t) if t == me => assert_eq!(
            got,
            mine.get(&id).map(|v| v.as_slice()),
            "own key {id} differs from the owner's model"
        ),
        Class::Owned(_) => {
            if let Some(v) = got {
                check_value(id, v);
            }
        }
    }
}

/// Checks one scan's output: order, no duplicates, well-formed entries, and completeness
/// over `[covered_lo, covered_hi]` for every key whose presence does not change.
#[allow(clippy::too_many_arguments)]
fn check_scan(
    layout: &Layout,
    me: usize,
    mine: &BTreeMap<u32, Vec<u8>>,
    items: &[(Vec<u8>, Vec<u8>)],
    forward: bool,
    covered_lo: u32,
    covered_hi: u32,
) {
    let ids: Vec<u32> = items.iter().map(|(k, _)| key_id(k)).collect();
    for w in ids.windows(2) {
        let ok = if forward { w[0] < w[1] } else { w[0] > w[1] };
        assert!(
            ok,
            "scan (forward={forward}) out of order or duplicated: {} then {}",
            w[0], w[1]
        );
    }
    for ((_, v), &id) in items.iter().zip(&ids) {
        assert!(
            (covered_lo..=covered_hi).contains(&id),
            "scan returned key {id} outside [{covered_lo}, {covered_hi}]"
        );
        check_read(layout, me, mine, id, Some(v));
    }
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    for id in covered_lo..=covered_hi.min(layout.keys - 1) {
        if let Some(present) = layout.presence_known_to(id, me, mine) {
            let found = sorted.binary_search(&id).is_ok();
            assert_eq!(
                found,
                present,
                "scan (forward={forward}) over [{covered_lo}, {covered_hi}]: key {id} ({:?}) \
                 found={found}, expected {present}",
                layout.class(id)
            );
        }
    }
}

fn counter_add(tree: &Tree, id: u32) -> Option<u64> {
    tree.update_with(&key(id), |v| {
        let n = u64::from_le_bytes(v[..8].try_into().unwrap()) + 1;
        v[..8].copy_from_slice(&n.to_le_bytes());
        n
    })
}

// ---- the mixed workload -----------------------------------------------------------------

struct Outcome {
    mine: BTreeMap<u32, Vec<u8>>,
    increments: Vec<u64>,
    scans: u64,
    scanned: u64,
}

fn worker(tree: &Tree, layout: &Layout, me: usize, ops: usize, seed: u64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed ^ (me as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let owned: Vec<u32> = (0..layout.keys)
        .filter(|&i| layout.class(i) == Class::Owned(me))
        .collect();
    let mut mine: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut increments = vec![0u64; layout.counters.len()];
    let mut version = 0u32;
    let (mut scans, mut scanned) = (0u64, 0u64);
    for _ in 0..ops {
        let r = rng.gen_range(0..100);
        match r {
            // Insert or replace an own key, with values of varying size.
            0..=24 => {
                let id = owned[rng.gen_range(0..owned.len())];
                version += 1;
                let pad = if rng.gen_ratio(1, 20) {
                    rng.gen_range(0..=255)
                } else {
                    rng.gen_range(0..48)
                };
                let v = value(id, version, pad);
                let old = tree.insert(&key(id), &v).expect("insert");
                assert_eq!(
                    old,
                    mine.insert(id, v),
                    "insert of own key {id} returned a wrong old value"
                );
            }
            // Remove an own key.
            25..=39 => {
                let id = owned[rng.gen_range(0..owned.len())];
                assert_eq!(
                    tree.remove(&key(id)),
                    mine.remove(&id),
                    "remove of own key {id}"
                );
            }
            // Update an own key in place.
            40..=47 => {
                let id = owned[rng.gen_range(0..owned.len())];
                let got = tree.update_with(&key(id), |v| bump_in_place(id, v));
                let want = mine.get_mut(&id).map(|v| bump_in_place(id, v));
                assert_eq!(got, want, "update_with of own key {id}");
            }
            // Increment a shared counter.
            48..=57 => {
                let c = rng.gen_range(0..layout.counters.len());
                assert!(
                    counter_add(tree, layout.counters[c]).is_some(),
                    "counter vanished"
                );
                increments[c] += 1;
            }
            // Point reads of any key.
            58..=81 => {
                let id = rng.gen_range(0..layout.keys);
                let got = tree.get(&key(id));
                check_read(layout, me, &mine, id, got.as_deref());
            }
            82..=85 => {
                let id = rng.gen_range(0..layout.keys);
                let got = tree.contains_key(&key(id));
                if let Some(present) = layout.presence_known_to(id, me, &mine) {
                    assert_eq!(got, present, "contains_key({id})");
                }
            }
            86..=90 => {
                let id = rng.gen_range(0..layout.keys);
                let got = tree.get_with(&key(id), |v| v.to_vec());
                check_read(layout, me, &mine, id, got.as_deref());
            }
            // first() and last(): the smallest and largest keys, well-formed.
            91 => {
                let (k, v) = tree.first().expect("tree has stable keys");
                let id = key_id(&k);
                assert!(id <= layout.first_fixed, "first() returned {id}");
                check_read(layout, me, &mine, id, Some(&v));
                let (k, v) = tree.last().expect("tree has stable keys");
                let id = key_id(&k);
                assert!(id >= layout.last_fixed, "last() returned {id}");
                check_read(layout, me, &mine, id, Some(&v));
            }
            // Scans of up to 100 entries, in either direction.
            _ => {
                let limit = rng.gen_range(1..=100usize);
                let a = rng.gen_range(0..layout.keys);
                let b = (a + rng.gen_range(0..2_000)).min(layout.keys - 1);
                let ka = key(a);
                let kb = key(b);
                let bounded = rng.gen_bool(0.5);
                scans += 1;
                if rng.gen_bool(0.5) {
                    let hi = if bounded {
                        Bound::Included(kb.as_slice())
                    } else {
                        Bound::Unbounded
                    };
                    let range = (Bound::Included(ka.as_slice()), hi);
                    let items: Vec<_> = tree.range(range).take(limit).map(vecs).collect();
                    scanned += items.len() as u64;
                    let covered_hi = if items.len() == limit {
                        key_id(&items[limit - 1].0)
                    } else if bounded {
                        b
                    } else {
                        layout.keys - 1
                    };
                    check_scan(layout, me, &mine, &items, true, a, covered_hi);
                } else {
                    let lo = if bounded {
                        Bound::Included(ka.as_slice())
                    } else {
                        Bound::Unbounded
                    };
                    let range = (lo, Bound::Included(kb.as_slice()));
                    let items: Vec<_> = tree.range(range).rev().take(limit).map(vecs).collect();
                    scanned += items.len() as u64;
                    let covered_lo = if items.len() == limit {
                        key_id(&items[limit - 1].0)
                    } else if bounded {
                        a
                    } else {
                        0
                    };
                    check_scan(layout, me, &mine, &items, false, covered_lo, b);
                }
            }
        }
    }
    Outcome {
        mine,
        increments,
        scans,
        scanned,
    }
}

#[test]
fn mixed_workload_matches_oracle() {
    let _watchdog = watchdog("mixed_workload_matches_oracle", Duration::from_secs(600));
    mixed_workload(Config::default(), total_ops());
}

/// The mixed workload at the other page sizes, a quarter of the operations each: 512 bytes
/// (the tests build with `small-pages`; most values go out of line into the blob heap, and
/// the tree is deep), 16 KiB and 64 KiB.
#[test]
fn mixed_workload_at_other_page_sizes() {
    let _watchdog = watchdog(
        "mixed_workload_at_other_page_sizes",
        Duration::from_secs(600),
    );
    for page_size in [512, 16 * 1024, 64 * 1024] {
        let config = Config {
            page_size,
            ..Config::default()
        };
        mixed_workload(config, total_ops() / 4);
    }
}

fn mixed_workload(config: Config, ops: usize) {
    let layout = Layout::new(24_000);
    let page_size = config.page_size;
    let tree = Tree::with_config(config).unwrap();
    for id in 0..layout.keys {
        match layout.class(id) {
            Class::Stable => {
                tree.insert(&key(id), &Layout::stable_value(id)).unwrap();
            }
            Class::Counter(_) => {
                tree.insert(&key(id), &0u64.to_le_bytes()).unwrap();
            }
            Class::Owned(_) => {}
        }
    }
    let start = Instant::now();
    let seed = seed();
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..layout.threads)
            .map(|me| {
                let (tree, layout) = (&tree, &layout);
                s.spawn(move || worker(tree, layout, me, ops / layout.threads, seed))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let elapsed = start.elapsed();

    // The expected final state.
    let mut expect: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut increments = vec![0u64; layout.counters.len()];
    for o in &outcomes {
        for (&id, v) in &o.mine {
            expect.insert(key(id), v.clone());
        }
        for (sum, n) in increments.iter_mut().zip(&o.increments) {
            *sum += n;
        }
    }
    for id in 0..layout.keys {
        match layout.class(id) {
            Class::Stable => {
                expect.insert(key(id), Layout::stable_value(id));
            }
            Class::Counter(c) => {
                expect.insert(key(id), increments[c].to_le_bytes().to_vec());
            }
            Class::Owned(_) => {}
        }
    }

    for (c, &id) in layout.counters.iter().enumerate() {
        let got = tree
            .get(&key(id))
            .map(|v| u64::from_le_bytes(v[..8].try_into().unwrap()));
        assert_eq!(got, Some(increments[c]), "counter {c} lost updates");
    }
    tree.check_invariants()
        .expect("invariants after the mixed workload");
    assert_eq!(tree.len(), expect.len(), "len()");
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(vecs).collect();
    assert_eq!(got.len(), expect.len(), "number of entries");
    for ((gk, gv), (ek, ev)) in got.iter().zip(&expect) {
        assert_eq!(gk, ek, "first differing key");
        assert_eq!(gv, ev, "value of key {}", key_id(gk));
    }
    let stats = tree.stats();
    eprintln!(
        "mixed workload, {page_size}-byte pages: {ops} ops by {} threads in {elapsed:.2?} \
         ({:.2} Mops/s); {} scans returned {} entries; final {} entries; {stats:?}",
        layout.threads,
        ops as f64 / elapsed.as_secs_f64() / 1e6,
        outcomes.iter().map(|o| o.scans).sum::<u64>(),
        outcomes.iter().map(|o| o.scanned).sum::<u64>(),
        expect.len(),
    );
    assert!(stats.splits > 0);
}

// ---- splits and merges ------------------------------------------------------------------

/// Key of entry `i` of thread `t` in the split/merge test: interleaved between threads so
/// that all threads split and merge the same leaves.
fn sm_key(i: u32, t: usize) -> Vec<u8> {
    let mut k = b"m/".to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k.push(t as u8);
    k
}

fn sm_value(i: u32, t: usize, round: u32) -> Vec<u8> {
    let len = 16 + ((i as usize * 7 + t * 13 + round as usize) % 90);
    let mut v = vec![(i ^ round) as u8; len];
    v[..4].copy_from_slice(&i.to_le_bytes());
    v[4] = t as u8;
    v
}

fn sm_check(k: &[u8], v: &[u8]) {
    assert_eq!(k.len(), 7, "foreign key {k:x?}");
    let i = u32::from_be_bytes(k[2..6].try_into().unwrap());
    assert_eq!(&v[..4], &i.to_le_bytes(), "value under the wrong key");
    assert_eq!(v[4], k[6], "value of the wrong thread");
    assert!(v[5..].iter().all(|&b| b == v[5]), "torn value");
}

/// Checks a scan of the split/merge test: sorted in the scan's direction, well-formed, and,
/// for thread `t`'s own keys (which only `t` changes), exactly `mine` over the covered
/// interval `(lo, hi)`.
fn sm_check_scan(
    items: &[(Vec<u8>, Vec<u8>)],
    forward: bool,
    t: usize,
    mine: &BTreeMap<Vec<u8>, Vec<u8>>,
    lo: Bound<&[u8]>,
    hi: Bound<&[u8]>,
) {
    for w in items.windows(2) {
        let ok = if forward {
            w[0].0 < w[1].0
        } else {
            w[0].0 > w[1].0
        };
        assert!(
            ok,
            "scan (forward={forward}) unsorted or duplicated: {:x?} then {:x?}",
            w[0].0, w[1].0
        );
    }
    let mut own_seen = Vec::new();
    for (k, v) in items {
        sm_check(k, v);
        if k[6] as usize == t {
            assert_eq!(
                mine.get(k),
                Some(v),
                "own key {k:x?} scanned with a wrong value or not present"
            );
            own_seen.push(k.clone());
        }
    }
    if !forward {
        own_seen.reverse();
    }
    let expect: Vec<Vec<u8>> = mine
        .range::<[u8], _>((lo, hi))
        .map(|(k, _)| k.clone())
        .collect();
    assert!(
        own_seen == expect,
        "scan (forward={forward}) missed own keys: saw {} of {} expected",
        own_seen.len(),
        expect.len()
    );
}

#[test]
fn splits_and_merges_under_load() {
    let _watchdog = watchdog("splits_and_merges_under_load", Duration::from_secs(600));
    splits_and_merges(4096, (total_ops() / 40).clamp(2_000, 30_000) as u32);
}

/// The same at 512-byte pages (many levels, many more splits and merges per key) and at
/// 64 KiB pages (few, large leaves).
#[test]
fn splits_and_merges_at_other_page_sizes() {
    let _watchdog = watchdog(
        "splits_and_merges_at_other_page_sizes",
        Duration::from_secs(600),
    );
    let per_thread = (total_ops() / 80).clamp(2_000, 15_000) as u32;
    splits_and_merges(512, per_thread);
    splits_and_merges(64 * 1024, per_thread * 2);
}

fn splits_and_merges(page_size: usize, per_thread: u32) {
    let rounds = 3u32;
    let threads = threads();
    let config = Config {
        page_size,
        ..Config::default()
    };
    let tree = Tree::with_config(config).unwrap();
    let start = Instant::now();
    let seed = seed();
    let finals: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let tree = &tree;
                s.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(t as u64));
                    let mut mine = BTreeMap::new();
                    for round in 0..rounds {
                        // Insert all own keys: ascending, descending or shuffled.
                        let mut order: Vec<u32> = (0..per_thread).collect();
                        match (round as usize + t) % 3 {
                            0 => {}
                            1 => order.reverse(),
                            _ => {
                                for i in (1..order.len()).rev() {
                                    order.swap(i, rng.gen_range(0..=i));
                                }
                            }
                        }
                        for (n, &i) in order.iter().enumerate() {
                            let (k, v) = (sm_key(i, t), sm_value(i, t, round));
                            let old = tree.insert(&k, &v).unwrap();
                            assert_eq!(old, mine.insert(k, v), "insert round {round}");
                            if n % 16 == 0 {
                                // Read another thread's key and scan a little.
                                let other = (t + 1 + rng.gen_range(0..threads - 1)) % threads;
                                let j = rng.gen_range(0..per_thread);
                                if let Some(v) = tree.get(&sm_key(j, other)) {
                                    sm_check(&sm_key(j, other), &v);
                                }
                                let lo = sm_key(j, 0);
                                let items: Vec<_> = tree
                                    .range((Bound::Included(lo.as_slice()), Bound::Unbounded))
                                    .take(40)
                                    .map(vecs)
                                    .collect();
                                let hi = match items.last() {
                                    Some((k, _)) if items.len() == 40 => {
                                        Bound::Included(k.as_slice())
                                    }
                                    _ => Bound::Unbounded,
                                };
                                sm_check_scan(&items, true, t, &mine, Bound::Included(&lo), hi);
                            }
                        }
                        // Remove most of them again (keep every tenth), in another order.
                        let mut victims: Vec<u32> =
                            (0..per_thread).filter(|i| i % 10 != 0).collect();
                        if (round as usize + t).is_multiple_of(2) {
                            victims.reverse();
                        }
                        for (n, &i) in victims.iter().enumerate() {
                            let k = sm_key(i, t);
                            assert_eq!(tree.remove(&k), mine.remove(&k), "remove round {round}");
                            if n % 16 == 0 {
                                let j = rng.gen_range(0..per_thread);
                                let hi = sm_key(j, threads - 1);
                                let items: Vec<_> = tree
                                    .range((Bound::Unbounded, Bound::Included(hi.as_slice())))
                                    .rev()
                                    .take(40)
                                    .map(vecs)
                                    .collect();
                                let lo = match items.last() {
                                    Some((k, _)) if items.len() == 40 => {
                                        Bound::Included(k.as_slice())
                                    }
                                    _ => Bound::Unbounded,
                                };
                                sm_check_scan(&items, false, t, &mine, lo, Bound::Included(&hi));
                                // Every tenth key of this thread stays present throughout
                                // the removal phase.
                                let kept = sm_key(j - j % 10, t);
                                assert!(tree.contains_key(&kept), "kept key vanished");
                            }
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker panicked"))
            .collect()
    });
    let elapsed = start.elapsed();
    let mut expect = BTreeMap::new();
    for m in finals {
        expect.extend(m);
    }
    tree.check_invariants()
        .expect("invariants after splits and merges");
    assert_eq!(tree.len(), expect.len());
    let got: Vec<(Vec<u8>, Vec<u8>)> = tree.iter().map(vecs).collect();
    assert_eq!(got.len(), expect.len(), "number of entries");
    assert!(
        got.iter()
            .zip(&expect)
            .all(|((gk, gv), (ek, ev))| gk == ek && gv == ev),
        "contents differ"
    );
    let stats = tree.stats();
    eprintln!("splits and merges, {page_size}-byte pages: {per_thread} keys x {threads} threads x {rounds} rounds in {elapsed:.2?}; {stats:?}");
    // Each round inserts `threads * per_thread` entries of more than 30 page bytes each,
    // so it must split at least once per page of 30-byte entries (a bound that scales with
    // the reduced counts of `CONTREE_STRESS_OPS`, as `scripts/tsan.sh` sets them: at 64 KiB
    // pages and 2,500 keys per thread a fixed 100 was more than the 51 splits they make).
    let min_splits = (rounds as usize * threads * per_thread as usize * 30 / page_size).max(10);
    assert!(
        stats.splits as usize > min_splits,
        "too few splits: {} (at least {min_splits} expected)",
        stats.splits
    );
    assert!(stats.merges > 10, "too few merges: {}", stats.merges);
    // Only every tenth key is left: the tree must have shrunk back.
    let full_leaves = (expect.len() * 10 * 30) / page_size;
    assert!(
        stats.leaf_pages < full_leaves,
        "{} leaves for {} entries: merges did not shrink the tree",
        stats.leaf_pages,
        expect.len()
    );
}
