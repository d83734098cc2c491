//! Elementwise functions of the autograd ops, as `#[fused_grad]` kernels: the forward is
//! the generated `launch`, the backward the generated `launch_vjp` (no hand-written
//! derivative).

// The CPU functions are the kernels' source and reference; only the generated kernels
// are called here.
#![allow(dead_code)]

use tang_runtime::prelude::*;

/// ReLU. A branch rather than `x.max(0.0)` so the derivative at exactly 0 is 0, as in
/// PyTorch.
#[fused_grad]
pub fn relu(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.0 }
}

/// GELU, tanh form (PyTorch's `gelu(approximate="tanh")`).
#[fused_grad]
pub fn gelu(x: f32) -> f32 {
    x.gelu_tanh()
}

/// GELU, exact form `x * Φ(x)` with the error function (PyTorch's `nn.GELU()` default,
/// `approximate="none"`; nanoGPT's MLP uses it).
#[fused_grad]
pub fn gelu_erf(x: f32) -> f32 {
    x.gelu_erf()
}

/// `x * s`, `s` one element broadcast over `x`: scales a gradient by an upstream scalar
/// that stays on the GPU.
#[kernel]
pub fn scale_by(x: f32, s: f32) -> f32 {
    x * s
}
