//! The models of the tree's protocols: each a configuration and a workload that
//! [`check`](super::check) runs under the random and PCT schedulers against the history
//! checker (the executor's model is in `executor.rs`).

use super::*;

/// Point writes, reads and scans over a tree of three levels: splits (of leaves and inner
/// nodes) and merges under concurrent descents and scans, short and long values.
#[test]
fn splits_and_merges() {
    let totals = check(Model {
        config: small_config(),
        keys: 400,
        long_keys: false,
        initially: |i| i % 5 != 4,
        threads: 3,
        ops_per_thread: 6,
        hot: 200..206,
        max_value: 200,
        weights: [6, 2, 2, 0, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.splits.load(Ordering::Relaxed) > 0);
    assert!(totals.merges.load(Ordering::Relaxed) > 0);
    assert!(totals.max_height.load(Ordering::Relaxed) >= 3);
    // Reads met writers of their leaves and ran the leaf phase again (`engine::phases`):
    // a leaf phase reused on a leaf that split or merged meanwhile returns a wrong result.
    assert!(totals.leaf_restarts.load(Ordering::Relaxed) > 0);
}

/// Slices and melds of a `PartitionedTree` (`crate::partition`) while other threads write,
/// read and scan across the boundaries: every slice and meld latches the table and a path
/// top-down, and descents that crossed the path before restart on its versions.
#[test]
fn slices_and_melds_beside_writers() {
    let totals = check(Model {
        config: small_config(),
        keys: 400,
        long_keys: false,
        initially: |i| i % 5 != 4,
        threads: 3,
        ops_per_thread: 6,
        hot: 200..206,
        max_value: 200,
        weights: [5, 2, 2, 0, 3],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.slices.load(Ordering::Relaxed) > 0);
    assert!(totals.melds.load(Ordering::Relaxed) > 0);
    assert!(totals.splits.load(Ordering::Relaxed) > 0);
    assert!(totals.merges.load(Ordering::Relaxed) > 0);
}

/// Slices and melds beside `compact()` (XMerge across the partitions' nodes, root collapse
/// in the table's slots) and long keys (boundaries at long keys are refused).
#[test]
fn slices_and_melds_beside_compaction_and_long_keys() {
    let totals = check(Model {
        config: small_config(),
        keys: 120,
        long_keys: true,
        initially: |i| i % 3 != 2,
        threads: 3,
        ops_per_thread: 6,
        hot: 60..64,
        max_value: 150,
        weights: [5, 2, 1, 2, 3],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.slices.load(Ordering::Relaxed) > 0);
    assert!(totals.melds.load(Ordering::Relaxed) > 0);
    assert!(totals.xmerges.load(Ordering::Relaxed) > 0);
}

/// Long keys (rests out of line, in the blob heap) and values in and out of line.
#[test]
fn long_keys_and_out_of_line_values() {
    let totals = check(Model {
        config: small_config(),
        keys: 40,
        long_keys: true,
        initially: |i| i % 3 != 0,
        threads: 3,
        ops_per_thread: 5,
        hot: 10..16,
        max_value: 600,
        weights: [6, 2, 2, 0, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.out_of_line.load(Ordering::Relaxed) > 0);
    assert!(totals.splits.load(Ordering::Relaxed) > 0);
}

/// Contention Split on every sampled change (sampling every change, a period per change,
/// threshold 0): threads writing neighbouring keys of one leaf split it between them.
#[test]
fn contention_split() {
    let totals = check(Model {
        config: Config {
            contention_sample_shift: 0,
            contention_period_shift: 1,
            contention_threshold: 0.0,
            merge_threshold: 0.0,
            ..small_config()
        },
        keys: 40,
        long_keys: false,
        initially: |_| true,
        threads: 3,
        ops_per_thread: 6,
        hot: 20..24,
        max_value: 40,
        weights: [7, 1, 2, 0, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.contention_splits.load(Ordering::Relaxed) > 0);
}

/// Split gates (`smo::gate`): writers filling the same few leaves (large values in small
/// pages) find them full together; one splits each while the others wait at its gate and
/// then split again only where the leaf still lacks room. Every result must be
/// linearizable for its key, and a waiter must neither hang nor lose its insert.
#[test]
fn split_gates() {
    let totals = check(Model {
        config: Config {
            contention_split: false,
            merge_threshold: 0.0,
            ..small_config()
        },
        keys: 60,
        long_keys: false,
        initially: |_| false,
        threads: 3,
        ops_per_thread: 6,
        hot: 30..36,
        max_value: 120,
        weights: [9, 1, 1, 0, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.splits.load(Ordering::Relaxed) > 0);
    assert!(totals.split_gate_waits.load(Ordering::Relaxed) > 0);
}

/// Leaf combining: writers of a few keys of one leaf (inline values) hand their inserts and
/// removals to the thread holding the leaf's latch, which applies them in its critical
/// section; every result must still be linearizable for its key, and reach its own caller.
/// Updates hold their leaf for 100 yields (writers hand over only to a slow holder).
#[test]
fn leaf_combining() {
    let totals = check(Model {
        config: Config {
            contention_split: false,
            merge_threshold: 0.0,
            ..small_config()
        },
        keys: 40,
        long_keys: false,
        initially: |i| i % 2 == 0,
        threads: 4,
        ops_per_thread: 5,
        hot: 20..26,
        max_value: 30,
        weights: [9, 1, 1, 0, 0],
        holder_yields: 100,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.ops_combined.load(Ordering::Relaxed) > 0);
}

/// Line mode (`LineMode::Always`): every leaf updated in place under its latch switches,
/// later updates lock stretches of 8 bytes (512-byte pages) instead of the latch and hold
/// them for 2 yields, point reads check the stretches they read, and inserts, removals,
/// atomic operations, scans and `compact()` end line mode on the way; every result must be
/// linearizable for its key (an update flips a value's first and last bytes, so a torn read
/// is a value never written). Both parts of the conflict-control module are on: updates
/// take their key's advisory lock, and the mark bits answer reads and updates of absent
/// keys (a filter that missed a key would answer "absent" for a key the model holds).
/// The Shuttle build's table has four entries and no cold period, so leaves also evict
/// each other's line mode (`lines::evict_cold`) while updaters hold their stretches.
#[test]
fn line_mode() {
    let totals = check(Model {
        config: Config {
            line_mode: LineMode::Always,
            conflict_control: contree::ConflictControl {
                key_locks: true,
                mark_bits: true,
            },
            ..small_config()
        },
        keys: 60,
        long_keys: false,
        initially: |i| i % 5 != 4,
        threads: 3,
        ops_per_thread: 8,
        hot: 20..26,
        max_value: 40,
        weights: [8, 4, 1, 1, 0],
        holder_yields: 2,
        mark_hot: false,
        update_bias: 16,
    });
    assert!(totals.line_updates.load(Ordering::Relaxed) > 0);
    assert!(totals.line_exits.load(Ordering::Relaxed) > 0);
    assert!(totals.line_evictions.load(Ordering::Relaxed) > 0);
    assert!(totals.mark_rejections.load(Ordering::Relaxed) > 0);
}

/// Insert segments (`Config::insert_segments`, `src/sync/segments.rs`): leaves in line
/// mode (switched by every latched insert and update) take inserts of new keys into their
/// segments while other threads read, update, remove, insert the same keys and scan, which
/// moves the records into the leaves; every result must be linearizable for its key.
#[test]
fn insert_segments() {
    let totals = check(Model {
        config: Config {
            line_mode: LineMode::Always,
            ..small_config()
        },
        keys: 60,
        long_keys: false,
        initially: |i| i % 3 == 0,
        threads: 3,
        ops_per_thread: 10,
        hot: 20..24,
        max_value: 40,
        weights: [6, 2, 4, 0, 0],
        holder_yields: 2,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.segment_inserts.load(Ordering::Relaxed) > 0);
    assert!(totals.segment_moves.load(Ordering::Relaxed) > 0);
}

/// Cohort latches (`Numa::cohort`, `src/sync/cohort.rs`) on a simulated topology of two
/// nodes: writers that find a hot leaf's latch held (holders yield inside their update
/// closures) inflate it after two waits (the model's threshold), and from then on writers
/// queue per node and are passed the latch within their node, acquisitions that did not
/// queue step aside, shared holders (scans, `get_with`) count themselves per node, and
/// splits and merges go on around it; every result must be linearizable for its key.
#[test]
fn cohort_latch() {
    let totals = check(Model {
        config: Config {
            contention_split: false,
            numa: Numa {
                topology: Topology::Simulated {
                    nodes: 2,
                    threads: ThreadMap::RoundRobin,
                },
                cohort: true,
                ..Numa::default()
            },
            ..small_config()
        },
        keys: 60,
        long_keys: false,
        initially: |i| i % 3 != 2,
        threads: 4,
        ops_per_thread: 6,
        hot: 20..26,
        max_value: 40,
        weights: [8, 3, 2, 1, 0],
        holder_yields: 3,
        mark_hot: false,
        update_bias: 12,
    });
    assert!(totals.cohort_latches.load(Ordering::Relaxed) > 0);
}

/// The side structure for hot ranges: inserts and removals of the hot window's keys go to
/// its shards while other writes of those keys (updates, compare-exchanges, conditional
/// removals) settle them into the tree under the shard's mutex, scans and `compact()` merge
/// and cool the ranges, and threads mark ranges while others write; every result must be
/// linearizable for its key.
#[test]
fn side_structure() {
    let totals = check(Model {
        config: Config {
            side_structure: contree::SideStructure::Always,
            side_merge_entries: 16,
            side_ranges: 2,
            merge_threshold: 0.0,
            ..small_config()
        },
        keys: 60,
        long_keys: false,
        initially: |i| i % 2 == 0,
        threads: 3,
        ops_per_thread: 6,
        hot: 30..36,
        max_value: 30,
        weights: [8, 3, 1, 1, 0],
        holder_yields: 0,
        mark_hot: true,
        update_bias: 0,
    });
    assert!(totals.side_diverted.load(Ordering::Relaxed) > 0);
}

/// XMerge: a sparse tree packed by `compact()` (groups of 3) while other threads write,
/// read and scan.
#[test]
fn xmerge_beside_writers() {
    let totals = check(Model {
        config: Config {
            merge_threshold: 0.0,
            xmerge_group: 3,
            ..small_config()
        },
        keys: 120,
        long_keys: false,
        initially: |i| i % 4 == 0,
        threads: 3,
        ops_per_thread: 5,
        hot: 60..70,
        max_value: 100,
        weights: [5, 2, 2, 2, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.xmerges.load(Ordering::Relaxed) > 0);
}

/// A memory budget a few pages above the tree's size: writes that need a page fail with
/// `OutOfSpace` and change nothing, removals and packs make room again.
#[test]
fn memory_budget() {
    let totals = check(Model {
        config: Config {
            max_memory: 6 * 512,
            ..small_config()
        },
        keys: 40,
        long_keys: false,
        initially: |i| i % 2 == 0,
        threads: 3,
        ops_per_thread: 6,
        hot: 10..16,
        max_value: 300,
        weights: [7, 1, 2, 1, 0],
        holder_yields: 0,
        mark_hot: false,
        update_bias: 0,
    });
    assert!(totals.out_of_space.load(Ordering::Relaxed) > 0);
}

/// Regression: an insert that found its leaf full splits it after another thread removed
/// all but one entry. The split used to go ahead with one entry, put it on one side and
/// nothing on the other under a separator equal to the leaf's upper fence, which the
/// parent already held (a duplicate separator; later scans looped). Found by
/// `xmerge_beside_writers` after a few thousand schedules; here leaves hold three entries,
/// one thread inserts a fourth into a full leaf while another removes two of its three,
/// leaving the key equal to the leaf's upper fence.
#[test]
fn split_of_a_leaf_emptied_meanwhile() {
    let config = Config {
        merge_threshold: 0.0,
        ..small_config()
    };
    let body = move || {
        let tree = Arc::new(Tree::with_config(config.clone()).unwrap());
        let key = |i: u32| format!("k{i:02}").into_bytes();
        let value = |b: u8| vec![b; 120];
        for i in 0..12 {
            tree.insert(&key(i), &value(i as u8)).unwrap();
        }
        let leaf = tree.leaf_page_of(&key(4));
        assert_eq!(
            tree.leaf_page_of(&key(3)),
            leaf,
            "setup: keys 3 to 5 share a leaf"
        );
        assert_eq!(
            tree.leaf_page_of(&key(5)),
            leaf,
            "setup: keys 3 to 5 share a leaf"
        );
        let t = tree.clone();
        let inserter = shuttle::thread::spawn(move || {
            t.insert(b"k04a", &value(0xaa)).unwrap();
        });
        assert!(tree.remove(&key(3)).is_some());
        assert!(tree.remove(&key(4)).is_some());
        inserter.join().unwrap();
        tree.check_invariants().unwrap();
        let keys: Vec<Vec<u8>> = tree.keys().map(|k| k.to_vec()).collect();
        let mut want: Vec<Vec<u8>> = (0..12).filter(|i| *i != 3 && *i != 4).map(key).collect();
        want.push(b"k04a".to_vec());
        want.sort();
        assert_eq!(keys, want);
    };
    run_schedules(body);
}
