//! SGD with momentum, dampening, Nesterov momentum and weight decay: PyTorch's
//! `torch.optim.SGD`, in the same arithmetic as its CPU kernels, so trajectories agree to
//! the bit (the kernels are in `gpu.rs`).
//!
//! PyTorch's step for one parameter (`_single_tensor_sgd`), with `g` the gradient:
//! ```text
//! g = -g                          if maximize
//! g = g + weight_decay * p        if weight_decay != 0
//! buf = g                         first step (momentum != 0)
//! buf = momentum * buf + (1 - dampening) * g    later steps
//! g = g + momentum * buf          if nesterov, else g = buf
//! p = p - lr * g
//! ```
//! Every `a + s * b` is one fused multiply-add, as PyTorch's vectorised `add(alpha=)`
//! computes it (`fused_mul_add`, exact even where WGSL's `fma` is not fused); scalars are computed in f64 on the host and rounded to f32 once, as
//! PyTorch converts its Python-float hyperparameters.

use tang_runtime::Tensor;

use super::algorithm::{Algorithm, flag, require};
use super::error::OptimError;
use super::gpu::kernels::{sgd_momentum_update, sgd_update};
use super::optimizer::Optimizer;
use super::param::{Hyper, ParamState};

/// SGD over named parameters (PyTorch's `torch.optim.SGD`).
///
/// ```
/// use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0], &[1])?;
/// // torch.optim.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
/// let opts = SgdOptions { lr: 0.1, momentum: 0.9, nesterov: true, ..SgdOptions::default() };
/// let mut opt = Sgd::new([("w", w.clone())], opts)?;
/// opt.step(&[("w", &Tensor::from_slice(&dev, &[1.0], &[1])?)])?;
/// assert!((w.to_vec()?[0] - 0.81).abs() < 1e-6); // g + 0.9 * buf = 1.9
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Sgd = Optimizer<SgdOptions>;

/// SGD's hyperparameters, with PyTorch's defaults.
///
/// ```
/// use tang_nn::optim::SgdOptions;
/// let opts = SgdOptions { lr: 0.01, weight_decay: 5e-4, ..SgdOptions::default() };
/// assert_eq!((opts.momentum, opts.dampening, opts.maximize), (0.0, 0.0, false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdOptions {
    /// Learning rate (default 1e-3).
    pub lr: f64,
    /// Momentum factor (default 0: no momentum buffer).
    pub momentum: f64,
    /// Dampening of the gradient's share in the momentum buffer (default 0).
    pub dampening: f64,
    /// L2 penalty added to the gradient (default 0).
    pub weight_decay: f64,
    /// Nesterov momentum (default false; needs momentum > 0 and dampening 0).
    pub nesterov: bool,
    /// Maximize the objective instead of minimizing it (default false).
    pub maximize: bool,
}

impl Default for SgdOptions {
    fn default() -> Self {
        SgdOptions {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

impl Algorithm for SgdOptions {
    const NAME: &'static str = "SGD";
    const COUNTS_STEPS: bool = false;
    const BUFFERS: &'static [&'static str] = &["momentum_buffer"];
    const REQUIRED: &'static [&'static str] = &[];

    fn validate(&self) -> Result<(), OptimError> {
        // `!(x >= 0)` also rejects NaN, as PyTorch's `not 0.0 <= x` does.
        require(self.lr >= 0.0, "SGD", "lr", self.lr, "at least 0")?;
        let m = self.momentum;
        require(m >= 0.0, "SGD", "momentum", m, "at least 0")?;
        let wd = self.weight_decay;
        require(wd >= 0.0, "SGD", "weight_decay", wd, "at least 0")?;
        require(
            self.dampening.is_finite(),
            "SGD",
            "dampening",
            self.dampening,
            "a finite number",
        )?;
        require(
            !self.nesterov || (m > 0.0 && self.dampening == 0.0),
            "SGD",
            "nesterov",
            self.nesterov,
            "false unless momentum > 0 and dampening == 0 (Nesterov momentum requires a momentum and zero dampening)",
        )
    }

    fn hyperparameters(&self) -> Vec<(&'static str, Hyper)> {
        vec![
            ("lr", Hyper::Float(self.lr)),
            ("momentum", Hyper::Float(self.momentum)),
            ("dampening", Hyper::Float(self.dampening)),
            ("weight_decay", Hyper::Float(self.weight_decay)),
            ("nesterov", Hyper::Bool(self.nesterov)),
            ("maximize", Hyper::Bool(self.maximize)),
        ]
    }

    fn set_hyperparameter(&mut self, name: &str, value: Hyper) -> bool {
        match (name, value) {
            ("lr", Hyper::Float(x)) => self.lr = x,
            ("momentum", Hyper::Float(x)) => self.momentum = x,
            ("dampening", Hyper::Float(x)) => self.dampening = x,
            ("weight_decay", Hyper::Float(x)) => self.weight_decay = x,
            ("nesterov", Hyper::Bool(b)) => self.nesterov = b,
            ("maximize", Hyper::Bool(b)) => self.maximize = b,
            _ => return false,
        }
        true
    }

    fn update(
        &self,
        param: &Tensor,
        grad: &Tensor,
        clip_coef: &Tensor,
        state: &mut ParamState,
    ) -> Result<(), OptimError> {
        let dev = param.device();
        let maximize = flag(self.maximize);
        let weight_decay = self.weight_decay as f32;
        let neg_lr = (-self.lr) as f32;
        if self.momentum == 0.0 {
            sgd_update::launch(
                dev,
                param,
                grad,
                clip_coef,
                maximize,
                weight_decay,
                neg_lr,
                1.0,
            )?;
            return Ok(());
        }
        let first = state.buffer("momentum_buffer").is_none();
        let buf = state.buffer_or_zeros("momentum_buffer", param)?;
        sgd_momentum_update::launch(
            dev,
            param,
            &buf,
            grad,
            clip_coef,
            maximize,
            weight_decay,
            neg_lr,
            self.momentum as f32,
            (1.0 - self.dampening) as f32,
            flag(self.nesterov),
            flag(first),
            1.0,
        )?;
        Ok(())
    }
}
