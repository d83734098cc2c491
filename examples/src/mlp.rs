//! A two-layer perceptron trained entirely on the GPU through tang: the forward pass is
//! `ops::matmul_with` with the bias fused, ReLU is a `#[fused_grad]` kernel whose VJP is its
//! backward, the loss is `ops::cross_entropy` (value and logits gradient in one pass),
//! weight gradients are transposed matmuls, bias gradients `ops::sum`s over
//! rows, and Adam is an in-place `#[kernel]`.
//!
//! Layouts follow PyTorch's `nn.Linear`: a weight is `[out, in]` and the layer computes
//! `x · Wᵀ + b`, so a checkpoint would load without transposes.

use tang_runtime::ops::cross_entropy;
use tang_runtime::ops::sum;
use tang_runtime::ops::{MatmulOptions, matmul, matmul_with};
use tang_runtime::prelude::*;
use tang_runtime::{Error, ops};

use tang_nn::rng::SplitMix64;

/// ReLU as a kernel with its derivative. Written as a branch rather than `x.max(0.0)` so
/// the derivative at exactly 0 is 0 by construction (PyTorch's convention too).
#[fused_grad]
pub fn relu(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.0 }
}

/// One Adam step on one parameter element, in place (Kingma and Ba; PyTorch's `Adam`
/// with `weight_decay = 0`). `bc1 = 1 - beta1^t` and `bc2 = 1 - beta2^t` are the bias
/// corrections for step `t`, computed once per step on the host.
#[kernel]
#[allow(clippy::too_many_arguments)]
pub fn adam(
    p: &mut f32,
    m: &mut f32,
    v: &mut f32,
    g: f32,
    #[uniform] lr: f32,
    #[uniform] beta1: f32,
    #[uniform] beta2: f32,
    #[uniform] eps: f32,
    #[uniform] bc1: f32,
    #[uniform] bc2: f32,
) {
    *m = beta1 * *m + (1.0 - beta1) * g;
    *v = beta2 * *v + (1.0 - beta2) * g * g;
    *p -= lr * (*m / bc1) / ((*v / bc2).sqrt() + eps);
}

/// The parameters: `w1 [hidden, inputs]`, `b1 [hidden]`, `w2 [classes, hidden]`,
/// `b2 [classes]`.
#[derive(Debug)]
pub struct Mlp {
    /// First layer's weight, `[hidden, inputs]`.
    pub w1: Tensor,
    /// First layer's bias, `[hidden]`.
    pub b1: Tensor,
    /// Second layer's weight, `[classes, hidden]`.
    pub w2: Tensor,
    /// Second layer's bias, `[classes]`.
    pub b2: Tensor,
}

/// What one forward and backward pass produces.
#[derive(Debug)]
pub struct Step {
    /// `[1]`: the mean cross-entropy of the batch.
    pub loss: Tensor,
    /// Gradients of the loss, in the order of [`Mlp::params`]: `w1, b1, w2, b2`.
    pub grads: [Tensor; 4],
}

impl Mlp {
    /// He initialisation (normal with standard deviation `sqrt(2 / fan_in)`, the right
    /// scale for ReLU layers) and zero biases, for `inputs -> hidden -> classes`.
    ///
    /// # Errors
    /// As [`Tensor::from_slice`] (a size of 0 is a shape error from the first launch).
    pub fn init(
        dev: &Device,
        inputs: usize,
        hidden: usize,
        classes: usize,
        rng: &mut SplitMix64,
    ) -> Result<Mlp, Error> {
        let mut he = |rows: usize, cols: usize| -> Vec<f32> {
            let std = (2.0 / cols.max(1) as f64).sqrt();
            (0..rows * cols)
                .map(|_| (rng.normal() * std) as f32)
                .collect()
        };
        let w1 = he(hidden, inputs);
        let w2 = he(classes, hidden);
        Mlp::from_host(
            dev,
            [inputs, hidden, classes],
            &w1,
            &vec![0.0; hidden],
            &w2,
            &vec![0.0; classes],
        )
    }

    /// Uploads given parameters for `sizes = [inputs, hidden, classes]`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when a slice's length does not fit its shape.
    pub fn from_host(
        dev: &Device,
        sizes: [usize; 3],
        w1: &[f32],
        b1: &[f32],
        w2: &[f32],
        b2: &[f32],
    ) -> Result<Mlp, Error> {
        let [inputs, hidden, classes] = sizes;
        Ok(Mlp {
            w1: Tensor::from_slice(dev, w1, &[hidden, inputs])?,
            b1: Tensor::from_slice(dev, b1, &[hidden])?,
            w2: Tensor::from_slice(dev, w2, &[classes, hidden])?,
            b2: Tensor::from_slice(dev, b2, &[classes])?,
        })
    }

    /// The parameters in a fixed order: `w1, b1, w2, b2`.
    pub fn params(&self) -> [&Tensor; 4] {
        [&self.w1, &self.b1, &self.w2, &self.b2]
    }

    /// `x · Wᵀ + b` for one layer: the weight is read transposed in place and the bias
    /// added as the result is stored (no extra launch).
    fn linear(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
        matmul_with(
            x,
            w,
            &MatmulOptions {
                transpose_b: true,
                bias: Some(b),
                ..MatmulOptions::default()
            },
        )
    }

    /// Logits `[rows, classes]` of a batch `x [rows, inputs]`.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when `x` is not `[rows, inputs]`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        let z1 = Self::linear(x, &self.w1, &self.b1)?;
        let h = relu::launch(x.device(), &z1)?;
        Self::linear(&h, &self.w2, &self.b2)
    }

    /// The predicted class of each row of `x [rows, inputs]`: the arg-max of its logits,
    /// taken on the GPU (a u32 tensor `[rows]`; ties go to the lower class, as in PyTorch).
    ///
    /// # Errors
    /// As [`Mlp::forward`].
    pub fn predict(&self, x: &Tensor) -> Result<Tensor, Error> {
        ops::argmax(&self.forward(x)?, 1)
    }

    /// The mean cross-entropy of a batch (`x [rows, inputs]`, `labels [rows]` as u32) and
    /// its gradient with respect to every parameter. Everything is recorded on the GPU;
    /// nothing is read back.
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] for shapes that do not fit the model, [`Error::DType`]
    /// unless `labels` is u32.
    pub fn loss_and_grads(&self, x: &Tensor, labels: &Tensor) -> Result<Step, Error> {
        let dev = x.device();
        let z1 = Self::linear(x, &self.w1, &self.b1)?;
        let h = relu::launch(dev, &z1)?;
        let logits = Self::linear(&h, &self.w2, &self.b2)?;
        let ce = cross_entropy(&logits, labels, None)?;
        // d_logits [rows, classes] is already divided by the row count (mean reduction).
        let d_logits = &ce.grad;
        let tr_a = MatmulOptions {
            transpose_a: true,
            ..MatmulOptions::default()
        };
        // dW2 = d_logitsᵀ · h: [classes, hidden], the layout of w2.
        let d_w2 = matmul_with(d_logits, &h, &tr_a)?;
        let d_b2 = sum(d_logits, 0)?;
        // dh = d_logits · W2: [rows, hidden].
        let d_h = matmul(d_logits, &self.w2)?;
        let [d_z1] = relu::launch_vjp(dev, &z1, &d_h)?;
        let d_w1 = matmul_with(&d_z1, x, &tr_a)?;
        let d_b1 = sum(&d_z1, 0)?;
        Ok(Step {
            loss: ce.loss,
            grads: [d_w1, d_b1, d_w2, d_b2],
        })
    }
}

/// Adam's state: the step count and the two moment estimates of every parameter.
#[derive(Debug)]
pub struct Adam {
    /// Learning rate.
    pub lr: f32,
    /// Decay of the first moment (PyTorch's default 0.9).
    pub beta1: f32,
    /// Decay of the second moment (PyTorch's default 0.999).
    pub beta2: f32,
    /// Added to the denominator (PyTorch's default 1e-8).
    pub eps: f32,
    t: i32,
    moments: Vec<(Tensor, Tensor)>,
}

impl Adam {
    /// Zeroed moments for every parameter of `model`, with PyTorch's defaults besides `lr`.
    ///
    /// # Errors
    /// As [`Tensor::zeros`].
    pub fn new(model: &Mlp, lr: f32) -> Result<Adam, Error> {
        let moments = model
            .params()
            .iter()
            .map(|p| {
                Ok((
                    Tensor::zeros(p.device(), p.shape())?,
                    Tensor::zeros(p.device(), p.shape())?,
                ))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Adam {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            t: 0,
            moments,
        })
    }

    /// Steps taken so far.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// Updates every parameter in place from its gradient (one launch per parameter).
    ///
    /// # Errors
    /// [`Error::ShapeMismatch`] when a gradient is not shaped like its parameter.
    pub fn step(&mut self, model: &Mlp, grads: &[Tensor; 4]) -> Result<(), Error> {
        self.t = self.t.saturating_add(1);
        // Bias corrections in f64: 1 - 0.999^t loses digits in f32 for small t.
        let bc1 = (1.0 - f64::from(self.beta1).powi(self.t)) as f32;
        let bc2 = (1.0 - f64::from(self.beta2).powi(self.t)) as f32;
        for ((p, (m, v)), g) in model.params().iter().zip(&self.moments).zip(grads) {
            if g.shape() != p.shape() {
                return Err(Error::ShapeMismatch {
                    op: "Adam::step".into(),
                    detail: format!(
                        "gradient of shape {:?} for a parameter of shape {:?}; pass the gradients in the order of Mlp::params",
                        g.shape(),
                        p.shape()
                    ),
                });
            }
            adam::launch(
                p.device(),
                p,
                m,
                v,
                g,
                self.lr,
                self.beta1,
                self.beta2,
                self.eps,
                bc1,
                bc2,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_twins_of_the_kernels() {
        assert_eq!(relu(2.5), 2.5);
        assert_eq!(relu(-1.0), 0.0);
        assert_eq!(relu::grad(0.0), (0.0, [0.0]));
        assert_eq!(relu::grad(3.0), (3.0, [1.0]));
        assert_eq!(relu::vjp(-2.0, 5.0), [0.0]);
        assert_eq!(relu::vjp(2.0, 5.0), [5.0]);
        // First Adam step: the update is lr * sign(g) (up to eps).
        let (mut p, mut m, mut v) = (1.0f32, 0.0f32, 0.0f32);
        adam(
            &mut p, &mut m, &mut v, -4.0, 0.1, 0.9, 0.999, 1e-8, 0.1, 0.001,
        );
        assert!((p - 1.1).abs() < 1e-6, "{p}");
    }
}
