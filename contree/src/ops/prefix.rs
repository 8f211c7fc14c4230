//! Prefix scans: [`Tree::scan_prefix`], a [`Range`] from the prefix to the first key
//! above every key that starts with it.

use super::scan::Range;
use crate::{Bytes, Tree};
use std::ops::Bound;

/// The smallest key above every key that starts with `prefix`: the prefix with its
/// trailing `0xFF` bytes stripped and its last byte incremented. `None` when there is no
/// such key (the prefix is empty or all `0xFF`): every key from the prefix on starts with it.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut end = prefix[..=keep].to_vec();
    end[keep] += 1;
    Some(end)
}

impl Tree {
    /// A double-ended iterator over the entries whose keys start with `prefix`, in key
    /// order (a [`range`](Self::range) from `prefix` to the first key above all keys that
    /// start with it; the empty prefix gives every entry).
    ///
    /// ```
    /// let tree = contree::Tree::new();
    /// for k in ["user/1", "user/2", "user0", "users", "post/1"] {
    ///     tree.insert(k.as_bytes(), b"").unwrap();
    /// }
    /// let users: Vec<_> = tree.scan_prefix("user/").map(|(k, _)| k).collect();
    /// assert_eq!(users, [&b"user/1"[..], b"user/2"]);
    /// assert_eq!(tree.scan_prefix(b"user").count(), 4);
    /// assert_eq!(tree.scan_prefix(b"user").next_back().unwrap().0, b"users");
    /// assert_eq!(tree.scan_prefix("").count(), 5);
    /// // Prefixes ending in 0xFF bytes work too.
    /// tree.insert(&[0xFF, 0xFF, 1], b"").unwrap();
    /// assert_eq!(tree.scan_prefix([0xFF]).count(), 1);
    /// ```
    pub fn scan_prefix(&self, prefix: impl AsRef<[u8]>) -> Range<'_> {
        let prefix = prefix.as_ref();
        let end = match prefix_end(prefix) {
            Some(end) => Bound::Excluded(Bytes::from(end)),
            None => Bound::Unbounded,
        };
        Range::new(self, Bound::Included(Bytes::copy_from_slice(prefix)), end)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_strips_trailing_ff_and_increments() {
        assert_eq!(prefix_end(b""), None);
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[1, 0xFE, 0xFF, 0xFF]), Some(vec![1, 0xFF]));
        assert_eq!(prefix_end(&[0]), Some(vec![1]));
    }
}
