//! Reductions (sum, max, mean) along one axis or over a whole tensor.
//!
//! A tensor is viewed as `[outer, axis, inner]` around the reduced axis:
//! - `inner == 1` (the last axis): one workgroup of 256 threads per row (or per chunk of
//!   a long row), a strided coalesced loop (`vec4` loads when the row length is a
//!   multiple of 4), then a tree reduction in workgroup memory;
//! - `inner > 1`: when the columns alone fill the GPU, one thread per output column,
//!   coalesced across `inner`; otherwise workgroups of 8 columns (`vec4`s) by 32 rows,
//!   each thread striding down its column, then a tree over the 32 rows in workgroup
//!   memory. The tree keeps a chunk's threads busy with few loads each, so two passes
//!   always suffice for the shapes of a training step (a bias gradient's
//!   `[16384, 384]` is 86 chunks, then one): one launch fewer per bias than chunking
//!   one thread per column, which took three passes there.
//!
//! When the outputs alone would leave the GPU idle (few long rows), the axis is split into
//! chunks whose partial results are reduced again by the same kernels (multi-pass), so a
//! reduction over 100 million elements still uses every core. The order of operations
//! depends only on the shapes: results are bit-identical from run to run.
//!
//! NaN propagates as in PyTorch: a sum or mean over a NaN is NaN through the arithmetic,
//! and the maximum of a slice holding NaN is NaN through an explicit test on the bits
//! (`nan_max.rs`), because WGSL's `max` and the drivers drop NaN.
//!
//! f16 tensors (PyTorch's `torch.float16`) are read through the f16 forms of the same
//! kernels ([`crate::ops::rows::half`]) in the first pass; partial results and the
//! accumulation are f32, and the result is rounded once to f16, as PyTorch's `sum`,
//! `mean` and `max` of f16 return f16.
//!
//! The backward passes ([`sum_backward`], [`mean_backward`], [`max_backward`] and their
//! whole-tensor forms) live in their own file and are reached through this module.

mod backward;
mod foreach;
pub(super) mod nan_max;

use crate::ops::check::{AxisView, axis_view, by_unit, mismatch, want_float};
use crate::ops::reduce::nan_max::{nan_max_f1, nan_max_v4};
use crate::ops::rows::half::{dispatch_spec, registry_form};
use crate::ops::to_dtype;
use crate::size::WG;
use crate::spec::{Slot, Source, grid, params};
use crate::wgsl::{chunk_main, unit_specs, wg_common, wg_main};
use crate::{DType, Error, Tensor};

pub use foreach::{foreach_sum_of_squares, foreach_unscale_count_non_finite};

pub use backward::{
    max_all_backward, max_backward, mean_all_backward, mean_backward, sum_all_backward,
    sum_backward,
};

params! {
    /// A reduction along the last axis: `rows` rows of `n` units (`T`), each cut into
    /// `chunks` chunks of `chunk` units; sums are multiplied by `scale`.
    struct RowsParams { rows: u32, n: u32, chunk: u32, chunks: u32, scale: f32 }
}

params! {
    /// A reduction along a middle axis of `[outer, axis, inner]` (`inner` in units `T`),
    /// the axis cut into `chunks` chunks of `chunk`; sums are multiplied by `scale`.
    struct ColsParams { outer: u32, axis: u32, inner: u32, chunk: u32, chunks: u32, scale: f32 }
}

const ROWS_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::ReadWrite("out", "array<f32>"),
];

const ROWS_BODY: &str = concat!(
    "// 0: sum, 1: max.
override OP: u32 = 0u;

// Max propagates NaN (see nan_max.rs).
fn comb(a: f32, b: f32) -> f32 {
    if (OP == 1u) { return max_nan(a, b); }
    return a + b;
}
fn hred(v: T) -> f32 {
    if (OP == 1u) { return hmax_nan(v); }
    return hsum(v);
}

",
    wg_main!(g),
    "    let row = g / max(p.chunks, 1u);
    let c = g % max(p.chunks, 1u);
    let live = row < p.rows;
    let lo = c * p.chunk;
    let hi = select(0u, min(lo + p.chunk, p.n), live);
    var ident = 0.0;
    // Or-ed with a run-time zero: Chrome's WGSL compiler rejects a non-finite constant.
    if (OP == 1u) { ident = bitcast<f32>(0xff800000u | (row & 0u)); }
    // Four independent accumulators keep four loads in flight per thread.
    var a0 = ident; var a1 = ident; var a2 = ident; var a3 = ident;
    let base = row * p.n;
    var u = lo + lid;
    for (; u + 3u * WG < hi; u = u + 4u * WG) {
        a0 = comb(a0, hred(x[base + u]));
        a1 = comb(a1, hred(x[base + u + WG]));
        a2 = comb(a2, hred(x[base + u + 2u * WG]));
        a3 = comb(a3, hred(x[base + u + 3u * WG]));
    }
    for (; u < hi; u = u + WG) { a0 = comb(a0, hred(x[base + u])); }
    let acc = comb(comb(a0, a1), comb(a2, a3));
    var r = 0.0;
    if (OP == 1u) { r = wg_max_nan(acc, lid); } else { r = wg_sum(acc, lid) * p.scale; }
    if (lid == 0u && live) { out[row * p.chunks + c] = r; }
}
"
);

const COLS_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::ReadWrite("out", "array<T>"),
];

const COLS_BODY: &str = concat!(
    "override OP: u32 = 0u;

// Max propagates NaN (see nan_max.rs).
fn comb(a: T, b: T) -> T {
    if (OP == 1u) { return tmax_nan(a, b); }
    return a + b;
}

",
    chunk_main!(),
    "    let lo = c * p.chunk;
    let hi = min(lo + p.chunk, p.axis);
    var acc = T(0.0);
    // Or-ed with a run-time zero: Chrome's WGSL compiler rejects a non-finite constant.
    if (OP == 1u) { acc = T(bitcast<f32>(0xff800000u | (idx & 0u))); }
    for (var a = lo; a < hi; a = a + 1u) {
        acc = comb(acc, x[(o * p.axis + a) * p.inner + i]);
    }
    if (OP == 1u) { out[idx] = acc; } else { out[idx] = acc * p.scale; }
}
"
);

/// Columns (units) per workgroup of the tree kernel; its 256 threads are 8 columns by
/// 32 rows, so a warp reads 4 rows of 8 consecutive units.
const TREE_COLS: usize = 8;
/// Rows per workgroup of the tree kernel.
const TREE_ROWS: usize = 256 / TREE_COLS;

const TREE_BODY: &str = concat!(
    "override OP: u32 = 0u;
const TREE_COLS: u32 = 8u;
var<workgroup> part: array<T, 256>;

// Max propagates NaN (see nan_max.rs).
fn comb(a: T, b: T) -> T {
    if (OP == 1u) { return tmax_nan(a, b); }
    return a + b;
}

",
    wg_main!(g),
    "    // Workgroup g: column group cg of chunk c of outer slice o.
    let groups = (p.inner + TREE_COLS - 1u) / TREE_COLS;
    let cg = g % groups;
    let t = g / groups;
    let c = t % p.chunks;
    let o = t / p.chunks;
    let i = cg * TREE_COLS + lid % TREE_COLS;
    let live = i < p.inner && o < p.outer;
    let lo = c * p.chunk;
    let hi = select(lo, min(lo + p.chunk, p.axis), live);
    var acc = T(0.0);
    // Or-ed with a run-time zero: Chrome's WGSL compiler rejects a non-finite constant.
    if (OP == 1u) { acc = T(bitcast<f32>(0xff800000u | (g & 0u))); }
    for (var a = lo + lid / TREE_COLS; a < hi; a = a + WG / TREE_COLS) {
        acc = comb(acc, x[(o * p.axis + a) * p.inner + i]);
    }
    part[lid] = acc;
    workgroupBarrier();
    // Rows halve each step; lid and lid + s hold the same column (s is a multiple of 8).
    for (var s = WG / 2u; s >= TREE_COLS; s = s >> 1u) {
        if (lid < s) { part[lid] = comb(part[lid], part[lid + s]); }
        workgroupBarrier();
    }
    if (lid < TREE_COLS && live) {
        let r = part[lid];
        let idx = (o * p.chunks + c) * p.inner + i;
        if (OP == 1u) { out[idx] = r; } else { out[idx] = r * p.scale; }
    }
}
"
);

unit_specs!(K_ROWS_V4, K_ROWS_F1: RowsParams = "reduce_rows", [wg_common!()], v4: nan_max_v4!(), f1: nan_max_f1!(), ROWS_SLOTS, ROWS_BODY);
// `red_a`/`red_b` of `wg_common` are unused by the column kernel; declaring them costs
// nothing.
unit_specs!(K_COLS_V4, K_COLS_F1: ColsParams = "reduce_cols", [wg_common!()], v4: nan_max_v4!(), f1: nan_max_f1!(), COLS_SLOTS, COLS_BODY);
unit_specs!(K_TREE_V4, K_TREE_F1: ColsParams = "reduce_cols_tree", [wg_common!()], v4: nan_max_v4!(), f1: nan_max_f1!(), COLS_SLOTS, TREE_BODY);

/// Every kernel of the family (this file's, then the backward's), for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    let mut all = vec![
        K_ROWS_V4.source(),
        K_ROWS_F1.source(),
        K_COLS_V4.source(),
        K_COLS_F1.source(),
        K_TREE_V4.source(),
        K_TREE_F1.source(),
    ];
    // The f16 forms (the first pass of an f16 reduction).
    let forms: Vec<Source> = all.iter().cloned().map(registry_form).collect();
    all.extend(forms);
    all.extend(backward::kernels());
    all.extend(foreach::kernels());
    all
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Sum,
    Max,
    Mean,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Max => "max",
            Op::Mean => "mean",
        }
    }
    fn code(self) -> f64 {
        if self == Op::Max { 1.0 } else { 0.0 }
    }
}

/// Enough workgroups to fill a large GPU (132 SMs x several resident groups).
const TARGET_GROUPS: usize = 1024;
/// Enough threads to fill a large GPU for the column kernel.
const TARGET_THREADS: usize = 128 * 1024;

/// Reduces `[outer, axis, inner]` (a flat tensor) to `[outer, inner]`, recursing on
/// chunked partial results. `scale` multiplies the final sums (1/axis for a mean).
fn reduce3(
    x: &Tensor,
    outer: usize,
    axis: usize,
    inner: usize,
    op: Op,
    scale: f32,
) -> Result<Tensor, Error> {
    let dev = x.device().clone();
    let name = op.name();
    let too = |what: &str, n: usize| Error::TooLarge {
        what: format!("{name}: {what}"),
        requested: n as u64,
        limit: u64::from(u32::MAX),
    };
    if x.len() > u32::MAX as usize {
        return Err(too("elements", x.len()));
    }
    let code = [("OP", op.code())];
    // Each pass writes `chunks` partial results per output; a second pass reduces them,
    // and the scale applies once, in the pass that writes the final result.
    let (part, chunks) = if inner == 1 {
        let (k, n) = by_unit(axis, [&K_ROWS_V4, &K_ROWS_F1]);
        let (chunk, chunks) = row_chunks(outer, axis, n);
        let part = dev.empty(&[outer * chunks], DType::F32)?;
        let s = if chunks == 1 { scale } else { 1.0 };
        let params = RowsParams {
            rows: outer as u32,
            n: n as u32,
            chunk: chunk as u32,
            chunks: chunks as u32,
            scale: s,
        };
        let groups = grid(&dev, name, (outer * chunks) as u64)?;
        dispatch_spec(k, &code, &params, &[x, &part], groups)?;
        (part, chunks)
    } else {
        let (k, iu) = by_unit(inner, [&K_COLS_V4, &K_COLS_F1]);
        if outer * iu < TARGET_THREADS {
            return reduce_cols_tree(x, outer, axis, inner, op, scale);
        }
        // The columns fill the GPU: one pass, a thread per column.
        let chunks = 1;
        let part = dev.empty(&[outer * inner], DType::F32)?;
        let params = ColsParams {
            outer: outer as u32,
            axis: axis as u32,
            inner: iu as u32,
            chunk: axis as u32,
            chunks: 1,
            scale,
        };
        let groups = grid(
            &dev,
            name,
            (outer * chunks * iu).div_ceil(WG as usize) as u64,
        )?;
        dispatch_spec(k, &code, &params, &[x, &part], groups)?;
        (part, chunks)
    };
    if chunks == 1 {
        Ok(part)
    } else {
        reduce3(&part, outer, chunks, inner, op, scale)
    }
}

/// The column reduction of [`reduce3`] when the columns alone leave the GPU idle: the
/// tree kernel over chunks of the axis, enough chunks to fill the GPU (each at least 4
/// rows per thread), then itself again over the partial results until one chunk remains.
fn reduce_cols_tree(
    x: &Tensor,
    outer: usize,
    axis: usize,
    inner: usize,
    op: Op,
    scale: f32,
) -> Result<Tensor, Error> {
    let dev = x.device();
    let (k, iu) = by_unit(inner, [&K_TREE_V4, &K_TREE_F1]);
    let slabs = outer * iu.div_ceil(TREE_COLS);
    let wanted = TARGET_GROUPS
        .div_ceil(slabs)
        .min(axis.div_ceil(4 * TREE_ROWS))
        .max(1);
    let (chunk, chunks) = split(axis, wanted);
    let part = dev.empty(&[outer * chunks * inner], DType::F32)?;
    let params = ColsParams {
        outer: outer as u32,
        axis: axis as u32,
        inner: iu as u32,
        chunk: chunk as u32,
        chunks: chunks as u32,
        scale: if chunks == 1 { scale } else { 1.0 },
    };
    let groups = grid(dev, op.name(), (slabs * chunks) as u64)?;
    dispatch_spec(k, &[("OP", op.code())], &params, &[x, &part], groups)?;
    if chunks == 1 {
        Ok(part)
    } else {
        reduce_cols_tree(&part, outer, chunks, inner, op, scale)
    }
}

/// `n` items cut into at most `wanted` chunks of one length: `(chunk length, chunk count)`
/// (at least one chunk, also for `n = 0`).
fn split(n: usize, wanted: usize) -> (usize, usize) {
    let chunk = n.div_ceil(wanted);
    (chunk, n.div_ceil(chunk.max(1)).max(1))
}

/// The chunks of a pass along the last axis over `rows` rows of `len` elements (`units`
/// units): `(chunk length in units, chunks per row)`. Chunks only when the rows alone
/// cannot fill the GPU; each chunk >= 4096 elements.
pub(crate) fn row_chunks(rows: usize, len: usize, units: usize) -> (usize, usize) {
    let wanted = if rows >= TARGET_GROUPS {
        1
    } else {
        TARGET_GROUPS.div_ceil(rows).min(len.div_ceil(4096)).max(1)
    };
    split(units, wanted)
}

/// The chunks of a column pass (one thread per column and chunk) over `cols` columns and
/// an axis of `len`: `(chunk length, chunks per column)`. Chunks only when the columns
/// alone cannot fill the GPU; each chunk >= 64 elements.
pub(crate) fn col_chunks(cols: usize, len: usize) -> (usize, usize) {
    let wanted = if cols >= TARGET_THREADS {
        1
    } else {
        TARGET_THREADS.div_ceil(cols).min(len.div_ceil(64)).max(1)
    };
    split(len, wanted)
}

/// The reduction of `x` along `axis`, in `x`'s dtype (accumulated in f32).
fn reduce_axis(x: &Tensor, axis: usize, op: Op) -> Result<Tensor, Error> {
    to_dtype(&reduce_axis_f32(x, axis, op)?, x.dtype())
}

/// [`sum`] in f32 whatever `x`'s float dtype (an f16 `x` summed in f32, not rounded):
/// the gradient of an f32 bias added to f16 products.
pub(crate) fn sum_f32(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    reduce_axis_f32(x, dim, Op::Sum)
}

fn reduce_axis_f32(x: &Tensor, axis: usize, op: Op) -> Result<Tensor, Error> {
    let name = op.name();
    want_float(name, x)?;
    let s = x.shape();
    let AxisView {
        outer,
        len,
        inner,
        out_shape,
    } = axis_view(name, s, axis)?;
    if outer == 0 || inner == 0 {
        return Tensor::zeros(x.device(), &out_shape);
    }
    if len == 0 {
        if op == Op::Sum {
            return Tensor::zeros(x.device(), &out_shape);
        }
        return Err(mismatch(
            name,
            format!("axis {axis} of shape {s:?} is empty; {name} of no elements is undefined"),
        ));
    }
    let scale = if op == Op::Mean {
        1.0 / len as f32
    } else {
        1.0
    };
    reduce3(x, outer, len, inner, op, scale)?.reshape(&out_shape)
}

fn reduce_all(x: &Tensor, op: Op) -> Result<Tensor, Error> {
    want_float(op.name(), x)?;
    let flat = x.reshape(&[x.len()])?;
    reduce_axis(&flat, 0, op)
}

/// Sum along `dim`: `[..., n, ...] -> [...]` (the axis removed; a 1-D input gives `[1]`).
/// The result has `x`'s dtype: an f16 `x` is summed in f32 and rounded once (as PyTorch);
/// so are [`mean`], [`max`] and the whole-tensor forms.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim >= rank`, [`Error::DType`] for a u32 tensor.
pub fn sum(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    reduce_axis(x, dim, Op::Sum)
}

/// Maximum along `dim`: `[..., n, ...] -> [...]` (the axis removed; 1-D gives `[1]`).
/// A slice holding NaN gives NaN, as PyTorch (and [`max_backward`]'s rule) says.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim >= rank` or the axis is empty, [`Error::DType`].
pub fn max(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    reduce_axis(x, dim, Op::Max)
}

/// Mean along `dim`: `[..., n, ...] -> [...]` (the axis removed; 1-D gives `[1]`).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim >= rank` or the axis is empty, [`Error::DType`].
pub fn mean(x: &Tensor, dim: usize) -> Result<Tensor, Error> {
    reduce_axis(x, dim, Op::Mean)
}

/// Sum of every element: any shape `-> [1]` (0 for an empty tensor).
///
/// # Errors
/// [`Error::DType`] for a u32 tensor.
pub fn sum_all(x: &Tensor) -> Result<Tensor, Error> {
    reduce_all(x, Op::Sum)
}

/// Maximum of every element: any non-empty shape `-> [1]`; NaN if any element is NaN.
///
/// # Errors
/// [`Error::ShapeMismatch`] for an empty tensor, [`Error::DType`] for a u32 tensor.
pub fn max_all(x: &Tensor) -> Result<Tensor, Error> {
    reduce_all(x, Op::Max)
}

/// Mean of every element: any non-empty shape `-> [1]`.
///
/// # Errors
/// [`Error::ShapeMismatch`] for an empty tensor, [`Error::DType`] for a u32 tensor.
pub fn mean_all(x: &Tensor) -> Result<Tensor, Error> {
    reduce_all(x, Op::Mean)
}
