//! In-place ops (`add_`, `mul_`, `copy_`, `fill_`, `zero_`) and the constructors built on
//! them (`full`, `clone`): gradient accumulation and buffer reuse without a user kernel.
//! In-place ops write the tensor's buffer, so every clone of the tensor (and every
//! reshape of it, which shares the buffer) sees the new values, as PyTorch views do.

use crate::ops::check;
use crate::size::broadcasts_to;
use crate::spec::{Params, Slot, Source, Spec, launch_threads, params};
use crate::strided::{Layout, broadcast_layout, gather_view, strided_copy};
use crate::wgsl::per_element;
use crate::{DType, Device, Error, Tensor};

params! {
    /// `n` elements set to the 32-bit word `value`.
    struct FillParams { n: u32, value: u32 }
}

/// `x[i] = value` for every 32-bit word.
static FILL: Spec<FillParams> = Spec::new(
    "fill",
    &[],
    &[Slot::ReadWrite("x", "array<u32>")],
    per_element!("x[i] = p.value;"),
);

/// The in-place updates, as generated kernels: each comes in f32 and f16 storage (an f16
/// tensor is updated in f32 and rounded back), and reads a broadcast operand in place.
// Only the kernels are launched; the CPU functions the macro keeps beside them are unused.
#[allow(dead_code)]
mod update {
    use crate::kernel;

    /// `x += alpha * other` (`add_`).
    #[kernel]
    pub fn add_scaled(x: &mut f32, other: f32, #[uniform] alpha: f32) {
        *x += alpha * other;
    }

    /// `x *= s` (`mul_`).
    #[kernel]
    pub fn scale(x: &mut f32, #[uniform] s: f32) {
        *x *= s;
    }

    /// `x = src`: `copy_` of f16 tensors (the strided copy moves 32-bit elements).
    #[kernel]
    pub fn assign(x: &mut f32, src: f32) {
        *x = src;
    }

    /// `x = value`: `fill_` and `zero_` of f16 tensors (a fill or clear of whole 32-bit
    /// words would change the other half of an odd-length tensor's last word).
    #[kernel]
    pub fn fill(x: &mut f32, #[uniform] value: f32) {
        *x = value;
    }
}

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![FILL.source()]
}

/// Launches a one-thread-per-element kernel over the last tensor of `tensors` (the one
/// written); `params` gets the element count from `with`.
pub(super) fn launch_elementwise<P: Params>(
    op: &str,
    kernel: &Spec<P>,
    tensors: &[&Tensor],
    with: impl FnOnce(u32) -> P,
) -> Result<(), Error> {
    let Some(x) = tensors.last() else {
        return Ok(());
    };
    let n = crate::size::fits_u32(op, "elements", x.len())?;
    launch_threads(op, x.device(), kernel, &[], &with(n), n, tensors)
}

/// Fills every 32-bit word of `x` with `value`.
fn fill_words(op: &str, x: &Tensor, value: u32) -> Result<(), Error> {
    launch_elementwise(op, &FILL, &[x], |n| FillParams { n, value })
}

/// In place: `x += alpha * other` (PyTorch's `x.add_(other, alpha=alpha)`; `alpha = 1.0`
/// adds). `other` broadcasts to `x`'s shape. `x` keeps its dtype, as in PyTorch: an f16
/// `x` is updated in f32 and rounded back, its f32 `other` rounded to f16 first; an f16
/// `other` is read as f32 by an f32 `x`.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `other` does not broadcast to `x`, [`Error::DType`] for
/// u32 tensors, [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn add_(x: &Tensor, other: &Tensor, alpha: f32) -> Result<(), Error> {
    let op = "add_";
    float(op, x)?;
    float(op, other)?;
    check::same_device(op, x.device(), &[("other", other)])?;
    check_broadcast(op, "other", other, x)?;
    let other = if x.dtype() == DType::F16 {
        crate::ops::to_dtype(other, DType::F16)?
    } else {
        other.clone()
    };
    update::add_scaled::launch(x.device(), x, &unaliased(other, x)?, alpha)
}

/// Fails with [`Error::ShapeMismatch`] unless `src` (named `what`) broadcasts to `x`'s
/// shape.
fn check_broadcast(op: &str, what: &str, src: &Tensor, x: &Tensor) -> Result<(), Error> {
    if broadcasts_to(src.shape(), x.shape()) {
        return Ok(());
    }
    Err(check::mismatch(
        op,
        format!(
            "{what} of shape {:?} does not broadcast to x's shape {:?}",
            src.shape(),
            x.shape()
        ),
    ))
}

/// `src`, or a copy of it when it shares `x`'s buffer (`x.add_(x)`): a kernel cannot bind
/// one buffer as read and read-write.
fn unaliased(src: Tensor, x: &Tensor) -> Result<Tensor, Error> {
    if src.same_buffer(x) {
        clone(&src)
    } else {
        Ok(src)
    }
}

/// In place: `x *= s` (PyTorch's `x.mul_(s)` with a number; an f16 `x` is scaled in f32
/// and rounded back).
///
/// # Errors
/// [`Error::DType`] for a u32 tensor, [`Error::TooLarge`].
pub fn mul_(x: &Tensor, s: f32) -> Result<(), Error> {
    float("mul_", x)?;
    update::scale::launch(x.device(), x, s)
}

/// Fails with [`Error::DType`] (expecting f32) unless `x` is f32 or f16.
fn float(op: &str, x: &Tensor) -> Result<(), Error> {
    if x.dtype() == DType::F16 {
        return Ok(());
    }
    check::dtype(op, x, DType::F32)
}

/// In place: every element of the float tensor `x` set to `value` (PyTorch's `fill_`; an
/// f16 `x` gets `value` rounded to f16).
///
/// # Errors
/// [`Error::DType`] for a u32 tensor (use [`fill_u32_`]), [`Error::TooLarge`].
pub fn fill_(x: &Tensor, value: f32) -> Result<(), Error> {
    float("fill_", x)?;
    if x.dtype() == DType::F16 {
        return update::fill::launch(x.device(), x, value);
    }
    fill_words("fill_", x, value.to_bits())
}

/// In place: every element of the u32 tensor `x` set to `value`.
///
/// # Errors
/// [`Error::DType`] for an f32 tensor (use [`fill_`]), [`Error::TooLarge`].
pub fn fill_u32_(x: &Tensor, value: u32) -> Result<(), Error> {
    check::dtype("fill_u32_", x, DType::U32)?;
    fill_words("fill_u32_", x, value)
}

/// In place: every element set to zero (f32 `0.0`, f16 `0.0` or u32 `0`: zero bits).
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn zero_(x: &Tensor) -> Result<(), Error> {
    if x.dtype() == DType::F16 {
        return fill_(x, 0.0);
    }
    x.clear()
}

/// A new f32 tensor of `shape` filled with `value` on the GPU (PyTorch's `full`; also
/// [`Tensor::full`]).
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn full(dev: &Device, shape: &[usize], value: f32) -> Result<Tensor, Error> {
    let t = dev.empty(shape, DType::F32)?;
    if value.to_bits() == 0 {
        t.clear()?;
    } else {
        fill_(&t, value)?;
    }
    Ok(t)
}

/// A new u32 tensor of `shape` filled with `value` on the GPU.
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn full_u32(dev: &Device, shape: &[usize], value: u32) -> Result<Tensor, Error> {
    let t = dev.empty(shape, DType::U32)?;
    fill_u32_(&t, value)?;
    Ok(t)
}

/// In place: `x`'s elements replaced by `src`'s, which broadcasts to `x`'s shape
/// (PyTorch's `copy_`; the dtypes must agree: cast with [`crate::ops::to_dtype`] first).
/// Copying a tensor onto its own buffer is a no-op.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `src` does not broadcast to `x`, [`Error::DType`],
/// [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn copy_(x: &Tensor, src: &Tensor) -> Result<(), Error> {
    let op = "copy_";
    check::same_device(op, x.device(), &[("src", src)])?;
    check::same_dtype(op, x, src)?;
    check_broadcast(op, "src", src, x)?;
    if src.same_buffer(x) && src.len() == x.len() {
        return Ok(());
    }
    let src = unaliased(src.clone(), x)?;
    if x.dtype() == DType::F16 {
        return update::assign::launch(x.device(), x, &src);
    }
    let from = broadcast_layout(src.shape(), x.shape());
    strided_copy(
        op,
        &src,
        &from,
        x,
        &Layout::contiguous(x.shape()),
        x.shape(),
    )
}

/// A copy of `x` in a new buffer (PyTorch's `clone`): in-place ops on one leave the other
/// unchanged.
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn clone(x: &Tensor) -> Result<Tensor, Error> {
    if x.dtype() == DType::F16 {
        let out = x.device().empty(x.shape(), DType::F16)?;
        update::assign::launch(x.device(), &out, x)?;
        return Ok(out);
    }
    gather_view("clone", x, &Layout::contiguous(x.shape()), x.shape())
}

#[cfg(test)]
mod tests {
    use crate::{Device, Tensor, ops};

    // Views of one buffer (`Tensor::view_at`) under the in-place ops: here, with the
    // ops, since the tensor core never imports them.

    /// A view is bound, read, written and cleared at its offset, leaves the rest of its
    /// buffer alone, exists only on the binding alignment, and two views of one buffer
    /// are one launch's bindings only when both are written and disjoint.
    #[test]
    fn views_work_at_their_offset() {
        let dev = Device::new().unwrap();
        let align = dev.info().limits.min_storage_buffer_offset_alignment as usize;
        let n = (align / 4).max(4);
        let data: Vec<f32> = (0..2 * n).map(|i| i as f32).collect();
        let t = Tensor::from_slice(&dev, &data, &[2 * n]).unwrap();
        let (lo, hi) = (t.view_at(0, &[n]).unwrap(), t.view_at(n, &[n]).unwrap());
        assert_eq!(hi.to_vec().unwrap(), data[n..]);
        assert!(t.view_at(n + 1, &[n]).is_none(), "past the end");
        if align > 4 {
            assert!(t.view_at(1, &[n]).is_none(), "off the alignment");
        }
        ops::mul_(&hi, 2.0).unwrap();
        let doubled: Vec<f32> = data[n..].iter().map(|v| v * 2.0).collect();
        assert_eq!(t.to_vec().unwrap()[..n], data[..n]);
        assert_eq!(hi.to_vec().unwrap(), doubled);
        assert_eq!(
            ops::add(&hi, &hi).unwrap().to_vec().unwrap()[0],
            4.0 * n as f32
        );
        lo.write(&vec![-1.0; n]).unwrap();
        hi.clear().unwrap();
        let mut want = vec![-1.0; n];
        want.extend(vec![0.0; n]);
        assert_eq!(t.to_vec().unwrap(), want);
        // A view written while another view of its buffer is read: wgpu refuses the
        // pair in one launch, so `add_` reads a copy.
        hi.write(&vec![3.0; n]).unwrap();
        ops::add_(&lo, &hi, 1.0).unwrap();
        assert_eq!(lo.to_vec().unwrap(), vec![2.0; n]);
        assert_eq!(hi.to_vec().unwrap(), vec![3.0; n]);
    }
}
