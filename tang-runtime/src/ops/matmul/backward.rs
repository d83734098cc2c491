//! The backward of matmul: the operands' gradients (each a matmul of the upstream
//! gradient with the other operand, transposes chosen so nothing is copied) and the bias
//! gradient.

use super::{MatmulOptions, dims, matmul_with};
use crate::ops::check::{mismatch, want_shape};
use crate::size::{Size, numel};
use crate::{DType, Error, Tensor};

/// Gradients of `C = op(A) · op(B)` (bias and epilogue excluded: for those, pass the
/// gradient with respect to the pre-epilogue value, and get the bias gradient from
/// [`bias_backward`]). Same shapes and flags as the forward; returns
/// `(grad_a, grad_b)` shaped like `a` and `b`. A broadcast (rank-2) operand's gradient
/// is summed over the batch.
///
/// # Errors
/// As [`matmul_with`], plus [`Error::ShapeMismatch`] when `grad_out` is not shaped like C.
pub fn matmul_backward(
    grad_out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    transpose_a: bool,
    transpose_b: bool,
) -> Result<(Tensor, Tensor), Error> {
    let o = MatmulOptions {
        transpose_a,
        transpose_b,
        ..Default::default()
    };
    matmul_backward_with(grad_out, a, b, &o)
}

/// [`matmul_backward`] for a product made with options `o`: its transposes and
/// [`MatmulOptions::f16_inputs`] (the backward's products then round their operands,
/// `grad_out` included, to f16, as autocast's backward multiplies in f16); `bias`,
/// `epilogue`, `tile` and `out_dtype` are ignored. Each gradient has its operand's dtype
/// (an f16 operand's is rounded once from the f32 accumulation, as PyTorch's f16
/// gradients are).
///
/// # Errors
/// As [`matmul_backward`].
pub fn matmul_backward_with(
    grad_out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    o: &MatmulOptions<'_>,
) -> Result<(Tensor, Tensor), Error> {
    backward(grad_out, a, a, b, b, o)
}

/// [`matmul_backward_with`] for a product whose operands were multiplied as `a_cast`
/// and `b_cast`, copies of `a` and `b` in another dtype (autocast's f16 casts: of an f32
/// weight, made once per region and reused, as PyTorch's autocast caches it, and of an
/// f32 activation, made once by the forward), or `a` and `b` themselves (then the same as
/// [`matmul_backward_with`]). Each gradient multiplies the other operand's copy (so the
/// tensor-core products read two f16 operands) and has its own operand's dtype (f32 for
/// an f32 operand: the f32 accumulation, not rounded to f16).
///
/// ```
/// use tang_runtime::{Device, DType, Tensor, ops};
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[1, 2])?;
/// let w = Tensor::from_slice(&dev, &[0.5, 0.25], &[1, 2])?;
/// let g = Tensor::from_slice(&dev, &[1.0], &[1, 1])?;
/// let o = ops::MatmulOptions { transpose_b: true, ..Default::default() };
/// let (x16, w16) = (x.to_dtype(DType::F16)?, w.to_dtype(DType::F16)?);
/// let (gx, gw) = ops::matmul_backward_cast(&g, &x, &x16, &w, &w16, &o)?;
/// assert_eq!((gx.to_vec()?, gx.dtype()), (vec![0.5, 0.25], DType::F32));
/// assert_eq!((gw.to_vec()?, gw.dtype()), (vec![1.0, 2.0], DType::F32));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`matmul_backward`], and [`Error::ShapeMismatch`] unless `a_cast` has `a`'s shape
/// and `b_cast` `b`'s.
pub fn matmul_backward_cast(
    grad_out: &Tensor,
    a: &Tensor,
    a_cast: &Tensor,
    b: &Tensor,
    b_cast: &Tensor,
    o: &MatmulOptions<'_>,
) -> Result<(Tensor, Tensor), Error> {
    for (name, copy, of, what) in [
        ("a_cast", a_cast, a, "the shape of a, whose copy it is"),
        ("b_cast", b_cast, b, "the shape of b, whose copy it is"),
    ] {
        want_shape("matmul", name, copy.shape(), of.shape(), what)?;
    }
    backward(grad_out, a, a_cast, b, b_cast, o)
}

/// The backward of both: A's gradient multiplies `b_op` and has `a`'s dtype, B's
/// multiplies `a_op` and has `b`'s dtype.
fn backward(
    grad_out: &Tensor,
    a: &Tensor,
    a_op: &Tensor,
    b: &Tensor,
    b_op: &Tensor,
    o: &MatmulOptions<'_>,
) -> Result<(Tensor, Tensor), Error> {
    let (transpose_a, transpose_b) = (o.transpose_a, o.transpose_b);
    let f16_inputs = o.half(a_op, b_op);
    let o = MatmulOptions {
        transpose_a,
        transpose_b,
        f16_inputs,
        ..Default::default()
    };
    let d = dims(a, b, &o)?;
    want_shape(
        "matmul",
        "grad_c",
        grad_out.shape(),
        &d.out_shape,
        "the output's shape",
    )?;
    // Each product is stored in the dtype of the operand whose gradient it is.
    let mm = |x: &Tensor, y: &Tensor, ta: bool, tb: bool, of: DType| {
        matmul_with(
            x,
            y,
            &MatmulOptions {
                transpose_a: ta,
                transpose_b: tb,
                f16_inputs,
                out_dtype: (of == DType::F16).then_some(DType::F16),
                ..Default::default()
            },
        )
    };
    let (ta, tb) = (transpose_a, transpose_b);
    let a_batched = a.shape().len() > 2;
    let b_batched = b.shape().len() > 2;
    let g = grad_out;
    // d op(A) = G op(B)^T, d op(B) = op(A)^T G.
    let grad_a = |bb: &Tensor| {
        if ta {
            mm(bb, g, tb, true, a.dtype())
        } else {
            mm(g, bb, false, !tb, a.dtype())
        }
    };
    let grad_b = |aa: &Tensor| {
        if tb {
            mm(g, aa, true, ta, b.dtype())
        } else {
            mm(aa, g, !ta, false, b.dtype())
        }
    };
    let ga = if a_batched || !b_batched {
        grad_a(b_op)?
    } else {
        sum_batch(&grad_a(b_op)?, a.shape())?
    };
    let gb = if b_batched || !a_batched {
        grad_b(a_op)?
    } else if !ta {
        // Linear layers: A is [batch.., m, k]; fold the batch into m and the sum over
        // the batch becomes part of one matmul's reduction.
        let rows = (Size::of(d.batch) * d.m)
            .counted(|| format!("matmul_backward: rows of a {:?}", a.shape()))?;
        let af = a_op.reshape(&[rows, d.k])?;
        let gf = g.reshape(&[rows, d.n])?;
        if tb {
            mm(&gf, &af, true, false, b.dtype())?
        } else {
            mm(&af, &gf, true, false, b.dtype())?
        }
    } else {
        sum_batch(&grad_b(a_op)?, b.shape())?
    };
    Ok((ga.reshape(a.shape())?, gb.reshape(b.shape())?))
}

/// Sums `t: [batch.., r, c]` over its batch into `shape` (`[r, c]`), as one matmul with a
/// row of ones (in `t`'s dtype).
fn sum_batch(t: &Tensor, shape: &[usize]) -> Result<Tensor, Error> {
    let inner = numel(shape)?;
    let batch = t.len() / inner.max(1);
    let ones = Tensor::full(t.device(), &[1, batch], 1.0)?;
    let options = MatmulOptions {
        out_dtype: Some(t.dtype()),
        ..Default::default()
    };
    matmul_with(&ones, &t.reshape(&[batch, inner])?, &options)?.reshape(shape)
}

/// The gradient of a bias added to every row of C: `grad_out` (`[.., n]`) summed over all
/// leading dimensions, shape `[n]`, in f32 whatever `grad_out`'s dtype (the bias is added
/// in f32 before C is stored, so an f16 C's bias gradient is the f32 sum, not rounded
/// to f16: a sum over many rows would overflow f16 sooner under a loss scale).
///
/// # Errors
/// [`Error::ShapeMismatch`] for a tensor of rank 0.
pub fn bias_backward(grad_out: &Tensor) -> Result<Tensor, Error> {
    let Some(&n) = grad_out.shape().last() else {
        return Err(mismatch(
            "matmul",
            "grad_c must have rank >= 1 ([.., n])".into(),
        ));
    };
    if n == 0 {
        return grad_out.device().empty(&[0], DType::F32);
    }
    // A column sum, not a matmul with a row of ones: that matmul has one output row, so
    // it runs on a few dozen workgroups (0.6 ms for [16384, 384] on an H200 against
    // ~0.02 ms for the two-pass column reduction).
    let rows = grad_out.len() / n;
    crate::ops::reduce::sum_f32(&grad_out.reshape(&[rows, n])?, 0)
}
