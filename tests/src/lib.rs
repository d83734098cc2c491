//! Helpers shared by tang's cross-crate tests: a seeded random generator and tolerances.

pub mod kernels;

/// A small, seeded, deterministic random generator (SplitMix64) so tests are repeatable
/// without pulling in a random-number crate.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`; the same seed gives the same sequence.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform float in `[lo, hi)`.
    pub fn range_f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit_f64() as f32
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Whether `got` is within `abs + rel * |want|` of `want` (NaN only matches NaN).
pub fn close(got: f64, want: f64, abs: f64, rel: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    (got - want).abs() <= abs + rel * want.abs()
}

/// Every argument tuple within one ulp of `x` (each coordinate at `x`, one float below or
/// one above): where a GPU rounds differently near a kink or a pole, its value is the
/// exact one of a neighbouring input.
pub fn neighbours(x: &[f32]) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new()];
    for &v in x {
        out = out
            .into_iter()
            .flat_map(|pre| {
                [v, v.next_down(), v.next_up()].map(|n| {
                    let mut p = pre.clone();
                    p.push(n);
                    p
                })
            })
            .collect();
    }
    out
}
