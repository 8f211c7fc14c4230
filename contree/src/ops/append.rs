//! The uncontended append: an insert at the end of the rightmost leaf while nothing else
//! holds that leaf, without the combining request and retry loop of the lean insert
//! (`write.rs`), which takes every insert this path hands back.

use super::combine::serve_waiters;
use crate::node::NodeMut;
use crate::sync::reentry;
use crate::Tree;

/// What [`Tree::append_uncontended`] did.
pub(super) enum Appended {
    /// Stored.
    Done,
    /// The rightmost leaf has no room: nothing changed (the latch it took is released).
    Full,
    /// Not an uncontended append: nothing changed (a latch it took is released).
    NotTaken,
}

impl Tree {
    /// An append onto the rightmost leaf while nothing contends for it: the append finger's
    /// look ([`TreeCore::rightmost_finger`]) without a waiting path, so none of what only a
    /// taken latch needs (the combining request, the retry loop) is built. `NotTaken`, with
    /// nothing changed, when the key is no append there or the latch is taken or changes
    /// under the look: the caller goes on with the lean insert, which waits, hands over and
    /// retries. `Full` when the leaf has no room (the caller splits through the general path).
    #[inline(never)]
    pub(super) fn append_uncontended(&self, key: &[u8], value: &[u8]) -> Appended {
        let core = &*self.core;
        // A descent like any other: a call from a closure holding this tree's latch panics.
        reentry::check(core.id());
        let (node, latch) = core.rightmost_page();
        let Some(look) = latch.try_optimistic() else {
            return Appended::NotTaken;
        };
        // The rightmost leaf has no upper fence; a key above its keys, with its prefix, is
        // above its lower fence too (`Node::sorts_after_last`).
        let at_end = !node.has_upper_fence()
            && matches!(node.sorts_after_last(key, core.directory()), Ok(true));
        if !at_end {
            return Appended::NotTaken;
        }
        // Latched at the version the look read: the leaf holds the keys the look compared.
        let Ok(Some(mut x)) = look.try_upgrade_exclusive() else {
            return Appended::NotTaken;
        };
        if node.level() != 0 || core.side.blocks(key) {
            return Appended::NotTaken;
        }
        core.policy
            .latched(node, &mut x, &core.counters, core.numa.as_deref());
        // `insert_latched`'s work for a key known to sort after every key, written out: through
        // `insert_latched` itself (its out-parameter, the found and old-value cases) an append
        // cost 592 instructions instead of 569 (callgrind, ../shared/instr/run.sh).
        let latch = x.latch_addr();
        let slow_path = x.slow_path();
        let mut node = NodeMut::new(node, &mut x);
        let pos = node.count();
        if !node.insert_entry_appended(pos, key, value) {
            return Appended::Full;
        }
        let mut split_at = core.policy.after_change(&mut node, pos, slow_path, core);
        if core.policy.combining.has_waiters(latch) {
            serve_waiters(core, &mut node, latch, &mut split_at);
        }
        drop(x);
        core.after_insert(true, split_at);
        Appended::Done
    }
}

#[cfg(test)]
mod tests {
    use super::Appended;
    use crate::Tree;
    use std::time::Duration;

    fn key(i: u64) -> [u8; 8] {
        i.to_be_bytes()
    }

    /// The uncontended append stores keys above the rightmost leaf's keys, hands every other
    /// key and a read-latched leaf back untouched (the lean insert then waits for the
    /// reader), and reports a full leaf without changing it.
    #[test]
    fn uncontended_appends_take_only_what_they_can_finish() {
        let tree = Tree::new();
        for i in 0..1_000 {
            tree.insert(&key(i), b"v").unwrap();
        }
        let core = &*tree.core;
        assert!(core.appending(), "a run of appends leaves the finger on");
        assert!(matches!(
            tree.append_uncontended(&key(1_000), b"v"),
            Appended::Done
        ));
        assert_eq!(tree.len(), 1_001);
        // The last key again, and a key below it: not appends.
        assert!(matches!(
            tree.append_uncontended(&key(1_000), b"w"),
            Appended::NotTaken
        ));
        assert!(matches!(
            tree.append_uncontended(&key(5), b"w"),
            Appended::NotTaken
        ));
        assert_eq!(tree.get(&key(1_000)).as_deref(), Some(&b"v"[..]));
        assert_eq!(tree.get(&key(5)).as_deref(), Some(&b"v"[..]));

        // A reader holds the rightmost leaf: handed back; an insert waits for the reader.
        let (_, latch) = core.rightmost_page();
        let reader = latch.shared();
        assert!(matches!(
            tree.append_uncontended(&key(1_001), b"v"),
            Appended::NotTaken
        ));
        std::thread::scope(|s| {
            let writer = s.spawn(|| tree.insert(&key(1_001), b"v").unwrap());
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                !writer.is_finished(),
                "an append ran under a reader's latch"
            );
            drop(reader);
            assert_eq!(writer.join().unwrap(), None);
        });
        assert_eq!(tree.len(), 1_002);

        // Full: nothing changes; the insert then splits the leaf.
        let mut next = 1_002;
        loop {
            match tree.append_uncontended(&key(next), b"v") {
                Appended::Done => next += 1,
                Appended::Full => break,
                Appended::NotTaken => panic!("append {next} not taken"),
            }
        }
        assert_eq!(tree.len(), next as usize);
        assert_eq!(tree.get(&key(next)), None);
        assert_eq!(tree.insert(&key(next), b"v").unwrap(), None);
        assert_eq!(tree.len(), next as usize + 1);
        tree.check_invariants().unwrap();
        let keys: Vec<u64> = tree
            .iter()
            .map(|(k, _)| u64::from_be_bytes(k[..].try_into().unwrap()))
            .collect();
        assert_eq!(keys, (0..=next).collect::<Vec<u64>>());
    }
}
