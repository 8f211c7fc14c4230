//! `tpcc-index`: the index accesses of TPC-C's NewOrder and Payment transactions, without the
//! rest of a database. It is scaled by warehouses; each thread works for the home warehouse
//! `thread % warehouses`, so more threads than warehouses means several threads update the
//! same warehouse and district rows (the contention `contention-split-and-xmerge.md` §5.1
//! measures).
//!
//! All tables live in one index, keys prefixed by a table tag and made of big-endian fields:
//!
//! | table | key | loaded rows |
//! |---|---|---|
//! | warehouse | tag, w | W |
//! | district | tag, w, d | 10 W |
//! | customer | tag, w, d, c | `CUSTOMERS` per district |
//! | stock | tag, w, i | `items` per warehouse |
//! | item | tag, i | `items` |
//! | order, new-order | tag, w, d, o | inserted |
//! | order-line | tag, w, d, o, n | inserted |
//! | history | tag, thread, sequence | inserted |
//!
//! NewOrder: read warehouse and customer, update the district (its next order id, taken from
//! a per-district counter, so orders are inserted at one sequential point per district),
//! insert order and new-order, then for 5 to 15 lines read the item, update the stock (1%
//! from a remote warehouse) and insert the order line. Payment: update warehouse, district
//! and customer, insert a history row. The two alternate at random, half and half. A step
//! is one transaction; its operation count is the number of index operations it made.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::FastRng;
use crate::keys::fill_value;

const DISTRICTS: u64 = 10;
const CUSTOMERS: u64 = 300;
/// Most items per warehouse (TPC-C's 100,000).
pub const MAX_ITEMS: u64 = 100_000;

/// The table tags, the first byte of every key.
pub const WAREHOUSE: u8 = 1;
pub const DISTRICT: u8 = 2;
pub const CUSTOMER: u8 = 3;
pub const STOCK: u8 = 4;
pub const ITEM: u8 = 5;
pub const ORDER: u8 = 6;
pub const NEW_ORDER: u8 = 7;
pub const ORDER_LINE: u8 = 8;
pub const HISTORY: u8 = 9;
/// Every table tag, ascending.
pub const TAGS: [u8; 9] = [
    WAREHOUSE, DISTRICT, CUSTOMER, STOCK, ITEM, ORDER, NEW_ORDER, ORDER_LINE, HISTORY,
];

/// A composite key of up to 24 bytes on the stack.
struct Key {
    bytes: [u8; 24],
    len: usize,
}

impl Key {
    fn new(tag: u8) -> Self {
        let mut k = Key {
            bytes: [0; 24],
            len: 1,
        };
        k.bytes[0] = tag;
        k
    }
    fn u16(mut self, x: u64) -> Self {
        self.bytes[self.len..self.len + 2].copy_from_slice(&(x as u16).to_be_bytes());
        self.len += 2;
        self
    }
    fn u32(mut self, x: u64) -> Self {
        self.bytes[self.len..self.len + 4].copy_from_slice(&(x as u32).to_be_bytes());
        self.len += 4;
        self
    }
    fn u64(mut self, x: u64) -> Self {
        self.bytes[self.len..self.len + 8].copy_from_slice(&x.to_be_bytes());
        self.len += 8;
        self
    }
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The tpcc-index workload.
pub struct Tpcc {
    params: Params,
    warehouses: u64,
    items: u64,
    next_order: Vec<AtomicU64>,
}

impl Tpcc {
    /// `warehouses` warehouses with `min(params.records, MAX_ITEMS)` items.
    pub fn new(params: Params, warehouses: u64) -> Self {
        let warehouses = warehouses.max(1);
        Tpcc {
            items: params.records.clamp(1, MAX_ITEMS),
            next_order: (0..warehouses * DISTRICTS)
                .map(|_| AtomicU64::new(1))
                .collect(),
            warehouses,
            params,
        }
    }
}

impl Tpcc {
    /// The number of warehouses.
    pub fn warehouses(&self) -> u64 {
        self.warehouses
    }

    /// The number of items (and of stock rows per warehouse).
    pub fn items(&self) -> u64 {
        self.items
    }
}

impl Workload for Tpcc {
    fn name(&self) -> &'static str {
        "tpcc-index"
    }

    fn config(&self, threads: usize) -> String {
        format!(
            "{} warehouses, {} items, {} threads per warehouse, {}-byte values",
            self.warehouses,
            self.items,
            (threads as u64).div_ceil(self.warehouses),
            self.params.value_size
        )
    }

    fn shape(&self) -> Shape {
        Shape {
            int_keys: false,
            value_size: self.params.value_size,
            max_key_len: 24,
            scans: false,
        }
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        for c in &self.next_order {
            c.store(1, Relaxed);
        }
        let vs = self.params.value_size;
        let mut value = vec![0u8; vs];
        let mut n = 0;
        for i in 1..=self.items {
            fill_value(&mut value, i, 0);
            index.insert(Key::new(ITEM).u32(i).as_bytes(), &value);
            n += 1;
        }
        let warehouses: Vec<u64> = (1..=self.warehouses).collect();
        let chunks = threads.clamp(1, 16);
        let loaded = AtomicU64::new(0);
        std::thread::scope(|s| {
            for part in warehouses.chunks(warehouses.len().div_ceil(chunks)) {
                let loaded = &loaded;
                s.spawn(move || {
                    let mut value = vec![0u8; vs];
                    let mut n = 0;
                    for &w in part {
                        index.insert(Key::new(WAREHOUSE).u16(w).as_bytes(), &value);
                        for d in 1..=DISTRICTS {
                            index.insert(Key::new(DISTRICT).u16(w).u16(d).as_bytes(), &value);
                            for c in 1..=CUSTOMERS {
                                fill_value(&mut value, c, w);
                                let k = Key::new(CUSTOMER).u16(w).u16(d).u32(c);
                                index.insert(k.as_bytes(), &value);
                            }
                            n += 1 + CUSTOMERS;
                        }
                        for i in 1..=self.items {
                            fill_value(&mut value, i, w);
                            index.insert(Key::new(STOCK).u16(w).u32(i).as_bytes(), &value);
                        }
                        n += 1 + self.items;
                    }
                    loaded.fetch_add(n, Relaxed);
                });
            }
        });
        n + loaded.load(Relaxed)
    }

    fn worker(&self, thread: usize, _threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        Box::new(TpccWorker {
            workload: self,
            home: thread as u64 % self.warehouses + 1,
            thread: thread as u64,
            rng: FastRng::new(seed ^ (thread as u64).wrapping_mul(0x5851_F42D_4C95_7F2D)),
            value: vec![0u8; self.params.value_size],
            out: Vec::new(),
            history: 0,
        })
    }

    fn reuse_index(&self) -> bool {
        false
    }
}

struct TpccWorker<'a> {
    workload: &'a Tpcc,
    home: u64,
    thread: u64,
    rng: FastRng,
    value: Vec<u8>,
    out: Vec<u8>,
    history: u64,
}

impl TpccWorker<'_> {
    fn write(&mut self, index: &dyn Index, key: &Key, update: bool) {
        fill_value(&mut self.value, self.rng.next_u64(), self.history);
        if update {
            index.update(key.as_bytes(), &self.value);
        } else {
            index.insert(key.as_bytes(), &self.value);
        }
    }

    fn new_order(&mut self, index: &dyn Index) -> u32 {
        let w = self.workload;
        let (home, d) = (self.home, 1 + self.rng.below(DISTRICTS));
        let c = 1 + self.rng.below(CUSTOMERS);
        index.get(Key::new(WAREHOUSE).u16(home).as_bytes(), &mut self.out);
        index.get(
            Key::new(CUSTOMER).u16(home).u16(d).u32(c).as_bytes(),
            &mut self.out,
        );
        let o = w.next_order[((home - 1) * DISTRICTS + d - 1) as usize].fetch_add(1, Relaxed);
        self.write(index, &Key::new(DISTRICT).u16(home).u16(d), true);
        self.write(index, &Key::new(ORDER).u16(home).u16(d).u32(o), false);
        self.write(index, &Key::new(NEW_ORDER).u16(home).u16(d).u32(o), false);
        let lines = 5 + self.rng.below(11);
        for n in 1..=lines {
            let i = 1 + self.rng.below(w.items);
            let supply = if w.warehouses > 1 && self.rng.below(100) == 0 {
                1 + self.rng.below(w.warehouses)
            } else {
                home
            };
            index.get(Key::new(ITEM).u32(i).as_bytes(), &mut self.out);
            self.write(index, &Key::new(STOCK).u16(supply).u32(i), true);
            let line = Key::new(ORDER_LINE).u16(home).u16(d).u32(o);
            self.write(index, &line.u16(n), false);
        }
        (5 + 3 * lines) as u32
    }

    fn payment(&mut self, index: &dyn Index) -> u32 {
        let (home, d) = (self.home, 1 + self.rng.below(DISTRICTS));
        let c = 1 + self.rng.below(CUSTOMERS);
        self.write(index, &Key::new(WAREHOUSE).u16(home), true);
        self.write(index, &Key::new(DISTRICT).u16(home).u16(d), true);
        self.write(index, &Key::new(CUSTOMER).u16(home).u16(d).u32(c), true);
        self.history += 1;
        let h = Key::new(HISTORY).u16(self.thread).u64(self.history);
        self.write(index, &h, false);
        4
    }
}

impl Worker for TpccWorker<'_> {
    fn step(&mut self, index: &dyn Index) -> u32 {
        if self.rng.below(2) == 0 {
            self.new_order(index)
        } else {
            self.payment(index)
        }
    }
}
