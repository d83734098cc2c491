//! The kernel the page launches: a function with a transcendental, a product of inputs
//! and a branch, so the value, both partials and the vector-Jacobian product each
//! exercise several code paths of the generated WGSL.

use tang_runtime::prelude::*;

/// `softplus(x) * y` for positive `x`, `x * y` otherwise (a kinked gate whose slope in
/// `x` jumps at 0). Its CPU twin is the function itself; `gated_softplus::vjp` is the
/// CPU twin of the generated backward kernel.
#[fused_grad]
pub fn gated_softplus(x: f32, y: f32) -> f32 {
    if x > 0.0 {
        (1.0 + x.exp()).ln() * y
    } else {
        x * y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_twins_agree_with_finite_differences() {
        // The same function in f64, so the finite differences are not limited by f32.
        let f = |v: &[f64]| {
            if v[0] > 0.0 {
                (1.0 + v[0].exp()).ln() * v[1]
            } else {
                v[0] * v[1]
            }
        };
        for (x, y) in [(0.7f32, -1.3f32), (-0.4, 2.0), (1.9, 0.5)] {
            let (value, [dx, dy]) = gated_softplus::grad(x, y);
            assert_eq!(value, gated_softplus(x, y));
            let point = [f64::from(x), f64::from(y)];
            let num = tang_testing::numeric_gradient(f, &point, 1e-4);
            assert!(
                tang_testing::close(f64::from(dx), num[0], 1e-4, 1e-4),
                "{dx} vs {}",
                num[0]
            );
            assert!(
                tang_testing::close(f64::from(dy), num[1], 1e-4, 1e-4),
                "{dy} vs {}",
                num[1]
            );
            assert_eq!(gated_softplus::vjp(x, y, 2.0), [2.0 * dx, 2.0 * dy]);
        }
    }
}
