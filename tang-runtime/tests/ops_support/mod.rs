//! Helpers of the op tests: f64 CPU references over row-major shapes, central finite
//! differences in f64, and tolerant comparison.

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

/// Asserts `|got - want| <= atol + rtol * |want|` elementwise (NaN matches NaN).
pub fn assert_close(what: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g);
        if g.is_nan() && w.is_nan() {
            continue;
        }
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what}: element {i}: got {g}, want {w}"
        );
    }
}

/// The gradient of `L(x) = Σ w · f(x)` by central differences in f64, with step `h`.
pub fn finite_diff(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], w: &[f64], h: f64) -> Vec<f64> {
    let loss = |x: &[f64]| -> f64 { f(x).iter().zip(w).map(|(a, b)| a * b).sum() };
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            let x0 = xp[i];
            xp[i] = x0 + h;
            let up = loss(&xp);
            xp[i] = x0 - h;
            let down = loss(&xp);
            xp[i] = x0;
            (up - down) / (2.0 * h)
        })
        .collect()
}
