//! The operation mixes of `contree-bench tpc`: uniform YCSB-A on hashed 8-byte keys, or the
//! index accesses of `tpcc-index`'s transactions (the mix the PLP paper partitions by
//! warehouse). Each mix loads the shared `Tree` and the `Executor`, runs a shared-tree
//! client, and hands executor clients their batches of [`Op`]s.
//!
//! tpcc-index's transactions are written against the bench's [`Index`] trait; for the
//! executor a [`Recorder`] takes their operations down as `Op`s instead of carrying them out
//! (none of them depends on what an earlier one read), and a batch is made of whole
//! transactions, at least the batch size's worth of operations.

use crate::adapters::{contree::VARIANTS, Index};
use crate::generators::rng::{fnv1a64, FastRng};
use crate::workloads::tpcc::{self, Tpcc};
use crate::workloads::{Params, Workload};
use contree::{Client, Op, Tree};
use std::sync::Mutex;

/// The value every YCSB-A write stores.
const VALUE: [u8; 8] = [7; 8];

/// The key of YCSB-A record `i`.
pub(crate) fn key(i: u64) -> [u8; 8] {
    fnv1a64(i).to_be_bytes()
}

/// A mix of operations (see the module doc).
pub(crate) enum Mix {
    /// Uniform YCSB-A: 50% reads, 50% updates of `records` loaded keys.
    YcsbA { records: u64 },
    /// tpcc-index's NewOrder and Payment transactions; `index` is the shared tree's adapter
    /// (contree's default configuration, as in `contree-bench tpcc-index`).
    Tpcc { tpcc: Tpcc, index: Box<dyn Index> },
}

impl Mix {
    /// YCSB-A over `records` keys.
    pub fn ycsb_a(records: u64) -> Mix {
        Mix::YcsbA { records }
    }

    /// tpcc-index with `warehouses` warehouses and `min(items, 100,000)` items.
    pub fn tpcc(warehouses: u64, items: u64) -> Result<Mix, String> {
        let tpcc = Tpcc::new(
            Params {
                records: items,
                ..Params::default()
            },
            warehouses,
        );
        let index = (VARIANTS[0].2)(&tpcc.shape())?;
        Ok(Mix::Tpcc { tpcc, index })
    }

    /// One line on what the rows run.
    pub fn describe(&self, threads: usize) -> String {
        match self {
            Mix::YcsbA { records } => {
                format!("uniform YCSB-A (50% get, 50% update) on {records} records")
            }
            Mix::Tpcc { tpcc, .. } => format!("tpcc-index, {}", tpcc.config(threads)),
        }
    }

    /// The name of the row whose batches are as small as the mix makes them: one
    /// operation, or one transaction.
    pub fn unbatched_row(&self) -> &'static str {
        match self {
            Mix::YcsbA { .. } => "tpc batch 1",
            Mix::Tpcc { .. } => "tpc 1 txn",
        }
    }

    /// The executor's partition boundaries for `workers` workers: `per_worker` uniform
    /// ranges each for YCSB-A's hashed keys; for tpcc-index, every table split into
    /// `workers` ranges of warehouses (of items for the item table, of client threads for
    /// history rows), range `k` of every table going to the same worker, so that a
    /// client's home warehouse lives on one worker (PLP's partitioning of TPC-C).
    pub fn boundaries(&self, workers: usize, per_worker: usize) -> Vec<Vec<u8>> {
        match self {
            Mix::YcsbA { .. } => {
                let partitions = (workers * per_worker) as u64;
                (1..partitions)
                    .map(|p| (u64::MAX / partitions * p).to_be_bytes().to_vec())
                    .collect()
            }
            Mix::Tpcc { tpcc, .. } => {
                let (warehouses, items) = (tpcc.warehouses(), tpcc.items());
                let w = workers as u64;
                let mut out = Vec::new();
                for tag in tpcc::TAGS {
                    for k in 0..w {
                        let mut b = vec![tag];
                        if k > 0 {
                            match tag {
                                tpcc::ITEM => {
                                    b.extend_from_slice(&((1 + k * items / w) as u32).to_be_bytes())
                                }
                                tpcc::HISTORY => b.extend_from_slice(
                                    &((k * warehouses / w) as u16).to_be_bytes(),
                                ),
                                _ => b.extend_from_slice(
                                    &((1 + k * warehouses / w) as u16).to_be_bytes(),
                                ),
                            }
                        }
                        out.push(b);
                    }
                }
                // Fewer warehouses than workers repeat split points: keep one of each.
                out.dedup();
                out
            }
        }
    }

    /// Loads the shared tree (YCSB-A: `tree`; tpcc-index: its own adapter's tree) and the
    /// executor, through `loader`, with the same records.
    pub fn load(&self, tree: &Tree, loader: &mut Client) -> Result<(), String> {
        // YCSB-A's records are made as they are sent (not all held at once).
        let ops: Box<dyn Iterator<Item = Op>> = match self {
            Mix::YcsbA { records } => {
                for i in 0..*records {
                    tree.insert(&key(i), &VALUE).map_err(|e| e.to_string())?;
                }
                Box::new((0..*records).map(|i| Op::Insert(key(i).into(), VALUE.into())))
            }
            Mix::Tpcc { tpcc, index } => {
                tpcc.setup(&**index, 2);
                let recorder = Recorder::default();
                tpcc.setup(&recorder, 1);
                Box::new(recorder.take().into_iter())
            }
        };
        let mut ops = ops.peekable();
        while ops.peek().is_some() {
            for r in loader.execute(ops.by_ref().take(1024).collect()) {
                r.map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// A shared-tree client for thread `thread` of `threads`: each call runs at least 64
    /// operations and returns how many it ran.
    pub fn tree_client<'a>(
        &'a self,
        tree: &'a Tree,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Box<dyn FnMut() -> u64 + 'a> {
        match self {
            Mix::YcsbA { records } => {
                let (records, mut rng) = (*records, FastRng::new(seed));
                Box::new(move || {
                    for _ in 0..64 {
                        let k = key(rng.below(records));
                        if rng.below(2) == 0 {
                            std::hint::black_box(tree.get(&k));
                        } else {
                            tree.insert(&k, &VALUE).expect("update");
                        }
                    }
                    64
                })
            }
            Mix::Tpcc { tpcc, index } => {
                let mut worker = tpcc.worker(thread, threads, seed);
                Box::new(move || {
                    let mut n = 0;
                    while n < 64 {
                        n += u64::from(worker.step(&**index));
                    }
                    n
                })
            }
        }
    }

    /// The batches of executor client `thread` of `threads`: each call returns the next
    /// one, of `len` operations (tpcc-index: whole transactions, at least `len`).
    pub fn batches<'a>(
        &'a self,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Box<dyn FnMut(usize) -> Vec<Op> + 'a> {
        match self {
            Mix::YcsbA { records } => {
                let (records, mut rng) = (*records, FastRng::new(seed));
                Box::new(move |len| {
                    ycsb_a_batch(&mut rng, len, &VALUE, |rng| key(rng.below(records)))
                })
            }
            Mix::Tpcc { tpcc, .. } => {
                let mut worker = tpcc.worker(thread, threads, seed);
                let recorder = Recorder::default();
                Box::new(move |len| {
                    while recorder.len() < len {
                        worker.step(&recorder);
                    }
                    recorder.take()
                })
            }
        }
    }
}

/// A YCSB-A batch of `len` operations: each reads or updates (even odds) the key `key`
/// draws.
pub(crate) fn ycsb_a_batch(
    rng: &mut FastRng,
    len: usize,
    value: &[u8],
    mut key: impl FnMut(&mut FastRng) -> [u8; 8],
) -> Vec<Op> {
    (0..len)
        .map(|_| {
            let k = key(rng);
            if rng.below(2) == 0 {
                Op::Get(k.into())
            } else {
                Op::Insert(k.into(), value.into())
            }
        })
        .collect()
}

/// An [`Index`] that takes operations down as executor [`Op`]s instead of carrying them
/// out: reads answer "absent", updates become inserts (they overwrite loaded keys). Behind
/// a mutex only because `Index` is `Sync`; one client thread uses each.
#[derive(Default)]
pub(crate) struct Recorder {
    ops: Mutex<Vec<Op>>,
}

impl Recorder {
    fn push(&self, op: Op) {
        self.ops.lock().expect("recorder").push(op);
    }

    fn len(&self) -> usize {
        self.ops.lock().expect("recorder").len()
    }

    /// The operations taken down so far, in order; the recorder starts empty again.
    fn take(&self) -> Vec<Op> {
        std::mem::take(&mut *self.ops.lock().expect("recorder"))
    }
}

impl Index for Recorder {
    fn insert(&self, key: &[u8], value: &[u8]) {
        self.push(Op::Insert(key.into(), value.into()));
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> bool {
        self.push(Op::Get(key.into()));
        out.clear();
        false
    }

    fn update(&self, key: &[u8], value: &[u8]) -> bool {
        self.push(Op::Insert(key.into(), value.into()));
        true
    }

    fn remove(&self, key: &[u8]) -> bool {
        self.push(Op::Remove(key.into()));
        true
    }

    fn scan(&self, _start: &[u8], _count: usize, _visit: &mut dyn FnMut(&[u8], &[u8])) -> usize {
        unreachable!("no mix of `contree-bench tpc` scans")
    }

    fn repr(&self) -> &'static str {
        "bytes"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpcc_boundaries_keep_a_warehouse_on_one_worker() {
        let mix = Mix::tpcc(4, 1000).unwrap();
        let b = mix.boundaries(2, 4);
        assert!(b.windows(2).all(|w| w[0] < w[1]), "ascending, distinct");
        // 9 tables, 2 ranges each.
        assert_eq!(b.len(), 18);
        // Partition i (keys from boundary i - 1) goes to worker i % 2: warehouses 1-2 of
        // every warehouse table on one worker, 3-4 on the other.
        let worker = |key: &[u8]| (b.iter().take_while(|x| x.as_slice() <= key).count()) % 2;
        for tag in [tpcc::WAREHOUSE, tpcc::STOCK, tpcc::ORDER_LINE] {
            let at = |w: u16| {
                let mut k = vec![tag];
                k.extend_from_slice(&w.to_be_bytes());
                k.extend_from_slice(&[0, 1]);
                worker(&k)
            };
            assert_eq!(at(1), at(2));
            assert_eq!(at(3), at(4));
            assert_ne!(at(1), at(3));
            assert_eq!(at(1), worker(&[tpcc::WAREHOUSE, 0, 1]));
        }
        // History rows of client thread 0 (home warehouse 1) live beside warehouse 1.
        assert_eq!(
            worker(&[tpcc::HISTORY, 0, 0, 0]),
            worker(&[tpcc::WAREHOUSE, 0, 1])
        );
    }

    #[test]
    fn a_recorded_transaction_is_a_batch_of_ops() {
        let mix = Mix::tpcc(2, 100).unwrap();
        let mut next = mix.batches(0, 2, 1);
        let batch = next(64);
        assert!(batch.len() >= 64);
        assert!(batch.iter().any(|op| matches!(op, Op::Get(_))));
        assert!(batch.iter().any(|op| matches!(op, Op::Insert(..))));
    }
}
