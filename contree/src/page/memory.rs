//! Segment memory that can be bound to a NUMA node: what the pool's segments come from under
//! placement on a machine with several nodes (`Numa::placement`), and what an upper-level
//! replica's copies always come from (`crate::numa`).
//!
//! On Linux a segment is an anonymous private mapping (`mmap`: zeroed, with no backing until
//! a page is written), bound to its node with `mbind` before any page is touched, so that
//! every page of it faults in on that node. Binding is best effort: memory the kernel cannot
//! bind (no NUMA support, a node it does not have) is still memory. Elsewhere segments come
//! from the allocator, zeroed, and are not bound.

use super::segment_layout;

/// Zeroed memory for segment `seg` of pages of `page_size` bytes, bound to node `bind` if
/// given; `None` if the system refuses. Freed with [`unmap`].
#[cfg(target_os = "linux")]
pub(crate) fn map(page_size: usize, seg: usize, bind: Option<usize>) -> Option<*mut u8> {
    let len = segment_layout(page_size, seg).size();
    // SAFETY: an anonymous private mapping at an address of the kernel's choice touches no
    // existing memory; the result is checked against `MAP_FAILED`.
    let mem = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mem == libc::MAP_FAILED {
        return None;
    }
    if let Some(node) = bind {
        let _ = crate::numa::topology::bind_to_node(mem.cast(), len, node);
    }
    Some(mem.cast())
}

/// Frees memory that [`map`] gave for segment `seg`.
#[cfg(target_os = "linux")]
pub(crate) fn unmap(mem: *mut u8, page_size: usize, seg: usize) {
    let len = segment_layout(page_size, seg).size();
    // SAFETY: `mem` is a mapping of `len` bytes made by `map` for this segment (the
    // caller's contract), unmapped once, when nothing can use it any more.
    unsafe { libc::munmap(mem.cast(), len) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn map(page_size: usize, seg: usize, _bind: Option<usize>) -> Option<*mut u8> {
    // SAFETY: the layout has a non-zero size (page_size >= 512).
    let mem = unsafe { std::alloc::alloc_zeroed(segment_layout(page_size, seg)) };
    (!mem.is_null()).then_some(mem)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn unmap(mem: *mut u8, page_size: usize, seg: usize) {
    // SAFETY: allocated with this layout by `map` (the caller's contract), freed once.
    unsafe { std::alloc::dealloc(mem, segment_layout(page_size, seg)) };
}
