//! In-place ops (`add_`, `mul_`, `copy_`, `fill_`, `zero_`) and the constructors built on
//! them (`full`, `clone`): gradient accumulation and buffer reuse without a user kernel.
//! In-place ops write the tensor's buffer, so every clone of the tensor (and every
//! reshape of it, which shares the buffer) sees the new values, as PyTorch views do.

use bytemuck::{Pod, Zeroable};

use super::broadcast::{broadcast_layout, broadcasts_to};
use super::check;
use super::strided::{Layout, strided_copy};
use crate::dense::reduce::grid;
use crate::{Binding, DType, Device, Error, RawKernel, Tensor};

/// Threads per workgroup.
const WG: usize = 256;

/// Uniform block of the kernels below (WGSL `struct P`).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ScalarParams {
    n: u32,
    /// Threads in one row of the 2-D grid.
    row: u32,
    /// The scalar's bits (an f32 for `add_`/`mul_`, any 32-bit word for `fill`).
    value: u32,
    pad: u32,
}

/// `x[i] = value` for every 32-bit word.
const FILL_WGSL: &str = "
struct P { n: u32, row: u32, value: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> x: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i < p.n) { x[i] = p.value; }
}
";

/// `x[i] = x[i] + alpha * y[i]` (`add_`).
const ADD_SCALED_WGSL: &str = "
struct P { n: u32, row: u32, alpha: f32, pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i < p.n) { x[i] = x[i] + p.alpha * y[i]; }
}
";

/// `x[i] = x[i] * s` (`mul_`).
const MUL_SCALAR_WGSL: &str = "
struct P { n: u32, row: u32, s: f32, pad: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i < p.n) { x[i] = x[i] * p.s; }
}
";

static FILL: RawKernel = RawKernel::new("fill", FILL_WGSL, "main");
static ADD_SCALED: RawKernel = RawKernel::new("add_", ADD_SCALED_WGSL, "main");
static MUL_SCALAR: RawKernel = RawKernel::new("mul_", MUL_SCALAR_WGSL, "main");

/// The kernels of this file, for naga validation.
#[cfg(test)]
pub(crate) fn shaders() -> Vec<(&'static str, &'static str)> {
    vec![
        ("fill", FILL_WGSL),
        ("add_", ADD_SCALED_WGSL),
        ("mul_", MUL_SCALAR_WGSL),
    ]
}

/// Launches a one-thread-per-element kernel over `x`'s `n` elements; `extra` is bound
/// (read) before `x` (read-write).
fn launch_scalar(
    op: &str,
    kernel: &RawKernel,
    x: &Tensor,
    extra: Option<&Tensor>,
    value: u32,
) -> Result<(), Error> {
    let n = check::fits_u32(op, "elements", x.len())?;
    if n == 0 {
        return Ok(());
    }
    let dev = x.device();
    let groups = grid(dev, op, u64::from(n).div_ceil(WG as u64))?;
    let params = ScalarParams {
        n,
        row: groups[0] * WG as u32,
        value,
        pad: 0,
    };
    let mut bindings = vec![Binding::Uniform(bytemuck::bytes_of(&params))];
    bindings.extend(extra.map(Binding::Read));
    bindings.push(Binding::ReadWrite(x));
    dev.dispatch_raw(kernel, &[], &bindings, groups)
}

/// In place: `x += alpha * other` (PyTorch's `x.add_(other, alpha=alpha)`; `alpha = 1.0`
/// adds). `other` broadcasts to `x`'s shape.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `other` does not broadcast to `x`, [`Error::DType`] for
/// u32 tensors, [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn add_(x: &Tensor, other: &Tensor, alpha: f32) -> Result<(), Error> {
    let op = "add_";
    check::dtype(op, x, DType::F32)?;
    check::dtype(op, other, DType::F32)?;
    check::same_device(op, x.device(), &[("other", other)])?;
    let other = if other.shape() == x.shape() {
        other.clone()
    } else if broadcasts_to(other.shape(), x.shape()) {
        super::broadcast::expand(other, x.shape())?
    } else {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "other of shape {:?} does not broadcast to x's shape {:?}",
                other.shape(),
                x.shape()
            ),
        });
    };
    // `x.add_(x)`: the kernel cannot bind one buffer as read and read-write; read a copy.
    let other = if other.same_buffer(x) {
        clone(&other)?
    } else {
        other
    };
    launch_scalar(op, &ADD_SCALED, x, Some(&other), alpha.to_bits())
}

/// In place: `x *= s` (PyTorch's `x.mul_(s)` with a number).
///
/// # Errors
/// [`Error::DType`] for a u32 tensor, [`Error::TooLarge`].
pub fn mul_(x: &Tensor, s: f32) -> Result<(), Error> {
    check::dtype("mul_", x, DType::F32)?;
    launch_scalar("mul_", &MUL_SCALAR, x, None, s.to_bits())
}

/// In place: every element of the f32 tensor `x` set to `value` (PyTorch's `fill_`).
///
/// # Errors
/// [`Error::DType`] for a u32 tensor (use [`fill_u32_`]), [`Error::TooLarge`].
pub fn fill_(x: &Tensor, value: f32) -> Result<(), Error> {
    check::dtype("fill_", x, DType::F32)?;
    launch_scalar("fill_", &FILL, x, None, value.to_bits())
}

/// In place: every element of the u32 tensor `x` set to `value`.
///
/// # Errors
/// [`Error::DType`] for an f32 tensor (use [`fill_`]), [`Error::TooLarge`].
pub fn fill_u32_(x: &Tensor, value: u32) -> Result<(), Error> {
    check::dtype("fill_u32_", x, DType::U32)?;
    launch_scalar("fill_u32_", &FILL, x, None, value)
}

/// In place: every element set to zero (f32 `0.0` or u32 `0`: the same bits).
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn zero_(x: &Tensor) -> Result<(), Error> {
    launch_scalar("zero_", &FILL, x, None, 0)
}

/// A new f32 tensor of `shape` filled with `value` on the GPU (PyTorch's `full`).
///
/// # Errors
/// [`Error::TooLarge`], [`Error::DeviceLost`].
pub fn full(dev: &Device, shape: &[usize], value: f32) -> Result<Tensor, Error> {
    let t = dev.empty(shape, DType::F32)?;
    fill_(&t, value)?;
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
/// (PyTorch's `copy_`; the dtypes must agree: cast with [`super::to_dtype`] first).
/// Copying a tensor onto its own buffer is a no-op.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `src` does not broadcast to `x`, [`Error::DType`],
/// [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn copy_(x: &Tensor, src: &Tensor) -> Result<(), Error> {
    let op = "copy_";
    check::same_device(op, x.device(), &[("src", src)])?;
    check::same_dtype(op, x, src)?;
    if !broadcasts_to(src.shape(), x.shape()) {
        return Err(Error::ShapeMismatch {
            op: op.into(),
            detail: format!(
                "src of shape {:?} does not broadcast to x's shape {:?}",
                src.shape(),
                x.shape()
            ),
        });
    }
    if src.same_buffer(x) && src.len() == x.len() {
        return Ok(());
    }
    let src = if src.same_buffer(x) {
        clone(src)?
    } else {
        src.clone()
    };
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
    let out = x.device().empty(x.shape(), x.dtype())?;
    let layout = Layout::contiguous(x.shape());
    strided_copy("clone", x, &layout, &out, &layout, x.shape())?;
    Ok(out)
}
