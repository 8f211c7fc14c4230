//! [`Tree::pop_first`] and [`Tree::pop_last`]: read the entry at one end, then remove its
//! key; the caller whose `remove` returns the value owns the entry, and the others look
//! again. So under concurrency each entry is popped by exactly one caller.

use crate::Tree;

impl Tree {
    /// Removes and returns the entry with the smallest key, or `None` if the tree is empty.
    ///
    /// Concurrent callers never get the same entry: the key is read at the front and then
    /// removed, and a caller whose removal finds the key gone (another caller popped it)
    /// looks again. The value returned is the one the removal took out. Under concurrent
    /// inserts the popped key was the smallest when it was read; a smaller key inserted
    /// between that read and the removal stays in the tree.
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for (k, v) in [(b"b", b"2"), (b"a", b"1"), (b"c", b"3")] {
    ///     tree.insert(k, v).unwrap();
    /// }
    /// assert_eq!(tree.pop_first(), Some((b"a".to_vec(), b"1".to_vec())));
    /// assert_eq!(tree.pop_first(), Some((b"b".to_vec(), b"2".to_vec())));
    /// assert_eq!(tree.len(), 1);
    /// ```
    pub fn pop_first(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.pop_end(true)
    }

    /// Removes and returns the entry with the largest key, or `None` if the tree is empty.
    /// Each entry is popped by exactly one caller, as with [`pop_first`](Self::pop_first).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for (k, v) in [(b"b", b"2"), (b"a", b"1"), (b"c", b"3")] {
    ///     tree.insert(k, v).unwrap();
    /// }
    /// assert_eq!(tree.pop_last(), Some((b"c".to_vec(), b"3".to_vec())));
    /// assert_eq!(tree.pop_last(), Some((b"b".to_vec(), b"2".to_vec())));
    /// assert_eq!(tree.pop_last(), Some((b"a".to_vec(), b"1".to_vec())));
    /// assert_eq!(tree.pop_last(), None);
    /// ```
    pub fn pop_last(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.pop_end(false)
    }

    /// Pops at the front (`first`) or the back.
    fn pop_end(&self, first: bool) -> Option<(Vec<u8>, Vec<u8>)> {
        self.pop_end_where(first, |_, _| true)
    }

    /// The pop behind both ends, for the entries `wanted` accepts (the typed layer passes
    /// over entries that do not decode): the first such entry from one end is removed only
    /// if `wanted` still accepts its value under the leaf's latch; the caller whose removal
    /// returns the value owns the entry, and the others look again.
    pub(crate) fn pop_end_where(
        &self,
        first: bool,
        wanted: impl Fn(&[u8], &[u8]) -> bool,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let mut c = self.cursor();
        loop {
            if first {
                c.seek_to_first();
            } else {
                c.seek_to_last();
            }
            let key = loop {
                let (k, v) = c.entry()?;
                if wanted(k, v) {
                    break k.to_vec();
                }
                if first {
                    c.next();
                } else {
                    c.prev();
                }
            };
            if let Some(value) = self.remove_if(&key, |v| wanted(&key, v)) {
                return Some((key, value));
            }
            // Another caller removed or changed it between the read and the removal.
        }
    }
}
