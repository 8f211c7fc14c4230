//! Per-partition load of the thread-per-core executor: each worker counts the requests it
//! carries out for each partition it owns and keeps a small sample of their keys, in plain
//! thread-local memory (no atomic, nothing shared). The rebalancer asks for the counts
//! through the worker's queue ([`Msg::Report`](super::worker::Msg)), which also starts the
//! next interval; the samples tell it where to slice a hot partition so that its load, not
//! its entries, divides in two.

use super::routes::Span;

/// One key in this many requests of a partition is sampled.
const SAMPLE_EVERY: u64 = 8;
/// Keys kept per partition (the newest ones).
const SAMPLES: usize = 64;

/// The load of one partition since the last report.
#[derive(Clone, Debug, Default)]
pub(crate) struct SpanLoad {
    /// Requests carried out.
    pub requests: u64,
    /// Keys of some of them, the newest last-written (a ring).
    pub samples: Vec<Vec<u8>>,
    next: usize,
}

impl SpanLoad {
    /// Counts one request for `key`.
    #[inline]
    pub fn count(&mut self, key: &[u8]) {
        self.requests += 1;
        if self.requests.is_multiple_of(SAMPLE_EVERY) {
            if self.samples.len() < SAMPLES {
                self.samples.push(key.to_vec());
            } else {
                // Reuses the slot's allocation.
                let slot = &mut self.samples[self.next];
                slot.clear();
                slot.extend_from_slice(key);
                self.next = (self.next + 1) % SAMPLES;
            }
        }
    }
}

/// What a worker reports for one partition it owns.
#[derive(Clone, Debug)]
pub(crate) struct LoadReport {
    pub span: Span,
    pub load: SpanLoad,
}

/// The loads of a worker's spans, in the order of the spans.
#[derive(Debug, Default)]
pub(crate) struct Loads {
    loads: Vec<SpanLoad>,
}

impl Loads {
    /// Zero loads for `n` spans.
    pub fn new(n: usize) -> Loads {
        Loads {
            loads: vec![SpanLoad::default(); n],
        }
    }

    /// The load of span `i`.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut SpanLoad {
        &mut self.loads[i]
    }

    /// The loads for `new` spans, keeping the counts of the spans in `old` that stay the
    /// same (a partition that moved in starts from zero).
    pub fn rebind(mut self, old: &[Span], new: &[Span]) -> Loads {
        let loads = new
            .iter()
            .map(|span| {
                old.iter()
                    .position(|o| o == span)
                    .map(|i| std::mem::take(&mut self.loads[i]))
                    .unwrap_or_default()
            })
            .collect();
        Loads { loads }
    }

    /// The loads of `spans` since the last report; starts the next interval.
    pub fn report(&mut self, spans: &[Span]) -> Vec<LoadReport> {
        spans
            .iter()
            .zip(self.loads.iter_mut())
            .map(|(span, load)| LoadReport {
                span: span.clone(),
                load: std::mem::take(load),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_samples_and_carries_over_spans_that_stay() {
        let old = vec![Span::of(None, Some(b"f")), Span::of(Some(b"m"), None)];
        let mut loads = Loads::new(2);
        for i in 0..1000u32 {
            loads.get_mut(0).count(&i.to_be_bytes());
        }
        loads.get_mut(1).count(b"x");
        assert_eq!(loads.loads[0].requests, 1000);
        assert_eq!(loads.loads[0].samples.len(), SAMPLES);
        // The ring holds the newest sampled keys.
        assert!(loads.loads[0]
            .samples
            .contains(&999u32.to_be_bytes().to_vec()));
        assert!(!loads.loads[0]
            .samples
            .contains(&7u32.to_be_bytes().to_vec()));
        let new = vec![Span::of(Some(b"m"), None), Span::of(Some(b"f"), Some(b"m"))];
        let mut loads = loads.rebind(&old, &new);
        let report = loads.report(&new);
        assert_eq!(report[0].load.requests, 1);
        assert_eq!(report[1].load.requests, 0);
        assert_eq!(
            loads.report(&new)[0].load.requests,
            0,
            "a report starts anew"
        );
    }
}
