//! Helpers of the op tests: row-major coordinates for the f64 CPU references, and the
//! gradient of a weighted sum of outputs by central differences (`tang_testing`).

#![allow(dead_code)]

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// The coordinates of flat position `i` in `shape`.
pub fn coords(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        c[d] = i % shape[d];
        i /= shape[d];
    }
    c
}

/// The flat position of coordinates `c` in `shape`.
pub fn flat(c: &[usize], shape: &[usize]) -> usize {
    c.iter().zip(strides(shape)).map(|(a, s)| a * s).sum()
}

/// Widens to f64.
pub fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// The gradient of `L(x) = Σ w · f(x)` by central differences in f64 (step `h`, scaled by
/// `max(|x_i|, 1)`).
pub fn finite_diff(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], w: &[f64], h: f64) -> Vec<f64> {
    tang_testing::numeric_gradient(|x| f(x).iter().zip(w).map(|(a, b)| a * b).sum(), x, h)
}
