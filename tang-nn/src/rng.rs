//! The host's seeded random number generator (SplitMix64): data-loader shuffling,
//! language-model window offsets, splits and weight initialisation. Training needs
//! reproducible streams and nothing more, so there is no dependency on a random-number
//! crate, and every host-side random choice in tang goes through this one type.

/// SplitMix64 (Steele, Lea and Flood, 2014): a 64-bit counter passed through a
/// bijective mixing function. Every seed, including 0, gives a full-period stream of
/// good quality for simulation (not for cryptography).
///
/// ```
/// use tang_nn::rng::SplitMix64;
/// let mut rng = SplitMix64::new(42); // torch.manual_seed(42) for host-side draws
/// let mut order: Vec<usize> = (0..10).collect();
/// rng.shuffle(&mut order);
/// let fc = tang_nn::nn::Linear::new(&tang_nn::tang_runtime::Device::new()?, 4, 2, true, &mut rng)?; // init draws
/// # let _ = fc;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose stream is fixed by `seed`.
    ///
    /// ```
    /// use tang_nn::rng::SplitMix64;
    /// assert_eq!(SplitMix64::new(7).next_u64(), SplitMix64::new(7).next_u64()); // seeded: reproducible
    /// ```
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// An independent generator for one numbered stream of `seed` (an epoch's shuffle, a
    /// step's window offsets): a pure function of `(seed, stream)`, so any stream can be
    /// regenerated without replaying the ones before it.
    ///
    /// Both numbers go through the SplitMix64 finaliser before they are combined; seeding
    /// with `seed + stream` instead would make neighbouring streams the same sequence
    /// shifted by one draw, because the state advances by a fixed constant.
    ///
    /// ```
    /// use tang_nn::rng::SplitMix64;
    /// let epoch_3 = SplitMix64::derive(1337, 3).next_u64(); // no need to replay epochs 0..3
    /// assert_eq!(epoch_3, SplitMix64::derive(1337, 3).next_u64());
    /// assert_ne!(epoch_3, SplitMix64::derive(1337, 4).next_u64());
    /// ```
    pub fn derive(seed: u64, stream: u64) -> SplitMix64 {
        let stream_key = mix(stream.wrapping_add(0x9E37_79B9_7F4A_7C15));
        SplitMix64::new(mix(seed ^ stream_key))
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// assert_ne!(rng.next_u64(), rng.next_u64());
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// A uniform `f64` in `[0, 1)`: the top 53 bits, so every value is exactly
    /// representable and 1.0 is never returned.
    ///
    /// ```
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// let x = rng.next_f64(); // torch.rand(())
    /// assert!((0.0..1.0).contains(&x));
    /// ```
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[0, n)`; 0 when `n` is 0. Uses the widening-multiply
    /// reduction (Lemire): each value's probability is off by at most `n / 2^64`.
    ///
    /// ```
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// assert!(rng.below(10) < 10); // torch.randint(10, ())
    /// assert_eq!(rng.below(0), 0);
    /// ```
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A standard normal sample (Box–Muller; one of the pair is discarded, which keeps
    /// the generator state simple).
    ///
    /// ```
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// let mean = (0..1000).map(|_| rng.normal()).sum::<f64>() / 1000.0; // torch.randn(1000).mean()
    /// assert!(mean.abs() < 0.2);
    /// ```
    pub fn normal(&mut self) -> f64 {
        // 1 - u is in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Shuffles `items` in place (Fisher–Yates): every permutation equally likely.
    ///
    /// ```
    /// let mut rng = tang_nn::rng::SplitMix64::new(0);
    /// let mut items = vec![1, 2, 3, 4];
    /// rng.shuffle(&mut items); // items[torch.randperm(4)]
    /// items.sort();
    /// assert_eq!(items, [1, 2, 3, 4]);
    /// ```
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// SplitMix64's output function: a bijective mix of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_stream() {
        // The first outputs for seed 1234567: the test vector commonly used to check
        // SplitMix64 implementations against the reference C code.
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(r.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let a: Vec<u64> = (0..8)
            .scan(SplitMix64::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..8)
            .scan(SplitMix64::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..8)
            .scan(SplitMix64::new(8), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn derived_streams_are_fixed_and_distinct() {
        let first = |mut r: SplitMix64| (0..4).map(|_| r.next_u64()).collect::<Vec<_>>();
        assert_eq!(
            first(SplitMix64::derive(9, 3)),
            first(SplitMix64::derive(9, 3))
        );
        let a = first(SplitMix64::derive(9, 0));
        let b = first(SplitMix64::derive(9, 1));
        let c = first(SplitMix64::derive(10, 0));
        assert_ne!(a, b);
        assert_ne!(a, c);
        // Not shifted copies of each other: stream 1 does not start with stream 0's draws.
        assert!(!a.iter().any(|x| b.contains(x)), "{a:?} {b:?}");
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = SplitMix64::new(1);
        let mut seen = [0usize; 10];
        for _ in 0..10_000 {
            let k = r.below(10);
            assert!(k < 10);
            seen[k] += 1;
        }
        // Each bucket expects 1000; 800 is more than 6 standard deviations away.
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(r.below(0), 0);
    }

    #[test]
    fn floats_are_in_range_and_normals_have_unit_variance() {
        let mut r = SplitMix64::new(42);
        let n = 100_000;
        let (mut sum, mut sq) = (0.0, 0.0);
        for _ in 0..n {
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
            let z = r.normal();
            assert!(z.is_finite());
            sum += z;
            sq += z * z;
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.02, "mean {mean}");
        assert!((var - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<u32> = (0..100).collect();
        let mut b = a.clone();
        SplitMix64::new(3).shuffle(&mut a);
        SplitMix64::new(3).shuffle(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    }
}
