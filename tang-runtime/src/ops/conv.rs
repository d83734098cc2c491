//! 2-D convolution over NCHW tensors (PyTorch's `conv2d`: stride, padding, dilation,
//! groups, optional bias) and its backward, on the tiled matmul.
//!
//! The forward unfolds the input into columns (im2col): for each image and group, a
//! `[K, L]` matrix with `K = C_in/groups · kh · kw` rows (one per weight element of an
//! output channel) and `L = OH · OW` columns (one per output position), zeros where a
//! window reaches into the padding. The convolution is then one batched matmul
//! `W_g [C_out/groups, K] · col [K, L]` per image and group, whose `[N, groups,
//! C_out/groups, L]` result is already the NCHW output. The backward reuses the same
//! pieces: `grad_col = W_gᵀ · grad_out` folded back onto the input (col2im, one thread per
//! input element gathering the windows that cover it in a fixed order: deterministic, no
//! atomics), `grad_weight = Σ_n grad_out · colᵀ`, `grad_bias = Σ_{n,y,x} grad_out`.

use super::broadcast::expand;
use super::check;
use super::inplace::{add_, launch_elementwise};
use super::pool::WINDOW_WGSL;
use crate::dense::matmul::{MatmulOptions, matmul, matmul_with};
use crate::dense::reduce::sum;
use crate::spec::{Slot, Source, Spec, params};
use crate::{DType, Error, Tensor};

/// The window of a 2-D convolution: `[height, width]` pairs and the group count,
/// PyTorch's arguments of `conv2d`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    /// Step between windows (PyTorch's default 1).
    pub stride: [usize; 2],
    /// Implicit zero padding on each side (default 0).
    pub padding: [usize; 2],
    /// Spacing between kernel elements (default 1).
    pub dilation: [usize; 2],
    /// Input and output channels are split into this many independent groups (default
    /// 1; `groups = C_in` is a depthwise convolution).
    pub groups: usize,
}

impl Default for Conv2d {
    /// PyTorch's defaults: stride 1, no padding, no dilation, one group.
    fn default() -> Conv2d {
        Conv2d {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

/// The gradients [`conv2d_backward`] returns, one per differentiable input.
#[derive(Debug)]
pub struct Conv2dGrads {
    /// Shaped like the input, `[N, C_in, H, W]`.
    pub grad_input: Tensor,
    /// Shaped like the weight, `[C_out, C_in / groups, kh, kw]`.
    pub grad_weight: Tensor,
    /// `[C_out]` when the forward had a bias, else `None`.
    pub grad_bias: Option<Tensor>,
}

params! {
    /// One unfolding of `[n, c, h, w]` into `[n, groups, k, l]` columns (or its fold
    /// back): `cg` input channels per group, `k = cg · kh · kw`, `l = oh · ow`; `total`
    /// threads, `row` threads per grid row.
    struct ColParams {
        c: u32, h: u32, w: u32, oh: u32, ow: u32, groups: u32, cg: u32, k: u32,
        kh: u32, kw: u32, sh: u32, sw: u32, ph: u32, pw: u32, dh: u32, dw: u32,
        total: u32, row: u32,
    }
}

/// `col[n, g, (ci, ky, kx), (oy, ox)] = x[n, g·cg + ci, oy·sh + ky·dh - ph, ox·sw + kx·dw - pw]`,
/// 0 in the padding. One thread per column element.
static IM2COL: Spec<ColParams> = Spec::new(
    "conv2d_im2col",
    &[WINDOW_WGSL],
    &[
        Slot::Read("x", "array<f32>"),
        Slot::ReadWrite("col", "array<f32>"),
    ],
    "
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let l_len = p.oh * p.ow;
    let l = i % l_len;
    let kk = (i / l_len) % p.k;
    let ng = i / (l_len * p.k);
    let n = ng / p.groups;
    let grp = ng % p.groups;
    let ci = kk / (p.kh * p.kw);
    let ky = (kk / p.kw) % p.kh;
    let kx = kk % p.kw;
    let y = at_in(l / p.ow, ky, p.sh, p.ph, p.dh);
    let xx = at_in(l % p.ow, kx, p.sw, p.pw, p.dw);
    var v = 0.0;
    if (y >= 0 && y < i32(p.h) && xx >= 0 && xx < i32(p.w)) {
        let ch = n * p.c + grp * p.cg + ci;
        v = x[(ch * p.h + u32(y)) * p.w + u32(xx)];
    }
    col[i] = v;
}
",
);

/// `grad_x[n, c, y, x]` = the sum of `grad_col` over the column entries [`IM2COL`] read
/// `x[n, c, y, x]` into, in a fixed order. One thread per input element.
static COL2IM: Spec<ColParams> = Spec::new(
    "conv2d_col2im",
    &[WINDOW_WGSL],
    &[
        Slot::Read("grad_col", "array<f32>"),
        Slot::ReadWrite("grad_x", "array<f32>"),
    ],
    "
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    let ix = i % p.w;
    let iy = (i / p.w) % p.h;
    let ch = (i / (p.w * p.h)) % p.c;
    let n = i / (p.w * p.h * p.c);
    let grp = ch / p.cg;
    let ci = ch % p.cg;
    let l_len = p.oh * p.ow;
    let base = (n * p.groups + grp) * p.k;
    var acc = 0.0;
    for (var ky = 0u; ky < p.kh; ky = ky + 1u) {
        let oy = covering(iy, ky, p.sh, p.ph, p.dh, p.oh);
        if (oy < 0) { continue; }
        for (var kx = 0u; kx < p.kw; kx = kx + 1u) {
            let ox = covering(ix, kx, p.sw, p.pw, p.dw, p.ow);
            if (ox < 0) { continue; }
            let kk = (ci * p.kh + ky) * p.kw + kx;
            acc = acc + grad_col[(base + kk) * l_len + u32(oy) * p.ow + u32(ox)];
        }
    }
    grad_x[i] = acc;
}
",
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![IM2COL.source(), COL2IM.source()]
}

/// The checked sizes of one convolution.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    c_in: usize,
    c_out: usize,
    groups: usize,
    /// Rows of a column matrix: `C_in/groups · kh · kw`.
    k: usize,
    out: [usize; 4],
}

impl Dims {
    /// Output positions per image: `OH · OW`.
    fn l(&self) -> usize {
        self.out[2] * self.out[3]
    }
}

/// A shape error of `op`.
fn mismatch(op: &str, detail: String) -> Error {
    Error::ShapeMismatch {
        op: op.into(),
        detail,
    }
}

/// Checks input, weight and bias against each other and `conv`, and returns the sizes.
fn dims(
    op: &str,
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    conv: &Conv2d,
) -> Result<Dims, Error> {
    let &[n, c_in, h, w] = input else {
        return Err(mismatch(
            op,
            format!("expected an NCHW input of rank 4, got shape {input:?}"),
        ));
    };
    let &[c_out, cg, kh, kw] = weight else {
        return Err(mismatch(
            op,
            format!(
                "expected a weight [C_out, C_in / groups, kh, kw] of rank 4, got shape {weight:?}"
            ),
        ));
    };
    let g = conv.groups;
    if g == 0 || conv.stride.contains(&0) || conv.dilation.contains(&0) {
        return Err(check::invalid(
            op,
            format!(
                "stride {:?}, dilation {:?} and groups {g} must be at least 1",
                conv.stride, conv.dilation
            ),
        ));
    }
    if !c_in.is_multiple_of(g) || !c_out.is_multiple_of(g) {
        return Err(mismatch(
            op,
            format!(
                "input channels {c_in} and output channels {c_out} must both be divisible by groups = {g}"
            ),
        ));
    }
    if cg.checked_mul(g) != Some(c_in) {
        return Err(mismatch(
            op,
            format!(
                "the weight {weight:?} expects {cg} input channels per group; with groups = {g} the input {input:?} has {}",
                c_in / g
            ),
        ));
    }
    if kh == 0 || kw == 0 {
        return Err(mismatch(
            op,
            format!("the kernel of weight {weight:?} is empty"),
        ));
    }
    if let Some(b) = bias
        && b != [c_out]
    {
        return Err(mismatch(
            op,
            format!("bias has shape {b:?}, expected [{c_out}] (one value per output channel)"),
        ));
    }
    let mut out = [n, c_out, 0, 0];
    for (axis, (size, k)) in [(h, kh), (w, kw)].into_iter().enumerate() {
        let (s, p, d) = (conv.stride[axis], conv.padding[axis], conv.dilation[axis]);
        let span = d.saturating_mul(k - 1).saturating_add(1);
        let padded = p.saturating_mul(2).saturating_add(size);
        if padded < span {
            return Err(mismatch(
                op,
                format!(
                    "the input {input:?} padded by {:?} is smaller than the dilated kernel (span {span} along axis {})",
                    conv.padding,
                    axis + 2
                ),
            ));
        }
        out[axis + 2] = (padded - span) / s + 1;
    }
    let k = cg.saturating_mul(kh).saturating_mul(kw);
    // Every kernel index (column matrix, input, output) must fit in u32.
    let col = n
        .saturating_mul(g)
        .saturating_mul(k)
        .saturating_mul(out[2] * out[3]);
    let largest = [col, input.iter().product(), out.iter().product()]
        .into_iter()
        .max()
        .unwrap_or(0);
    check::fits_u32(
        op,
        "elements of the unfolded input (N · C_in · kh · kw · OH · OW)",
        largest,
    )?;
    Ok(Dims {
        n,
        c_in,
        c_out,
        groups: g,
        k,
        out,
    })
}

/// Runs a column kernel ([`IM2COL`] or [`COL2IM`]) for the convolution of `input_shape`
/// by `weight_shape`: one thread per element of the last tensor of `tensors` (the one
/// written).
fn launch(
    op: &str,
    kernel: &Spec<ColParams>,
    input_shape: &[usize],
    weight_shape: &[usize],
    d: &Dims,
    conv: &Conv2d,
    tensors: &[&Tensor],
) -> Result<(), Error> {
    // `dims` bounded every size here by the column matrix's length, which fits in u32.
    let u = |what: &str, v: usize| check::fits_u32(op, what, v);
    let shape = ColParams {
        c: u("channels", d.c_in)?,
        h: u("height", input_shape[2])?,
        w: u("width", input_shape[3])?,
        oh: u("output height", d.out[2])?,
        ow: u("output width", d.out[3])?,
        groups: u("groups", d.groups)?,
        cg: u("channels per group", d.c_in / d.groups)?,
        k: u("kernel elements", d.k)?,
        kh: u("kernel height", weight_shape[2])?,
        kw: u("kernel width", weight_shape[3])?,
        sh: u("stride", conv.stride[0])?,
        sw: u("stride", conv.stride[1])?,
        ph: u("padding", conv.padding[0])?,
        pw: u("padding", conv.padding[1])?,
        dh: u("dilation", conv.dilation[0])?,
        dw: u("dilation", conv.dilation[1])?,
        total: 0,
        row: 0,
    };
    launch_elementwise(op, kernel, tensors, |total, row| ColParams {
        total,
        row,
        ..shape
    })
}

/// The input unfolded into columns, `[N, groups, K, L]`.
fn im2col(
    op: &str,
    input: &Tensor,
    weight: &Tensor,
    d: &Dims,
    conv: &Conv2d,
) -> Result<Tensor, Error> {
    let col = input
        .device()
        .empty(&[d.n, d.groups, d.k, d.l()], DType::F32)?;
    launch(
        op,
        &IM2COL,
        input.shape(),
        weight.shape(),
        d,
        conv,
        &[input, &col],
    )?;
    Ok(col)
}

/// The weight as the left operand of the per-group matmul: `[C_out, K]` for one group
/// (broadcast over the batch by the matmul), else `[N, groups, C_out/groups, K]` (the
/// matmul needs equal batch dimensions, so the small weight is repeated per image).
fn weight_matrix(weight: &Tensor, d: &Dims) -> Result<Tensor, Error> {
    if d.groups == 1 {
        return weight.reshape(&[d.c_out, d.k]);
    }
    let per_group = weight.reshape(&[1, d.groups, d.c_out / d.groups, d.k])?;
    expand(&per_group, &[d.n, d.groups, d.c_out / d.groups, d.k])
}

/// 2-D convolution (PyTorch's `conv2d`, cross-correlation as in every framework):
/// `input [N, C_in, H, W]`, `weight [C_out, C_in / groups, kh, kw]`, `bias [C_out]`;
/// the output is `[N, C_out, OH, OW]` with `OH = floor((H + 2 p - d (kh - 1) - 1) / s) + 1`
/// (likewise `OW`).
///
/// # Errors
/// [`Error::ShapeMismatch`] for tensors of the wrong rank, channels not divisible by
/// `groups` or not matching the weight, a bias not `[C_out]`, or a kernel larger than the
/// padded input; [`Error::InvalidArgument`] for a zero stride, dilation or group count;
/// [`Error::DType`], [`Error::DeviceMismatch`], [`Error::TooLarge`] when the unfolded input
/// (`N · C_in · kh · kw · OH · OW` elements) passes 2^32 - 1 or the device's buffer limit.
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    conv: &Conv2d,
) -> Result<Tensor, Error> {
    let op = "conv2d";
    check::dtype(op, input, DType::F32)?;
    check::dtype(op, weight, DType::F32)?;
    let dev = input.device();
    check::same_device(op, dev, &[("weight", weight)])?;
    if let Some(b) = bias {
        check::dtype(op, b, DType::F32)?;
        check::same_device(op, dev, &[("bias", b)])?;
    }
    let d = dims(
        op,
        input.shape(),
        weight.shape(),
        bias.map(Tensor::shape),
        conv,
    )?;
    if d.n == 0 {
        return dev.empty(&d.out, DType::F32);
    }
    let col = im2col(op, input, weight, &d, conv)?;
    // [N, groups, C_out/groups, L] is the NCHW output's memory order.
    let out = matmul(&weight_matrix(weight, &d)?, &col)?.reshape(&d.out)?;
    if let Some(b) = bias {
        add_(&out, &b.reshape(&[d.c_out, 1, 1])?, 1.0)?;
    }
    Ok(out)
}

/// The gradients of [`conv2d`] with respect to its input, weight and (when `bias` is
/// given, as in the forward) bias, for `grad_out [N, C_out, OH, OW]`. The columns are
/// unfolded again from `input` rather than kept from the forward.
///
/// # Errors
/// As [`conv2d`], and [`Error::ShapeMismatch`] when `grad_out` is not the output's shape.
pub fn conv2d_backward(
    grad_out: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    conv: &Conv2d,
) -> Result<Conv2dGrads, Error> {
    let op = "conv2d_backward";
    let dev = grad_out.device();
    for (name, t) in [("grad_out", grad_out), ("input", input), ("weight", weight)] {
        check::dtype(op, t, DType::F32)?;
        check::same_device(op, dev, &[(name, t)])?;
    }
    if let Some(b) = bias {
        check::same_device(op, dev, &[("bias", b)])?;
    }
    let d = dims(
        op,
        input.shape(),
        weight.shape(),
        bias.map(Tensor::shape),
        conv,
    )?;
    if grad_out.shape() != d.out {
        return Err(mismatch(
            op,
            format!(
                "grad_out has shape {:?}, the convolution of {:?} by {:?} gives {:?}",
                grad_out.shape(),
                input.shape(),
                weight.shape(),
                d.out
            ),
        ));
    }
    if d.n == 0 {
        // No images: nothing flows to the weight or bias (PyTorch gives zeros too).
        return Ok(Conv2dGrads {
            grad_input: dev.empty(input.shape(), DType::F32)?,
            grad_weight: Tensor::zeros(dev, weight.shape())?,
            grad_bias: bias.map(|_| Tensor::zeros(dev, &[d.c_out])).transpose()?,
        });
    }
    let cog = d.c_out / d.groups;
    let go = grad_out.reshape(&[d.n, d.groups, cog, d.l()])?;

    // grad_col [N, groups, K, L] = W_gᵀ · grad_out, folded back onto the input.
    let grad_col = matmul_with(
        &weight_matrix(weight, &d)?,
        &go,
        &MatmulOptions {
            transpose_a: true,
            ..MatmulOptions::default()
        },
    )?;
    let grad_input = dev.empty(input.shape(), DType::F32)?;
    launch(
        op,
        &COL2IM,
        input.shape(),
        weight.shape(),
        &d,
        conv,
        &[&grad_col, &grad_input],
    )?;

    // grad_weight [groups, C_out/groups, K] = Σ_n grad_out · colᵀ.
    let col = im2col(op, input, weight, &d, conv)?;
    let per_image = matmul_with(
        &go,
        &col,
        &MatmulOptions {
            transpose_b: true,
            ..MatmulOptions::default()
        },
    )?;
    let grad_weight = sum(&per_image, 0)?.reshape(weight.shape())?;

    let grad_bias = match bias {
        None => None,
        Some(_) => {
            let per_channel = sum(&grad_out.reshape(&[d.n, d.c_out, d.l()])?, 2)?;
            Some(sum(&per_channel, 0)?.reshape(&[d.c_out])?)
        }
    };
    Ok(Conv2dGrads {
        grad_input,
        grad_weight,
        grad_bias,
    })
}
