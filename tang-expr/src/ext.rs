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

pub use crate::op::StableExt;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::Op;

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
