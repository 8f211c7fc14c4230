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

// The marks of one thread, innermost last: the outermost `INLINE` in `MARKS`, the rest in
// `MORE_MARKS`. Cells and a fixed array, so that the common mark (one closure) costs no
// borrow flag and no vector push; `MARKS` needs no destructor, so its accesses are plain
// thread-local loads and stores (a thread-local with a destructor checks its state at every
// access: +19 instructions per `get_with` when the depth shared one). The depth and the
// inline marks share one thread-local, so a mark costs one thread-local address: as two,
// the array's access stayed an out-of-line call through the key's accessor, and a mark
// and its drop cost `update_with` about 50 instructions (callgrind).
// Per thread of the model under Shuttle (`seam`), where several model threads may share one
// OS thread.
struct Marks {
    /// How many closures that hold a latch are running on this thread (nested closures on
    /// several trees each count).
    depth: Cell<u32>,
    inline: [Cell<Mark>; INLINE],
}

crate::sync::seam::model_local! {
    static MARKS: Marks = const {
        Marks {
            depth: Cell::new(0),
            inline: [const { Cell::new((0, "")) }; INLINE],
        }
    };
    static MORE_MARKS: RefCell<Vec<Mark>> = const { RefCell::new(Vec::new()) };
}

/// Panics if this thread runs a closure that holds a latch of the tree at `tree`.
#[inline(always)]
pub(crate) fn check(tree: *const ()) {
    if MARKS.with(|m| m.depth.get()) != 0 {
        check_slow(tree as usize);
    }
}

#[cold]
#[inline(never)]
fn check_slow(tree: usize) {
    let mut marks: Vec<Mark> = MARKS.with(|m| {
        let depth = m.depth.get() as usize;
        m.inline[..depth.min(INLINE)]
            .iter()
            .map(Cell::get)
            .collect()
    });
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
    /// This thread's marks, found once by `enter` for the drop too (a thread-local's
    /// `with` that the optimiser leaves out of line costs ~20 instructions).
    marks: *const Marks,
}

/// This thread's marks.
#[inline(always)]
fn marks() -> *const Marks {
    MARKS.with(|m| m as *const Marks)
}

impl InClosure {
    #[inline(always)]
    pub(crate) fn enter(tree: *const (), op: &'static str) -> InClosure {
        let marks = marks();
        // SAFETY: `marks` points to this thread's `MARKS`, which lives as long as the
        // thread (it has no destructor, so it is never torn down before the thread ends);
        // `Marks` holds only cells, read and written by this thread alone.
        let m = unsafe { &*marks };
        let depth = m.depth.get();
        match m.inline.get(depth as usize) {
            Some(mark) => mark.set((tree as usize, op)),
            None => push_more((tree as usize, op)),
        }
        m.depth.set(depth + 1);
        InClosure { marks }
    }
}

/// A mark nested deeper than the inline array.
#[cold]
#[inline(never)]
fn push_more(mark: Mark) {
    MORE_MARKS.with(|m| m.borrow_mut().push(mark));
}

/// Takes the innermost mark nested deeper than the inline array.
#[cold]
#[inline(never)]
fn pop_more() {
    MORE_MARKS.with(|m| m.borrow_mut().pop());
}

impl Drop for InClosure {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: `self.marks` is this thread's `MARKS` (see `enter`): an `InClosure` holds
        // a raw pointer, so it is neither `Send` nor `Sync` and is dropped on the thread
        // that made it, while that thread (and so its thread-local) lives.
        let m = unsafe { &*self.marks };
        let depth = m.depth.get() - 1;
        m.depth.set(depth);
        if depth as usize >= INLINE {
            pop_more();
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
