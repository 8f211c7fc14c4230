//! Tree configuration: page size, memory budget and the switches of each mechanism.
//!
//! A `Config` is validated once by [`Tree::with_config`](crate::Tree::with_config); an invalid
//! value is reported as [`Error::InvalidConfig`] naming the field.

use crate::Error;

/// Smallest supported page size in bytes ([`Config::page_size`]), and the default.
pub const MIN_PAGE_SIZE: usize = 4 * 1024;
/// Largest supported page size in bytes ([`Config::page_size`]).
pub const MAX_PAGE_SIZE: usize = 64 * 1024;
/// The smallest page size this build accepts: [`MIN_PAGE_SIZE`], or 512 bytes with the
/// `small-pages` feature (for tests and fuzzing: a few entries fill a leaf, so a short
/// operation sequence splits, merges and grows the tree by several levels).
pub(crate) const SMALLEST_PAGE_SIZE: usize = if cfg!(feature = "small-pages") {
    512
} else {
    MIN_PAGE_SIZE
};

/// Tuning knobs of a [`Tree`](crate::Tree).
///
/// ```
/// use contree::{Config, Tree};
/// let config = Config { page_size: 16 * 1024, max_memory: 64 << 20, ..Config::default() };
/// let tree = Tree::with_config(config).unwrap();
/// tree.insert(b"key", b"value").unwrap();
/// assert_eq!(tree.config().max_inline_key_len(), 1024);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Size of every node in bytes: a power of two from [`MIN_PAGE_SIZE`] (4 KiB) to
    /// [`MAX_PAGE_SIZE`] (64 KiB). Default 4 KiB. The `small-pages` cargo feature (for tests
    /// only) accepts pages down to 512 bytes.
    /// Keys up to `page_size / 16` bytes and values up to `page_size / 4` bytes are stored in
    /// their nodes; longer ones (up to [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) and
    /// [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN) whatever the page size) out of line.
    pub page_size: usize,
    /// Budget for page memory in bytes (`usize::MAX`, the default, means no limit). When
    /// it is reached, an operation that needs a new page returns [`Error::OutOfSpace`] and
    /// leaves the tree unchanged. Must allow at least 4 pages.
    ///
    /// The budget is counted in whole pages: a value that is not a multiple of
    /// `page_size` is rounded down to one (`10 * 4096 + 100` allows 10 pages of 4 KiB),
    /// and it is capped at 2^26 pages (256 GiB of 4 KiB pages). The budget in effect is
    /// the one [`Error::OutOfSpace`] reports as `max_memory`. One exception: the undo of
    /// a failed [`Tree::insert_many`](crate::Tree::insert_many) may take up to 8 pages
    /// past the budget to put back the values it replaced (see there).
    pub max_memory: usize,
    /// Merge a node into a sibling after a removal leaves it less full than this fraction
    /// of a page (0.0 turns merging off except for empty nodes). Default 0.25.
    pub merge_threshold: f64,
    /// Contention Split: split a leaf between two entries that different threads keep
    /// changing while they wait for each other on its latch. Default on.
    pub contention_split: bool,
    /// A leaf change is sampled into the leaf's contention counters with probability
    /// `2^-contention_sample_shift` (0 to 16). Default 2 (25%, as in the paper).
    pub contention_sample_shift: u32,
    /// A sampled change ends the leaf's counting period with probability
    /// `2^-(contention_period_shift - contention_sample_shift)`, so a period ends on a change
    /// with probability `2^-contention_period_shift` (at least the sample shift, at most 24).
    /// Default 9 (as in the paper).
    pub contention_period_shift: u32,
    /// The share of sampled changes that found the latch taken at which a period counts as
    /// contended (0.0 to 1.0; 0.0 splits at every period end where two slots differ).
    /// Default 0.1: see `docs/design.md` for the measurement behind it.
    pub contention_threshold: f64,
    /// Whether Contention Split may split a leaf whose contention comes from appends at its
    /// end (auto-increment keys): such a split cannot spread the writers, since the next key
    /// goes to the new right half again, and leaves a half-empty leaf behind. Off (the
    /// default), a contended period of appends asks for no split and is counted in
    /// [`Stats::append_hot_periods`](crate::Stats::append_hot_periods); leaf combining
    /// ([`combining`](Self::combining)) serves those writers. On: the paper's rule.
    pub contention_split_appends: bool,
    /// XMerge: the largest group of neighbouring siblings (K in the paper) packed into one
    /// node fewer, 2 to 16. Larger groups free more pages but keep more latches at once.
    /// Default 5 (as in the paper).
    pub xmerge_group: usize,
    /// Run the space manager for this tree: one background thread shared by all trees of the
    /// process (started by the first tree that needs it) applies XMerge to random nodes of
    /// each tree while its fill factor is below `fill_target`, and sleeps otherwise. Removals
    /// that empty nodes, [`Tree::compact`](crate::Tree::compact) and the reclaim that
    /// precedes [`Error::OutOfSpace`] free space either way. Default on.
    pub space_manager: bool,
    /// The fill factor (see [`Stats::fill_factor`](crate::Stats::fill_factor)) below which
    /// the space manager works, from 0.0 (never) to 1.0 (always). Default 0.9.
    pub fill_target: f64,
    /// The share of one core the space manager may use while it works, from 0.0 (exclusive)
    /// to 1.0 (no pause between rounds). It sleeps after each round of XMerges for as long
    /// as the round took times `(1 - share) / share`. Default 0.02: see `docs/design.md`.
    pub space_manager_share: f64,
    /// Give the memory of free pages back to the system (Linux: `madvise(MADV_DONTNEED)`;
    /// the addresses stay mapped, so a late optimistic reader never faults), keeping a
    /// reserve of a sixteenth of the pages in use for reuse. It happens at space-manager
    /// rounds, at [`Tree::compact`](crate::Tree::compact) (which keeps no reserve) and,
    /// without the space manager, from removals once the free pages exceed twice the
    /// reserve. A returned page costs a page fault when it is reused. No effect elsewhere
    /// than Linux. Default on.
    pub return_memory: bool,
    /// Huge pages for the page pool past its first 4 MiB: the pool takes address space for
    /// its segments 2 MiB at a time, aligned, and once such an extent is full advises it for
    /// transparent huge pages (Linux: `madvise(MADV_HUGEPAGE)`; the space manager's thread
    /// then collapses it, `MADV_COLLAPSE`, at most one per 35 ms; without the space manager
    /// the kernel's `khugepaged` does, in its own time), so that one TLB entry covers 512
    /// pages of 4 KiB. The memory held is that of the
    /// segments in use, as without. The free pages of an extent go back to the system (see
    /// [`return_memory`](Self::return_memory)) once they are a sixteenth of its pages or at
    /// [`Tree::compact`](crate::Tree::compact), and the extent then stays on small pages;
    /// fewer are kept for reuse. Counted in
    /// [`Stats::huge_extents`](crate::Stats::huge_extents). No effect elsewhere than Linux
    /// or under NUMA page placement. Default on.
    pub huge_pages: bool,
    /// Fault fresh pages in ahead of use: with the space manager on, its thread faults in
    /// the pages of the segment (32 pages) that writers take fresh pages from before they
    /// reach them, with one system call per few pages (Linux:
    /// `madvise(MADV_POPULATE_WRITE)`), so that a split takes a page that is already there
    /// instead of paying a page fault while it holds the node's split gate (2.4 to 3 us per
    /// fresh page on a virtual machine; see `docs/design.md`). It opens no segment ahead: a
    /// tree holds the same memory as without. Counted in
    /// [`Stats::pages_prefaulted`](crate::Stats::pages_prefaulted). No effect without the
    /// space manager, elsewhere than Linux or under NUMA page placement. Default off: on a
    /// machine with no CPU to spare for the manager's thread it costs more than it saves
    /// (8 threads appending on 2 CPUs ran 15-33% slower with it, one writer within 1%;
    /// `docs/design.md`). Worth turning on where writers leave cores idle.
    pub prefault: bool,
    /// How much of its leaf a point read (`get`, `get_with`, `get_into`, `contains_key`)
    /// asks the CPU to load as soon as it knows the leaf's page, before it reads the
    /// leaf's header: see [`LeafPrefetch`]. Default [`LeafPrefetch::Auto`]: the whole page
    /// on AMD processors, its first KiB on others.
    pub leaf_prefetch: LeafPrefetch,
    /// The blob heap: out-of-line bytes shorter than a page (values longer than
    /// [`max_inline_value_len`](Self::max_inline_value_len), the rests of keys longer than
    /// [`max_inline_key_len`](Self::max_inline_key_len)) are packed many to a page, so that
    /// each costs its length plus 4 to 8 bytes. Off: each takes a chain of whole pages (a
    /// 300-byte key rest costs a page). Default on.
    pub blob_heap: bool,
    /// Leaf-level combining: a writer whose insert or removal (of a key and value that stay
    /// inline; no closure) finds its leaf latched by another writer hands the operation to
    /// that writer and sleeps, and the holder applies it in the same critical section, so
    /// one latch handoff serves many operations (appends from many threads on the
    /// rightmost leaf). Counted in [`Stats::ops_combined`](crate::Stats::ops_combined) and
    /// [`Stats::combine_batches`](crate::Stats::combine_batches). An uncontended leaf pays
    /// one load per write. Default on.
    pub combining: bool,
    /// Split gates: one thread at a time splits a node. Writers that find a leaf full while
    /// another thread splits it wait for that split and then retry, instead of each taking
    /// a page and racing to latch the leaf (appends from many threads on the rightmost
    /// leaf: without gates the racing splitters restart over and over, and the one that
    /// wins splits at its own key, which for a late append is the middle). Counted in
    /// [`Stats::split_gate_waits`](crate::Stats::split_gate_waits). Costs two atomic
    /// operations per split; not used by trees with a memory budget. Default on.
    pub split_gate: bool,
    /// Room for late appends: while auto-increment keys arrive a little out of order (from
    /// several threads; seen as a key that fills the rightmost leaf a few slots short of its
    /// end), a split of the rightmost leaf leaves its last few entries (at most 8, and at
    /// most a sixteenth of the leaf) on the right, so that a key handed out before the split
    /// and inserted after it finds room on either side. Off, such a key splits the full
    /// left half in the middle, and leaves stay 65-78% full under appends from 2 to 8
    /// threads (about 24 bytes per 8-byte key and value against 16); on, 95%. The cost: on
    /// 2 cores, writers that no longer stop for those splits meet more often on the
    /// rightmost leaf's latch (`docs/design.md`). Default on.
    pub append_reserve: bool,
    /// The side structure for hot ranges (the auxiliary structure of the "hot spots" paper):
    /// when Contention Split's sampler finds ordered appends from several threads on one
    /// leaf, that leaf's key range may become hot, and inserts and removals of its keys then
    /// go to sharded sorted maps beside the tree instead of latching the leaf; they are
    /// merged into the tree in key order, a leaf latch per run of keys, every
    /// [`side_merge_entries`](Self::side_merge_entries) entries and before any range read
    /// over them. Every operation sees them as if they were in the tree. Counted in
    /// [`Stats::side_diverted`](crate::Stats::side_diverted) and the other `side_` fields.
    /// Needs [`contention_split`](Self::contention_split) (its sampler finds the ranges).
    /// [`SideStructure::WithScans`], the default, uses it only while range reads run beside
    /// the appends, where it measured best; leaf [`combining`](Self::combining) serves
    /// appends alone better (`docs/design.md`).
    pub side_structure: SideStructure,
    /// The most key ranges the side structure keeps hot at once; marking one more merges
    /// the least recently merged first. From 1 to 64. Default 4.
    pub side_ranges: usize,
    /// The entries (tombstones included) a hot range gathers before they are merged into
    /// the tree. At least 16. Default 4096.
    pub side_merge_entries: usize,
    /// Line mode for hot leaves (Eunomia's per-cache-line conflict detection, in software;
    /// `sync::lines`): a leaf that many threads update in place is switched to a mode in
    /// which [`Tree::update_with`](crate::Tree::update_with) takes no latch, only locks on
    /// the 64-byte stretches of the page its value covers, and point reads check only the
    /// stretches they read, so updates of different keys of one leaf neither serialise on
    /// its latch word nor fail each other's readers. Any other write to the leaf (an insert,
    /// a removal, a split), a scan over it or a value that changes length ends the mode.
    /// Counted in [`Stats::hot_leaves`](crate::Stats::hot_leaves) and the other `line_`
    /// fields. Default [`LineMode::Off`]: on 2 cores it measured no faster on YCSB-A/B
    /// (zipf 0.99) and it adds instructions to every update (`docs/design.md`);
    /// [`LineMode::Auto`] lets a per-leaf detector decide.
    pub line_mode: LineMode,
    /// Eunomia's conflict-control module (`sync::ccm`) above every leaf in line mode:
    /// advisory locks by key hash that serialise in-place updates of one key before they
    /// enter the leaf (waiters park), and mark bits (a Bloom filter of the leaf's keys) that
    /// answer point reads and updates of absent keys without searching the leaf. It acts only
    /// on leaves in line mode, so with [`line_mode`](Self::line_mode) `Off` it does nothing.
    /// Counted in [`Stats::ccm_waits`](crate::Stats::ccm_waits) and
    /// [`Stats::mark_rejections`](crate::Stats::mark_rejections). Default: mark bits on, key
    /// locks off (see [`ConflictControl`]).
    pub conflict_control: ConflictControl,
    /// Eunomia's insert segments (`sync::segments`) beside every leaf in line mode: an
    /// insert of a new key (up to 64 bytes, with a value of up to 128) into such a leaf
    /// takes no latch, only the lock of one of four segments (picked by the key's hash),
    /// each on cache lines of its own, and the leaf's sorted area and its readers are left
    /// alone. The records move into the sorted area when line mode ends (a scan, a split, a
    /// removal, a read of a key in a segment, a full segment), so inserts no longer end line
    /// mode by themselves, and a leaf that many threads insert into can switch to it (the
    /// detector counts latched inserts as it counts updates). Counted in
    /// [`Stats::segment_inserts`](crate::Stats::segment_inserts),
    /// [`Stats::segment_moves`](crate::Stats::segment_moves) and
    /// [`Stats::segment_waits`](crate::Stats::segment_waits). Acts only on leaves in line
    /// mode, so with [`line_mode`](Self::line_mode) `Off` (the default) it does nothing.
    /// Default `true`.
    pub insert_segments: bool,
    /// Eunomia's two phases for point reads: a read whose leaf phase (the search and copy
    /// in the leaf it descended to) fails its validation because a writer changed that
    /// leaf runs the leaf phase again on the same leaf, without descending again, unless
    /// the tree's structure changed meanwhile (a split, merge or XMerge anywhere bumps the
    /// tree's structure sequence, the paper's split sequence number). Counted in
    /// [`Stats::leaf_restarts`](crate::Stats::leaf_restarts) beside
    /// [`Stats::restarts`](crate::Stats::restarts) (from the root). Default `true`; `false`
    /// restarts every failed read from the root.
    pub leaf_phase_restarts: bool,
    /// The NUMA parts (`numa-btree.md`): the topology, upper-level replicas per node. All
    /// off by default; see [`Numa`](crate::Numa).
    pub numa: crate::numa::Numa,
}

/// When a leaf switches to line mode ([`Config::line_mode`]).
///
/// ```
/// use contree::{Config, LineMode, Tree};
/// let tree = Tree::with_config(Config {
///     line_mode: LineMode::Always,
///     // The space manager works on a tree this empty, and any latch it takes on the leaf
///     // would end line mode at a moment of its choosing: off, for counts that are exact.
///     space_manager: false,
///     ..Config::default()
/// })
/// .unwrap();
/// tree.insert(b"k", &[0; 8]).unwrap(); // under the latch; the leaf switches to line mode
/// tree.update_with(b"k", |v| v[0] = 1); // in line mode: no latch
/// tree.insert(b"n", &[5; 8]).unwrap(); // a new key: into an insert segment, no latch
/// assert_eq!(tree.get(b"k").unwrap()[0], 1);
/// assert_eq!(tree.stats().hot_leaves, 1);
/// assert_eq!(tree.stats().line_updates, 1);
/// assert_eq!(tree.stats().segment_inserts, 1);
/// // A read of a key in a segment ends line mode: the records move into the leaf.
/// assert_eq!(tree.get(b"n"), Some(vec![5; 8]));
/// assert_eq!(tree.stats().segment_moves, 1);
/// assert_eq!(tree.stats().hot_leaves, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineMode {
    /// Never: every update latches its leaf (the default).
    #[default]
    Off,
    /// When the leaf's detector sees in-place updates from different threads arrive close
    /// together: sampled updates under the latch count a *handoff* when the last sampled
    /// update came from another thread within a few microseconds, and enough handoffs in
    /// a row switch the leaf (`policy::lines`). Leaves that one thread updates, or that are
    /// updated now and then, never switch.
    Auto,
    /// At the first in-place update of a leaf under its latch (tests, and the ablation of
    /// the detector).
    Always,
}

/// The parts of the conflict-control module above leaves in line mode
/// ([`Config::conflict_control`]); each can be switched off alone (the ablation of
/// `docs/design.md`).
///
/// ```
/// use contree::{Config, ConflictControl, LineMode, Tree};
/// let config = Config {
///     line_mode: LineMode::Always,
///     conflict_control: ConflictControl { key_locks: true, ..ConflictControl::default() },
///     // A latch the space manager took on the leaf would end line mode (see `LineMode`).
///     space_manager: false,
///     ..Config::default()
/// };
/// let tree = Tree::with_config(config).unwrap();
/// tree.insert(b"k1", &[0; 8]).unwrap();
/// tree.update_with(b"k1", |v| v[0] = 1); // under the latch: the leaf switches to line mode
/// assert_eq!(tree.get(b"k2"), None); // absent: its mark bit is clear, the leaf is not searched
/// assert_eq!(tree.stats().mark_rejections, 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConflictControl {
    /// Advisory locks by key hash: an in-place update of a leaf in line mode takes the lock
    /// of its key's hash (one of 16 per leaf) before it enters the leaf, so that updates of
    /// one key queue there, parked, instead of on the stretch locks of the leaf's value
    /// bytes. Default `false`: on 2 cores (YCSB-A, zipf 0.99) the updates that waited for a
    /// key lock were ten times the stretch-lock waits they replaced (the lock is held from
    /// before the search, and keys share its 16 words) and throughput did not move beyond
    /// noise (`docs/design.md`).
    pub key_locks: bool,
    /// Mark bits: a 512-bit Bloom filter of the keys of a leaf, built when the leaf switches
    /// to line mode (no key enters a leaf in line mode without ending it). A point read or
    /// an update of a key whose bit is clear answers "absent" without searching the leaf.
    /// Default `true`.
    pub mark_bits: bool,
}

impl ConflictControl {
    /// Both parts off.
    pub const OFF: ConflictControl = ConflictControl {
        key_locks: false,
        mark_bits: false,
    };
}

impl Default for ConflictControl {
    fn default() -> Self {
        ConflictControl {
            key_locks: false,
            mark_bits: true,
        }
    }
}

/// When the tree diverts the appends of a contended leaf to the side structure for hot
/// ranges ([`Config::side_structure`]).
///
/// ```
/// use contree::{Config, SideStructure, Tree};
/// let config = Config { side_structure: SideStructure::Always, ..Config::default() };
/// let tree = Tree::with_config(config).unwrap();
/// tree.insert(b"k", b"v").unwrap();
/// assert_eq!(tree.stats().side_ranges, 0); // nothing is hot until the sampler finds appends
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SideStructure {
    /// Never: appends from many threads are served by leaf combining alone.
    Off,
    /// Only while range reads (iterators, cursors, `first`/`last`) run beside the appends:
    /// a contended append range is marked hot if a range read began since the last
    /// decision, and a hot range that is merged after no range read began since the last
    /// decision cools for good, so that the tree goes back to leaf combining when the
    /// scans stop. On 2 cores this kept range reads 7x faster beside appends, while appends
    /// alone or beside point reads run 2x faster with combining (`docs/design.md`).
    #[default]
    WithScans,
    /// Whenever the sampler finds ordered appends from several threads on a leaf.
    Always,
}

/// How much of its leaf a point read prefetches ([`Config::leaf_prefetch`]). Descents ask
/// for the first KiB of every inner node (header and first slots) as soon as they know its
/// page; for the leaf, asking for the whole page also brings the line of the entry the
/// search ends at, anywhere in the heap, together with the header instead of one miss
/// later, at the cost of 48 more prefetch instructions and of 64 lines in flight. Which
/// pays depends on the processor (`docs/design.md`, `bench/results/leaf-prefetch-s65.txt`):
/// on an AMD EPYC the whole page made reads of out-of-cache leaves 14-29% faster and left
/// cached ones unchanged; on an Intel Xeon VM it made reads 1.2-1.5x slower, in cache and
/// out of it (in one quiet stretch it was level).
///
/// ```
/// use contree::{Config, LeafPrefetch, Tree};
/// let config = Config { leaf_prefetch: LeafPrefetch::Head, ..Config::default() };
/// let tree = Tree::with_config(config).unwrap();
/// tree.insert(b"k", b"v").unwrap();
/// assert_eq!(tree.get(b"k"), Some(b"v".to_vec()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LeafPrefetch {
    /// Chosen by the processor when the tree is made: [`Whole`](Self::Whole) on AMD (and
    /// Hygon) x86-64 processors, [`Head`](Self::Head) on others (the default).
    #[default]
    Auto,
    /// The first KiB of the leaf, as for inner nodes.
    Head,
    /// The whole page.
    Whole,
}

impl LeafPrefetch {
    /// Whether point reads prefetch their whole leaf under this setting, on this processor.
    pub(crate) fn whole(self) -> bool {
        match self {
            LeafPrefetch::Head => false,
            LeafPrefetch::Whole => true,
            LeafPrefetch::Auto => whole_by_vendor(&cpu_vendor()),
        }
    }
}

/// [`LeafPrefetch::Auto`]'s choice for a processor whose CPUID vendor string is `vendor`.
fn whole_by_vendor(vendor: &[u8; 12]) -> bool {
    vendor == b"AuthenticAMD" || vendor == b"HygonGenuine"
}

/// The processor's CPUID vendor string (zeros where there is none, and under Miri, which
/// does not run the CPUID instruction).
fn cpu_vendor() -> [u8; 12] {
    let mut v = [0u8; 12];
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: every x86-64 processor has the CPUID instruction, and leaf 0 exists on
        // all of them (the intrinsic is a safe function on newer compilers).
        #[allow(unused_unsafe)]
        let r = unsafe { std::arch::x86_64::__cpuid(0) };
        v[..4].copy_from_slice(&r.ebx.to_le_bytes());
        v[4..8].copy_from_slice(&r.edx.to_le_bytes());
        v[8..].copy_from_slice(&r.ecx.to_le_bytes());
    }
    v
}

impl Default for Config {
    fn default() -> Self {
        Config {
            page_size: MIN_PAGE_SIZE,
            max_memory: usize::MAX,
            merge_threshold: 0.25,
            contention_split: true,
            contention_sample_shift: 2,
            contention_period_shift: 9,
            contention_threshold: 0.1,
            contention_split_appends: false,
            xmerge_group: 5,
            space_manager: true,
            fill_target: 0.9,
            space_manager_share: 0.02,
            return_memory: true,
            huge_pages: true,
            prefault: false,
            leaf_prefetch: LeafPrefetch::Auto,
            blob_heap: true,
            combining: true,
            split_gate: true,
            append_reserve: true,
            side_structure: SideStructure::WithScans,
            side_ranges: 4,
            side_merge_entries: 4096,
            line_mode: LineMode::Off,
            conflict_control: ConflictControl::default(),
            insert_segments: true,
            leaf_phase_restarts: true,
            numa: crate::numa::Numa::default(),
        }
    }
}

impl Config {
    /// The longest key this configuration accepts, in bytes: [`MAX_KEY_LEN`] (16 KiB)
    /// whatever the page size.
    ///
    /// ```
    /// assert_eq!(contree::Config::default().max_key_len(), contree::MAX_KEY_LEN);
    /// ```
    ///
    /// [`MAX_KEY_LEN`]: crate::MAX_KEY_LEN
    pub fn max_key_len(&self) -> usize {
        crate::long_key::MAX_KEY_LEN
    }

    /// The longest key a node holds whole (a sixteenth of a page: 256 bytes on the default
    /// 4 KiB page). A longer key keeps its first `max_inline_key_len() - 7` bytes in the nodes
    /// that name it (its leaf entry, and separators and fences made from it), with an 8-byte
    /// reference to the rest, which lives out of line in the tree's blob heap (many rests
    /// packed into each page of the tree's pool, 8 bytes of overhead each) or, past a page,
    /// in a chain of whole pages; both count in `max_memory`. Searches compare the rest only
    /// when their key shares those first bytes, and validate as for every read.
    ///
    /// ```
    /// let config = contree::Config::default();
    /// assert_eq!(config.max_inline_key_len(), config.page_size / 16);
    /// ```
    pub fn max_inline_key_len(&self) -> usize {
        crate::node::inline_key_max(self.page_size)
    }

    /// The longest value this configuration accepts, in bytes: [`MAX_VALUE_LEN`] (16 MiB)
    /// whatever the page size.
    ///
    /// ```
    /// assert_eq!(contree::Config::default().max_value_len(), contree::MAX_VALUE_LEN);
    /// ```
    ///
    /// [`MAX_VALUE_LEN`]: crate::MAX_VALUE_LEN
    pub fn max_value_len(&self) -> usize {
        crate::blob::MAX_VALUE_LEN
    }

    /// The longest value a leaf holds inside its page (a quarter of a page: 1 KiB on the
    /// default 4 KiB page). A longer value is stored out of line behind an 8-byte stub in its
    /// leaf: in the tree's blob heap if it fits a page with 28 bytes to spare (many values
    /// packed into each page, 4 bytes of overhead each), else in a chain of
    /// `ceil(len / (page_size - 16))` whole pages; both come from the tree's page pool and
    /// count in `max_memory`. Reads copy it and validate its leaf, as they do for inline
    /// values.
    ///
    /// ```
    /// let config = contree::Config::default();
    /// assert_eq!(config.max_inline_value_len(), config.page_size / 4);
    /// ```
    pub fn max_inline_value_len(&self) -> usize {
        self.page_size / 4
    }

    /// Checks every field; the first invalid one is reported (as
    /// [`Tree::with_config`](crate::Tree::with_config) does).
    ///
    /// ```
    /// use contree::{Config, Error};
    /// assert!(Config::default().validate().is_ok());
    /// let bad = Config { xmerge_group: 1, ..Config::default() };
    /// assert!(matches!(bad.validate(), Err(Error::InvalidConfig { field: "xmerge_group", .. })));
    /// ```
    pub fn validate(&self) -> Result<(), Error> {
        fn require(
            ok: bool,
            field: &'static str,
            reason: impl FnOnce() -> String,
        ) -> Result<(), Error> {
            if ok {
                Ok(())
            } else {
                Err(Error::InvalidConfig {
                    field,
                    reason: reason(),
                })
            }
        }
        require(
            self.page_size.is_power_of_two()
                && (SMALLEST_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&self.page_size),
            "page_size",
            || {
                format!(
                    "{} is not a power of two between {SMALLEST_PAGE_SIZE} and {MAX_PAGE_SIZE}",
                    self.page_size
                )
            },
        )?;
        require(self.max_memory / self.page_size >= 4, "max_memory", || {
            format!(
                "{} bytes is less than 4 pages of {} bytes",
                self.max_memory, self.page_size
            )
        })?;
        require(
            (0.0..=0.5).contains(&self.merge_threshold),
            "merge_threshold",
            || format!("{} is not between 0.0 and 0.5", self.merge_threshold),
        )?;
        require(
            self.contention_sample_shift <= 16,
            "contention_sample_shift",
            || format!("{} is above 16", self.contention_sample_shift),
        )?;
        require(
            (self.contention_sample_shift..=24).contains(&self.contention_period_shift),
            "contention_period_shift",
            || {
                format!(
                    "{} is not between contention_sample_shift ({}) and 24",
                    self.contention_period_shift, self.contention_sample_shift
                )
            },
        )?;
        require(
            (0.0..=1.0).contains(&self.contention_threshold),
            "contention_threshold",
            || format!("{} is not between 0.0 and 1.0", self.contention_threshold),
        )?;
        require((1..=64).contains(&self.side_ranges), "side_ranges", || {
            format!("{} is not between 1 and 64", self.side_ranges)
        })?;
        require(self.side_merge_entries >= 16, "side_merge_entries", || {
            format!("{} is below 16", self.side_merge_entries)
        })?;
        require(
            (2..=16).contains(&self.xmerge_group),
            "xmerge_group",
            || format!("{} is not between 2 and 16", self.xmerge_group),
        )?;
        require(
            (0.0..=1.0).contains(&self.fill_target),
            "fill_target",
            || format!("{} is not between 0.0 and 1.0", self.fill_target),
        )?;
        require(
            self.space_manager_share > 0.0 && self.space_manager_share <= 1.0,
            "space_manager_share",
            || {
                format!(
                    "{} is not above 0.0 and at most 1.0",
                    self.space_manager_share
                )
            },
        )?;
        self.numa.validate(self.page_size)
    }
}

#[cfg(test)]
mod tests {
    use super::{cpu_vendor, whole_by_vendor, LeafPrefetch};

    /// `Auto` prefetches whole leaves on AMD and Hygon processors only; the fixed settings
    /// ignore the processor.
    #[test]
    fn leaf_prefetch_follows_the_vendor() {
        assert!(whole_by_vendor(b"AuthenticAMD"));
        assert!(whole_by_vendor(b"HygonGenuine"));
        assert!(!whole_by_vendor(b"GenuineIntel"));
        assert!(!whole_by_vendor(&[0; 12]));
        assert!(LeafPrefetch::Whole.whole());
        assert!(!LeafPrefetch::Head.whole());
        assert_eq!(LeafPrefetch::Auto.whole(), whole_by_vendor(&cpu_vendor()));
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        assert!(cpu_vendor().iter().all(|b| b.is_ascii_graphic()));
    }
}
