//! u32 tensors: `arange` and `argmax`/`argmin` along a dimension ([`super::cast`]
//! converts between element types). [`crate::Tensor::to_vec_u32`] reads a u32 tensor back.

use crate::ops::check;
use crate::ops::check::{AxisView, axis_view};
use crate::spec::{Slot, Source, Spec, U32_X_TO_OUT, launch_threads, params};
use crate::wgsl::{IS_NAN_WGSL, per_element, thread_main};
use crate::{DType, Device, Error, Tensor};

params! {
    /// `n` elements; `arange`'s `start` and `step`.
    struct LinearParams { n: u32, start: u32, step: u32 }
}

static ARANGE: Spec<LinearParams> = Spec::new(
    "arange",
    &[],
    &[Slot::ReadWrite("out", "array<u32>")],
    per_element!("out[i] = p.start + i * p.step;"),
);

params! {
    /// `argmax`/`argmin`: `[outer, len, inner]` around the reduced dimension, `total`
    /// outputs.
    struct ArgParams { outer: u32, len: u32, inner: u32, total: u32 }
}

/// One thread per output: the first index of the extreme value; a NaN beats every number
/// (the first NaN wins), as in PyTorch. `MIN = 1` for argmin.
static ARG: Spec<ArgParams> = Spec::new(
    "argmax",
    &[IS_NAN_WGSL],
    U32_X_TO_OUT,
    concat!(
        "override MIN: u32 = 0u;

",
        thread_main!(t < "p.total"),
        "    let c = t % p.inner;
    let o = t / p.inner;
    let base = o * p.len * p.inner + c;
    var best_bits = x[base];
    var best = 0u;
    if (!is_nan(best_bits)) {
        for (var a = 1u; a < p.len; a = a + 1u) {
            let b = x[base + a * p.inner];
            if (is_nan(b)) { best = a; break; }
            let v = bitcast<f32>(b);
            let m = bitcast<f32>(best_bits);
            let better = select(v > m, v < m, MIN == 1u);
            if (better) { best = a; best_bits = b; }
        }
    }
    out[t] = best;
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![ARANGE.source(), ARG.source()]
}

/// `[start, start + step, ...]` up to but excluding `end`, as a u32 tensor (PyTorch's
/// `arange(start, end, step)` with integer arguments; `start == end` gives an empty
/// tensor).
///
/// # Errors
/// [`Error::InvalidArgument`] for `step == 0` and for `end < start` (the step is
/// positive, so the range could only be empty by mistake: PyTorch raises "upper bound
/// and larger bound inconsistent with step sign"), [`Error::TooLarge`],
/// [`Error::DeviceLost`].
pub fn arange(dev: &Device, start: u32, end: u32, step: u32) -> Result<Tensor, Error> {
    let op = "arange";
    if step == 0 {
        return Err(check::invalid(op, "step must be at least 1, got 0".into()));
    }
    if end < start {
        return Err(check::invalid(
            op,
            format!(
                "end {end} is below start {start}, and the step ({step}) counts up; pass end >= start"
            ),
        ));
    }
    let n = (end - start).div_ceil(step);
    let out = dev.empty(&[n as usize], DType::U32)?;
    let params = LinearParams { n, start, step };
    launch_threads(op, dev, &ARANGE, &[], &params, n, &[&out])?;
    Ok(out)
}

fn arg_extreme(op: &str, x: &Tensor, dim: usize, min: bool) -> Result<Tensor, Error> {
    check::dtype(op, x, DType::F32)?;
    let AxisView {
        outer,
        len,
        inner,
        out_shape,
    } = axis_view(op, x.shape(), dim)?;
    let dev = x.device();
    let out = dev.empty(&out_shape, DType::U32)?;
    let total = outer * inner;
    if total == 0 {
        return Ok(out);
    }
    if len == 0 {
        return Err(check::mismatch(
            op,
            format!(
                "dim {dim} of shape {:?} is empty; {op} of no elements is undefined",
                x.shape()
            ),
        ));
    }
    crate::size::fits_u32(op, "elements", x.len())?;
    let params = ArgParams {
        outer: outer as u32,
        len: len as u32,
        inner: inner as u32,
        total: total as u32,
    };
    let min = if min { 1.0 } else { 0.0 };
    launch_threads(
        op,
        dev,
        &ARG,
        &[("MIN", min)],
        &params,
        params.total,
        &[x, &out],
    )?;
    Ok(out)
}

/// The index of the largest element along `dim`, as a u32 tensor with `dim` removed
/// (PyTorch's `argmax(dim)`; a 1-D input gives `[1]`). Ties give the first index; a NaN
/// counts as the largest (the first NaN wins), as in PyTorch.
///
/// # Errors
/// [`Error::ShapeMismatch`] for a `dim` out of range or empty, [`Error::DType`] for a u32
/// tensor, [`Error::TooLarge`].
pub fn argmax(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    arg_extreme("argmax", x, dim, false)
}

/// The index of the smallest element along `dim` (see [`argmax`]; a NaN still wins).
///
/// # Errors
/// As [`argmax`].
pub fn argmin(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    arg_extreme("argmin", x, dim, true)
}
