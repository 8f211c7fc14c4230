//! Point writes: the leaf is latched exclusively at the end of an optimistic descent, the
//! leaf policies are asked at their named points, and structure changes (`smo`) follow when
//! a leaf is full, underfull, or contended.

use super::append::Appended;
use super::combine::serve_waiters;
use crate::blob::Stub;
use crate::engine::TreeCore;
use crate::error::Error;
use crate::node::{Node, NodeMut, Stored, SLOT};
use crate::policy::combining::{Kind, Request};
use crate::policy::Divert;
use crate::side::ops::Diverted;
use crate::sync::reentry::InClosure;
use crate::sync::{Counter, ExclusiveGuard, Restart};
use crate::Tree;

/// What a read-modify-write does with a key's entry, decided under the leaf's latch.
pub(crate) enum Edit<V> {
    /// Leave the entry (or its absence) as it is.
    Keep,
    /// Store this value (insert or replace).
    Put(V),
    /// Store the out-of-line value this stub names (written by the caller, which frees it
    /// unless the call returns `Ok`: then the tree owns it).
    PutStub(Stub),
    /// Remove the entry if there is one.
    Remove,
}

/// Splits an insert tries under a memory budget before it gives up with
/// [`Error::OutOfSpace`]: a split that the budget allows only after `reclaim` packed
/// neighbours can be undone by the next `reclaim`, so without a bound two of them could
/// alternate for ever. Without a budget every round's split adds a page and an insert
/// always ends.
const MAX_BUDGET_ROUNDS: u32 = 16;

/// Why an attempt under the latch did not finish.
pub(crate) enum Stop {
    /// The new entry did not fit in its leaf; it takes this many bytes in a leaf (at most:
    /// its key without any prefix taken off).
    NeedSplit(usize),
    /// The decided value is refused.
    Refused(Error),
    /// The key lies in a hot range of the side structure whose shard this thread does not
    /// hold (`side`): the write takes [`Tree::side_settle`] instead.
    Blocked,
}

/// What an applied edit did to the tree: entries added (+1) or removed (-1), whether a
/// removal left the leaf underfull, and the out-of-line value it dropped (freed once the
/// leaf's latch is released).
struct Applied {
    delta: i8,
    underfull: bool,
    freed: Option<Stub>,
    /// The blob of a long key whose stored form the edit removed (released once the leaf's
    /// latch is released).
    freed_key: Option<Stub>,
}

/// The value of a `Put`: bytes (written out of line here when they are too long to stay
/// inline), or the stub of an out-of-line value its caller wrote.
enum Value<V> {
    Bytes(V),
    Stub(Stub),
}

/// How a `Put` was applied: over the old value in place (same length, same form), or as
/// a new entry (inserted, or in place of the old one, whose out-of-line value the caller
/// then frees once the leaf's latch is released).
pub(crate) enum Placed {
    InPlace,
    Entry,
}

/// Stores the inline `value` for `key` at `pos` of the latched leaf `node`, over the entry
/// there if `found` (which has an inline value too). The leaf is unchanged on failure.
/// The common path of inserts, kept apart from out-of-line values so that it stays lean.
#[inline(always)]
pub(crate) fn put_inline(
    node: &mut NodeMut<'_>,
    pos: usize,
    key: &[u8],
    found: bool,
    value: &[u8],
) -> Result<Result<Placed, Stop>, Restart> {
    if !found {
        return Ok(if node.insert_entry(pos, key, value) {
            Ok(Placed::Entry)
        } else {
            Err(need_split(key, value.len(), false))
        });
    }
    let e = node.entry(pos)?;
    if e.value_len == value.len() {
        node.overwrite_value(pos, value);
        return Ok(Ok(Placed::InPlace));
    }
    Ok(replace_entry(node, pos, key, e.heap_len, value, false))
}

/// [`Tree::insert_in_leaf`]'s work on the leaf `node`, latched by `x`: `Ok(None)`, with the
/// leaf unchanged, when the general path must take the insert. `at_end` says that `key`
/// sorts after every key of the leaf, as the append finger found (no search then). With
/// `SWITCH` (line mode and its insert segments on, `sync::segments`), the detector may then
/// switch the leaf to line mode, as after an in-place update.
#[inline(always)]
pub(crate) fn insert_latched<const SWITCH: bool>(
    core: &TreeCore,
    (node, mut x, at_end): (Node, ExclusiveGuard<'_>, bool),
    key: &[u8],
    value: &[u8],
    split_at: &mut Option<Vec<u8>>,
) -> Result<Option<Option<Vec<u8>>>, Restart> {
    if core.side.blocks(key) {
        return Ok(None);
    }
    let latch = x.latch_addr();
    let slow_path = x.slow_path();
    let mut node = NodeMut::new(node, &mut x);
    let (pos, found) = match at_end {
        true => (node.count(), false),
        false => node.lower_bound(key, core.directory())?,
    };
    let old = if !found {
        None
    } else if node.is_stub(pos) {
        return Ok(None);
    } else {
        Some(node.value_mut(pos).to_vec())
    };
    // Known to sort after the leaf's keys, with its prefix (the finger's look).
    let stored = if at_end {
        node.insert_entry_appended(pos, key, value)
    } else {
        put_inline(&mut node, pos, key, found, value)?.is_ok()
    };
    if !stored {
        return Ok(None);
    }
    *split_at = core.policy.after_change(&mut node, pos, slow_path, core);
    if core.policy.combining.has_waiters(latch) {
        serve_waiters(core, &mut node, latch, split_at);
    }
    if SWITCH && split_at.is_none() && core.line_switch(&mut node, latch) {
        x.set_lines();
    }
    Ok(Some(old))
}

impl TreeCore {
    /// After an insert on the fast path: counts a new key and runs the Contention Split
    /// the leaf's policy asked for.
    #[inline(always)]
    pub(crate) fn after_insert(&self, new_key: bool, split_at: Option<Vec<u8>>) {
        if new_key {
            self.counters.add(Counter::Len, 1);
        }
        if let Some(sep) = split_at {
            self.contention_split(&sep);
        }
    }
}

/// The old value of a write by `modify_keeping`, its replaced blob handed to `kept` where
/// the caller keeps blobs (see [`Tree::insert_keeping`]).
fn hand_kept(
    (old, replaced): (Option<Vec<u8>>, Option<Stub>),
    kept: Option<&mut Option<Stub>>,
) -> Option<Vec<u8>> {
    if let Some(kept) = kept {
        *kept = replaced;
    }
    old
}

/// `NeedSplit` for an entry of `key` (as the leaf stores it) and a stored value of
/// `value_len` bytes (a stub if `stub`).
#[cold]
fn need_split(key: &[u8], value_len: usize, stub: bool) -> Stop {
    Stop::NeedSplit(crate::node::stored_entry_space(key.len(), value_len, stub))
}

/// Replaces the entry at `pos` of the latched leaf `node`, which takes `old_heap_len` heap
/// bytes, with `key` and the stored `value` (a stub if `stub`); `NeedSplit`, with the leaf
/// unchanged, if the new entry would not fit even with the old one gone.
#[inline(always)]
fn replace_entry(
    node: &mut NodeMut<'_>,
    pos: usize,
    key: &[u8],
    old_heap_len: usize,
    value: &[u8],
    stub: bool,
) -> Result<Placed, Stop> {
    if node.space_needed(key.len(), value.len(), stub) > node.free_space() + old_heap_len + SLOT {
        return Err(need_split(key, value.len(), stub));
    }
    node.remove_at(pos);
    let ok = node.insert_stored(pos, key, value, stub);
    debug_assert!(ok, "a replacement that fits is written");
    Ok(Placed::Entry)
}

/// Stores `value` for `key` at `pos` of the latched leaf `node` (over the entry there if
/// `found`) when the old value (`old_stub`) or the new one is out of line. Bytes too long to stay inline are written to
/// blob pages first, and freed again if the entry does not fit; a blob of the old value's
/// length is overwritten in place. The leaf is unchanged on failure.
#[cold]
#[inline(never)]
fn put_out_of_line<V: AsRef<[u8]>>(
    core: &TreeCore,
    node: &mut NodeMut<'_>,
    pos: usize,
    key: &[u8],
    found: bool,
    old_stub: Option<Stub>,
    value: &Value<V>,
) -> Result<Placed, Stop> {
    let inline_max = core.config().max_inline_value_len();
    if let (Some(old), Value::Bytes(v)) = (old_stub, value) {
        let bytes = v.as_ref();
        if bytes.len() > inline_max && bytes.len() == old.len {
            core.overwrite_blob(old, bytes);
            return Ok(Placed::InPlace);
        }
    }
    let (stored, written) = match value {
        Value::Bytes(v) if v.as_ref().len() <= inline_max => (Stored::Inline(v.as_ref()), None),
        Value::Bytes(v) => {
            let stub = core.write_blob(v.as_ref()).map_err(Stop::Refused)?;
            (Stored::Stub(stub.encode()), Some(stub))
        }
        Value::Stub(stub) => (Stored::Stub(stub.encode()), None),
    };
    let (bytes, is_stub) = stored.parts();
    let placed = if found {
        let e = node.entry(pos).expect("entry of a latched leaf");
        replace_entry(node, pos, key, e.heap_len, bytes, is_stub)
    } else if node.insert_stored(pos, key, bytes, is_stub) {
        Ok(Placed::Entry)
    } else {
        Err(need_split(key, bytes.len(), is_stub))
    };
    if placed.is_err() {
        if let Some(stub) = written {
            core.free_blob(stub);
        }
    }
    placed
}

/// The blob of the long key stored at `pos` of the latched leaf `node`.
#[cold]
fn stored_key_blob(core: &TreeCore, node: &NodeMut<'_>, pos: usize) -> Option<Stub> {
    let stored = node.key(pos).expect("a latched leaf");
    crate::long_key::stub_of(&stored, core.config().page_size)
}

impl Tree {
    /// The one read-modify-write of a key, behind `insert`, `remove` and the atomic
    /// per-key operations: under the leaf's exclusive latch, `decide` sees the key's current
    /// value (`None` if absent) and returns the edit to apply and the caller's result. The
    /// edit is applied before the latch is released, so the whole step is linearizable for
    /// the key.
    ///
    /// `decide` runs again when the new entry does not fit (after the leaf is split, on the
    /// value then current); only the last decision is applied. `closure` names the public
    /// operation when `decide` runs user code, which the re-entry guard then watches (see
    /// `sync::reentry`). A refused value or a split the memory budget does not allow
    /// returns the error with the tree unchanged.
    #[inline(always)]
    pub(crate) fn modify<V: AsRef<[u8]>, R>(
        &self,
        key: &[u8],
        closure: Option<&'static str>,
        decide: impl FnMut(Option<&[u8]>) -> (Edit<V>, R),
    ) -> Result<R, Error> {
        self.modify_keeping(key, closure, decide, false)
            .map(|(out, _)| out)
    }

    /// [`modify`](Self::modify), which also hands back the out-of-line value the edit
    /// dropped (a replaced or removed value's stub) instead of freeing it, if `keep`: the
    /// caller then owns that blob, and frees it or stores it again (`Edit::PutStub`).
    /// `None` when the edit dropped no out-of-line value (or overwrote one of the same
    /// length in place) or `keep` is off.
    #[inline(always)]
    pub(crate) fn modify_keeping<V: AsRef<[u8]>, R>(
        &self,
        key: &[u8],
        closure: Option<&'static str>,
        mut decide: impl FnMut(Option<&[u8]>) -> (Edit<V>, R),
        keep: bool,
    ) -> Result<(R, Option<Stub>), Error> {
        self.modify_inner(key, closure, &mut decide, keep)
    }

    /// [`modify_keeping`](Self::modify_keeping) over a borrowed `decide`, so that the retry
    /// under a side-structure shard's mutex reuses this instance.
    #[inline(always)]
    fn modify_inner<V: AsRef<[u8]>, R, D: FnMut(Option<&[u8]>) -> (Edit<V>, R)>(
        &self,
        key: &[u8],
        closure: Option<&'static str>,
        decide: &mut D,
        keep: bool,
    ) -> Result<(R, Option<Stub>), Error> {
        let core = &*self.core;
        core.check_key(key)?;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let mut rounds = 0;
        let long = key.len() > core.config().max_inline_key_len();
        // A long key's stored form, written (with its blob) when an attempt first inserts
        // it, and kept for the next attempts; `inserted` once an entry holds it.
        let mut long_form: Option<Vec<u8>> = None;
        let mut inserted = false;
        let result = loop {
            let attempt = core.retry(
                #[inline(always)]
                || -> Result<Result<(R, Applied), Stop>, Restart> {
                    let (node, mut x) = core.exclusive_leaf(key)?;
                    if core.side.blocks(key) {
                        return Ok(Err(Stop::Blocked));
                    }
                    let slow_path = x.slow_path();
                    let mut node = NodeMut::new(node, &mut x);
                    let (pos, found) = node.lower_bound(key, core.directory())?;
                    let old_stub = if found { node.stub(pos)? } else { None };
                    let (edit, out) = {
                        let _mark = closure.map(|op| InClosure::enter(core.id(), op));
                        match (found, old_stub) {
                            (false, _) => decide(None),
                            (true, None) => decide(Some(&*node.value_mut(pos))),
                            (true, Some(stub)) => decide(Some(&core.blob_value(stub))),
                        }
                    };
                    let mut applied = Applied {
                        delta: 0,
                        underfull: false,
                        freed: None,
                        freed_key: None,
                    };
                    let value = match edit {
                        Edit::Keep => return Ok(Ok((out, applied))),
                        Edit::Remove if !found => return Ok(Ok((out, applied))),
                        Edit::Remove => {
                            if long {
                                applied.freed_key = stored_key_blob(core, &node, pos);
                            }
                            node.remove_at(pos);
                            applied.delta = -1;
                            applied.underfull = core.is_underfull(&node);
                            applied.freed = old_stub;
                            split_at = core.policy.after_change(&mut node, pos, slow_path, core);
                            return Ok(Ok((out, applied)));
                        }
                        Edit::Put(value) => Value::Bytes(value),
                        Edit::PutStub(stub) => Value::Stub(stub),
                    };
                    // The value is checked before a long key's blob is written: an oversized
                    // value is refused as such, not as the budget's `OutOfSpace` of that write.
                    if let Value::Bytes(v) = &value {
                        if let Err(e) = core.check_value(v.as_ref()) {
                            return Ok(Err(Stop::Refused(e)));
                        }
                    }
                    // The key as the leaf stores it: a long key's stored form (the entry's own
                    // when it is there, else one written now).
                    let stored;
                    let key: &[u8] = if !long {
                        key
                    } else if found {
                        stored = node.key(pos)?;
                        &stored
                    } else {
                        if long_form.is_none() {
                            match core.write_long_key(key) {
                                Ok(form) => long_form = Some(form),
                                Err(e) => return Ok(Err(Stop::Refused(e))),
                            }
                        }
                        long_form.as_deref().expect("written above")
                    };
                    let done = match &value {
                        Value::Bytes(v) => {
                            let bytes = v.as_ref();
                            if old_stub.is_none()
                                && bytes.len() <= core.config().max_inline_value_len()
                            {
                                put_inline(&mut node, pos, key, found, bytes)?
                            } else {
                                put_out_of_line(core, &mut node, pos, key, found, old_stub, &value)
                            }
                        }
                        Value::Stub(_) => {
                            put_out_of_line(core, &mut node, pos, key, found, old_stub, &value)
                        }
                    };
                    match done {
                        Ok(Placed::InPlace) => {}
                        Ok(Placed::Entry) => {
                            applied.freed = old_stub;
                            applied.delta = i8::from(!found);
                            inserted |= !found && long;
                        }
                        Err(stop) => return Ok(Err(stop)),
                    }
                    split_at = core.policy.after_change(&mut node, pos, slow_path, core);
                    Ok(Ok((out, applied)))
                },
            );
            match attempt {
                Ok((out, applied)) => {
                    let mut kept = None;
                    if let Some(stub) = applied.freed {
                        if keep {
                            kept = Some(stub);
                        } else {
                            core.free_blob(stub);
                        }
                    }
                    if let Some(stub) = applied.freed_key {
                        core.release_keys(&[stub]);
                    }
                    if applied.delta != 0 {
                        core.counters.add(Counter::Len, applied.delta as i64);
                    }
                    if applied.delta < 0 {
                        core.counters.add(Counter::Removals, 1);
                    }
                    if let Some(sep) = split_at {
                        core.contention_split(&sep);
                    } else if applied.underfull {
                        core.try_merge(key, 0);
                    }
                    if applied.delta < 0 {
                        core.retry_deferred_merge();
                        core.release_memory_if_many();
                    }
                    break Ok((out, kept));
                }
                Err(Stop::Refused(e)) => break Err(e),
                Err(Stop::Blocked) => {
                    let settled =
                        self.side_settle(key, || self.modify_inner(key, closure, decide, keep));
                    if let Some(out) = settled {
                        break out;
                    }
                }
                Err(Stop::NeedSplit(room)) => {
                    // At the memory budget the first rounds may get room by spreading the
                    // neighbours' free space instead of a split (`reclaim`).
                    rounds += 1;
                    if rounds > MAX_BUDGET_ROUNDS && core.has_memory_budget() {
                        // Each round split the leaf, and packing under the budget undid it
                        // (or other writers filled the halves): bounded work, then the
                        // budget's error rather than a loop.
                        break Err(core.out_of_space());
                    }
                    // The first split cuts in the middle; one that left the entry no room
                    // on its side is followed by one that does (`choose_split_with_room`:
                    // it costs a pass over the leaf, so only when the middle failed).
                    // The first round skips the split if another thread made room since.
                    let (room, unless_free) = if rounds > 1 { (room, 0) } else { (0, room) };
                    if let Err(e) = core.split_for(key, 0, rounds <= 2, room, unless_free) {
                        break Err(e);
                    }
                }
            }
        };
        if let (Some(form), false) = (&long_form, inserted) {
            // Written for an insert that did not happen (the key came meanwhile, or the
            // edit was refused): nothing names the blob.
            core.release_long_form(form);
        }
        result
    }

    /// Inserts or replaces the value of `key`; returns the previous value.
    ///
    /// Fails with [`Error::KeyTooLarge`] or [`Error::ValueTooLarge`] for oversized input and
    /// with [`Error::OutOfSpace`] when a split needs a page the memory budget does not
    /// allow; in every error case the tree's contents are unchanged.
    ///
    /// When the budget is reached, the insert first runs XMerge to free pages (see
    /// [`compact`](Self::compact)): on the neighbours of its leaf, on a few random groups,
    /// and now and then over the whole tree, a bounded amount of work. It fails if that frees
    /// none; until a removal or a split changes the tree, further inserts that need a page
    /// then fail at once instead of trying again.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// assert_eq!(tree.insert(b"k", b"v1").unwrap(), None);
    /// assert_eq!(tree.insert(b"k", b"v2").unwrap(), Some(b"v1".to_vec()));
    /// assert!(tree.insert(&[0u8; 100_000], b"").is_err());
    /// ```
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        // Zero while the side structure is off: one load for the normal path.
        if crate::side::Side::any(self.core.side.state()) {
            if let Some(out) = self.insert_diverted(key, value) {
                return out;
            }
        }
        self.insert_keeping(key, value, None)
    }

    /// [`insert`](Self::insert) into the side structure when `key` lies in a hot range
    /// (`side`); `None` when the normal path is to take it. Apart from `insert`, so that the
    /// normal path stays one call site (inlined). First, if Contention Split's sampler
    /// asked for a hot range (`Side::ask_heat`), marks the range of `key`'s leaf hot when
    /// `key` is an append there (the next insert of an append stream lies in the leaf the
    /// sampler saw, at its end).
    #[cold]
    #[inline(never)]
    fn insert_diverted(&self, key: &[u8], value: &[u8]) -> Option<Result<Option<Vec<u8>>, Error>> {
        let core = &*self.core;
        if core.side.take_heat() && core.side.scans_seen() {
            self.side_heat(key, true);
        }
        if let Err(e) = core.check_key(key).and_then(|()| core.check_value(value)) {
            return Some(Err(e));
        }
        let range = self.side_route(key)?;
        match self.side_write(&range, key, Some(value)) {
            Diverted::Done(old) => Some(Ok(old)),
            Diverted::NotTaken => None,
        }
    }

    /// [`insert`](Self::insert), which also hands back the blob of the out-of-line value it
    /// replaced instead of freeing it, into `kept` if given (see
    /// [`modify_keeping`](Self::modify_keeping)): `insert_many` keeps them for its undo.
    /// The blob goes out through `kept` rather than beside the old value: returned as a
    /// pair, the old value went through the stack, stored as three words and loaded back as
    /// 16 bytes and 8 for `insert`'s result (a store-forwarding stall on every insert; perf
    /// put ~4% of an append's time on it).
    #[inline(always)]
    pub(crate) fn insert_keeping(
        &self,
        key: &[u8],
        value: &[u8],
        kept: Option<&mut Option<Stub>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        if self.core.policy.lines.segments() {
            return self.insert_keeping_segmented(key, value, kept);
        }
        self.insert_keeping_as::<false>(key, value, kept)
    }

    /// [`insert_keeping`](Self::insert_keeping) with insert segments on (`sync::segments`):
    /// out of line, so that the default path carries none of their code.
    #[cold]
    #[inline(never)]
    fn insert_keeping_segmented(
        &self,
        key: &[u8],
        value: &[u8],
        kept: Option<&mut Option<Stub>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.insert_keeping_as::<true>(key, value, kept)
    }

    /// [`insert_keeping`](Self::insert_keeping); `SEGMENTS`: inserts may go to insert
    /// segments.
    #[inline(always)]
    fn insert_keeping_as<const SEGMENTS: bool>(
        &self,
        key: &[u8],
        value: &[u8],
        kept: Option<&mut Option<Stub>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        let core = &*self.core;
        if let Err(e) = core.check_value(value) {
            // Both oversized: the key's error, as every write reports it first.
            core.check_key(key)?;
            return Err(e);
        }
        if value.len() <= core.config().max_inline_value_len() {
            if key.len() <= core.config().max_inline_key_len() {
                // Never replaces an out-of-line value: nothing to keep.
                let in_leaf = match SEGMENTS {
                    false => self.insert_in_leaf(key, value),
                    true => self.insert_with_segments(key, value),
                };
                if let Some(old) = in_leaf {
                    return Ok(old);
                }
            }
            return self.insert_general(key, value, kept);
        }
        self.insert_out_of_line(key, value, kept)
    }

    /// [`insert`](Self::insert) of an inline value through the general write path, when the
    /// lean insert could not take it (a split, a long key, an out-of-line old value): out of
    /// line, so that the lean insert's body does not carry the general one's (inlined, with
    /// its attempt inlined too, it cost the ruler's `insert` 11 instructions and `append` 13).
    #[inline(never)]
    fn insert_general(
        &self,
        key: &[u8],
        value: &[u8],
        kept: Option<&mut Option<Stub>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        self.modify_keeping(
            key,
            None,
            |old| (Edit::Put(value), old.map(<[u8]>::to_vec)),
            kept.is_some(),
        )
        .map(|out| hand_kept(out, kept))
    }

    /// The common insert, of a key and a value that both stay inline, when its leaf has
    /// room and any old value is inline too: [`modify`](Self::modify) without what only
    /// long keys, out-of-line values, splits and removals need. `None`, with the tree
    /// unchanged, when one of those is needed: the caller then takes the general path.
    #[inline(always)]
    fn insert_in_leaf(&self, key: &[u8], value: &[u8]) -> Option<Option<Vec<u8>>> {
        let core = &*self.core;
        let Divert::Proceed = core.policy.before_latch(key);
        if core.appending() {
            match self.append_uncontended(key, value) {
                Appended::Done => return Some(None),
                Appended::Full => return None,
                Appended::NotTaken => {}
            }
        }
        let mut split_at = None;
        let request = Request::new(key, Kind::Insert(value));
        let old = core.retry(|| -> Result<Option<Option<Vec<u8>>>, Restart> {
            // Opaque to the optimiser, so that it does not hoist the addresses of `core`'s
            // fields out of the retry loop and spill them before the first attempt (append
            // 667 -> 661, insert 1,235 -> 1,232 instructions, callgrind).
            let core = std::hint::black_box(core);
            let Some(leaf) = core.exclusive_leaf_or_hand_over(key, &request)? else {
                // The latch holder inserted it (leaf combining).
                return Ok(Some(request.take_outcome().old()));
            };
            insert_latched::<false>(core, leaf, key, value, &mut split_at)
        })?;
        core.after_insert(old.is_none(), split_at);
        Some(old)
    }

    /// [`insert`](Self::insert) of a value too long to stay inline: it is written out of
    /// line before the leaf is latched, and freed again if the insert fails.
    #[cold]
    #[inline(never)]
    fn insert_out_of_line(
        &self,
        key: &[u8],
        value: &[u8],
        kept: Option<&mut Option<Stub>>,
    ) -> Result<Option<Vec<u8>>, Error> {
        let core = &*self.core;
        core.check_key(key)?;
        let stub = core.write_blob(value)?;
        let out = self.modify_keeping(
            key,
            None,
            |old| (Edit::<&[u8]>::PutStub(stub), old.map(<[u8]>::to_vec)),
            kept.is_some(),
        );
        if out.is_err() {
            core.free_blob(stub);
        }
        out.map(|out| hand_kept(out, kept))
    }

    /// Removes `key`; returns its value.
    ///
    /// A leaf left underfull is merged with a sibling.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// tree.insert(b"k", b"v").unwrap();
    /// assert_eq!(tree.remove(b"k"), Some(b"v".to_vec()));
    /// assert_eq!(tree.remove(b"k"), None);
    /// ```
    pub fn remove(&self, key: &[u8]) -> Option<Vec<u8>> {
        let core = &*self.core;
        if key.len() > core.config().max_key_len() {
            return None;
        }
        if core.side.enabled {
            if let Some(range) = self.side_route(key) {
                if let Diverted::Done(old) = self.side_write(&range, key, None) {
                    return old;
                }
            }
        }
        if key.len() <= core.config().max_inline_key_len() {
            if let Some(old) = self.remove_in_leaf(key) {
                return old;
            }
        }
        self.modify(key, None, |old| {
            (Edit::<&[u8]>::Remove, old.map(<[u8]>::to_vec))
        })
        .unwrap_or(None)
    }

    /// The common removal, of a key that stays inline with an inline value (or absent):
    /// [`modify`](Self::modify) without what only long keys and out-of-line values need.
    /// `None`, with the tree unchanged, when the value is out of line: the caller then takes
    /// the general path. Kept apart from `insert_in_leaf` on purpose: one body shared by both
    /// (and by `apply_request`) measured callgrind insert 1,503 -> 1,579 and append 920 ->
    /// 989 instructions.
    #[inline(always)]
    fn remove_in_leaf(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let core = &*self.core;
        let Divert::Proceed = core.policy.before_latch(key);
        let mut split_at = None;
        let mut underfull = false;
        // The leaf's page, used bytes and emptiness when this thread's removal left it
        // underfull (for `try_merge_leaf`).
        let mut drained = None;
        let request = Request::new(key, Kind::Remove);
        let old = core.retry(|| -> Result<Option<Option<Vec<u8>>>, Restart> {
            let Some((node, mut x, _)) = core.exclusive_leaf_or_hand_over(key, &request)? else {
                // The latch holder removed it (leaf combining).
                let outcome = request.take_outcome();
                underfull = outcome.underfull();
                return Ok(Some(outcome.old()));
            };
            if core.side.blocks(key) {
                return Ok(None);
            }
            let latch = x.latch_addr();
            let slow_path = x.slow_path();
            let mut node = NodeMut::new(node, &mut x);
            let (pos, found) = node.lower_bound(key, core.directory())?;
            let old = if !found {
                None
            } else if node.is_stub(pos) {
                return Ok(None);
            } else {
                let old = node.value_mut(pos).to_vec();
                node.remove_at(pos);
                underfull = core.is_underfull(&node);
                if underfull {
                    drained = Some((
                        node.raw().addr() as *const u8,
                        node.used_space(),
                        node.count() == 0,
                    ));
                }
                split_at = core.policy.after_change(&mut node, pos, slow_path, core);
                Some(old)
            };
            if core.policy.combining.has_waiters(latch) {
                serve_waiters(core, &mut node, latch, &mut split_at);
            }
            Ok(Some(old))
        })?;
        if old.is_some() {
            core.counters.add(Counter::Len, -1);
            core.counters.add(Counter::Removals, 1);
        }
        if let Some(sep) = split_at {
            core.contention_split(&sep);
        } else if let Some((page, used, empty)) = drained {
            core.try_merge_leaf(key, page, used, empty);
        } else if underfull {
            core.try_merge(key, 0);
        }
        if old.is_some() {
            core.retry_deferred_merge();
            core.release_memory_if_many();
        }
        Some(old)
    }
}
