//! A library of kernels written in the kernel language: activations, losses and optimizer
//! updates, each compiled at build time by `#[kernel]` / `#[fused_grad]`. The tests check
//! every one's shaders (naga), derivatives (finite differences) and GPU results (against
//! the CPU twins).

use tang_runtime::prelude::*;

// ---------------------------------------------------------------- activations

/// `max(x, 0)`; the derivative at 0 is 0.
#[fused_grad]
pub fn relu(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.0 }
}

/// `x` above zero, `0.01 x` below.
#[fused_grad]
pub fn leaky_relu(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.01 * x }
}

/// `x` above zero, `exp(x) - 1` below (the exponent is clamped so the branch not taken
/// stays finite for large `x`).
#[fused_grad]
pub fn elu(x: f32) -> f32 {
    if x > 0.0 { x } else { x.min(0.0).exp() - 1.0 }
}

/// Scaled ELU with the self-normalising constants.
#[fused_grad]
pub fn selu(x: f32) -> f32 {
    let scale = 1.050_701;
    let alpha = 1.673_263_2;
    if x > 0.0 {
        scale * x
    } else {
        scale * alpha * (x.min(0.0).exp() - 1.0)
    }
}

/// The tanh approximation of GELU, through the stable extra.
#[fused_grad]
pub fn gelu_tanh(x: f32) -> f32 {
    x.gelu_tanh()
}

/// `x * sigmoid(x)`.
#[fused_grad]
pub fn silu(x: f32) -> f32 {
    x.silu()
}

/// `x * tanh(softplus(x))`.
#[fused_grad]
pub fn mish(x: f32) -> f32 {
    x * x.softplus().tanh()
}

/// `ln(1 + exp(x))`, stable.
#[fused_grad]
pub fn softplus(x: f32) -> f32 {
    x.softplus()
}

/// `1 / (1 + exp(-x))`, stable.
#[fused_grad]
pub fn sigmoid(x: f32) -> f32 {
    x.sigmoid()
}

/// `tanh(x)`.
#[fused_grad]
pub fn tanh(x: f32) -> f32 {
    x.tanh()
}

/// `x` clamped to `[-1, 1]`.
#[fused_grad]
pub fn hardtanh(x: f32) -> f32 {
    x.clamp(-1.0, 1.0)
}

/// `clamp(x / 6 + 1/2, 0, 1)`.
#[fused_grad]
pub fn hardsigmoid(x: f32) -> f32 {
    (x / 6.0 + 0.5).clamp(0.0, 1.0)
}

/// `x * clamp(x + 3, 0, 6) / 6`.
#[fused_grad]
pub fn hardswish(x: f32) -> f32 {
    x * (x + 3.0).clamp(0.0, 6.0) / 6.0
}

/// `x / (1 + |x|)`.
#[fused_grad]
pub fn softsign(x: f32) -> f32 {
    x / (1.0 + x.abs())
}

/// `ln(sigmoid(x))`, stable.
#[fused_grad]
pub fn log_sigmoid(x: f32) -> f32 {
    x.log_sigmoid()
}

// ---------------------------------------------------------------- losses

/// Squared error `(p - t)^2`.
#[fused_grad]
pub fn mse(p: f32, t: f32) -> f32 {
    let d = p - t;
    d * d
}

/// Huber loss with threshold `delta`.
#[fused_grad]
pub fn huber(p: f32, t: f32, #[uniform] delta: f32) -> f32 {
    let d = (p - t).abs();
    if d <= delta {
        0.5 * d * d
    } else {
        delta * (d - 0.5 * delta)
    }
}

/// Smooth L1 loss with threshold `beta` (PyTorch's definition).
#[fused_grad]
pub fn smooth_l1(p: f32, t: f32, #[uniform] beta: f32) -> f32 {
    let d = (p - t).abs();
    let mut loss = d - 0.5 * beta;
    if d < beta {
        loss = 0.5 * d * d / beta;
    }
    loss
}

/// `ln(cosh(p - t))`, as `|d| + softplus(-2|d|) - ln 2` so it never overflows.
#[fused_grad]
pub fn log_cosh(p: f32, t: f32) -> f32 {
    let d = (p - t).abs();
    d + (-2.0 * d).softplus() - std::f32::consts::LN_2
}

/// Binary cross-entropy on a logit `z` with target `y`, stable for any `z`.
#[fused_grad(wrt(z))]
pub fn bce_with_logits(z: f32, y: f32) -> f32 {
    z.softplus() - y * z
}

// ---------------------------------------------------------------- optimizers

/// SGD with momentum and weight decay (PyTorch's update, dampening 0).
#[kernel]
pub fn sgd_momentum(
    p: &mut f32,
    buf: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] momentum: f32,
    #[uniform] weight_decay: f32,
) {
    let g = g + weight_decay * *p;
    *buf = momentum * *buf + g;
    *p -= lr * *buf;
}

/// Adam; `bc1 = 1 - b1^t`, `bc2 = 1 - b2^t` are computed by the caller once per step.
#[allow(clippy::too_many_arguments)]
#[kernel]
pub fn adam(
    p: &mut f32,
    m: &mut f32,
    v: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] b1: f32,
    #[uniform] b2: f32,
    #[uniform] eps: f32,
    #[uniform] bc1: f32,
    #[uniform] bc2: f32,
) {
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
}

/// AdamW: Adam with decoupled weight decay `wd`.
#[allow(clippy::too_many_arguments)]
#[kernel]
pub fn adamw(
    p: &mut f32,
    m: &mut f32,
    v: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] b1: f32,
    #[uniform] b2: f32,
    #[uniform] eps: f32,
    #[uniform] wd: f32,
    #[uniform] bc1: f32,
    #[uniform] bc2: f32,
) {
    *p -= lr * wd * *p;
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
}

// ---------------------------------------------------------------- composites

/// Kernels built from helpers of one module (calls are inlined).
#[kernels]
pub mod composite {
    use tang_runtime::prelude::*;

    /// `erf(z)` (Abramowitz and Stegun 7.1.26, |error| < 1.5e-7), odd by symmetry.
    pub fn erf(z: f32) -> f32 {
        let a = z.abs();
        let t = 1.0 / (1.0 + 0.327_591_1 * a);
        let poly = t
            * (0.254_829_6
                + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
        let e = 1.0 - poly * (-a * a).exp();
        if z < 0.0 { -e } else { e }
    }

    /// GELU through an erf approximation: `x/2 (1 + erf(x / sqrt 2))`.
    #[fused_grad]
    pub fn gelu_erf(x: f32) -> f32 {
        0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
    }

    /// A two-way softmax: both probabilities at once (a tuple-returning kernel).
    #[fused_grad]
    pub fn softmax2(a: f32, b: f32) -> (f32, f32) {
        ((a - b).sigmoid(), (b - a).sigmoid())
    }

    /// SwiGLU's gate: `silu(a) * b`.
    #[fused_grad]
    pub fn swiglu(a: f32, b: f32) -> f32 {
        a.silu() * b
    }

    /// A degree-4 polynomial by Horner's rule, with an unrolled loop over constant
    /// coefficients `1, 1/2, 1/6, 1/24` (a truncated `exp(x) - 1`).
    #[fused_grad]
    pub fn expm1_poly(x: f32) -> f32 {
        let mut acc = 0.0;
        let mut fact = 1.0;
        for i in 1..5 {
            fact *= i as f32;
            acc += x.powi(i) / fact;
        }
        acc
    }
}

#[path = "kernels_table.rs"]
pub mod table;
