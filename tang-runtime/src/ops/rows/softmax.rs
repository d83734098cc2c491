//! Softmax and log-softmax over the last axis, forward and backward.
//!
//! Rows that fit in the registers of one subgroup team take the path of
//! [`crate::ops::rows::team`] (several rows per workgroup, shuffle reductions, no barriers).
//! Otherwise (and without subgroups): one workgroup of 256 threads per row, rows on a 2-D
//! grid (any number of rows). Each
//! thread keeps its share of the row in registers (`vec4` units when the row length is a
//! multiple of 4: rows up to 4096 floats are read once), finds its local maximum and
//! sum of exponentials, and the workgroup combines the (max, sum) pairs in one tree
//! reduction. Longer rows stream their tail with an online max/sum update and read it a
//! second time for the output.
//!
//! f16 rows (PyTorch's `torch.float16`) are read through the f16 forms of the same kernels
//! ([`crate::ops::rows::half`]): statistics in f32, the output f16, rounded once.

use crate::ops::check::{by_unit, rows_cols, same_dtype, want_float, want_shape};
use crate::ops::rows::half::{self, out_dtype};
use crate::ops::rows::layout::{SOFTMAX_BWD_SLOTS, SOFTMAX_FWD_SLOTS, SoftmaxParams};
use crate::ops::rows::team::{Kind, row_kernel};
use crate::ops::to_dtype;
use crate::spec::{Source, Spec};
use crate::wgsl::{lowest, row_math, row_max_sumexp, unit_specs, wg_common, wg_main};
use crate::{Device, Error, Tensor};

const FWD_BODY: &str = concat!(
    "// true: log_softmax.
override LOG: bool = false;

",
    wg_main!(row),
    "    let n = select(0u, p.n, row < p.rows);
    let base = row * p.n;
    var c: array<T, K>;
    let r = row_max_sumexp(&c, base, n, lid);
    let mx = r.x;
    let lse = mx + log(r.y);
    let inv = 1.0 / r.y;
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) { y[base + u] = softmax_y(c[k], exp(c[k] - T(mx)), inv, lse, LOG); }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) {
        let v = x[base + u];
        y[base + u] = softmax_y(v, exp(v - T(mx)), inv, lse, LOG);
    }
}
"
);

const BWD_BODY: &str = concat!(
    "// false: dx = y * (dy - sum(y * dy)); true (y = log_softmax): dx = dy - exp(y) * sum(dy).
override LOG: bool = false;

",
    wg_main!(row),
    "    let n = select(0u, p.n, row < p.rows);
    let base = row * p.n;
    var cy: array<T, K>;
    var cg: array<T, K>;
    var acc = 0.0;
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) {
            let yv = y[base + u];
            let g = dy[base + u];
            cy[k] = yv;
            cg[k] = g;
            acc = acc + hsum(softmax_bwd_term(yv, g, LOG));
        }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) {
        acc = acc + hsum(softmax_bwd_term(y[base + u], dy[base + u], LOG));
    }
    let d = wg_sum(acc, lid);
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) { dx[base + u] = softmax_bwd_dx(cy[k], cg[k], d, LOG); }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) {
        dx[base + u] = softmax_bwd_dx(y[base + u], dy[base + u], d, LOG);
    }
}
"
);

unit_specs!(K_FWD_V4, K_FWD_F1: SoftmaxParams = "softmax", [wg_common!(), lowest!(), row_math!(), row_max_sumexp!()], SOFTMAX_FWD_SLOTS, FWD_BODY);
unit_specs!(K_BWD_V4, K_BWD_F1: SoftmaxParams = "softmax_backward", [wg_common!(), row_math!()], SOFTMAX_BWD_SLOTS, BWD_BODY);

/// Every kernel of this file, for the registry of `rows/mod.rs` (the team variants are
/// listed by `rows_team`).
pub(crate) fn kernels() -> Vec<Source> {
    [&K_FWD_V4, &K_FWD_F1, &K_BWD_V4, &K_BWD_F1]
        .iter()
        .flat_map(|k| [k.source(), half::registry_form(k.source())])
        .collect()
}

fn check_len(op: &str, x: &Tensor) -> Result<(usize, usize), Error> {
    want_float(op, x)?;
    let (rows, cols) = rows_cols(op, x)?;
    if x.len() > u32::MAX as usize {
        return Err(Error::TooLarge {
            what: format!("{op}: elements"),
            requested: x.len() as u64,
            limit: u64::from(u32::MAX),
        });
    }
    Ok((rows, cols))
}

/// Records one softmax kernel over `rows` rows of `cols` floats: the team kernel of `kind`
/// where the row path picks one, else the fallback of `specs` (`vec4` form first); `tensors`
/// in slot order.
fn record(
    dev: &Device,
    op: &str,
    kind: Kind,
    specs: [&'static Spec<SoftmaxParams>; 2],
    (rows, cols): (usize, usize),
    tensors: &[&Tensor],
) -> Result<(), Error> {
    let (spec, n) = by_unit(cols, specs);
    let params = SoftmaxParams {
        rows: rows as u32,
        n: n as u32,
    };
    let log = matches!(
        kind,
        Kind::SoftmaxFwd { log: true } | Kind::SoftmaxBwd { log: true }
    );
    let flag = [("LOG", if log { 1.0 } else { 0.0 })];
    let (k, g, flag) = row_kernel(dev, op, kind, rows, cols, spec.kernel()?, &flag)?;
    half::dispatch(spec.layout(), k, flag, &params, tensors, g)
}

fn forward(x: &Tensor, log: bool) -> Result<Tensor, Error> {
    let op = if log { "log_softmax" } else { "softmax" };
    let dims = check_len(op, x)?;
    let specs = [&K_FWD_V4, &K_FWD_F1];
    run(op, Kind::SoftmaxFwd { log }, specs, dims, x, None)
}

fn backward(y: &Tensor, grad_out: &Tensor, log: bool) -> Result<Tensor, Error> {
    let op = if log {
        "log_softmax_backward"
    } else {
        "softmax_backward"
    };
    let dims = check_len(op, y)?;
    same_dtype(op, y, grad_out)?;
    want_shape(
        op,
        "grad_y",
        grad_out.shape(),
        y.shape(),
        "the forward output y",
    )?;
    let specs = [&K_BWD_V4, &K_BWD_F1];
    run(op, Kind::SoftmaxBwd { log }, specs, dims, y, Some(grad_out))
}

/// Runs a pass over `first`'s rows: a new output shaped like `first` and of its dtype,
/// bound after it (and before `second`, when given).
fn run(
    op: &str,
    kind: Kind,
    specs: [&'static Spec<SoftmaxParams>; 2],
    (rows, cols): (usize, usize),
    first: &Tensor,
    second: Option<&Tensor>,
) -> Result<Tensor, Error> {
    let dev = first.device();
    let dtype = first.dtype();
    let out = dev.empty(first.shape(), out_dtype(dtype, cols.is_multiple_of(4)))?;
    if rows > 0 && cols > 0 {
        let mut tensors = vec![first, &out];
        tensors.extend(second);
        record(dev, op, kind, specs, (rows, cols), &tensors)?;
    }
    to_dtype(&out, dtype)
}

/// Softmax over the last axis: `[..., n] -> [..., n]`, `y = exp(x - max) / sum(exp(x - max))`.
/// A row of all `-inf` gives NaN (as PyTorch). An f16 `x` gives an f16 `y`, computed in
/// f32 and rounded once (as PyTorch for `torch.float16`).
///
/// # Errors
/// [`Error::ShapeMismatch`] for a scalar, [`Error::DType`] for a u32 tensor,
/// [`Error::TooLarge`] past 2^32 elements.
pub fn softmax(x: &Tensor) -> Result<Tensor, Error> {
    forward(x, false)
}

/// Log-softmax over the last axis: `[..., n] -> [..., n]`, `y = x - max - log(sum(exp(x - max)))`.
///
/// # Errors
/// As [`softmax`].
pub fn log_softmax(x: &Tensor) -> Result<Tensor, Error> {
    forward(x, true)
}

/// Gradient of [`softmax`]: from its output `y` and the upstream gradient `grad_out` (both
/// `[..., n]`), `grad_x = y * (grad_out - sum(y * grad_out))` per row. `grad_out` has the
/// dtype of `y` and `grad_x` too (f16 for an f16 softmax, summed in f32).
///
/// # Errors
/// [`Error::ShapeMismatch`] when the shapes differ, [`Error::DType`] for u32 tensors or a
/// `grad_out` of another dtype than `y`.
pub fn softmax_backward(grad_out: &Tensor, y: &Tensor) -> Result<Tensor, Error> {
    backward(y, grad_out, false)
}

/// Gradient of [`log_softmax`]: from its output `y` and `grad_out` (both `[..., n]`),
/// `grad_x = grad_out - exp(y) * sum(grad_out)` per row.
///
/// # Errors
/// As [`softmax_backward`].
pub fn log_softmax_backward(grad_out: &Tensor, y: &Tensor) -> Result<Tensor, Error> {
    backward(y, grad_out, true)
}
