//! Backward passes of the reductions of [`crate::ops::reduce`], which re-exports them: the
//! public path is `ops::{sum_backward, mean_backward, max_backward, ...}`.
//!
//! Sum and mean: `dx` is `grad_out` broadcast back along the reduced axis (times `1/n` for a
//! mean), one thread per element of `dx`, or per `vec4` of `dx` when its four elements
//! read one `grad_out` value (the last axis, of a length that is a multiple of 4) or four
//! neighbouring ones (an inner extent that is a multiple of 4).
//!
//! Max: `dx` is zero except at one index per reduced slice, which receives `grad_out`. Three
//! launches: `dx` is cleared; a search kernel finds, per slice and per chunk of the axis,
//! the first index whose value equals the forward output `y`; a scatter kernel takes the
//! smallest of the chunks' indices (an exact `min`, so no float atomics and the same bits
//! on every run) and writes `grad_out` there. The search follows the forward's layout: a
//! workgroup per long last-axis row (or per chunk of one), otherwise one thread per
//! output column, coalesced across the inner extent; the axis is split into chunks only
//! when the outputs alone would leave the GPU idle.
//!
//! Ties and NaN (see [`max_backward`]): the first index along the axis that matches `y`
//! gets all of `grad_out`, as the indices of PyTorch's `max(dim)`; a NaN `y` matches the first
//! NaN of its slice.
//!
//! f16: `grad_out` has the forward output's dtype and the input gradient the input's (f16
//! for f16); f16 tensors are read through the f16 forms of the kernels
//! ([`crate::ops::rows::half`]), and `dx` is rounded once where it is not written in f16
//! directly.

use crate::ops::check::{AxisView, axis_view, by_unit, same_dtype, want_float, want_shape};
use crate::ops::reduce::{col_chunks, row_chunks};
use crate::ops::rows::half::{dispatch_spec, out_dtype, registry_form};
use crate::ops::to_dtype;
use crate::size::WG;
use crate::size::numel;
use crate::spec::{Slot, Source, Spec, grid, params};
use crate::wgsl::{chunk_main, thread_main, unit_specs, wg_main};
use crate::{DType, Error, Tensor};

/// Declarations every kernel of this file shares.
macro_rules! common {
    () => {
        "const WG: u32 = 256u;
// No index matched (also the identity of the `min` that combines chunks).
const NONE: u32 = 0xffffffffu;
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }
"
    };
}

/// `vec4` units with their `u32` and mask types; `first_lane` is the lowest lane set in a
/// mask (not the row-kernel units of `wgsl.rs`: these carry index and mask types).
macro_rules! mask_unit_v4 {
    () => {
        "alias T = vec4<f32>;
alias U = vec4<u32>;
alias B = vec4<bool>;
const W: u32 = 4u;
fn first_lane(m: B) -> u32 { return select(select(select(3u, 2u, m.z), 1u, m.y), 0u, m.x); }
"
    };
}

/// Scalar units, for any length.
macro_rules! mask_unit_f1 {
    () => {
        "alias T = f32;
alias U = u32;
alias B = bool;
const W: u32 = 1u;
fn first_lane(m: B) -> u32 { return 0u; }
"
    };
}

/// Four consecutive `dy` values (the upstream gradient) as one unit of `dx` (the broadcast kernel's `dy` is
/// scalar: with an inner extent of 1 one value fills a whole unit).
macro_rules! gather_v4 {
    () => {
        "fn gather(b: u32) -> T { return T(dy[b], dy[b + 1u], dy[b + 2u], dy[b + 3u]); }\n"
    };
}
macro_rules! gather_f1 {
    () => {
        "fn gather(b: u32) -> T { return dy[b]; }\n"
    };
}

params! {
    /// `units` units (`T`) of `dx`, each from `dy` (the upstream gradient) over an axis of `axis` with `inner` trailing elements; sums are multiplied by `scale`.
    struct BroadcastParams { units: u32, axis: u32, inner: u32, scale: f32 }
}

const BROADCAST_SLOTS: &[Slot] = &[
    Slot::Read("dy", "array<f32>"),
    Slot::ReadWrite("dx", "array<T>"),
];

const BROADCAST_BODY: &str = concat!(
    thread_main!(u < "p.units"),
    "    let e = u * W;
    let o = e / (p.axis * p.inner);
    // vec4 units are launched only for inner == 1 with an axis of a multiple of 4 (the
    // four elements share one dy) or an inner extent of a multiple of 4 (four neighbouring
    // dy values); scalar units take either branch.
    if (p.inner == 1u) {
        dx[u] = T(dy[o] * p.scale);
    } else {
        dx[u] = gather(o * p.inner + e % p.inner) * p.scale;
    }
}
"
);

/// The match rule of the max backward: IEEE equality (so -0 == +0), and NaN matches NaN.
/// NaN is tested on the bits: a compiler may fold `v != v` away.
macro_rules! match_rule {
    () => {
        "
fn is_nan(v: T) -> B { return (bitcast<U>(v) & U(0x7fffffffu)) > U(0x7f800000u); }
fn matches(v: T, y: T) -> B { return (v == y) | (is_nan(v) & is_nan(y)); }
"
    };
}

params! {
    /// `rows` rows of `n` units searched in `chunks` chunks of `chunk` units.
    struct SearchRowsParams { rows: u32, n: u32, chunk: u32, chunks: u32 }
}

const SEARCH_ROWS_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::Read("y", "array<f32>"),
    Slot::ReadWrite("first", "array<u32>"),
];

const SEARCH_ROWS_BODY: &str = concat!(
    "var<workgroup> red: array<u32, 256>;

",
    wg_main!(g),
    "    let row = g / p.chunks;
    let c = g % p.chunks;
    let live = row < p.rows;
    let lo = c * p.chunk;
    let hi = select(0u, min(lo + p.chunk, p.n), live);
    let yv = T(y[min(row, p.rows - 1u)]);
    // Each thread walks its units in increasing order, so its first match is its least.
    var best = NONE;
    for (var u = lo + lid; u < hi; u = u + WG) {
        let m = matches(x[row * p.n + u], yv);
        if (any(m)) {
            best = u * W + first_lane(m);
            break;
        }
    }
    red[lid] = best;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { red[lid] = min(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    if (lid == 0u && live) { first[row * p.chunks + c] = red[0]; }
}
"
);

params! {
    /// `[outer, axis, inner]` (inner in units) searched along the axis in `chunks` chunks of `chunk`.
    struct SearchColsParams { outer: u32, axis: u32, inner: u32, chunk: u32, chunks: u32 }
}

const SEARCH_COLS_SLOTS: &[Slot] = &[
    Slot::Read("x", "array<T>"),
    Slot::Read("y", "array<T>"),
    Slot::ReadWrite("first", "array<U>"),
];

const SEARCH_COLS_BODY: &str = concat!(
    chunk_main!(),
    "    let yv = y[o * p.inner + i];
    let lo = c * p.chunk;
    let hi = min(lo + p.chunk, p.axis);
    var best = U(NONE);
    for (var a = lo; a < hi; a = a + 1u) {
        let m = matches(x[(o * p.axis + a) * p.inner + i], yv) & (best == U(NONE));
        best = select(best, U(a), m);
        if (all(best != U(NONE))) { break; }
    }
    first[idx] = best;
}
"
);

params! {
    /// `[outer, axis, inner]` with `chunks` partial first indices per output.
    struct ScatterParams { outer: u32, axis: u32, inner: u32, chunks: u32 }
}

const SCATTER_BODY: &str = concat!(
    thread_main!(idx < "p.outer * p.inner"),
    "    let i = idx % p.inner;
    let o = idx / p.inner;
    var a = NONE;
    for (var c = 0u; c < p.chunks; c = c + 1u) {
        a = min(a, first[(o * p.chunks + c) * p.inner + i]);
    }
    // NONE (no element matched y) leaves the slice's gradient at zero.
    if (a < p.axis) { dx[(o * p.axis + a) * p.inner + i] = dy[idx]; }
}
"
);

/// Declares the `vec4` and the `f32` form of a kernel of this file (with [`unit_specs`]):
/// `common!()`, the form's mask unit, then its piece (`v4: PIECE, f1: PIECE`, or one
/// piece for both forms).
macro_rules! mask_unit_specs {
    ($v4:ident, $f1:ident: $p:ty = $name:literal, v4: $m4:expr, f1: $m1:expr, $slots:expr, $body:expr) => {
        unit_specs!($v4, $f1: $p = $name,
            v4: [common!(), mask_unit_v4!(), $m4], f1: [common!(), mask_unit_f1!(), $m1],
            $slots, $body);
    };
    ($v4:ident, $f1:ident: $p:ty = $name:literal, $piece:expr, $slots:expr, $body:expr) => {
        mask_unit_specs!($v4, $f1: $p = $name, v4: $piece, f1: $piece, $slots, $body);
    };
}

mask_unit_specs!(K_BCAST_V4, K_BCAST_F1: BroadcastParams = "reduce_broadcast",
    v4: gather_v4!(), f1: gather_f1!(), BROADCAST_SLOTS, BROADCAST_BODY);
mask_unit_specs!(K_ROWS_V4, K_ROWS_F1: SearchRowsParams = "max_backward_search_rows",
    match_rule!(), SEARCH_ROWS_SLOTS, SEARCH_ROWS_BODY);
mask_unit_specs!(K_COLS_V4, K_COLS_F1: SearchColsParams = "max_backward_search_cols",
    match_rule!(), SEARCH_COLS_SLOTS, SEARCH_COLS_BODY);
static K_SCATTER: Spec<ScatterParams> = Spec::new(
    "max_backward_scatter",
    &[common!()],
    &[
        Slot::Read("first", "array<u32>"),
        Slot::Read("dy", "array<f32>"),
        Slot::ReadWrite("dx", "array<f32>"),
    ],
    SCATTER_BODY,
);

/// Every kernel of this file, for the registry of `reduce/mod.rs`.
pub(crate) fn kernels() -> Vec<Source> {
    let mut all = vec![
        K_BCAST_V4.source(),
        K_BCAST_F1.source(),
        K_ROWS_V4.source(),
        K_ROWS_F1.source(),
        K_COLS_V4.source(),
        K_COLS_F1.source(),
        K_SCATTER.source(),
    ];
    // The f16 forms.
    let forms: Vec<Source> = all.iter().cloned().map(registry_form).collect();
    all.extend(forms);
    all
}

/// Rows of the last axis at least this long get a workgroup each in the max search;
/// shorter ones a thread each (a workgroup of 256 threads for a few elements would mostly
/// idle, and the software adapter pays for every idle invocation).
const SEARCH_ROW_MIN: usize = 256;

fn want_u32_len(op: &str, n: usize) -> Result<(), Error> {
    if n > u32::MAX as usize {
        return Err(Error::TooLarge {
            what: format!("{op}: elements"),
            requested: n as u64,
            limit: u64::from(u32::MAX),
        });
    }
    Ok(())
}

/// Checks that `t` (the argument `name`) has the shape of the forward output.
fn want_output_shape(op: &str, name: &str, t: &Tensor, out_shape: &[usize]) -> Result<(), Error> {
    want_shape(
        op,
        name,
        t.shape(),
        out_shape,
        "the shape of the forward output",
    )
}

/// `grad_out` broadcast to `input_shape` along `axis`, times `1/n` when `mean`.
fn broadcast(
    op: &str,
    grad_out: &Tensor,
    input_shape: &[usize],
    axis: usize,
    mean: bool,
) -> Result<Tensor, Error> {
    want_float(op, grad_out)?;
    let total = numel(input_shape)?;
    let AxisView {
        outer: _,
        len,
        inner,
        out_shape,
    } = axis_view(op, input_shape, axis)?;
    want_output_shape(op, "grad_out", grad_out, &out_shape)?;
    want_u32_len(op, total)?;
    let dev = grad_out.device();
    let dtype = grad_out.dtype();
    if total == 0 {
        return to_dtype(&Tensor::zeros(dev, input_shape)?, dtype);
    }
    let v4 = inner.is_multiple_of(4) || (inner == 1 && len.is_multiple_of(4));
    let w = if v4 { 4 } else { 1 };
    let units = total / w;
    // The forward's mean multiplies by the same f32 reciprocal.
    let scale = if mean { 1.0 / len as f32 } else { 1.0 };
    let dx = dev.empty(input_shape, out_dtype(dtype, v4))?;
    let params = BroadcastParams {
        units: units as u32,
        axis: len as u32,
        inner: inner as u32,
        scale,
    };
    let k = if v4 { &K_BCAST_V4 } else { &K_BCAST_F1 };
    let groups = grid(dev, op, units.div_ceil(WG as usize) as u64)?;
    dispatch_spec(k, &[], &params, &[grad_out, &dx], groups)?;
    to_dtype(&dx, dtype)
}

fn max_axis_backward(
    op: &str,
    x: &Tensor,
    y: &Tensor,
    grad_out: &Tensor,
    axis: usize,
) -> Result<Tensor, Error> {
    want_float(op, x)?;
    same_dtype(op, x, y)?;
    same_dtype(op, x, grad_out)?;
    let AxisView {
        outer,
        len,
        inner,
        out_shape,
    } = axis_view(op, x.shape(), axis)?;
    want_output_shape(op, "y", y, &out_shape)?;
    want_output_shape(op, "grad_out", grad_out, &out_shape)?;
    want_u32_len(op, x.len())?;
    let dev = x.device();
    let dx = Tensor::zeros(dev, x.shape())?;
    if x.is_empty() {
        return to_dtype(&dx, x.dtype());
    }
    let (first, chunks) = if inner == 1 && len >= SEARCH_ROW_MIN {
        let (k, n) = by_unit(len, [&K_ROWS_V4, &K_ROWS_F1]);
        let (chunk, chunks) = row_chunks(outer, len, n);
        let first = dev.empty(&[outer * chunks], DType::U32)?;
        let params = SearchRowsParams {
            rows: outer as u32,
            n: n as u32,
            chunk: chunk as u32,
            chunks: chunks as u32,
        };
        let groups = grid(dev, op, (outer * chunks) as u64)?;
        dispatch_spec(k, &[], &params, &[x, y, &first], groups)?;
        (first, chunks)
    } else {
        let (k, iu) = by_unit(inner, [&K_COLS_V4, &K_COLS_F1]);
        let cols = outer * iu;
        let (chunk, chunks) = col_chunks(cols, len);
        let first = dev.empty(&[outer * chunks * inner], DType::U32)?;
        let params = SearchColsParams {
            outer: outer as u32,
            axis: len as u32,
            inner: iu as u32,
            chunk: chunk as u32,
            chunks: chunks as u32,
        };
        let groups = grid(dev, op, (cols * chunks).div_ceil(WG as usize) as u64)?;
        dispatch_spec(k, &[], &params, &[x, y, &first], groups)?;
        (first, chunks)
    };
    let params = ScatterParams {
        outer: outer as u32,
        axis: len as u32,
        inner: inner as u32,
        chunks: chunks as u32,
    };
    let groups = grid(dev, op, (outer * inner).div_ceil(WG as usize) as u64)?;
    // `dx` stays f32 here: the scatter writes single elements, which in f16 would share
    // words with other threads' elements; one rounding pass follows.
    dispatch_spec(&K_SCATTER, &[], &params, &[&first, grad_out, &dx], groups)?;
    to_dtype(&dx, x.dtype())
}

/// Gradient of [`sum`](crate::ops::reduce::sum) along `dim`: `grad_out` (the forward output's shape:
/// `input_shape` with the axis removed, or `[1]` for a 1-D input) repeated along the axis,
/// giving a tensor of `input_shape`. An input with no elements gives an empty gradient.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim >= input_shape.len()` or `grad_out`'s shape is not the
/// forward output's; [`Error::DType`] for a u32 `grad_out`; [`Error::TooLarge`] past 2^32
/// elements; [`Error::DeviceLost`].
pub fn sum_backward(grad_out: &Tensor, input_shape: &[usize], dim: usize) -> Result<Tensor, Error> {
    broadcast("sum_backward", grad_out, input_shape, dim, false)
}

/// Gradient of [`mean`](crate::ops::reduce::mean) along `dim`: as [`sum_backward`], each value
/// times `1/n` (`n = input_shape[axis]`, the same f32 reciprocal the forward multiplies by).
///
/// # Errors
/// As [`sum_backward`].
pub fn mean_backward(
    grad_out: &Tensor,
    input_shape: &[usize],
    dim: usize,
) -> Result<Tensor, Error> {
    broadcast("mean_backward", grad_out, input_shape, dim, true)
}

/// Gradient of [`max`](crate::ops::reduce::max) along `dim`, from the input `x`, the forward
/// output `y` and its gradient `grad_out` (both of the forward output's shape). Each slice along
/// the axis sends all of its `grad_out` to one index; every other element of `dx` is 0.
///
/// - Ties: the FIRST index along the axis whose value equals `y` gets `grad_out` (the index
///   PyTorch's `max(dim)` returns); equality is IEEE, so `-0.0` and `+0.0` tie.
/// - NaN: a NaN `y` goes to the first NaN of its slice (PyTorch's max propagates NaN and
///   points at it); a NaN in a slice whose `y` is a number gets 0.
/// - A slice with no element equal to its `y` (a `y` not computed from this `x`) gets 0.
///
/// The result depends only on the values: the same bits on every run.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim >= rank` of `x`, or `y` or `grad_out` does not have the
/// forward output's shape (`x`'s with the axis removed, `[1]` for 1-D); [`Error::DType`]
/// for a u32 tensor; [`Error::TooLarge`] past 2^32 elements; [`Error::DeviceLost`].
pub fn max_backward(
    grad_out: &Tensor,
    x: &Tensor,
    y: &Tensor,
    dim: usize,
) -> Result<Tensor, Error> {
    max_axis_backward("max_backward", x, y, grad_out, dim)
}

/// Gradient of [`sum_all`](crate::ops::reduce::sum_all): `grad_out` (shape `[1]`) repeated over
/// `input_shape`.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `grad_out` is not `[1]`; [`Error::DType`] for a u32 `grad_out`;
/// [`Error::TooLarge`] past 2^32 elements; [`Error::DeviceLost`].
pub fn sum_all_backward(grad_out: &Tensor, input_shape: &[usize]) -> Result<Tensor, Error> {
    let n = numel(input_shape)?;
    broadcast("sum_all_backward", grad_out, &[n], 0, false)?.reshape(input_shape)
}

/// Gradient of [`mean_all`](crate::ops::reduce::mean_all): `grad_out` (shape `[1]`) times `1/n`
/// repeated over `input_shape` (`n` its element count).
///
/// # Errors
/// As [`sum_all_backward`].
pub fn mean_all_backward(grad_out: &Tensor, input_shape: &[usize]) -> Result<Tensor, Error> {
    let n = numel(input_shape)?;
    broadcast("mean_all_backward", grad_out, &[n], 0, true)?.reshape(input_shape)
}

/// Gradient of [`max_all`](crate::ops::reduce::max_all): `grad_out` (shape `[1]`) goes to the first
/// element, in row-major order, equal to `y` (shape `[1]`); the tie and NaN rules of
/// [`max_backward`].
///
/// # Errors
/// [`Error::ShapeMismatch`] when `y` or `grad_out` is not `[1]`; [`Error::DType`] for a u32
/// tensor; [`Error::TooLarge`] past 2^32 elements; [`Error::DeviceLost`].
pub fn max_all_backward(grad_out: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor, Error> {
    let flat = x.reshape(&[x.len()])?;
    max_axis_backward("max_all_backward", &flat, y, grad_out, 0)?.reshape(x.shape())
}
