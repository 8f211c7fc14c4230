//! Repartitioning under skew (PLP §3.2.1, §4.5): from the per-partition loads the workers
//! report ([`load`](super::load)), a plan of ownership moves, slices of hot partitions and
//! melds of cold neighbours that evens out the workers' loads.
//!
//! The plan is greedy, on a model of the partitions that it updates as it goes: while the
//! busiest worker carries more than [`RebalanceConfig::imbalance`] times the mean, it moves
//! to the least busy worker the partition of the busiest whose load is nearest half their
//! difference (a move of a partition lighter than the difference always narrows it); when
//! no partition is light enough (one hot partition carries the load), it slices the hottest
//! at the median of its sampled keys, so that each half carries about half its requests,
//! and goes on. A round with nothing to balance melds the coldest pair of neighbours when
//! together they carry less than [`RebalanceConfig::cold`] of the load, or when there are
//! more partitions than [`RebalanceConfig::max_partitions`]. Steps name partitions by a key
//! inside them, so a step stays meaningful if the partitions change meanwhile.

use super::load::LoadReport;
use super::routes::{Routes, Span};
use crate::error::Error;
use std::time::Duration;

/// When and how an [`Executor`](crate::Executor) repartitions by itself under skew: every
/// `interval` a rebalancer thread reads each worker's load per partition (through the
/// workers' queues) and moves, slices or melds partitions as the module `rebalance`
/// describes. Set [`ExecutorConfig::rebalance`](crate::ExecutorConfig::rebalance) to `None`
/// to keep the partitions and their owners as they are; [`Executor::rebalance`] runs one
/// round on demand either way.
///
/// [`Executor::rebalance`]: crate::Executor::rebalance
#[derive(Clone, Debug, PartialEq)]
pub struct RebalanceConfig {
    /// How often the loads are read and acted on (default 100 ms).
    pub interval: Duration,
    /// Act when the busiest worker carries more than this many times the mean load
    /// (default 1.25; at least 1).
    pub imbalance: f64,
    /// Requests an interval must count at least before any step is taken: fewer say too
    /// little about the load (default 2000).
    pub min_requests: u64,
    /// Partitions beyond which no partition is sliced and the coldest neighbours are
    /// melded (default 0: eight per worker).
    pub max_partitions: usize,
    /// Two neighbouring partitions that together carry less than this share of the load
    /// are melded (default 0.02; below 1).
    pub cold: f64,
}

impl Default for RebalanceConfig {
    fn default() -> Self {
        RebalanceConfig {
            interval: Duration::from_millis(100),
            imbalance: 1.25,
            min_requests: 2000,
            max_partitions: 0,
            cold: 0.02,
        }
    }
}

impl RebalanceConfig {
    pub(super) fn validate(&self) -> Result<(), Error> {
        let bad = |field, reason: &str| {
            Err(Error::InvalidConfig {
                field,
                reason: reason.into(),
            })
        };
        if self.interval.is_zero() {
            return bad("rebalance.interval", "the interval must be positive");
        }
        if !(self.imbalance >= 1.0 && self.imbalance.is_finite()) {
            return bad(
                "rebalance.imbalance",
                "the imbalance must be finite and >= 1",
            );
        }
        if !(0.0..1.0).contains(&self.cold) {
            return bad("rebalance.cold", "the cold share must lie in [0, 1)");
        }
        Ok(())
    }

    fn max_partitions(&self, workers: usize) -> usize {
        if self.max_partitions == 0 {
            8 * workers
        } else {
            self.max_partitions
        }
    }
}

/// What one round of rebalancing did ([`Executor::rebalance`](crate::Executor::rebalance)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rebalanced {
    /// Partitions moved to another worker.
    pub moves: usize,
    /// Partitions sliced in two.
    pub slices: usize,
    /// Pairs of partitions melded.
    pub melds: usize,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Give the partition holding `key` to worker `to`.
    Move { key: Vec<u8>, to: usize },
    /// Slice the partition holding `at` at `at`.
    Slice { at: Vec<u8> },
    /// Meld the partitions that meet at boundary `at`.
    Meld { at: Vec<u8> },
}

/// A partition in the planner's model.
struct Part {
    span: Span,
    owner: usize,
    load: f64,
    /// Sampled keys, ascending.
    samples: Vec<Vec<u8>>,
}

/// Sampled keys a partition needs before it is sliced by them.
const MIN_SAMPLES: usize = 16;

/// What the tree allows a plan.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// The longest boundary a slice takes.
    pub max_boundary: usize,
    /// Partitions beyond which no slice is planned.
    pub max_partitions: usize,
}

impl Part {
    /// Where to slice the partition so that each half gets about half its requests, and
    /// the left half's share; `None` where the samples are too few, fall on one key or on
    /// the partition's end (a single hot key cannot be divided). A median key longer than
    /// `max_boundary` is cut to that length (a prefix sorts before the key: the share is
    /// counted again).
    fn cut(&self, max_boundary: usize) -> Option<(Vec<u8>, f64)> {
        let n = self.samples.len();
        if n < MIN_SAMPLES {
            return None;
        }
        let median = &self.samples[(n - 1) / 2];
        let at = &median[..median.len().min(max_boundary)];
        if !self.span.contains(at) || self.span.upper.as_deref() == Some(at) {
            return None;
        }
        let left = self.samples.partition_point(|s| s.as_slice() <= at);
        let share = left as f64 / n as f64;
        (0.2..=0.8).contains(&share).then(|| (at.to_vec(), share))
    }
}

/// The plan for one round, from the current `routes` and the workers' `reports`.
pub(super) fn plan(
    routes: &Routes,
    reports: Vec<LoadReport>,
    workers: usize,
    cfg: &RebalanceConfig,
    limits: Limits,
) -> Vec<Step> {
    let limits = Limits {
        max_partitions: limits.max_partitions.min(cfg.max_partitions(workers)),
        ..limits
    };
    let mut parts: Vec<Part> = (0..routes.owners.len())
        .map(|p| Part {
            span: routes.span(p),
            owner: routes.owners[p],
            load: 0.0,
            samples: Vec::new(),
        })
        .collect();
    for report in reports {
        // A report of a partition that changed since is left out.
        let p = routes.partition_of(&report.span.a_key());
        if let Some(part) = parts.get_mut(p).filter(|part| part.span == report.span) {
            part.load += report.load.requests as f64;
            part.samples.extend(report.load.samples);
        }
    }
    for part in &mut parts {
        part.samples.sort_unstable();
    }
    let total: f64 = parts.iter().map(|p| p.load).sum();
    if workers < 2 && parts.len() <= 1 || total < cfg.min_requests as f64 {
        return Vec::new();
    }
    let mut steps = balance(&mut parts, total, workers, cfg, limits);
    if steps.is_empty() {
        steps.extend(meld_cold(&parts, total, workers, cfg, limits));
    }
    steps
}

/// Moves and slices until no worker carries more than `imbalance` times the mean.
fn balance(
    parts: &mut Vec<Part>,
    total: f64,
    workers: usize,
    cfg: &RebalanceConfig,
    limits: Limits,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if workers < 2 {
        return steps;
    }
    let mean = total / workers as f64;
    // Bounded: each step either narrows the gap between two workers or slices.
    for _ in 0..4 * workers {
        let mut load = vec![0.0f64; workers];
        for part in parts.iter() {
            load[part.owner] += part.load;
        }
        let busiest = (0..workers).max_by(|&a, &b| load[a].total_cmp(&load[b]));
        let idlest = (0..workers).min_by(|&a, &b| load[a].total_cmp(&load[b]));
        let (Some(h), Some(c)) = (busiest, idlest) else {
            break;
        };
        if load[h] <= cfg.imbalance * mean {
            break;
        }
        let gap = load[h] - load[c];
        let light = (0..parts.len())
            .filter(|&p| parts[p].owner == h && parts[p].load > 0.0 && parts[p].load < gap)
            .min_by(|&a, &b| {
                (parts[a].load - gap / 2.0)
                    .abs()
                    .total_cmp(&(parts[b].load - gap / 2.0).abs())
            });
        if let Some(p) = light {
            parts[p].owner = c;
            steps.push(Step::Move {
                key: parts[p].span.a_key(),
                to: c,
            });
            continue;
        }
        if parts.len() >= limits.max_partitions {
            break;
        }
        let hottest = (0..parts.len())
            .filter(|&p| parts[p].owner == h)
            .max_by(|&a, &b| parts[a].load.total_cmp(&parts[b].load));
        let Some((p, (at, share))) =
            hottest.and_then(|p| Some((p, parts[p].cut(limits.max_boundary)?)))
        else {
            break;
        };
        let part = parts.remove(p);
        let split = part.samples.partition_point(|s| s <= &at);
        let (left_samples, right_samples) = {
            let mut samples = part.samples;
            let right = samples.split_off(split);
            (samples, right)
        };
        let left = Part {
            span: Span {
                lower: part.span.lower,
                upper: Some(at.clone()),
            },
            owner: part.owner,
            load: part.load * share,
            samples: left_samples,
        };
        let right = Part {
            span: Span {
                lower: Some(at.clone()),
                upper: part.span.upper,
            },
            owner: part.owner,
            load: part.load * (1.0 - share),
            samples: right_samples,
        };
        parts.insert(p, right);
        parts.insert(p, left);
        steps.push(Step::Slice { at });
    }
    steps
}

/// Melds the coldest pair of neighbours, if cold enough or if there are too many
/// partitions.
fn meld_cold(
    parts: &[Part],
    total: f64,
    workers: usize,
    cfg: &RebalanceConfig,
    limits: Limits,
) -> Option<Step> {
    if parts.len() <= workers.max(1) {
        return None;
    }
    let too_many = parts.len() > limits.max_partitions;
    let p = (0..parts.len() - 1).min_by(|&a, &b| {
        (parts[a].load + parts[a + 1].load).total_cmp(&(parts[b].load + parts[b + 1].load))
    })?;
    let cold = parts[p].load + parts[p + 1].load < cfg.cold * total;
    (cold || too_many).then(|| Step::Meld {
        at: parts[p]
            .span
            .upper
            .clone()
            .expect("a partition with a right neighbour has an upper boundary"),
    })
}

#[cfg(test)]
mod tests {
    use super::super::load::SpanLoad;
    use super::*;

    const LIMITS: Limits = Limits {
        max_boundary: 256,
        max_partitions: usize::MAX,
    };

    fn key(i: u64) -> Vec<u8> {
        i.to_be_bytes().to_vec()
    }

    fn routes(bounds: &[u64], owners: &[usize]) -> Routes {
        Routes {
            epoch: 0,
            boundaries: bounds.iter().map(|&b| key(b)).collect(),
            owners: owners.to_vec(),
        }
    }

    /// A report of partition `p` with `requests`, and keys sampled from `keys`.
    fn report(r: &Routes, p: usize, requests: u64, keys: impl Iterator<Item = u64>) -> LoadReport {
        let mut load = SpanLoad::default();
        for k in keys {
            load.count(&key(k));
        }
        load.requests = requests;
        LoadReport {
            span: r.span(p),
            load,
        }
    }

    fn apply(r: &mut Routes, steps: &[Step]) {
        for step in steps {
            match step {
                Step::Move { key, to } => {
                    let p = r.partition_of(key);
                    r.owners[p] = *to;
                }
                Step::Slice { at } => {
                    let p = r.partition_of(at);
                    r.boundaries.insert(p, at.clone());
                    r.owners.insert(p, r.owners[p]);
                }
                Step::Meld { at } => {
                    let p = r.partition_of(at);
                    r.boundaries.remove(p);
                    r.owners.remove(p + 1);
                }
            }
        }
    }

    #[test]
    fn a_balanced_load_is_left_alone() {
        let r = routes(&[100, 200, 300], &[0, 1, 0, 1]);
        let reports = (0..4).map(|p| report(&r, p, 10_000, 0..0)).collect();
        assert!(plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS).is_empty());
    }

    #[test]
    fn too_few_requests_change_nothing() {
        let r = routes(&[100], &[0, 0]);
        let reports = vec![report(&r, 0, 1000, 0..0), report(&r, 1, 0, 0..0)];
        assert!(plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS).is_empty());
    }

    #[test]
    fn a_light_partition_of_the_busiest_worker_moves() {
        let r = routes(&[100, 200, 300], &[0, 0, 0, 1]);
        let reports = (0..4).map(|p| report(&r, p, 10_000, 0..0)).collect();
        let steps = plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS);
        assert_eq!(steps.len(), 1, "{steps:?}");
        let mut after = r.clone();
        apply(&mut after, &steps);
        assert_eq!(after.owners.iter().filter(|&&o| o == 0).count(), 2);
    }

    #[test]
    fn a_hot_partition_is_sliced_at_its_load_median_and_half_moves() {
        // One partition, all load on keys 1000..1640 of it.
        let r = routes(&[], &[0]);
        let reports = vec![report(&r, 0, 100_000, 1000..1640)];
        let steps = plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS);
        let Step::Slice { at } = &steps[0] else {
            panic!("{steps:?}")
        };
        let at = u64::from_be_bytes(at.as_slice().try_into().unwrap());
        assert!((1200..1440).contains(&at), "sliced at {at}");
        let mut after = r.clone();
        apply(&mut after, &steps);
        assert_eq!(after.owners.len(), 2);
        assert_ne!(after.owners[0], after.owners[1], "{steps:?}");
    }

    #[test]
    fn one_hot_key_is_not_sliced() {
        let r = routes(&[], &[0]);
        let reports = vec![report(&r, 0, 100_000, std::iter::repeat_n(5, 640))];
        assert!(plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS).is_empty());
    }

    #[test]
    fn cold_neighbours_meld_and_too_many_partitions_shrink() {
        let r = routes(&[100, 200, 300], &[0, 1, 1, 1]);
        let loads = [50_000, 10, 10, 50_000];
        let reports = (0..4).map(|p| report(&r, p, loads[p], 0..0)).collect();
        let steps = plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS);
        assert_eq!(steps, vec![Step::Meld { at: key(200) }]);
        let cfg = RebalanceConfig {
            max_partitions: 2,
            cold: 0.0,
            ..RebalanceConfig::default()
        };
        let reports = (0..4).map(|p| report(&r, p, 10_000, 0..0)).collect();
        assert_eq!(plan(&r, reports, 2, &cfg, LIMITS).len(), 1);
    }

    #[test]
    fn a_long_median_key_is_cut_to_the_boundary_limit() {
        let r = routes(&[], &[0]);
        let mut load = SpanLoad::default();
        for i in 0..640u64 {
            let mut k = (1000 + i).to_be_bytes().to_vec();
            k.extend_from_slice(&[b'x'; 40]);
            load.count(&k);
        }
        load.requests = 100_000;
        let reports = vec![LoadReport {
            span: r.span(0),
            load,
        }];
        let limits = Limits {
            max_boundary: 8,
            ..LIMITS
        };
        let steps = plan(&r, reports.clone(), 2, &RebalanceConfig::default(), limits);
        let Some(Step::Slice { at }) = steps.first() else {
            panic!("{steps:?}")
        };
        assert_eq!(at.len(), 8);
        let full = Limits {
            max_partitions: 1,
            ..limits
        };
        assert!(plan(&r, reports, 2, &RebalanceConfig::default(), full).is_empty());
    }

    #[test]
    fn stale_reports_are_left_out() {
        let r = routes(&[100], &[0, 0]);
        let old = routes(&[50], &[0, 0]);
        let reports = vec![report(&old, 0, 100_000, 0..0)];
        assert!(plan(&r, reports, 2, &RebalanceConfig::default(), LIMITS).is_empty());
    }

    #[test]
    fn bad_configs_are_refused() {
        for cfg in [
            RebalanceConfig {
                interval: Duration::ZERO,
                ..RebalanceConfig::default()
            },
            RebalanceConfig {
                imbalance: 0.5,
                ..RebalanceConfig::default()
            },
            RebalanceConfig {
                imbalance: f64::NAN,
                ..RebalanceConfig::default()
            },
            RebalanceConfig {
                cold: 1.0,
                ..RebalanceConfig::default()
            },
        ] {
            assert!(cfg.validate().is_err(), "{cfg:?}");
        }
        assert!(RebalanceConfig::default().validate().is_ok());
    }
}
