//! Deterministic sampling and bootstrap confidence intervals.

use serde::{Deserialize, Serialize};

/// SplitMix64: a small, well-mixed deterministic generator, so samples and bootstrap
/// intervals are the same on every machine for a given seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (n > 0), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return (x % n) as usize;
            }
        }
    }
}

/// Indices of a deterministic sample of `n` out of `len` items: ids are expected sorted by
/// the caller; a Fisher-Yates shuffle seeded with `seed` picks the first `n`. Taking more
/// than `len` takes everything.
pub fn sample_indices(len: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..len).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..len).rev() {
        let j = rng.below(i + 1);
        idx.swap(i, j);
    }
    idx.truncate(n.min(len));
    idx
}

/// A mean with its bootstrap 95% confidence interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The sample mean.
    pub mean: f64,
    /// 2.5th percentile of the bootstrap means.
    pub lo: f64,
    /// 97.5th percentile of the bootstrap means.
    pub hi: f64,
}

/// The mean of `values` with a percentile-bootstrap 95% interval from `resamples`
/// resamples (1,000 is the usual choice), seeded for reproducibility.
pub fn bootstrap(values: &[f64], resamples: usize, seed: u64) -> Estimate {
    if values.is_empty() {
        return Estimate::default();
    }
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut rng = SplitMix64::new(seed);
    let mut means: Vec<f64> = (0..resamples.max(1))
        .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    let (lo, hi) = percentile_95(&mut means);
    Estimate { mean, lo, hi }
}

/// The 2.5th and 97.5th percentiles of bootstrap `values` (sorted here; not empty): the
/// percentile-bootstrap 95% interval.
pub(crate) fn percentile_95(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |p: f64| values[((p * values.len() as f64) as usize).min(values.len() - 1)];
    (at(0.025), at(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_deterministic_distinct_and_bounded() {
        let a = sample_indices(100, 10, 42);
        assert_eq!(a, sample_indices(100, 10, 42));
        assert_ne!(a, sample_indices(100, 10, 7));
        let mut s = a.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 10);
        assert!(a.iter().all(|&i| i < 100));
        assert_eq!(sample_indices(3, 10, 1).len(), 3);
    }

    #[test]
    fn bootstrap_brackets_the_mean_and_shrinks_with_n() {
        let small: Vec<f64> = (0..20).map(|i| f64::from(i % 2)).collect();
        let large: Vec<f64> = (0..2000).map(|i| f64::from(i % 2)).collect();
        let a = bootstrap(&small, 1000, 1);
        let b = bootstrap(&large, 1000, 1);
        assert!((a.mean - 0.5).abs() < 1e-12);
        assert!(a.lo < 0.5 && a.hi > 0.5);
        assert!(b.hi - b.lo < (a.hi - a.lo) / 4.0);
        // Constant data: no spread.
        let c = bootstrap(&[1.0; 30], 200, 3);
        assert_eq!((c.lo, c.hi), (1.0, 1.0));
        assert_eq!(bootstrap(&[], 10, 1), Estimate::default());
    }
}
