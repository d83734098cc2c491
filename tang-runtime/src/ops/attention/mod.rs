//! Multi-head attention, causal or not, with grouped query heads and dropout on the
//! weights: a flash-attention forward (online softmax, O(T) memory per head, the per-row
//! logsumexp saved for the backward), a flash-attention-2 backward (dq in one pass per
//! query block, dk/dv in one pass per key block, both deterministic without atomics; short
//! sequences instead materialize the scores, `attention/materialized.rs`), dropout's mask
//! regenerated in every pass (`attention/dropout.rs`), and a KV-cache decode forward.
//!
//! On devices with tensor cores (cooperative matrices) and head dims up to 64 that are
//! multiples of 4, the forward and both backward passes run on them (`attention/coop*.rs`):
//! f16 tensors, and f32 ones rounded to f16 under autocast ([`AttentionOptions::f16_inputs`]),
//! as PyTorch's fp16 SDPA does; f32 tensors otherwise to f32 accuracy, each operand split
//! into two f16 parts scaled into f16's range and each product made of three
//! (`attention/split.rs`, as PyTorch's fp32 SDPA makes its products of three TF32 ones).
//! Measured on an H200 (BENCHMARKS.md, 2026-11-30 (fourteenth session)): f32 forward and
//! backward at B8 H8 T1024 2.66 ms on the FMA kernels below, 1.22 ms split, PyTorch's
//! fp32 SDPA 1.28. The kernels below run everything else.
//!
//! Layouts (row-major): queries `[B, H, T, D]`, keys and values `[B, Hkv, T, D]` where
//! `Hkv` divides `H` and query head `h` reads kv head `h / (H / Hkv)`. With the causal
//! mask query row `i` attends keys `0..=i` (with a cache: `0..=past + i`), without it
//! every key. The scores are `scale * q.k`, `scale`
//! defaulting to `1 / sqrt(D)`. Head dims up to 128 are supported; each call picks a kernel
//! compiled for the head dim rounded up to 16, 32, 64 or 128 (the extra dims are zero).
//!
//! Head dims 17 to 64: register-blocked kernels generated in `attention/` (`tiled.rs`,
//! `fwd_large.rs`, `bwd_dq.rs`, `bwd_dkv.rs`, written with the pieces of `emit.rs`;
//! `kernels.rs` picks them) for all three passes (every product a micro-matmul with 4 x 4
//! or 4 x 8 tiles per thread; the dk/dv pass keeps 32 keys' K and V resident and streams
//! query tiles). Their global loads are coalesced (a warp reads whole 32-byte sectors along
//! D) and transposed on the way into workgroup memory. Every pass has two tile shapes: a small one within 32 KiB of
//! workgroup memory (forward key tiles of 32, dq blocks of 32 rows, dk/dv query tiles of
//! 16 on 64 threads) and a large one (64-key tiles with a 4 x 8 score block per thread,
//! five barriers per tile and the next tile's loads issued before the current tile's
//! math, see `fwd_large.rs`; 64 rows; 32-query tiles on 128 threads) taken where the
//! device has room (48 KiB at D = 64, i.e. NVIDIA; at D <= 32 every device). The rest of this
//! section describes the row-per-thread kernels, which run every pass for other head dims
//! and on devices with less than 32 KiB of workgroup memory.
//!
//! Performance design (NVIDIA first): a workgroup owns 64 rows of one head and each row is
//! shared by `SPLIT = DP / 32` threads (one for D <= 32), each keeping up to 32 dims of its
//! row (query or key, and its accumulators) in registers: at most four 32-float arrays per
//! thread, so even the dk/dv pass stays well under the 255-register limit. The other side
//! streams through workgroup memory in tiles read as vec4 broadcasts (the threads of a
//! warp share a slice, so they read one address); the slices' partial dot products meet in
//! workgroup memory once per chunk of keys. Tiles past the causal diagonal are never
//! loaded, and the heaviest blocks are dispatched first. The forward gives each thread two
//! rows (`RPT`), so every vec4 read from workgroup memory feeds eight FMAs instead of four:
//! on NVIDIA a broadcast vec4 read takes two cycles of the shared-memory pipe while four
//! FMAs take one, so with one row per thread that pipe, not the FMA units, is the limit.
//! The backward passes keep one row per thread: their four register arrays per row leave
//! no room for a second. The tile sizes are WGSL `const`s
//! prepended per variant (not `override`s: the per-thread arrays need constant sizes so
//! the driver can unroll the loops and keep them in registers). Every variant fits 32 KiB
//! of workgroup memory (lavapipe and most GPUs; NVIDIA has 48 KiB).
//!
//! Decoding runs the forward kernel with the cache as keys: right for any `Q`, but one new
//! position per head keeps only one row of a 64-row workgroup busy, so single-token
//! decoding over long caches is latency-bound (a split-key variant would fix that).

use crate::ops::DropoutState;
use crate::ops::check::mismatch;
use crate::size::Size;
use crate::{DType, Device, Error, Tensor};

mod backward;
mod bwd_dkv;
mod bwd_dq;
mod coop;
mod coop_bwd;
mod coop_bwd_launch;
mod coop_fwd;
mod dropout;
mod emit;
mod f16;
mod fwd_large;
mod kernels;
mod layout;
mod materialized;
mod packed;
mod rows;
mod split;
mod tiled;

pub use backward::{attention_backward, attention_backward_dkv, attention_backward_dq};
pub use packed::{attention_backward_packed, attention_packed};

pub(crate) use kernels::kernels;
use kernels::{ROWS, VARIANTS, Variant, tiled_for};
pub use kernels::{backward_tiles, forward_tiles};
use layout::AttentionParams;

/// The largest head dim `D` the fused kernels take (callers with larger heads use the
/// explicit matmul-softmax-matmul path).
pub const MAX_HEAD_DIM: usize = 128;

fn dims4(op: &str, name: &str, t: &Tensor, what: &str) -> Result<[usize; 4], Error> {
    if t.dtype() != DType::F16 {
        t.expect_dtype(op, DType::F32)?;
    }
    match *t.shape() {
        [a, b, c, d] if a > 0 && b > 0 && c > 0 && d > 0 => Ok([a, b, c, d]),
        _ => Err(mismatch(
            op,
            format!(
                "{name} must be a non-empty {what}, got shape {:?}",
                t.shape()
            ),
        )),
    }
}

/// Checks q `[B, H, Tq, D]` against k and v `[B, Hkv, Tk, D]` and returns the kernels'
/// params for them (`past` 0, `scale` defaulting to `1 / sqrt(D)`).
fn check_qkv(
    op: &str,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    scale: Option<f32>,
) -> Result<AttentionParams, Error> {
    let [b, h, tq, d] = dims4(op, "q", q, "[B, H, T, D] tensor")?;
    let [kb, hkv, tk, kd] = dims4(op, "k", k, "[B, Hkv, T, D] tensor")?;
    // One dtype for all three (f32, or f16), as PyTorch requires.
    k.expect_dtype(op, q.dtype())?;
    v.expect_dtype(op, q.dtype())?;
    if v.shape() != k.shape() {
        let (ks, vs) = (k.shape(), v.shape());
        return Err(mismatch(
            op,
            format!("v must have k's shape {ks:?}, got {vs:?}"),
        ));
    }
    if kb != b || kd != d || h % hkv != 0 {
        return Err(mismatch(
            op,
            format!(
                "k and v must be [B={b}, Hkv, T, D={d}] with Hkv dividing H={h}, got {:?}",
                k.shape()
            ),
        ));
    }
    sizes_params(
        op,
        [b, h, hkv, tq, tk, d],
        &[("q", q.len()), ("k", k.len())],
        scale,
    )
}

/// The params of checked sizes `[B, H, Hkv, Tq, Tk, D]`, after the head dim's and the
/// `elements` counts' limits.
fn sizes_params(
    op: &str,
    [b, h, hkv, tq, tk, d]: [usize; 6],
    elements: &[(&str, usize)],
    scale: Option<f32>,
) -> Result<AttentionParams, Error> {
    if d > MAX_HEAD_DIM {
        return Err(Error::TooLarge {
            what: format!("{op}: head dim D"),
            requested: d as u64,
            limit: MAX_HEAD_DIM as u64,
        });
    }
    for &(name, len) in elements {
        if len > u32::MAX as usize / 2 {
            return Err(Error::TooLarge {
                what: format!("{op}: elements of {name} (indices are 32-bit)"),
                requested: len as u64,
                limit: u64::from(u32::MAX / 2),
            });
        }
    }
    // Every size is at most an element count, which fits 32 bits (checked above).
    let scale = scale.unwrap_or(1.0 / (d as f32).sqrt());
    Ok(AttentionParams {
        batch: b as u32,
        heads: h as u32,
        kv_heads: hkv as u32,
        tq: tq as u32,
        tk_stride: tk as u32,
        past: 0,
        d: d as u32,
        scale_log2: scale * std::f32::consts::LOG2_E,
        scale,
        causal: 1,
        drop_threshold: 0,
        drop_scale: 1.0,
        ..AttentionParams::default()
    })
}

/// The options of [`attention`] and [`attention_backward`]: PyTorch's
/// `scaled_dot_product_attention` arguments other than the mask tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AttentionOptions<'a> {
    /// The factor of the scores; `None` is `1 / sqrt(D)` (PyTorch's `scale`).
    pub scale: Option<f32>,
    /// Query row `i` attends keys `0..=i` only; otherwise every key (PyTorch's `is_causal`).
    pub is_causal: bool,
    /// Dropout on the attention weights (PyTorch's `dropout_p`, in training):
    /// `DropoutState { stream: generator.next_stream(), p }`. Each weight is dropped with
    /// probability `p` and the rest scaled by `1 / (1 - p)`; the mask is regenerated
    /// wherever it is needed, never stored, and equals the one [`crate::ops::dropout`]
    /// draws from the same stream over the materialized `[B, H, T, T]` weights.
    pub dropout: Option<&'a DropoutState>,
    /// Round q, k and v to f16 for the products (f32 accumulation and softmax), as
    /// PyTorch's autocast runs attention in f16. Autocast sets it. Forward and backward
    /// then run on the tensor cores where the device has them and the head dim allows
    /// (`attention/coop_fwd.rs`, `coop_bwd.rs`: `P` and `dS` rounded to f16 too, as
    /// FlashAttention does). Elsewhere the materialized backward (`T <= 256`) rounds its
    /// products' operands and the other kernels compute in f32.
    pub f16_inputs: bool,
    /// `o` (and the backward's `o` and `grad_out`) token-major, `[B, T, H, D]`: the heads'
    /// outputs side by side per position, what an output projection reads as `[B, T,
    /// H·D]` (PyTorch's `o.transpose(1, 2).contiguous()`), while q, k and v stay `[B, H, T,
    /// D]`. The tensor-core kernels write and read that layout directly; the others copy.
    pub token_major: bool,
}

impl AttentionOptions<'_> {
    /// Causal attention, the default scale, no dropout.
    pub const CAUSAL: AttentionOptions<'static> = AttentionOptions {
        scale: None,
        is_causal: true,
        dropout: None,
        f16_inputs: false,
        token_major: false,
    };
}

/// [`check_qkv`] for attention without a cache (k and v have q's sequence length), with
/// `options` in the params.
fn check_same_length(
    op: &str,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    options: &AttentionOptions,
) -> Result<AttentionParams, Error> {
    let params = check_qkv(op, q, k, v, options.scale)?;
    with_options(op, params, options)
}

/// `params` with `options`' mask and dropout, for attention without a cache.
fn with_options(
    op: &str,
    mut params: AttentionParams,
    options: &AttentionOptions,
) -> Result<AttentionParams, Error> {
    params.causal = u32::from(options.is_causal);
    dropout::set(op, &mut params, options.dropout)?;
    if params.tk_stride != params.tq {
        return Err(mismatch(
            op,
            format!(
                "k and v must have q's sequence length {} (dim 2), got {}; \
                 attention_decode takes a KV cache",
                params.tq, params.tk_stride
            ),
        ));
    }
    Ok(params)
}

/// The kernel variant for head dim `d`, checked against the device's workgroup limits.
fn variant(dev: &Device, op: &str, d: u32) -> Result<&'static Variant, Error> {
    let Some(v) = VARIANTS.iter().find(|v| d as usize <= v.dp) else {
        return Err(Error::TooLarge {
            what: format!("{op}: head dim D"),
            requested: d.into(),
            limit: MAX_HEAD_DIM as u64,
        });
    };
    let limits = &dev.info().limits;
    if v.shared_bytes > limits.max_compute_workgroup_storage_size {
        return Err(Error::TooLarge {
            what: format!("{op}: workgroup memory for head dim {d}"),
            requested: v.shared_bytes.into(),
            limit: limits.max_compute_workgroup_storage_size.into(),
        });
    }
    let threads = ROWS * v.split;
    if threads > limits.max_compute_invocations_per_workgroup {
        return Err(Error::TooLarge {
            what: format!("{op}: threads per workgroup for head dim {d}"),
            requested: threads.into(),
            limit: limits.max_compute_invocations_per_workgroup.into(),
        });
    }
    Ok(v)
}

/// The three kernels of an attention call.
#[derive(Clone, Copy)]
enum Pass {
    /// `o` and `lse`.
    Forward,
    /// `dq` and `delta`.
    Dq,
    /// `dk` and `dv`.
    Dkv,
}

/// Records `pass` on `inputs` (in its layout's slot order) and two new f32 outputs of
/// `out_shapes` (the pass's last two slots), and returns the outputs: the register-blocked
/// kernel where this device has one for the head dim, else the row-per-thread one. Each
/// workgroup owns a block of rows (queries; keys in the dk/dv pass) of one head (a kv head
/// in the dk/dv pass).
fn launch(
    pass: Pass,
    op: &str,
    params: &AttentionParams,
    inputs: &[&Tensor],
    out_shapes: [&[usize]; 2],
) -> Result<(Tensor, Tensor), Error> {
    let dev = inputs[0].device();
    let out0 = dev.empty(out_shapes[0], DType::F32)?;
    let out1 = dev.empty(out_shapes[1], DType::F32)?;
    let row_kernels = variant(dev, op, params.d)?;
    let tiled = tiled_for(dev, params.d as usize)?;
    let (kernel, block) = match (pass, &tiled) {
        (Pass::Forward, Some(t)) => (t.fwd, ROWS),
        (Pass::Dq, Some(t)) => (t.bwd_dq, t.shape.dq_rows),
        (Pass::Dkv, Some(t)) => (t.bwd_dkv, layout::DKV_KEYS),
        (Pass::Forward, None) => (row_kernels.fwd.kernel()?, ROWS),
        (Pass::Dq, None) => (row_kernels.bwd_dq.kernel()?, ROWS),
        (Pass::Dkv, None) => (row_kernels.bwd_dkv.kernel()?, ROWS),
    };
    let fwd_layout = tiled.as_ref().map_or(&layout::FWD, |t| t.fwd_layout);
    let (layout, rows, heads) = match pass {
        Pass::Forward => (fwd_layout, params.tq, params.heads),
        Pass::Dq => (&layout::DQ, params.tq, params.heads),
        Pass::Dkv => (&layout::DKV, params.tk_stride, params.kv_heads),
    };
    let grid = [rows.div_ceil(block), heads, params.batch];
    let tensors: Vec<&Tensor> = inputs.iter().copied().chain([&out0, &out1]).collect();
    layout.dispatch(kernel, dropout::constants(params), params, &tensors, grid)?;
    Ok((out0, out1))
}

/// Records the forward kernel: writes `o` (q's shape) and `lse` `[B, H, Tq]`.
fn launch_forward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    params: &AttentionParams,
    op: &str,
) -> Result<(Tensor, Tensor), Error> {
    launch(
        Pass::Forward,
        op,
        params,
        &[q, k, v],
        [q.shape(), &q.shape()[..3]],
    )
}

/// Attention forward: `dropout(softmax(scale * q k^T [+ causal mask])) v` per head, with
/// the scale, the mask and the dropout of `options` ([`AttentionOptions::CAUSAL`]: causal,
/// `1 / sqrt(D)`, no dropout).
///
/// Shapes: `q` `[B, H, T, D]`, `k` and `v` `[B, Hkv, T, D]` with `Hkv` dividing `H`
/// (grouped-query attention; `Hkv == H` is ordinary multi-head attention) and `D <= 128`.
/// Returns `(o, lse)`: `o` `[B, H, T, D]` and the natural-log logsumexp of each row's
/// scaled, masked scores `[B, H, T]` (before dropout), which [`attention_backward`] needs.
/// f32 or f16 tensors (all one dtype); f16 ones give an f16 `o` and an f32 `lse`. f16
/// tensors (and f32 ones with [`AttentionOptions::f16_inputs`]) run on the tensor cores
/// where the device has them and `D <= 64` is a multiple of 4, with f32 scores and softmax
/// and `P` rounded to f16 for the `P V` product (PyTorch's fp16 SDPA does the same);
/// elsewhere they compute in f32. f32 tensors without `f16_inputs` run on the tensor cores
/// too, to f32 accuracy (the module doc), and elsewhere on the FMA units.
///
/// # Errors
/// [`Error::ShapeMismatch`] for shapes that do not fit the contract above,
/// [`Error::TooLarge`] for `D > 128` or a device with less than 32 KiB of workgroup memory,
/// [`Error::InvalidArgument`] for a dropout probability outside `[0, 1]`, [`Error::DType`]
/// for mixed or integer dtypes.
pub fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    options: &AttentionOptions,
) -> Result<(Tensor, Tensor), Error> {
    let op = "attention";
    let half = f16::is_f16(op, &[q, k, v])?;
    let params = check_same_length(op, q, k, v, options)?;
    let tm = options.token_major;
    let d = params.d as usize;
    if let Some(kernel) = coop::Coop::pick(q.device(), d, half, options.f16_inputs, tm, false) {
        return coop_fwd::forward(kernel, q, k, v, &params);
    }
    if half {
        let w = f16::widen(&[q, k, v])?;
        let (o, lse) = attention(&w[0], &w[1], &w[2], options)?;
        return Ok((f16::narrow(&o)?, lse));
    }
    let (o, lse) = launch_forward(q, k, v, &params, op)?;
    if tm {
        return Ok((crate::ops::permute(&o, &HEADS_TOKENS)?, lse));
    }
    Ok((o, lse))
}

/// Whether [`AttentionOptions::token_major`] costs no copy on `dev` for head dim `head_dim`
/// with f16 tensors or `f16_inputs` (`f16`), or f32 ones: the tensor-core kernels write
/// and read that layout directly; elsewhere the op permutes `o` and its gradient, which a
/// caller can do as cheaply itself.
pub fn attention_token_major_is_free(dev: &crate::Device, head_dim: usize, f16: bool) -> bool {
    coop::Coop::pick(dev, head_dim, false, f16, true, false).is_some()
}

/// The permutation between `[B, H, T, D]` and `[B, T, H, D]` (its own inverse).
const HEADS_TOKENS: [usize; 4] = [0, 2, 1, 3];

/// Causal attention over a KV cache (forward only): `q` `[B, H, Q, D]` holds `Q >= 1` new
/// positions that come after `past` cached ones; `k_cache` and `v_cache` `[B, Hkv, Tmax, D]`
/// already hold the keys and values of positions `0..past + Q` (the new ones included).
/// Query row `i` attends keys `0..=past + i`; rows of the cache past `past + Q` are never
/// read. Returns `o` `[B, H, Q, D]`, equal to the last `Q` rows of [`attention`] over the
/// full sequence.
///
/// # Errors
/// [`Error::ShapeMismatch`] when the shapes do not fit or `past + Q > Tmax`;
/// [`Error::TooLarge`] as for [`attention`].
pub fn attention_decode(
    q: &Tensor,
    k_cache: &Tensor,
    v_cache: &Tensor,
    past: usize,
    scale: Option<f32>,
) -> Result<Tensor, Error> {
    let op = "attention_decode";
    if f16::is_f16(op, &[q, k_cache, v_cache])? {
        let w = f16::widen(&[q, k_cache, v_cache])?;
        return f16::narrow(&attention_decode(&w[0], &w[1], &w[2], past, scale)?);
    }
    let mut params = check_qkv(op, q, k_cache, v_cache, scale)?;
    let (tq, tk) = (params.tq as usize, params.tk_stride as usize);
    if (Size::of(past) + tq).get().is_none_or(|end| end > tk) {
        return Err(mismatch(
            op,
            format!(
                "past ({past}) + new positions ({}) exceed the cache capacity Tmax = {} (dim 2 of k_cache); \
                 grow the cache or pass fewer positions",
                tq, tk
            ),
        ));
    }
    // At most the cache's rows (checked above), so it fits 32 bits as they do.
    params.past = past as u32;
    let (o, _lse) = launch_forward(q, k_cache, v_cache, &params, op)?;
    Ok(o)
}
