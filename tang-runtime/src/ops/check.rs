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

/// Fails with [`Error::DType`] or [`Error::DeviceMismatch`] unless every named tensor is
/// f32 and lives on `dev`.
pub(crate) fn floats_on<'a>(
    op: &str,
    dev: &Device,
    ts: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
) -> Result<(), Error> {
    ts.into_iter().try_for_each(|(name, t)| {
        t.expect_dtype(op, DType::F32)?;
        t.expect_device(op, name, dev)
    })
}

/// Fails with [`Error::DType`] unless both tensors have one element type.
pub(crate) fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<(), Error> {
    b.expect_dtype(op, a.dtype())
}

/// Fails with [`Error::ShapeMismatch`] unless both tensors have one shape.
pub(crate) fn same_shape(op: &str, a: &Tensor, b: &Tensor) -> Result<(), Error> {
    if a.shape() != b.shape() {
        return Err(mismatch(
            op,
            format!(
                "expected two tensors of one shape, got {:?} and {:?}",
                a.shape(),
                b.shape()
            ),
        ));
    }
    Ok(())
}

/// Fails with [`Error::ShapeMismatch`] unless `dim < rank`.
pub(crate) fn dim(op: &str, dim: usize, shape: &[usize]) -> Result<(), Error> {
    if dim >= shape.len() {
        return Err(mismatch(
            op,
            format!(
                "dim {dim} is out of range for a tensor of shape {shape:?}; pass a dim below {}",
                shape.len()
            ),
        ));
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

/// A sliding window's output length along one axis of an NCHW input (conv and pooling):
/// `(size + 2·padding − span) / stride + 1`, `span = dilation·(kernel − 1) + 1`, for
/// `kernel >= 1` and `stride >= 1`. [`Error::ShapeMismatch`] when the padded input is
/// shorter than the span; `input` and `padding` only name the arguments in the message.
pub(crate) fn window_len(
    op: &str,
    input: &[usize],
    padding: [usize; 2],
    axis: usize,
    [kernel, stride, dilation]: [usize; 3],
) -> Result<usize, Error> {
    let span = dilation.saturating_mul(kernel - 1).saturating_add(1);
    let padded = padding[axis]
        .saturating_mul(2)
        .saturating_add(input[axis + 2]);
    if padded < span {
        return Err(mismatch(
            op,
            format!(
                "the input {input:?} padded by {padding:?} is smaller than the window (span {span} along axis {})",
                axis + 2
            ),
        ));
    }
    Ok((padded - span) / stride + 1)
}

/// Row-major strides of a contiguous tensor of `shape` (in elements).
pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// An [`Error::ShapeMismatch`] for `op`.
pub(crate) fn mismatch(op: &str, detail: String) -> Error {
    Error::ShapeMismatch {
        op: op.into(),
        detail,
    }
}

/// An [`Error::InvalidArgument`] for `op`.
pub(crate) fn invalid(op: &str, detail: String) -> Error {
    Error::InvalidArgument {
        op: op.into(),
        detail,
    }
}
