//! Adam (and the update AdamW shares): PyTorch's `torch.optim.Adam` in the same
//! arithmetic as its CPU kernels, so trajectories agree to the bit (the kernels are in
//! `gpu.rs`).
//!
//! PyTorch's step for one parameter (`_single_tensor_adam`), with `g` the gradient and
//! `t` the parameter's step count after incrementing it:
//! ```text
//! g = -g                                   if maximize
//! p = p * (1 - lr * weight_decay)          decoupled (AdamW), weight_decay != 0
//! g = g + weight_decay * p                 L2 (Adam), weight_decay != 0
//! m = m.lerp(g, 1 - beta1)                 = fma(1 - beta1, g - m, m)
//! v = v * beta2 + (1 - beta2) * g * g      = fma((1 - beta2) * g, g, v * beta2)
//! v_max = max(v_max, v)                    amsgrad (v_max then replaces v below)
//! denom = sqrt(v) / sqrt(1 - beta2^t) + eps
//! p = p + (-lr / (1 - beta1^t)) * m / denom
//! ```
//! The bias corrections are Python floats in PyTorch: tang computes them in f64 on the
//! host with the same `pow` and rounds each to f32 once, as PyTorch's kernels convert
//! them. The fused multiply-adds are where PyTorch's vectorised `lerp_` and `addcmul_`
//! fuse; the square root and both divisions are correctly rounded on every GPU, as on
//! PyTorch's CPU.

use tang_runtime::Tensor;

use super::algorithm::{Algorithm, flag, require};
use super::error::OptimError;
use super::gpu::kernels::{adam_amsgrad_update, adam_update};
use super::optimizer::Optimizer;
use super::param::{Hyper, ParamState};

/// Adam over named parameters (PyTorch's `torch.optim.Adam`).
///
/// ```
/// use tang_nn::optim::{Adam, AdamOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0], &[1])?;
/// let mut opt = Adam::new([("w", w.clone())], AdamOptions { lr: 0.1, ..AdamOptions::default() })?; // Adam([w], lr=0.1)
/// opt.step(&[("w", &Tensor::from_slice(&dev, &[0.5], &[1])?)])?;
/// assert!((w.to_vec()?[0] - 0.9).abs() < 1e-6); // Adam's first step moves by lr
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Adam = Optimizer<AdamOptions>;

/// Adam's hyperparameters, with PyTorch's defaults.
///
/// ```
/// use tang_nn::optim::AdamOptions;
/// // torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.95), amsgrad=True)
/// let opts = AdamOptions { betas: (0.9, 0.95), amsgrad: true, ..AdamOptions::default() };
/// assert_eq!((opts.eps, opts.weight_decay), (1e-8, 0.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Decay rates of the first and second moment estimates (default (0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator for stability (default 1e-8).
    pub eps: f64,
    /// Weight decay (default 0): an L2 penalty added to the gradient, or with
    /// `decoupled_weight_decay` AdamW's decay of the parameter.
    pub weight_decay: f64,
    /// Use the maximum of past second moments (AMSGrad; default false).
    pub amsgrad: bool,
    /// Maximize the objective instead of minimizing it (default false).
    pub maximize: bool,
    /// Decay the parameter instead of adding an L2 penalty (AdamW; default false).
    pub decoupled_weight_decay: bool,
}

impl Default for AdamOptions {
    fn default() -> Self {
        AdamOptions {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
            decoupled_weight_decay: false,
        }
    }
}

/// The per-step scalars of one parameter's update, in f32 as the kernel takes them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AdamScalars {
    maximize: f32,
    l2: f32,
    decay: f32,
    lerp_weight: f32,
    beta2: f32,
    one_minus_beta2: f32,
    neg_step_size: f32,
    bias_correction2_sqrt: f32,
    eps: f32,
}

impl AdamScalars {
    /// The uniforms of both Adam kernels, in their declared order (a test checks it;
    /// `one` is 1: see `fused_mul_add`).
    fn uniforms(&self) -> [f32; 10] {
        [
            self.maximize,
            self.l2,
            self.decay,
            self.lerp_weight,
            self.beta2,
            self.one_minus_beta2,
            self.neg_step_size,
            self.bias_correction2_sqrt,
            self.eps,
            1.0,
        ]
    }
}

impl AdamOptions {
    /// The scalars of step `step` (counted from 1), computed as PyTorch computes them.
    fn scalars(&self, step: u64) -> AdamScalars {
        let (beta1, beta2) = self.betas;
        let wd = self.weight_decay;
        // PyTorch's step is a float tensor read back as a Python float.
        let t = step as f64;
        let bias_correction1 = 1.0 - beta1.powf(t);
        let bias_correction2 = 1.0 - beta2.powf(t);
        AdamScalars {
            maximize: flag(self.maximize),
            l2: if self.decoupled_weight_decay {
                0.0
            } else {
                wd as f32
            },
            decay: if self.decoupled_weight_decay && wd != 0.0 {
                (1.0 - self.lr * wd) as f32
            } else {
                1.0
            },
            lerp_weight: (1.0 - beta1) as f32,
            beta2: beta2 as f32,
            one_minus_beta2: (1.0 - beta2) as f32,
            neg_step_size: (-(self.lr / bias_correction1)) as f32,
            bias_correction2_sqrt: bias_correction2.powf(0.5) as f32,
            eps: self.eps as f32,
        }
    }

    pub(crate) fn validate_as(&self, name: &'static str) -> Result<(), OptimError> {
        require(self.lr >= 0.0, name, "lr", self.lr, "at least 0")?;
        require(self.eps >= 0.0, name, "eps", self.eps, "at least 0")?;
        let (b1, b2) = self.betas;
        require((0.0..1.0).contains(&b1), name, "betas[0]", b1, "in [0, 1)")?;
        require((0.0..1.0).contains(&b2), name, "betas[1]", b2, "in [0, 1)")?;
        let wd = self.weight_decay;
        require(wd >= 0.0, name, "weight_decay", wd, "at least 0")
    }
}

/// Records one Adam or AdamW update of `param` (the options say which).
pub(crate) fn adam_step(
    options: &AdamOptions,
    param: &Tensor,
    grad: &Tensor,
    clip_coef: &Tensor,
    state: &mut ParamState,
) -> Result<(), OptimError> {
    let step = state.step.saturating_add(1);
    let s = options.scalars(step);
    let dev = param.device();
    let m = state.buffer_or_zeros("exp_avg", param)?;
    let v = state.buffer_or_zeros("exp_avg_sq", param)?;
    // The two kernels take the same inputs and uniforms; AMSGrad adds one buffer.
    let (kernel, inouts) = if options.amsgrad {
        let v_max = state.buffer_or_zeros("max_exp_avg_sq", param)?;
        (
            &adam_amsgrad_update::KERNEL,
            vec![param.clone(), m, v, v_max],
        )
    } else {
        (&adam_update::KERNEL, vec![param.clone(), m, v])
    };
    let inouts: Vec<&Tensor> = inouts.iter().collect();
    dev.launch(kernel, &[grad, clip_coef], &inouts, &s.uniforms())?;
    state.step = step;
    Ok(())
}

/// Adam's and AdamW's options by PyTorch name (AdamW has no `decoupled_weight_decay`).
pub(crate) fn adam_hyperparameters(o: &AdamOptions, decoupled: bool) -> Vec<(&'static str, Hyper)> {
    let mut v = vec![
        ("lr", Hyper::Float(o.lr)),
        ("betas", Hyper::Pair(o.betas.0, o.betas.1)),
        ("eps", Hyper::Float(o.eps)),
        ("weight_decay", Hyper::Float(o.weight_decay)),
        ("amsgrad", Hyper::Bool(o.amsgrad)),
        ("maximize", Hyper::Bool(o.maximize)),
    ];
    if decoupled {
        v.push((
            "decoupled_weight_decay",
            Hyper::Bool(o.decoupled_weight_decay),
        ));
    }
    v
}

/// Sets one of [`adam_hyperparameters`]' options.
pub(crate) fn set_adam_hyperparameter(o: &mut AdamOptions, name: &str, value: Hyper) -> bool {
    match (name, value) {
        ("lr", Hyper::Float(x)) => o.lr = x,
        ("betas", Hyper::Pair(a, b)) => o.betas = (a, b),
        ("eps", Hyper::Float(x)) => o.eps = x,
        ("weight_decay", Hyper::Float(x)) => o.weight_decay = x,
        ("amsgrad", Hyper::Bool(b)) => o.amsgrad = b,
        ("maximize", Hyper::Bool(b)) => o.maximize = b,
        ("decoupled_weight_decay", Hyper::Bool(b)) => o.decoupled_weight_decay = b,
        _ => return false,
    }
    true
}

impl Algorithm for AdamOptions {
    const NAME: &'static str = "Adam";
    const COUNTS_STEPS: bool = true;
    const BUFFERS: &'static [&'static str] = &["exp_avg", "exp_avg_sq", "max_exp_avg_sq"];
    const REQUIRED: &'static [&'static str] = &["exp_avg", "exp_avg_sq"];

    fn validate(&self) -> Result<(), OptimError> {
        self.validate_as(Self::NAME)
    }

    fn hyperparameters(&self) -> Vec<(&'static str, Hyper)> {
        adam_hyperparameters(self, true)
    }

    fn set_hyperparameter(&mut self, name: &str, value: Hyper) -> bool {
        set_adam_hyperparameter(self, name, value)
    }

    fn update(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        state: &mut ParamState,
    ) -> Result<(), OptimError> {
        adam_step(self, param, grad, clip_coef, state)
    }

    /// Adam's two moments (AMSGrad's maximum updates one parameter per launch).
    fn flat_buffers(&self) -> &'static [&'static str] {
        if self.amsgrad {
            &[]
        } else {
            &["exp_avg", "exp_avg_sq"]
        }
    }

    /// One Adam or AdamW update of the flat `param` (many parameters packed) with the
    /// flat moments `buffers` (`[exp_avg, exp_avg_sq]`), every parameter reaching `step`.
    fn update_flat(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        buffers: &[&Tensor],
        step: u64,
    ) -> Result<(), OptimError> {
        let &[m, v] = buffers else {
            return Err(OptimError::State {
                detail: format!(
                    "a flat Adam step takes exp_avg and exp_avg_sq, got {} buffers",
                    buffers.len()
                ),
            });
        };
        let s = self.scalars(step);
        let inouts = [param, m, v];
        param.device().launch(
            &adam_update::KERNEL,
            &[grad, clip_coef],
            &inouts,
            &s.uniforms(),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The uniforms of both Adam kernels, in their declared order.
    const UNIFORMS: [&str; 10] = [
        "maximize",
        "l2",
        "decay",
        "lerp_weight",
        "beta2",
        "one_minus_beta2",
        "neg_step_size",
        "bias_correction2_sqrt",
        "eps",
        "one",
    ];

    #[test]
    fn both_kernels_declare_the_uniforms_in_the_order_they_are_passed() {
        assert_eq!(adam_update::KERNEL.uniforms(), UNIFORMS);
        assert_eq!(adam_amsgrad_update::KERNEL.uniforms(), UNIFORMS);
    }
}
