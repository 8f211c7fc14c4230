//! Leaf combining, the holder's side (`policy::combining`): a writer that holds a leaf's
//! exclusive latch applies the inserts and removals other writers handed to it, before it
//! releases the latch.

use super::write::put_inline;
use crate::engine::TreeCore;
use crate::node::NodeMut;
use crate::policy::combining::{self, Kind, Outcome, Request};
use crate::sync::Counter;

/// Leaf combining, the holder's side (`policy::combining`): applies the requests that
/// writers published for the latch at `latch`, which this thread holds on `node`, and
/// completes each (applied or handed back) before the latch is released. A Contention
/// Split that an applied request asks for is kept in `split_at` if none is there yet.
#[cold]
#[inline(never)]
pub(super) fn serve_waiters(
    core: &TreeCore,
    node: &mut NodeMut<'_>,
    latch: usize,
    split_at: &mut Option<Vec<u8>>,
) {
    let mut batch = Vec::new();
    let mut applied = 0;
    for _ in 0..combining::ROUNDS {
        core.policy.combining.take(latch, &mut batch);
        if batch.is_empty() {
            break;
        }
        for taken in batch.drain(..) {
            // SAFETY: taken from the queue of the latch this thread holds; its writer waits
            // until it is completed below.
            let request = unsafe { taken.request() };
            let outcome = apply_request(core, node, request, split_at);
            applied += i64::from(matches!(outcome, Outcome::Applied { .. }));
            // SAFETY: as above; completed once, and not touched afterwards.
            unsafe { taken.complete(outcome) };
        }
    }
    if applied > 0 {
        core.counters.add(Counter::OpsCombined, applied);
        core.counters.add(Counter::CombineBatches, 1);
    }
}

/// Applies one published request to the latched leaf `node`, as its writer would have:
/// `Bounced` (the leaf unchanged) when the key lies outside the leaf's fences, its value
/// is out of line, or the change needs a split. A key and a value of a request stay
/// inline (its writer checked).
fn apply_request(
    core: &TreeCore,
    node: &mut NodeMut<'_>,
    request: &Request,
    split_at: &mut Option<Vec<u8>>,
) -> Outcome {
    let dir = core.directory();
    let key = request.key;
    // With a hot range, a write must be checked by its own thread (`Side::blocks`).
    if crate::side::Side::any(core.side.state()) || !matches!(node.holds_key(key, dir), Ok(true)) {
        return Outcome::Bounced;
    }
    let Ok((pos, found)) = node.lower_bound(key, dir) else {
        return Outcome::Bounced;
    };
    if found && node.is_stub(pos) {
        return Outcome::Bounced;
    }
    let outcome = match request.kind {
        Kind::Insert(value) => {
            let old = found.then(|| node.value_mut(pos).to_vec());
            match put_inline(node, pos, key, found, value) {
                Ok(Ok(_)) => Outcome::Applied {
                    old,
                    underfull: false,
                },
                _ => return Outcome::Bounced,
            }
        }
        Kind::Remove if !found => {
            return Outcome::Applied {
                old: None,
                underfull: false,
            }
        }
        Kind::Remove => {
            let old = node.value_mut(pos).to_vec();
            node.remove_at(pos);
            Outcome::Applied {
                old: Some(old),
                underfull: core.is_underfull(node),
            }
        }
    };
    let split = core.policy.after_change(node, pos, true, core);
    if split_at.is_none() {
        *split_at = split;
    }
    outcome
}
