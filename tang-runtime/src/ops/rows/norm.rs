//! Layer norm and RMS norm over the last axis, forward and backward.
//!
//! Rows that fit in the registers of one subgroup team take the path of
//! [`crate::ops::rows::team`] (a team of lanes per row, several rows per workgroup, shuffle
//! reductions; in the backward each team walks several rows and the workgroup's teams
//! combine their weight/bias sums in workgroup memory in a fixed order). The fallback:
//!
//! Forward: one workgroup of 256 threads per row (2-D grid, any number of rows); the row
//! stays in registers (`vec4` units when its length is a multiple of 4, up to 4096
//! floats), so it is read once even though the variance is taken around the mean (two
//! reductions, no `E[x^2] - mean^2` cancellation). The per-row mean and reciprocal standard
//! deviation are saved for the backward.
//!
//! Backward: one kernel computes the input gradient and, in the same pass, per-workgroup
//! partial sums of the weight and bias gradients: each workgroup walks a block of rows and
//! every thread accumulates the columns it owns in registers. A second, column reduction
//! (the deterministic tree of [`crate::ops::reduce`]) sums the partials: no float atomics, the
//! same bits on every run, and `x` and `grad_out` are read once.
//!
//! f16 inputs (PyTorch's `torch.float16`) go through the f16 forms of the same kernels
//! ([`crate::ops::rows::half`]): statistics and arithmetic in f32, `y` and `grad_x` in the
//! input's dtype. The weight and bias may each be f32 (master weights, as autocast leaves
//! them) or f16; their gradients come in the weight's dtype.

use crate::ops::check::{by_unit, rows_cols, same_dtype, want_f32, want_float, want_shape};
use crate::ops::reduce::sum;
use crate::ops::rows::half::{self, out_dtype};
use crate::ops::rows::layout::{NORM_BWD_SLOTS, NORM_FWD_SLOTS, NormBackwardParams, NormParams};
use crate::ops::rows::team::{Kind, row_kernel, team_kernel};
use crate::ops::to_dtype;
use crate::spec::{Source, grid};
use crate::wgsl::{row_math, unit_specs, wg_common, wg_main};
use crate::{DType, Error, Tensor};

const FWD_BODY: &str = concat!("// true: RMS norm (no mean, no bias; `b` is not read).
override RMS: bool = false;

",
    wg_main!(row),
    "    let live = row < p.rows;
    let n = select(0u, p.n, live);
    let base = row * p.n;
    let cnt = f32(p.n * W);
    var c: array<T, K>;
    var mean = 0.0;
    if (!RMS) {
        var s1 = 0.0;
        for (var k = 0u; k < K; k = k + 1u) {
            let u = lid + k * WG;
            if (u < n) { let v = x[base + u]; c[k] = v; s1 = s1 + hsum(v); }
        }
        for (var u = lid + K * WG; u < n; u = u + WG) { s1 = s1 + hsum(x[base + u]); }
        mean = wg_sum(s1, lid) / cnt;
    } else {
        for (var k = 0u; k < K; k = k + 1u) {
            let u = lid + k * WG;
            if (u < n) { c[k] = x[base + u]; }
        }
    }
    var s2 = 0.0;
    for (var k = 0u; k < K; k = k + 1u) {
        if (lid + k * WG < n) { let d = c[k] - T(mean); s2 = s2 + hsum(d * d); }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) { let d = x[base + u] - T(mean); s2 = s2 + hsum(d * d); }
    let rstd = inverseSqrt(wg_sum(s2, lid) / cnt + p.eps);
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) {
            var o = norm_xhat(c[k], mean, rstd) * w[u];
            if (!RMS) { o = o + b[u]; }
            y[base + u] = o;
        }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) {
        var o = norm_xhat(x[base + u], mean, rstd) * w[u];
        if (!RMS) { o = o + b[u]; }
        y[base + u] = o;
    }
    if (lid == 0u && live) {
        stats[2u * row] = mean;
        stats[2u * row + 1u] = rstd;
    }
}
");

const BWD_BODY: &str = concat!("override RMS: bool = false;

",
    wg_main!(g),
    "    let r0 = g * p.rpt;
    let r1 = min(r0 + p.rpt, p.rows);
    let live = r0 < p.rows;
    let n = select(0u, p.n, live);
    let pbase = g * p.n;
    let cnt = f32(p.n * W);
    // Columns past the registers accumulate in this group's partial rows directly.
    for (var u = lid + K * WG; u < n; u = u + WG) { pw[pbase + u] = T(0.0); pb[pbase + u] = T(0.0); }
    var aw: array<T, K>;
    var ab: array<T, K>;
    var cx: array<T, K>;
    var cg: array<T, K>;
    for (var row = r0; row < r1; row = row + 1u) {
        let base = row * p.n;
        let mean = stats[2u * row];
        let rstd = stats[2u * row + 1u];
        var sg = 0.0;
        var sgx = 0.0;
        for (var k = 0u; k < K; k = k + 1u) {
            let u = lid + k * WG;
            if (u < n) {
                let d = dy[base + u];
                let xh = norm_xhat(x[base + u], mean, rstd);
                let gw = d * w[u];
                cx[k] = xh;
                cg[k] = gw;
                sg = sg + hsum(gw);
                sgx = sgx + hsum(gw * xh);
                aw[k] = aw[k] + d * xh;
                ab[k] = ab[k] + d;
            }
        }
        for (var u = lid + K * WG; u < n; u = u + WG) {
            let d = dy[base + u];
            let xh = norm_xhat(x[base + u], mean, rstd);
            let gw = d * w[u];
            sg = sg + hsum(gw);
            sgx = sgx + hsum(gw * xh);
            pw[pbase + u] = pw[pbase + u] + d * xh;
            pb[pbase + u] = pb[pbase + u] + d;
        }
        let r = wg_sum2(sg, sgx, lid);
        var mg = r.x / cnt;
        if (RMS) { mg = 0.0; }
        let mgx = r.y / cnt;
        for (var k = 0u; k < K; k = k + 1u) {
            let u = lid + k * WG;
            if (u < n) { dx[base + u] = norm_dx(cg[k], cx[k], rstd, mg, mgx); }
        }
        for (var u = lid + K * WG; u < n; u = u + WG) {
            let xh = norm_xhat(x[base + u], mean, rstd);
            let gw = dy[base + u] * w[u];
            dx[base + u] = norm_dx(gw, xh, rstd, mg, mgx);
        }
    }
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) { pw[pbase + u] = aw[k]; pb[pbase + u] = ab[k]; }
    }
}
");

unit_specs!(K_FWD_V4, K_FWD_F1: NormParams = "norm", [wg_common!(), row_math!()], NORM_FWD_SLOTS, FWD_BODY);
unit_specs!(K_BWD_V4, K_BWD_F1: NormBackwardParams = "norm_backward", [wg_common!(), row_math!()], NORM_BWD_SLOTS, BWD_BODY);

/// Every kernel of this file, for the registry of `rows/mod.rs` (the team variants are
/// listed by `rows_team`).
pub(crate) fn kernels() -> Vec<Source> {
    [K_FWD_V4.source(), K_FWD_F1.source()]
        .into_iter()
        .chain([K_BWD_V4.source(), K_BWD_F1.source()])
        .flat_map(|k| [k.clone(), half::registry_form(k)])
        .collect()
}

/// A norm's output and what its backward needs.
#[derive(Clone, Debug)]
pub struct NormOutput {
    /// The normalised, scaled (and for layer norm shifted) input, shape of `x`.
    pub y: Tensor,
    /// `[rows, 2]`: per row the mean (0 for RMS norm) and the reciprocal standard
    /// deviation (reciprocal RMS), for [`layer_norm_backward`] / [`rms_norm_backward`].
    /// Both are NaN for rows of zero columns.
    pub stats: Tensor,
}

/// Gradients of [`layer_norm`].
#[derive(Clone, Debug)]
pub struct LayerNormGrads {
    /// Gradient w.r.t. the input, shape of `x`.
    pub grad_x: Tensor,
    /// Gradient w.r.t. the weight, `[cols]`.
    pub grad_weight: Tensor,
    /// Gradient w.r.t. the bias, `[cols]`.
    pub grad_bias: Tensor,
}

/// Gradients of [`rms_norm`].
#[derive(Clone, Debug)]
pub struct RmsNormGrads {
    /// Gradient w.r.t. the input, shape of `x`.
    pub grad_x: Tensor,
    /// Gradient w.r.t. the weight, `[cols]`.
    pub grad_weight: Tensor,
}

fn check_vec(op: &str, what: &str, t: &Tensor, cols: usize) -> Result<(), Error> {
    want_float(op, t)?;
    want_shape(op, what, t.shape(), &[cols], "the last axis of x")
}

fn check_x(op: &str, x: &Tensor) -> Result<(usize, usize), Error> {
    want_float(op, x)?;
    let (rows, cols) = rows_cols(op, x)?;
    if x.len() > u32::MAX as usize / 2 {
        return Err(Error::TooLarge {
            what: format!("{op}: elements"),
            requested: x.len() as u64,
            limit: u64::from(u32::MAX / 2),
        });
    }
    Ok((rows, cols))
}

fn forward(x: &Tensor, w: &Tensor, b: &Tensor, eps: f32, rms: bool) -> Result<NormOutput, Error> {
    let op = if rms { "rms_norm" } else { "layer_norm" };
    let (rows, cols) = check_x(op, x)?;
    check_vec(op, "weight", w, cols)?;
    check_vec(op, "bias", b, cols)?;
    let dev = x.device();
    let y = dev.empty(x.shape(), out_dtype(x.dtype(), cols.is_multiple_of(4)))?;
    if rows == 0 || cols == 0 {
        // The statistics of an empty row are NaN (0 / 0, as PyTorch's mean and variance
        // of no elements); `y` has no elements. Never the pool's old contents.
        let stats = Tensor::full(dev, &[rows, 2], f32::NAN)?;
        let y = to_dtype(&y, x.dtype())?;
        return Ok(NormOutput { y, stats });
    }
    let stats = dev.empty(&[rows, 2], DType::F32)?;
    let (spec, n) = by_unit(cols, [&K_FWD_V4, &K_FWD_F1]);
    let params = NormParams {
        rows: rows as u32,
        n: n as u32,
        eps,
    };
    let flag = [("RMS", if rms { 1.0 } else { 0.0 })];
    let (k, g, flag) = row_kernel(
        dev,
        op,
        Kind::NormFwd { rms },
        rows,
        cols,
        spec.kernel()?,
        &flag,
    )?;
    half::dispatch(spec.layout(), k, flag, &params, &[x, &y, w, b, &stats], g)?;
    let y = to_dtype(&y, x.dtype())?;
    Ok(NormOutput { y, stats })
}

/// Workgroups of the backward: enough for several waves on a large GPU, so the partial
/// sums (`groups x cols` floats, twice) stay a few percent of the traffic.
const BWD_GROUPS: usize = 2048;

fn backward(
    x: &Tensor,
    w: &Tensor,
    stats: &Tensor,
    grad_out: &Tensor,
    rms: bool,
) -> Result<(Tensor, Tensor, Option<Tensor>), Error> {
    let op = if rms {
        "rms_norm_backward"
    } else {
        "layer_norm_backward"
    };
    let (rows, cols) = check_x(op, x)?;
    check_vec(op, "weight", w, cols)?;
    want_f32(op, stats)?;
    same_dtype(op, x, grad_out)?;
    want_shape(
        op,
        "stats",
        stats.shape(),
        &[rows, 2],
        "NormOutput::stats of the forward",
    )?;
    want_shape(op, "grad_y", grad_out.shape(), x.shape(), "the shape of x")?;
    let dev = x.device();
    let dx = dev.empty(x.shape(), out_dtype(x.dtype(), cols.is_multiple_of(4)))?;
    // The input gradient in the input's dtype, the weight's and bias's in the weight's.
    let finish = |dx: Tensor, gw: Tensor, gb: Option<Tensor>| {
        Ok((
            to_dtype(&dx, x.dtype())?,
            to_dtype(&gw, w.dtype())?,
            gb.map(|gb| to_dtype(&gb, w.dtype())).transpose()?,
        ))
    };
    if rows == 0 || cols == 0 {
        let zeros = || Tensor::zeros(dev, &[cols]);
        return finish(dx, zeros()?, Some(zeros()?));
    }
    let flag = [("RMS", if rms { 1.0 } else { 0.0 })];
    // Rows per workgroup step: one per team on the subgroup path, one on the fallback.
    let team = team_kernel(dev, Kind::NormBwd { rms }, cols)?;
    let step = team.map_or(1, |(_, r)| r as usize);
    // Rows per team (or per fallback workgroup): as few as keep the workgroups near
    // BWD_GROUPS, so the partial sums stay small next to x, grad_out and grad_x.
    let rpt = rows.div_ceil(BWD_GROUPS * step).max(1);
    let groups = rows.div_ceil(rpt * step);
    // The weight's and the bias's partial sums side by side in one buffer `[2, groups,
    // cols]`, so one reduction sums both into `[2, cols]` (two launches fewer per layer
    // norm), where the device's binding alignment lets each half be a view (`cols` floats
    // a multiple of it: 384 floats are 1536 bytes, the alignment 16 to 256 bytes).
    let both = if !rms && dev.is_view_aligned((cols * 4) as u64) {
        Some(dev.empty(&[2, groups, cols], DType::F32)?)
    } else {
        None
    };
    let halves = both.as_ref().and_then(|t| {
        t.view_at(0, &[groups, cols])
            .zip(t.view_at(groups * cols, &[groups, cols]))
    });
    let combined = halves.is_some();
    let (pw, pb) = match halves {
        Some(h) => h,
        None => (
            dev.empty(&[groups, cols], DType::F32)?,
            dev.empty(&[groups, cols], DType::F32)?,
        ),
    };
    let (spec, n) = by_unit(cols, [&K_BWD_V4, &K_BWD_F1]);
    let params = NormBackwardParams {
        rows: rows as u32,
        n: n as u32,
        rpt: rpt as u32,
    };
    let g = grid(dev, op, groups as u64)?;
    let (k, flag) = match team {
        Some((k, _)) => (k, &[][..]),
        None => (spec.kernel()?, &flag[..]),
    };
    let tensors = [x, w, stats, grad_out, &dx, &pw, &pb];
    half::dispatch(spec.layout(), k, flag, &params, &tensors, g)?;
    if let Some(both) = both.filter(|_| combined) {
        let sums = sum(&both, 1)?;
        if let Some((gw, gb)) = sums.view_at(0, &[cols]).zip(sums.view_at(cols, &[cols])) {
            return finish(dx, gw, Some(gb));
        }
    }
    let gw = sum(&pw, 0)?;
    let gb = if rms { None } else { Some(sum(&pb, 0)?) };
    finish(dx, gw, gb)
}

/// Layer norm over the last axis: `x [..., n]`, `weight [n]`, `bias [n]` ->
/// `y = (x - mean) / sqrt(var + eps) * weight + bias` (biased variance, as PyTorch), plus
/// the per-row statistics the backward needs. Pass ones and zeros for no affine part.
/// An f16 `x` gives an f16 `y` computed in f32 (the statistics stay f32); `weight` and
/// `bias` may each be f32 (autocast's master weights) or f16.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `weight`/`bias` are not `[n]` or `x` is a scalar,
/// [`Error::DType`] for u32 tensors, [`Error::TooLarge`] past 2^31 elements.
pub fn layer_norm(
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    eps: f32,
) -> Result<NormOutput, Error> {
    forward(x, weight, bias, eps, false)
}

/// RMS norm over the last axis: `x [..., n]`, `weight [n]` ->
/// `y = x / sqrt(mean(x^2) + eps) * weight`, plus the per-row statistics; f16 as
/// [`layer_norm`].
///
/// # Errors
/// As [`layer_norm`].
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32) -> Result<NormOutput, Error> {
    forward(x, weight, weight, eps, true)
}

/// Gradients of [`layer_norm`] from its input `x [..., n]`, `weight [n]`, the forward's
/// `stats [rows, 2]` and the upstream gradient `grad_out` (shape and dtype of `x`).
/// `grad_x` comes in `x`'s dtype, `grad_weight` and `grad_bias` (summed in f32) in the
/// weight's: f32 for f32 master weights.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the shapes do not fit, [`Error::DType`] for u32 tensors,
/// f16 `stats`, or a `grad_out` of another dtype than `x`.
pub fn layer_norm_backward(
    grad_out: &Tensor,
    x: &Tensor,
    weight: &Tensor,
    stats: &Tensor,
) -> Result<LayerNormGrads, Error> {
    let (grad_x, grad_weight, grad_bias) = backward(x, weight, stats, grad_out, false)?;
    let grad_bias = match grad_bias {
        Some(t) => t,
        None => Tensor::zeros(x.device(), &[weight.len()])?,
    };
    Ok(LayerNormGrads {
        grad_x,
        grad_weight,
        grad_bias,
    })
}

/// Gradients of [`rms_norm`] from its input `x [..., n]`, `weight [n]`, the forward's
/// `stats [rows, 2]` and the upstream gradient `grad_out` (shape of `x`).
///
/// # Errors
/// As [`layer_norm_backward`].
pub fn rms_norm_backward(
    grad_out: &Tensor,
    x: &Tensor,
    weight: &Tensor,
    stats: &Tensor,
) -> Result<RmsNormGrads, Error> {
    let (grad_x, grad_weight, _) = backward(x, weight, stats, grad_out, true)?;
    Ok(RmsNormGrads {
        grad_x,
        grad_weight,
    })
}
