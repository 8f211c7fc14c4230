//! Adapter for contree, under named configurations for ablations.
//!
//! contree is a bytes-to-bytes tree, so it stores exactly the bytes it is given in every run.
//! Lookups use `get_with` (the value is copied straight into the caller's buffer). Updates go
//! through `update_with`, which overwrites the value in place under the leaf's exclusive
//! latch, or under stretch locks in a leaf in line mode (falling back to `insert` if the
//! length differs). Scans all go through
//! [`scan_from`], the single place to change when contree's scan API changes. Its `Stats` are exported
//! as a JSON object by reading their `Debug` form, so counters the tree gains later (for
//! example Contention Split's or XMerge's) appear in the results without touching the bench.
//!
//! To add an ablation, add a row to [`VARIANTS`] with a `Config` that switches one mechanism
//! off; it becomes a peer name on the command line.

use std::ops::ControlFlow;

use contree::{Config, ConflictControl, LeafPrefetch, LineMode, SideStructure, Tree};

use super::{Index, Shape};

/// A named contree configuration: (peer name, description, constructor).
pub type Variant = (
    &'static str,
    &'static str,
    fn(&Shape) -> Result<Box<dyn Index>, String>,
);

/// contree's configurations, the default first: each the default `Config` with the fields
/// its name says changed.
pub const VARIANTS: &[Variant] = &[
    (
        "contree",
        "contree with its default Config (every mechanism on)",
        |shape| build_with(Config::default(), shape),
    ),
    (
        "contree-nomerge",
        "contree with merging of underfull nodes off (merge_threshold = 0)",
        |shape| build_changed(shape, |c| c.merge_threshold = 0.0),
    ),
    (
        "contree-nocs",
        "contree with Contention Split off (contention_split = false)",
        |shape| build_changed(shape, |c| c.contention_split = false),
    ),
    (
        "contree-nocomb",
        "contree with leaf-level combining off (combining = false)",
        |shape| build_changed(shape, |c| c.combining = false),
    ),
    (
        "contree-nogate",
        "contree with split gates off (split_gate = false)",
        |shape| build_changed(shape, |c| c.split_gate = false),
    ),
    (
        "contree-noreserve",
        "contree with no room for late appends in splits of the rightmost leaf (append_reserve = false)",
        |shape| build_changed(shape, |c| c.append_reserve = false),
    ),
    (
        "contree-side",
        "contree with the side structure for hot ranges always on (side_structure = Always)",
        |shape| build_changed(shape, |c| c.side_structure = SideStructure::Always),
    ),
    (
        "contree-noside",
        "contree with the side structure for hot ranges off (side_structure = Off)",
        |shape| build_changed(shape, |c| c.side_structure = SideStructure::Off),
    ),
    (
        "contree-side-nocomb",
        "contree with the side structure on and leaf-level combining off",
        |shape| {
            build_changed(shape, |c| {
                c.side_structure = SideStructure::Always;
                c.combining = false;
            })
        },
    ),
    (
        "contree-autolines",
        "contree with line mode for hot leaves switched by its detector (line_mode = Auto)",
        |shape| build_changed(shape, |c| c.line_mode = LineMode::Auto),
    ),
    (
        "contree-lines",
        "contree with every leaf updated in place switched to line mode (line_mode = Always)",
        |shape| build_changed(shape, |c| c.line_mode = LineMode::Always),
    ),
    (
        "contree-lines-noccm",
        "contree with line mode always on and its conflict-control module off",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Always;
                c.conflict_control = ConflictControl::OFF;
            })
        },
    ),
    (
        "contree-lines-locks",
        "contree with line mode always on and the advisory key locks on (conflict_control.key_locks)",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Always;
                c.conflict_control.key_locks = true;
            })
        },
    ),
    (
        "contree-lines-nomarks",
        "contree with line mode always on and the mark bits off (conflict_control.mark_bits)",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Always;
                c.conflict_control.mark_bits = false;
            })
        },
    ),
    (
        "contree-autolines-noccm",
        "contree with line mode switched by its detector and the conflict-control module off",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Auto;
                c.conflict_control = ConflictControl::OFF;
            })
        },
    ),
    (
        "contree-lines-noseg",
        "contree with line mode always on and its insert segments off (insert_segments = false)",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Always;
                c.insert_segments = false;
            })
        },
    ),
    (
        "contree-autolines-noseg",
        "contree with line mode switched by its detector and its insert segments off",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Auto;
                c.insert_segments = false;
            })
        },
    ),
    (
        "contree-noleafphase",
        "contree with every failed point read restarted from the root (leaf_phase_restarts = false)",
        |shape| build_changed(shape, |c| c.leaf_phase_restarts = false),
    ),
    (
        "contree-autolines-noleafphase",
        "contree with line mode switched by its detector and every failed point read restarted from the root",
        |shape| {
            build_changed(shape, |c| {
                c.line_mode = LineMode::Auto;
                c.leaf_phase_restarts = false;
            })
        },
    ),
    (
        "contree-nosm",
        "contree with the XMerge space manager thread off (space_manager = false)",
        |shape| build_changed(shape, |c| c.space_manager = false),
    ),
    (
        "contree-nohuge",
        "contree with the page pool on small pages only (huge_pages = false)",
        |shape| build_changed(shape, |c| c.huge_pages = false),
    ),
    (
        "contree-prefault",
        "contree with fresh pages faulted in ahead by the space manager (prefault = true)",
        |shape| build_changed(shape, |c| c.prefault = true),
    ),
    (
        "contree-wholeleaf",
        "contree with point reads prefetching their whole leaf (leaf_prefetch = Whole)",
        |shape| build_changed(shape, |c| c.leaf_prefetch = LeafPrefetch::Whole),
    ),
    (
        "contree-headleaf",
        "contree with point reads prefetching the first KiB of their leaf (leaf_prefetch = Head)",
        |shape| build_changed(shape, |c| c.leaf_prefetch = LeafPrefetch::Head),
    ),
];

/// A contree adapter with the default `Config` as `change` leaves it.
fn build_changed(
    shape: &Shape,
    change: impl FnOnce(&mut Config),
) -> Result<Box<dyn Index>, String> {
    let mut config = Config::default();
    change(&mut config);
    build_with(config, shape)
}

/// A contree adapter with `config`.
pub fn build_with(config: Config, shape: &Shape) -> Result<Box<dyn Index>, String> {
    let max_value = config.max_value_len();
    if shape.value_size > max_value {
        return Err(format!(
            "contree's page size allows values of at most {max_value} bytes"
        ));
    }
    let tree = Tree::with_config(config).map_err(|e| e.to_string())?;
    Ok(Box::new(ContreeIndex { tree }))
}

/// **The one place where the bench scans contree**: every scan of every workload (`scan100`,
/// `scan100-str`, `ycsb-e`, `scan`) comes here through [`Index::scan`]. It visits up to
/// `count` entries in key order from the first key `>= start` and returns how many.
///
/// It uses the visitor scan `Tree::scan(start.., ..)`: borrowed entries, no allocation per
/// entry, stopped with `ControlFlow::Break` after `count` entries.
pub fn scan_from(
    tree: &Tree,
    start: &[u8],
    count: usize,
    visit: &mut dyn FnMut(&[u8], &[u8]),
) -> usize {
    let mut n = 0;
    if count > 0 {
        tree.scan(start.., |k, v| {
            visit(k, v);
            n += 1;
            if n == count {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
    }
    n
}

/// A `contree::Tree` behind the adapter trait.
pub struct ContreeIndex {
    tree: Tree,
}

impl ContreeIndex {
    /// The tree itself.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }
}

impl Index for ContreeIndex {
    fn insert(&self, key: &[u8], value: &[u8]) {
        if let Err(e) = self.tree.insert(key, value) {
            panic!("contree insert failed: {e}");
        }
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        self.tree
            .get_with(key, |v| out.extend_from_slice(v))
            .is_some()
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        let done = self.tree.update_with(key, |v| {
            if v.len() == value.len() {
                v.copy_from_slice(value);
                true
            } else {
                false
            }
        });
        match done {
            Some(true) => true,
            Some(false) => {
                self.insert(key, value);
                true
            }
            None => false,
        }
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.tree.remove(key).is_some()
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        scan_from(&self.tree, start, count, visit)
    }

    fn repr(&self) -> &'static str {
        "bytes"
    }

    fn stats(&self) -> Option<serde_json::Value> {
        Some(crate::debug_fields::to_json(&format!(
            "{:?}",
            self.tree.stats()
        )))
    }
}
