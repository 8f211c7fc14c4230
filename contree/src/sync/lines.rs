//! Line locks of hot leaves: Eunomia's per-cache-line conflict detection
//! (`eunomia-contended-index.md` §4.2), in software.
//!
//! Under HTM a transaction conflicts only with writers of the cache lines it touched. The
//! hybrid latch has one version per leaf instead, so every update of a hot leaf takes the
//! leaf's latch word (a cache-line transfer between cores) and makes every optimistic reader
//! of that leaf, whatever key it reads, validate against a changed word. A leaf in **line
//! mode** (the latch's `LINES` bit) has a second level of versions, one per stretch of
//! `page_size / LINES` bytes of its page (64 bytes for 4 KiB pages), each on its own cache
//! line in a process-wide table:
//!
//! * **An in-place update** (the value keeps its length, `Tree::update_with`) takes no latch
//!   at all. It reads the leaf optimistically, locks the versions of the stretches its
//!   value covers (odd = locked; in ascending order), issues a `SeqCst` fence, checks that
//!   the leaf's version did not change and nobody latched it, writes the value and unlocks
//!   (the version moves on by one more, back to even).
//! * **A point read** of a leaf in line mode checks the versions of the stretches of the
//!   value it copies (even before, unchanged after) and the leaf's version. A reader of
//!   another key never notices the update.
//! * **Every other access** to the leaf goes through its latch. Any exclusive acquisition of
//!   a latch with `LINES` set ends line mode first, in `ExclusiveGuard::acquired`: it issues
//!   a `SeqCst` fence, waits until no stretch is locked ([`quiesce`]), moves the records of
//!   the leaf's insert segments into its page (`sync::segments`), gives the table entry back
//!   ([`give_back`]) and clears the bit. The fences on both sides make sure that either the
//!   updater sees the exclusive bit (and unlocks without writing) or the acquirer sees the
//!   locked stretch (and waits for it). A shared acquisition ends line mode the same way,
//!   and an optimistic guard taken in line mode fails the ordinary `validate` (which cannot
//!   know which stretches the reader read): structure changes, scans and every other reader
//!   stay as they are, at the price of ending line mode when they meet it.
//!
//! The table is process-wide because the latch, which must find a leaf's entry when it ends
//! line mode, knows only its own address: an entry is found by hashing the latch address
//! and probing [`PROBE`] entries. A leaf enters line mode under its exclusive latch
//! ([`claim`]); a tree gives its entries back when it is dropped ([`release_tree`]). Version
//! words only grow, so a reader that matched an entry just given to another leaf fails its
//! leaf validation, never accepts torn bytes.
//!
//! **Eviction.** A leaf keeps its entry until something latches it, so leaves that went
//! cold would hold the table against hotter ones. A writer whose leaf finds every entry it
//! may use taken ([`evict_cold`]) ends the line mode of a cold leaf of its own tree among
//! them: one whose stretch versions did not move for [`COLD_US`] microseconds, judged over
//! two looks (a second chance: the first look records the versions' sum and the time). It
//! takes that leaf's latch only if it is free at once ([`HybridLatch::evict_lines`]), never
//! waits for one while it holds its own, and backs off if an in-place update holds a
//! stretch (whose closure could wait for the gate below); else it ends line mode as any
//! exclusive acquisition does. The victim's latch address comes from the table, so it may name a leaf
//! of a tree that is being dropped; one evictor at a time holds [`GATE`], and a dropped
//! tree's [`release_tree`] takes it after giving its entries back: an address read under
//! the gate lies in a pool that lives until the gate is released.

use crate::sync::seam::{
    fence, yield_now, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use crate::sync::{segments, spin_hint, HybridLatch, Restart};

/// Entries of the process-wide table: leaves in line mode at once, over all trees (a power
/// of two). 1024: on YCSB-A at zipf 0.99 over 10^6 records (~4,700 leaves) with line mode
/// `Always`, 128 entries took 0.32 of the 0.5 updates per operation into line mode (the rest
/// hit leaves that found their entries taken) and 1024 take 0.41, halving the latch
/// handoffs per operation (`bench/results/eunomia-latch-stats.txt`, session 37). An entry
/// costs about 6 KiB of zero pages (its lines here, its segments, marks and key locks),
/// touched only once a leaf claims it.
#[cfg(not(feature = "shuttle"))]
pub(crate) const ENTRIES: usize = 1024;
/// Under Shuttle, four entries that every leaf probes, no cold period and a look at every
/// failed claim (`ops::lines`), so that the models fill the table and evict.
#[cfg(feature = "shuttle")]
pub(crate) const ENTRIES: usize = 4;
const _: () = assert!(ENTRIES.is_power_of_two());
/// Versions per entry: a leaf's page is cut into this many stretches of equal length.
pub(crate) const LINES: usize = 64;
/// Entries probed from a latch address's home entry.
const PROBE: usize = 4;

/// A leaf whose stretch versions did not move for this many microseconds is cold: an
/// evictor may end its line mode ([`evict_cold`]). YCSB-A at zipf 0.99 over 10^6 records
/// with line mode `Always` (about 4,700 leaves for 1024 entries; latch-stats build, 8 and
/// 16 threads on 2 cores) left 0.058-0.060 leaf-latch handoffs per operation with 0.5 ms,
/// 0.057-0.060 with 2 ms and 0.055-0.056 with 8 ms (0.071 without eviction): a shorter
/// period evicts leaves that are still warm, and each eviction is a latch acquisition too.
pub(crate) const COLD_US: u32 = if cfg!(feature = "shuttle") { 0 } else { 8_000 };

/// One version word on its own cache line.
#[repr(align(64))]
struct Line(AtomicU64);

/// An evictor's last look at an entry ([`evict_cold`]): the owner it saw, the sum of the
/// stretch versions and the time (`policy::lines::clock_us`). Written only under [`GATE`].
struct Look {
    owner: AtomicUsize,
    sum: AtomicU64,
    at: AtomicU32,
}

/// The table. Untouched entries cost no memory: the statics are zero pages until used.
struct Table {
    /// The latch address of the leaf that owns each entry (0: free).
    owners: [AtomicUsize; ENTRIES],
    /// The tree each entry's leaf belongs to (`TreeCore::id`).
    trees: [AtomicUsize; ENTRIES],
    lines: [[Line; LINES]; ENTRIES],
    looks: [Look; ENTRIES],
}

static TABLE: Table = Table {
    owners: [const { AtomicUsize::new(0) }; ENTRIES],
    trees: [const { AtomicUsize::new(0) }; ENTRIES],
    lines: [const { [const { Line(AtomicU64::new(0)) }; LINES] }; ENTRIES],
    looks: [const {
        Look {
            owner: AtomicUsize::new(0),
            sum: AtomicU64::new(0),
            at: AtomicU32::new(0),
        }
    }; ENTRIES],
};

/// Held by the one thread that evicts at a time ([`evict_cold`]), and taken by
/// [`release_tree`] after it gave a dropped tree's entries back (see the module doc).
static GATE: AtomicBool = AtomicBool::new(false);

/// The gate, held; released on drop.
struct Gate;

impl Gate {
    /// The gate if nobody holds it.
    fn try_take() -> Option<Gate> {
        GATE.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(Gate)
    }

    /// The gate, waiting while an evictor holds it (an eviction takes one latch that was
    /// free and waits only for the in-place updates under way in its leaf).
    fn take() -> Gate {
        let mut spins = 0;
        loop {
            if let Some(g) = Gate::try_take() {
                return g;
            }
            wait(&mut spins);
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        GATE.store(false, Ordering::Release);
    }
}

/// The entry a latch address hashes to first.
#[inline]
fn home(addr: usize) -> usize {
    ((addr as u64 >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - ENTRIES.trailing_zeros()))
        as usize
}

/// The entry of the leaf whose latch is at `addr`, if it is in line mode.
#[inline]
pub(crate) fn find(addr: usize) -> Option<usize> {
    let h = home(addr);
    (0..PROBE)
        .map(|i| (h + i) % ENTRIES)
        .find(|&e| TABLE.owners[e].load(Ordering::Acquire) == addr)
}

/// Takes an entry for the leaf whose latch is at `addr` in tree `tree`; the caller holds
/// that latch exclusively and sets its `LINES` bit after. `None` when every entry the
/// address may use is taken.
pub(crate) fn claim(addr: usize, tree: usize) -> Option<usize> {
    let h = home(addr);
    (0..PROBE).map(|i| (h + i) % ENTRIES).find(|&e| {
        let claimed = TABLE.owners[e]
            .compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if claimed {
            TABLE.trees[e].store(tree, Ordering::Release);
        }
        claimed
    })
}

/// Entries taken by leaves of `tree` (`Stats::hot_leaves`).
pub(crate) fn count_tree(tree: usize) -> usize {
    (0..ENTRIES)
        .filter(|&e| {
            TABLE.owners[e].load(Ordering::Acquire) != 0
                && TABLE.trees[e].load(Ordering::Relaxed) == tree
        })
        .count()
}

/// Gives back every entry of `tree`, which is being dropped (nobody uses its pages), then
/// waits for an eviction under way, which may have read one of their addresses (see the
/// module doc).
pub(crate) fn release_tree(tree: usize) {
    for e in 0..ENTRIES {
        if TABLE.trees[e].load(Ordering::Relaxed) == tree {
            TABLE.trees[e].store(0, Ordering::Relaxed);
            TABLE.owners[e].store(0, Ordering::Release);
        }
    }
    drop(Gate::take());
}

/// For a writer of tree `tree` that holds the latch at `addr` exclusively and found every
/// entry it may use taken ([`claim`] failed): ends the line mode of a cold leaf of the same
/// tree among the leaves holding those entries, so that a second `claim` may succeed.
/// Returns whether it ended one. Gives up at once where another thread evicts, or the
/// cold leaf's latch is taken. `now` is `policy::lines::clock_us`.
#[cold]
#[inline(never)]
pub(crate) fn evict_cold(addr: usize, tree: usize, now: u32) -> bool {
    let Some(_gate) = Gate::try_take() else {
        return false;
    };
    let h = home(addr);
    for e in (0..PROBE).map(|i| (h + i) % ENTRIES) {
        let victim = TABLE.owners[e].load(Ordering::Acquire);
        // Page latches are page-aligned; the unit tests' stand-in addresses are not.
        let leaf = victim != 0 && victim != addr && victim.is_multiple_of(crate::page::PAGE_ALIGN);
        if !leaf || TABLE.trees[e].load(Ordering::Acquire) != tree {
            continue;
        }
        fence(Ordering::Acquire);
        if TABLE.owners[e].load(Ordering::Relaxed) != victim || !cold(e, victim, now) {
            continue;
        }
        // SAFETY: `victim` is the address of the latch of a leaf page (the first word of
        // the page), read from the table under the gate: its tree gives its entries back
        // and takes the gate before its pool can be freed (`release_tree`), and a pool
        // never unmaps a page while it lives (`crate::page`). Latch words are only ever
        // accessed atomically.
        let latch = unsafe { &*(victim as *const HybridLatch) };
        return latch.evict_lines();
    }
    false
}

/// Whether entry `e`, owned by the leaf with latch `owner`, went cold: its stretch versions
/// and the lock words of its insert segments (`sync::segments`) are those of an earlier
/// look at least [`COLD_US`] ago. A look that finds them moved (or
/// another owner) records them and the time instead. Called under the gate.
// The Shuttle build's cold period is 0: every second look finds a cold leaf.
#[cfg_attr(feature = "shuttle", allow(clippy::absurd_extreme_comparisons))]
fn cold(e: usize, owner: usize, now: u32) -> bool {
    let look = &TABLE.looks[e];
    let sum = sum_of(&TABLE.lines[e]).wrapping_add(segments::activity(e));
    if look.owner.load(Ordering::Relaxed) == owner && look.sum.load(Ordering::Relaxed) == sum {
        return now.wrapping_sub(look.at.load(Ordering::Relaxed)) >= COLD_US;
    }
    look.owner.store(owner, Ordering::Relaxed);
    look.sum.store(sum, Ordering::Relaxed);
    look.at.store(now, Ordering::Relaxed);
    false
}

/// The first step of ending line mode of entry `e`'s leaf: the caller has just latched it
/// exclusively (and issued a `SeqCst` fence after). Waits until no stretch is locked; the
/// caller then empties the insert segments (`sync::segments`), gives the entry back
/// ([`give_back`]) and clears the bit.
pub(crate) fn quiesce(e: usize) {
    for line in &TABLE.lines[e] {
        let mut spins = 0u32;
        while line.0.load(Ordering::Acquire) & 1 != 0 {
            wait(&mut spins);
        }
    }
}

/// Whether an in-place update holds a stretch of entry `e` (an evictor backs off then,
/// `HybridLatch::evict_lines`).
pub(crate) fn busy(e: usize) -> bool {
    TABLE.lines[e]
        .iter()
        .any(|line| line.0.load(Ordering::Acquire) & 1 != 0)
}

/// The last step of ending line mode of entry `e`'s leaf (see [`quiesce`]).
pub(crate) fn give_back(e: usize) {
    TABLE.trees[e].store(0, Ordering::Relaxed);
    TABLE.owners[e].store(0, Ordering::Release);
}

/// One step of waiting for a locked stretch or insert segment: its holder runs a short
/// closure or copy, but may be off the CPU.
#[inline]
pub(crate) fn wait(spins: &mut u32) {
    if *spins < 64 {
        spin_hint();
        *spins += 1;
    } else {
        yield_now();
    }
}

/// Locks a version word (odd = locked), waiting while another thread holds it; returns
/// whether it waited. For the stretches here and the insert segments (`sync::segments`).
pub(crate) fn lock_version(word: &AtomicU64) -> bool {
    let mut waited = false;
    let mut spins = 0u32;
    loop {
        let v = word.load(Ordering::Relaxed);
        if v & 1 == 0
            && word
                .compare_exchange_weak(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return waited;
        }
        waited = true;
        wait(&mut spins);
    }
}

/// The stretches that the `len` bytes at `off` of a page of `page_size` bytes cover.
#[inline]
pub(crate) fn span(off: usize, len: usize, page_size: usize) -> (usize, usize) {
    let stretch = (page_size / LINES).max(1);
    let last = (off + len.max(1) - 1) / stretch;
    ((off / stretch).min(LINES - 1), last.min(LINES - 1))
}

/// Spins a reader waits for a locked stretch before it restarts (an update holds one for a
/// few dozen nanoseconds, unless its thread was preempted).
const READER_SPINS: u32 = 64;

/// A reader's snapshot of the stretches `first..=last` of entry `e`: the sum of their
/// versions (versions only grow, so an equal sum later means no change). Waits briefly for a
/// locked one; `Restart` if it stays locked.
#[inline]
pub(crate) fn snapshot(e: usize, (first, last): (usize, usize)) -> Result<u64, Restart> {
    let mut sum = 0u64;
    for line in &TABLE.lines[e][first..=last] {
        sum = sum.wrapping_add(read_version(&line.0)?);
    }
    Ok(sum)
}

/// A reader's look at a version word (of a stretch here, or of an insert segment,
/// `sync::segments`): its value once even, waiting briefly while it is locked; `Restart`
/// if it stays locked.
#[inline]
pub(crate) fn read_version(word: &AtomicU64) -> Result<u64, Restart> {
    let mut spins = 0;
    loop {
        let v = word.load(Ordering::Acquire);
        if v & 1 == 0 {
            return Ok(v);
        }
        if spins == READER_SPINS {
            return Err(Restart);
        }
        spins += 1;
        spin_hint();
    }
}

/// Whether the stretches of a [`snapshot`] are unchanged after the reader's copy.
#[inline]
pub(crate) fn unchanged(e: usize, (first, last): (usize, usize), sum: u64) -> bool {
    fence(Ordering::Acquire);
    sum_of(&TABLE.lines[e][first..=last]) == sum
}

/// The sum of the versions of `lines`, read as they are (locked or not).
#[inline]
fn sum_of(lines: &[Line]) -> u64 {
    lines
        .iter()
        .fold(0u64, |s, l| s.wrapping_add(l.0.load(Ordering::Relaxed)))
}

/// The stretches `first..=last` of entry `e`, locked; unlocked on drop.
#[derive(Debug)]
pub(crate) struct LineLock {
    e: usize,
    first: usize,
    last: usize,
}

impl LineLock {
    /// Locks the stretches in ascending order, waiting while another updater holds one;
    /// returns the lock and whether it waited. A `SeqCst` fence follows, so that the caller's
    /// next look at the leaf latch is ordered after the locks (see the module doc).
    pub(crate) fn lock(e: usize, (first, last): (usize, usize)) -> (LineLock, bool) {
        let mut waited = false;
        for i in first..=last {
            waited |= lock_version(&TABLE.lines[e][i].0);
        }
        fence(Ordering::SeqCst);
        (LineLock { e, first, last }, waited)
    }
}

impl Drop for LineLock {
    fn drop(&mut self) {
        for line in &TABLE.lines[self.e][self.first..=self.last] {
            line.0.fetch_add(1, Ordering::Release);
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_stretches_of_a_value() {
        assert_eq!(span(0, 1, 4096), (0, 0));
        assert_eq!(span(60, 8, 4096), (0, 1));
        assert_eq!(span(4095, 1, 4096), (63, 63));
        assert_eq!(span(1000, 0, 4096), (15, 15));
        assert_eq!(span(1024, 2048, 65536), (1, 2));
    }

    #[test]
    fn claims_find_and_drain() {
        // An address no page has (odd): entries of the test only.
        let addr = 0x7777_0001usize;
        let e = claim(addr, 42).expect("a free entry");
        assert_eq!(find(addr), Some(e));
        assert_eq!(count_tree(42), 1);
        let s = snapshot(e, (3, 4)).unwrap();
        {
            let (_lock, waited) = LineLock::lock(e, (3, 4));
            assert!(!waited);
            assert_eq!(snapshot(e, (4, 5)), Err(Restart));
            assert!(snapshot(e, (5, 6)).is_ok());
        }
        assert!(!unchanged(e, (3, 4), s));
        let s = snapshot(e, (3, 4)).unwrap();
        assert!(unchanged(e, (3, 4), s));
        quiesce(e);
        give_back(e);
        assert_eq!(find(addr), None);
        assert_eq!(count_tree(42), 0);
        // release_tree gives back whatever a dropped tree held.
        claim(addr, 43).unwrap();
        release_tree(43);
        assert_eq!(find(addr), None);
    }

    /// A leaf is cold once two looks at least `COLD_US` apart find its stretch versions and
    /// insert segments unchanged; stand-in addresses are never evicted.
    #[test]
    fn leaves_go_cold_after_a_second_look() {
        let addr = 0x7777_1001usize;
        let e = claim(addr, 44).expect("a free entry");
        let gate = Gate::take();
        let t = 1_000;
        // The first look records; the second judges.
        assert!(!cold(e, addr, t));
        assert!(!cold(e, addr, t + COLD_US - 1));
        assert!(cold(e, addr, t + COLD_US));
        // An in-place update moves a stretch version: warm, and the clock starts again.
        drop(LineLock::lock(e, (7, 7)));
        assert!(!cold(e, addr, t + 2 * COLD_US));
        assert!(!cold(e, addr, t + 3 * COLD_US - 1));
        assert!(cold(e, addr, t + 3 * COLD_US));
        // So does an insert into a segment.
        drop(segments::SegmentLock::lock(e, 2));
        assert!(!cold(e, addr, t + 4 * COLD_US));
        assert!(cold(e, addr, t + 5 * COLD_US));
        // Another owner of the entry gets a first look of its own.
        assert!(!cold(e, addr + 2, t + 6 * COLD_US));
        assert!(cold(e, addr + 2, t + 7 * COLD_US));
        drop(gate);
        // A writer of the same tree whose probe entries include `e` finds it cold, but a
        // stand-in address is no page: nothing is evicted (nor touched).
        let writer = (1..)
            .map(|k| addr + 2 * k)
            .find(|&a| (0..PROBE).any(|i| (home(a) + i) % ENTRIES == e))
            .unwrap();
        assert!(!evict_cold(writer, 44, t + 9 * COLD_US));
        assert_eq!(find(addr), Some(e));
        quiesce(e);
        give_back(e);
    }

    /// An evictor takes a leaf's latch only if it is free, and backs off while an in-place
    /// update holds a stretch (its closure may be waiting for anything); else it ends line
    /// mode and frees the entry.
    #[test]
    fn evictors_back_off_from_updates_under_way() {
        let latch = Box::new(HybridLatch::new());
        let addr = &*latch as *const HybridLatch as usize;
        let e = claim(addr, 45).expect("a free entry");
        let mut x = latch.try_exclusive().unwrap();
        x.set_lines();
        // Held: no eviction.
        assert!(!latch.evict_lines());
        drop(x);
        let v = latch.version();
        // An update holds two stretches for 300 ms on another thread: the evictor returns
        // at once, without waiting for it, and the leaf stays in line mode.
        let locked = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _update = LineLock::lock(e, (3, 4));
                locked.wait();
                std::thread::sleep(std::time::Duration::from_millis(300));
            });
            locked.wait();
            let t = std::time::Instant::now();
            assert!(!latch.evict_lines());
            assert!(
                t.elapsed() < std::time::Duration::from_millis(200),
                "waited"
            );
            assert_eq!(find(addr), Some(e), "still in line mode");
        });
        // The back-off released the latch: readers of the old version restart.
        assert_ne!(latch.version(), v);
        assert!(latch.evict_lines());
        assert_eq!(find(addr), None);
        assert!(!latch.evict_lines(), "no longer in line mode");
    }
}
