//! Request distributions over item ids: uniform, zipfian, scrambled zipfian and latest, as in
//! the YCSB core workloads.
//!
//! A [`KeyChooser`] is per thread. It is told the current number of items on every draw
//! (inserting workloads grow it), and draws an id in `[0, items)`:
//! - `uniform`: every id equally likely;
//! - `zipfian`: id 0 the hottest, then 1, 2, ... (for integer keys the hot ids are adjacent);
//! - `scrambled-zipfian`: the same popularity, but spread over the id space by a hash;
//! - `latest`: the newest id the hottest, then the one before it, and so on.

use super::rng::{fnv1a64, FastRng};
use super::zipfian::Zipfian;

/// Which distribution requests follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Every item equally likely.
    Uniform,
    /// Zipfian: low ids are hot.
    Zipfian,
    /// Zipfian popularity spread over the id space by a hash.
    ScrambledZipfian,
    /// Zipfian over recency: the newest ids are hot.
    Latest,
}

impl Distribution {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Zipfian => "zipfian",
            Distribution::ScrambledZipfian => "scrambled-zipfian",
            Distribution::Latest => "latest",
        }
    }
}

/// Per-thread state for drawing ids under one distribution.
#[derive(Debug, Clone)]
pub struct KeyChooser {
    distribution: Distribution,
    zipf: Option<Zipfian>,
}

impl KeyChooser {
    /// A chooser for `items` initial items. `theta` is the zipfian skew. Zipfian-based
    /// choosers compute their constant here: build one and clone it per thread.
    pub fn new(distribution: Distribution, items: u64, theta: f64) -> Self {
        let zipf = match distribution {
            Distribution::Uniform => None,
            _ => Some(Zipfian::new(items.max(1), theta)),
        };
        KeyChooser { distribution, zipf }
    }

    /// The distribution this chooser follows.
    pub fn distribution(&self) -> Distribution {
        self.distribution
    }

    /// Draws an id in `[0, items)`; `items` must be positive.
    #[inline]
    pub fn next(&mut self, rng: &mut FastRng, items: u64) -> u64 {
        debug_assert!(items > 0);
        match (self.distribution, self.zipf.as_mut()) {
            (Distribution::Zipfian, Some(z)) => {
                z.grow(items);
                z.next(rng) % items
            }
            (Distribution::ScrambledZipfian, Some(z)) => {
                // Popularity is fixed at the initial item count, as in YCSB; the hash then
                // spreads the hot ranks over all current ids.
                fnv1a64(z.next(rng)) % items
            }
            (Distribution::Latest, Some(z)) => {
                z.grow(items);
                items - 1 - z.next(rng).min(items - 1)
            }
            _ => rng.below(items),
        }
    }
}
