//! Reductions (sum, max, mean) along one axis or over a whole tensor, and the WGSL
//! pieces every row kernel of this crate shares (softmax, norms, cross-entropy).
//!
//! A tensor is viewed as `[outer, axis, inner]` around the reduced axis:
//! - `inner == 1` (the last axis): one workgroup of 256 threads per row (or per chunk of
//!   a long row), a strided coalesced loop (`vec4` loads when the row length is a
//!   multiple of 4), then a tree reduction in workgroup memory;
//! - `inner > 1`: one thread per output column, coalesced across `inner`.
//!
//! When the outputs alone would leave the GPU idle (few long rows), the axis is split into
//! chunks whose partial results are reduced again by the same kernels (multi-pass), so a
//! reduction over 100 million elements still uses every core. The order of operations
//! depends only on the shapes: results are bit-identical from run to run.
//!
//! The backward passes ([`sum_backward`], [`mean_backward`], [`max_backward`] and their
//! whole-tensor forms) live in their own file and are reached through this module.

use super::nan_max::{nan_max_f1, nan_max_v4};
use crate::size::Size;
use crate::{Binding, DType, Device, Error, RawKernel, Tensor};

pub use super::reduce_backward::{
    max_all_backward, max_backward, mean_all_backward, mean_backward, shaders as backward_shaders,
    sum_all_backward, sum_backward,
};

/// Threads per workgroup of every row kernel (a multiple of 32, so whole warps).
pub(crate) const WG: u32 = 256;

/// The unit of a row kernel when the row length is a multiple of 4: `vec4<f32>` (16-byte
/// loads). `K` vec4s per thread stay in registers: rows up to 4 * 4 * 256 = 4096 floats
/// are read from memory once.
macro_rules! unit_v4 {
    () => {
        "alias T = vec4<f32>;
const W: u32 = 4u;
const K: u32 = 4u;
fn hsum(v: T) -> f32 { return (v.x + v.y) + (v.z + v.w); }
fn hmax(v: T) -> f32 { return max(max(v.x, v.y), max(v.z, v.w)); }
fn elem(v: T, j: u32) -> f32 { return v[min(j, 3u)]; }
fn onehot(j: u32) -> T { return select(T(0.0), T(1.0), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(j)); }
"
    };
}
pub(crate) use unit_v4;

/// The unit of a row kernel for any row length: one `f32`; rows up to 8 * 256 floats stay
/// in registers.
macro_rules! unit_f1 {
    () => {
        "alias T = f32;
const W: u32 = 1u;
const K: u32 = 8u;
fn hsum(v: T) -> f32 { return v; }
fn hmax(v: T) -> f32 { return v; }
fn elem(v: T, j: u32) -> f32 { return v; }
fn onehot(j: u32) -> T { return 1.0; }
"
    };
}
pub(crate) use unit_f1;

/// Workgroup reductions over the 256 threads (tree in workgroup memory; every call is
/// made from uniform control flow) and the workgroup's linear index in a 2-D grid.
macro_rules! wg_common {
    () => {
        "const WG: u32 = 256u;
var<workgroup> red_a: array<f32, 256>;
var<workgroup> red_b: array<f32, 256>;

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }

fn wg_sum(v: f32, lid: u32) -> f32 {
    red_a[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { red_a[lid] = red_a[lid] + red_a[lid + s]; }
        workgroupBarrier();
    }
    let r = red_a[0];
    workgroupBarrier();
    return r;
}

fn wg_sum2(a: f32, b: f32, lid: u32) -> vec2<f32> {
    red_a[lid] = a;
    red_b[lid] = b;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red_a[lid] = red_a[lid] + red_a[lid + s];
            red_b[lid] = red_b[lid] + red_b[lid + s];
        }
        workgroupBarrier();
    }
    let r = vec2<f32>(red_a[0], red_b[0]);
    workgroupBarrier();
    return r;
}

// Combines per-thread (max, sum of exp(x - max)) pairs: the online softmax statistics.
fn wg_max_sumexp(m: f32, s: f32, lid: u32) -> vec2<f32> {
    red_a[lid] = m;
    red_b[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            let ma = red_a[lid];
            let mb = red_a[lid + k];
            let mm = max(ma, mb);
            red_b[lid] = red_b[lid] * exp(ma - mm) + red_b[lid + k] * exp(mb - mm);
            red_a[lid] = mm;
        }
        workgroupBarrier();
    }
    let r = vec2<f32>(red_a[0], red_b[0]);
    workgroupBarrier();
    return r;
}
"
    };
}
pub(crate) use wg_common;

/// The most negative finite f32: the starting maximum of online softmax statistics.
/// Finite so that `exp(m_old - m_new)` is never `exp(-inf - -inf) = NaN`; a row of all
/// `-inf` still ends with sum 0 and so NaN probabilities, as in PyTorch.
macro_rules! lowest {
    () => {
        "const LOWEST: f32 = -3.4028235e38;\n"
    };
}
pub(crate) use lowest;

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

/// Checks that `t` is an f32 tensor.
pub(crate) fn want_f32(op: &str, t: &Tensor) -> Result<(), Error> {
    t.expect_dtype(op, DType::F32)
}

/// Checks that `t` is a u32 tensor.
pub(crate) fn want_u32(op: &str, t: &Tensor) -> Result<(), Error> {
    t.expect_dtype(op, DType::U32)
}

/// Splits a tensor of rank >= 1 into `(rows, cols)` over its last axis.
pub(crate) fn rows_cols(op: &str, t: &Tensor) -> Result<(usize, usize), Error> {
    let s = t.shape();
    let Some((&c, lead)) = s.split_last() else {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: "expected a tensor of rank >= 1 ([..., cols]), got a scalar".into(),
        });
    };
    let rows = Size::product(lead).counted(|| format!("{op}: rows of shape {s:?}"))?;
    Ok((rows, c))
}

/// Packs u32 words into uniform bytes.
pub(crate) fn words(w: &[u32]) -> Vec<u8> {
    bytemuck::cast_slice(w).to_vec()
}

macro_rules! reduce_rows_body {
    () => {
        "
struct P { rows: u32, n: u32, chunk: u32, chunks: u32, scale: f32, p0: u32, p1: u32, p2: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
// 0: sum, 1: max.
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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = group_index(wid, nwg);
    let row = g / max(p.chunks, 1u);
    let c = g % max(p.chunks, 1u);
    let live = row < p.rows;
    let lo = c * p.chunk;
    let hi = select(0u, min(lo + p.chunk, p.n), live);
    var ident = 0.0;
    if (OP == 1u) { ident = bitcast<f32>(0xff800000u); }
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
    };
}

const ROWS_V4: &str = concat!(unit_v4!(), wg_common!(), nan_max_v4!(), reduce_rows_body!());
const ROWS_F1: &str = concat!(unit_f1!(), wg_common!(), nan_max_f1!(), reduce_rows_body!());

macro_rules! reduce_cols_body {
    () => {
        "
struct P { outer: u32, axis: u32, inner: u32, chunk: u32, chunks: u32, scale: f32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> out: array<T>;
override OP: u32 = 0u;

// Max propagates NaN (see nan_max.rs).
fn comb(a: T, b: T) -> T {
    if (OP == 1u) { return tmax_nan(a, b); }
    return a + b;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let idx = group_index(wid, nwg) * WG + lid;
    if (idx >= p.outer * p.chunks * p.inner) { return; }
    let i = idx % p.inner;
    let t = idx / p.inner;
    let c = t % p.chunks;
    let o = t / p.chunks;
    let lo = c * p.chunk;
    let hi = min(lo + p.chunk, p.axis);
    var acc = T(0.0);
    if (OP == 1u) { acc = T(bitcast<f32>(0xff800000u)); }
    for (var a = lo; a < hi; a = a + 1u) {
        acc = comb(acc, x[(o * p.axis + a) * p.inner + i]);
    }
    if (OP == 1u) { out[idx] = acc; } else { out[idx] = acc * p.scale; }
}
"
    };
}

// `red_a`/`red_b` are unused by the column kernel; declaring them costs nothing.
const COLS_V4: &str = concat!(unit_v4!(), wg_common!(), nan_max_v4!(), reduce_cols_body!());
const COLS_F1: &str = concat!(unit_f1!(), wg_common!(), nan_max_f1!(), reduce_cols_body!());

static K_ROWS_V4: RawKernel = RawKernel::new("reduce_rows_v4", ROWS_V4, "main");
static K_ROWS_F1: RawKernel = RawKernel::new("reduce_rows", ROWS_F1, "main");
static K_COLS_V4: RawKernel = RawKernel::new("reduce_cols_v4", COLS_V4, "main");
static K_COLS_F1: RawKernel = RawKernel::new("reduce_cols", COLS_F1, "main");

/// The WGSL of every reduction kernel (for validation in tests).
pub fn shaders() -> [(&'static str, &'static str); 4] {
    [
        ("reduce_rows_v4", ROWS_V4),
        ("reduce_rows", ROWS_F1),
        ("reduce_cols_v4", COLS_V4),
        ("reduce_cols", COLS_F1),
    ]
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
pub(crate) const TARGET_GROUPS: usize = 1024;
/// Enough threads to fill a large GPU for the column kernel.
pub(crate) const TARGET_THREADS: usize = 128 * 1024;

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
    if inner == 1 {
        // Chunks only when the rows alone cannot fill the GPU; each chunk >= 4096 elements.
        let chunks = if outer >= TARGET_GROUPS {
            1
        } else {
            TARGET_GROUPS
                .div_ceil(outer)
                .min(axis.div_ceil(4096))
                .max(1)
        };
        let v4 = axis.is_multiple_of(4);
        let w = if v4 { 4 } else { 1 };
        let n = axis / w;
        let chunk = n.div_ceil(chunks);
        let chunks = n.div_ceil(chunk.max(1)).max(1);
        let part = dev.empty(&[outer * chunks], DType::F32)?;
        let s = if chunks == 1 { scale } else { 1.0 };
        let u = words(&[
            outer as u32,
            n as u32,
            chunk as u32,
            chunks as u32,
            s.to_bits(),
            0,
            0,
            0,
        ]);
        let k = if v4 { &K_ROWS_V4 } else { &K_ROWS_F1 };
        let groups = grid(&dev, name, (outer * chunks) as u64)?;
        dev.dispatch_raw(
            k,
            &code,
            &[
                Binding::Uniform(&u),
                Binding::Read(x),
                Binding::ReadWrite(&part),
            ],
            groups,
        )?;
        if chunks == 1 {
            Ok(part)
        } else {
            reduce3(&part, outer, chunks, 1, op, scale)
        }
    } else {
        let v4 = inner.is_multiple_of(4);
        let w = if v4 { 4 } else { 1 };
        let iu = inner / w;
        let cols = outer * iu;
        let chunks = if cols >= TARGET_THREADS {
            1
        } else {
            TARGET_THREADS.div_ceil(cols).min(axis.div_ceil(64)).max(1)
        };
        let chunk = axis.div_ceil(chunks);
        let chunks = axis.div_ceil(chunk.max(1)).max(1);
        let part = dev.empty(&[outer * chunks * inner], DType::F32)?;
        let s = if chunks == 1 { scale } else { 1.0 };
        let u = words(&[
            outer as u32,
            axis as u32,
            iu as u32,
            chunk as u32,
            chunks as u32,
            s.to_bits(),
            0,
            0,
        ]);
        let k = if v4 { &K_COLS_V4 } else { &K_COLS_F1 };
        let groups = grid(
            &dev,
            name,
            (outer * chunks * iu).div_ceil(WG as usize) as u64,
        )?;
        dev.dispatch_raw(
            k,
            &code,
            &[
                Binding::Uniform(&u),
                Binding::Read(x),
                Binding::ReadWrite(&part),
            ],
            groups,
        )?;
        if chunks == 1 {
            Ok(part)
        } else {
            reduce3(&part, outer, chunks, inner, op, scale)
        }
    }
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
    if axis >= s.len() {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "axis {axis} is out of range for a tensor of shape {s:?}; pass an axis < {}",
                s.len()
            ),
        });
    }
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

fn reduce_axis(x: &Tensor, axis: usize, op: Op) -> Result<Tensor, Error> {
    let name = op.name();
    want_f32(name, x)?;
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
        return Err(Error::ShapeMismatch {
            op: name.into(),
            detail: format!(
                "axis {axis} of shape {s:?} is empty; {name} of no elements is undefined"
            ),
        });
    }
    let scale = if op == Op::Mean {
        1.0 / len as f32
    } else {
        1.0
    };
    reduce3(x, outer, len, inner, op, scale)?.reshape(&out_shape)
}

fn reduce_all(x: &Tensor, op: Op) -> Result<Tensor, Error> {
    want_f32(op.name(), x)?;
    let flat = x.reshape(&[x.len()])?;
    reduce_axis(&flat, 0, op)
}

/// Sum along `axis`: `[..., n, ...] -> [...]` (the axis removed; a 1-D input gives `[1]`).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `axis >= rank`, [`Error::DType`] for a u32 tensor.
pub fn sum(x: &Tensor, axis: usize) -> Result<Tensor, Error> {
    reduce_axis(x, axis, Op::Sum)
}

/// Maximum along `axis`: `[..., n, ...] -> [...]` (the axis removed; 1-D gives `[1]`).
/// A slice holding NaN gives NaN, as PyTorch (and [`max_backward`]'s rule) says.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `axis >= rank` or the axis is empty, [`Error::DType`].
pub fn max(x: &Tensor, axis: usize) -> Result<Tensor, Error> {
    reduce_axis(x, axis, Op::Max)
}

/// Mean along `axis`: `[..., n, ...] -> [...]` (the axis removed; 1-D gives `[1]`).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `axis >= rank` or the axis is empty, [`Error::DType`].
pub fn mean(x: &Tensor, axis: usize) -> Result<Tensor, Error> {
    reduce_axis(x, axis, Op::Mean)
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
