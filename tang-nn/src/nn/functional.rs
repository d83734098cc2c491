//! Losses on the GPU with PyTorch's names, defaults and reductions (PyTorch's
//! `torch.nn.functional`): [`mse_loss`], [`cross_entropy`], [`nll_loss`],
//! [`binary_cross_entropy_with_logits`]. Nothing is read back to the host: counts of
//! non-ignored rows stay on the GPU.
//!
//! ## Class indices and `ignore_index`
//!
//! Targets are u32 tensors (tang has no i64 tensors). PyTorch's `ignore_index` is an i64
//! (default `-100`); tang matches it against the u32 targets after wrapping it to 32 bits
//! ([`ignore_index_as_u32`]: `-100` is `4294967196`, `u32::MAX - 99`), so a PyTorch target
//! tensor with `-100` entries, converted by [`class_indices_from_i64`], keeps them
//! ignored. A target `>= classes` that is not the ignore index is a caller error PyTorch
//! raises on; tang checks nothing on the host (that would read back), so that row's loss
//! is NaN (and the mean with it, visibly) and its gradient 0.
//!
//! ```
//! use tang_nn::autograd::Tensor;
//! use tang_nn::nn::functional::{CrossEntropyOptions, Reduction, class_indices_from_i64, cross_entropy_with};
//! let dev = tang_nn::tang_runtime::Device::new()?;
//! let logits = Tensor::zeros(&dev, &[3, 4])?.into_parameter();
//! let targets = class_indices_from_i64(&dev, &[1, -100, 3], &[3])?;
//! let opts = CrossEntropyOptions { label_smoothing: 0.1, ..CrossEntropyOptions::default() };
//! let loss = cross_entropy_with(&logits, &targets, &opts)?;   // mean over the 2 kept rows
//! assert!((loss.to_vec()?[0] - 4f32.ln()).abs() < 1e-6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The CPU twin of the index kernel is its reference; only the kernel is called.
#![allow(dead_code)]

use tang_runtime::ops;
use tang_runtime::prelude::*;
use tang_runtime::{DType, Device};

use super::invalid;
use crate::autograd::{Error, RawTensor, Tensor};

/// PyTorch's default `ignore_index`.
///
/// ```
/// use tang_nn::nn::functional::{IGNORE_INDEX, ignore_index_as_u32};
/// assert_eq!(IGNORE_INDEX, -100); // F.cross_entropy's default ignore_index
/// assert_eq!(ignore_index_as_u32(IGNORE_INDEX)?, u32::MAX - 99); // as a u32 target
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const IGNORE_INDEX: i64 = -100;

/// How a loss reduces its per-element values (PyTorch's `reduction`).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::{Reduction, mse_loss_with};
/// let x = Tensor::from_slice(&dev, &[1.0, 3.0], &[2])?.into_parameter();
/// let y = Tensor::zeros(&dev, &[2])?;
/// assert_eq!(mse_loss_with(&x, &y, Reduction::None)?.to_vec()?, [1.0, 9.0]); // reduction="none"
/// assert_eq!(mse_loss_with(&x, &y, Reduction::Sum)?.to_vec()?, [10.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// `"none"`: one value per element (per row for the class losses).
    None,
    /// `"mean"`, PyTorch's default (for the class losses: over non-ignored rows).
    #[default]
    Mean,
    /// `"sum"`.
    Sum,
}

/// The options of [`cross_entropy_with`] (PyTorch's keyword arguments and defaults;
/// per-class `weight` is not supported).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::{CrossEntropyOptions, cross_entropy_with};
/// let logits = Tensor::zeros(&dev, &[2, 3])?.into_parameter();
/// let targets = Tensor::from_u32(&dev, &[0, 2], &[2])?;
/// // F.cross_entropy(logits, targets, label_smoothing=0.1)
/// let opts = CrossEntropyOptions { label_smoothing: 0.1, ..CrossEntropyOptions::default() };
/// let loss = cross_entropy_with(&logits, &targets, &opts)?;
/// assert!((loss.to_vec()?[0] - 3f32.ln()).abs() < 1e-5); // uniform logits: ln 3 either way
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CrossEntropyOptions {
    /// Rows whose target is this are skipped (default [`IGNORE_INDEX`]).
    pub ignore_index: i64,
    /// Default [`Reduction::Mean`].
    pub reduction: Reduction,
    /// In `[0, 1]`: the target becomes `1 - ε` on the class plus `ε / classes` on
    /// every class (default 0).
    pub label_smoothing: f32,
}

impl Default for CrossEntropyOptions {
    fn default() -> Self {
        CrossEntropyOptions {
            ignore_index: IGNORE_INDEX,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

/// The options of [`nll_loss_with`] (PyTorch's defaults; no per-class `weight`).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::{NllLossOptions, class_indices_from_i64, nll_loss_with};
/// let logp = Tensor::from_slice(&dev, &[-1.0, -2.0, -3.0, -4.0], &[2, 2])?.into_parameter();
/// let targets = class_indices_from_i64(&dev, &[1, -100], &[2])?; // the second row is ignored
/// let loss = nll_loss_with(&logp, &targets, &NllLossOptions::default())?;
/// assert_eq!(loss.to_vec()?, [2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NllLossOptions {
    /// Rows whose target is this are skipped (default [`IGNORE_INDEX`]).
    pub ignore_index: i64,
    /// Default [`Reduction::Mean`].
    pub reduction: Reduction,
}

impl Default for NllLossOptions {
    fn default() -> Self {
        NllLossOptions {
            ignore_index: IGNORE_INDEX,
            reduction: Reduction::Mean,
        }
    }
}

/// PyTorch's i64 class index (or ignore index) as tang's u32: wrapped to 32 bits, so
/// `-100` is `4294967196`.
///
/// ```
/// use tang_nn::nn::functional::ignore_index_as_u32;
/// assert_eq!(ignore_index_as_u32(-100)?, u32::MAX - 99);
/// assert_eq!(ignore_index_as_u32(7)?, 7);
/// # Ok::<(), tang_nn::autograd::Error>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] outside `[-2^31, 2^32)`, where two values would share a u32.
pub fn ignore_index_as_u32(index: i64) -> Result<u32, Error> {
    if let Ok(v) = u32::try_from(index) {
        return Ok(v);
    }
    match i32::try_from(index) {
        Ok(v) => Ok(v as u32),
        Err(_) => Err(invalid(
            "class index",
            format!("{index} does not fit 32 bits; class indices must be in [-2^31, 2^32)"),
        )),
    }
}

/// A u32 target tensor from PyTorch's i64 class indices (as read from a file), negative
/// values (the ignore index) wrapped as [`ignore_index_as_u32`] does.
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::class_indices_from_i64;
/// // Targets as PyTorch saves them (int64), -100 for padding.
/// let targets = class_indices_from_i64(&dev, &[3, -100, 1], &[3])?;
/// assert_eq!(targets.to_vec_u32()?, [3, u32::MAX - 99, 1]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] for a value outside `[-2^31, 2^32)`, a shape that does not hold
/// the values, or a device failure.
pub fn class_indices_from_i64(
    dev: &Device,
    values: &[i64],
    shape: &[usize],
) -> Result<Tensor, Error> {
    let wrapped = values
        .iter()
        .map(|&v| ignore_index_as_u32(v))
        .collect::<Result<Vec<u32>, Error>>()?;
    Tensor::from_u32(dev, &wrapped, shape)
}

/// `t` where `keep`, else 0: an ignored row's index moved to a class that exists (its
/// picked value is masked out after the gather).
#[kernel]
fn index_or_zero(t: f32, keep: f32) -> f32 {
    if keep > 0.5 { t } else { 0.0 }
}

fn reduce_all(x: Tensor, reduction: Reduction) -> Result<Tensor, Error> {
    match reduction {
        Reduction::None => Ok(x),
        Reduction::Mean => x.mean_all(),
        Reduction::Sum => x.sum_all(),
    }
}

fn same_shape(op: &str, input: &Tensor, target: &Tensor) -> Result<(), Error> {
    if input.shape() == target.shape() {
        return Ok(());
    }
    Err(tang_runtime::Error::ShapeMismatch {
        op: op.into(),
        detail: format!(
            "the target has shape {:?}, the input {:?}; pass a target of the input's shape",
            target.shape(),
            input.shape()
        ),
    }
    .into())
}

/// Mean squared error averaged over every element (PyTorch's `F.mse_loss(input, target)`,
/// whose default reduction is `'mean'`): `mean((input - target)²)`. Both get gradients.
/// [`mse_loss_with`] takes the reduction.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::functional::mse_loss;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
/// let y = Tensor::from_slice(&dev, &[0.0, 0.0], &[2])?;
/// assert_eq!(mse_loss(&x, &y)?.to_vec()?, vec![2.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] when the shapes differ (PyTorch broadcasts with a warning that it
/// is likely a mistake; tang refuses).
pub fn mse_loss(input: &Tensor, target: &Tensor) -> Result<Tensor, Error> {
    mse_loss_with(input, target, Reduction::Mean)
}

/// Mean squared error with a chosen reduction (PyTorch's
/// `F.mse_loss(input, target, reduction=...)`): `(input - target)²` reduced. Both get
/// gradients.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::functional::{Reduction, mse_loss_with};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
/// let y = Tensor::from_slice(&dev, &[0.0, 0.0], &[2])?;
/// assert_eq!(mse_loss_with(&x, &y, Reduction::Sum)?.to_vec()?, vec![5.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] when the shapes differ.
pub fn mse_loss_with(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor, Error> {
    same_shape("mse_loss", input, target)?;
    reduce_all(input.sub(target)?.square()?, reduction)
}

/// Binary cross-entropy of logits (PyTorch's
/// `F.binary_cross_entropy_with_logits(input, target, reduction)`, without `weight` and
/// `pos_weight`): `softplus(x) - x y` per element, stable for any `x`, reduced.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::functional::{Reduction, binary_cross_entropy_with_logits};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let x = Tensor::zeros(&dev, &[4])?.into_parameter();
/// let y = Tensor::full(&dev, &[4], 1.0)?;
/// let loss = binary_cross_entropy_with_logits(&x, &y, Reduction::Mean)?;
/// assert!((loss.to_vec()?[0] - 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] when the shapes differ.
pub fn binary_cross_entropy_with_logits(
    input: &Tensor,
    target: &Tensor,
    reduction: Reduction,
) -> Result<Tensor, Error> {
    reduce_all(input.bce_with_logits(target)?, reduction)
}

/// Checks `[rows, classes]` input and `[rows]` u32 targets; returns `(rows, classes)`.
pub(crate) fn class_shapes(
    op: &str,
    input: &Tensor,
    target: &Tensor,
) -> Result<(usize, usize), Error> {
    let &[rows, classes] = input.shape() else {
        return Err(invalid(
            op,
            format!(
                "the input must be [rows, classes], got {:?}; reshape [B, T, C] logits to \
                 [B * T, C] and their targets to [B * T]",
                input.shape()
            ),
        ));
    };
    if target.shape() != [rows] || target.dtype() != DType::U32 {
        return Err(invalid(
            op,
            format!(
                "the target must be u32 class indices of shape [{rows}], got {:?} {:?}",
                target.dtype(),
                target.shape()
            ),
        ));
    }
    Ok((rows, classes))
}

/// Per-row `-input[i, target[i]]` (0 for ignored rows) and the f32 mask of kept rows;
/// an out-of-range target is [`tang_runtime::Error::IndexOutOfRange`].
fn picked_rows(
    op: &str,
    input: &Tensor,
    target: &Tensor,
    ignore_index: i64,
    rows: usize,
    classes: usize,
) -> Result<(Tensor, RawTensor), Error> {
    let ignore_index = ignore_index_as_u32(ignore_index)?;
    // A target past the classes is an error (PyTorch's IndexError), not a NaN row.
    ops::check_index(op, target.data(), classes, Some(ignore_index))?;
    let target = target.data();
    let dev = target.device();
    let ignore = ops::full_u32(dev, &[1], ignore_index)?;
    let keep = ops::to_dtype(&ops::ne(target, &ignore)?, DType::F32)?;
    let as_f32 = ops::to_dtype(target, DType::F32)?;
    let safe = index_or_zero::launch(dev, &as_f32, &keep)?;
    let index = ops::to_dtype(&safe, DType::U32)?.reshape(&[rows, 1])?;
    let index = Tensor::constant(index);
    let picked = input.gather(1, &index)?.reshape(&[rows])?;
    let rows = picked.mul_constant(&keep)?.mul_scalar(-1.0)?;
    Ok((rows, keep))
}

/// Reduces per-row losses: the mean is over kept rows (a count kept on the GPU; 0 kept
/// rows give NaN, as in PyTorch).
fn reduce_rows(rows: Tensor, keep: &RawTensor, reduction: Reduction) -> Result<Tensor, Error> {
    match reduction {
        Reduction::None => Ok(rows),
        Reduction::Sum => rows.sum_all(),
        Reduction::Mean => {
            let count = ops::sum_all(keep)?;
            let inv = recip_count(&count)?;
            rows.sum_all()?.mul_constant(&inv)
        }
    }
}

/// `1 / count` on the GPU.
fn recip_count(count: &RawTensor) -> Result<RawTensor, Error> {
    Ok(crate::autograd::recip_kernel::launch(
        count.device(),
        count,
    )?)
}

/// Negative log-likelihood of log-probabilities `input [rows, classes]` against class
/// indices (PyTorch's `F.nll_loss(input, target)`: mean over non-ignored rows, ignore
/// index -100).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::nll_loss;
/// let logp = Tensor::from_slice(&dev, &[-1.0, -2.0, -3.0, -4.0], &[2, 2])?.into_parameter();
/// let targets = Tensor::from_u32(&dev, &[1, 0], &[2])?;
/// assert_eq!(nll_loss(&logp.log_softmax()?, &targets)?.shape(), &[1]); // F.nll_loss(F.log_softmax(x), y)
/// assert_eq!(nll_loss(&logp, &targets)?.to_vec()?, [2.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`nll_loss_with`].
pub fn nll_loss(input: &Tensor, target: &Tensor) -> Result<Tensor, Error> {
    nll_loss_with(input, target, &NllLossOptions::default())
}

/// [`nll_loss`] with PyTorch's `ignore_index` and `reduction`.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::nn::functional::{NllLossOptions, Reduction, nll_loss_with};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let logp = Tensor::from_slice(&dev, &[-1.0, -2.0, -3.0, -4.0], &[2, 2])?.into_parameter();
/// let y = Tensor::from_u32(&dev, &[1, 0], &[2])?;
/// let opts = NllLossOptions { reduction: Reduction::None, ..NllLossOptions::default() };
/// assert_eq!(nll_loss_with(&logp, &y, &opts)?.to_vec()?, vec![2.0, 3.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] unless `input` is `[rows, classes]` and `target` u32 `[rows]`, or
/// when `ignore_index` does not fit 32 bits.
pub fn nll_loss_with(
    input: &Tensor,
    target: &Tensor,
    options: &NllLossOptions,
) -> Result<Tensor, Error> {
    let (rows, classes) = class_shapes("nll_loss", input, target)?;
    let (per_row, keep) = picked_rows(
        "nll_loss",
        input,
        target,
        options.ignore_index,
        rows,
        classes,
    )?;
    reduce_rows(per_row, &keep, options.reduction)
}

/// Cross-entropy of logits `input [rows, classes]` against class indices (PyTorch's
/// `F.cross_entropy(input, target)`: mean over non-ignored rows, ignore index -100).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::cross_entropy;
/// let logits = Tensor::zeros(&dev, &[2, 4])?.into_parameter();
/// let targets = Tensor::from_u32(&dev, &[3, 1], &[2])?;
/// let loss = cross_entropy(&logits, &targets)?; // F.cross_entropy(logits, targets)
/// assert!((loss.to_vec()?[0] - 4f32.ln()).abs() < 1e-5);
/// let grads = loss.backward()?;
/// assert!(grads.get(&logits).is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`cross_entropy_with`].
pub fn cross_entropy(input: &Tensor, target: &Tensor) -> Result<Tensor, Error> {
    cross_entropy_with(input, target, &CrossEntropyOptions::default())
}

/// [`cross_entropy`] with PyTorch's `ignore_index`, `reduction` and `label_smoothing`.
/// The default case (mean, no smoothing) is one fused kernel; the others are
/// `log_softmax` then [`nll_loss_with`]'s gather, plus the smoothing term
/// `-ε/C Σ_c log p_c` on kept rows.
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::nn::functional::{CrossEntropyOptions, Reduction, cross_entropy_with};
/// let logits = Tensor::zeros(&dev, &[2, 4])?.into_parameter();
/// let targets = Tensor::from_u32(&dev, &[3, 1], &[2])?;
/// let opts = CrossEntropyOptions { reduction: Reduction::None, ..CrossEntropyOptions::default() };
/// assert_eq!(cross_entropy_with(&logits, &targets, &opts)?.shape(), &[2]); // one loss per row
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] unless `input` is `[rows, classes]` and `target` u32 `[rows]`,
/// `label_smoothing` is in `[0, 1]` and `ignore_index` fits 32 bits.
pub fn cross_entropy_with(
    input: &Tensor,
    target: &Tensor,
    options: &CrossEntropyOptions,
) -> Result<Tensor, Error> {
    let (rows, classes) = class_shapes("cross_entropy", input, target)?;
    let eps = options.label_smoothing;
    if !(0.0..=1.0).contains(&eps) {
        return Err(invalid(
            "cross_entropy",
            format!("label_smoothing must be between 0.0 and 1.0, got {eps}"),
        ));
    }
    let ignore = ignore_index_as_u32(options.ignore_index)?;
    if options.reduction == Reduction::Mean && eps == 0.0 {
        return input.cross_entropy(target, Some(ignore));
    }
    let logp = input.log_softmax()?;
    let (nll, keep) = picked_rows(
        "cross_entropy",
        &logp,
        target,
        options.ignore_index,
        rows,
        classes,
    )?;
    let per_row = if eps == 0.0 {
        nll
    } else {
        let smooth = logp
            .sum(1)?
            .mul_constant(&keep)?
            .mul_scalar(-eps / classes as f32)?;
        nll.mul_scalar(1.0 - eps)?.add(&smooth)?
    };
    reduce_rows(per_row, &keep, options.reduction)
}
