//! The YCSB core workloads A to F, and `read-heavy` (75% reads, 25% updates, as in
//! `numa-btree.md`), over `records` preloaded items.
//!
//! | workload | mix | default distribution |
//! |---|---|---|
//! | ycsb-a | 50% read, 50% update | zipfian |
//! | ycsb-b | 95% read, 5% update | zipfian |
//! | ycsb-c | 100% read | zipfian |
//! | ycsb-d | 95% read, 5% insert | latest |
//! | ycsb-e | 95% scan (1 to `scan_max` entries), 5% insert | zipfian |
//! | ycsb-f | 50% read, 50% read-modify-write | zipfian |
//! | read-heavy | 75% read, 25% update | zipfian |
//!
//! Inserted items take the next id from a shared counter (as YCSB's insert sequence does);
//! reads draw from `[0, next id)`, so a read may rarely target an insert still in flight.
//! A read-modify-write counts as two operations.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::{Params, Worker, Workload};
use crate::adapters::{Index, Shape};
use crate::generators::{Distribution, FastRng, KeyChooser};
use crate::keys::{fill_value, KeyBuf};

/// One kind of YCSB request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Point lookup.
    Read,
    /// Overwrite of an existing value.
    Update,
    /// Insert of a new item.
    Insert,
    /// Short range scan.
    Scan,
    /// Read, then update, of the same item.
    ReadModifyWrite,
}

/// Operation proportions; they sum to 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Share of reads.
    pub read: f64,
    /// Share of updates.
    pub update: f64,
    /// Share of inserts.
    pub insert: f64,
    /// Share of scans.
    pub scan: f64,
    /// Share of read-modify-writes.
    pub rmw: f64,
}

impl Mix {
    const fn new(read: f64, update: f64, insert: f64, scan: f64, rmw: f64) -> Self {
        Mix {
            read,
            update,
            insert,
            scan,
            rmw,
        }
    }

    /// The operation for a uniform draw `u` in `[0, 1)`.
    #[inline]
    pub fn choose(&self, u: f64) -> Op {
        let mut edge = self.read;
        if u < edge {
            return Op::Read;
        }
        edge += self.update;
        if u < edge {
            return Op::Update;
        }
        edge += self.insert;
        if u < edge {
            return Op::Insert;
        }
        edge += self.scan;
        if u < edge {
            return Op::Scan;
        }
        if self.rmw > 0.0 {
            Op::ReadModifyWrite
        } else {
            Op::Read
        }
    }
}

/// Which of the YCSB-style mixes to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbKind {
    /// 50/50 read/update.
    A,
    /// 95/5 read/update.
    B,
    /// Read only.
    C,
    /// Read latest, 5% inserts.
    D,
    /// Short scans, 5% inserts.
    E,
    /// 50/50 read/read-modify-write.
    F,
    /// 75/25 read/update.
    ReadHeavy,
}

impl YcsbKind {
    /// The workload name.
    pub fn name(self) -> &'static str {
        match self {
            YcsbKind::A => "ycsb-a",
            YcsbKind::B => "ycsb-b",
            YcsbKind::C => "ycsb-c",
            YcsbKind::D => "ycsb-d",
            YcsbKind::E => "ycsb-e",
            YcsbKind::F => "ycsb-f",
            YcsbKind::ReadHeavy => "read-heavy",
        }
    }

    /// The operation proportions.
    pub fn mix(self) -> Mix {
        match self {
            YcsbKind::A => Mix::new(0.5, 0.5, 0.0, 0.0, 0.0),
            YcsbKind::B => Mix::new(0.95, 0.05, 0.0, 0.0, 0.0),
            YcsbKind::C => Mix::new(1.0, 0.0, 0.0, 0.0, 0.0),
            YcsbKind::D => Mix::new(0.95, 0.0, 0.05, 0.0, 0.0),
            YcsbKind::E => Mix::new(0.0, 0.0, 0.05, 0.95, 0.0),
            YcsbKind::F => Mix::new(0.5, 0.0, 0.0, 0.0, 0.5),
            YcsbKind::ReadHeavy => Mix::new(0.75, 0.25, 0.0, 0.0, 0.0),
        }
    }

    /// The request distribution YCSB uses for it.
    pub fn default_distribution(self) -> Distribution {
        match self {
            YcsbKind::D => Distribution::Latest,
            _ => Distribution::Zipfian,
        }
    }
}

/// A YCSB workload instance.
pub struct Ycsb {
    kind: YcsbKind,
    params: Params,
    distribution: Distribution,
    theta: f64,
    scan_max: usize,
    chooser: KeyChooser,
    next_id: AtomicU64,
    /// Share of reads that ask for an absent key beside the chosen one.
    miss: f64,
}

impl Ycsb {
    /// A workload of `kind`; `distribution` defaults to the kind's own.
    pub fn new(
        kind: YcsbKind,
        params: Params,
        distribution: Option<Distribution>,
        theta: f64,
        scan_max: usize,
    ) -> Self {
        let distribution = distribution.unwrap_or(kind.default_distribution());
        let chooser = KeyChooser::new(distribution, params.records, theta);
        Ycsb {
            kind,
            next_id: AtomicU64::new(params.records),
            params,
            distribution,
            theta,
            scan_max: scan_max.max(1),
            chooser,
            miss: 0.0,
        }
    }

    /// The workload with a share `miss` (0 to 1) of its reads asking for an absent key
    /// next to the chosen one, in the same leaf ([`KeyBuf::absent_neighbour`]).
    pub fn with_miss(mut self, miss: f64) -> Self {
        self.miss = miss.clamp(0.0, 1.0);
        self
    }
}

impl Workload for Ycsb {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn config(&self, _threads: usize) -> String {
        let dist = match self.distribution {
            Distribution::Uniform => "uniform".to_string(),
            d => format!("{}({})", d.name(), self.theta),
        };
        let miss = match self.miss {
            0.0 => String::new(),
            m => format!(", {:.0}% of reads absent", m * 100.0),
        };
        format!(
            "{dist}, {} keys, {}-byte values, {} records{miss}",
            self.params.key_kind.name(),
            self.params.value_size,
            self.params.records
        )
    }

    fn shape(&self) -> Shape {
        Shape {
            scans: self.kind.mix().scan > 0.0,
            ..self.params.shape(self.params.key_kind)
        }
    }

    fn setup(&self, index: &dyn Index, threads: usize) -> u64 {
        self.next_id.store(self.params.records, Relaxed);
        self.params.load(index, self.params.key_kind, threads)
    }

    fn worker(&self, thread: usize, _threads: usize, seed: u64) -> Box<dyn Worker + '_> {
        Box::new(YcsbWorker {
            workload: self,
            rng: FastRng::new(seed ^ (thread as u64).wrapping_mul(0x1000_0000_01B3)),
            chooser: self.chooser.clone(),
            mix: self.kind.mix(),
            value: vec![0u8; self.params.value_size],
            out: Vec::with_capacity(self.params.value_size),
            version: 0,
        })
    }

    fn reuse_index(&self) -> bool {
        // D and E insert 5% of their operations; the tree they leave behind is close enough
        // to the loaded one for the next thread count.
        true
    }
}

struct YcsbWorker<'a> {
    workload: &'a Ycsb,
    rng: FastRng,
    chooser: KeyChooser,
    mix: Mix,
    value: Vec<u8>,
    out: Vec<u8>,
    version: u64,
}

impl YcsbWorker<'_> {
    #[inline]
    fn pick(&mut self) -> u64 {
        let items = self.workload.next_id.load(Relaxed).max(1);
        self.chooser.next(&mut self.rng, items)
    }
}

impl Worker for YcsbWorker<'_> {
    #[inline]
    fn step(&mut self, index: &dyn Index) -> u32 {
        let kind = self.workload.params.key_kind;
        match self.mix.choose(self.rng.next_f64()) {
            Op::Read => {
                let id = self.pick();
                let key = KeyBuf::new(kind, id);
                // No draw without misses: the runs stay those of earlier results.
                let miss = self.workload.miss;
                let key = match miss > 0.0 && self.rng.next_f64() < miss {
                    true => key.absent_neighbour(),
                    false => key,
                };
                index.get(key.as_bytes(), &mut self.out);
                1
            }
            Op::Update => {
                let id = self.pick();
                self.version += 1;
                fill_value(&mut self.value, id, self.version);
                index.update(KeyBuf::new(kind, id).as_bytes(), &self.value);
                1
            }
            Op::Insert => {
                let id = self.workload.next_id.fetch_add(1, Relaxed);
                fill_value(&mut self.value, id, 0);
                index.insert(KeyBuf::new(kind, id).as_bytes(), &self.value);
                1
            }
            Op::Scan => {
                let id = self.pick();
                let len = 1 + self.rng.below(self.workload.scan_max as u64) as usize;
                let mut sum = 0usize;
                index.scan(KeyBuf::new(kind, id).as_bytes(), len, &mut |k, v| {
                    sum = sum.wrapping_add(k.len() + v.len());
                });
                std::hint::black_box(sum);
                1
            }
            Op::ReadModifyWrite => {
                let id = self.pick();
                let key = KeyBuf::new(kind, id);
                index.get(key.as_bytes(), &mut self.out);
                self.version += 1;
                fill_value(&mut self.value, id, self.version);
                if let Some(b) = self.out.first() {
                    self.value[0] ^= b;
                }
                index.update(key.as_bytes(), &self.value);
                2
            }
        }
    }
}
