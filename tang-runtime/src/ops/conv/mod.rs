//! 2-D convolution over NCHW tensors (PyTorch's `conv2d`: stride, padding, dilation,
//! groups, optional bias) and its backward, as implicit GEMM on the matmul's tiles
//! (`conv/gemm.rs`): the windows of the input are gathered as the tiles load them,
//! so no unfolded (im2col) matrix is written, for any stride, padding, dilation or group
//! count.
//!
//! Per image and group the forward is `W_g [C_out/g, K] · windows [K, OH · OW]` with
//! `K = C_in/g · kh · kw`, whose `[N, g, C_out/g, OH · OW]` result is already the NCHW
//! output. grad_input is the transposed convolution as one more such product (the weight
//! with its channel axes swapped, times `grad_out` gathered where each input pixel's taps
//! landed: deterministic, no atomics, no col2im); grad_weight is `grad_out · windowsᵀ`
//! reduced over images and positions (split into pieces so enough workgroups run, the
//! pieces summed after); grad_bias is `grad_out` summed over images and positions.

pub mod gemm;
pub(super) mod pool;

crate::spec::kernel_modules! { "ops/conv": gemm, pool }

use crate::ops::check;
use crate::ops::check::want_shape;
use crate::ops::reduce::sum;
use crate::ops::shape::view::permute;
use crate::size::Size;
use crate::{DType, Error, Tensor};
use gemm::{Axis, ConvGemm};

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

/// The checked sizes of one convolution.
#[derive(Clone, Copy, Debug)]
struct Dims {
    n: usize,
    c_in: usize,
    c_out: usize,
    groups: usize,
    /// Input channels per group.
    cg: usize,
    /// The input's `[H, W]`.
    in_hw: [usize; 2],
    /// The kernel's `[kh, kw]`.
    kernel: [usize; 2],
    out: [usize; 4],
}

impl Dims {
    /// Output positions per image: `OH · OW`.
    fn l(&self) -> usize {
        self.out[2] * self.out[3]
    }
}

/// Checks that `input`, `weight`, `bias` and `others` are f32 on the input's device, then
/// their shapes as [`dims`] does.
fn checked_dims(
    op: &str,
    others: &[(&str, &Tensor)],
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    conv: &Conv2d,
) -> Result<Dims, Error> {
    let named = [("input", input), ("weight", weight)]
        .into_iter()
        .chain(bias.map(|b| ("bias", b)))
        .chain(others.iter().copied());
    check::floats_on(op, input.device(), named)?;
    dims(
        op,
        input.shape(),
        weight.shape(),
        bias.map(Tensor::shape),
        conv,
    )
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
        return Err(check::mismatch(
            op,
            format!("expected an NCHW input of rank 4, got shape {input:?}"),
        ));
    };
    let &[c_out, cg, kh, kw] = weight else {
        return Err(check::mismatch(
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
        return Err(check::mismatch(
            op,
            format!(
                "input channels {c_in} and output channels {c_out} must both be divisible by groups = {g}"
            ),
        ));
    }
    if cg.checked_mul(g) != Some(c_in) {
        return Err(check::mismatch(
            op,
            format!(
                "the weight {weight:?} expects {cg} input channels per group; with groups = {g} the input {input:?} has {}",
                c_in / g
            ),
        ));
    }
    if kh == 0 || kw == 0 {
        return Err(check::mismatch(
            op,
            format!("the kernel of weight {weight:?} is empty"),
        ));
    }
    if let Some(b) = bias
        && b != [c_out]
    {
        return Err(check::mismatch(
            op,
            format!("bias has shape {b:?}, expected [{c_out}] (one value per output channel)"),
        ));
    }
    let mut out = [n, c_out, 0, 0];
    for (axis, k) in [kh, kw].into_iter().enumerate() {
        let window = [k, conv.stride[axis], conv.dilation[axis]];
        out[axis + 2] = check::window_len(op, input, conv.padding, axis, window)?;
    }
    // The gather computes `position · stride + tap · dilation ± padding` per axis in
    // i32; every such value is below the padded size plus the kernel's span. (A stride
    // or dilation past i32 only ever multiplies 0 then, and is passed saturated.)
    for (axis, size) in [h, w].into_iter().enumerate() {
        let span = conv.dilation[axis].saturating_mul([kh, kw][axis] - 1);
        let reach = conv.padding[axis]
            .saturating_mul(2)
            .saturating_add(size)
            .saturating_add(span);
        if reach > i32::MAX as usize {
            return Err(Error::TooLarge {
                what: format!(
                    "{op}: padded size plus dilated kernel along axis {} (input {input:?}, weight {weight:?}, {conv:?})",
                    axis + 2
                ),
                requested: reach as u64,
                limit: i32::MAX as u64,
            });
        }
    }
    // Every element index the kernels compute must fit in u32.
    let out_len = Size::product(&out).get().unwrap_or(usize::MAX);
    let largest = [input.iter().product(), weight.iter().product(), out_len]
        .into_iter()
        .max()
        .unwrap_or(0);
    crate::size::fits_u32(op, "elements of the input, weight or output", largest)?;
    Ok(Dims {
        n,
        c_in,
        c_out,
        groups: g,
        cg,
        in_hw: [h, w],
        kernel: [kh, kw],
        out,
    })
}

/// `v` as i32 (bounded by the checks of [`dims`]).
fn signed(v: usize) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

impl Dims {
    /// Taps of one output channel: `C_in/g · kh · kw`.
    fn taps(&self) -> usize {
        self.cg * self.kernel[0] * self.kernel[1]
    }

    /// Output channels per group.
    fn cog(&self) -> usize {
        self.c_out / self.groups
    }

    /// Pixels of one input plane.
    fn in_plane(&self) -> usize {
        self.in_hw[0] * self.in_hw[1]
    }

    /// The forward windows: source pixel `position · stride + tap · dilation - padding`.
    fn windows(&self, conv: &Conv2d) -> [Axis; 2] {
        [0, 1].map(|i| Axis {
            mul: signed(conv.stride[i]),
            step: signed(conv.dilation[i]),
            offset: -signed(conv.padding[i]),
            div: 1,
        })
    }

    /// The forward: `W_g · windows (+ bias)` per image and group, into `out`.
    fn forward(
        &self,
        conv: &Conv2d,
        input: &Tensor,
        weight: &Tensor,
        bias: Option<&Tensor>,
        out: &Tensor,
    ) -> Result<(), Error> {
        let g = ConvGemm {
            m: self.cog(),
            n: self.l(),
            k: self.taps(),
            images: self.n,
            splits: 1,
            groups: self.groups,
            lda: self.taps(),
            a_offsets: [0, self.cog() * self.taps(), 0],
            src_offsets: [self.c_in * self.in_plane(), self.cg * self.in_plane()],
            src_size: self.in_hw,
            positions_width: self.out[3],
            kernel: self.kernel,
            axes: self.windows(conv),
            positions_along_k: false,
        };
        gemm::run("conv2d", &g, weight, input, bias, out)
    }

    /// grad_input: the weight as `[g, C_in/g, C_out/g · kh · kw]` times `grad_out`
    /// gathered at `(pixel + padding - tap · dilation) / stride` where that divides.
    fn grad_input(
        &self,
        conv: &Conv2d,
        grad_out: &Tensor,
        weight: &Tensor,
    ) -> Result<Tensor, Error> {
        let dev = grad_out.device();
        let grad_input = dev.empty(
            &[self.n, self.c_in, self.in_hw[0], self.in_hw[1]],
            DType::F32,
        )?;
        let [kh, kw] = self.kernel;
        let swapped = permute(
            &weight.reshape(&[self.groups, self.cog(), self.cg, kh * kw])?,
            &[0, 2, 1, 3],
        )?;
        let per_row = self.cog() * kh * kw;
        let g = ConvGemm {
            m: self.cg,
            n: self.in_plane(),
            k: per_row,
            images: self.n,
            splits: 1,
            groups: self.groups,
            lda: per_row,
            a_offsets: [0, self.cg * per_row, 0],
            src_offsets: [self.c_out * self.l(), self.cog() * self.l()],
            src_size: [self.out[2], self.out[3]],
            positions_width: self.in_hw[1],
            kernel: self.kernel,
            axes: [0, 1].map(|i| Axis {
                mul: 1,
                step: -signed(conv.dilation[i]),
                offset: signed(conv.padding[i]),
                div: signed(conv.stride[i]),
            }),
            positions_along_k: false,
        };
        gemm::run("conv2d_backward", &g, &swapped, grad_out, None, &grad_input)?;
        Ok(grad_input)
    }

    /// grad_weight: `grad_out · windowsᵀ` per image, split and group, summed.
    fn grad_weight(
        &self,
        conv: &Conv2d,
        grad_out: &Tensor,
        input: &Tensor,
        weight: &Tensor,
    ) -> Result<Tensor, Error> {
        let op = "conv2d_backward";
        let l = self.l();
        let splits = reduction_splits(self.n * self.groups, self.cog(), self.taps(), l);
        let len = l / splits;
        let batch = self.n * splits;
        let part_len = Size::product(&[batch, self.c_out, self.taps()])
            .get()
            .unwrap_or(usize::MAX);
        crate::size::fits_u32(
            op,
            "elements of the per-image weight gradients (N · C_out · C_in/g · kh · kw)",
            part_len,
        )?;
        let parts = grad_out
            .device()
            .empty(&[batch, self.c_out * self.taps()], DType::F32)?;
        let g = ConvGemm {
            m: self.cog(),
            n: self.taps(),
            k: len,
            images: self.n,
            splits,
            groups: self.groups,
            lda: l,
            a_offsets: [self.c_out * l, self.cog() * l, len],
            src_offsets: [self.c_in * self.in_plane(), self.cg * self.in_plane()],
            src_size: self.in_hw,
            positions_width: self.out[3],
            kernel: self.kernel,
            axes: self.windows(conv),
            positions_along_k: true,
        };
        gemm::run(op, &g, grad_out, input, None, &parts)?;
        sum(&parts, 0)?.reshape(weight.shape())
    }
}

/// Pieces to split each image's reduction over `positions` into for grad_weight: enough
/// that `products` products of `rows × cols` give about 4096 blocks of 64 × 64 (several
/// waves on a 132-SM GPU, so the last, partly filled wave costs little), each piece at
/// least 256 positions long, and an exact divisor of `positions` (all pieces equally
/// long) that keeps the pieces 4-aligned when the positions are. The ResNet layer (64
/// images, 64 × 576, 3136 positions) gets 8 pieces of 392.
fn reduction_splits(products: usize, rows: usize, cols: usize, positions: usize) -> usize {
    let blocks = products * rows.div_ceil(64) * cols.div_ceil(64);
    let aligned = |s: usize| !positions.is_multiple_of(4) || (positions / s).is_multiple_of(4);
    let mut best = 1;
    for s in 1..=64 {
        if positions / s < 256 || blocks * best >= 4096 {
            break;
        }
        if positions.is_multiple_of(s) && aligned(s) {
            best = s;
        }
    }
    best
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
/// [`Error::DType`], [`Error::DeviceMismatch`], [`Error::TooLarge`] when the input, weight
/// or output has more than 2^32 - 1 elements or passes the device's buffer limit, or a
/// padded axis plus the dilated kernel passes 2^31 - 1.
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    conv: &Conv2d,
) -> Result<Tensor, Error> {
    let op = "conv2d";
    let dev = input.device();
    let d = checked_dims(op, &[], input, weight, bias, conv)?;
    if d.n == 0 {
        return dev.empty(&d.out, DType::F32);
    }
    // [N, groups, C_out/groups, OH · OW] is the NCHW output's memory order.
    let out = dev.empty(&d.out, DType::F32)?;
    d.forward(conv, input, weight, bias, &out)?;
    Ok(out)
}

/// The gradients of [`conv2d`] with respect to its input, weight and (when `bias` is
/// given, as in the forward) bias, for `grad_out [N, C_out, OH, OW]`. Nothing is kept
/// from the forward: the input's windows are gathered again.
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
    let d = checked_dims(op, &[("grad_out", grad_out)], input, weight, bias, conv)?;
    want_shape(
        op,
        "grad_out",
        grad_out.shape(),
        &d.out,
        format_args!(
            "the convolution of {:?} by {:?}",
            input.shape(),
            weight.shape()
        ),
    )?;
    if d.n == 0 {
        // No images: nothing flows to the weight or bias (PyTorch gives zeros too).
        return Ok(Conv2dGrads {
            grad_input: dev.empty(input.shape(), DType::F32)?,
            grad_weight: Tensor::zeros(dev, weight.shape())?,
            grad_bias: bias.map(|_| Tensor::zeros(dev, &[d.c_out])).transpose()?,
        });
    }
    let grad_input = d.grad_input(conv, grad_out, weight)?;
    let grad_weight = d.grad_weight(conv, grad_out, input, weight)?;
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
