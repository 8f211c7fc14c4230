//! Point reads that allocate nothing: `TreeMap::get` of fixed-size values, `Tree::get_with`
//! of values up to `GET_WITH_INLINE` bytes and `Tree::get_into` into a buffer that is large
//! enough, counted by a global allocator that counts the allocations of the calling thread
//! (so the space manager's thread does not disturb the count).

use contree::{Tree, TreeMap, GET_WITH_INLINE};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: allocations during the thread's teardown are not counted.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator; the count touches no heap memory (a
// const-initialised thread-local `Cell`).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(p, l, new_size) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn point_reads_of_short_values_allocate_nothing() {
    let map: TreeMap<u64, (u64, u32)> = TreeMap::new();
    let tree = Tree::new();
    for i in 0..10_000u64 {
        map.insert(&i, &(i * 3, i as u32)).unwrap();
        let len = (i as usize * 7) % (GET_WITH_INLINE + 1);
        tree.insert(&i.to_be_bytes(), &vec![i as u8; len]).unwrap();
    }
    let mut buf = Vec::with_capacity(GET_WITH_INLINE);
    // The thread's key buffer for typed keys is made by the first typed call.
    assert_eq!(map.get(&0), Some((0, 0)));
    let before = allocations();
    let mut sum = 0u64;
    for i in 0..10_000u64 {
        assert_eq!(map.get(&i), Some((i * 3, i as u32)));
        sum += tree.get_with(&i.to_be_bytes(), |v| v.len() as u64).unwrap();
        assert!(tree.get_into(&i.to_be_bytes(), &mut buf));
        sum += buf.len() as u64;
    }
    assert_eq!(map.get(&20_000), None);
    assert_eq!(tree.get_with(&20_000u64.to_be_bytes(), |v| v.len()), None);
    let reads = allocations() - before;
    assert_eq!(reads, 0, "30,002 point reads allocated {reads} times");
    assert!(sum > 0);
    // The count sees allocations: a value over the stack copy's size goes to the heap, and
    // `get` returns a new vector.
    tree.insert(b"big", &[1; GET_WITH_INLINE + 1]).unwrap();
    let before = allocations();
    assert_eq!(
        tree.get_with(b"big", |v| v.len()),
        Some(GET_WITH_INLINE + 1)
    );
    assert!(tree.get(b"big").is_some());
    assert!(allocations() - before >= 2);
}
