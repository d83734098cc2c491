//! Rust-side checks and launch helpers shared by the dense kernels: dtype checks, row and
//! axis views of a shape, and the 2-D workgroup grid.

use crate::ops::check::mismatch;
use crate::size::Size;
use crate::spec::Spec;
use crate::{DType, Device, Error, Tensor};

/// A 2-D grid of `groups` workgroups (x at most the device's per-dimension limit), for
/// kernels that index with `group_index`.
pub(crate) fn grid(dev: &Device, op: &str, groups: u64) -> Result<[u32; 3], Error> {
    let maxd = u64::from(dev.info().limits.max_compute_workgroups_per_dimension).max(1);
    let x = groups.clamp(1, maxd);
    let y = groups.div_ceil(x).max(1);
    if y > maxd {
        return Err(Error::TooLarge {
            what: format!("{op}: workgroups"),
            requested: groups,
            limit: maxd * maxd,
        });
    }
    Ok([x as u32, y as u32, 1])
}

/// The unit of a row kernel for rows of `len` floats, and the row's length in units:
/// `vec4` (the first of `specs`, `[vec4 form, f32 form]` as [`unit_specs`] declares them)
/// when `len` is a multiple of 4, else `f32`.
///
/// [`unit_specs`]: super::wgsl::unit_specs
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
    crate::ops::check::dim(op, axis, s)?;
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
