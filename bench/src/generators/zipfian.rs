//! The YCSB zipfian generator (Gray et al., "Quickly generating billion-record synthetic
//! databases"): draws ranks in `[0, items)` where rank 0 is the most popular and the
//! probability of rank `i` is proportional to `1 / (i + 1)^theta`.
//!
//! The normalising constant `zeta(items, theta)` costs one `powf` per item, so it is computed
//! once per workload and cloned into each thread. When the item count grows (YCSB's `latest`
//! distribution and inserting workloads), [`Zipfian::grow`] extends it incrementally.

use super::rng::FastRng;

/// A zipfian distribution over `[0, items)`; `theta` is in the open interval (0, 1).
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

/// `sum_{i = from + 1}^{to} 1 / i^theta`, added to `initial`.
pub fn zeta(from: u64, to: u64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    for i in from + 1..=to {
        sum += 1.0 / (i as f64).powf(theta);
    }
    sum
}

impl Zipfian {
    /// A zipfian distribution over `items` ranks (at least 1) with skew `theta`.
    pub fn new(items: u64, theta: f64) -> Self {
        assert!(theta > 0.0 && theta < 1.0, "theta must be in (0, 1)");
        let items = items.max(1);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta, 0.0),
            zetan: zeta(0, items, theta, 0.0),
            eta: 0.0,
        };
        z.eta = z.compute_eta();
        z
    }

    fn compute_eta(&self) -> f64 {
        (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// The number of ranks.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The skew parameter.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Extends the distribution to `items` ranks (no-op when it does not grow).
    pub fn grow(&mut self, items: u64) {
        if items > self.items {
            self.zetan = zeta(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.eta = self.compute_eta();
        }
    }

    /// Draws a rank in `[0, items)`.
    #[inline]
    pub fn next(&self, rng: &mut FastRng) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let rank = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.items - 1)
    }

    /// The exact probability of `rank` under this distribution.
    pub fn probability(&self, rank: u64) -> f64 {
        1.0 / ((rank + 1) as f64).powf(self.theta) / self.zetan
    }
}
