//! The data path of line mode (`sync::lines`): in-place updates, inserts into insert
//! segments (`sync::segments`) and point reads of a leaf in line mode, and the switch into
//! it after a latched update or insert.

use crate::engine::descent::LeafHold;
use crate::engine::TreeCore;
use crate::node::{Node, NodeMut};
use crate::ops::write::insert_latched;
use crate::policy::combining::{Kind, Request};
use crate::policy::draw;
use crate::policy::lines::clock_us;
use crate::policy::Divert;
use crate::sync::ccm::{self, KeyLock};
use crate::sync::lines::{self, LineLock};
use crate::sync::reentry::InClosure;
use crate::sync::segments::{self, Appended, SegmentLock};
use crate::sync::{Counter, HybridLatch, OptimisticGuard, Restart};
use crate::Tree;

impl Tree {
    /// `insert_in_leaf` with insert segments on (`Config::insert_segments`): a leaf in line
    /// mode takes a new key into one of its segments, without its latch; any other leaf is
    /// latched and written as `insert_in_leaf` does, after which the detector may switch it
    /// to line mode. Appends keep the append finger (and so end the line mode of the
    /// rightmost leaf). `None`, with the tree unchanged, when the general path must take
    /// the insert.
    #[inline(never)]
    pub(super) fn insert_with_segments(&self, key: &[u8], value: &[u8]) -> Option<Option<Vec<u8>>> {
        let core = &*self.core;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let request = Request::new(key, Kind::Insert(value));
        let old = core.retry(|| {
            let (node, hold, at_end) = match core.appending() {
                false => {
                    let (node, hold) = core.update_leaf(key)?;
                    (node, hold, false)
                }
                true => match core.exclusive_leaf_or_hand_over(key, &request)? {
                    Some((node, x, at_end)) => (node, LeafHold::Latched(x), at_end),
                    // The latch holder inserted it (leaf combining).
                    None => return Ok(Some(request.take_outcome().old())),
                },
            };
            match hold {
                LeafHold::Latched(x) => {
                    insert_latched::<true>(core, (node, x, at_end), key, value, &mut split_at)
                }
                LeafHold::Lines(snapshot) => self.insert_in_segment(node, snapshot, key, value),
            }
        })?;
        core.after_insert(old.is_none(), split_at);
        Some(old)
    }

    /// An insert of `key` into the leaf `node`, which its snapshot `snapshot` found in line
    /// mode: into the key's insert segment (`sync::segments`) if the key is new, carries the
    /// leaf's prefix and fits; else line mode ends (`validate` ends it) and the insert
    /// restarts, to take the latched path. `Ok(None)` if the key lies in a hot range of the
    /// side structure (as the latched path answers).
    #[cold]
    #[inline(never)]
    fn insert_in_segment(
        &self,
        node: Node,
        snapshot: OptimisticGuard<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Option<Vec<u8>>>, Restart> {
        let core = &*self.core;
        if core.side.blocks(key) {
            return Ok(None);
        }
        let entry = lines::find(snapshot.latch() as *const _ as usize).ok_or(Restart)?;
        let fits_as_is = segments::takes(key, value)
            && node.count() > 0
            && (node.prefix_len() == 0 || node.key_vs_prefix(key)? == std::cmp::Ordering::Equal);
        let (_, found) = node.lower_bound(key, core.directory())?;
        if !fits_as_is || found {
            // A replacement, or a key the leaf must make room for: the latched path.
            snapshot.validate()?;
            return Err(Restart);
        }
        let cost = node.space_needed(key.len(), value.len(), false);
        let (lock, waited) = SegmentLock::lock(entry, segments::segment_of(ccm::key_hash(key)));
        if waited {
            core.counters.add(Counter::SegmentWaits, 1);
        }
        // The fence in `lock` orders this look after the lock: if no writer latched the leaf
        // since the snapshot, the leaf still lacks the key, and the exclusive acquisition
        // that ends line mode will wait for the lock and then move the record.
        snapshot.validate_keys()?;
        match lock.append(key, value, cost) {
            Appended::Done => {
                drop(lock);
                core.counters.add(Counter::SegmentInserts, 1);
                Ok(Some(None))
            }
            Appended::Present | Appended::Full => {
                drop(lock);
                snapshot.validate()?;
                Err(Restart)
            }
        }
    }

    /// [`update_with`](Tree::update_with) of `key` in the leaf `node`, which its snapshot
    /// `snapshot` found in line mode: `f` runs on the value under the locks of the stretches
    /// it covers, with no latch. `Ok(None)` if the key lies in a hot range of the side
    /// structure (as the latched path answers); a value stored out of line ends line mode
    /// (`validate` does) and restarts, to take the latched path.
    #[cold]
    #[inline(never)]
    pub(super) fn update_in_lines<F: FnOnce(&mut [u8]) -> R, R>(
        &self,
        node: Node,
        snapshot: OptimisticGuard<'_>,
        key: &[u8],
        f: &mut Option<F>,
    ) -> Result<Option<Option<R>>, Restart> {
        let core = &*self.core;
        if core.side.blocks(key) {
            return Ok(None);
        }
        let entry = lines::find(snapshot.latch() as *const _ as usize).ok_or(Restart)?;
        // The conflict-control module (`sync::ccm`), before the leaf is entered: the key's
        // advisory lock (held to the end), then its mark bit.
        let control = core.config().conflict_control;
        let hash = ccm::key_hash(key);
        let _key_lock = control.key_locks.then(|| {
            let (lock, waited) = KeyLock::lock(entry, hash);
            if waited {
                core.counters.add(Counter::CcmWaits, 1);
            }
            lock
        });
        if control.mark_bits && ccm::markable(key, node.page_size()) && ccm::absent(entry, hash) {
            absent_from_segments(core, snapshot.latch(), entry, hash, key)?;
            snapshot.validate_keys()?;
            core.counters.add(Counter::MarkRejections, 1);
            return Ok(Some(None));
        }
        let (pos, found) = node.lower_bound(key, core.directory())?;
        if !found {
            absent_from_segments(core, snapshot.latch(), entry, hash, key)?;
            snapshot.validate_keys()?;
            return Ok(Some(None));
        }
        let e = node.entry(pos)?;
        if e.stub {
            snapshot.validate()?;
            return Err(Restart);
        }
        let span = lines::span(e.value_off, e.value_len, node.page_size());
        let (lock, waited) = LineLock::lock(entry, span);
        if waited {
            core.counters.add(Counter::LineConflicts, 1);
        }
        // The fence in `lock` orders this look after the locks: if no writer latched the
        // leaf since the snapshot, none will write it before the lock is dropped, and `e`
        // is still where the value lies.
        snapshot.validate_keys()?;
        let mark = InClosure::enter(core.id(), "update_with");
        // SAFETY: `e` was read from `node`, `lock` covers its value bytes and the snapshot
        // validated after they were locked (`value_in_lines`'s contract).
        let value = unsafe { node.value_in_lines(&e, &lock) };
        let out = f.take().map(|f| f(value));
        drop(mark);
        drop(lock);
        core.counters.add(Counter::LineUpdates, 1);
        Ok(Some(out))
    }
}

/// A point read of a leaf in line mode (`sync::lines`): the versions of the stretches of the
/// value read, taken before the read ([`begin`](Self::begin)) and checked after it
/// ([`end`](Self::end)); the reader then validates its snapshot of the leaf for the keys
/// (`OptimisticGuard::validate_keys`). Neither takes the reader's guard: a reference to it
/// would keep the guards of the descent in memory.
pub(crate) struct LineRead {
    entry: usize,
    /// The stretches of the value and their versions' sum; `None` when the key is absent
    /// (only the keys were read).
    span: Option<((usize, usize), u64)>,
}

impl LineRead {
    /// The leaf phase of a read of `key` in `leaf`, whose latch is `latch`, up to the copy:
    /// the mark bits (`sync::ccm`) or the search give the key's slot and whether it is there
    /// (the slot is 0 for a key the mark bits rejected); then the read waits for the
    /// in-place updates of its value's stretches under way and notes their versions.
    #[cold]
    #[inline(never)]
    pub(crate) fn begin(
        core: &TreeCore,
        leaf: Node,
        latch: &HybridLatch,
        key: &[u8],
    ) -> Result<(usize, bool, LineRead), Restart> {
        let entry = lines::find(latch as *const _ as usize).ok_or(Restart)?;
        let hash = ccm::key_hash(key);
        if core.config().conflict_control.mark_bits
            && ccm::markable(key, leaf.page_size())
            && ccm::absent(entry, hash)
        {
            absent_from_segments(core, latch, entry, hash, key)?;
            core.counters.add(Counter::MarkRejections, 1);
            return Ok((0, false, LineRead { entry, span: None }));
        }
        let (pos, found) = leaf.point_search(key, core.directory())?;
        let span = match found {
            true => {
                let e = leaf.entry(pos)?;
                let span = lines::span(e.value_off, e.value_len, leaf.page_size());
                Some((span, lines::snapshot(entry, span)?))
            }
            false => {
                absent_from_segments(core, latch, entry, hash, key)?;
                None
            }
        };
        Ok((pos, found, LineRead { entry, span }))
    }

    /// After the read: the stretches read are unchanged.
    #[cold]
    #[inline(never)]
    pub(crate) fn end(self) -> Result<(), Restart> {
        match self.span {
            Some((span, sum)) if !lines::unchanged(self.entry, span, sum) => Err(Restart),
            _ => Ok(()),
        }
    }
}

/// For a key that the sorted area of a leaf in line mode (latch `latch`, entry `entry`)
/// lacks: `Ok` if its insert segment lacks it too. If the segment holds it, line mode ends
/// (the records move into the sorted area, where the reader finds the key when it restarts)
/// and the reader restarts. The reader validates its snapshot of the leaf after.
#[inline]
fn absent_from_segments(
    core: &TreeCore,
    latch: &HybridLatch,
    entry: usize,
    hash: u64,
    key: &[u8],
) -> Result<(), Restart> {
    if core.policy.lines.segments() && segments::holds(entry, hash, key)? {
        latch.end_lines();
        return Err(Restart);
    }
    Ok(())
}

impl TreeCore {
    /// After an in-place update of an inline value of the latched leaf `node`: asks the
    /// detector whether the leaf switches to line mode, and if it does, takes its table
    /// entry. Returns whether the caller sets the bit (`ExclusiveGuard::set_lines`) before
    /// it releases the latch.
    #[inline]
    pub(crate) fn line_switch(&self, node: &mut NodeMut, latch: usize) -> bool {
        if !self.policy.lines.after_update(node) {
            return false;
        }
        let tree = self.id() as usize;
        let Some(entry) = lines::claim(latch, tree).or_else(|| self.evict_for(latch, tree)) else {
            return false;
        };
        if self.config().conflict_control.mark_bits {
            ccm::build(entry, node.node());
        }
        segments::open(entry, &node.node(), self.directory(), &self.counters);
        self.counters.add(Counter::LineSwitches, 1);
        true
    }

    /// Where the leaf with latch `latch` found its table entries taken: one claim in
    /// [`EVICT_SAMPLE`] tries to end the line mode of a cold leaf of this tree among their
    /// holders (`lines::evict_cold`) and claims again if it did.
    #[cold]
    #[inline(never)]
    // The Shuttle build looks at every failed claim (a mask of 0).
    #[cfg_attr(feature = "shuttle", allow(clippy::bad_bit_mask))]
    fn evict_for(&self, latch: usize, tree: usize) -> Option<usize> {
        if draw() & (EVICT_SAMPLE - 1) != 0 || !lines::evict_cold(latch, tree, clock_us()) {
            return None;
        }
        self.counters.add(Counter::LineEvictions, 1);
        lines::claim(latch, tree)
    }
}

/// One failed claim of a table entry in this many looks for a cold leaf to evict (a power
/// of two): with line mode `Always` and a full table every latched update fails its claim,
/// and a look reads 68 words (64 stretch versions, 4 segment locks) of each of four
/// entries.
const EVICT_SAMPLE: u32 = if cfg!(feature = "shuttle") { 1 } else { 8 };
