//! Unit tests of splits and merges: positions, separators, fences, prefixes, the append
//! split's page copy, re-encoding under another prefix and the split bound (also run under
//! Miri: see the README).

use super::tests::{insert, keys, test_dir, value_of};
use super::*;

/// Splits `n` at `pos` into `left` with the separator the split path computes for it, and
/// returns that separator.
fn split(n: &mut NodeMut<'_>, left: NodeMut<'_>, pos: usize) -> Vec<u8> {
    let sep = n.node().split_separator(pos).unwrap();
    n.split(left, pos, &sep);
    sep
}

#[test]
fn split_at_every_position_keeps_all_keys_and_fences() {
    for sep in 0..20 {
        let mut p = Scratch::new(4096);
        let mut q = Scratch::new(4096);
        let mut n = p.node_mut();

        n.init(0, Some(b"key0"), Some(b"key9"), b"key");
        assert_eq!(n.prefix_len(), 3);
        let all: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("key1{i:03}").into_bytes())
            .collect();
        for k in &all {
            assert!(insert(&mut n, k, b"v"));
        }
        let s = split(&mut n, q.node_mut(), sep);
        let left = q.node();
        // The separator: the key at `sep`, or (suffix truncation) the next key's first
        // bytes through the first that differs, when that is shorter: "key1010" after
        // "key1009" gives "key101".
        let want = match sep {
            9 => b"key101".to_vec(),
            _ => all[sep].clone(),
        };
        assert_eq!(s, want, "split at {sep}");
        assert!(all[sep] <= s && all.get(sep + 1).is_none_or(|next| s < *next));
        assert_eq!(keys(&left), all[..=sep].to_vec());
        assert_eq!(keys(&n), all[sep + 1..].to_vec());
        assert_eq!(left.lower_fence().unwrap(), Some(b"key0".to_vec()));
        assert_eq!(left.upper_fence().unwrap(), Some(s.clone()));
        assert_eq!(n.lower_fence().unwrap(), Some(s.clone()));
        assert_eq!(n.upper_fence().unwrap(), Some(b"key9".to_vec()));
        // Each half's prefix is its keys' common prefix, at least the fences' "key".
        for half in [&n.node(), &left] {
            let p = half.prefix().unwrap();
            assert!(p.starts_with(b"key"));
            assert!(keys(half).iter().all(|k| k.starts_with(&p)));
        }
    }
}

/// A leaf split whose left half keeps the node's prefix and all but at most one entry
/// (the append split on the right edge) copies the page instead of re-encoding the
/// entries: the left half reads exactly as the entry-by-entry rebuild, fences, prefix and
/// flags included, and takes inserts afterwards.
#[test]
fn an_append_split_copies_the_page_and_matches_a_rebuild() {
    let key = |i: u64| (0x0102_0304_0000_0000 + i * 7).to_be_bytes();
    for lower in [None, Some(key(0))] {
        for drop in [0, 1] {
            let fill = |n: &mut NodeMut| {
                n.init(0, lower.as_ref().map(|l| &l[..]), None, b"");
                let mut i = 1;
                while n.insert_entry(n.count(), &key(i), &i.to_le_bytes()) {
                    i += 1;
                }
                // Room for the left half's new fence, as `choose_split` would find it.
                n.remove_at(n.count() - 1);
                n.remove_at(n.count() - 1);
            };
            let (mut p, mut q, mut r) =
                (Scratch::new(4096), Scratch::new(4096), Scratch::new(4096));
            let mut n = p.node_mut();
            fill(&mut n);
            let count = n.count();
            let sep_pos = count - 1 - drop;
            // The rebuild, from an identical node.
            let mut m = r.node_mut();
            fill(&mut m);
            let sep = m.key(sep_pos).unwrap();
            let prefix = m.prefix_for(lower.as_ref().map(|l| &l[..]), Some(&sep), 0..sep_pos + 1);
            let mut built = Scratch::new(4096);
            {
                let mut b = Builder::new(
                    built.node_mut(),
                    0,
                    lower.as_ref().map(|l| &l[..]),
                    Some(&sep),
                    &prefix.unwrap(),
                );
                b.copy_range(&m, 0..sep_pos + 1);
                b.finish(0);
            }
            let built = built.node();
            assert_eq!(split(&mut n, q.node_mut(), sep_pos), sep);
            let left = q.node();
            assert_eq!(left.prefix().unwrap(), built.prefix().unwrap());
            assert_eq!(keys(&left), keys(&built));
            for i in 0..left.count() {
                assert_eq!(value_of(&left, i), value_of(&built, i));
            }
            assert_eq!(left.lower_fence().unwrap(), built.lower_fence().unwrap());
            assert_eq!(left.upper_fence().unwrap(), Some(sep.clone()));
            assert_eq!(left.flags(), built.flags());
            assert_eq!(left.free_space(), built.free_space());
            assert_eq!(left.policy_area(), [0; POLICY_AREA]);
            // On the right edge (a lower fence) the left half keeps the prefix, so the page
            // is copied, and a dropped entry's bytes stay behind in the copy. (Without fences
            // the left half's prefix grows: a rebuild.)
            let copied = built.prefix_len() == m.prefix_len();
            assert_eq!(copied, lower.is_some());
            if copied && drop == 1 {
                assert!(left.contiguous_space() < left.free_space());
            }
            assert_eq!(
                keys(&n),
                (sep_pos + 1..count)
                    .map(|i| m.key(i).unwrap())
                    .collect::<Vec<_>>()
            );
            // The copy takes writes: remove its last entry, and insert it again.
            let mut lq = q.node_mut();
            let last = lq.key(sep_pos).unwrap();
            lq.remove_at(sep_pos);
            assert!(lq.insert_entry(sep_pos, &last, b"again"));
            assert_eq!(value_of(&lq, sep_pos), b"again");
            assert_eq!(keys(&lq), keys(&built));
        }
    }
}

/// Makes `n` an inner node of ten keys 0, 2, .., 18 over children 100..110, with upper
/// child 999.
fn inner_of_ten(n: &mut NodeMut<'_>) {
    n.init(1, None, None, b"");
    for i in 0..10u32 {
        assert!(insert(n, &[i as u8 * 2], &(100 + i).to_ne_bytes()));
    }
    n.set_upper_child(999);
}

/// `prefix_for`, which reads the first and last keys' common prefix in place, gives what
/// `node_prefix` gives for the whole keys, for every range of nodes whose keys share
/// prefixes of many lengths (inside the head, across it, up to the cap, keys that are
/// prefixes of others, zero bytes that a short suffix's padded head also has), under a
/// prefix taken from the keys and under none.
#[test]
fn prefix_for_matches_the_whole_keys_common_prefix() {
    let mut rnd = super::tests::rng(0x51_7cc1_b727_220a);
    let rounds = if cfg!(miri) { 3 } else { 40 };
    for round in 0..rounds {
        let mut p = Scratch::new(4096);
        let mut n = p.node_mut();
        n.init(0, None, None, b"");
        let stem: Vec<u8> = (0..(rnd() % 90) as usize)
            .map(|_| [0, b'a', b'b'][(rnd() % 3) as usize])
            .collect();
        for _ in 0..30 {
            let mut k = if round % 2 == 0 {
                stem.clone()
            } else {
                Vec::new()
            };
            k.extend((0..(rnd() % 12) as usize).map(|_| [0, b'a', b'b'][(rnd() % 3) as usize]));
            if n.lower_bound(&k, &test_dir()).unwrap().1 {
                continue;
            }
            if !insert(&mut n, &k, b"v") {
                break;
            }
        }
        let all = keys(&n);
        for a in 0..all.len() {
            for b in a + 1..=all.len() {
                let want = node_prefix(4096, None, None, Some(&all[a]), Some(&all[b - 1]));
                assert_eq!(n.prefix_for(None, None, a..b).unwrap(), want, "{a}..{b}");
            }
        }
        let fences = (Some(&b"ab"[..]), Some(&b"ac"[..]));
        assert_eq!(n.prefix_for(fences.0, fences.1, 0..0).unwrap(), b"a");
    }
}

#[test]
fn inner_split_pushes_the_separator_up() {
    let mut p = Scratch::new(4096);
    let mut q = Scratch::new(4096);
    let mut n = p.node_mut();

    inner_of_ten(&mut n);
    let sep = split(&mut n, q.node_mut(), 4);
    let left = q.node();
    assert_eq!(sep, vec![8]);
    assert_eq!(left.count(), 4);
    assert_eq!(left.upper_child(), 104);
    assert_eq!(n.count(), 5);
    assert_eq!(n.upper_child(), 999);
    assert_eq!(n.child(0).unwrap(), 105);
}

#[test]
fn merge_restores_the_original_node() {
    let mut p = Scratch::new(4096);
    let mut q = Scratch::new(4096);
    let mut n = p.node_mut();

    n.init(0, Some(b"a"), Some(b"z"), b"");
    let all: Vec<Vec<u8>> = (0..30).map(|i| format!("m{i:02}").into_bytes()).collect();
    for k in &all {
        assert!(insert(&mut n, k, k));
    }
    let sep = split(&mut n, q.node_mut(), 11);
    let left = q.node();
    let need = Node::merged_space(&left, &n, &sep).unwrap();
    assert!(need <= 4096);
    assert!(Node::merged_space_at_least(&left, &n) <= need);
    n.merge_from_left(&left, &sep);
    assert_eq!(keys(&n), all);
    assert_eq!(n.lower_fence().unwrap(), Some(b"a".to_vec()));
    assert_eq!(n.upper_fence().unwrap(), Some(b"z".to_vec()));
    for (i, k) in all.iter().enumerate() {
        assert_eq!(value_of(&n, i), &k[..]);
    }
}

#[test]
fn inner_merge_pulls_the_separator_down() {
    let mut p = Scratch::new(4096);
    let mut q = Scratch::new(4096);
    let mut n = p.node_mut();

    inner_of_ten(&mut n);
    let sep = split(&mut n, q.node_mut(), 4);
    let left = q.node();
    n.merge_from_left(&left, &sep);
    assert_eq!(n.count(), 10);
    for i in 0..10 {
        assert_eq!(n.key(i).unwrap(), vec![i as u8 * 2]);
        assert_eq!(n.child(i).unwrap(), 100 + i as u32);
    }
    assert_eq!(n.upper_child(), 999);
}

/// `Builder::copy_range` re-encodes entries under a longer prefix (splits), the same prefix
/// and a shorter prefix (merges) for suffixes of every length around the 4-byte head.
#[test]
fn copy_range_reencodes_under_any_prefix() {
    let base = b"pre:fix/".to_vec();
    let mut ks: Vec<Vec<u8>> = Vec::new();
    for len in 0..12usize {
        for v in 0..3u8 {
            let mut k = base.clone();
            k.extend((0..len).map(|j| b'a' + ((j as u8 + v) % 3)));
            ks.push(k);
        }
    }
    ks.sort();
    ks.dedup();
    let mut src_page = Scratch::new(4096);
    let mut src = src_page.node_mut();
    // A leaf whose prefix is the common part of all keys (a node between fences).
    src.init(0, Some(b"pre:fix/"), Some(b"pre:fix/~"), b"pre:fix/");
    for (i, k) in ks.iter().enumerate() {
        assert!(src.insert_at(i, k, &[i as u8; 3]));
    }
    let src = src.node();
    // Shorter prefixes (merge), the same one, and a longer one over the keys sharing it.
    for dst_prefix in [&b""[..], b"pr", b"pre:fix", b"pre:fix/", b"pre:fix/a"] {
        let range: Vec<usize> = (0..ks.len())
            .filter(|&i| ks[i].starts_with(dst_prefix))
            .collect();
        let (first, end) = (range[0], range[range.len() - 1] + 1);
        let mut dst_page = Scratch::new(4096);
        let mut b = dst_page.builder(0, None, None, dst_prefix);
        b.copy_range(&src, first..end);
        b.finish(0);
        let dst = dst_page.node();
        assert_eq!(dst.prefix_len(), dst_prefix.len());
        assert_eq!(keys(&dst), ks[first..end].to_vec(), "prefix {dst_prefix:?}");
        for (j, i) in (first..end).enumerate() {
            assert_eq!(value_of(&dst, j), vec![i as u8; 3]);
            assert_eq!(dst.lower_bound(&ks[i], &test_dir()).unwrap(), (j, true));
        }
    }
}

/// `split_surely_fits` (the cheap bound `choose_split` tries first) never says a split
/// fits that does not, at every position of full leaves and inner nodes with keys of many
/// lengths and shared prefixes; and it does say so for the middle of a full node of short
/// keys, where the exact sizing would be wasted.
#[test]
fn the_split_bound_never_admits_a_split_that_does_not_fit() {
    let mut rnd = super::tests::rng(0x9e37_79b9_7f4a_7c15);
    // Under Miri every round (a full node, each split position sized exactly) takes about
    // a minute: four rounds cover the four fence cases there.
    let rounds = if cfg!(miri) { 4 } else { 40 };
    for round in 0..rounds {
        let level = (round % 2) as u16;
        let mut p = Scratch::new(4096);
        let mut n = p.node_mut();
        let (lower, upper): (Option<&[u8]>, Option<&[u8]>) = match round % 4 {
            0 => (Some(b"pre"), Some(b"prf")),
            1 => (None, None),
            2 => (Some(b"pre"), None),
            _ => (None, Some(b"prf")),
        };
        // The node's prefix is its keys' common prefix, as the tree's nodes have it.
        n.init(level, lower, upper, b"pre");
        loop {
            let len = 1 + (rnd() % [6, 20, 60][round % 3]) as usize;
            let mut key = b"pre".to_vec();
            key.extend((0..len).map(|_| [0, b'a', b'b'][(rnd() % 3) as usize]));
            let value_len = if level == 0 { (rnd() % 40) as usize } else { 4 };
            let (pos, found) = n.lower_bound(&key, &test_dir()).unwrap();
            if found {
                continue;
            }
            if !n.insert_at(pos, &key, &vec![7; value_len]) {
                break;
            }
        }
        let node = n.node();
        let count = node.count();
        let mut admitted = 0;
        for sep in 0..count {
            if node.split_surely_fits(sep).unwrap() {
                admitted += 1;
                let (l, r) = node.split_sizes(sep).unwrap();
                assert!(l <= 4096 && r <= 4096, "round {round}, sep {sep}: {l}, {r}");
            }
        }
        assert!(
            admitted > 0,
            "round {round}: the bound admits no position of {count}"
        );
    }
}
