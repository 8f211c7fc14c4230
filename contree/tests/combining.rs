//! Leaf-level combining (`Config::combining`): writers that find their leaf latched by a
//! holder that takes long hand their inserts and removals to it. Here a thread keeps
//! latching the writers' leaf for milliseconds at a time (an `update_with` whose closure
//! sleeps, as a descheduled holder would), so that hand-overs happen on any machine: every
//! result reaches its own caller, scans stay sorted and complete during appends, errors go
//! to the writer whose operation failed, and the switch turns the mechanism off.

#[path = "support/concurrent.rs"]
mod concurrent;
use concurrent::watchdog;
use contree::{Config, Error, Tree};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WRITERS: u64 = 8;

fn value(k: u64) -> [u8; 8] {
    (k ^ 0x5a5a).to_le_bytes()
}

/// Runs `body` while another thread keeps latching the leaf of `key` for 2 ms at a time (an
/// `update_with` whose closure sleeps), so that writers to that leaf find its latch taken
/// by a slow holder and hand their inserts and removals to it.
fn with_slow_holder<R>(tree: &Tree, key: &[u8], body: impl FnOnce() -> R) -> R {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                tree.update_with(key, |_| std::thread::sleep(Duration::from_millis(2)));
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        let out = body();
        stop.store(true, Ordering::Release);
        out
    })
}

/// Rounds of `round(tree)` until the tree has combined a hundred operations, for at most 60
/// seconds; returns the rounds run.
fn until_combined(tree: &Tree, mut round: impl FnMut(&Tree)) -> usize {
    let start = Instant::now();
    let mut rounds = 0;
    loop {
        round(tree);
        rounds += 1;
        if tree.stats().ops_combined >= 100 || start.elapsed() > Duration::from_secs(60) {
            return rounds;
        }
    }
}

/// Checks that `tree` combined at least a hundred operations, in batches of one or more.
fn assert_combined(tree: &Tree, rounds: usize) {
    let stats = tree.stats();
    eprintln!(
        "{rounds} rounds: {} operations combined in {} batches",
        stats.ops_combined, stats.combine_batches
    );
    assert!(
        stats.ops_combined >= 100,
        "too little combined in {rounds} rounds: {stats:?}"
    );
    assert!(stats.combine_batches > 0 && stats.combine_batches <= stats.ops_combined);
}

/// The largest key: it stays in the rightmost leaf, which every append goes to.
const LAST: [u8; 8] = [0xff; 8];

/// Eight writers append keys of their own residue class (thread `t` inserts `t`, `t + 8`,
/// ...), so all of them insert into the rightmost leaf, while two readers scan from recent
/// keys: each scan is sorted and holds every key whose insert returned before it began.
#[test]
fn appends_with_scans_are_combined() {
    let _watchdog = watchdog("appends_with_scans_are_combined", Duration::from_secs(300));
    let tree = Arc::new(Tree::new());
    tree.insert(&LAST, b"last").unwrap();
    let per_round = 4_000u64;
    let mut next = 0u64;
    let rounds = until_combined(&tree.clone(), |tree| {
        let done: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let base = next;
        next += per_round;
        with_slow_holder(tree, &LAST, || {
            std::thread::scope(|s| {
                for t in 0..WRITERS {
                    let done = done.clone();
                    s.spawn(move || {
                        for i in 0..per_round / WRITERS {
                            let k = base + i * WRITERS + t;
                            assert_eq!(tree.insert(&k.to_be_bytes(), &value(k)).unwrap(), None);
                            // Every key of this thread up to `k` is in.
                            done[t as usize].store(i + 1, Ordering::Release);
                        }
                    });
                }
                for _ in 0..2 {
                    let (done, stop) = (done.clone(), stop.clone());
                    s.spawn(move || {
                        while !stop.load(Ordering::Acquire) {
                            let seen: Vec<u64> =
                                done.iter().map(|d| d.load(Ordering::Acquire)).collect();
                            let low = seen.iter().min().copied().unwrap_or(0);
                            let start = base + low.saturating_sub(20) * WRITERS;
                            let got: Vec<u64> = tree
                                .range(start.to_be_bytes()..LAST)
                                .take(100)
                                .map(|(k, v)| {
                                    let k = u64::from_be_bytes(k[..].try_into().unwrap());
                                    assert_eq!(v, value(k), "value of {k}");
                                    k
                                })
                                .collect();
                            assert!(got.windows(2).all(|w| w[0] < w[1]), "unsorted {got:?}");
                            // Complete: every key inserted before the scan began, from `start`
                            // up to the last key the scan returned, is there.
                            if let Some(&last) = got.last() {
                                for (t, &n) in seen.iter().enumerate() {
                                    for i in 0..n {
                                        let k = base + i * WRITERS + t as u64;
                                        if k >= start && k <= last {
                                            assert!(got.binary_search(&k).is_ok(), "missing {k}");
                                        }
                                    }
                                }
                            }
                        }
                    });
                }
                // The writers end; then the readers.
                while done
                    .iter()
                    .any(|d| d.load(Ordering::Acquire) < per_round / WRITERS)
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                stop.store(true, Ordering::Release);
            })
        });
    });
    assert_combined(&tree, rounds);
    assert_eq!(tree.len() as u64, next + 1);
    for (i, (k, v)) in tree.range(..LAST).enumerate() {
        assert_eq!(k, (i as u64).to_be_bytes());
        assert_eq!(v, value(i as u64));
    }
    tree.check_invariants().unwrap();
}

/// Eight writers insert, overwrite and remove keys of a small range (one or two leaves),
/// each its own keys (key `k` belongs to thread `k % 8`), so that every result is known to
/// its thread: each old value returned must be the one that thread wrote last.
#[test]
fn each_writer_gets_its_own_results() {
    let _watchdog = watchdog("each_writer_gets_its_own_results", Duration::from_secs(300));
    let tree = Tree::new();
    // Not a key of any thread: between `key00100` and `key00101`.
    let held = b"key00100~";
    tree.insert(held, b"held").unwrap();
    let keys = 256u64;
    let mut models: Vec<BTreeMap<u64, u64>> = vec![BTreeMap::new(); WRITERS as usize];
    let mut seed = 1u64;
    let rounds = until_combined(&tree, |tree| {
        seed += 1;
        with_slow_holder(tree, held, || {
            std::thread::scope(|s| {
                for (t, model) in models.iter_mut().enumerate() {
                    let seed = seed;
                    s.spawn(move || {
                        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) + t as u64;
                        for n in 0..3_000u64 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            let k = (x % (keys / WRITERS)) * WRITERS + t as u64;
                            let key = format!("key{k:05}");
                            let stamp = seed << 32 | n;
                            if x.is_multiple_of(3) {
                                let old = tree.remove(key.as_bytes());
                                let want = model.remove(&k);
                                assert_eq!(old, want.map(|v| v.to_le_bytes().to_vec()), "{key}");
                            } else {
                                let old =
                                    tree.insert(key.as_bytes(), &stamp.to_le_bytes()).unwrap();
                                let want = model.insert(k, stamp);
                                assert_eq!(old, want.map(|v| v.to_le_bytes().to_vec()), "{key}");
                            }
                        }
                    });
                }
            })
        });
    });
    assert_combined(&tree, rounds);
    let mut all: BTreeMap<Vec<u8>, Vec<u8>> = models
        .iter()
        .flat_map(|m| m.iter())
        .map(|(k, v)| (format!("key{k:05}").into_bytes(), v.to_le_bytes().to_vec()))
        .collect();
    all.insert(held.to_vec(), b"held".to_vec());
    let got: BTreeMap<Vec<u8>, Vec<u8>> =
        tree.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    assert_eq!(got, all);
    assert_eq!(tree.len(), all.len());
    tree.check_invariants().unwrap();
}

/// At a budget of a few pages, appends from eight threads fail with `OutOfSpace` once the
/// pages are used up (a combined insert that needs a split is handed back, and its writer
/// meets the budget itself), and one thread's oversized values are refused: each error
/// reaches the writer whose insert failed, and only the inserts that returned `Ok` are in
/// the tree.
#[test]
fn errors_reach_their_own_writers() {
    let _watchdog = watchdog("errors_reach_their_own_writers", Duration::from_secs(300));
    let page = 4096;
    let mut combined = 0;
    for round in 0..20u64 {
        let tree = Tree::with_config(Config {
            max_memory: 6 * page,
            space_manager: false,
            ..Config::default()
        })
        .unwrap();
        tree.insert(&LAST, b"last").unwrap();
        let next = AtomicU64::new(0);
        let results: Vec<(Vec<u64>, Vec<u64>)> = with_slow_holder(&tree, &LAST, || {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..WRITERS)
                    .map(|t| {
                        let (tree, next) = (&tree, &next);
                        s.spawn(move || {
                            let (mut ok, mut failed) = (Vec::new(), Vec::new());
                            let mut refusals = 0;
                            while refusals < 50 {
                                let k = next.fetch_add(1, Ordering::Relaxed);
                                let big = t == 0 && k.is_multiple_of(7);
                                let v = if big {
                                    vec![1u8; contree::MAX_VALUE_LEN + 1]
                                } else {
                                    value(k).to_vec()
                                };
                                match tree.insert(&k.to_be_bytes(), &v) {
                                    Ok(old) => {
                                        assert!(!big, "an oversized value was taken");
                                        assert_eq!(old, None);
                                        ok.push(k);
                                    }
                                    Err(Error::ValueTooLarge { .. }) => {
                                        assert!(big, "{k}: a value of 8 bytes refused");
                                        failed.push(k);
                                    }
                                    Err(Error::OutOfSpace { .. }) => {
                                        assert!(
                                            !big,
                                            "{k}: an oversized value not refused as such"
                                        );
                                        failed.push(k);
                                        refusals += 1;
                                    }
                                    Err(e) => panic!("{k}: {e:?}"),
                                }
                            }
                            (ok, failed)
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            })
        });
        let ok: BTreeMap<u64, ()> = results
            .iter()
            .flat_map(|r| &r.0)
            .map(|&k| (k, ()))
            .collect();
        for (_, failed) in &results {
            for k in failed {
                assert_eq!(
                    tree.get(&k.to_be_bytes()),
                    None,
                    "round {round}: failed {k} is in"
                );
            }
        }
        for &k in ok.keys() {
            assert_eq!(
                tree.get(&k.to_be_bytes()),
                Some(value(k).to_vec()),
                "round {round}"
            );
        }
        assert_eq!(tree.len(), ok.len() + 1);
        tree.check_invariants().unwrap();
        combined += tree.stats().ops_combined;
        if combined > 0 && round >= 2 {
            break;
        }
    }
    assert!(combined > 0, "nothing combined in 20 rounds");
}

/// With `combining: false` nothing is handed over, however the writers collide.
#[test]
fn the_switch_turns_combining_off() {
    let _watchdog = watchdog("the_switch_turns_combining_off", Duration::from_secs(300));
    let tree = Tree::with_config(Config {
        combining: false,
        ..Config::default()
    })
    .unwrap();
    tree.insert(&LAST, b"last").unwrap();
    let next = AtomicU64::new(0);
    with_slow_holder(&tree, &LAST, || {
        std::thread::scope(|s| {
            for _ in 0..WRITERS {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    for n in 0..5_000 {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        tree.insert(&k.to_be_bytes(), &value(k)).unwrap();
                        mine.push(k);
                        if n % 2 == 1 {
                            let gone = mine[n / 2];
                            assert_eq!(
                                tree.remove(&gone.to_be_bytes()),
                                Some(value(gone).to_vec())
                            );
                        }
                    }
                });
            }
        })
    });
    let stats = tree.stats();
    assert_eq!(
        (stats.ops_combined, stats.combine_batches),
        (0, 0),
        "{stats:?}"
    );
    tree.check_invariants().unwrap();
}
