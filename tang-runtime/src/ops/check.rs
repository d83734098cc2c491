//! Argument checks every op shares: dtype, device, dimension and 32-bit size checks, each
//! failing with the typed error that names what was expected and what was given.

use crate::{DType, Device, Error, Tensor};

/// Fails with [`Error::DType`] unless `t` has element type `want`.
pub(crate) fn dtype(op: &str, t: &Tensor, want: DType) -> Result<(), Error> {
    t.expect_dtype(op, want)
}

/// Fails with [`Error::DeviceMismatch`] unless every tensor of `ts` lives on `dev`; the
/// message names the tensor by its position among `names`.
pub(crate) fn same_device(op: &str, dev: &Device, ts: &[(&str, &Tensor)]) -> Result<(), Error> {
    ts.iter()
        .try_for_each(|(name, t)| t.expect_device(op, name, dev))
}

/// Fails with [`Error::DType`] unless both tensors have one element type.
pub(crate) fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<(), Error> {
    b.expect_dtype(op, a.dtype())
}

/// Fails with [`Error::ShapeMismatch`] unless both tensors have one shape.
pub(crate) fn same_shape(op: &str, a: &Tensor, b: &Tensor) -> Result<(), Error> {
    if a.shape() != b.shape() {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "expected two tensors of one shape, got {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        });
    }
    Ok(())
}

/// Fails with [`Error::ShapeMismatch`] unless `dim < rank`.
pub(crate) fn dim(op: &str, dim: usize, shape: &[usize]) -> Result<(), Error> {
    if dim >= shape.len() {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "dim {dim} is out of range for a tensor of shape {shape:?}; pass a dim below {}",
                shape.len()
            ),
        });
    }
    Ok(())
}

/// `n` as a u32 kernel quantity, or [`Error::TooLarge`] naming `what`.
pub(crate) fn fits_u32(op: &str, what: &str, n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::TooLarge {
        what: format!("{op}: {what}"),
        requested: n as u64,
        limit: u32::MAX.into(),
    })
}

/// Row-major strides of a contiguous tensor of `shape` (in elements).
pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// An [`Error::InvalidArgument`] for `op`.
pub(crate) fn invalid(op: &str, detail: String) -> Error {
    Error::InvalidArgument {
        op: op.into(),
        detail,
    }
}
