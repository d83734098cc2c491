//! CPU evaluation in the precision of the caller: the [`Float`] trait over `f32` and `f64`
//! and the elementary functions `Op::eval` uses, each rounding as Rust's own `f32`
//! methods do so that the f32 evaluation of a graph matches the CPU build of its function.

/// The float operations CPU evaluation needs, for `f32` and `f64`.
pub trait Float: Copy + PartialOrd + std::fmt::Debug {
    /// Converts from f64 (rounding for f32).
    fn from_f64(v: f64) -> Self;
    /// Converts to f64 (exact).
    fn to_f64(self) -> f64;
    /// `1 / (1 + exp(-x))`, computed without overflow.
    fn sigmoid(self) -> Self {
        let x = self.to_f64();
        Self::from_f64(if x >= 0.0 {
            1.0 / (1.0 + (-x).exp())
        } else {
            let e = x.exp();
            e / (1.0 + e)
        })
    }
}

impl Float for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn sigmoid(self) -> Self {
        if self >= 0.0 {
            1.0 / (1.0 + (-self).exp())
        } else {
            let e = self.exp();
            e / (1.0 + e)
        }
    }
}

impl Float for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// Evaluates elementary functions in the precision of `F`. f32 arithmetic rounds every
/// step to f32 exactly as Rust's `f32` methods do, so the f32 evaluation of a graph
/// matches the CPU build of the function it came from.
macro_rules! float_fn {
    ($name:ident, $f:ident) => {
        pub(crate) fn $name<F: Float>(x: F) -> F {
            if std::mem::size_of::<F>() == 4 {
                F::from_f64((x.to_f64() as f32).$f() as f64)
            } else {
                F::from_f64(x.to_f64().$f())
            }
        }
    };
}
float_fn!(f_sqrt, sqrt);
float_fn!(f_exp, exp);
float_fn!(f_ln, ln);
float_fn!(f_exp2, exp2);
float_fn!(f_log2, log2);
float_fn!(f_sin, sin);
float_fn!(f_cos, cos);
float_fn!(f_tan, tan);
float_fn!(f_tanh, tanh);
float_fn!(f_abs, abs);
float_fn!(f_signum, signum);
float_fn!(f_floor, floor);
float_fn!(f_ceil, ceil);
float_fn!(f_round, round);
float_fn!(f_trunc, trunc);
float_fn!(f_ln_1p, ln_1p);

pub(crate) fn is_f32<F: Float>() -> bool {
    std::mem::size_of::<F>() == 4
}

/// Binary arithmetic in the precision of `F` (f32 results are rounded each step).
pub(crate) fn bin<F: Float>(
    a: F,
    b: F,
    f: impl Fn(f64, f64) -> f64,
    f32f: impl Fn(f32, f32) -> f32,
) -> F {
    if is_f32::<F>() {
        F::from_f64(f32f(a.to_f64() as f32, b.to_f64() as f32) as f64)
    } else {
        F::from_f64(f(a.to_f64(), b.to_f64()))
    }
}

pub(crate) fn b2f<F: Float>(b: bool) -> F {
    F::from_f64(if b { 1.0 } else { 0.0 })
}

pub(crate) fn truthy<F: Float>(x: F) -> bool {
    x.to_f64() != 0.0
}
