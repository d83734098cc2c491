//! The special functions Rust's `f32` lacks (the error function), and the constants the
//! stable forms share with their WGSL.
//!
//! `erf`/`erfc` in f32 follow one algorithm, written here in Rust and printed as WGSL in
//! `wgsl_helpers/` from the same coefficient arrays, so the CPU twin and the GPU differ
//! only by the rounding of `exp`:
//!
//! - `|x| < 1`: `erf(x) = x + x Q(x^2)`, `Q` of degree 6 (the `x` term is exact, so the
//!   rounding error stays far below an ulp of the result);
//! - `|x| >= 1`: `erfc(|x|) = exp(-x^2) R(1 / (1 + |x|))`, `R` of degree 8, with `x^2`
//!   split into an exact high part and a small low part so that `exp(-x^2)` keeps its
//!   relative accuracy up to the underflow of `erfc` near 10.
//!
//! Both polynomials were fitted by weighted least squares on Chebyshev nodes against
//! 40-digit values (relative weight for `R`) and rounded to f32; in f32 arithmetic the
//! error of `erf` is below 7e-8 absolute on `[0, 1)` and that of `R` below 2.6e-7
//! relative on `[1, 10]`. The f64 versions (the reference of the tests) sum the
//! positive-term series `erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (2n+1)!!` below
//! 2.5 and the continued fraction of `erfc` above, both to about 1e-15.
//!
//! The exact GELU and its derivative do not use that `erfc`: on a GPU a subgroup's lanes
//! take both of its pieces (two polynomials and two exponentials a lane), and GELU needs
//! absolute accuracy only. They take `erfc(a) = t exp(P(t) - a^2)`, `t = 1 / (1 + a / 2)`,
//! in one piece for every `a >= 0` (`P` of degree 9, [`GELU_ERFC`], fitted by
//! `scripts/fit-gelu-erfc.py`), reflected as `2 - erfc(-z)` for negative `z`; the
//! derivative's density shares its `exp(-a^2)`. Measured on an H200 (BENCHMARKS.md,
//! 2026-11-30 (thirteenth session)): over 64M f16 elements the forward 0.168 -> 0.110 ms
//! and the backward 0.176 -> 0.130 ms, the AMP recipe step 2% faster.

/// `sqrt(2 / pi)`, the constant inside the tanh approximation of GELU.
pub const GELU_K: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh approximation of GELU.
pub const GELU_C: f32 = 0.044_715;
/// Where `tanh`'s input is clamped on the GPU: `tanh(±15)` is already ±1 in f32, and
/// some drivers compute `tanh` through `exp`, which overflows for large inputs.
pub const TANH_CLAMP: f32 = 15.0;

/// `Q` in `erf(x) = x + x Q(x^2)` for `|x| < 1`, lowest degree first.
pub(crate) const ERF_SMALL: [f32; 7] = [
    0.128_379_17,
    -0.376_126_3,
    0.112_836_26,
    -0.026_855_4,
    0.005_191_218_6,
    -8.034_846_4e-4,
    7.933_494e-5,
];

/// `R` in `erfc(a) = exp(-a^2) R(1 / (1 + a))` for `a >= 1`, lowest degree first.
pub(crate) const ERFC_TAIL: [f32; 9] = [
    5.720_464_3e-6,
    0.563_925_4,
    0.569_369_26,
    0.225_743_64,
    0.090_099_47,
    -2.224_666_8,
    3.487_494,
    -2.256_483_6,
    0.532_787_5,
];

/// `Q` in `atan(t) = t + t^3 Q(t^2)` for `0 <= t <= 1`, lowest degree first (fitted as
/// the erf polynomials; below 8e-8 absolute in f32 arithmetic). The GPU computes `atan`,
/// `atan2`, `asin` and `acos` through it: drivers' own `atan` and `asin` were off by up to
/// 2e-6 and 4e-4 on the software adapter.
pub(crate) const ATAN_POLY: [f32; 9] = [
    -0.333_333_3,
    0.199_998_29,
    -0.142_801_73,
    0.110_454_8,
    -0.087_001_21,
    0.063_382_51,
    -0.036_875_78,
    0.014_108_188,
    -0.002_533_575_5,
];

/// Where the tail's argument is clamped: `erfc` underflows f32 before it (erfc(10.5)
/// is about 1e-49), and the clamp keeps `a^2` and `inf - inf` out of the formula.
pub(crate) const ERFC_CUTOFF: f32 = 10.5;

/// The mask that keeps the upper 12 significant bits of an f32, so that the square of
/// the kept part is exact.
pub(crate) const SPLIT_MASK: u32 = 0xffff_f000;

/// `2 / pi`, by which the GPU's `sin`, `cos` and `tan` find the quadrant `k` of their
/// argument.
pub(crate) const TWO_OVER_PI: f32 = std::f32::consts::FRAC_2_PI;

/// `pi / 2` in three parts for the GPU's range reduction `r = |x| - k pi/2` (Cody and
/// Waite): the first two have 8 significant bits, so `k * part` is exact for every
/// `k < 2^16` and the reduction gives the same result whether or not the driver fuses a
/// product into the subtraction that follows (drivers may contract `a * b + c` into
/// `fma`); the third holds the next 24 bits. Their sum is `pi / 2` to about 2^-40.
pub(crate) const PIO2_PARTS: [f32; 3] = [1.570_312_5, 4.844_665_5e-4, -6.397_578_4e-7];

/// The largest `|x|` the GPU reduces with [`PIO2_PARTS`] (`k = round(|x| 2/pi)` stays
/// below 2^16); beyond it `sin`, `cos` and `tan` fall back to the driver's builtins,
/// whose range reduction may be poor (NVIDIA's was off by 7e-4 at 1e4).
pub(crate) const TRIG_REDUCED_UP_TO: f32 = 1e5;

/// `P` in `sin(r) = r + r^3 P(r^2)` on `[-pi/4, pi/4]`, lowest degree first (fitted as
/// the erf polynomials, minimax-weighted; 6.5e-8 relative in f32 arithmetic).
pub(crate) const SIN_POLY: [f32; 3] = [-0.166_666_55, 0.008_332_161, -1.951_529_1e-4];

/// `Q` in `cos(r) = 1 - r^2/2 + r^4 Q(r^2)` on `[-pi/4, pi/4]`, lowest degree first
/// (7.1e-8 absolute in f32 arithmetic).
pub(crate) const COS_POLY: [f32; 3] = [0.041_666_646, -0.001_388_731_6, 2.443_315e-5];

/// `ln 2` in two parts for `exp(a) = 2^n exp(a - n ln 2)`: the first has 15 significant
/// bits, so `n * LN2_PARTS[0]` is exact for `|n| < 2^9` (fused or not).
pub(crate) const LN2_PARTS: [f32; 2] = [0.693_145_75, 1.428_606_8e-6];

fn horner(c: &[f32], t: f32) -> f32 {
    c.iter().rev().fold(0.0, |acc, &k| acc * t + k)
}

/// `erfc(a)` for `a >= 1` (not NaN), in f32 as the WGSL computes it.
fn erfc_tail_f32(a: f32) -> f32 {
    let b = a.min(ERFC_CUTOFF);
    let r = horner(&ERFC_TAIL, 1.0 / (1.0 + b));
    let bh = f32::from_bits(b.to_bits() & SPLIT_MASK);
    (-bh * bh).exp() * ((bh - b) * (b + bh)).exp() * r
}

/// `erf(x) - ...`: the `|x| < 1` branch, `x + x Q(x^2)`.
fn erf_small_f32(x: f32) -> f32 {
    x + x * horner(&ERF_SMALL, x * x)
}

/// The error function in f32 (below 2e-7 absolute error; NaN stays NaN, ±inf gives ±1).
pub(crate) fn erf_f32(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else if x.abs() < 1.0 {
        erf_small_f32(x)
    } else {
        (1.0 - erfc_tail_f32(x.abs())).copysign(x)
    }
}

/// `1 - erf(x)` in f32, with relative accuracy where it is tiny (while it is a normal
/// f32: `x` up to 9.1).
pub(crate) fn erfc_f32(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else if x.abs() < 1.0 {
        1.0 - erf_small_f32(x)
    } else if x > 0.0 {
        erfc_tail_f32(x)
    } else {
        2.0 - erfc_tail_f32(-x)
    }
}

/// `P` in `erfc(a) = t exp(P(t) - a^2)`, `t = 1 / (1 + a / 2)`, for every `a >= 0`, lowest
/// degree first: GELU's one-piece form (see [`gelu_erf_f32`]). Interpolated at the
/// Chebyshev nodes of `[0, 1]` against double precision and rounded to f32
/// (`scripts/fit-gelu-erfc.py`): in f32 arithmetic (unfused) `P` is within 3.2e-7 of
/// `ln(erfc(a) exp(a^2) / t)`, which is `erfc`'s relative error.
pub(crate) const GELU_ERFC: [f32; 10] = [
    -1.265_512_3,
    1.000_037_8,
    0.373_714_83,
    0.100_654_2,
    -0.206_139_56,
    0.336_006_46,
    -1.231_761_5,
    1.583_596_7,
    -0.872_641_6,
    0.182_045_1,
];

/// `-1 / sqrt(2)`, the factor of GELU's `erfc` argument, in f32 as the WGSL and the
/// reference use it.
pub(crate) const GELU_ERF_Z: f32 = -std::f32::consts::FRAC_1_SQRT_2;

/// `1 / sqrt(2 pi)`, the normal density's factor.
pub(crate) const INV_SQRT_2PI: f32 = 0.398_942_3;

/// GELU's pieces at `x`: `z = -x / sqrt 2`, `a = |z|`, `t = 1 / (1 + a / 2)` and `P(t)`.
fn gelu_tail_f32(x: f32) -> [f32; 4] {
    let z = x * GELU_ERF_Z;
    let a = z.abs();
    let t = 1.0 / (1.0 + 0.5 * a);
    [z, a, t, horner(&GELU_ERFC, t)]
}

/// `erfc(z)` from `y = erfc(|z|)`.
fn reflect(z: f32, y: f32) -> f32 {
    if z >= 0.0 { y } else { 2.0 - y }
}

/// PyTorch's exact GELU `x Phi(x) = x/2 erfc(-x / sqrt 2)` in f32 as the WGSL computes it:
/// `erfc` in one piece, `t exp(P(t) - z^2)` reflected for negative `z`, one exponential
/// and no branch (a GPU computes both pieces of the two-piece [`erfc_f32`] wherever a
/// subgroup's arguments lie on both sides of 1). Within 4e-7 absolute of the f64
/// reference on `[-14, 14]` (the f32 rounding of `2 - y` near `x = 5`); NaN stays NaN.
pub(crate) fn gelu_erf_f32(x: f32) -> f32 {
    let [z, a, t, p] = gelu_tail_f32(x);
    0.5 * x * reflect(z, t * (p - a * a).exp())
}

/// The derivative of [`gelu_erf_f32`], `Phi(x) + x phi(x)`, in f32 as the WGSL computes
/// it: `exp(-z^2)` is the density's exponential and a factor of the tail, so two
/// exponentials give both. Within 3e-7 absolute of the f64 reference on `[-14, 14]`.
pub(crate) fn gelu_erf_grad_f32(x: f32) -> f32 {
    let [z, a, t, p] = gelu_tail_f32(x);
    let e = (-(a * a)).exp();
    0.5 * reflect(z, t * e * p.exp()) + x * (e * INV_SQRT_2PI)
}

/// Below this the f64 reference sums the series, above it the continued fraction.
const SERIES_LIMIT: f64 = 2.5;

/// `erf(x)` for `|x| < 2.5` by its series of positive terms (no cancellation).
fn erf_series_f64(x: f64) -> f64 {
    let x2 = x * x;
    let (mut term, mut sum) = (x, x);
    for n in 1..400 {
        term *= 2.0 * x2 / (2 * n + 1) as f64;
        sum += term;
        if term.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp()
}

/// `erfc(a)` for `a >= 2.5` by its continued fraction, evaluated from depth 60 upward
/// (converged to the last bit there).
fn erfc_fraction_f64(a: f64) -> f64 {
    let mut f = a;
    for k in (1..=60).rev() {
        f = a + (k as f64 / 2.0) / f;
    }
    (-a * a).exp() / (std::f64::consts::PI.sqrt() * f)
}

/// The error function in f64, to about 1e-15.
pub(crate) fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x.abs() < SERIES_LIMIT {
        erf_series_f64(x)
    } else {
        (1.0 - erfc_fraction_f64(x.abs())).copysign(x)
    }
}

/// `1 - erf(x)` in f64, to about 1e-15 relative.
pub(crate) fn erfc_f64(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x.abs() < SERIES_LIMIT {
        1.0 - erf_series_f64(x)
    } else if x > 0.0 {
        erfc_fraction_f64(x)
    } else {
        2.0 - erfc_fraction_f64(-x)
    }
}

/// PyTorch's exact GELU in f64 (the reference), with the f32 factor of the argument.
pub(crate) fn gelu_erf_f64(x: f64) -> f64 {
    0.5 * x * erfc_f64(x * f64::from(GELU_ERF_Z))
}

/// The derivative of [`gelu_erf_f64`], `Phi(x) + x phi(x)`, in f64.
pub(crate) fn gelu_erf_grad_f64(x: f64) -> f64 {
    let z = x * f64::from(GELU_ERF_Z);
    0.5 * erfc_f64(z) + x * (-z * z).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40-digit values (mpmath) rounded to f64.
    const ERF: [(f64, f64); 4] = [
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.4, 0.999_311_486_103_355),
        (3.0, 0.999_977_909_503_001_4),
    ];
    const ERFC: [(f64, f64); 4] = [
        (-1.0, 1.842_700_792_949_714_8),
        (3.0, 2.209_049_699_858_544e-5),
        (5.0, 1.537_459_794_428_035e-12),
        (10.0, 2.088_487_583_762_545e-45),
    ];

    #[test]
    fn f64_reference_matches_high_precision_values() {
        for (x, want) in ERF {
            assert!((erf_f64(x) - want).abs() < 2e-16, "erf({x})");
            assert!((erf_f64(-x) + want).abs() < 2e-16, "erf(-{x})");
        }
        for (x, want) in ERFC {
            assert!((erfc_f64(x) / want - 1.0).abs() < 1e-14, "erfc({x})");
        }
    }

    #[test]
    fn f32_within_stated_accuracy_of_the_reference() {
        let mut worst_erf = 0f64;
        let mut worst_erfc_rel = 0f64;
        for i in -200_000..=200_000 {
            let x = i as f32 * 5e-5;
            let want = erf_f64(x as f64);
            worst_erf = worst_erf.max((erf_f32(x) as f64 - want).abs());
            let c = erfc_f64(x as f64);
            if c > f32::MIN_POSITIVE as f64 {
                worst_erfc_rel = worst_erfc_rel.max((erfc_f32(x) as f64 - c).abs() / c);
            }
        }
        // relative accuracy while erfc is a normal f32 (up to x = 9.1)
        for i in 0..=81_000 {
            let x = 1.0 + i as f32 * 1e-4;
            let c = erfc_f64(x as f64);
            assert!(c > f32::MIN_POSITIVE as f64);
            worst_erfc_rel = worst_erfc_rel.max((erfc_f32(x) as f64 - c).abs() / c);
        }
        assert!(worst_erf < 2e-7, "erf: {worst_erf:e}");
        assert!(worst_erfc_rel < 1e-6, "erfc: {worst_erfc_rel:e} relative");
    }

    /// The GPU's `sin` and `cos` of `|x|` below [`TRIG_REDUCED_UP_TO`]
    /// (`wgsl_helpers/trig.rs`) in f32, with every product fused into the addition that
    /// follows it (as a driver may contract `a * b + c`) or not.
    fn sin_cos_as_the_gpu(x: f32, fused: bool) -> (f32, f32) {
        let step = |acc: f32, t: f32, c: f32| {
            if fused {
                acc.mul_add(t, c)
            } else {
                acc * t + c
            }
        };
        let poly = |c: &[f32], t: f32| c.iter().rev().fold(0.0, |acc, &k| step(acc, t, k));
        let a = x.abs();
        let k = (a * TWO_OVER_PI).round_ties_even();
        let r = PIO2_PARTS.iter().fold(a, |r, &c| step(-k, c, r));
        let s = r * r;
        let sin = step(r * s, poly(&SIN_POLY, s), r);
        let cos = step(s * s, poly(&COS_POLY, s), 1.0 - 0.5 * s);
        match k as u32 & 3 {
            0 => (sin, cos),
            1 => (cos, -sin),
            2 => (-sin, -cos),
            _ => (-cos, sin),
        }
    }

    /// The reduction's products are exact, so contraction cannot change them, and the
    /// largest reduced argument keeps `k` below 2^16.
    #[test]
    fn trig_reduction_products_are_exact() {
        assert!(((TRIG_REDUCED_UP_TO * TWO_OVER_PI) as f64) < 65535.5);
        for k in 0..1u32 << 16 {
            for c in &PIO2_PARTS[..2] {
                assert_eq!((k as f32 * c) as f64, k as f64 * *c as f64, "{k} * {c}");
            }
        }
        for n in 0..=128u32 {
            assert_eq!(
                (n as f32 * LN2_PARTS[0]) as f64,
                n as f64 * LN2_PARTS[0] as f64
            );
        }
        let pio2 = PIO2_PARTS.iter().map(|&c| c as f64).sum::<f64>();
        assert!((pio2 - std::f64::consts::FRAC_PI_2).abs() < 2e-12, "{pio2}");
    }

    /// The GPU's algorithm is within 1e-7 of `sin`/`cos` up to 1e5, and `tan` (their
    /// quotient) within 2.5e-7 relative plus an ulp of the argument through `tan'`, with
    /// and without contraction.
    #[test]
    fn trig_algorithm_is_accurate_fused_or_not() {
        let mut x = 1e-6f32;
        let mut xs = Vec::new();
        while x < TRIG_REDUCED_UP_TO {
            xs.push(x);
            x = x * 1.0007 + 1e-7;
        }
        for fused in [false, true] {
            let (mut worst, mut worst_tan) = (0f64, 0f64);
            for &x in &xs {
                for x in [x, -x] {
                    let (s, c) = sin_cos_as_the_gpu(x, fused);
                    // sin and tan are odd: the GPU flips the sign of sin |x|
                    let s = if x < 0.0 { -s } else { s };
                    let xd = x as f64;
                    worst = worst.max((s as f64 - xd.sin()).abs());
                    worst = worst.max((c as f64 - xd.cos()).abs());
                    let (t, want) = ((s / c) as f64, xd.tan());
                    let ulp = (x.abs().next_up() - x.abs()) as f64;
                    let bound = 2.5e-7 * want.abs() + (1.0 + want * want) * ulp;
                    worst_tan = worst_tan.max((t - want).abs() / bound);
                }
            }
            assert!(worst < 1e-7, "fused {fused}: {worst:e}");
            assert!(
                worst_tan < 1.0,
                "fused {fused}: tan at {worst_tan} of its bound"
            );
        }
    }

    #[test]
    fn corners_are_exact() {
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert!(erf_f32(f32::NAN).is_nan());
        assert_eq!(erf_f32(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(erfc_f32(f32::INFINITY), 0.0);
        assert_eq!(erfc_f32(f32::NEG_INFINITY), 2.0);
        assert_eq!(erfc_f32(0.0), 1.0);
        assert!(erfc_f32(f32::NAN).is_nan());
        assert_eq!(erf_f64(f64::INFINITY), 1.0);
        assert_eq!(erfc_f64(f64::INFINITY), 0.0);
    }
}
