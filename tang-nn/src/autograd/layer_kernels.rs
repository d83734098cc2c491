//! Elementwise functions of the layers and losses, as `#[fused_grad]` kernels: the
//! forward is the generated `launch`, the backward the generated `launch_vjp` (no
//! hand-written derivative).

// The CPU functions are the kernels' source and reference; only the generated kernels
// are called here.
#![allow(dead_code)]

use tang_runtime::prelude::*;

/// `x²`: the elementwise part of the squared error.
#[fused_grad]
pub fn square(x: f32) -> f32 {
    x * x
}

/// Binary cross-entropy of logit `x` against target `y`, `softplus(x) - x y`
/// (= `-[y log σ(x) + (1 - y) log(1 - σ(x))]` without overflow for large `|x|`).
#[fused_grad]
pub fn bce_with_logits(x: f32, y: f32) -> f32 {
    x.softplus() - x * y
}

/// `x * m` with `m` a constant (a mask, a reciprocal count): only `x` gets a gradient.
#[fused_grad(wrt(x))]
pub fn mul_by(x: f32, m: f32) -> f32 {
    x * m
}

/// `1 / x`, for the reciprocal of a count that stays on the GPU.
#[kernel]
pub fn recip(x: f32) -> f32 {
    1.0 / x
}
