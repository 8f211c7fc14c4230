//! Segment memory that can be bound to a NUMA node: what the pool's segments come from on
//! Linux (bound to their nodes under placement on a machine with several nodes,
//! `Numa::placement`), and what an upper-level replica's copies always come from
//! (`crate::numa`).
//!
//! On Linux a segment is an anonymous private mapping (`mmap`: zeroed, with no backing until
//! a page is written), bound to its node with `mbind` before any page is touched, so that
//! every page of it faults in on that node. Binding is best effort: memory the kernel cannot
//! bind (no NUMA support, a node it does not have) is still memory. Elsewhere segments come
//! from the allocator, zeroed, and are not bound.
//!
//! It also gives the physical memory of whole pages back to the system without unmapping
//! them ([`discard`]): the pool's free pages (`release`) and a replica's copies that are no
//! longer needed.

use super::segment_layout;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// Bytes of the live mappings [`map`] made (see [`mapped_bytes`]).
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes that contree holds in anonymous memory mappings, across the process: the page
/// pools' segments and the NUMA replicas' copies, on Linux, where they come from `mmap`
/// rather than the global allocator. A global allocator that counts live bytes (a memory
/// profiler, a benchmark's bytes per entry) does not see them; add this to what it reports.
/// Counts address space mapped, whether or not its pages have been touched or given back
/// to the system since. Always 0 elsewhere, where segments come from the global allocator.
///
/// ```
/// let before = contree::mapped_bytes();
/// let tree = contree::Tree::new();
/// for i in 0u64..10_000 {
///     tree.insert(&i.to_be_bytes(), b"value").unwrap();
/// }
/// if cfg!(target_os = "linux") {
///     assert!(contree::mapped_bytes() > before);
/// }
/// ```
pub fn mapped_bytes() -> usize {
    MAPPED.load(Relaxed)
}

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
    MAPPED.fetch_add(len, Relaxed);
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
    if unsafe { libc::munmap(mem.cast(), len) } == 0 {
        MAPPED.fetch_sub(len, Relaxed);
    }
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

/// Whether [`discard`] can give back the memory of pages of `page_size` bytes here: the
/// system page divides them (and the pool's page alignment).
pub(crate) fn supported(page_size: usize) -> bool {
    system_page().is_some_and(|sys| page_size.is_multiple_of(sys) && super::PAGE_ALIGN >= sys)
}

#[cfg(target_os = "linux")]
fn system_page() -> Option<usize> {
    static PAGE: OnceLock<Option<usize>> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: `sysconf` has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(n).ok().filter(|&n| n > 0)
    })
}

#[cfg(not(target_os = "linux"))]
fn system_page() -> Option<usize> {
    let _ = OnceLock::<()>::new;
    None
}

/// Drops the physical memory of `len` bytes at `addr`; they read as zeroes afterwards and
/// stay mapped. `false` if the system refused (the bytes are unchanged then).
///
/// # Safety
/// `addr..addr + len` is whole system pages ([`supported`]) of private anonymous memory
/// that the caller owns and keeps mapped, and no Rust reference covers it (other threads
/// may read it only through raw pointers, as optimistic readers do, and must cope with
/// seeing zeroes).
#[cfg(target_os = "linux")]
pub(crate) unsafe fn discard(addr: *mut u8, len: usize) -> bool {
    // SAFETY: the caller's contract; MADV_DONTNEED on private anonymous memory only
    // replaces its contents with zeroes.
    unsafe { libc::madvise(addr.cast(), len, libc::MADV_DONTNEED) == 0 }
}

/// Elsewhere memory is kept.
///
/// # Safety
/// None needed; the same contract as on Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn discard(_addr: *mut u8, _len: usize) -> bool {
    false
}
