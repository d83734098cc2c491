//! Attention on f16 tensors (PyTorch's `scaled_dot_product_attention` on `torch.float16`):
//! where the device has tensor cores the forward and the backward read f16 directly
//! (`coop_fwd.rs`, `coop_bwd.rs`); elsewhere, and in the KV-cache decode, q, k, v (and in
//! the backward `o` and `grad_out`) are widened to f32 around the fused kernels, which
//! compute in f32, and the results are rounded to f16 once; the logsumexp stays f32. The
//! widening is a pass of its own per tensor.

use crate::cast::to_dtype;
use crate::{DType, Error, Tensor};

/// Whether a call on `tensors` takes the f16 path: when one is f16, all must be (PyTorch
/// requires one dtype for q, k and v).
///
/// # Errors
/// [`Error::DType`] when f16 and f32 tensors are mixed.
pub(super) fn is_f16(op: &str, tensors: &[&Tensor]) -> Result<bool, Error> {
    if tensors.iter().all(|t| t.dtype() != DType::F16) {
        return Ok(false);
    }
    for t in tensors {
        t.expect_dtype(op, DType::F16)?;
    }
    Ok(true)
}

/// `tensors` widened to f32 (exact), in order.
pub(super) fn widen(tensors: &[&Tensor]) -> Result<Vec<Tensor>, Error> {
    tensors.iter().map(|t| to_dtype(t, DType::F32)).collect()
}

/// `t` rounded to f16 (to nearest even).
pub(super) fn narrow(t: &Tensor) -> Result<Tensor, Error> {
    to_dtype(t, DType::F16)
}
