use super::*;
use crate::engine::Target;
use crate::node::NodeMut;
use crate::policy::LeafPolicies;
use crate::space::Rng;
use crate::{Config, Tree};
use std::collections::BTreeMap;

fn tree(config: Config) -> Tree {
    Tree::with_config(Config {
        space_manager: false,
        ..config
    })
    .unwrap()
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Inserts `n` random u64 keys; returns the oracle.
fn fill_random(t: &Tree, n: usize, seed: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut x = seed;
    let mut oracle = BTreeMap::new();
    for _ in 0..n {
        let k = xorshift(&mut x).to_be_bytes().to_vec();
        let v = x.to_le_bytes().to_vec();
        t.insert(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    oracle
}

/// Appends keys `0..n` with 8-byte values (every leaf ends up full); returns the oracle.
fn fill_appends(t: &Tree, n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut oracle = BTreeMap::new();
    for i in 0..n {
        let k = i.to_be_bytes().to_vec();
        t.insert(&k, b"12345678").unwrap();
        oracle.insert(k, b"12345678".to_vec());
    }
    oracle
}

fn assert_same(t: &Tree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    t.check_invariants().unwrap();
    let got: Vec<_> = t
        .iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    let want: Vec<_> = oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want);
}

/// The first leaf-parent, as a visit, for calling XMerge on chosen children.
fn leaf_parent<'t>(t: &'t Tree, key: &[u8]) -> Visit<'t> {
    t.core
        .retry(|| Ok(t.core.optimistic_descend(Target::Key(key, 1))?.0))
}

#[test]
fn compact_packs_random_leaves_and_keeps_every_entry() {
    let t = tree(Config::default());
    let oracle = fill_random(&t, 30_000, 7);
    let before = t.stats();
    assert!(before.fill_factor < 0.8, "{before:?}");
    let freed = t.compact();
    let after = t.stats();
    assert!(freed > 0);
    assert_eq!(after.pages_freed, freed as u64);
    assert_eq!(
        after.leaf_pages + after.inner_pages + freed,
        before.leaf_pages + before.inner_pages
    );
    assert!(after.fill_factor >= 0.9, "{after:?}");
    assert_same(&t, &oracle);
    // A second pass finds (almost) nothing left to do.
    assert!(t.compact() <= 2);
}

#[test]
fn a_group_of_full_leaves_frees_nothing_and_changes_nothing() {
    let t = tree(Config::default());
    // Appends leave every leaf full.
    let oracle = fill_appends(&t, 20_000);
    let leaf = t.leaf_page_of(&100u64.to_be_bytes());
    let parent = leaf_parent(&t, &100u64.to_be_bytes());
    let version = t.core.page(parent.pid).unwrap().1.version();
    let out = t
        .core
        .optimistic_xmerge(parent, 0, Grow::Right, false)
        .unwrap();
    assert!(out.is_none());
    // No latch was taken exclusively: the parent's version did not move.
    assert_eq!(
        t.core.page(leaf_parent(&t, b"").pid).unwrap().1.version(),
        version
    );
    assert_eq!(t.leaf_page_of(&100u64.to_be_bytes()), leaf);
    assert_eq!(t.stats().xmerges, 0);
    assert_same(&t, &oracle);
}

#[test]
fn merging_changes_prefixes_and_fences() {
    let t = tree(Config {
        merge_threshold: 0.0,
        ..Config::default()
    });
    // Long keys whose prefixes differ by leaf: "p/<group>/<n>".
    let mut oracle = BTreeMap::new();
    for g in 0..40u32 {
        for n in 0..100u32 {
            let k = format!("prefix/{g:04}/{:040}", n * 7919 % 100_003).into_bytes();
            t.insert(&k, &g.to_le_bytes()).unwrap();
            oracle.insert(k, g.to_le_bytes().to_vec());
        }
    }
    // Thin every leaf out: the remaining keys of neighbouring leaves share less prefix.
    let keys: Vec<_> = oracle.keys().cloned().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 4 != 0 {
            t.remove(k);
            oracle.remove(k);
        }
    }
    let leaves = t.stats().leaf_pages;
    let freed = t.compact();
    assert!(freed * 2 >= leaves, "freed {freed} of {leaves} leaves");
    assert_same(&t, &oracle);
}

#[test]
fn inner_nodes_are_merged_too() {
    let t = tree(Config {
        merge_threshold: 0.0,
        ..Config::default()
    });
    let mut oracle = BTreeMap::new();
    for i in 0u32..60_000 {
        // 200-byte keys, each of 60,000 numbers once in a scattered order: its high bits
        // first, its low byte last, so that neighbouring keys differ only in their last
        // byte and separators keep all 200 bytes (suffix truncation cannot shorten them):
        // about 19 per inner node, so the tree is four levels tall.
        let p = i * 7_919 % 60_000;
        let mut k = vec![b'k'; 200];
        k[..2].copy_from_slice(&((p >> 8) as u16).to_be_bytes());
        k[198..].copy_from_slice(&((p & 0xFF) as u16).to_be_bytes());
        t.insert(&k, b"v").unwrap();
        oracle.insert(k, b"v".to_vec());
    }
    let keys: Vec<_> = oracle.keys().cloned().collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 16 != 0 {
            t.remove(k);
            oracle.remove(k);
        }
    }
    let before = t.stats();
    assert!(before.height >= 4, "{before:?}");
    t.compact();
    let after = t.stats();
    assert!(
        after.inner_pages * 4 < before.inner_pages,
        "{before:?} {after:?}"
    );
    assert_same(&t, &oracle);
}

#[test]
fn empty_leaves_are_freed() {
    let t = tree(Config {
        merge_threshold: 0.0,
        ..Config::default()
    });
    let mut oracle = fill_random(&t, 20_000, 3);
    let keys: Vec<_> = oracle.keys().cloned().collect();
    let full = t.stats().leaf_pages;
    for k in &keys[2_000..18_000] {
        t.remove(k);
        oracle.remove(k);
    }
    // Removals free the leaves they empty; XMerge packs what is left (a fifth of the
    // entries) into about a fifth of the leaves, fuller than before.
    t.compact();
    let left = t.stats().leaf_pages;
    assert!(left * 10 <= full * 2, "{left} of {full} leaves left");
    assert_same(&t, &oracle);
    for k in &keys[2_000..18_000] {
        t.insert(k, b"back").unwrap();
        oracle.insert(k.clone(), b"back".to_vec());
    }
    assert_same(&t, &oracle);
}

#[test]
fn hot_and_latched_leaves_are_skipped() {
    let t = tree(Config::default());
    let oracle = fill_random(&t, 30_000, 11);
    let probe = |i: usize| oracle.keys().nth(i).unwrap().clone();
    let (hot_key, busy_key) = (probe(5_000), probe(20_000));
    let hot = t.leaf_page_of(&hot_key);
    let busy = t.leaf_page_of(&busy_key);
    let (hot_node, hot_latch) = t.core.page(hot).unwrap();
    {
        let mut x = hot_latch.exclusive();
        LeafPolicies::contention_split_done(&mut NodeMut::new(hot_node, &mut x));
    }
    let hot_count = hot_node.count();
    let (busy_node, busy_latch) = t.core.page(busy).unwrap();
    let busy_count = busy_node.count();
    let x = busy_latch.exclusive();
    assert!(t.compact() > 0);
    drop(x);
    assert_eq!(t.leaf_page_of(&hot_key), hot);
    assert_eq!(t.leaf_page_of(&busy_key), busy);
    assert_eq!(hot_node.count(), hot_count);
    assert_eq!(busy_node.count(), busy_count);
    assert_same(&t, &oracle);
}

#[test]
fn random_picks_raise_the_fill_factor() {
    let t = tree(Config::default());
    let oracle = fill_random(&t, 30_000, 5);
    let mut rng = Rng::new(42);
    let before = t.stats().fill_factor;
    let estimate = t.core.optimistic_sample_fill(&mut rng, 256).unwrap();
    assert!((estimate - before).abs() < 0.05, "{estimate} vs {before}");
    let freed: usize = (0..2_000)
        .map(|_| t.core.optimistic_xmerge_random(&mut rng))
        .sum();
    let after = t.stats();
    assert!(freed > 0);
    assert!(after.fill_factor > before + 0.1, "{before} -> {after:?}");
    assert_same(&t, &oracle);
}

#[test]
fn plan_needs_fewer_nodes_or_gives_up() {
    let t = tree(Config::default());
    let oracle = fill_random(&t, 5_000, 9);
    let first = oracle.keys().next().unwrap().clone();
    let parent = leaf_parent(&t, &first);
    let nodes: Vec<Node> = (0..3)
        .map(|i| t.core.page(parent.node.child(i).unwrap()).unwrap().0)
        .collect();
    let run = Run::optimistic_new(parent.node, 0, &nodes).unwrap();
    let n: usize = nodes.iter().map(Node::count).sum();
    assert_eq!(run.items.len(), n);
    let lower = nodes[0].lower_fence().unwrap();
    let upper = nodes[2].upper_fence().unwrap();
    // Three leaves about 70% full fit in three pages, not in one.
    let plan = run
        .optimistic_plan(4096, lower.as_deref(), upper.as_deref(), 3)
        .unwrap()
        .unwrap();
    assert_eq!(plan.last().unwrap().1, n);
    assert_eq!(plan.first().unwrap().0, 0);
    assert!(plan.windows(2).all(|w| w[0].1 == w[1].0));
    assert!(run
        .optimistic_plan(4096, lower.as_deref(), upper.as_deref(), 1)
        .unwrap()
        .is_none());
}

/// Removes every third key of `oracle` outside `leaf`, so that the leaves around it have
/// room while it stays as it is.
fn make_room_around(t: &Tree, oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>, leaf: PageId) {
    let keys: Vec<Vec<u8>> = oracle.keys().step_by(3).cloned().collect();
    for k in keys {
        if t.leaf_page_of(&k) != leaf {
            t.remove(&k);
            oracle.remove(&k);
        }
    }
}

/// Appends that fill every leaf, then room made in the neighbours of the leaf of key 3000
/// (which stays full); returns the oracle and that key.
fn full_leaf_among_roomy_ones(t: &Tree) -> (BTreeMap<Vec<u8>, Vec<u8>>, [u8; 8]) {
    let mut oracle = fill_appends(t, 20_000);
    let probe = 3000u64.to_be_bytes();
    make_room_around(t, &mut oracle, t.leaf_page_of(&probe));
    (oracle, probe)
}

/// The slot of `parent` whose child holds `key`.
fn slot_of(t: &Tree, parent: &Visit<'_>, key: &[u8]) -> usize {
    parent.node.lower_bound(key, t.core.directory()).unwrap().0
}

/// Spreading gives a full leaf room from its neighbours' free space, without a page more or
/// less, and keeps every entry.
#[test]
fn spreading_gives_a_full_leaf_room_from_its_neighbours() {
    let t = tree(Config::default());
    let (oracle, probe) = full_leaf_among_roomy_ones(&t);
    let free = |t: &Tree| t.core.page(t.leaf_page_of(&probe)).unwrap().0.free_space();
    assert!(free(&t) < 64, "the probe's leaf starts full");
    let pages = t.stats().leaf_pages;
    let parent = leaf_parent(&t, &probe);
    let pos = slot_of(&t, &parent, &probe);
    let xmerges = t.stats().xmerges;
    assert!(t.core.optimistic_spread(parent, pos).unwrap());
    assert!(free(&t) > 200, "the probe's leaf got room: {}", free(&t));
    assert_eq!(t.stats().leaf_pages, pages);
    // A spread packs no group into fewer nodes: `Stats::xmerges` does not count it (a
    // surviving mutant of mutation testing counted every rewrite).
    assert_eq!(t.stats().xmerges, xmerges);
    assert_same(&t, &oracle);
}

/// The last child of a parent (its upper child, slot `count`) can be spread too (a
/// surviving mutant of mutation testing refused it).
#[test]
fn spreading_reaches_a_parents_last_child() {
    let t = tree(Config::default());
    // Enough appends for several leaf-parents; every third key removed, then the last
    // child of the first leaf-parent filled again.
    let mut oracle = fill_appends(&t, 100_000);
    let removed: Vec<Vec<u8>> = oracle.keys().step_by(3).cloned().collect();
    for k in &removed {
        t.remove(k);
        oracle.remove(k);
    }
    let first = 0u64.to_be_bytes();
    let parent = leaf_parent(&t, &first);
    assert_ne!(
        t.core.root_id(),
        parent.pid,
        "the tree has more than one leaf-parent"
    );
    let pos = parent.node.count();
    let leaf = parent.node.child(pos).unwrap();
    for k in removed {
        if t.leaf_page_of(&k) == leaf {
            t.insert(&k, b"12345678").unwrap();
            oracle.insert(k, b"12345678".to_vec());
        }
    }
    let free = |t: &Tree| t.core.page(leaf).unwrap().0.free_space();
    assert!(free(&t) < 64, "the last child is full: {}", free(&t));
    let pages = t.stats().leaf_pages;
    let parent = leaf_parent(&t, &first);
    assert_eq!(parent.node.child(pos).unwrap(), leaf);
    assert_eq!(parent.node.count(), pos);
    assert!(t.core.optimistic_spread(parent, pos).unwrap());
    assert!(free(&t) > 200, "the last child got room: {}", free(&t));
    assert_eq!(t.stats().leaf_pages, pages);
    assert_same(&t, &oracle);
}

/// A spread whose target (or a member left of it) is latched by another thread gives up
/// and changes nothing, rather than rewriting the members left of the latch, which would
/// give the target no room (a surviving mutant of mutation testing did that).
#[test]
fn spreading_gives_up_when_the_target_is_latched() {
    let t = tree(Config::default());
    let (oracle, probe) = full_leaf_among_roomy_ones(&t);
    let leaf = t.leaf_page_of(&probe);
    let parent = leaf_parent(&t, &probe);
    let pos = slot_of(&t, &parent, &probe);
    assert!(pos >= 2, "two members left of the target: {pos}");
    let left: Vec<(PageId, usize)> = (pos - 2..pos)
        .map(|p| parent.node.child(p).unwrap())
        .map(|pid| (pid, t.core.page(pid).unwrap().0.free_space()))
        .collect();
    assert!(left.iter().map(|l| l.1).sum::<usize>() > 4096 / 16);
    let (_, latch) = t.core.page(leaf).unwrap();
    let x = latch.exclusive();
    assert!(!t.core.optimistic_spread(parent, pos).unwrap());
    drop(x);
    for (pid, free) in left {
        assert_eq!(t.core.page(pid).unwrap().0.free_space(), free);
    }
    assert_same(&t, &oracle);
}

/// The space manager's work leaves a leaf in line mode (`sync::lines`) in line mode: its fill
/// samples validate what they read (the header) as a line-mode reader does, which a value
/// changed in place cannot fail, and XMerge passes such a leaf over, as it passes over leaves
/// Contention Split marked hot. A full validation of a line-mode snapshot always fails and
/// ends the mode; the sampler's did, so every sample that landed on a hot leaf switched it
/// back (issue 14's finding: hot leaves of small or low-fill trees kept leaving line mode).
#[test]
fn the_space_managers_work_leaves_line_mode_on() {
    let t = tree(Config {
        line_mode: crate::LineMode::Always,
        ..Config::default()
    });
    let oracle = fill_random(&t, 3_000, 11);
    // Low fill, so that random groups have something to merge.
    let mut oracle = oracle;
    let keys: Vec<Vec<u8>> = oracle.keys().cloned().collect();
    for k in keys.iter().step_by(3).chain(keys.iter().skip(1).step_by(3)) {
        t.remove(k);
        oracle.remove(k);
    }
    let hot = keys[2].clone();
    assert!(t.update_with(&hot, |v| v[0] ^= 1).is_some());
    oracle.get_mut(&hot).unwrap()[0] ^= 1;
    let before = t.stats();
    assert_eq!(before.hot_leaves, 1, "{before:?}");
    let mut rng = Rng::new(7);
    for _ in 0..2_000 {
        t.core.optimistic_sample_fill(&mut rng, 16);
    }
    let freed: usize = (0..2_000)
        .map(|_| t.core.optimistic_xmerge_random(&mut rng))
        .sum();
    let after = t.stats();
    assert!(freed > 0, "random groups were merged: {after:?}");
    assert_eq!(after.hot_leaves, 1, "{after:?}");
    assert_eq!(after.line_exits, before.line_exits, "{after:?}");
    assert_same(&t, &oracle);
}
