//! The routing table of the thread-per-core executor: which worker owns which partition.
//!
//! Clients keep a copy ([`Routes`] behind an `Arc`) and compare its epoch with the shared
//! one before each request (one load); the control side publishes a new copy and bumps the
//! epoch whenever partitions or owners change. A client with a stale copy still reaches a
//! worker, which answers "moved" for a key it does not own; the client then takes the new
//! copy and sends the request again. So a route is never trusted, only used.

use super::load::{LoadReport, Loads};
use std::cmp::Ordering as CmpOrdering;
use std::sync::Arc;

/// The keys of one partition: above `lower` (exclusive) up to `upper` (inclusive); `None`
/// is unbounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

impl Span {
    /// Whether `key` lies in the span.
    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.lower.as_deref().is_none_or(|l| l < key)
            && self.upper.as_deref().is_none_or(|u| key <= u)
    }

    /// A key of the span, to find it by (among owned spans, or in routes).
    pub fn a_key(&self) -> Vec<u8> {
        match (&self.lower, &self.upper) {
            (_, Some(u)) => u.clone(),
            (Some(l), None) => {
                let mut k = l.clone();
                k.push(0);
                k
            }
            (None, None) => Vec::new(),
        }
    }

    /// How the span lies against `key`: `Less` if it ends before it, `Greater` if it starts
    /// after it.
    pub fn cmp_key(&self, key: &[u8]) -> CmpOrdering {
        if self.upper.as_deref().is_some_and(|u| u < key) {
            CmpOrdering::Less
        } else if self.lower.as_deref().is_some_and(|l| key <= l) {
            CmpOrdering::Greater
        } else {
            CmpOrdering::Equal
        }
    }
}

/// The boundaries of the partitions and the worker of each.
#[derive(Clone, Debug)]
pub(crate) struct Routes {
    pub epoch: u64,
    pub boundaries: Vec<Vec<u8>>,
    pub owners: Vec<usize>,
}

impl Routes {
    /// The partition holding `key`: a boundary belongs to the partition on its left.
    #[inline]
    pub fn partition_of(&self, key: &[u8]) -> usize {
        self.boundaries.partition_point(|b| b.as_slice() < key)
    }

    /// The worker that owns the partition holding `key`.
    #[inline]
    pub fn worker_of(&self, key: &[u8]) -> usize {
        self.owners[self.partition_of(key)]
    }

    /// The keys of partition `p`.
    pub fn span(&self, p: usize) -> Span {
        Span {
            lower: p.checked_sub(1).map(|i| self.boundaries[i].clone()),
            upper: self.boundaries.get(p).cloned(),
        }
    }

    /// The spans `worker` owns, in key order.
    pub fn spans_of(&self, worker: usize) -> Vec<Span> {
        (0..self.owners.len())
            .filter(|&p| self.owners[p] == worker)
            .map(|p| self.span(p))
            .collect()
    }

    /// The next copy: the same routes under a new epoch.
    pub fn next(&self) -> Routes {
        Routes {
            epoch: self.epoch + 1,
            ..self.clone()
        }
    }
}

/// The spans a worker owns, searched by key, and their loads.
#[derive(Default)]
pub(crate) struct Owned {
    spans: Vec<Span>,
    loads: Loads,
}

impl Owned {
    pub fn new(spans: Vec<Span>) -> Owned {
        let loads = Loads::new(spans.len());
        Owned { spans, loads }
    }

    /// The owned span holding `key`.
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<&Span> {
        self.position(key).map(|i| &self.spans[i])
    }

    #[inline]
    fn position(&self, key: &[u8]) -> Option<usize> {
        self.spans.binary_search_by(|s| s.cmp_key(key)).ok()
    }

    /// The owned span holding `key`, counting a request for `key` in its load.
    #[inline]
    pub fn enter(&mut self, key: &[u8]) -> Option<&Span> {
        let i = self.position(key)?;
        self.loads.get_mut(i).count(key);
        Some(&self.spans[i])
    }

    /// Owns `spans` from now on, keeping the loads of the spans that stay.
    pub fn rebind(self, spans: Vec<Span>) -> Owned {
        let loads = self.loads.rebind(&self.spans, &spans);
        Owned { spans, loads }
    }

    /// The loads of the owned spans since the last report.
    pub fn report(&mut self) -> Vec<LoadReport> {
        self.loads.report(&self.spans)
    }
}

/// The shared copy of the routes, behind a mutex, and its epoch, read without it.
pub(crate) struct Published {
    epoch: std::sync::atomic::AtomicU64,
    routes: std::sync::Mutex<Arc<Routes>>,
}

impl Published {
    pub fn new(routes: Routes) -> Published {
        Published {
            epoch: std::sync::atomic::AtomicU64::new(routes.epoch),
            routes: std::sync::Mutex::new(Arc::new(routes)),
        }
    }

    /// The current routes.
    pub fn get(&self) -> Arc<Routes> {
        Arc::clone(&self.routes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether `copy` is still current (one load).
    #[inline]
    pub fn is_current(&self, copy: &Routes) -> bool {
        self.epoch.load(std::sync::atomic::Ordering::Acquire) == copy.epoch
    }

    /// Publishes `routes`, whose epoch is the next one.
    pub fn set(&self, routes: Routes) {
        let mut current = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = routes.epoch;
        *current = Arc::new(routes);
        self.epoch
            .store(epoch, std::sync::atomic::Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boundary_belongs_to_the_left() {
        let r = Routes {
            epoch: 0,
            boundaries: vec![b"f".to_vec(), b"m".to_vec()],
            owners: vec![0, 1, 0],
        };
        assert_eq!(r.partition_of(b"a"), 0);
        assert_eq!(r.partition_of(b"f"), 0);
        assert_eq!(r.partition_of(b"g"), 1);
        assert_eq!(r.partition_of(b"m"), 1);
        assert_eq!(r.partition_of(b"z"), 2);
        assert_eq!(r.worker_of(b"z"), 0);
        let owned = Owned::new(r.spans_of(0));
        assert!(owned.find(b"f").is_some());
        assert!(owned.find(b"g").is_none());
        assert!(owned.find(b"m").is_none());
        assert!(owned.find(b"n").is_some());
        assert!(r.span(1).contains(b"m") && !r.span(1).contains(b"f"));
    }
}
