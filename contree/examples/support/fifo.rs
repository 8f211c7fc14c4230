//! The FIFO queue of the issue "Space under churn", shared by `examples/churn.rs` and
//! `tests/space_churn.rs`: 4 producers append increasing u64 keys (8-byte values) while at
//! most `cap` entries are live, 2 consumers remove the first entry, for `run`; the pages the
//! tree holds are sampled every `every`.

use contree::Tree;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What one run did.
pub struct Fifo {
    pub inserted: u64,
    pub removed: u64,
    /// The most pages (leaf and inner) seen at a sample.
    pub most_pages: usize,
}

pub fn pages(t: &Tree) -> usize {
    let s = t.stats();
    s.leaf_pages + s.inner_pages
}

pub fn run_fifo(t: &Tree, run: Duration, cap: usize, every: Duration) -> Fifo {
    let next = AtomicU64::new(0);
    let removed = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let most = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    if t.len() >= cap {
                        std::thread::yield_now();
                        continue;
                    }
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    t.insert(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
                }
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    match t.first() {
                        Some((k, _)) => {
                            if t.remove(&k).is_some() {
                                removed.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        None => std::thread::yield_now(),
                    }
                }
            });
        }
        let start = Instant::now();
        while start.elapsed() < run {
            std::thread::sleep(every);
            most.fetch_max(pages(t), Ordering::Relaxed);
        }
        stop.store(true, Ordering::Relaxed);
    });
    Fifo {
        inserted: next.into_inner(),
        removed: removed.into_inner(),
        most_pages: most.into_inner(),
    }
}
