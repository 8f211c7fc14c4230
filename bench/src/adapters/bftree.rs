//! Adapter for `bf_tree::BfTree`, Microsoft Research's Bf-Tree (VLDB 2024): a B-tree whose
//! leaves are 4 KiB base pages with a circular buffer of variable-size "mini-pages" in front
//! of them that caches hot records and absorbs writes. It is a bytes-to-bytes tree, so it
//! stores exactly the bytes it is given (representation "bytes" in every run).
//!
//! Configuration: `Config::default()` (in-memory base pages, `StorageBackend::Memory`, not
//! cache-only, a 32 MiB circular buffer, 4 KiB leaf pages, read promotion rate 30), with two
//! changes that a run needs and that are made only when it needs them:
//! - `cb_max_key_len` is raised from its default of 16 bytes to the run's longest key
//!   ([`Shape::max_key_len`]) when that is longer (YCSB `str` keys are up to 24 bytes,
//!   `long` keys up to 200);
//! - when a longer key limit makes the default maximum record size (1,952 bytes) fail
//!   `Config::validate` (a mini-page must still hold a largest record beside the fences),
//!   `cb_max_record_size` is lowered in 64-byte steps until it validates, but never below
//!   the run's key plus value size. For 200-byte keys this gives 1,632 bytes.
//!
//! Bytes per entry include the circular buffer: 32 MiB requested from the allocator when the
//! tree is built, whatever the number of entries (33.6 bytes per entry at 10^6 entries).
//!
//! Operations:
//! - `get` is `read` into the caller's buffer, sized to the run's value size;
//! - `update` is `read` (is the key there?) then `insert`: Bf-Tree has no update-if-present,
//!   so a remove racing between the two would be undone (the workloads never remove);
//! - `remove` is `read` then `delete` (`delete` does not say whether the key was there);
//! - `scan` is `scan_with_count(start, count, KeyAndValue)`, copying each record into a
//!   stack buffer. Bf-Tree rejects an empty start key; an empty start is scanned from
//!   `"\0"`, the smallest key it can hold (it holds no empty key).
//!
//! Bf-Tree refuses empty keys and empty values; the workloads make neither.

use bf_tree::{BfTree, Config, LeafInsertResult, LeafReadResult, ScanReturnField};

use super::{Index, Shape};

/// Bf-Tree's default maximum key length (`cb_max_key_len`).
const DEFAULT_MAX_KEY_LEN: usize = 16;

/// The configuration for `shape`: the default, with the key limit raised (and the record
/// limit lowered until it validates) where the shape's keys need it.
pub fn config_for(shape: &Shape) -> Result<Config, String> {
    let mut config = Config::default();
    if shape.max_key_len > DEFAULT_MAX_KEY_LEN {
        config.cb_max_key_len(shape.max_key_len);
    }
    let needed = shape.max_key_len + shape.value_size;
    let mut record = config.get_cb_max_record_size();
    loop {
        match config.validate() {
            Ok(()) => break,
            Err(_) if record >= needed + 64 => {
                record -= 64;
                config.cb_max_record_size(record);
            }
            Err(e) => return Err(format!("no valid Bf-Tree configuration: {e:?}")),
        }
    }
    if needed > config.get_cb_max_record_size() {
        return Err(format!(
            "Bf-Tree records (key + value) are limited to {} bytes here; this run needs {needed}",
            config.get_cb_max_record_size()
        ));
    }
    Ok(config)
}

/// Builds the adapter for `shape`.
pub fn build(shape: &Shape) -> Result<Box<dyn Index>, String> {
    let config = config_for(shape)?;
    let tree = BfTree::with_config(config, None).map_err(|e| format!("{e:?}"))?;
    Ok(Box::new(BfTreeIndex {
        tree,
        value_size: shape.value_size,
        record_max: shape.max_key_len + shape.value_size,
    }))
}

/// A `BfTree` behind the adapter trait.
pub struct BfTreeIndex {
    tree: BfTree,
    /// Every value of the run has this size; reads copy into a buffer of it.
    value_size: usize,
    /// Longest key plus value of the run: the scan buffer's size.
    record_max: usize,
}

impl BfTreeIndex {
    fn present(&self, key: &[u8]) -> bool {
        let mut buf = [0u8; 64];
        let mut heap;
        let out: &mut [u8] = if self.value_size <= buf.len() {
            &mut buf[..]
        } else {
            heap = vec![0u8; self.value_size];
            &mut heap[..]
        };
        matches!(self.tree.read(key, out), LeafReadResult::Found(_))
    }
}

impl Index for BfTreeIndex {
    fn insert(&self, key: &[u8], value: &[u8]) {
        assert!(
            value.len() <= self.value_size,
            "bf-tree adapter built for {}-byte values got {}",
            self.value_size,
            value.len()
        );
        if let LeafInsertResult::InvalidKV(why) = self.tree.insert(key, value) {
            panic!("bf-tree insert failed: {why}");
        }
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        out.clear();
        out.resize(self.value_size, 0);
        match self.tree.read(key, out) {
            LeafReadResult::Found(n) => {
                out.truncate(n as usize);
                true
            }
            _ => {
                out.clear();
                false
            }
        }
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        if !self.present(key) {
            return false;
        }
        self.insert(key, value);
        true
    }

    fn remove(&self, key: &[u8]) -> bool {
        if !self.present(key) {
            return false;
        }
        self.tree.delete(key);
        true
    }

    fn scan(&self, start: &[u8], count: usize, visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        if count == 0 {
            return 0;
        }
        let start = if start.is_empty() { &[0u8][..] } else { start };
        let mut stack = [0u8; 512];
        let mut heap;
        let buf: &mut [u8] = if self.record_max <= stack.len() {
            &mut stack[..]
        } else {
            heap = vec![0u8; self.record_max];
            &mut heap[..]
        };
        let mut iter = match self
            .tree
            .scan_with_count(start, count, ScanReturnField::KeyAndValue)
        {
            Ok(iter) => iter,
            Err(e) => panic!("bf-tree scan failed: {e:?}"),
        };
        let mut n = 0;
        while let Some((k, v)) = iter.next(buf) {
            visit(&buf[..k], &buf[k..k + v]);
            n += 1;
        }
        n
    }

    fn repr(&self) -> &'static str {
        "bytes"
    }
}
