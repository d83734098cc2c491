//! The autograd error type: a runtime error from a kernel, or a misuse of the graph, each
//! with what to do about it.

use std::fmt;

/// Everything that can go wrong when recording or running a backward pass.
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// let w = Tensor::zeros(&dev, &[2])?.into_parameter();
/// let err = w.backward().err().ok_or("a [2] loss is not a scalar")?;
/// assert!(matches!(err, tang_nn::autograd::Error::NotScalar { .. }));
/// println!("{err}"); // says what to do: reduce the loss to one element first
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A kernel of the forward or backward pass failed (shapes, device, limits).
    Runtime(tang_runtime::Error),
    /// A tensor saved for backward was modified in place after it was saved.
    ModifiedAfterSave {
        /// The op that saved it.
        op: &'static str,
        /// The version the op saved.
        saved: u64,
        /// The version at backward.
        now: u64,
    },
    /// An in-place write to a tensor that requires grad while recording.
    InPlaceOnGraph {
        /// The in-place op.
        op: &'static str,
    },
    /// `backward` was called on a graph whose saved state a previous `backward` freed.
    GraphFreed,
    /// `backward` was called on a tensor that does not depend on any parameter.
    NoGradient,
    /// `requires_grad_` on an op's result (only leaves can be frozen or unfrozen).
    NotLeaf,
    /// `backward` needs a scalar (one element) loss.
    NotScalar {
        /// The shape of the tensor `backward` was called on.
        shape: Vec<usize>,
    },
    /// A gradient set has no gradient for the tensor asked about (the loss does not reach
    /// it).
    MissingGradient {
        /// The shape of the tensor asked about.
        shape: Vec<usize>,
    },
}

crate::macros::debug_as_display!(Error);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Runtime(e) => write!(f, "{e}"),
            Error::ModifiedAfterSave { op, saved, now } => write!(
                f,
                "a tensor that `{op}` saved for backward was modified in place after it was saved \
                 (version {saved} when saved, {now} at backward); clone it before modifying it, or \
                 modify it after calling backward"
            ),
            Error::InPlaceOnGraph { op } => write!(
                f,
                "`{op}` would write in place to a tensor that requires grad while ops are recorded; \
                 do it inside no_grad (as an optimizer step does), or on a detached copy"
            ),
            Error::GraphFreed => write!(
                f,
                "backward was already run through this graph and its saved tensors are freed; \
                 run the forward pass again before calling backward again"
            ),
            Error::NoGradient => write!(
                f,
                "backward on a tensor that depends on no parameter (made from constants, or under \
                 no_grad); create the inputs you want gradients of with Tensor::parameter"
            ),
            Error::NotLeaf => write!(
                f,
                "requires_grad_ can only change a leaf (a parameter or constant); an op's result \
                 follows its inputs: call requires_grad_ on the inputs, or detach the result first"
            ),
            Error::NotScalar { shape } => write!(
                f,
                "backward needs a one-element loss, got shape {shape:?}; reduce it first (sum_all or mean_all)"
            ),
            Error::MissingGradient { shape } => write!(
                f,
                "no gradient for the tensor of shape {shape:?}: the loss does not depend on it (or it \
                 is not a parameter); pass a parameter the loss reaches"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Runtime(e) => Some(e),
            _ => None,
        }
    }
}

crate::macros::wrap_errors!(Error { tang_runtime::Error => Runtime });
