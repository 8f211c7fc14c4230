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
//! longer needed; and it reserves and advises the pool's huge-page extents ([`reserve`],
//! [`advise_huge`], `super::extent`).

use super::segment_layout;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// Bytes of the live mappings [`map`] made (see [`mapped_bytes`]).
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// Bytes that contree holds in anonymous memory mappings, across the process: the page
/// pools' segments and the NUMA replicas' copies, on Linux, where they come from `mmap`
/// rather than the global allocator. A global allocator that counts live bytes (a memory
/// profiler, a benchmark's bytes per entry) does not see them; add this to what it reports.
/// Counts the segments the pools have opened and the replicas' copies, whether or not their
/// pages have been touched or given back to the system since; the address space reserved
/// for segments not opened yet (the rest of a huge-page extent,
/// [`Config::huge_pages`](crate::Config::huge_pages)) has no memory behind it and is not
/// counted. Always 0 elsewhere, where segments come from the global allocator.
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
    let mem = anonymous(len)?;
    MAPPED.fetch_add(len, Relaxed);
    if let Some(node) = bind {
        let _ = crate::numa::topology::bind_to_node(mem.cast(), len, node);
    }
    Some(mem.cast())
}

/// A new anonymous private mapping of `len` bytes (zero, no memory behind it until written),
/// or `None` if the system refuses.
#[cfg(target_os = "linux")]
fn anonymous(len: usize) -> Option<*mut libc::c_void> {
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
    (mem != libc::MAP_FAILED).then_some(mem)
}

/// Size and alignment of a huge-page extent (`super::extent`): a transparent huge page of
/// x86-64 and of aarch64 with 4 KiB base pages.
pub(crate) const EXTENT: usize = 2 << 20;

/// Address space for a huge-page extent of `len` bytes (a multiple of [`EXTENT`]), aligned
/// to [`EXTENT`], with no memory behind it until a page is written (and then zeroed memory);
/// `None` if the system refuses. Not counted in [`mapped_bytes`]: the pool counts each
/// segment of it as the segment opens ([`count_mapped`]). Freed with [`unreserve`].
#[cfg(target_os = "linux")]
pub(crate) fn reserve(len: usize) -> Option<*mut u8> {
    debug_assert!(len.is_multiple_of(EXTENT));
    let over = len.checked_add(EXTENT)?;
    let mem = anonymous(over)?;
    let start = mem.addr();
    let aligned = start.next_multiple_of(EXTENT);
    let head = aligned - start;
    let tail = over - head - len;
    // SAFETY: both ranges lie inside the mapping just made, outside the aligned `len` bytes
    // that are kept; nothing has used them. A failed trim only leaves address space mapped.
    unsafe {
        if head > 0 {
            libc::munmap(mem, head);
        }
        if tail > 0 {
            libc::munmap(mem.map_addr(|_| aligned + len), tail);
        }
    }
    Some(mem.map_addr(|_| aligned).cast())
}

/// Frees an extent that [`reserve`] gave.
#[cfg(target_os = "linux")]
pub(crate) fn unreserve(mem: *mut u8, len: usize) {
    // SAFETY: `mem` is a mapping of `len` bytes made by `reserve` (the caller's contract),
    // unmapped once, when nothing can use it any more.
    unsafe { libc::munmap(mem.cast(), len) };
}

/// Adds `len` bytes of an extent's segment to (or, if `!open`, removes them from)
/// [`mapped_bytes`].
pub(crate) fn count_mapped(len: usize, open: bool) {
    if open {
        MAPPED.fetch_add(len, Relaxed);
    } else {
        MAPPED.fetch_sub(len, Relaxed);
    }
}

/// `madvise(MADV_COLLAPSE)`, which the `libc` crate does not name (Linux 6.1 and later).
#[cfg(target_os = "linux")]
const MADV_COLLAPSE: libc::c_int = 25;

/// Asks the kernel to back the `len` bytes of a full extent at `mem` with transparent huge
/// pages (`MADV_HUGEPAGE`: its `khugepaged` thread collapses the extent in its own time),
/// and, if `now`, to do so at once (`MADV_COLLAPSE`: copies the extent's pages into huge
/// pages; refused by kernels before 6.1). `false` if the kernel refused the advice (no
/// transparent huge pages).
///
/// # Safety
/// `mem..mem + len` is an extent from [`reserve`] that stays mapped.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn advise_huge(mem: *mut u8, len: usize, now: bool) -> bool {
    // SAFETY: the caller's contract; both advices keep the contents of every page (a
    // collapse copies them, with concurrent accesses waiting on the page tables).
    unsafe {
        let advised = libc::madvise(mem.cast(), len, libc::MADV_HUGEPAGE) == 0;
        if advised && now {
            // EAGAIN: a page was busy (just faulted in, on another CPU's list); try again.
            for _ in 0..3 {
                if libc::madvise(mem.cast(), len, MADV_COLLAPSE) == 0
                    || std::io::Error::last_os_error().raw_os_error() != Some(libc::EAGAIN)
                {
                    break;
                }
                std::thread::yield_now();
            }
        }
        advised
    }
}

/// Takes the huge-page advice of [`advise_huge`] back (`MADV_NOHUGEPAGE`), so that the
/// kernel does not fill the pages given back inside the extent by collapsing it again.
///
/// # Safety
/// As for [`advise_huge`].
#[cfg(target_os = "linux")]
pub(crate) unsafe fn advise_small(mem: *mut u8, len: usize) {
    // SAFETY: the caller's contract; the advice keeps the contents of every page.
    unsafe { libc::madvise(mem.cast(), len, libc::MADV_NOHUGEPAGE) };
}

/// `madvise(MADV_POPULATE_WRITE)`, which the `libc` crate may not name (Linux 5.14 and later).
#[cfg(target_os = "linux")]
const MADV_POPULATE_WRITE: libc::c_int = 23;

/// Whether [`populate`] found the kernel without `MADV_POPULATE_WRITE` (then it stops asking).
#[cfg(target_os = "linux")]
static POPULATE_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Faults in the `len` bytes at `mem` writable, as writes to each of their pages would,
/// without writing them (`madvise(MADV_POPULATE_WRITE)`: one system call instead of a
/// page fault per page, and no fault at the first write afterwards). Pages already there
/// keep their contents. `false` if the kernel refused (before Linux 5.14, or short of
/// memory): the pages then fault in at their first use, as without.
///
/// # Safety
/// `mem..mem + len` is anonymous private memory of this process from [`map`] or
/// [`reserve`] that stays mapped during the call.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn populate(mem: *mut u8, len: usize) -> bool {
    if POPULATE_REFUSED.load(Relaxed) {
        return false;
    }
    // SAFETY: the caller's contract; populating keeps the contents of every page (the
    // untouched ones read as zeroes before and after).
    let done = unsafe { libc::madvise(mem.cast(), len, MADV_POPULATE_WRITE) } == 0;
    if !done && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        POPULATE_REFUSED.store(true, Relaxed);
    }
    done
}

/// Elsewhere pages are not faulted in ahead.
///
/// # Safety
/// None needed.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn populate(_mem: *mut u8, _len: usize) -> bool {
    false
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn reserve(_len: usize) -> Option<*mut u8> {
    None
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn unreserve(_mem: *mut u8, _len: usize) {}

/// Elsewhere there is no advice to give.
///
/// # Safety
/// None needed.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn advise_huge(_mem: *mut u8, _len: usize, _now: bool) -> bool {
    false
}

/// Elsewhere there is no advice to give.
///
/// # Safety
/// None needed.
#[cfg(not(target_os = "linux"))]
pub(crate) unsafe fn advise_small(_mem: *mut u8, _len: usize) {}

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
