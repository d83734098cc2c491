//! CPU evaluation in the precision of the caller: the [`Float`] trait over `f32` and `f64`,
//! whose methods are the elementary functions the op table evaluates with. The `f32`
//! methods are Rust's own `f32` methods (so the f32 evaluation of a graph matches the CPU
//! build of the function it came from bit for bit); the `f64` ones are the reference the
//! accuracy and finite-difference tests measure against.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::op::special;

macro_rules! float_methods {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// The float operations CPU evaluation needs, for `f32` and `f64`: conversions,
        /// arithmetic, and the elementary functions of the kernel language with Rust's
        /// meaning (NaN in, NaN out; `min`/`max` return the other argument for a NaN).
        pub trait Float:
            Copy
            + PartialOrd
            + std::fmt::Debug
            + Add<Output = Self>
            + Sub<Output = Self>
            + Mul<Output = Self>
            + Div<Output = Self>
            + Neg<Output = Self>
        {
            /// Converts from f64 (rounding for f32).
            fn from_f64(v: f64) -> Self;
            /// Converts to f64 (exact).
            fn to_f64(self) -> f64;
            /// `self^n` by Rust's `powi`.
            fn powi(self, n: i32) -> Self;
            /// `self^e` by Rust's `powf`.
            fn powf(self, e: Self) -> Self;
            /// `self * a + b` with one rounding.
            fn mul_add(self, a: Self, b: Self) -> Self;
            /// The smaller argument; the other one if either is NaN.
            fn min(self, o: Self) -> Self;
            /// The larger argument; the other one if either is NaN.
            fn max(self, o: Self) -> Self;
            /// The angle of the point `(x, self)`, in `[-pi, pi]`.
            fn atan2(self, x: Self) -> Self;
            /// `sqrt(self^2 + o^2)` without overflow.
            fn hypot(self, o: Self) -> Self;
            /// `|self|` with the sign of `s`.
            fn copysign(self, s: Self) -> Self;
            /// The error function.
            fn erf(self) -> Self;
            /// `1 - erf(self)`, accurate where it is tiny.
            fn erfc(self) -> Self;
            /// PyTorch's exact GELU, `self Phi(self)` (f32: the GPU's one-piece form).
            fn gelu_exact(self) -> Self;
            /// The derivative of [`Float::gelu_exact`], `Phi(self) + self phi(self)`.
            fn gelu_exact_grad(self) -> Self;
            $($(#[$doc])* fn $name(self) -> Self;)*
        }

        impl Float for f32 {
            fn from_f64(v: f64) -> Self { v as f32 }
            fn to_f64(self) -> f64 { self as f64 }
            fn powi(self, n: i32) -> Self { f32::powi(self, n) }
            fn powf(self, e: Self) -> Self { f32::powf(self, e) }
            fn mul_add(self, a: Self, b: Self) -> Self { f32::mul_add(self, a, b) }
            fn min(self, o: Self) -> Self { f32::min(self, o) }
            fn max(self, o: Self) -> Self { f32::max(self, o) }
            fn atan2(self, x: Self) -> Self { f32::atan2(self, x) }
            fn hypot(self, o: Self) -> Self { f32::hypot(self, o) }
            fn copysign(self, s: Self) -> Self { f32::copysign(self, s) }
            fn erf(self) -> Self { special::erf_f32(self) }
            fn erfc(self) -> Self { special::erfc_f32(self) }
            fn gelu_exact(self) -> Self { special::gelu_erf_f32(self) }
            fn gelu_exact_grad(self) -> Self { special::gelu_erf_grad_f32(self) }
            $(fn $name(self) -> Self { f32::$name(self) })*
        }

        impl Float for f64 {
            fn from_f64(v: f64) -> Self { v }
            fn to_f64(self) -> f64 { self }
            fn powi(self, n: i32) -> Self { f64::powi(self, n) }
            fn powf(self, e: Self) -> Self { f64::powf(self, e) }
            fn mul_add(self, a: Self, b: Self) -> Self { f64::mul_add(self, a, b) }
            fn min(self, o: Self) -> Self { f64::min(self, o) }
            fn max(self, o: Self) -> Self { f64::max(self, o) }
            fn atan2(self, x: Self) -> Self { f64::atan2(self, x) }
            fn hypot(self, o: Self) -> Self { f64::hypot(self, o) }
            fn copysign(self, s: Self) -> Self { f64::copysign(self, s) }
            fn erf(self) -> Self { special::erf_f64(self) }
            fn erfc(self) -> Self { special::erfc_f64(self) }
            fn gelu_exact(self) -> Self { special::gelu_erf_f64(self) }
            fn gelu_exact_grad(self) -> Self { special::gelu_erf_grad_f64(self) }
            $(fn $name(self) -> Self { f64::$name(self) })*
        }
    };
}

float_methods! {
    /// Square root.
    sqrt,
    /// `e^self`.
    exp,
    /// Natural logarithm.
    ln,
    /// `2^self`.
    exp2,
    /// Base-2 logarithm.
    log2,
    /// Sine.
    sin,
    /// Cosine.
    cos,
    /// Tangent.
    tan,
    /// Hyperbolic tangent.
    tanh,
    /// Absolute value.
    abs,
    /// 1 for +0 and above, -1 for -0 and below, NaN for NaN.
    signum,
    /// Largest integer not above.
    floor,
    /// Smallest integer not below.
    ceil,
    /// Nearest integer, halves away from zero.
    round,
    /// Integer part.
    trunc,
    /// `ln(1 + self)`, accurate near 0.
    ln_1p,
    /// `e^self - 1`, accurate near 0.
    exp_m1,
    /// Arctangent.
    atan,
    /// Arcsine.
    asin,
    /// Arccosine.
    acos,
    /// Hyperbolic sine.
    sinh,
    /// Hyperbolic cosine.
    cosh,
    /// Inverse hyperbolic sine.
    asinh,
    /// Inverse hyperbolic cosine.
    acosh,
    /// Inverse hyperbolic tangent.
    atanh,
    /// Cube root.
    cbrt,
    /// `self - self.trunc()`, the fractional part with the sign of `self`.
    fract,
}

/// `1 / (1 + exp(-x))`, computed without overflow (the exponent is never positive).
pub(crate) fn sigmoid<F: Float>(x: F) -> F {
    let one = F::from_f64(1.0);
    if x >= F::from_f64(0.0) {
        one / (one + (-x).exp())
    } else {
        let e = x.exp();
        e / (one + e)
    }
}

/// 1 for true, 0 for false (how CPU evaluation carries booleans).
pub(crate) fn b2f<F: Float>(b: bool) -> F {
    F::from_f64(if b { 1.0 } else { 0.0 })
}

/// Whether a boolean carried as a float is true.
pub(crate) fn truthy<F: Float>(x: F) -> bool {
    x.to_f64() != 0.0
}
