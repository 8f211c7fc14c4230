//! The counting allocator counts live heap bytes across threads, and bytes per entry come
//! out of it as the workloads expect.

use contree_bench::alloc::{is_counting, live_bytes, CountingAlloc};

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

#[test]
fn counts_allocations_reallocations_and_frees_on_every_thread() {
    assert!(is_counting());
    let before = live_bytes();
    let kept: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| vec![7u8; 1 << 20])).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let during = live_bytes() - before;
    assert!(
        (4 << 20..(4 << 20) + (64 << 10)).contains(&during),
        "counted {during} bytes for 4 MiB"
    );
    drop(kept);
    let after = live_bytes() - before;
    assert!(after.abs() < 64 << 10, "{after} bytes left after freeing");

    // One test function: tests of one binary run in parallel and share the counter.
    let before = live_bytes();
    let mut v: Vec<u8> = Vec::with_capacity(1000);
    v.reserve_exact(100_000);
    let grown = live_bytes() - before;
    assert!((100_000..101_000).contains(&grown), "{grown}");
    drop(v);
}
