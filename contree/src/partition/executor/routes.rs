//! The routing table of the thread-per-core executor: which worker owns which partition.
//!
//! Clients keep a copy ([`Routes`] behind an `Arc`) and compare its epoch with the shared
//! one before each request (one load); the control side publishes a new copy and bumps the
//! epoch whenever partitions or owners change. A client with a stale copy still reaches a
//! worker, which answers "moved" for a key it does not own; the client then takes the new
//! copy and sends the request again. So a route is never trusted, only used.

use super::load::{LoadReport, Loads};
use crate::sync::seam::{AtomicU64, Mutex, Ordering};
use std::cmp::Ordering as CmpOrdering;
use std::sync::Arc;

/// The keys of one partition: above `lower` (exclusive) up to `upper` (inclusive); `None`
/// is unbounded.
/// `a.cmp(b)`, with the first eight bytes compared as one word when both have them: every
/// request's key is compared with partition boundaries (routing, then ownership), and a
/// `memcmp` call per comparison cost about 190 instructions per operation of a resident
/// task (callgrind, 8 partitions).
#[inline]
pub(crate) fn cmp_keys(a: &[u8], b: &[u8]) -> CmpOrdering {
    if let (Some(x), Some(y)) = (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        let (x, y) = (u64::from_be_bytes(*x), u64::from_be_bytes(*y));
        if x != y {
            return x.cmp(&y);
        }
    }
    a.cmp(b)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub lower: Option<Vec<u8>>,
    pub upper: Option<Vec<u8>>,
}

impl Span {
    /// The span between `lower` and `upper` (a test's shorthand).
    #[cfg(test)]
    pub(crate) fn of(lower: Option<&[u8]>, upper: Option<&[u8]>) -> Span {
        Span {
            lower: lower.map(<[u8]>::to_vec),
            upper: upper.map(<[u8]>::to_vec),
        }
    }

    /// Whether `key` lies in the span.
    #[inline]
    pub fn contains(&self, key: &[u8]) -> bool {
        self.lower
            .as_deref()
            .is_none_or(|l| cmp_keys(l, key).is_lt())
            && self
                .upper
                .as_deref()
                .is_none_or(|u| cmp_keys(key, u).is_le())
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
        if self
            .upper
            .as_deref()
            .is_some_and(|u| cmp_keys(u, key).is_lt())
        {
            CmpOrdering::Less
        } else if self
            .lower
            .as_deref()
            .is_some_and(|l| cmp_keys(key, l).is_le())
        {
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
        self.boundaries
            .partition_point(|b| cmp_keys(b, key).is_lt())
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

/// The spans a worker owns, searched by key, their loads, and since which routes epoch the
/// worker has owned each without a break.
///
/// The epochs keep a pipelining client's order (`client::Pipeline`): all the batches a
/// client has in flight were routed by one epoch, and a worker carries out an operation
/// only if it has owned the key since that epoch or before. An operation it refuses
/// ("moved") was therefore refused with every later operation of that client on the key
/// that reached the same worker, even if the key came back to the worker in between (a
/// move there and back): the client sends them all again, in order.
#[derive(Default)]
pub(crate) struct Owned {
    spans: Vec<Span>,
    since: Vec<u64>,
    loads: Loads,
}

impl Owned {
    /// The spans a worker owns from routes epoch `epoch` on.
    pub fn new(spans: Vec<Span>, epoch: u64) -> Owned {
        let loads = Loads::new(spans.len());
        let since = vec![epoch; spans.len()];
        Owned {
            spans,
            since,
            loads,
        }
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

    /// The index of the owned span that is exactly `span`, if one is.
    pub fn index_of(&self, span: &Span) -> Option<usize> {
        self.spans.iter().position(|s| s == span)
    }

    /// [`enter_at`](Self::enter_at) of a `key` that the caller knows lies in owned span `i`
    /// (found by [`index_of`](Self::index_of) since the last rebind).
    #[inline]
    pub fn enter_index_at(&mut self, i: usize, key: &[u8], epoch: u64) -> bool {
        debug_assert!(self.spans[i].contains(key), "the key lies in span {i}");
        if self.since[i] <= epoch {
            self.loads.get_mut(i).count(key);
            true
        } else {
            false
        }
    }

    /// Whether a request for `key` routed by epoch `epoch` is this worker's to carry out:
    /// the worker owns `key` and has owned it since `epoch` or before (see the type's doc).
    /// Counts the request in the span's load if so.
    #[inline]
    pub fn enter_at(&mut self, key: &[u8], epoch: u64) -> bool {
        match self.position(key) {
            Some(i) if self.since[i] <= epoch => {
                self.loads.get_mut(i).count(key);
                true
            }
            _ => false,
        }
    }

    /// Owns `spans` from routes epoch `epoch` on, keeping the loads of the spans that stay.
    /// A span the worker owned all of before (the same span, a piece of a sliced one, or
    /// two of its spans melded) keeps the latest epoch of the spans that covered it; any
    /// other span is owned since `epoch`.
    pub fn rebind(self, spans: Vec<Span>, epoch: u64) -> Owned {
        let since = spans
            .iter()
            .map(|s| self.held_since(s).unwrap_or(epoch))
            .collect();
        let loads = self.loads.rebind(&self.spans, &spans);
        Owned {
            spans,
            since,
            loads,
        }
    }

    /// If the owned spans cover all of `s` (adjacent ones, without a gap), the latest epoch
    /// since which one of them is owned.
    fn held_since(&self, s: &Span) -> Option<u64> {
        // The first owned span that reaches above `s.lower`.
        let mut i = self.spans.iter().position(|o| match (&o.upper, &s.lower) {
            (None, _) | (_, None) => true,
            (Some(u), Some(l)) => u > l,
        })?;
        // It must start at or below `s.lower`.
        let starts_below = match (&self.spans[i].lower, &s.lower) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(ol), Some(l)) => ol <= l,
        };
        if !starts_below {
            return None;
        }
        let mut since = self.since[i];
        loop {
            let reaches = match (&self.spans[i].upper, &s.upper) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(ou), Some(u)) => ou >= u,
            };
            if reaches {
                return Some(since);
            }
            let next = self.spans.get(i + 1)?;
            if next.lower != self.spans[i].upper {
                return None;
            }
            i += 1;
            since = since.max(self.since[i]);
        }
    }

    /// The loads of the owned spans since the last report.
    pub fn report(&mut self) -> Vec<LoadReport> {
        self.loads.report(&self.spans)
    }
}

/// The shared copy of the routes, behind a mutex, and its epoch, read without it.
pub(crate) struct Published {
    epoch: AtomicU64,
    routes: Mutex<Arc<Routes>>,
}

impl Published {
    pub fn new(routes: Routes) -> Published {
        Published {
            epoch: AtomicU64::new(routes.epoch),
            routes: Mutex::new(Arc::new(routes)),
        }
    }

    /// The current routes.
    pub fn get(&self) -> Arc<Routes> {
        Arc::clone(&self.routes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether `copy` is still current (one load).
    #[inline]
    pub fn is_current(&self, copy: &Routes) -> bool {
        self.epoch.load(Ordering::Acquire) == copy.epoch
    }

    /// Publishes `routes`, whose epoch is the next one.
    pub fn set(&self, routes: Routes) {
        let mut current = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        let epoch = routes.epoch;
        *current = Arc::new(routes);
        self.epoch.store(epoch, Ordering::Release);
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
        let owned = Owned::new(r.spans_of(0), 0);
        assert!(owned.find(b"f").is_some());
        assert!(owned.find(b"g").is_none());
        assert!(owned.find(b"m").is_none());
        assert!(owned.find(b"n").is_some());
        assert!(r.span(1).contains(b"m") && !r.span(1).contains(b"f"));
    }

    #[test]
    fn ownership_epochs_survive_slices_and_melds_but_not_a_gain() {
        // Owned since epoch 3: (-inf, f] and (m, +inf).
        let owned = Owned::new(
            vec![Span::of(None, Some(b"f")), Span::of(Some(b"m"), None)],
            3,
        );
        // Slices keep the epoch; a melded span that takes in keys the worker did not own
        // (f, m] is owned since the new epoch, as is a span that came from elsewhere.
        let mut owned = owned.rebind(
            vec![
                Span::of(None, Some(b"c")),
                Span::of(Some(b"c"), Some(b"f")),
                Span::of(Some(b"m"), Some(b"t")),
                Span::of(Some(b"t"), None),
            ],
            5,
        );
        assert!(owned.enter_at(b"a", 3) && owned.enter_at(b"d", 3));
        assert!(owned.enter_at(b"n", 3) && owned.enter_at(b"z", 4));
        assert!(
            !owned.enter_at(b"a", 2),
            "routed before the worker owned it"
        );
        assert!(!owned.enter_at(b"g", 9), "not owned");
        let mut owned = owned.rebind(
            vec![Span::of(None, Some(b"f")), Span::of(Some(b"f"), Some(b"t"))],
            7,
        );
        // (-inf, f] was owned in two pieces since 3; (f, t] gained (f, m] at 7.
        assert!(owned.enter_at(b"a", 3) && owned.enter_at(b"e", 3));
        assert!(!owned.enter_at(b"n", 6) && owned.enter_at(b"n", 7));
        assert!(!owned.enter_at(b"z", 9), "given away");
        // Given away and taken back (a move there and back): owned since the return.
        let mut owned = owned.rebind(vec![Span::of(None, Some(b"f"))], 8);
        owned = owned.rebind(
            vec![Span::of(None, Some(b"f")), Span::of(Some(b"f"), Some(b"t"))],
            9,
        );
        assert!(owned.enter_at(b"a", 3));
        assert!(!owned.enter_at(b"n", 8) && owned.enter_at(b"n", 9));
    }
}
