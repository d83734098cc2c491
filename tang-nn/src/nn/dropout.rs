//! `Dropout`, drawing its masks from tang's GPU Philox generator.

use std::cell::Cell;
use std::sync::Mutex;

use tang_runtime::ops::{DropoutState, Generator};

use super::Layer;
use crate::Module;
use crate::autograd::{Error, Tensor};

/// The seed the shared dropout generator starts from until [`manual_seed`] is called.
///
/// ```
/// tang_nn::nn::manual_seed(tang_nn::nn::DEFAULT_SEED); // back to the start-up stream
/// ```
pub const DEFAULT_SEED: u64 = 0;

/// The generator every [`Dropout`] draws from (PyTorch's default generator for dropout):
/// deterministic given [`manual_seed`] and the order of forward calls.
static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

/// Restarts the shared dropout generator at `seed` (PyTorch's `torch.manual_seed`).
/// tang's Philox streams are not PyTorch's, so the masks differ from PyTorch's for the
/// same seed; their distribution is the same.
///
/// ```
/// tang_nn::nn::manual_seed(1234);
/// ```
pub fn manual_seed(seed: u64) {
    *GENERATOR.lock().unwrap_or_else(|e| e.into_inner()) = Some(Generator::new(seed));
}

/// Dropout (PyTorch's `nn.Dropout(p)`, default `p = 0.5`): in training mode zeroes each
/// element with probability `p` and scales the rest by `1 / (1 - p)`; in evaluation
/// mode ([`Module::eval`]) the identity. The mask is made on the GPU from a Philox stream
/// and regenerated in backward from the stream's `(seed, offset)`: it is never stored.
///
/// ```
/// use tang_nn::Module;
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::Dropout;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let drop = Dropout::new(0.1)?;
/// let x = Tensor::full(&dev, &[4, 8], 1.0)?;
/// drop.eval();
/// assert_eq!(drop.forward(&x)?.to_vec()?, vec![1.0; 32]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Dropout {
    /// The drop probability.
    pub p: f32,
    training: Cell<bool>,
}

impl Dropout {
    /// A dropout layer in training mode.
    ///
    /// ```
    /// let drop = tang_nn::nn::Dropout::new(0.2)?; // nn.Dropout(p=0.2)
    /// assert!(drop.is_training() && drop.p == 0.2);
    /// assert!(tang_nn::nn::Dropout::new(1.5).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] unless `0 <= p <= 1`.
    pub fn new(p: f32) -> Result<Dropout, Error> {
        if !(0.0..=1.0).contains(&p) {
            return Err(super::invalid(
                "Dropout",
                format!("dropout probability has to be between 0 and 1, but got {p}"),
            ));
        }
        Ok(Dropout {
            p,
            training: Cell::new(true),
        })
    }

    /// Whether the layer is in training mode.
    ///
    /// ```
    /// use tang_nn::Module;
    /// let drop = tang_nn::nn::Dropout::new(0.2)?;
    /// drop.eval(); // model.eval()
    /// assert!(!drop.is_training());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_training(&self) -> bool {
        self.training.get()
    }

    /// `x` with dropout applied in training mode (and `p > 0`); `x` itself otherwise.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let drop = tang_nn::nn::Dropout::new(0.5)?;
    /// let x = Tensor::full(&dev, &[64], 1.0)?;
    /// // Each element is 0 or 1 / (1 - p) = 2.
    /// assert!(drop.forward(&x)?.to_vec()?.iter().all(|&v| v == 0.0 || v == 2.0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] for a u32 tensor.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        if !self.is_active() {
            return Ok(x.clone());
        }
        let mut guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
        let generator = guard.get_or_insert_with(|| Generator::new(DEFAULT_SEED));
        x.dropout(self.p, generator)
    }

    /// Whether [`forward`](Self::forward) drops anything: in training mode with `p > 0`.
    ///
    /// ```
    /// let drop = tang_nn::nn::Dropout::new(0.2)?;
    /// assert!(drop.is_active());
    /// assert!(!tang_nn::nn::Dropout::new(0.0)?.is_active());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_active(&self) -> bool {
        self.training.get() && self.p > 0.0
    }

    /// For kernels that apply the mask themselves (the fused attention): the mask's state,
    /// drawn from the shared generator exactly as [`forward`](Self::forward) draws it, so
    /// the mask over a tensor is the one `forward` would apply to it; `None` where
    /// `forward` is the identity (evaluation, `p = 0`).
    ///
    /// ```
    /// let drop = tang_nn::nn::Dropout::new(0.2)?;
    /// assert_eq!(drop.next_state().map(|s| s.p), Some(0.2));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_state(&self) -> Option<DropoutState> {
        if !self.is_active() {
            return None;
        }
        let mut guard = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
        let generator = guard.get_or_insert_with(|| Generator::new(DEFAULT_SEED));
        Some(DropoutState {
            stream: generator.next_stream(),
            p: self.p,
        })
    }
}

impl Module for Dropout {
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor)) {}

    fn set_training(&self, training: bool) {
        self.training.set(training);
    }
}

impl Layer for Dropout {
    fn forward(&self, x: &Tensor) -> Result<Tensor, Error> {
        Dropout::forward(self, x)
    }
}
