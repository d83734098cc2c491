//! Test support shared by tang's test suites (a dev-dependency only): one seeded random
//! generator ([`Rng`]), one tolerance check ([`close`], [`assert_close`]), the devices a
//! GPU test runs on ([`devices`]: one with wgpu's runtime checks off, as tang runs by
//! default, and one with them on) and central finite differences ([`central_difference`],
//! [`numeric_gradient`], [`vjp_at`]).

use tang_runtime::{Device, DeviceOptions};

/// A small, seeded, deterministic random generator (SplitMix64), so failures reproduce
/// without a random-number crate.
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

    /// A uniform float in `[-a, a)`.
    pub fn uni(&mut self, a: f32) -> f32 {
        self.range_f32(-a, a)
    }

    /// `n` uniform floats in `[-a, a)`.
    pub fn vec(&mut self, n: usize, a: f32) -> Vec<f32> {
        (0..n).map(|_| self.uni(a)).collect()
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// `n` distinct values in `[-1, 1)`, `2/n` apart, in random order: every maximum is
    /// unique, and finite differences with a step below `1/n` never cross a tie.
    pub fn distinct(&mut self, n: usize) -> Vec<f32> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, self.below(i + 1));
        }
        p.iter()
            .map(|&k| (k as f64 * 2.0 / n as f64 - 1.0) as f32)
            .collect()
    }
}

/// `n` seeded uniform floats in `[-1, 1)`.
pub fn random(n: usize, seed: u64) -> Vec<f32> {
    Rng::new(seed).vec(n, 1.0)
}

/// Whether `got` is within `atol + rtol * |want|` of `want`. NaN matches only NaN and an
/// infinity only the same infinity.
pub fn close(got: f64, want: f64, atol: f64, rtol: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    (got - want).abs() <= atol + rtol * want.abs()
}

/// Asserts that `got` (from the GPU) matches the f64 reference `want` elementwise within
/// `atol + rtol * |want|` (see [`close`]); the message names `what` and the element.
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            close(f64::from(g), w, atol, rtol),
            "{what}: element {i}: got {g}, want {w} (atol {atol}, rtol {rtol})"
        );
    }
}

/// The devices a GPU test runs on: the default adapter without wgpu's runtime checks (how
/// tang runs its kernels) and with them (`DeviceOptions::checked`), so a kernel that only
/// works because an out-of-range access is clamped, or only when it is not, fails one.
/// The checked one also leaves 64-bit shader integers off (`DeviceOptions::shader_int64`),
/// so the random kernels run in both forms: the 64-bit products where the adapter has
/// them, the portable 32-bit form WebGPU in browsers has.
///
/// # Panics
/// When no adapter is available: install a Vulkan driver (lavapipe at least:
/// `apt-get install mesa-vulkan-drivers`).
pub fn devices() -> Vec<Device> {
    [false, true]
        .into_iter()
        .map(|checked| {
            Device::with_options(DeviceOptions {
                checked,
                shader_int64: !checked,
                ..DeviceOptions::default()
            })
            .expect("a Vulkan adapter (lavapipe at least: apt-get install mesa-vulkan-drivers)")
        })
        .collect()
}

/// The default device (runtime checks as the environment says).
///
/// # Panics
/// As [`devices`].
pub fn device() -> Device {
    Device::new()
        .expect("a Vulkan adapter (lavapipe at least: apt-get install mesa-vulkan-drivers)")
}

/// The central difference `(f(x + h e_i) - f(x - h e_i)) / 2h` of `f` in coordinate `i`
/// at `x`, in f64, with `h = step * max(|x_i|, 1)`.
pub fn central_difference(f: impl Fn(&[f64]) -> f64, x: &[f64], i: usize, step: f64) -> f64 {
    let h = step * x[i].abs().max(1.0);
    let mut p = x.to_vec();
    p[i] = x[i] + h;
    let up = f(&p);
    p[i] = x[i] - h;
    let down = f(&p);
    (up - down) / (2.0 * h)
}

/// The gradient of `f` at `x` by [`central_difference`] in every coordinate.
pub fn numeric_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], step: f64) -> Vec<f64> {
    (0..x.len())
        .map(|i| central_difference(&f, x, i, step))
        .collect()
}

/// The vector-Jacobian product `g^T J_f(x)` by central differences, at the coordinates
/// `at` (what a backward pass must produce for the upstream gradient `g`), in f64, with
/// `h = step * max(|x_i|, 1)`.
pub fn vjp_at(
    f: impl Fn(&[f64]) -> Vec<f64>,
    x: &[f64],
    g: &[f64],
    at: &[usize],
    step: f64,
) -> Vec<f64> {
    let contracted = |p: &[f64]| -> f64 { f(p).iter().zip(g).map(|(a, b)| a * b).sum() };
    at.iter()
        .map(|&i| central_difference(contracted, x, i, step))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_seeded_and_in_range() {
        let a: Vec<u64> = (0..4)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .scan(Rng::new(7), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        let mut r = Rng::new(1);
        assert!(
            (0..1000)
                .map(|_| r.uni(2.0))
                .all(|v| (-2.0..2.0).contains(&v))
        );
        assert!((0..1000).map(|_| r.below(3)).all(|v| v < 3));
    }

    #[test]
    fn close_treats_nan_and_infinity_exactly() {
        assert!(close(1.0 + 1e-7, 1.0, 0.0, 1e-6));
        assert!(!close(1.1, 1.0, 0.0, 1e-6));
        assert!(close(f64::NAN, f64::NAN, 0.0, 0.0));
        assert!(!close(0.0, f64::NAN, 1.0, 1.0));
        assert!(!close(f64::INFINITY, 1e308, 1e308, 1.0));
    }

    #[test]
    fn vjp_contracts_the_jacobian() {
        // f(x) = (x0 * x1, x1^2): J = [[x1, x0], [0, 2 x1]].
        let f = |x: &[f64]| vec![x[0] * x[1], x[1] * x[1]];
        let v = vjp_at(f, &[2.0, 3.0], &[1.0, 0.5], &[0, 1], 1e-5);
        assert!((v[0] - 3.0).abs() < 1e-8, "{v:?}");
        assert!((v[1] - (2.0 + 3.0)).abs() < 1e-8, "{v:?}");
    }

    #[test]
    fn central_differences_match_a_known_gradient() {
        let f = |x: &[f64]| x[0] * x[0] * x[1] + x[1].sin();
        let g = numeric_gradient(f, &[1.5, 0.3], 1e-5);
        assert!((g[0] - 2.0 * 1.5 * 0.3).abs() < 1e-8, "{g:?}");
        assert!((g[1] - (1.5 * 1.5 + 0.3f64.cos())).abs() < 1e-8, "{g:?}");
    }
}
