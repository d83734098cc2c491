//! Evaluation metrics computed on the GPU (torchmetrics' functional API): [`accuracy`].
//! A metric is a one-element tensor on the device, so metrics of several batches can be
//! combined there and read back once (`.item()`).

use tang_runtime::{DType, ops};

use crate::autograd::{Error, Tensor};
use crate::nn::functional::class_shapes;
use crate::nn::invalid;

/// The fraction of rows whose largest logit is at the target class, as a `[1]` f32
/// tensor on the device (torchmetrics'
/// `accuracy(preds, target, task="multiclass", num_classes=classes)`, micro-averaged;
/// PyTorch: `(logits.argmax(1) == target).float().mean()`). `input` is `[rows, classes]`
/// logits (or probabilities), `target` u32 class indices `[rows]`; a tie counts for the
/// first of the tied classes, and a target outside `0..classes` counts as wrong (nothing
/// is read back to check it). Records no gradient.
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// use tang_nn::metrics::accuracy;
/// let logits = Tensor::from_slice(&dev, &[0.1, 0.9, 0.8, 0.2, 0.3, 0.7], &[3, 2])?;
/// let target = Tensor::from_u32(&dev, &[1, 0, 0], &[3])?;
/// let acc = accuracy(&logits, &target)?; // rows 0 and 1 are right
/// assert!((acc.item()? - 2.0 / 3.0).abs() < 1e-6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Runtime`] unless `input` is f32 `[rows, classes]` with at least one row and
/// one class and `target` u32 `[rows]`.
pub fn accuracy(input: &Tensor, target: &Tensor) -> Result<Tensor, Error> {
    let op = "accuracy";
    let (rows, classes) = class_shapes(op, input, target)?;
    if rows == 0 || classes == 0 || input.data().dtype() != DType::F32 {
        return Err(invalid(
            op,
            format!(
                "the input must be f32 logits with at least one row and one class, got {:?} {:?}",
                input.data().dtype(),
                input.shape()
            ),
        ));
    }
    let predicted = ops::argmax(input.data(), 1)?;
    let right = ops::to_dtype(&ops::eq(&predicted, target.data())?, DType::F32)?;
    Ok(Tensor::constant(ops::mean_all(&right)?))
}
