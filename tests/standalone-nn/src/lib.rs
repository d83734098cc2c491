//! A crate that uses tang the way a tang-nn user does: it depends on `tang-nn` alone, so
//! everything the kernel macros generate must resolve through `::tang_nn::tang_runtime`.

use tang_nn::prelude::*;

/// A smooth ReLU (softplus with a sharper knee), written as a plain `f32` function: the
/// macro makes its kernel and its gradient.
#[fused_grad]
pub fn soft_relu(x: f32) -> f32 {
    (4.0 * x).softplus() / 4.0
}

/// Adam's update, in place (a `#[kernel]` with `&mut` parameters and uniforms).
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
) {
    *m = b1 * *m + (1.0 - b1) * g;
    *v = b2 * *v + (1.0 - b2) * g * g;
    *p -= lr * *m / ((*v).sqrt() + eps);
}

/// Kernels sharing a helper.
#[kernels]
pub mod losses {
    fn sq(d: f32) -> f32 {
        d * d
    }

    /// Squared error.
    #[fused_grad]
    pub fn squared_error(pred: f32, target: f32) -> f32 {
        sq(pred - target)
    }
}

/// [`soft_relu`] as a layer: records the function for autograd (forward kernel, VJP
/// backward), as an `nn.Module` wrapping a custom `autograd.Function` would.
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftReLU;

impl Module for SoftReLU {
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor)) {}
    fn set_training(&self, _training: bool) {}
}

impl nn::Layer for SoftReLU {
    fn forward(&self, x: &Tensor) -> Result<Tensor, tang_nn::autograd::Error> {
        tang_nn::autograd::apply(&soft_relu::FUSED, &[x], &[])
    }
}
