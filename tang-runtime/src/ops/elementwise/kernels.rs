//! The elementwise ops' scalar functions, each a `#[fused_grad]` function: the macro turns
//! it into its forward kernel, its backward (VJP) kernel and [`FusedFn`](crate::FusedFn)
//! constant `f::FUSED`, which [`crate::ops`] launches (`ops::exp(&x)` is
//! `exp::FUSED.forward(&[&x], &[])`). The functions themselves stay callable on the CPU.
//!
//! PyTorch's semantics, written so that the derivative the macro generates is PyTorch's
//! too: NaN propagates through every op (`maximum`, `minimum`, `clamp`, `relu` included);
//! `maximum`/`minimum` split the gradient evenly between equal arguments; `clamp` passes
//! the gradient where `min <= x <= max`; `relu`'s derivative at 0 is 0 and `leaky_relu`'s
//! is the slope; `abs`'s is 0 at 0.

// The bodies are the kernels' source and need the kernel language's extras in scope.
use crate::StableExt;
use crate::fused_grad;

/// `a + b`.
#[fused_grad]
pub fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// `a - b`.
#[fused_grad]
pub fn sub(a: f32, b: f32) -> f32 {
    a - b
}

/// `a * b`.
#[fused_grad]
pub fn mul(a: f32, b: f32) -> f32 {
    a * b
}

/// `a / b`.
#[fused_grad]
pub fn div(a: f32, b: f32) -> f32 {
    a / b
}

/// `x + other` for a number `other`.
#[fused_grad]
pub fn add_scalar(x: f32, #[uniform] other: f32) -> f32 {
    x + other
}

/// `x - other` for a number `other`.
#[fused_grad]
pub fn sub_scalar(x: f32, #[uniform] other: f32) -> f32 {
    x - other
}

/// `x * other` for a number `other`.
#[fused_grad]
pub fn mul_scalar(x: f32, #[uniform] other: f32) -> f32 {
    x * other
}

/// `x / other` for a number `other`.
#[fused_grad]
pub fn div_scalar(x: f32, #[uniform] other: f32) -> f32 {
    x / other
}

/// `-x`.
#[fused_grad]
pub fn neg(x: f32) -> f32 {
    -x
}

/// `|x|`.
#[fused_grad]
pub fn abs(x: f32) -> f32 {
    x.abs()
}

/// `e^x`.
#[fused_grad]
pub fn exp(x: f32) -> f32 {
    x.exp()
}

/// The natural logarithm.
#[fused_grad]
pub fn log(x: f32) -> f32 {
    x.ln()
}

/// `√x`.
#[fused_grad]
pub fn sqrt(x: f32) -> f32 {
    x.sqrt()
}

/// `1 / √x`.
#[fused_grad]
pub fn rsqrt(x: f32) -> f32 {
    x.rsqrt()
}

/// `a^b` elementwise (a tensor exponent).
#[fused_grad]
pub fn pow(a: f32, b: f32) -> f32 {
    a.powf(b)
}

/// `x^exponent` for a number `exponent`.
#[fused_grad]
pub fn pow_scalar(x: f32, #[uniform] exponent: f32) -> f32 {
    x.powf(exponent)
}

/// The larger of `a` and `b`; NaN if either is; half the gradient to each when equal.
#[fused_grad]
pub fn maximum(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else if b > a {
        b
    } else {
        a * 0.5 + b * 0.5
    }
}

/// The smaller of `a` and `b`; NaN if either is; half the gradient to each when equal.
#[fused_grad]
pub fn minimum(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else if b < a {
        b
    } else {
        a * 0.5 + b * 0.5
    }
}

/// `min(max(x, min), max)` (PyTorch's order: `max` wins when `min > max`); NaN stays NaN.
#[fused_grad]
pub fn clamp(x: f32, #[uniform] min: f32, #[uniform] max: f32) -> f32 {
    let low = if x < min { min } else { x };
    if low > max { max } else { low }
}

/// `a` where `mask` is nonzero, else `b` (the mask as 0.0 / 1.0).
#[fused_grad(wrt(a, b))]
pub fn where_cond(mask: f32, a: f32, b: f32) -> f32 {
    if mask != 0.0 { a } else { b }
}

/// `max(x, 0)`.
#[fused_grad]
pub fn relu(x: f32) -> f32 {
    if x <= 0.0 { 0.0 } else { x }
}

/// `x` for positive `x`, else `negative_slope * x`.
#[fused_grad]
pub fn leaky_relu(x: f32, #[uniform] negative_slope: f32) -> f32 {
    if x > 0.0 { x } else { x * negative_slope }
}

/// `x` for positive `x`, else `alpha * (e^x - 1)`.
#[fused_grad]
pub fn elu(x: f32, #[uniform] alpha: f32) -> f32 {
    if x > 0.0 { x } else { alpha * x.exp_m1() }
}

/// `1 / (1 + e^-x)`.
#[fused_grad]
pub fn sigmoid(x: f32) -> f32 {
    x.sigmoid()
}

/// The hyperbolic tangent.
#[fused_grad]
pub fn tanh(x: f32) -> f32 {
    x.tanh()
}

/// `x * sigmoid(x)`.
#[fused_grad]
pub fn silu(x: f32) -> f32 {
    x.silu()
}

/// `ln(1 + e^(beta x)) / beta`, and `x` itself where `beta x > threshold`.
#[fused_grad]
pub fn softplus(x: f32, #[uniform] beta: f32, #[uniform] threshold: f32) -> f32 {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().ln_1p() / beta
    }
}

/// GELU, tanh form (PyTorch's `approximate="tanh"`).
#[fused_grad]
pub fn gelu(x: f32) -> f32 {
    x.gelu_tanh()
}

/// GELU, exact form `x Φ(x)` with the error function (PyTorch's default).
#[fused_grad]
pub fn gelu_erf(x: f32) -> f32 {
    x.gelu_erf()
}

#[cfg(test)]
mod tests {
    //! The derivative conventions the module docs promise, on the CPU twins (emitted from
    //! the same simplified graphs as the GPU kernels).

    #[test]
    fn derivatives_at_the_kinks_are_pytorchs() {
        assert_eq!(super::relu::grad(0.0).1, [0.0]);
        assert_eq!(super::leaky_relu::grad(0.0, 0.01).1, [0.01]);
        assert_eq!(super::abs::grad(0.0).1, [0.0]);
        // clamp passes the gradient on the closed interval, not outside it.
        assert_eq!(super::clamp::grad(-0.5, -0.5, 0.5).1, [1.0]);
        assert_eq!(super::clamp::grad(0.5, -0.5, 0.5).1, [1.0]);
        assert_eq!(super::clamp::grad(0.75, -0.5, 0.5).1, [0.0]);
        // max wins when the bounds cross, as in PyTorch.
        assert_eq!(super::clamp::grad(0.0, 1.0, -1.0).0, -1.0);
        assert_eq!(super::maximum::grad(2.0, 2.0).1, [0.5, 0.5]);
        assert_eq!(super::minimum::grad(2.0, 2.0).1, [0.5, 0.5]);
        assert_eq!(super::maximum::grad(3.0, 2.0).1, [1.0, 0.0]);
        assert_eq!(super::where_cond::grad(1.0, 2.0, 3.0), (2.0, [1.0, 0.0]));
    }

    #[test]
    fn nan_propagates_where_pytorch_propagates_it() {
        let nan = f32::NAN;
        assert!(super::maximum(nan, 1.0).is_nan() && super::maximum(1.0, nan).is_nan());
        assert!(super::minimum(nan, 1.0).is_nan() && super::minimum(1.0, nan).is_nan());
        assert!(super::clamp(nan, 0.0, 1.0).is_nan());
        assert!(super::relu(nan).is_nan());
    }
}
