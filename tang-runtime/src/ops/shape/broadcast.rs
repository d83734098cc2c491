//! NumPy/PyTorch broadcasting on tensors: [`expand`] (a materialised broadcast; the shape
//! logic, `broadcast_shapes`, is the core's, in `size.rs`) and [`sum_to_shape`], which reduces a broadcast gradient back to
//! an input's shape on the GPU.
//!
//! The rules: shapes are aligned from the right; two dimensions fit when they are equal or
//! one of them is 1 (a missing leading dimension counts as 1); the result takes the larger.
//! `[N, 1]` with `[N, M]` gives `[N, M]`, `[B, 1, T]` with `[B, H, T]` gives `[B, H, T]`,
//! and `[2, 3]` with `[3, 2]` is an error.

use crate::cast::to_dtype;
use crate::ops::check;
use crate::size::broadcasts_to;
use crate::strided::{broadcast_layout, gather_view};
use crate::{DType, Error, Tensor};

/// `x` repeated along its size-1 (or missing leading) dimensions to `shape`, as a new
/// contiguous tensor (PyTorch's `expand` followed by `contiguous`). f32 and u32 tensors.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `x`'s shape does not broadcast to exactly `shape`,
/// [`Error::TooLarge`] past 2^32 - 1 elements.
pub fn expand(x: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    let op = "expand";
    let xs = x.shape();
    if !broadcasts_to(xs, shape) {
        return Err(check::mismatch(
            op,
            format!(
                "cannot expand {xs:?} to {shape:?}: every dimension of the input must equal the target's or be 1, \
                 and the target may only add leading dimensions"
            ),
        ));
    }
    gather_view(op, x, &broadcast_layout(xs, shape), shape)
}

/// The gradient of [`expand`]: `grad_out` summed back to the input's shape.
///
/// # Errors
/// As [`sum_to_shape`].
pub fn expand_backward(grad_out: &Tensor, input_shape: &[usize]) -> Result<Tensor, Error> {
    sum_to_shape(grad_out, input_shape)
}

/// Sums `grad` (of a broadcast result's shape) over the dimensions along which `shape` was
/// broadcast, giving a tensor of `shape`: the backward of every broadcasting op. Adjacent
/// broadcast dimensions are summed in one pass of the reduction kernels. An f16 `grad`
/// gives an f16 sum, accumulated in f32 and rounded once.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `shape` does not broadcast to `grad`'s shape,
/// [`Error::DType`] for a u32 tensor, [`Error::TooLarge`] past 2^32 - 1 elements.
pub fn sum_to_shape(grad: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    let op = "sum_to_shape";
    check::want_float(op, grad)?;
    let gs = grad.shape();
    if !broadcasts_to(shape, gs) {
        return Err(check::mismatch(
            op,
            format!(
                "shape {shape:?} does not broadcast to the gradient's shape {gs:?}; pass the shape of the input \
                 that was broadcast"
            ),
        ));
    }
    let lead = gs.len() - shape.len();
    // Runs of summed and kept dimensions: `[(size, summed)]`, neighbours of one kind merged.
    let mut runs: Vec<(usize, bool)> = Vec::new();
    for (d, &n) in gs.iter().enumerate() {
        let summed = n != 1 && (d < lead || shape[d - lead] == 1);
        match runs.last_mut() {
            Some((m, s)) if *s == summed => *m *= n,
            _ => runs.push((n, summed)),
        }
    }
    let summed_runs = runs.iter().filter(|&&(_, s)| s).count();
    if summed_runs == 0 {
        return grad.reshape(shape);
    }
    if grad.dtype() == DType::F16 && summed_runs > 1 {
        // One reduction per summed run, and an f16 one rounds its result: sum in f32 and
        // round once at the end.
        let wide = sum_to_shape(&to_dtype(grad, DType::F32)?, shape)?;
        return to_dtype(&wide, DType::F16);
    }
    let sizes: Vec<usize> = runs.iter().map(|&(n, _)| n).collect();
    let mut acc = grad.reshape(&sizes)?;
    // Last summed run first, so the earlier runs keep their positions.
    for (axis, _) in runs.iter().enumerate().rev().filter(|(_, r)| r.1) {
        let kept: Vec<usize> = (0..acc.shape().len()).filter(|&d| d != axis).collect();
        let next_shape: Vec<usize> = kept.iter().map(|&d| acc.shape()[d]).collect();
        acc = crate::ops::reduce::sum(&acc, axis)?;
        // `sum` of a rank-1 tensor gives [1]; keep the bookkeeping shape exact.
        acc = acc.reshape(&next_shape)?;
    }
    acc.reshape(shape)
}
