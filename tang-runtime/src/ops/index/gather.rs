//! Indexing with u32 indices: `index_select`, `gather`, `index_copy_`, and their
//! backwards (`index_select`'s is an index-add, `gather`'s a scatter-add). The backwards are
//! deterministic: no float atomics, every sum in a fixed order. An index at or past the end
//! of its dimension never touches memory out of bounds: gathers read 0 there, scatters skip
//! it (checking it on the CPU would need the indices read back).

use crate::ops::check;
use crate::ops::check::want_shape;
use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::strided::MAX_RANK;
use crate::wgsl::thread_main;
use crate::{DType, Device, Error, Tensor};

params! {
    /// `index_select` and `index_copy_`: the data viewed as `[outer, len, inner]` around
    /// the indexed dimension, `k` indices, `total` threads.
    struct IndexParams { outer: u32, len: u32, inner: u32, k: u32, total: u32 }
}

/// Thread `i` of an [`IndexParams`] kernel: `(o, j, c)` of `[outer, k, inner]`, and the
/// position of `(o, id, c)` in the `[outer, len, inner]` data.
const INDEX_COORDS_WGSL: &str = "
fn index_coords(i: u32) -> vec3<u32> {
    let t = i / p.inner;
    return vec3<u32>(t / p.k, t % p.k, i % p.inner);
}
fn data_at(o: u32, id: u32, c: u32) -> u32 { return (o * p.len + id) * p.inner + c; }
";

/// `out[o, j, i] = x[o, idx[j], i]` (0 for an index `>= len`).
static INDEX_SELECT: Spec<IndexParams> = Spec::new(
    "index_select",
    &[INDEX_COORDS_WGSL],
    &[
        Slot::Read("x", "array<u32>"),
        Slot::Read("idx", "array<u32>"),
        Slot::ReadWrite("out", "array<u32>"),
    ],
    concat!(
        thread_main!(i < "p.total"),
        "    let q = index_coords(i);
    let id = idx[q.y];
    var v = 0u;
    if (id < p.len) { v = x[data_at(q.x, id, q.z)]; }
    out[i] = v;
}
"
    ),
);

/// `x[o, idx[j], i] = src[o, j, i]` (skipped for an index `>= len`).
static INDEX_COPY: Spec<IndexParams> = Spec::new(
    "index_copy_",
    &[INDEX_COORDS_WGSL],
    &[
        Slot::Read("src", "array<u32>"),
        Slot::Read("idx", "array<u32>"),
        Slot::ReadWrite("x", "array<u32>"),
    ],
    concat!(
        thread_main!(i < "p.total"),
        "    let q = index_coords(i);
    let id = idx[q.y];
    if (id < p.len) { x[data_at(q.x, id, q.z)] = src[i]; }
}
"
    ),
);

params! {
    /// `gather` and its backward over up to 8 dimensions: `a*` the shape the threads walk
    /// (the index's for `gather`, the input's for the backward), `b*` the input's strides
    /// (`gather`) or the index's shape (backward), `c*` the index's strides (backward);
    /// `len` the length of `dim` in the input (`gather`) or the index (backward).
    struct GatherParams {
        a0: u32, a1: u32, a2: u32, a3: u32, a4: u32, a5: u32, a6: u32, a7: u32,
        b0: u32, b1: u32, b2: u32, b3: u32, b4: u32, b5: u32, b6: u32, b7: u32,
        c0: u32, c1: u32, c2: u32, c3: u32, c4: u32, c5: u32, c6: u32, c7: u32,
        rank: u32, dim: u32, len: u32, total: u32,
    }
}

impl GatherParams {
    /// The three per-dimension lists (unused dimensions 0).
    fn set_dims(&mut self, a: [u32; MAX_RANK], b: [u32; MAX_RANK], c: [u32; MAX_RANK]) {
        [
            self.a0, self.a1, self.a2, self.a3, self.a4, self.a5, self.a6, self.a7,
        ] = a;
        [
            self.b0, self.b1, self.b2, self.b3, self.b4, self.b5, self.b6, self.b7,
        ] = b;
        [
            self.c0, self.c1, self.c2, self.c3, self.c4, self.c5, self.c6, self.c7,
        ] = c;
    }
}

/// The per-dimension lists of [`GatherParams`] as WGSL arrays (dynamically indexable).
const GATHER_LISTS_WGSL: &str = "
fn list_a() -> array<u32, 8> { return array<u32, 8>(p.a0, p.a1, p.a2, p.a3, p.a4, p.a5, p.a6, p.a7); }
fn list_b() -> array<u32, 8> { return array<u32, 8>(p.b0, p.b1, p.b2, p.b3, p.b4, p.b5, p.b6, p.b7); }
fn list_c() -> array<u32, 8> { return array<u32, 8>(p.c0, p.c1, p.c2, p.c3, p.c4, p.c5, p.c6, p.c7); }
";

/// `out[c] = x[c with c[dim] = index[c]]` over the index's shape (0 for an index `>= len`).
static GATHER: Spec<GatherParams> = Spec::new(
    "gather",
    &[GATHER_LISTS_WGSL],
    &[
        Slot::Read("x", "array<u32>"),
        Slot::Read("index", "array<u32>"),
        Slot::ReadWrite("out", "array<u32>"),
    ],
    concat!(
        thread_main!(i < "p.total"),
        "    let a = list_a();
    let b = list_b();
    let id = index[i];
    var r = i;
    var off = 0u;
    for (var k = 0u; k < p.rank; k = k + 1u) {
        let d = p.rank - 1u - k;
        let c = r % a[d];
        r = r / a[d];
        if (d != p.dim) { off = off + c * b[d]; }
    }
    var v = 0u;
    if (id < p.len) { v = x[off + id * b[p.dim]]; }
    out[i] = v;
}
"
    ),
);

/// `grad_x[c] = Σ_j grad_out[q_j]` over `j < len` in increasing order, where `q_j` is `c`
/// with `c[dim] = j`, for the `j` whose `index[q_j] == c[dim]` (0 where `c` lies outside
/// the index's shape in another dimension).
static GATHER_BACKWARD: Spec<GatherParams> = Spec::new(
    "gather_backward",
    &[GATHER_LISTS_WGSL],
    &[
        Slot::Read("grad_out", "array<f32>"),
        Slot::Read("index", "array<u32>"),
        Slot::ReadWrite("grad_x", "array<f32>"),
    ],
    concat!(
        thread_main!(i < "p.total"),
        "    let a = list_a();
    let b = list_b();
    let cs = list_c();
    var r = i;
    var base = 0u;
    var want = 0u;
    var inside = true;
    for (var k = 0u; k < p.rank; k = k + 1u) {
        let d = p.rank - 1u - k;
        let c = r % a[d];
        r = r / a[d];
        if (d == p.dim) {
            want = c;
        } else {
            inside = inside && c < b[d];
            base = base + c * cs[d];
        }
    }
    var acc = 0.0;
    if (inside) {
        let step = cs[p.dim];
        for (var j = 0u; j < p.len; j = j + 1u) {
            let q = base + j * step;
            if (index[q] == want) { acc = acc + grad_out[q]; }
        }
    }
    grad_x[i] = acc;
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        INDEX_SELECT.source(),
        INDEX_COPY.source(),
        GATHER.source(),
        GATHER_BACKWARD.source(),
    ]
}

/// Checks that `index` is a 1-D u32 tensor on `x`'s device, and `dim < rank`.
fn check_index_1d(op: &str, x: &Tensor, dim: usize, index: &Tensor) -> Result<(), Error> {
    check::dtype(op, index, DType::U32)?;
    check::same_device(op, x.device(), &[("index", index)])?;
    check::dim(op, dim, x.shape())?;
    if index.shape().len() != 1 {
        return Err(check::mismatch(
            op,
            format!("index must be 1-D, got shape {:?}", index.shape()),
        ));
    }
    Ok(())
}

/// `shape` with dimension `dim` (in range) of length `len`.
fn with_len(shape: &[usize], dim: usize, len: usize) -> Vec<usize> {
    let mut out = shape.to_vec();
    out[dim] = len;
    out
}

/// Launches `index_select` or `index_copy_` over `[outer, k, inner]` threads: the data is
/// `[outer, len, inner]` around `dim`; `tensors` in the kernel's slot order.
fn launch_index(
    op: &str,
    kernel: &Spec<IndexParams>,
    data_shape: &[usize],
    dim: usize,
    tensors: &[&Tensor],
    k: usize,
) -> Result<(), Error> {
    let outer: usize = data_shape[..dim].iter().product();
    let inner: usize = data_shape[dim + 1..].iter().product();
    let total = outer * k * inner;
    let Some(first) = tensors.first() else {
        return Ok(());
    };
    let params = IndexParams {
        outer: crate::size::fits_u32(op, "rows", outer)?,
        len: crate::size::fits_u32(op, "dim length", data_shape[dim])?,
        inner: crate::size::fits_u32(op, "columns", inner)?,
        k: crate::size::fits_u32(op, "indices", k)?,
        total: crate::size::fits_u32(op, "elements", total)?,
    };
    launch_threads(
        op,
        first.device(),
        kernel,
        &[],
        &params,
        params.total,
        tensors,
    )
}

/// The entries of `x` at positions `index` along `dim` (PyTorch's `index_select`): the
/// result has `x`'s shape with `dim` of length `index.len()`. f32 and u32 `x`.
///
/// # Errors
/// [`Error::DType`] unless `index` is u32, [`Error::ShapeMismatch`] for a `dim` out of
/// range or an index that is not 1-D, [`Error::DeviceMismatch`], [`Error::TooLarge`];
/// [`Error::IndexOutOfRange`] for an index `>= x.shape()[dim]` (at once for uploaded
/// indices, else at the next read or sync; the result holds 0 there).
pub fn index_select(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
    let op = "index_select";
    check_index_1d(op, x, dim, index)?;
    crate::size::fits_u32(op, "input elements", x.len())?;
    crate::ops::index::bounds::check_ids(op, index, x.shape()[dim])?;
    let out = x
        .device()
        .empty(&with_len(x.shape(), dim, index.len()), x.dtype())?;
    launch_index(
        op,
        &INDEX_SELECT,
        x.shape(),
        dim,
        &[x, index, &out],
        index.len(),
    )?;
    // Ids selected from ids keep their bound (a batch of token ids from a corpus).
    out.mark_values_from(x);
    Ok(out)
}

/// The gradient of [`index_select`] (an index-add): zeros of `input_shape` with each
/// slice of `grad_out` added at its index along `dim`; repeated indices sum in increasing
/// position order (the deterministic counting sort of
/// [`crate::ops::index::embedding::embedding_backward`]).
///
/// # Errors
/// [`Error::ShapeMismatch`] when `grad_out` is not `input_shape` with `dim` of length
/// `index.len()`, [`Error::DType`], [`Error::TooLarge`].
pub fn index_select_backward(
    grad_out: &Tensor,
    input_shape: &[usize],
    dim: usize,
    index: &Tensor,
) -> Result<Tensor, Error> {
    let op = "index_select_backward";
    check::dtype(op, grad_out, DType::F32)?;
    check_index_1d(op, grad_out, dim, index)?;
    check::dim(op, dim, input_shape)?;
    let expected = with_len(input_shape, dim, index.len());
    want_shape(
        op,
        "grad_out",
        grad_out.shape(),
        &expected,
        format_args!(
            "the input's shape {input_shape:?} with dim {dim} of length {}",
            index.len()
        ),
    )?;
    let outer: usize = input_shape[..dim].iter().product();
    let inner: usize = input_shape[dim + 1..].iter().product();
    let (len, k) = (input_shape[dim], index.len());
    // Rows of the index-add are slices along `dim`: bring `dim` to the front.
    let rows = if outer == 1 {
        grad_out.reshape(&[k, inner])?
    } else {
        crate::ops::shape::view::permute(&grad_out.reshape(&[outer, k, inner])?, &[1, 0, 2])?
            .reshape(&[k, outer * inner])?
    };
    let summed = crate::ops::index::embedding::embedding_backward(&rows, index, len)?;
    if outer == 1 {
        summed.reshape(input_shape)
    } else {
        crate::ops::shape::view::permute(&summed.reshape(&[len, outer, inner])?, &[1, 0, 2])?
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
    crate::size::fits_u32(op, "elements", x.len())?;
    let expected = with_len(x.shape(), dim, index.len());
    want_shape(
        op,
        "src",
        src.shape(),
        &expected,
        format_args!("x's shape with dim {dim} of length {}", index.len()),
    )?;
    launch_index(
        op,
        &INDEX_COPY,
        x.shape(),
        dim,
        &[src, index, x],
        index.len(),
    )
}

/// Checks that a gather's index is u32 on `dev` and fits `x_shape`.
fn check_gather(
    op: &str,
    dev: &Device,
    x_shape: &[usize],
    dim: usize,
    index: &Tensor,
) -> Result<(), Error> {
    check::dtype(op, index, DType::U32)?;
    check::same_device(op, dev, &[("index", index)])?;
    check::dim(op, dim, x_shape)?;
    let is = index.shape();
    let fits = is.len() == x_shape.len()
        && is
            .iter()
            .zip(x_shape)
            .enumerate()
            .all(|(d, (&i, &x))| d == dim || i <= x);
    if !fits {
        return Err(check::mismatch(
            op,
            format!(
                "index of shape {is:?} does not fit the input of shape {x_shape:?}: it needs the same rank and no \
                 dimension but {dim} longer than the input's"
            ),
        ));
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
        *o = crate::size::fits_u32(op, "dimension", x)?;
    }
    Ok(out)
}

/// `out[c] = x[c with c[dim] replaced by index[c]]` over the index's shape (PyTorch's
/// `gather`). `index` has `x`'s rank and no dimension but `dim` longer than `x`'s. f32
/// and u32 `x`.
///
/// # Errors
/// [`Error::DType`] unless `index` is u32, [`Error::ShapeMismatch`],
/// [`Error::DeviceMismatch`], [`Error::TooLarge`] (past 2^32 - 1 elements or 8 dims);
/// [`Error::IndexOutOfRange`] for an index `>= x.shape()[dim]`, as [`index_select`].
pub fn gather(x: &Tensor, dim: usize, index: &Tensor) -> Result<Tensor, Error> {
    let op = "gather";
    check_gather(op, x.device(), x.shape(), dim, index)?;
    crate::size::fits_u32(op, "input elements", x.len())?;
    crate::ops::index::bounds::check_ids(op, index, x.shape()[dim])?;
    let out = x.device().empty(index.shape(), x.dtype())?;
    let mut params = GatherParams {
        rank: index.shape().len() as u32,
        dim: dim as u32,
        len: crate::size::fits_u32(op, "dim length", x.shape()[dim])?,
        total: crate::size::fits_u32(op, "elements", index.len())?,
        ..GatherParams::default()
    };
    params.set_dims(
        to_words(index.shape(), op)?,
        to_words(&crate::size::contiguous_strides(x.shape()), op)?,
        [0; MAX_RANK],
    );
    launch_threads(
        op,
        x.device(),
        &GATHER,
        &[],
        &params,
        params.total,
        &[x, index, &out],
    )?;
    out.mark_values_from(x);
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
    input_shape: &[usize],
    dim: usize,
    index: &Tensor,
) -> Result<Tensor, Error> {
    let op = "gather_backward";
    check::dtype(op, grad_out, DType::F32)?;
    check_gather(op, grad_out.device(), input_shape, dim, index)?;
    check::same_shape(op, grad_out, index)?;
    crate::size::fits_u32(op, "gradient elements", grad_out.len())?;
    let grad_x = grad_out.device().empty(input_shape, DType::F32)?;
    let mut params = GatherParams {
        rank: input_shape.len() as u32,
        dim: dim as u32,
        len: crate::size::fits_u32(op, "index dim length", index.shape()[dim])?,
        total: crate::size::fits_u32(op, "elements", grad_x.len())?,
        ..GatherParams::default()
    };
    params.set_dims(
        to_words(input_shape, op)?,
        to_words(index.shape(), op)?,
        to_words(&crate::size::contiguous_strides(index.shape()), op)?,
    );
    launch_threads(
        op,
        grad_out.device(),
        &GATHER_BACKWARD,
        &[],
        &params,
        params.total,
        &[grad_out, index, &grad_x],
    )?;
    Ok(grad_x)
}
