//! `scan`: every operation is one ordered scan of exactly `length` entries (100 by default)
//! starting at a uniformly chosen existing key, over `records` preloaded items. Nothing is
//! written, so the loaded index serves every thread count. An operation is one scan (Mops/s
//! counts scans, not entries).
//!
//! The first key is an existing one, so a scan starts inside the data; one that starts near
//! the largest key visits fewer than `length` entries (with `int` keys the ids are dense and
//! keys sort like ids, so that is the last `length` ids; with `str` and `long` keys order is
//! unrelated to the id).
//!
//! The visitor reads every entry it is handed: its lengths and the first 8 bytes of its key
//! and value (`first_word`), as a caller decoding integer keys and values would.

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::FastRng;
use crate::keys::KeyBuf;

/// The scan workload.
pub struct Scan {
    params: Params,
    length: usize,
}

impl Scan {
    /// Scans of `length` entries over `params.records` loaded items.
    pub fn new(params: Params, length: usize) -> Self {
        Scan {
            params,
            length: length.max(1),
        }
    }
}

impl Workload for Scan {
    fn name(&self) -> &'static str {
        "scan"
    }

    fn config(&self, _threads: usize) -> String {
        format!(
            "{} entries from a uniform existing key, {} keys, {}-byte values, {} records",
            self.length,
            self.params.key_kind.name(),
            self.params.value_size,
            self.params.records
        )
    }

    fn shape(&self) -> Shape {
        Shape {
            scans: true,
            ..self.params.shape(self.params.key_kind)
        }
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.params.load(index, self.params.key_kind, threads)
    }

    fn worker(&self, thread: usize, _threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        Box::new(ScanWorker {
            workload: self,
            rng: FastRng::new(seed ^ (thread as u64).wrapping_mul(0x1000_0000_01B3)),
        })
    }
}

struct ScanWorker<'a> {
    workload: &'a Scan,
    rng: FastRng,
}

impl Worker for ScanWorker<'_> {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        let w = self.workload;
        let id = self.rng.below(w.params.records.max(1));
        let mut sum = 0usize;
        index.scan(
            KeyBuf::new(w.params.key_kind, id).as_bytes(),
            w.length,
            &mut |k, v| {
                sum = sum
                    .wrapping_add(k.len() + v.len())
                    .wrapping_add(first_word(k) ^ first_word(v));
            },
        );
        std::hint::black_box(sum);
        1
    }
}

/// The first 8 bytes of `b` as a little-endian word (its length if shorter): what a
/// visitor that decodes an integer key or value reads. Every peer's scan hands its
/// visitor bytes, and reading them is part of what a scan costs the caller: a visitor
/// that looked at lengths only hid a store-forwarding stall that a visitor reading its
/// keys paid on every entry (`bench/results/scan-key-word-s62.txt`).
#[inline]
fn first_word(b: &[u8]) -> usize {
    b.get(..8)
        .and_then(|w| w.try_into().ok())
        .map_or(b.len(), |w| u64::from_le_bytes(w) as usize)
}
