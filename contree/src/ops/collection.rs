//! The std collection traits of [`Tree`]: [`FromIterator`], [`Extend`], [`IntoIterator`]
//! for `&Tree`, and unwind safety.

use super::scan::Range;
use crate::{Bytes, Tree};
use std::panic::{RefUnwindSafe, UnwindSafe};

/// Builds a tree with the default [`Config`](crate::Config) from `(key, value)` pairs of
/// anything that is bytes (through [`insert_many`](Tree::insert_many): a key given twice
/// gets its last value).
///
/// # Panics
///
/// If the tree refuses an entry (a key or value over the limits), as std's collections
/// panic on capacity overflow; nothing is inserted then. Use
/// [`insert_many`](Tree::insert_many) to get the [`Error`](crate::Error) instead.
///
/// ```
/// let tree: contree::Tree = [("b", "2"), ("a", "1")].into_iter().collect();
/// assert_eq!(tree.get(b"a"), Some(b"1".to_vec()));
/// assert_eq!(tree.len(), 2);
/// ```
impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for Tree {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut tree = Tree::new();
        tree.extend(entries);
        tree
    }
}

/// Inserts (or replaces) `(key, value)` pairs of anything that is bytes, through
/// [`insert_many`](Tree::insert_many): the batch is written in key order, and a key given
/// twice gets its last value.
///
/// # Panics
///
/// If the tree refuses an entry (a key or value over the limits, or the memory budget
/// exhausted), as std's collections panic on capacity overflow; the tree is left as it was
/// (see [`insert_many`](Tree::insert_many)), which returns the
/// [`Error`](crate::Error) instead.
///
/// ```
/// let mut tree = contree::Tree::new();
/// tree.extend([(b"k1".to_vec(), b"v1".to_vec()), (b"k2".to_vec(), b"v2".to_vec())]);
/// tree.extend((0u8..3).map(|i| ([i], [i])));
/// assert_eq!(tree.len(), 5);
/// ```
impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Extend<(K, V)> for Tree {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, entries: I) {
        if let Err(e) = self.insert_many(entries) {
            panic!("contree: Tree::extend or collect: {e} (use Tree::insert_many to handle it)");
        }
    }
}

/// Iterates over the entries in key order, as [`Tree::iter`].
///
/// ```
/// let tree = contree::Tree::new();
/// tree.insert(b"a", b"1").unwrap();
/// for (k, v) in &tree {
///     assert_eq!((&k[..], &v[..]), (&b"a"[..], &b"1"[..]));
/// }
/// ```
impl<'t> IntoIterator for &'t Tree {
    type Item = (Bytes, Bytes);
    type IntoIter = Range<'t>;

    fn into_iter(self) -> Range<'t> {
        self.iter()
    }
}

// Unwind safety: `Tree` is `UnwindSafe` and `RefUnwindSafe` by its fields (no field is an
// `UnsafeCell` or `Cell` outside a synchronisation type), which the assertion below keeps
// so; were a field to block it, implementing both by hand would be sound, because a panic
// leaves a tree valid: a panic inside a user closure (or a re-entrant call's panic) unwinds
// through the guards, which release the latches, and no operation leaves a half-made
// structure change behind. What a panicking closure already wrote in place to its value
// (`update_with`) stays; everything else is as before the call.

// `Tree` is shared between threads and across `catch_unwind`
// (`catch_unwind(|| tree.get(b"k"))` compiles), checked at compile time.
const _: () = {
    const fn assert_traits<T: Send + Sync + UnwindSafe + RefUnwindSafe>() {}
    assert_traits::<Tree>();
    assert_traits::<&Tree>();
};
