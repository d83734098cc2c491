//! [`autocast`]: PyTorch's `with torch.autocast(device_type, dtype=torch.float16)` as a
//! guard over a per-thread switch that the matmul-like recording ops read when they
//! record (see [`autocast`] for which ops change and which stay f32).

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use tang_runtime::DType;

use super::AmpError;
use crate::autograd::{Error, RawTensor, Tensor, TensorId};

thread_local! {
    /// Whether this thread is in an f16 autocast region (f16 is the one dtype autocast
    /// computes in).
    static AUTOCAST_F16: Cell<bool> = const { Cell::new(false) };

    /// The f16 copies of f32 parameters made in this thread's autocast region, by
    /// parameter (PyTorch's autocast cache); emptied when the region ends, when a tensor is
    /// written in place and when an optimizer steps, so a copy never outlives its values.
    static CAST_CACHE: RefCell<Vec<(TensorId, RawTensor)>> = const { RefCell::new(Vec::new()) };
}

/// The region of an [`autocast`] or [`autocast_disabled`] call: the previous setting
/// comes back when it is dropped. Regions nest (drop them in the reverse order they were
/// made, as scopes do); a guard is tied to its thread.
///
/// ```
/// use tang_nn::amp::{autocast, is_autocast_enabled};
/// use tang_nn::tang_runtime::DType;
/// {
///     let _autocast = autocast(DType::F16)?;
///     assert!(is_autocast_enabled());
/// }
/// assert!(!is_autocast_enabled()); // restored when the guard went out of scope
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "autocast applies while the guard lives: bind it to a named variable (`let _autocast = ...`)"]
#[derive(Debug)]
pub struct AutocastGuard {
    previous: bool,
    /// Not `Send`: the setting it restores is this thread's.
    _thread: PhantomData<*const ()>,
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST_F16.with(|a| a.set(self.previous));
        if !self.previous {
            forget_casts();
        }
    }
}

/// Turns this thread's f16 autocast on or off until the guard is dropped.
pub(crate) fn enter(f16: bool) -> AutocastGuard {
    AutocastGuard {
        previous: AUTOCAST_F16.with(|a| a.replace(f16)),
        _thread: PhantomData,
    }
}

/// Runs the matmul-like ops in `dtype` on this thread while the returned guard lives
/// (PyTorch's `torch.autocast("cuda", dtype=torch.float16)`).
///
/// Inside it, [`Tensor::linear`](crate::autograd::Tensor::linear) and
/// [`Tensor::matmul`](crate::autograd::Tensor::matmul) (so `Linear`, the attention
/// layers' projections and a GPT's head) round both operands to f16, multiply them on
/// the tensor cores where the adapter has them, accumulating in f32, and return f16, as
/// PyTorch's autocast does: the activations between them (GELU, dropout, the heads of
/// attention, which runs in f16) are f16, half the bytes to store and to move. An f16
/// tensor beside an f32 one in an elementwise op gives f32 (PyTorch's type promotion: a
/// residual stream stays f32), and softmax, log-softmax, layer and RMS norm,
/// cross-entropy, sums and losses read f16 and compute in f32, as `torch.autocast`'s
/// lists put them on the f32 side. Every gradient has its tensor's dtype. Parameters stay
/// f32 master weights with f32 gradients, and so does the optimizer state; `linear`
/// multiplies an f16 copy of an f32 weight parameter made once per region and reused by
/// every `linear` there, forward and backward (PyTorch's autocast cache), dropped when the
/// region ends, when a tensor is written in place and when an optimizer steps (`matmul`
/// rounds its operands as it loads them). Wrap the
/// forward and the loss, as PyTorch's recipe does. Convolution stays f32 for now.
///
/// ```
/// use tang_nn::amp::autocast;
/// # use tang_nn::{Device, Tensor};
/// use tang_nn::tang_runtime::DType;
/// # let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0 + 1.0 / 4096.0], &[1, 1])?; // not an f16 value
/// let w = Tensor::from_slice(&dev, &[1.0], &[1, 1])?.into_parameter();
/// let y = {
///     let _autocast = autocast(DType::F16)?; // with torch.autocast("cuda", dtype=torch.float16):
///     x.linear(&w, None)?
/// };
/// assert_eq!(y.dtype(), DType::F16); // as torch's autocast returns
/// assert_eq!(y.to_vec()?, [1.0]); // x was rounded to f16 before the product
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`AmpError::UnsupportedDtype`] for a dtype other than [`DType::F16`]: bf16 has no
/// cooperative-matrix (tensor-core) type in wgpu, so tang's mixed precision is f16 with a
/// [`super::GradScaler`].
pub fn autocast(dtype: DType) -> Result<AutocastGuard, AmpError> {
    if dtype != DType::F16 {
        return Err(AmpError::UnsupportedDtype { dtype });
    }
    Ok(enter(true))
}

/// Turns autocast off on this thread while the returned guard lives, inside an
/// [`autocast`] region (PyTorch's `torch.autocast("cuda", enabled=False)`): a part of the
/// model that must stay f32.
///
/// ```
/// use tang_nn::amp::{autocast, autocast_disabled, is_autocast_enabled};
/// use tang_nn::tang_runtime::DType;
/// let _autocast = autocast(DType::F16)?;
/// {
///     let _f32 = autocast_disabled();
///     assert!(!is_autocast_enabled());
/// }
/// assert!(is_autocast_enabled()); // the outer region again
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn autocast_disabled() -> AutocastGuard {
    enter(false)
}

/// Whether autocast is on for this thread (PyTorch's `torch.is_autocast_enabled()`).
///
/// ```
/// assert!(!tang_nn::amp::is_autocast_enabled());
/// ```
pub fn is_autocast_enabled() -> bool {
    AUTOCAST_F16.with(Cell::get)
}

/// The result dtype of a matmul-like op recorded now: f16 inside an [`autocast`] region
/// (`None`, f32, outside), as PyTorch's autocast returns f16 from `linear` and `matmul`.
pub(crate) fn autocast_out_dtype() -> Option<DType> {
    is_autocast_enabled().then_some(DType::F16)
}

/// The f16 copy of `weight` that `linear` inside an [`autocast`] region multiplies, for
/// an f32 parameter (a leaf that requires grad), made once per region and reused by every
/// `linear` that reads the parameter, forward and backward (PyTorch's autocast casts a
/// parameter once per region the same way): the products then read two f16 operands,
/// where the f32 weight was rounded as each tile loaded it (the AMP step's 384-wide
/// products 3.92 -> 3.44 ms on an H200, BENCHMARKS.md 2026-11-29, evening). `None` outside
/// a region and for other tensors, which the product rounds as it loads them.
///
/// # Errors
/// [`Error::Runtime`] when the device refuses the copy (no f16 support).
pub(crate) fn cast_parameter(weight: &Tensor) -> Result<Option<RawTensor>, Error> {
    if !is_autocast_enabled()
        || weight.dtype() != DType::F32
        || !weight.is_leaf()
        || !weight.requires_grad()
    {
        return Ok(None);
    }
    let id = weight.id();
    let cached = CAST_CACHE.with(|c| {
        c.borrow()
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, t)| t.clone())
    });
    if let Some(t) = cached {
        return Ok(Some(t));
    }
    let cast = weight.data().to_dtype(DType::F16)?;
    CAST_CACHE.with(|c| c.borrow_mut().push((id, cast.clone())));
    Ok(Some(cast))
}

/// Drops this thread's cached parameter casts (see [`cast_parameter`]): the region ended,
/// or a tensor's values changed (an in-place write, an optimizer step).
pub(crate) fn forget_casts() {
    CAST_CACHE.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            c.clear();
        }
    });
}
