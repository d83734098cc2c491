//! Indexing with u32 indices: `index_select`, `gather`, `index_copy_`, and their
//! backwards (`index_select`'s is an index-add, `gather`'s a scatter-add). The backwards are
//! deterministic: no float atomics, every sum in a fixed order. An index at or past the end
//! of its dimension never touches memory out of bounds: gathers read 0 there, scatters skip
//! it (checking it on the CPU would need the indices read back).

use bytemuck::{Pod, Zeroable};

use super::check;
use super::strided::MAX_RANK;
use crate::dense::reduce::grid;
use crate::{Binding, DType, Error, RawKernel, Tensor};

/// Threads per workgroup.
const WG: usize = 256;

/// Uniform block of `index_select` and `index_copy_` (WGSL `struct P`): the data viewed as
/// `[outer, len, inner]` around the indexed dimension, `k` indices.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct IndexParams {
    outer: u32,
    len: u32,
    inner: u32,
    k: u32,
    total: u32,
    /// Threads in one row of the 2-D grid.
    row: u32,
    pad: [u32; 2],
}

/// [`IndexParams`] in WGSL.
macro_rules! index_params {
    () => {
        "struct P { outer: u32, len: u32, inner: u32, k: u32, total: u32, row: u32, pad0: u32, pad1: u32 }\n"
    };
}

/// `out[o, j, i] = x[o, idx[j], i]` (0 for an index `>= len`).
const INDEX_SELECT_WGSL: &str = concat!(
    index_params!(),
    "
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let c = i % p.inner;
    let t = i / p.inner;
    let j = t % p.k;
    let o = t / p.k;
    let id = idx[j];
    var v = 0u;
    if (id < p.len) { v = x[(o * p.len + id) * p.inner + c]; }
    out[i] = v;
}
"
);

/// `x[o, idx[j], i] = src[o, j, i]` (skipped for an index `>= len`).
const INDEX_COPY_WGSL: &str = concat!(
    index_params!(),
    "
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> x: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let c = i % p.inner;
    let t = i / p.inner;
    let j = t % p.k;
    let o = t / p.k;
    let id = idx[j];
    if (id < p.len) { x[(o * p.len + id) * p.inner + c] = src[i]; }
}
"
);

/// Uniform block of `gather` and its backward (WGSL `struct P`).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct GatherParams {
    /// The shape the threads walk (the index's for `gather`, the input's for the backward).
    shape: [u32; MAX_RANK],
    /// `gather`: the input's strides. Backward: the index's shape.
    other: [u32; MAX_RANK],
    /// Backward: the index's strides.
    strides: [u32; MAX_RANK],
    rank: u32,
    dim: u32,
    /// The length of `dim` in the input (`gather`) or the index (backward).
    len: u32,
    total: u32,
    row: u32,
    pad: [u32; 3],
}

/// [`GatherParams`] in WGSL, and a reader of its arrays.
macro_rules! gather_params {
    () => {
        "struct P {
    shape: array<vec4<u32>, 2>, other: array<vec4<u32>, 2>, strides: array<vec4<u32>, 2>,
    rank: u32, dim: u32, len: u32, total: u32, row: u32, pad0: u32, pad1: u32, pad2: u32,
}
fn at(a: array<vec4<u32>, 2>, d: u32) -> u32 { return a[d / 4u][d % 4u]; }
"
    };
}

/// `out[c] = x[c with c[dim] = index[c]]` over the index's shape (0 for an index `>= len`).
const GATHER_WGSL: &str = concat!(
    gather_params!(),
    "
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let id = index[i];
    var r = i;
    var off = 0u;
    for (var k = 0u; k < p.rank; k = k + 1u) {
        let d = p.rank - 1u - k;
        let n = at(p.shape, d);
        let c = r % n;
        r = r / n;
        if (d != p.dim) { off = off + c * at(p.other, d); }
    }
    var v = 0u;
    if (id < p.len) { v = x[off + id * at(p.other, p.dim)]; }
    out[i] = v;
}
"
);

/// `grad_x[c] = Σ_j grad_out[q_j]` over `j < len` in increasing order, where `q_j` is `c`
/// with `c[dim] = j`, for the `j` whose `index[q_j] == c[dim]` (0 where `c` lies outside
/// the index's shape in another dimension).
const GATHER_BACKWARD_WGSL: &str = concat!(
    gather_params!(),
    "
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> grad_out: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> grad_x: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    var r = i;
    var base = 0u;
    var want = 0u;
    var inside = true;
    for (var k = 0u; k < p.rank; k = k + 1u) {
        let d = p.rank - 1u - k;
        let n = at(p.shape, d);
        let c = r % n;
        r = r / n;
        if (d == p.dim) {
            want = c;
        } else {
            inside = inside && c < at(p.other, d);
            base = base + c * at(p.strides, d);
        }
    }
    var acc = 0.0;
    if (inside) {
        let step = at(p.strides, p.dim);
        for (var j = 0u; j < p.len; j = j + 1u) {
            let q = base + j * step;
            if (index[q] == want) { acc = acc + grad_out[q]; }
        }
    }
    grad_x[i] = acc;
}
"
);

static INDEX_SELECT: RawKernel = RawKernel::new("index_select", INDEX_SELECT_WGSL, "main");
static INDEX_COPY: RawKernel = RawKernel::new("index_copy_", INDEX_COPY_WGSL, "main");
static GATHER: RawKernel = RawKernel::new("gather", GATHER_WGSL, "main");
static GATHER_BACKWARD: RawKernel = RawKernel::new("gather_backward", GATHER_BACKWARD_WGSL, "main");

/// The kernels of this file, for naga validation.
#[cfg(test)]
pub(crate) fn shaders() -> Vec<(&'static str, &'static str)> {
    vec![
        ("index_select", INDEX_SELECT_WGSL),
        ("index_copy_", INDEX_COPY_WGSL),
        ("gather", GATHER_WGSL),
        ("gather_backward", GATHER_BACKWARD_WGSL),
    ]
}

/// Checks that `index` is a 1-D u32 tensor on `x`'s device, and `dim < rank`.
fn check_index_1d(op: &str, x: &Tensor, dim: usize, index: &Tensor) -> Result<(), Error> {
    check::dtype(op, index, DType::U32)?;
    check::same_device(op, x.device(), &[("index", index)])?;
    check::dim(op, dim, x.shape())?;
    if index.shape().len() != 1 {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!("index must be 1-D, got shape {:?}", index.shape()),
        });
    }
    Ok(())
}

/// Launches `index_select` or `index_copy_`: `data` is `[outer, len, inner]`, `moved` is
/// `[outer, k, inner]`.
fn launch_index(
    op: &str,
    kernel: &RawKernel,
    dev: &crate::Device,
    data_shape: &[usize],
    dim: usize,
    bindings: [Binding<'_>; 3],
    k: usize,
) -> Result<(), Error> {
    let outer: usize = data_shape[..dim].iter().product();
    let inner: usize = data_shape[dim + 1..].iter().product();
    let total = outer * k * inner;
    if total == 0 {
        return Ok(());
    }
    let [a, b, c] = bindings;
    let groups = grid(dev, op, total.div_ceil(WG) as u64)?;
    let params = IndexParams {
        outer: check::fits_u32(op, "rows", outer)?,
        len: check::fits_u32(op, "dim length", data_shape[dim])?,
        inner: check::fits_u32(op, "columns", inner)?,
        k: check::fits_u32(op, "indices", k)?,
        total: check::fits_u32(op, "elements", total)?,
        row: groups[0] * WG as u32,
        pad: [0; 2],
    };
    dev.dispatch_raw(
        kernel,
        &[],
        &[Binding::Uniform(bytemuck::bytes_of(&params)), a, b, c],
        groups,
    )
}

/// The entries of `x` at positions `index` along `dim` (PyTorch's `index_select`): the
/// result has `x`'s shape with `dim` of length `index.len()`. f32 and u32 `x`; an index
/// `>= x.shape()[dim]` gives zeros.
///
/// # Errors
/// [`Error::DType`] unless `index` is u32, [`Error::ShapeMismatch`] for a `dim` out of
/// range or an index that is not 1-D, [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn index_select(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
    let op = "index_select";
    check_index_1d(op, x, dim, index)?;
    check::fits_u32(op, "input elements", x.len())?;
    let mut shape = x.shape().to_vec();
    shape[dim] = index.len();
    let out = x.device().empty(&shape, x.dtype())?;
    launch_index(
        op,
        &INDEX_SELECT,
        x.device(),
        x.shape(),
        dim,
        [
            Binding::Read(x),
            Binding::Read(index),
            Binding::ReadWrite(&out),
        ],
        index.len(),
    )?;
    Ok(out)
}

/// The gradient of [`index_select`] (an index-add): zeros of `input_shape` with each
/// slice of `grad_out` added at its index along `dim`; repeated indices sum in increasing
/// position order (the deterministic counting sort of [`super::embedding_backward`]).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `grad_out` is not `input_shape` with `dim` of length
/// `index.len()`, [`Error::DType`], [`Error::TooLarge`].
pub fn index_select_backward(
    grad_out: &Tensor,
    index: &Tensor,
    input_shape: &[usize],
    dim: usize,
) -> Result<Tensor, Error> {
    let op = "index_select_backward";
    check::dtype(op, grad_out, DType::F32)?;
    check_index_1d(op, grad_out, dim, index)?;
    let mut expected = input_shape.to_vec();
    if let Some(d) = expected.get_mut(dim) {
        *d = index.len();
    }
    if grad_out.shape() != expected || dim >= input_shape.len() {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "grad_out has shape {:?}, expected {expected:?} (the input's shape {input_shape:?} with dim {dim} of \
                 length {})",
                grad_out.shape(),
                index.len()
            ),
        });
    }
    let outer: usize = input_shape[..dim].iter().product();
    let inner: usize = input_shape[dim + 1..].iter().product();
    let (len, k) = (input_shape[dim], index.len());
    // Rows of the index-add are slices along `dim`: bring `dim` to the front.
    let rows = if outer == 1 {
        grad_out.reshape(&[k, inner])?
    } else {
        super::view::permute(&grad_out.reshape(&[outer, k, inner])?, &[1, 0, 2])?
            .reshape(&[k, outer * inner])?
    };
    let summed = crate::dense::embedding::embedding_backward(index, &rows, len)?;
    if outer == 1 {
        summed.reshape(input_shape)
    } else {
        super::view::permute(&summed.reshape(&[len, outer, inner])?, &[1, 0, 2])?
            .reshape(input_shape)
    }
}

/// In place: slice `j` of `src` along `dim` written to position `index[j]` of `x`
/// (PyTorch's `index_copy_`); an index `>= x.shape()[dim]` is skipped. When `index`
/// repeats a position, which slice lands there is unspecified (as in PyTorch).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `src` is not `x`'s shape with `dim` of length
/// `index.len()`, [`Error::DType`], [`Error::DeviceMismatch`], [`Error::Aliasing`] when
/// `src` or `index` shares `x`'s buffer, [`Error::TooLarge`].
pub fn index_copy_(x: &Tensor, dim: usize, index: &Tensor, src: &Tensor) -> Result<(), Error> {
    let op = "index_copy_";
    check_index_1d(op, x, dim, index)?;
    check::same_dtype(op, x, src)?;
    check::same_device(op, x.device(), &[("src", src)])?;
    check::fits_u32(op, "elements", x.len())?;
    let mut expected = x.shape().to_vec();
    expected[dim] = index.len();
    if src.shape() != expected {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "src has shape {:?}, expected {expected:?} (x's shape with dim {dim} of length {})",
                src.shape(),
                index.len()
            ),
        });
    }
    launch_index(
        op,
        &INDEX_COPY,
        x.device(),
        x.shape(),
        dim,
        [
            Binding::Read(src),
            Binding::Read(index),
            Binding::ReadWrite(x),
        ],
        index.len(),
    )
}

/// Checks a gather's index against `x_shape` and returns the rank.
fn check_gather(op: &str, x_shape: &[usize], dim: usize, index: &Tensor) -> Result<(), Error> {
    check::dtype(op, index, DType::U32)?;
    check::dim(op, dim, x_shape)?;
    let is = index.shape();
    let fits = is.len() == x_shape.len()
        && is
            .iter()
            .zip(x_shape)
            .enumerate()
            .all(|(d, (&i, &x))| d == dim || i <= x);
    if !fits {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "index of shape {is:?} does not fit the input of shape {x_shape:?}: it needs the same rank and no \
                 dimension but {dim} longer than the input's"
            ),
        });
    }
    if is.len() > MAX_RANK {
        return Err(Error::TooLarge {
            what: format!("{op}: dimensions"),
            requested: is.len() as u64,
            limit: MAX_RANK as u64,
        });
    }
    Ok(())
}

/// Copies a shape or strides into a uniform array.
fn to_words(v: &[usize], op: &str) -> Result<[u32; MAX_RANK], Error> {
    let mut out = [0u32; MAX_RANK];
    for (o, &x) in out.iter_mut().zip(v) {
        *o = check::fits_u32(op, "dimension", x)?;
    }
    Ok(out)
}

/// Launches a gather-family kernel over `total` threads.
fn launch_gather(
    op: &str,
    kernel: &RawKernel,
    mut params: GatherParams,
    bindings: [Binding<'_>; 3],
    dev: &crate::Device,
) -> Result<(), Error> {
    let total = params.total as usize;
    if total == 0 {
        return Ok(());
    }
    let groups = grid(dev, op, total.div_ceil(WG) as u64)?;
    params.row = groups[0] * WG as u32;
    let [a, b, c] = bindings;
    dev.dispatch_raw(
        kernel,
        &[],
        &[Binding::Uniform(bytemuck::bytes_of(&params)), a, b, c],
        groups,
    )
}

/// `out[c] = x[c with c[dim] replaced by index[c]]` over the index's shape (PyTorch's
/// `gather`). `index` has `x`'s rank and no dimension but `dim` longer than `x`'s; an index
/// `>= x.shape()[dim]` reads 0. f32 and u32 `x`.
///
/// # Errors
/// [`Error::DType`] unless `index` is u32, [`Error::ShapeMismatch`],
/// [`Error::DeviceMismatch`], [`Error::TooLarge`] (past 2^32 - 1 elements or 8 dims).
pub fn gather(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
    let op = "gather";
    check::same_device(op, x.device(), &[("index", index)])?;
    check_gather(op, x.shape(), dim, index)?;
    check::fits_u32(op, "input elements", x.len())?;
    let out = x.device().empty(index.shape(), x.dtype())?;
    let params = GatherParams {
        shape: to_words(index.shape(), op)?,
        other: to_words(&check::contiguous_strides(x.shape()), op)?,
        strides: [0; MAX_RANK],
        rank: index.shape().len() as u32,
        dim: dim as u32,
        len: check::fits_u32(op, "dim length", x.shape()[dim])?,
        total: check::fits_u32(op, "elements", index.len())?,
        row: 0,
        pad: [0; 3],
    };
    launch_gather(
        op,
        &GATHER,
        params,
        [
            Binding::Read(x),
            Binding::Read(index),
            Binding::ReadWrite(&out),
        ],
        x.device(),
    )?;
    Ok(out)
}

/// The gradient of [`gather`] (a scatter-add): zeros of `input_shape` with each element of
/// `grad_out` added at the position it was gathered from. Each element of the result sums
/// its contributions in increasing order along `dim` (one thread per element, no atomics:
/// the same bits on every run; the cost is `index.shape()[dim]` reads per element).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `grad_out` is not the index's shape or the index does not
/// fit `input_shape`, [`Error::DType`], [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn gather_backward(
    grad_out: &Tensor,
    index: &Tensor,
    input_shape: &[usize],
    dim: usize,
) -> Result<Tensor, Error> {
    let op = "gather_backward";
    check::dtype(op, grad_out, DType::F32)?;
    check::same_device(op, grad_out.device(), &[("index", index)])?;
    check_gather(op, input_shape, dim, index)?;
    check::same_shape(op, grad_out, index)?;
    check::fits_u32(op, "gradient elements", grad_out.len())?;
    let grad_x = grad_out.device().empty(input_shape, DType::F32)?;
    let params = GatherParams {
        shape: to_words(input_shape, op)?,
        other: to_words(index.shape(), op)?,
        strides: to_words(&check::contiguous_strides(index.shape()), op)?,
        rank: input_shape.len() as u32,
        dim: dim as u32,
        len: check::fits_u32(op, "index dim length", index.shape()[dim])?,
        total: check::fits_u32(op, "elements", grad_x.len())?,
        row: 0,
        pad: [0; 3],
    };
    launch_gather(
        op,
        &GATHER_BACKWARD,
        params,
        [
            Binding::Read(grad_out),
            Binding::Read(index),
            Binding::ReadWrite(&grad_x),
        ],
        grad_out.device(),
    )?;
    Ok(grad_x)
}
