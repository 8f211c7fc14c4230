//! Unit tests of the node layer (also run under Miri: see the README).

use super::leaf_copy::LeafCopy;
use super::*;

/// The value of entry `i` of `n`, which holds inline values only.
pub(super) fn value_of(n: &Node, i: usize) -> Vec<u8> {
    let pool = crate::page::PagePool::new(4096, 4096, false);
    n.value(i, ValueHint::NONE, &Directory::of(&pool)).unwrap()
}

pub(super) fn insert(n: &mut NodeMut, key: &[u8], value: &[u8]) -> bool {
    let (pos, found) = n.lower_bound(key, &test_dir()).unwrap();
    assert!(!found);
    n.insert_at(pos, key, value)
}

pub(super) fn keys(n: &Node) -> Vec<Vec<u8>> {
    (0..n.count()).map(|i| n.key(i).unwrap()).collect()
}

/// A xorshift generator for the node layer's randomised tests.
pub(super) fn rng(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// Both searches of `n` (`lower_bound`, `point_search`) place every probe where the sorted
/// list `all` of its keys does.
fn assert_searches_match(n: &Node, all: &[Vec<u8>], probes: &[Vec<u8>]) {
    for q in probes {
        let want = all.partition_point(|k| k < q);
        let found = all.get(want) == Some(q);
        assert_eq!(
            n.lower_bound(q, &test_dir()).unwrap(),
            (want, found),
            "{q:?}"
        );
        assert_eq!(
            n.point_search(q, &test_dir()).unwrap(),
            (want, found),
            "{q:?}"
        );
    }
}

#[test]
fn search_finds_inserted_keys_in_order() {
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let ks: Vec<&[u8]> = vec![
        b"m",
        b"",
        b"abcd",
        b"abc",
        b"abcde",
        b"ab\0",
        b"ab",
        b"zzzzzzzz",
    ];
    for k in &ks {
        assert!(insert(&mut n, k, k));
    }
    let mut sorted = ks.clone();
    sorted.sort();
    assert_eq!(
        keys(&n),
        sorted.iter().map(|k| k.to_vec()).collect::<Vec<_>>()
    );
    for k in &ks {
        let (pos, found) = n.lower_bound(k, &test_dir()).unwrap();
        assert!(found);
        assert_eq!(value_of(&n, pos), *k);
    }
    assert_eq!(n.lower_bound(b"abcc", &test_dir()).unwrap(), (4, false));
    assert_eq!(
        n.lower_bound(b"zzzzzzzzz", &test_dir()).unwrap(),
        (8, false)
    );
}

/// Every search agrees with a linear scan at every node size (the binary search's probe
/// pattern depends on the count's bit length), over runs of equal heads and between keys.
#[test]
fn searches_match_a_linear_scan_at_every_count() {
    let max = if cfg!(miri) { 40 } else { 700 };
    let mut p = Scratch::new(16384);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    // Runs of three keys with one head: (2 * (j / 3)) as 4 big-endian bytes, then j % 3.
    let key = |j: u32| {
        let mut k = (2 * (j / 3)).to_be_bytes().to_vec();
        k.push((j % 3) as u8 * 2);
        k
    };
    let mut all: Vec<Vec<u8>> = Vec::new();
    for j in 0..max {
        let mut probes: Vec<Vec<u8>> = all.clone();
        for k in &all {
            let mut below = k.clone();
            *below.last_mut().unwrap() += 1;
            probes.push(below);
            probes.push(k[..4].to_vec());
            let mut above = k[..4].to_vec();
            above[3] += 1;
            probes.push(above);
        }
        probes.push(vec![]);
        probes.push(vec![0xFF; 6]);
        assert_searches_match(&n, &all, &probes);
        let k = key(j);
        assert!(insert(&mut n, &k, &[1]));
        all.push(k);
    }
}

/// The head search agrees with a linear scan over every slot range `from..to` of nodes of
/// every count up to 80, with runs of equal heads, for heads below, inside, between and
/// above the slots' (the probes' pattern, and whether the search ends with a count over its
/// last candidates, depend on the range's length).
#[test]
fn head_search_matches_a_linear_scan_over_every_range() {
    let max = if cfg!(miri) { 12 } else { 80 };
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    // Keys whose first four bytes run 0, 10, 20, 20, 30, 40, 40, ...: runs of one and two
    // equal heads.
    let head = |j: u32| 10 * (j - j / 3);
    for j in 0..max {
        let mut k = head(j).to_be_bytes().to_vec();
        k.push(j as u8);
        assert!(insert(&mut n, &k, &[1]));
    }
    let node = n.node();
    let count = node.count();
    // SAFETY: `i < count`, a count `count()` returned.
    let heads: Vec<u32> = (0..count).map(|i| unsafe { node.slot_head(i) }).collect();
    assert!(heads.windows(2).all(|w| w[0] <= w[1]));
    assert!(heads.windows(2).any(|w| w[0] == w[1]));
    for to in 0..=count {
        for from in 0..=to {
            let mut probes: Vec<u32> = vec![0, u32::MAX];
            for h in &heads[from..to] {
                probes.extend([h.saturating_sub(1), *h, h + 1]);
            }
            for h in probes {
                let want = from + heads[from..to].iter().take_while(|&&x| x < h).count();
                assert_eq!(
                    node.first_head_at_least(h, from, to),
                    want,
                    "head {h} in {from}..{to}"
                );
            }
        }
    }
}

/// Searches inside one run of equal heads of long suffixes (`Node::search_run`, whose
/// comparisons start where the entries bounding the search stop agreeing with the key)
/// agree with a sorted list: keys of two symbols after one head share prefixes of every
/// length across the comparison words, some are prefixes of others, and probes lie on,
/// between, just below and just above them.
#[test]
fn runs_of_long_suffixes_match_a_sorted_list() {
    let max = if cfg!(miri) { 30 } else { 300 };
    let mut p = Scratch::new(65536);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let mut next = rng(0x9E37_79B9_7F4A_7C15);
    let mut all: Vec<Vec<u8>> = Vec::new();
    while all.len() < max {
        let len = 1 + (next() % 40) as usize;
        let mut k = b"path".to_vec();
        k.extend((0..len).map(|_| b'a' + (next() % 2) as u8));
        let (pos, found) = n.lower_bound(&k, &test_dir()).unwrap();
        assert_eq!(
            (pos, found),
            (all.partition_point(|x| *x < k), all.contains(&k))
        );
        if found {
            continue;
        }
        assert!(n.insert_at(pos, &k, b"v"));
        all.insert(pos, k);
        if !all.len().is_multiple_of(25) {
            continue;
        }
        let mut probes = Vec::new();
        for k in &all {
            probes.push(k.clone());
            let mut longer = k.clone();
            longer.push(0);
            probes.push(longer);
            probes.push(k[..k.len() - 1].to_vec());
            let mut above = k.clone();
            *above.last_mut().unwrap() += 1;
            probes.push(above);
        }
        assert_searches_match(&n, &all, &probes);
    }
}

/// The value hint of a search that found its key (`ValueHint`) locates exactly the value
/// that `entry` decodes, for every length-header form (one byte, two bytes, the long form,
/// where no hint is given) and suffixes shorter and longer than a head; a missing key gets
/// no hint.
#[test]
fn value_hints_locate_the_found_value() {
    let mut p = Scratch::new(65536);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let mut hinted = 0;
    let mut stored = Vec::new();
    for (i, suffix_len) in [0usize, 1, 3, 4, 5, 7, 8, 9, 12, 40, 63, 64, 70]
        .iter()
        .enumerate()
    {
        for (j, value_len) in [0usize, 1, 8, 15, 16, 200, 255, 256, 300]
            .iter()
            .enumerate()
        {
            let mut key = vec![(i * 16 + j) as u8];
            key.extend((0..*suffix_len).map(|b| b as u8 ^ 0x5A));
            let value: Vec<u8> = (0..*value_len).map(|b| (b + i + j) as u8).collect();
            assert!(insert(&mut n, &key, &value));
            stored.push((key, value));
        }
    }
    for (key, value) in &stored {
        let (pos, found, hint) = n.point_search_hinted(key, &test_dir()).unwrap();
        assert!(found);
        assert_eq!(
            n.lower_bound_hinted(key, &test_dir()).unwrap(),
            (pos, true, hint)
        );
        let e = n.entry(pos).unwrap();
        if let Some((off, len)) = hint.get() {
            hinted += 1;
            assert!(!e.stub);
            assert_eq!((off, len), (e.value_off, e.value_len), "{key:?}");
        }
        assert_eq!(&value_of(&n, pos), value);
        let mut buf = [std::mem::MaybeUninit::new(0u8); 512];
        let len = n.copy_value(pos, hint, &mut buf).unwrap().unwrap();
        // SAFETY: `copy_value` initialised the first `len` bytes (they were initialised
        // anyway).
        let copied = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
        assert_eq!(copied, &value[..]);
        let mut missing = key.clone();
        missing.push(0xFF);
        let (_, found, hint) = n.point_search_hinted(&missing, &test_dir()).unwrap();
        assert!(!found && hint == ValueHint::NONE);
    }
    // Short suffixes with short values take the hint (the integer keys of the ruler).
    assert!(hinted >= 30, "only {hinted} hinted");
}

#[test]
fn insert_until_full_then_remove_and_compact() {
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let mut i = 0u32;
    while insert(&mut n, &(i * 7).to_be_bytes(), &[i as u8; 20]) {
        i += 1;
    }
    assert!(i > 100, "only {i} entries fit");
    let before = n.free_space();
    for j in (0..i).step_by(2) {
        let (pos, found) = n.lower_bound(&(j * 7).to_be_bytes(), &test_dir()).unwrap();
        assert!(found);
        n.remove_at(pos);
    }
    assert!(n.free_space() > before);
    // Fragmented space is reused through compaction.
    let mut added = 0;
    while insert(&mut n, &(100_000 + added as u32).to_be_bytes(), &[1; 20]) {
        added += 1;
    }
    assert!(added >= (i / 2) as usize - 1);
    assert_eq!(n.used_space() + n.free_space(), 4096);
}

#[test]
fn raw_compare_and_heads_match_slice_order() {
    let samples: Vec<&[u8]> = vec![
        b"",
        b"\0",
        b"\0\0",
        b"a",
        b"a\0",
        b"ab",
        b"abcdefgh",
        b"abcdefg\xff",
        b"\xff",
        b"abcdefghijklmnopq",
        b"abcdefghijklmnopr",
        b"abcdefghij",
    ];
    let mut scratch = Scratch::new(4096);
    let raw = scratch.node().raw();
    for a in &samples {
        // Write `a` into the page, then compare it against every sample in place.
        scratch
            .node_mut()
            .bytes_mut(100, a.len())
            .copy_from_slice(a);
        for b in &samples {
            assert_eq!(
                raw.compare(100, a.len(), b).unwrap(),
                a.cmp(b),
                "{a:?} vs {b:?}"
            );
        }
        let mut padded = a.to_vec();
        padded.resize(4, 0);
        assert_eq!(
            head_of(a),
            u32::from_be_bytes(padded[..4].try_into().unwrap())
        );
    }
    assert!(raw.compare(4090, 8, b"").is_err());
}

#[test]
fn a_capability_of_another_page_is_refused() {
    let mut a = Scratch::new(4096);
    let mut b = Scratch::new(4096);
    let node = a.node();
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        NodeMut::new(node, &mut b);
    }));
    assert!(refused.is_err());
}

#[test]
fn large_keys_and_values_use_long_length_headers() {
    let mut p = Scratch::new(8192);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let k = vec![7u8; 300];
    let v = vec![9u8; 2000];
    assert!(insert(&mut n, &k, &v));
    let (pos, found) = n.lower_bound(&k, &test_dir()).unwrap();
    assert!(found);
    assert_eq!(value_of(&n, pos), &v[..]);
    assert_eq!(n.key(pos).unwrap(), k);
}

#[test]
fn leaf_copy_reads_and_walks_every_entry() {
    use std::ops::ControlFlow;
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, Some(b"pre"), Some(b"prf"), b"pre");
    // Suffixes of every length class (0 to 40 bytes) and values of 0 to 115 bytes.
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..24u8)
        .map(|i| {
            let mut k = b"pre".to_vec();
            k.extend(std::iter::repeat_n(b'a' + i, i as usize * 2));
            (k, vec![i; i as usize * 5])
        })
        .collect();
    for (k, v) in &entries {
        assert!(insert(&mut n, k, v));
    }
    let mut copy = LeafCopy::default();
    copy.load(&n.node()).unwrap();
    assert_eq!(copy.count(), entries.len());
    let mut key = Vec::new();
    for (i, (k, v)) in entries.iter().enumerate() {
        let place = copy.read(i, i % 2 == 1, &mut key).unwrap();
        assert_eq!((&key, copy.value(place)), (k, &v[..]));
    }
    for forward in [true, false] {
        let from = if forward { 0 } else { entries.len() - 1 };
        copy.read(from, false, &mut key).unwrap();
        let mut seen = vec![key.clone()];
        let mut visit = |k: &[u8], v: &[u8]| {
            assert_eq!(v.len(), (k.len() - 3) / 2 * 5);
            seen.push(k.to_vec());
            ControlFlow::<()>::Continue(())
        };
        let pool = crate::page::PagePool::new(4096, 4096, false);
        let dir = Directory::of(&pool);
        let blobs: (&Directory, &dyn Fn() -> Result<(), Restart>, bool) = (&dir, &|| Ok(()), false);
        let (last, flow, stale) = if forward {
            copy.walk::<true, ()>(from, entries.len(), &mut key, blobs, &mut visit)
        } else {
            copy.walk::<false, ()>(from, entries.len(), &mut key, blobs, &mut visit)
        };
        assert!(!stale);
        assert!(flow.is_continue());
        assert_eq!(last.map(|l| l.0), Some(entries.len() - 1 - from));
        if !forward {
            seen.reverse();
        }
        assert_eq!(
            seen,
            entries.iter().map(|e| e.0.clone()).collect::<Vec<_>>()
        );
        // A walk that breaks stays on the entry it broke at.
        copy.read(from, false, &mut key).unwrap();
        let (at, flow, _) =
            copy.walk::<true, ()>(0, entries.len(), &mut key, blobs, &mut |_, _| {
                ControlFlow::Break(())
            });
        assert!(flow.is_break() && at.map(|a| a.0) == Some(1) && key == entries[1].0);
    }
    assert_eq!(copy.node().upper_fence().unwrap(), Some(b"prf".to_vec()));
}

/// A range's per-entry step (`copy_short`) hands out exactly the entries whose key and value
/// fit inline in a `Bytes`, each as `read` reads it, for every prefix length around the
/// inline capacity and around each word of the key's three (its suffix is shifted into
/// words by the prefix length: `block_entry`), suffixes of every length up to past it (both
/// short length headers and the exact copy of a rest longer than its block), values around
/// the inline capacity, and entries at the very end of the page (read through the copy's
/// padding).
#[test]
fn leaf_copy_short_entries_match_read() {
    use std::ops::ControlFlow;
    const CAP: usize = crate::Bytes::INLINE_CAPACITY;
    assert!(LeafCopy::default().copy_short(0).is_none());
    for plen in [
        0usize, 1, 2, 4, 5, 7, 8, 9, 12, 15, 16, 17, 18, 21, 22, 23, 30,
    ] {
        for vlen in [0usize, 7, 15, 16, 21, 22, 23, 40] {
            let prefix = vec![b'p'; plen];
            let mut upper = prefix.clone();
            upper.push(0xff);
            let mut p = Scratch::new(16384);
            let mut n = p.node_mut();
            n.init(0, Some(&prefix), Some(&upper), &prefix);
            let mut entries = Vec::new();
            // Suffixes of every length 0..=26, and long ones around the short forms' end
            // (the walk's short step covers suffixes under 64 bytes).
            for slen in (0..=26usize).chain([40, 59, 60, 63, 64, 70]) {
                let mut k = prefix.clone();
                k.extend((0..slen).map(|j| (slen * 7 + j) as u8 | 1));
                let v: Vec<u8> = (0..vlen).map(|j| (j + slen) as u8).collect();
                if n.lower_bound(&k, &test_dir()).unwrap().1 {
                    continue;
                }
                assert!(
                    insert(&mut n, &k, &v),
                    "plen {plen} slen {slen} vlen {vlen}"
                );
                entries.push((k, v));
            }
            let mut copy = LeafCopy::default();
            copy.load(&n.node()).unwrap();
            let mut key = Vec::new();
            for i in 0..copy.count() {
                let place = copy.read(i, false, &mut key).unwrap();
                let value = copy.value(place).to_vec();
                let short = copy.copy_short(i);
                if key.len() <= CAP && value.len() <= CAP {
                    let (k, v) = short.unwrap_or_else(|| {
                        panic!("plen {plen} vlen {vlen} key {key:?}: no short entry")
                    });
                    assert_eq!((&k[..], &v[..]), (&key[..], &value[..]));
                } else {
                    assert!(short.is_none(), "plen {plen} vlen {vlen} key {key:?}");
                }
            }
            assert!(copy.copy_short(copy.count()).is_none());
            assert_eq!(copy.count(), entries.len());
            // The visitor's walk (its short step and the general one) sees the same.
            let mut sorted = entries.clone();
            sorted.sort();
            let pool = crate::page::PagePool::new(16384, 16384, false);
            let dir = Directory::of(&pool);
            let blobs: (&Directory, &dyn Fn() -> Result<(), Restart>, bool) =
                (&dir, &|| Ok(()), false);
            copy.read(0, false, &mut key).unwrap();
            let mut seen = vec![(key.clone(), sorted[0].1.clone())];
            let (_, flow, stale) =
                copy.walk::<true, ()>(0, copy.count(), &mut key, blobs, &mut |k, v| {
                    seen.push((k.to_vec(), v.to_vec()));
                    ControlFlow::Continue(())
                });
            assert!(flow.is_continue() && !stale);
            assert_eq!(seen, sorted, "plen {plen} vlen {vlen}");
        }
    }
}

/// A directory for searches in test nodes (they hold no long key, so it is never read).
pub(super) fn test_dir() -> Directory {
    static POOL: std::sync::OnceLock<std::sync::Arc<crate::page::PagePool>> =
        std::sync::OnceLock::new();
    Directory::of(POOL.get_or_init(|| crate::page::PagePool::new(4096, 4 * 4096, false)))
}

/// An edge node (a fence missing) keeps its key-derived prefix a byte short of its keys, so
/// in-order keys that carry over a byte keep it; a node between fences adopts whole keys.
#[test]
fn edge_nodes_keep_a_byte_of_prefix_slack_for_in_order_keys() {
    let key = |i: u64| (0x0102_0304_0506_0000 + i).to_be_bytes();
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    // The right edge after an append split: lower fence only, empty.
    n.init(0, Some(&key(0xf0)), None, b"");
    assert!(n.insert_entry(0, &key(0xf1), b"v"));
    // Common prefix with the fence is 7 bytes; one byte of slack.
    assert_eq!(n.prefix_len(), 6);
    for i in 0xf2..0x1f0u64 {
        let at = n.count();
        assert!(n.insert_entry(at, &key(i), b"v"));
        assert_eq!(n.prefix_len(), 6, "key {i:#x} kept the prefix");
    }
    // A key that lacks the prefix cuts it to the common part, again less one byte.
    let far = 0x0102_0399_0000_0000u64.to_be_bytes();
    let at = n.count();
    assert!(n.insert_entry(at, &far, b"v"));
    assert_eq!(n.prefix_len(), 2);
    assert_eq!(keys(&n).last().unwrap(), &far.to_vec());
    assert_eq!(keys(&n)[0], key(0xf1).to_vec());

    // Between two fences an empty node adopts the whole first key.
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, Some(&key(0)), Some(&key(0xffff)), b"");
    assert!(n.insert_entry(0, &key(5), b"v"));
    assert_eq!(n.prefix_len(), 8);
}

/// A node reports its layout from the layout bits of its flags, and a value it does not know
/// (a torn read, a foreign page) as `Restart`, which `check_invariants` reports.
#[test]
fn an_unknown_layout_is_refused() {
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    assert_eq!(n.layout(), Ok(Layout::Slotted));
    for bits in 1..16u16 {
        let flags = n.flags() & !LAYOUT_MASK | bits << LAYOUT_SHIFT;
        n.write_u16(OFF_FLAGS, flags);
        assert_eq!(n.layout(), Err(Restart), "layout bits {bits}");
    }
}

/// `key_vs_prefix` orders a key against the node's prefix as slices order (a key carrying
/// the prefix is `Equal`), for prefixes up to and past the 8 bytes compared as one word,
/// and keys shorter and longer than 8 bytes.
#[test]
fn key_vs_prefix_orders_as_slices_at_every_length() {
    let prefix: Vec<u8> = (1..=12).collect();
    for plen in 1..=12 {
        let mut p = Scratch::new(4096);
        let mut n = p.node_mut();
        n.init(0, None, None, &prefix[..plen]);
        assert_eq!(n.prefix_len(), plen);
        for klen in 0..=14 {
            for at in 0..klen.max(1) {
                for delta in [-1i16, 0, 1] {
                    let mut key: Vec<u8> = (1..=14).take(klen).collect();
                    if let Some(b) = key.get_mut(at) {
                        *b = (*b as i16 + delta) as u8;
                    }
                    let head = &key[..plen.min(key.len())];
                    let want = head.cmp(&prefix[..plen]);
                    let want = if want == std::cmp::Ordering::Equal && key.len() < plen {
                        std::cmp::Ordering::Less
                    } else {
                        want
                    };
                    assert_eq!(
                        n.key_vs_prefix(&key),
                        Ok(want),
                        "prefix {plen}, key {key:?}"
                    );
                }
            }
        }
    }
}

/// A scratch page gives its buffer back to the thread's spares when dropped, so the next
/// rebuild reuses it (a split neither allocates nor zeroes a page).
#[test]
fn a_scratch_page_is_reused() {
    let first = Scratch::new(4096).node().raw().addr();
    // An allocation of the same size in between would get a freed buffer's memory.
    let between = vec![0u64; 4096 / 8];
    let second = Scratch::new(4096).node().raw().addr();
    assert_eq!(first, second);
    assert_ne!(between.as_ptr() as *mut u8, first);
}

/// `sorts_after_last` (the append finger's look) is true exactly when `lower_bound` puts a
/// key after every entry and the key carries the node's prefix, on right-edge leaves (no
/// upper fence) with a prefix their keys decide and without one, for keys that carry the
/// prefix and keys that do not, of every length around the entries'; and it is false for an
/// empty node and for a node whose prefix its fences decide.
#[test]
fn sorts_after_last_agrees_with_lower_bound_on_the_right_edge() {
    let dir = test_dir();
    let mut probes: Vec<Vec<u8>> = Vec::new();
    for base in [
        0x0102_0304_0506_0700u64,
        0x0102_0304_0506_07ff,
        0x0102_0305_0000_0000,
    ] {
        for d in 0..3u64 {
            let k = (base + d).to_be_bytes();
            for len in [0, 1, 3, 4, 5, 7, 8] {
                probes.push(k[..len].to_vec());
            }
            let mut longer = k.to_vec();
            longer.extend_from_slice(b"tail");
            probes.push(longer);
        }
    }
    for (lower, first, n_keys) in [
        (None, 0x0102_0304_0506_0700u64, 40u64),
        (Some(0x0102_0304_0506_06ffu64), 0x0102_0304_0506_0700, 200),
        (Some(0x0000_0000_0000_0001), 0x0102_0304_0506_0700, 1),
    ] {
        let mut p = Scratch::new(4096);
        let mut n = p.node_mut();
        let fence = lower.map(|l: u64| l.to_be_bytes());
        n.init(0, fence.as_ref().map(|f| &f[..]), None, b"");
        assert_eq!(n.sorts_after_last(b"\xff", &dir), Ok(false), "empty node");
        for i in 0..n_keys {
            let at = n.count();
            assert!(n.insert_entry(at, &(first + i).to_be_bytes(), b"v"));
        }
        for key in &probes {
            if lower.is_some_and(|l| key.as_slice() <= &l.to_be_bytes()[..]) {
                continue; // Outside the node's fences.
            }
            let (pos, found) = n.lower_bound(key, &dir).unwrap();
            let prefixed = n.key_vs_prefix(key) == Ok(std::cmp::Ordering::Equal);
            let after = pos == n.count() && !found && prefixed;
            assert_eq!(
                n.sorts_after_last(key, &dir),
                Ok(after),
                "prefix {} bytes, key {key:02x?}",
                n.prefix_len()
            );
        }
    }
    // Between fences the prefix is the fences' (guaranteed): the look declines.
    let k = |i: u64| (0x0102_0304_0506_0000 + i).to_be_bytes();
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, Some(&k(0)), Some(&k(0xffff)), &k(0)[..6]);
    assert!(n.prefix_is_guaranteed());
    assert!(insert(&mut n, &k(5), b"v"));
    assert_eq!(n.prefix_len(), 6);
    assert_eq!(n.lower_bound(&k(9), &dir), Ok((1, false)));
    assert_eq!(n.sorts_after_last(&k(9), &dir), Ok(false));
}

#[test]
fn common_prefix_counts_shared_bytes_at_every_length() {
    // Word-at-a-time against byte-at-a-time: every length to 40, every place of the first
    // difference, and one string a prefix of the other.
    let bytewise = |a: &[u8], b: &[u8]| a.iter().zip(b).take_while(|(x, y)| x == y).count();
    for n in 0..40usize {
        let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
        for cut in 0..=n {
            let mut b = a.clone();
            if cut < n {
                b[cut] ^= 0x80;
            }
            assert_eq!(
                common_prefix(&a, &b),
                cut,
                "length {n}, difference at {cut}"
            );
            assert_eq!(common_prefix(&a, &b), bytewise(&a, &b));
            assert_eq!(common_prefix(&a[..cut], &a), cut);
            assert_eq!(common_prefix(&a, &a[..cut]), cut);
        }
    }
}

/// A range's step with a memo kept across the entries of one copy (`copy_short_memo`, as a
/// range's window keeps it) hands out what `read` reads: runs of entries of one shape (the
/// memo's hits) broken by entries whose length header differs in one byte, in both short
/// forms, and runs of keys whose rest is longer than the block, up to the very end of the
/// page.
#[test]
fn leaf_copy_memo_steps_match_read() {
    const CAP: usize = crate::Bytes::INLINE_CAPACITY;
    // (suffix length, value length): one-byte headers, then two-byte headers that differ
    // from their neighbours in the value's length only.
    let shapes = [
        (3usize, 8usize),
        (3, 9),
        (5, 9),
        (9, 16),
        (9, 17),
        (10, 17),
        (2, 30),
        // Rests longer than the block (keys of 21 and 22 bytes, no prefix): decoded every
        // time, never kept in the memo.
        (21, 1),
        (21, 1),
        (22, 0),
    ];
    let mut p = Scratch::new(4096);
    let mut n = p.node_mut();
    n.init(0, None, None, b"");
    let mut i = 0u32;
    'fill: for round in 0.. {
        let (slen, vlen) = shapes[round % shapes.len()];
        for _ in 0..1 + round % 4 {
            let mut k = i.to_be_bytes().to_vec();
            k.resize(slen.max(4), 0x5a);
            let v = vec![i as u8; vlen];
            if !insert(&mut n, &k, &v) {
                break 'fill;
            }
            i += 1;
        }
    }
    let mut copy = LeafCopy::default();
    copy.load(&n.node()).unwrap();
    assert!(copy.count() > 100);
    let mut key = Vec::new();
    for pass in 0..2 {
        let mut memo = Memo::default();
        for i in 0..copy.count() {
            let place = copy.read(i, false, &mut key).unwrap();
            let value = copy.value(place).to_vec();
            let short = copy.copy_short_memo(i, &mut memo);
            if key.len() <= CAP && value.len() <= CAP {
                let (k, v) = short.unwrap_or_else(|| panic!("pass {pass} entry {i}"));
                assert_eq!(
                    (&k[..], &v[..]),
                    (&key[..], &value[..]),
                    "pass {pass} entry {i}"
                );
            } else {
                assert!(short.is_none(), "pass {pass} entry {i}");
            }
        }
        assert!(copy.copy_short_memo(copy.count(), &mut memo).is_none());
    }
}
