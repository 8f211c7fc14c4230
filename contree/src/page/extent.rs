//! Huge-page extents ([`Config::huge_pages`](crate::Config::huge_pages)): past its first
//! [`HUGE_AFTER`] bytes, a pool takes the address space of its segments 2 MiB at a time
//! ([`memory::EXTENT`], aligned), so that the kernel can back each such extent with one
//! transparent huge page: one TLB entry instead of 512 for the pages a lookup visits.
//!
//! **Memory follows use.** An extent is reserved address space; its segments open one by one
//! as the pool hands out their pages, as elsewhere, and [`mapped_bytes`]
//! (crate::mapped_bytes) counts them as they open. An extent is advised for huge pages and
//! collapsed into them ([`memory::advise_huge`]) only once it is full, after the last segment
//! of the next extent opened (by the space manager's rounds, at a bounded rate, or, for a
//! tree without it, advised by that allocation and collapsed by the kernel later:
//! [`Huge`]): advising it earlier would let the first write fault in the whole
//! 2 MiB, and collapsing it while its last pages are still being faulted in fails on busy
//! pages (`EAGAIN`: 19 of 40 extents of a 4-million-key load when collapsed as their own
//! last segment opened). So a tree holds no more memory than with small pages; an empty or
//! small tree stays small; the newest one or two extents stay on small pages.
//!
//! **Giving memory back.** Giving back one small page inside a huge page splits it. The
//! periodic release of free pages (`release`) therefore holds the free pages of an extent
//! for reuse (they are taken before fresh pages) while they are fewer than a sixteenth of its
//! pages; it gives back a wholly free extent in one piece, and the free pages of an extent
//! with more, taking the extent's huge-page advice back ([`memory::advise_small`]) so that
//! the kernel does not fill the holes by collapsing it again: an extent emptied by churn
//! goes back to small pages, and memory follows contents as without extents.
//! [`Tree::compact`](crate::Tree::compact), asked to give everything back, gives back every
//! free page.
//!
//! **Where not.** Under NUMA placement (segments of one extent could belong to different
//! nodes), where segments do not come from `mmap` (outside Linux, under Miri), and with
//! `Config::huge_pages` off, every segment is mapped on its own, as below `HUGE_AFTER`.

use super::{memory, SEGMENT_PAGES, SEGMENT_SHIFT};

/// Whether a pool has huge-page extents, and who collapses the full ones.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Huge {
    /// No extents: every segment is mapped on its own.
    Off,
    /// The allocation that fills the next extent advises a full one (`MADV_HUGEPAGE`, a
    /// change of flags) and leaves the collapse to the kernel's `khugepaged`: for trees
    /// without the space manager, whose allocations run inside splits, under latches.
    Advise,
    /// The space manager's rounds of the tree advise and collapse them (`space/manager.rs`),
    /// off every operation's path and at a bounded rate (`segments::COLLAPSE_EVERY`): a
    /// collapse stalls the threads that fault pages in meanwhile (appends measured 7-15%
    /// slower with every extent collapsed as it filled).
    Background,
}

impl Huge {
    /// The mode of a tree's pool: off with `huge_pages` off, in the background where the
    /// space manager runs.
    pub(crate) fn of(config: &crate::Config) -> Huge {
        match (config.huge_pages, config.space_manager) {
            (false, _) => Huge::Off,
            (true, false) => Huge::Advise,
            (true, true) => Huge::Background,
        }
    }
}

/// The bytes of segments a pool maps on their own before its first extent.
pub(crate) const HUGE_AFTER: usize = 4 << 20;

/// The extent plan of a pool: which segments lie in extents, and how many per extent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extents {
    /// The first segment that lies in an extent; every later one does.
    first: usize,
    /// Segments per extent.
    per: usize,
    /// Bytes per segment.
    segment_bytes: usize,
}

impl Extents {
    /// The plan for pages of `page_size` bytes (a power of two, so that an extent holds
    /// whole segments).
    pub(crate) fn plan(page_size: usize) -> Extents {
        let segment_bytes = SEGMENT_PAGES * page_size;
        let per = (memory::EXTENT / segment_bytes).max(1);
        // The small segments (1 + 2 + ... + 16 pages) come first, then full ones.
        let small_pages = SEGMENT_PAGES - 1;
        let small = super::SMALL_SEGMENTS;
        let full = HUGE_AFTER
            .div_ceil(page_size)
            .saturating_sub(small_pages)
            .div_ceil(SEGMENT_PAGES);
        Extents {
            first: small + full.next_multiple_of(per),
            per,
            segment_bytes,
        }
    }

    /// The first segment of the extent that holds segment `seg`, if `seg` lies in one.
    #[inline]
    pub(crate) fn head(&self, seg: usize) -> Option<usize> {
        let k = seg.checked_sub(self.first)?;
        Some(seg - k % self.per)
    }

    /// Whether `seg` is the last segment of its extent (the one whose opening fills it).
    pub(crate) fn is_last(&self, seg: usize) -> bool {
        self.head(seg).is_some_and(|h| seg == h + self.per - 1)
    }

    /// The first segment of the extent before the one whose first segment is `head`.
    pub(crate) fn before(&self, head: usize) -> Option<usize> {
        head.checked_sub(self.per).filter(|&h| h >= self.first)
    }

    /// The byte offset of segment `seg` in its extent (`seg` lies in one).
    pub(crate) fn offset(&self, seg: usize) -> usize {
        let head = self.head(seg).unwrap_or(seg);
        (seg - head) * self.segment_bytes
    }

    /// Bytes of an extent.
    pub(crate) fn bytes(&self) -> usize {
        self.per * self.segment_bytes
    }

    /// Bytes of a segment (all segments in extents are full ones).
    pub(crate) fn segment_bytes(&self) -> usize {
        self.segment_bytes
    }

    /// Pages of an extent.
    pub(crate) fn pages(&self) -> usize {
        self.per * SEGMENT_PAGES
    }

    /// The first segment of the extent of page `pid`, if it lies in one.
    #[inline]
    pub(crate) fn head_of_page(&self, pid: usize) -> Option<usize> {
        self.head(pid >> SEGMENT_SHIFT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{segment_pages, SMALL_SEGMENTS};

    #[test]
    fn extents_start_past_the_first_mibs_and_hold_whole_aligned_groups_of_segments() {
        for page_size in [512, 4096, 16384, 65536] {
            let e = Extents::plan(page_size);
            let before: usize = (0..e.first).map(|s| segment_pages(s) * page_size).sum();
            assert!(before >= HUGE_AFTER, "{page_size}: {before}");
            assert!(e.first >= SMALL_SEGMENTS);
            assert_eq!(e.bytes(), memory::EXTENT, "{page_size}");
            assert_eq!(e.pages() * page_size, e.bytes());
            for s in 0..e.first {
                assert_eq!(e.head(s), None);
                assert!(!e.is_last(s));
            }
            for s in e.first..e.first + 5 * e.per {
                let head = e.head(s).unwrap();
                assert_eq!((head - e.first) % e.per, 0);
                assert!(head <= s && s < head + e.per);
                assert_eq!(e.is_last(s), s == head + e.per - 1);
                assert_eq!(e.offset(s), (s - head) * SEGMENT_PAGES * page_size);
                assert_eq!(e.head_of_page(s << SEGMENT_SHIFT), Some(head));
                assert_eq!(e.head_of_page((s << SEGMENT_SHIFT) + 31), Some(head));
            }
        }
    }
}
