//! Numerically stable scalar functions as `f32` methods, for kernels' CPU builds.
//!
//! A `#[kernel]` function is ordinary Rust: it must compile and run on the CPU exactly as
//! written. The stable extras of the kernel language (`x.sigmoid()`, `x.softplus()`, ...)
//! are therefore methods of [`StableExt`], implemented for `f32` with the same arithmetic
//! as the IR's CPU evaluation ([`Op::eval`]), so a function's CPU result and its kernel's
//! CPU twin agree bit for bit. Bring the trait into scope with
//! `use tang_runtime::StableExt;` (or `use tang_runtime::prelude::*;`).
//!
//! ```
//! use tang_expr::ext::StableExt;
//!
//! assert_eq!(0.0f32.sigmoid(), 0.5);
//! assert!(1e4f32.softplus().is_finite());
//! assert_eq!((-1e4f32).log_sigmoid(), -1e4);
//! ```

use crate::op::Op;

/// Numerically stable functions of the kernel language, as `f32` methods. Each has a
/// hand-written derivative in the IR ([`Op::partials`]) and a stable WGSL form.
pub trait StableExt: Copy {
    /// `1 / (1 + exp(-x))`, without overflow for any input.
    fn sigmoid(self) -> Self;
    /// `ln(1 + exp(x))`, without overflow (`softplus(1e4) = 1e4`).
    fn softplus(self) -> Self;
    /// `ln(sigmoid(x)) = -softplus(-x)`, without overflow.
    fn log_sigmoid(self) -> Self;
    /// `x * sigmoid(x)` (also called swish).
    fn silu(self) -> Self;
    /// The tanh approximation of GELU:
    /// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, finite for every finite input.
    fn gelu_tanh(self) -> Self;
    /// `ln(exp(self) + exp(other))`, without overflow.
    fn logaddexp(self, other: Self) -> Self;
    /// `self` in value; a constant to differentiation (its derivative is zero).
    fn stop_gradient(self) -> Self;
}

impl StableExt for f32 {
    fn sigmoid(self) -> f32 {
        Op::Sigmoid.eval(&[self])
    }
    fn softplus(self) -> f32 {
        Op::Softplus.eval(&[self])
    }
    fn log_sigmoid(self) -> f32 {
        Op::LogSigmoid.eval(&[self])
    }
    fn silu(self) -> f32 {
        Op::Silu.eval(&[self])
    }
    fn gelu_tanh(self) -> f32 {
        Op::GeluTanh.eval(&[self])
    }
    fn logaddexp(self, other: f32) -> f32 {
        Op::LogAddExp.eval(&[self, other])
    }
    fn stop_gradient(self) -> f32 {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_ir_and_stays_finite() {
        for x in [-1e4f32, -20.0, -1.0, -1e-6, 0.0, 1e-6, 1.0, 20.0, 1e4] {
            assert_eq!(x.sigmoid(), Op::Sigmoid.eval(&[x]));
            assert_eq!(x.silu(), Op::Silu.eval(&[x]));
            for v in [
                x.sigmoid(),
                x.softplus(),
                x.log_sigmoid(),
                x.silu(),
                x.gelu_tanh(),
                x.logaddexp(-x),
            ] {
                assert!(v.is_finite(), "{x}: {v}");
            }
        }
        assert_eq!(2.0f32.logaddexp(2.0), 2.0 + std::f32::consts::LN_2);
        assert_eq!(3.5f32.stop_gradient(), 3.5);
        assert_eq!((-1e4f32).softplus(), 0.0);
    }
}
