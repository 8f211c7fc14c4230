//! The re-entry guard: a thread-local record of the trees whose latch this thread holds
//! while a user closure runs (`update_with`, `fetch_update`, `remove_if` run their closure
//! under the leaf's exclusive latch). A call from inside such a closure into the same tree
//! would wait for the latch its own thread holds, forever; instead every descent checks the
//! record first and panics with a message that says what happened and what to do instead,
//! as a re-borrowed `RefCell` does.
//!
//! The check is deterministic: it fires for any descent into that tree, whichever key,
//! so a re-entrant call fails in the first test that makes it, not only when two keys
//! happen to share a leaf. Calls into other trees work. The record is thread-local, so no
//! other thread pays for it; the fast path is one thread-local load and a compare.

use std::cell::{Cell, RefCell};

/// Marks kept in the thread-local array; deeper nesting (closures of more trees at once)
/// goes on in a vector.
const INLINE: usize = 4;

/// A mark: the tree (its core's address) and the name of the operation whose closure runs.
type Mark = (usize, &'static str);

// The marks of one thread, innermost last: the outermost `INLINE` in `INLINE_MARKS`, the
// rest in `MORE_MARKS`. Cells and a fixed array, so that the common mark (one closure) costs
// no borrow flag and no vector push; `DEPTH` and `INLINE_MARKS` need no destructor, so their
// accesses are plain thread-local loads and stores (a thread-local with a destructor checks
// its state at every access: +19 instructions per `get_with` when `DEPTH` shared one).
// Per thread of the model under Shuttle (`seam`), where several model threads may share one
// OS thread.
crate::sync::seam::model_local! {
    /// How many closures that hold a latch are running on this thread (nested closures on
    /// several trees each count).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static INLINE_MARKS: [Cell<Mark>; INLINE] = const { [const { Cell::new((0, "")) }; INLINE] };
    static MORE_MARKS: RefCell<Vec<Mark>> = const { RefCell::new(Vec::new()) };
}

/// Panics if this thread runs a closure that holds a latch of the tree at `tree`.
#[inline(always)]
pub(crate) fn check(tree: *const ()) {
    if DEPTH.with(Cell::get) != 0 {
        check_slow(tree as usize);
    }
}

#[cold]
#[inline(never)]
fn check_slow(tree: usize) {
    let depth = DEPTH.with(Cell::get) as usize;
    let mut marks: Vec<Mark> =
        INLINE_MARKS.with(|m| m[..depth.min(INLINE)].iter().map(Cell::get).collect());
    MORE_MARKS.with(|m| marks.extend(m.borrow().iter().copied()));
    let op = marks
        .iter()
        .rev()
        .find(|(t, _)| *t == tree)
        .map(|(_, op)| *op);
    if let Some(op) = op {
        panic!(
            "contree: re-entrant call into a Tree from inside the closure passed to \
             `Tree::{op}` (or to a `TreeMap` method built on it) on the same tree. That \
             closure runs while the tree holds the \
             leaf's exclusive latch, so the call would wait for its own thread forever. \
             Read what the closure needs before the call, make further calls after it \
             returns, or use a method whose closure holds no latch (`get_with`, `scan`, \
             the iterators)."
        );
    }
}

/// Marks a closure of operation `op` on the tree at `tree` as running under a latch, until
/// the mark is dropped (also when the closure panics).
pub(crate) struct InClosure {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl InClosure {
    #[inline]
    pub(crate) fn enter(tree: *const (), op: &'static str) -> InClosure {
        let depth = DEPTH.with(Cell::get);
        let placed = INLINE_MARKS.with(|m| {
            m.get(depth as usize)
                .map(|mark| mark.set((tree as usize, op)))
                .is_some()
        });
        if !placed {
            MORE_MARKS.with(|m| m.borrow_mut().push((tree as usize, op)));
        }
        DEPTH.with(|d| d.set(depth + 1));
        InClosure {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for InClosure {
    #[inline]
    fn drop(&mut self) {
        let depth = DEPTH.with(Cell::get) - 1;
        DEPTH.with(|d| d.set(depth));
        if depth as usize >= INLINE {
            MORE_MARKS.with(|m| m.borrow_mut().pop());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_marked_tree_is_refused() {
        let (x, y) = (0u8, 0u8);
        let (a, b) = (&x as *const u8 as *const (), &y as *const u8 as *const ());
        check(a);
        {
            let _m = InClosure::enter(a, "update_with");
            check(b);
            let r = std::panic::catch_unwind(|| check(a));
            let msg = *r.unwrap_err().downcast::<String>().unwrap();
            assert!(msg.contains("Tree::update_with"), "{msg}");
        }
        check(a);
    }

    /// Marks nested deeper than the inline array (closures of many trees at once) are all
    /// found, and each is gone once its closure ends.
    #[test]
    fn deep_nesting_is_refused_at_every_level() {
        let trees: Vec<u8> = vec![0; INLINE + 3];
        let ptr = |i: usize| &trees[i] as *const u8 as *const ();
        let refused = |i: usize| std::panic::catch_unwind(|| check(ptr(i))).is_err();
        let mut marks = Vec::new();
        for i in 0..trees.len() {
            assert!(!refused(i), "tree {i} before its mark");
            marks.push(InClosure::enter(ptr(i), "update_with"));
            assert!((0..=i).all(refused), "marks 0..={i}");
        }
        while let Some(mark) = marks.pop() {
            drop(mark);
            let n = marks.len();
            assert!(!refused(n), "tree {n} after its mark");
            assert!((0..n).all(refused), "marks 0..{n}");
        }
    }
}
