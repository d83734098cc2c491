//! Argument checks every op shares: dtype, device, dimension and 32-bit size checks, each
//! failing with the typed error that names what was expected and what was given; row and
//! dim views of a shape; the 2-D workgroup grid of the hand-written kernels.

use crate::size::Size;
use crate::spec::Spec;
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

/// The unit of a row kernel for rows of `len` floats, and the row's length in units:
/// `vec4` (the first of `specs`, `[vec4 form, f32 form]` as [`unit_specs`] declares them)
/// when `len` is a multiple of 4, else `f32`.
///
/// [`unit_specs`]: crate::wgsl::unit_specs
pub(crate) fn by_unit<P>(len: usize, specs: [&Spec<P>; 2]) -> (&Spec<P>, usize) {
    if len.is_multiple_of(4) {
        (specs[0], len / 4)
    } else {
        (specs[1], len)
    }
}

/// Checks that `t` is an f32 tensor.
pub(crate) fn want_f32(op: &str, t: &Tensor) -> Result<(), Error> {
    t.expect_dtype(op, DType::F32)
}

/// Checks that `t` is a float tensor: f32, or f16 for the ops that read f16 and compute
/// in f32 (the row ops and the reductions).
pub(crate) fn want_float(op: &str, t: &Tensor) -> Result<(), Error> {
    if t.dtype() == DType::F16 {
        return Ok(());
    }
    want_f32(op, t)
}

/// Fails with [`Error::ShapeMismatch`] unless `got == want`; the message names the tensor
/// (`what`) and where the expected shape comes from (`why`, formatted only on failure).
pub(crate) fn want_shape(
    op: &str,
    what: &str,
    got: &[usize],
    want: &[usize],
    why: impl std::fmt::Display,
) -> Result<(), Error> {
    if got == want {
        return Ok(());
    }
    Err(mismatch(
        op,
        format!("{what} has shape {got:?}; expected {want:?} ({why})"),
    ))
}

/// Checks that `t` is a u32 tensor.
pub(crate) fn want_u32(op: &str, t: &Tensor) -> Result<(), Error> {
    t.expect_dtype(op, DType::U32)
}

/// Splits a tensor of rank >= 1 into `(rows, cols)` over its last axis.
pub(crate) fn rows_cols(op: &str, t: &Tensor) -> Result<(usize, usize), Error> {
    let s = t.shape();
    let Some((&c, lead)) = s.split_last() else {
        return Err(mismatch(
            op,
            "expected a tensor of rank >= 1 ([..., cols]), got a scalar".into(),
        ));
    };
    let rows = Size::product(lead).counted(|| format!("{op}: rows of shape {s:?}"))?;
    Ok((rows, c))
}

/// `shape` viewed as `[outer, len, inner]` around `axis`, and the shape of a reduction
/// along it (the axis removed; `[1]` for rank 1).
pub(crate) struct AxisView {
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub out_shape: Vec<usize>,
}

/// Splits `shape` around `axis`; [`Error::ShapeMismatch`] when `axis >= rank`,
/// [`Error::TooLarge`] when the part before or after the axis overflows.
pub(crate) fn axis_view(op: &str, s: &[usize], axis: usize) -> Result<AxisView, Error> {
    dim(op, axis, s)?;
    let mut out_shape: Vec<usize> = s
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != axis)
        .map(|(_, &d)| d)
        .collect();
    if out_shape.is_empty() {
        out_shape.push(1);
    }
    // The parts of an empty shape may overflow on their own (`[2^40, 0, 2^40]` around
    // axis 1): an error, since the reduction's output would have 2^80 elements.
    let part = |dims: &[usize], which: &str| {
        Size::product(dims).counted(|| format!("{op}: {which} of shape {s:?} around axis {axis}"))
    };
    Ok(AxisView {
        outer: part(&s[..axis], "elements before the axis")?,
        len: s[axis],
        inner: part(&s[axis + 1..], "elements after the axis")?,
        out_shape,
    })
}
