//! What an empty tree costs: at most 16 KiB of heap, counted by a counting allocator (the
//! only test of this binary, so no other test allocates meanwhile).

use contree::{Config, Tree};
#[path = "../examples/support/counting_alloc.rs"]
mod counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

#[test]
fn an_empty_tree_costs_at_most_16_kib() {
    // The first tree starts the shared space-manager thread; that is a process cost.
    let first = Tree::new();
    for space_manager in [true, false] {
        let before = counting_alloc::live();
        let t = Tree::with_config(Config {
            space_manager,
            ..Config::default()
        })
        .unwrap();
        let cost = counting_alloc::live() - before;
        assert!(cost <= 16 << 10, "an empty tree took {cost} bytes");
        // It still grows as usual.
        for i in 0..10_000u64 {
            t.insert(&i.to_be_bytes(), b"v").unwrap();
        }
        assert_eq!(t.len(), 10_000);
        t.check_invariants().unwrap();
        drop(t);
        assert!(counting_alloc::live() - before < 16 << 10);
    }
    drop(first);
}
