//! Layout ops: `reshape`/`view`, `permute`, `narrow`, `slice_scatter`, `cat`, `stack`,
//! each with its backward. Reshape shares the buffer; the others copy through the strided
//! copy kernel (or the block copy of `cat`), so f32 and u32 tensors move bit for bit.

use crate::ops::check;
use crate::ops::shape::copy::{cat, split, transpose};
use crate::strided::{Layout, gather_view, merge_dims, strided_copy};
use crate::{DType, Error, Tensor};

/// The same data with another shape of the same element count; no copy (PyTorch's
/// `reshape`; every tang tensor is contiguous, so it is also `view`).
///
/// # Errors
/// [`Error::ShapeMismatch`] when the element counts differ.
pub fn reshape(x: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    x.reshape(shape)
}

/// [`reshape`] under PyTorch's other name.
///
/// # Errors
/// As [`reshape`].
pub fn view(x: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    x.reshape(shape)
}

/// Checks that `dims` is a permutation of `0..rank`.
fn check_permutation(op: &str, dims: &[usize], shape: &[usize]) -> Result<(), Error> {
    let mut seen = vec![false; shape.len()];
    let ok = dims.len() == shape.len()
        && dims
            .iter()
            .all(|&d| d < seen.len() && !std::mem::replace(&mut seen[d], true));
    if !ok {
        return Err(check::mismatch(
            op,
            format!(
                "dims {dims:?} is not a permutation of 0..{} (the rank of {shape:?}); name every dimension once",
                shape.len()
            ),
        ));
    }
    Ok(())
}

/// Reorders the dimensions: output dimension `d` is input dimension `dims[d]` (PyTorch's
/// `permute` followed by `contiguous`), e.g. `[B, T, H, D]` with `dims = [0, 2, 1, 3]`
/// gives `[B, H, T, D]`. Any rank and dtype.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dims` is not a permutation of the dimensions,
/// [`Error::TooLarge`] past 2^32 - 1 elements or more than 8 dimensions that do not merge.
pub fn permute(x: &Tensor, dims: &[usize]) -> Result<Tensor, Error> {
    let op = "permute";
    let s = x.shape();
    check_permutation(op, dims, s)?;
    let out_shape: Vec<usize> = dims.iter().map(|&d| s[d]).collect();
    let own = crate::size::contiguous_strides(s);
    let src = Layout {
        strides: dims.iter().map(|&d| own[d]).collect(),
        offset: 0,
    };
    // The tiled transpose moves 32-bit words; f16 takes the strided copy, which pairs them.
    if x.dtype().size() == 4
        && let Some(view) = batched_transpose(&out_shape, &src.strides)
    {
        // The last dimension moves: the tiled transpose reads and writes coalesced.
        return transpose(&x.reshape(&view)?)?.reshape(&out_shape);
    }
    gather_view(op, x, &src, &out_shape)
}

/// When a permutation is, after merging dimensions, a batch of matrix transposes
/// (`[B, R, C] -> [B, C, R]`, as `[B, T, C] -> [B, C, T]` or `[B, T, H, D] -> [B, H, D, T]`
/// are), the input viewed as `[B, R, C]`.
fn batched_transpose(out_shape: &[usize], src_strides: &[usize]) -> Option<[usize; 3]> {
    let merged = merge_dims(
        out_shape,
        src_strides,
        &crate::size::contiguous_strides(out_shape),
    );
    let (batch, pair) = match merged.as_slice() {
        [a, b] => ((1, 0, 0), [*a, *b]),
        [batch, a, b] => (*batch, [*a, *b]),
        _ => return None,
    };
    // Output `[C, R]` reading input stride 1 along C and C along R.
    let [(c, c_src, c_dst), (r, r_src, r_dst)] = pair;
    let is_transpose = c_src == 1 && r_src == c && r_dst == 1 && c_dst == r;
    let batch_ok = batch.0 == 1 || (batch.1 == r * c && batch.2 == r * c);
    (is_transpose && batch_ok).then_some([batch.0, r, c])
}

/// The gradient of [`permute`]: `grad_out` permuted by the inverse permutation.
///
/// # Errors
/// As [`permute`].
pub fn permute_backward(grad_out: &Tensor, dims: &[usize]) -> Result<Tensor, Error> {
    check_permutation("permute_backward", dims, grad_out.shape())?;
    let mut inverse = vec![0; dims.len()];
    for (d, &src) in dims.iter().enumerate() {
        inverse[src] = d;
    }
    permute(grad_out, &inverse)
}

/// Checks `start + length <= shape[dim]` and returns the shape of the slice.
fn slice_shape(
    op: &str,
    shape: &[usize],
    dim: usize,
    start: usize,
    length: usize,
) -> Result<Vec<usize>, Error> {
    check::dim(op, dim, shape)?;
    if start.checked_add(length).is_none_or(|end| end > shape[dim]) {
        return Err(check::mismatch(
            op,
            format!(
                "elements {start}..{start}+{length} of dim {dim} do not fit in shape {shape:?}; \
                 keep start + length <= {}",
                shape[dim]
            ),
        ));
    }
    let mut out = shape.to_vec();
    out[dim] = length;
    Ok(out)
}

/// The layout of elements `start..` of `dim` inside a contiguous tensor of `shape`.
fn slice_layout(shape: &[usize], dim: usize, start: usize) -> Layout {
    let strides = crate::size::contiguous_strides(shape);
    let offset = start * strides[dim];
    Layout { strides, offset }
}

/// Elements `start..start + length` of dimension `dim`, as a new tensor (PyTorch's
/// `narrow`, copied). f32 and u32 tensors.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim` is out of range or the slice leaves the tensor,
/// [`Error::TooLarge`] past 2^32 - 1 elements.
pub fn narrow(x: &Tensor, dim: usize, start: usize, length: usize) -> Result<Tensor, Error> {
    let op = "narrow";
    let out_shape = slice_shape(op, x.shape(), dim, start, length)?;
    gather_view(op, x, &slice_layout(x.shape(), dim, start), &out_shape)
}

/// The gradient of [`narrow`]: zeros of the input's shape with `grad_out` at
/// `start..start + length` of `dim`.
///
/// # Errors
/// As [`slice_scatter`].
pub fn narrow_backward(
    grad_out: &Tensor,
    input_shape: &[usize],
    dim: usize,
    start: usize,
) -> Result<Tensor, Error> {
    let op = "narrow_backward";
    check::dtype(op, grad_out, crate::DType::F32)?;
    let grad_in = Tensor::zeros(grad_out.device(), input_shape)?;
    slice_scatter_(&grad_in, grad_out, dim, start)?;
    Ok(grad_in)
}

/// In place: writes `src` into elements `start..start + src.shape()[dim]` of dimension
/// `dim` of `x` (PyTorch's `x.narrow(dim, start, len).copy_(src)`, or `slice_scatter` in
/// place). A KV cache grows this way on the GPU: no rebuild, no upload.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `src` differs from `x` outside `dim` or does not fit from
/// `start`, [`Error::DType`] or [`Error::DeviceMismatch`] when they differ in those,
/// [`Error::Aliasing`] when `src` shares `x`'s buffer, [`Error::TooLarge`].
pub fn slice_scatter_(x: &Tensor, src: &Tensor, dim: usize, start: usize) -> Result<(), Error> {
    let op = "slice_scatter_";
    check::same_device(op, x.device(), &[("src", src)])?;
    check::same_dtype(op, x, src)?;
    let ss = src.shape();
    let fits = ss.len() == x.shape().len()
        && dim < ss.len()
        && slice_shape(op, x.shape(), dim, start, ss[dim]).is_ok_and(|s| s == ss);
    if !fits {
        return Err(check::mismatch(
            op,
            format!(
                "src of shape {ss:?} does not fit into {:?} at {start}.. of dim {dim}; src must match outside dim {dim} \
                 and start + src.shape[{dim}] must not pass the end",
                x.shape()
            ),
        ));
    }
    let dst = slice_layout(x.shape(), dim, start);
    strided_copy(op, src, &Layout::contiguous(ss), x, &dst, ss)
}

/// `x` with `src` written at `start..` of `dim` (PyTorch's `slice_scatter`, step 1): a new
/// tensor; `x` is unchanged. f16 tensors whose slice does not pair into 32-bit words are
/// scattered in f32 (exact).
///
/// # Errors
/// As [`slice_scatter_`].
pub fn slice_scatter(x: &Tensor, src: &Tensor, dim: usize, start: usize) -> Result<Tensor, Error> {
    if x.dtype() == DType::F16 && src.dtype() == DType::F16 {
        let wide = |t: &Tensor| crate::ops::to_dtype(t, DType::F32);
        let out = slice_scatter(&wide(x)?, &wide(src)?, dim, start)?;
        return crate::ops::to_dtype(&out, DType::F16);
    }
    let out = crate::ops::elementwise::inplace::clone(x)?;
    slice_scatter_(&out, src, dim, start)?;
    Ok(out)
}

/// The gradient of [`cat`]: `grad_out` cut along `dim` into the inputs' `sizes`.
///
/// # Errors
/// As [`split`](crate::ops::split).
pub fn cat_backward(grad_out: &Tensor, sizes: &[usize], dim: usize) -> Result<Vec<Tensor>, Error> {
    split(grad_out, dim, sizes)
}

/// Stacks same-shape tensors along a new dimension `dim` (`0..=rank`), PyTorch's `stack`.
///
/// # Errors
/// [`Error::ShapeMismatch`] when shapes differ or `dim > rank`; as [`cat`].
pub fn stack(xs: &[&Tensor], dim: usize) -> Result<Tensor, Error> {
    let op = "stack";
    let Some(first) = xs.first() else {
        return cat(xs, dim);
    };
    let s = first.shape();
    if dim > s.len() {
        return Err(check::mismatch(
            op,
            format!(
                "dim {dim} is out of range for stacking tensors of shape {s:?}; pass a dim <= {}",
                s.len()
            ),
        ));
    }
    let mut unsqueezed = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        if x.shape() != s {
            return Err(check::mismatch(
                op,
                format!(
                    "tensor {i} has shape {:?}, tensor 0 {s:?}; stack needs one shape",
                    x.shape()
                ),
            ));
        }
        let mut shape = s.to_vec();
        shape.insert(dim, 1);
        unsqueezed.push(x.reshape(&shape)?);
    }
    let refs: Vec<&Tensor> = unsqueezed.iter().collect();
    cat(&refs, dim)
}

/// The gradient of [`stack`]: `grad_out` cut along `dim` into one tensor per input.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `dim` is out of range.
pub fn stack_backward(grad_out: &Tensor, dim: usize) -> Result<Vec<Tensor>, Error> {
    let gs = grad_out.shape();
    check::dim("stack_backward", dim, gs)?;
    let mut shape = gs.to_vec();
    shape.remove(dim);
    cat_backward(grad_out, &vec![1; gs[dim]], dim)?
        .into_iter()
        .map(|g| g.reshape(&shape))
        .collect()
}
