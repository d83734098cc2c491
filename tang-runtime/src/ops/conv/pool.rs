//! 2-D pooling over NCHW tensors: `max_pool2d` and `avg_pool2d` with PyTorch's output size
//! (`floor((H + 2p - d (k - 1) - 1) / s) + 1`, `ceil_mode = false`), and their backwards.
//! Each kernel runs one thread per element it writes; the backwards gather, for each input
//! element, the windows that cover it in a fixed order: deterministic, no atomics.

use crate::ops::check;
use crate::ops::check::want_shape;
use crate::spec::{F32_X_TO_OUT, Slot, Source, Spec, launch_threads, params};
use crate::wgsl::{IS_NAN_WGSL, thread_main};
use crate::{DType, Device, Error, Tensor};

/// The window of a 2-D pooling: `[height, width]` pairs, PyTorch's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool2d {
    /// Window size.
    pub kernel_size: [usize; 2],
    /// Step between windows (PyTorch's default: the kernel size).
    pub stride: [usize; 2],
    /// Implicit padding on each side (at most half the window).
    pub padding: [usize; 2],
    /// Spacing between window elements (`max_pool2d` only; 1 for `avg_pool2d`).
    pub dilation: [usize; 2],
}

impl Pool2d {
    /// Non-overlapping windows of `kernel_size`: stride = kernel size, no padding, no
    /// dilation (PyTorch's defaults).
    pub fn new(kernel_size: [usize; 2]) -> Pool2d {
        Pool2d {
            kernel_size,
            stride: kernel_size,
            padding: [0, 0],
            dilation: [1, 1],
        }
    }
}

params! {
    /// One pooling over `planes` planes of `h x w` to `oh x ow`; `total` threads;
    /// `include_pad` (avg) counts padding in the divisor.
    struct PoolParams {
        planes: u32, h: u32, w: u32, oh: u32, ow: u32,
        kh: u32, kw: u32, sh: u32, sw: u32, ph: u32, pw: u32, dh: u32, dw: u32,
        include_pad: u32, total: u32,
    }
}

/// The input row/column of window element `k` of output `o` along one axis (may be out
/// of range: negative inside the padding), and the output windows covering an input.
const WINDOW_WGSL: &str = "
fn at_in(o: u32, k: u32, s: u32, pad: u32, d: u32) -> i32 {
    return i32(o * s + k * d) - i32(pad);
}
// The output index along one axis whose window element `k` lands on input `i`, or -1.
fn covering(i: u32, k: u32, s: u32, pad: u32, d: u32, n_out: u32) -> i32 {
    let t = i32(i + pad) - i32(k * d);
    if (t < 0 || (u32(t) % s) != 0u) { return -1; }
    let o = u32(t) / s;
    return select(-1, i32(o), o < n_out);
}
";

/// Plane coordinates and the average's divisor, over [`PoolParams`].
const POOL_WGSL: &str = "
// (plane, y, x) of output element `i` and of input element `i`.
fn out_coords(i: u32) -> vec3<u32> { return vec3<u32>(i / (p.ow * p.oh), (i / p.ow) % p.oh, i % p.ow); }
fn in_coords(i: u32) -> vec3<u32> { return vec3<u32>(i / (p.w * p.h), (i / p.w) % p.h, i % p.w); }
// avg_pool2d's divisor for output (oy, ox).
fn divisor(oy: u32, ox: u32) -> f32 {
    if (p.include_pad == 1u) { return f32(p.kh * p.kw); }
    let y0 = max(at_in(oy, 0u, p.sh, p.ph, 1u), 0);
    let y1 = min(at_in(oy, p.kh - 1u, p.sh, p.ph, 1u), i32(p.h) - 1);
    let x0 = max(at_in(ox, 0u, p.sw, p.pw, 1u), 0);
    let x1 = min(at_in(ox, p.kw - 1u, p.sw, p.pw, 1u), i32(p.w) - 1);
    return f32((y1 - y0 + 1) * (x1 - x0 + 1));
}
";

/// The entry point, one thread per element `i`, and the element's `plane` and position
/// `$y`, `$x` from `$coords` (`out_coords` or `in_coords`).
macro_rules! element_at {
    ($coords:literal, $y:literal, $x:literal) => {
        concat!(
            thread_main!(i < "p.total"),
            "    let q = ",
            $coords,
            "(i);\n    let plane = q.x;\n    let ",
            $y,
            " = q.y;\n    let ",
            $x,
            " = q.z;\n"
        )
    };
}

/// The start of a forward body: output element `i`'s `plane`, `oy` and `ox`, the
/// accumulators `$init` declares, then the two loops over the window elements that land
/// inside the input (at `y`, `col`), dilated by `$dh`, `$dw`. The body closes both loops.
macro_rules! for_window_inputs {
    ($init:literal, $dh:literal, $dw:literal) => {
        concat!(
            element_at!("out_coords", "oy", "ox"),
            $init,
            "    for (var ky = 0u; ky < p.kh; ky = ky + 1u) {
        let y = at_in(oy, ky, p.sh, p.ph, ",
            $dh,
            ");
        if (y < 0 || y >= i32(p.h)) { continue; }
        for (var kx = 0u; kx < p.kw; kx = kx + 1u) {
            let col = at_in(ox, kx, p.sw, p.pw, ",
            $dw,
            ");
            if (col < 0 || col >= i32(p.w)) { continue; }
"
        )
    };
}

/// The start of a backward body: input element `i`'s `plane`, `iy` and `ix`, the
/// accumulators `$init` declares, then the two loops over the output windows covering it
/// (dilated by `$dh`, `$dw`), with `o` the flat index of each window's output. The body
/// closes both loops.
macro_rules! for_covering_windows {
    ($init:literal, $dh:literal, $dw:literal) => {
        concat!(
            element_at!("in_coords", "iy", "ix"),
            $init,
            "    for (var ky = 0u; ky < p.kh; ky = ky + 1u) {
        let oy = covering(iy, ky, p.sh, p.ph, ",
            $dh,
            ", p.oh);
        if (oy < 0) { continue; }
        for (var kx = 0u; kx < p.kw; kx = kx + 1u) {
            let ox = covering(ix, kx, p.sw, p.pw, ",
            $dw,
            ", p.ow);
            if (ox < 0) { continue; }
            let o = (plane * p.oh + u32(oy)) * p.ow + u32(ox);
"
        )
    };
}

/// `out` = the window's maximum, `idx` = its position `y * w + x` in the plane; ties give
/// the first (row-major) position; a NaN wins (the first NaN), as in PyTorch.
static MAX_POOL: Spec<PoolParams> = Spec::new(
    "max_pool2d",
    &[IS_NAN_WGSL, WINDOW_WGSL, POOL_WGSL],
    &[
        Slot::Read("x", "array<f32>"),
        Slot::ReadWrite("out", "array<f32>"),
        Slot::ReadWrite("idx", "array<u32>"),
    ],
    concat!(
        for_window_inputs!(
            "    // Or-ed with a run-time zero: Chrome's WGSL compiler rejects a non-finite constant.
    var best = bitcast<f32>(0xff800000u | (i & 0u));
    var best_at = 0u;
    var found = false;
",
            "p.dh",
            "p.dw"
        ),
        "            let at = u32(y) * p.w + u32(col);
            let v = x[plane * p.h * p.w + at];
            let best_nan = found && is_nan(bitcast<u32>(best));
            if (!found || (!best_nan && (is_nan(bitcast<u32>(v)) || v > best))) {
                best = v;
                best_at = at;
                found = true;
            }
        }
    }
    out[i] = best;
    idx[i] = best_at;
}
"
    ),
);

/// `grad_x[y, x]` = the sum of `grad_out` over the windows whose maximum was at `(y, x)`.
static MAX_POOL_BACKWARD: Spec<PoolParams> = Spec::new(
    "max_pool2d_backward",
    &[WINDOW_WGSL, POOL_WGSL],
    &[
        Slot::Read("grad_out", "array<f32>"),
        Slot::Read("idx", "array<u32>"),
        Slot::ReadWrite("grad_x", "array<f32>"),
    ],
    concat!(
        for_covering_windows!(
            "    let me = iy * p.w + ix;
    var acc = 0.0;
",
            "p.dh",
            "p.dw"
        ),
        "            if (idx[o] == me) { acc = acc + grad_out[o]; }
        }
    }
    grad_x[i] = acc;
}
"
    ),
);

/// The window's mean (`divisor` elements).
static AVG_POOL: Spec<PoolParams> = Spec::new(
    "avg_pool2d",
    &[WINDOW_WGSL, POOL_WGSL],
    F32_X_TO_OUT,
    concat!(
        for_window_inputs!("    var acc = 0.0;\n", "1u", "1u"),
        "            acc = acc + x[(plane * p.h + u32(y)) * p.w + u32(col)];
        }
    }
    out[i] = acc / divisor(oy, ox);
}
"
    ),
);

/// `grad_x[y, x]` = the sum over the windows covering `(y, x)` of `grad_out / divisor`.
static AVG_POOL_BACKWARD: Spec<PoolParams> = Spec::new(
    "avg_pool2d_backward",
    &[WINDOW_WGSL, POOL_WGSL],
    &[
        Slot::Read("grad_out", "array<f32>"),
        Slot::ReadWrite("grad_x", "array<f32>"),
    ],
    concat!(
        for_covering_windows!("    var acc = 0.0;\n", "1u", "1u"),
        "            acc = acc + grad_out[o] / divisor(u32(oy), u32(ox));
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
        MAX_POOL.source(),
        MAX_POOL_BACKWARD.source(),
        AVG_POOL.source(),
        AVG_POOL_BACKWARD.source(),
    ]
}

/// Checks an NCHW shape and the window, and returns the output shape `[N, C, OH, OW]`.
fn output_shape(op: &str, shape: &[usize], pool: &Pool2d) -> Result<[usize; 4], Error> {
    let &[n, c, _, _] = shape else {
        return Err(check::mismatch(
            op,
            format!("expected an NCHW tensor of rank 4, got shape {shape:?}"),
        ));
    };
    let mut out = [n, c, 0, 0];
    for axis in 0..2 {
        let (k, s, p, d) = (
            pool.kernel_size[axis],
            pool.stride[axis],
            pool.padding[axis],
            pool.dilation[axis],
        );
        if k == 0 || s == 0 || d == 0 || p > k / 2 {
            return Err(check::invalid(
                op,
                format!(
                    "kernel_size {:?}, stride {:?}, dilation {:?} must be at least 1 and padding {:?} at most half the kernel",
                    pool.kernel_size, pool.stride, pool.dilation, pool.padding
                ),
            ));
        }
        out[axis + 2] = check::window_len(op, shape, pool.padding, axis, [k, s, d])?;
    }
    Ok(out)
}

/// The kernel parameters for `input_shape` -> `out_shape`, `total` threads.
fn pool_params(
    op: &str,
    input_shape: &[usize],
    out_shape: &[usize; 4],
    pool: &Pool2d,
    include_pad: bool,
    total: usize,
) -> Result<PoolParams, Error> {
    let u = |what: &str, v: usize| crate::size::fits_u32(op, what, v);
    let elements = input_shape
        .iter()
        .product::<usize>()
        .max(out_shape.iter().product());
    u("elements", elements)?;
    Ok(PoolParams {
        planes: u("planes", out_shape[0] * out_shape[1])?,
        h: u("height", input_shape[2])?,
        w: u("width", input_shape[3])?,
        oh: u("output height", out_shape[2])?,
        ow: u("output width", out_shape[3])?,
        kh: u("kernel height", pool.kernel_size[0])?,
        kw: u("kernel width", pool.kernel_size[1])?,
        sh: u("stride", pool.stride[0])?,
        sw: u("stride", pool.stride[1])?,
        ph: u("padding", pool.padding[0])?,
        pw: u("padding", pool.padding[1])?,
        dh: u("dilation", pool.dilation[0])?,
        dw: u("dilation", pool.dilation[1])?,
        include_pad: u32::from(include_pad),
        total: u("elements", total)?,
    })
}

/// Records `kernel` with `params`: one thread per element it writes (`params.total`).
fn launch(
    op: &str,
    dev: &Device,
    kernel: &Spec<PoolParams>,
    params: &PoolParams,
    tensors: &[&Tensor],
) -> Result<(), Error> {
    launch_threads(op, dev, kernel, &[], params, params.total, tensors)
}

/// Checks `grad_out` against the output shape of `input_shape` under `pool`.
fn check_grad(
    op: &str,
    grad_out: &Tensor,
    input_shape: &[usize],
    pool: &Pool2d,
) -> Result<[usize; 4], Error> {
    check::dtype(op, grad_out, DType::F32)?;
    let out = output_shape(op, input_shape, pool)?;
    want_shape(
        op,
        "grad_out",
        grad_out.shape(),
        &out,
        format_args!("the pooling of {input_shape:?}"),
    )?;
    Ok(out)
}

/// The maximum of each window (PyTorch's `max_pool2d` with `return_indices=True`): the
/// output and, as a u32 tensor of the same shape, the position `y * W + x` of each maximum
/// in its plane (what [`max_pool2d_backward`] needs). Ties give the first position in
/// row-major order; a NaN wins.
///
/// # Errors
/// [`Error::ShapeMismatch`] unless `x` is NCHW and at least one window fits,
/// [`Error::InvalidArgument`] for a zero size or a padding over half the kernel,
/// [`Error::DType`], [`Error::TooLarge`].
pub fn max_pool2d(x: &Tensor, pool: &Pool2d) -> Result<(Tensor, Tensor), Error> {
    let op = "max_pool2d";
    check::dtype(op, x, DType::F32)?;
    let out_shape = output_shape(op, x.shape(), pool)?;
    let dev = x.device();
    let out = dev.empty(&out_shape, DType::F32)?;
    let idx = dev.empty(&out_shape, DType::U32)?;
    let params = pool_params(op, x.shape(), &out_shape, pool, false, out.len())?;
    launch(op, dev, &MAX_POOL, &params, &[x, &out, &idx])?;
    Ok((out, idx))
}

/// The gradient of [`max_pool2d`]: each element of `grad_out` goes to the position of its
/// window's maximum (`indices`); overlapping windows sum in a fixed order.
///
/// # Errors
/// [`Error::ShapeMismatch`] when `grad_out` or `indices` is not the output shape,
/// [`Error::DType`], [`Error::DeviceMismatch`], [`Error::TooLarge`].
pub fn max_pool2d_backward(
    grad_out: &Tensor,
    indices: &Tensor,
    input_shape: &[usize],
    pool: &Pool2d,
) -> Result<Tensor, Error> {
    let op = "max_pool2d_backward";
    let out_shape = check_grad(op, grad_out, input_shape, pool)?;
    check::dtype(op, indices, DType::U32)?;
    check::same_shape(op, grad_out, indices)?;
    let dev = grad_out.device();
    check::same_device(op, dev, &[("indices", indices)])?;
    let grad_x = dev.empty(input_shape, DType::F32)?;
    let params = pool_params(op, input_shape, &out_shape, pool, false, grad_x.len())?;
    launch(
        op,
        dev,
        &MAX_POOL_BACKWARD,
        &params,
        &[grad_out, indices, &grad_x],
    )?;
    Ok(grad_x)
}

/// Fails unless the window has no dilation (`avg_pool2d` has none in PyTorch).
fn no_dilation(op: &str, pool: &Pool2d) -> Result<(), Error> {
    if pool.dilation != [1, 1] {
        return Err(check::invalid(
            op,
            format!("dilation must be [1, 1], got {:?}", pool.dilation),
        ));
    }
    Ok(())
}

/// The mean of each window (PyTorch's `avg_pool2d`): divided by the window size when
/// `count_include_pad` (PyTorch's default), else by the elements inside the input.
///
/// # Errors
/// As [`max_pool2d`], and [`Error::InvalidArgument`] for a dilation other than 1.
pub fn avg_pool2d(x: &Tensor, pool: &Pool2d, count_include_pad: bool) -> Result<Tensor, Error> {
    let op = "avg_pool2d";
    check::dtype(op, x, DType::F32)?;
    no_dilation(op, pool)?;
    let out_shape = output_shape(op, x.shape(), pool)?;
    let dev = x.device();
    let out = dev.empty(&out_shape, DType::F32)?;
    let params = pool_params(
        op,
        x.shape(),
        &out_shape,
        pool,
        count_include_pad,
        out.len(),
    )?;
    launch(op, dev, &AVG_POOL, &params, &[x, &out])?;
    Ok(out)
}

/// The gradient of [`avg_pool2d`]: each element of `grad_out`, divided as in the forward,
/// spread over its window; overlapping windows sum in a fixed order.
///
/// # Errors
/// As [`avg_pool2d`], and [`Error::ShapeMismatch`] when `grad_out` is not the output shape.
pub fn avg_pool2d_backward(
    grad_out: &Tensor,
    input_shape: &[usize],
    pool: &Pool2d,
    count_include_pad: bool,
) -> Result<Tensor, Error> {
    let op = "avg_pool2d_backward";
    no_dilation(op, pool)?;
    let out_shape = check_grad(op, grad_out, input_shape, pool)?;
    let dev = grad_out.device();
    let grad_x = dev.empty(input_shape, DType::F32)?;
    let params = pool_params(
        op,
        input_shape,
        &out_shape,
        pool,
        count_include_pad,
        grad_x.len(),
    )?;
    launch(op, dev, &AVG_POOL_BACKWARD, &params, &[grad_out, &grad_x])?;
    Ok(grad_x)
}
