//! A small, fast, seedable pseudo-random generator for the workload generators.
//!
//! Benchmarks draw one or two random numbers per operation, so the generator must cost a few
//! instructions and must be deterministic for a given seed (runs are repeatable and
//! `callgrind` counts stay stable). This is wyrand: one 64-bit state word, a multiply and a
//! fold per draw. Each worker thread owns its own generator; nothing is shared.

/// A per-thread pseudo-random generator (wyrand).
#[derive(Debug, Clone)]
pub struct FastRng {
    state: u64,
}

impl FastRng {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        // Mix the seed so that neighbouring seeds (thread ids) give unrelated sequences.
        FastRng {
            state: splitmix64(seed ^ 0x9E37_79B9_7F4A_7C15),
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0xA076_1D64_78BD_642F);
        let t = u128::from(self.state) * u128::from(self.state ^ 0xE703_7ED1_A0B4_28DB);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// A uniform number in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform number in `[0, n)`; `n` must be positive. Multiply-shift (Lemire), whose
    /// bias is below 2^-32 for the sizes used here.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// One step of SplitMix64: a good 64-bit mixing function.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a over the eight little-endian bytes of `x`, as YCSB hashes item numbers.
#[inline]
pub fn fnv1a64(x: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in x.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = FastRng::new(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[rng.below(10) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
    }

    #[test]
    fn same_seed_same_sequence() {
        let mut a = FastRng::new(7);
        let mut b = FastRng::new(7);
        assert!((0..100).all(|_| a.next_u64() == b.next_u64()));
        let f = FastRng::new(8).next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
