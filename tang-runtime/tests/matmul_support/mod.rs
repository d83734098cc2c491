//! The f64 reference of the matmul tests and their tolerance, shared by the plain and
//! the fused-store suites.

/// C[b] = op(A[b]) op(B[b]) in f64, plus for each element the sum of |products| (the
/// scale of its rounding error). A batch stride of 0 broadcasts.
#[allow(clippy::too_many_arguments)]
pub fn reference(
    a: &[f32],
    b: &[f32],
    (m, n, k, batch): (usize, usize, usize, usize),
    (ta, tb): (bool, bool),
    (sa, sb): (usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; batch * m * n];
    let mut s = vec![0.0; batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let (mut acc, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = a[bi * sa + if ta { p * m + i } else { i * k + p }] as f64;
                    let y = b[bi * sb + if tb { j * k + p } else { p * n + j }] as f64;
                    acc += x * y;
                    mag += (x * y).abs();
                }
                c[(bi * m + i) * n + j] = acc;
                s[(bi * m + i) * n + j] = mag;
            }
        }
    }
    (c, s)
}

pub fn assert_close(got: &[f32], want: &[f64], scale: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let tol = 1e-5 + 2e-6 * s + 1e-5 * w.abs();
        assert!(
            (g as f64 - w).abs() <= tol,
            "{what}: element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}
