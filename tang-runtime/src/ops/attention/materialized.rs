//! The backward of short-sequence attention with the score matrix materialized: at
//! `T <= 256` the matmul kernels do the backward's five products faster than the fused
//! dq and dk/dv passes. On an H200 at B = 64, H = 6, T = 256, D = 64 (the bench's
//! `attention_gpt_B64_H6_T256_d64_fused_fwd_bwd`, BENCHMARKS.md 2026-11-23) one layer's
//! forward and backward took 1.49 ms with the fused passes and 1.04 ms with this one. It
//! costs `T x T` scores per head of memory while it runs (the fused passes need none),
//! which is why it stops at `T = 256`, the one length measured. With dropout it applies
//! the mask in its row kernel (one Philox block per eight scores, two rows by four); whether it still beats
//! the fused passes there is `attention_gpt_B64_H6_T256_d64_dropout_fwd_bwd` against the
//! same case with this file's `applies` returning false.
//!
//! From the forward's `lse` (natural log, scaled scores), per head:
//! ```text
//! S  = Q K^T                 (matmul)
//! dP = dO V^T                (matmul)
//! P  = exp(scale S - lse)    (masked causally if so), and dS = P (dP - D) scale with D = rowsum(dO * O)
//!                            (with dropout's mask M: dS = P (M dP - D) scale, then P M)
//!                            (one row kernel, `attention_probs_grad`, P over S and dS over dP)
//! dV = P^T dO,  dQ = dS K,  dK = dS^T Q   (matmuls)
//! ```
//! It takes heads of equal count (no grouped kv heads), `T <= 256` and `T` and `D`
//! multiples of 4; other shapes take the fused passes.

use super::dropout::{self, DROPOUT_WGSL};
use super::layout::AttentionParams;
use crate::ops::matmul::{MatmulOptions, matmul_with};
use crate::ops::random::PHILOX_WGSL;
use crate::spec::{Slot, Source, Spec};
use crate::{Error, Tensor};

/// The longest sequence the materialized backward takes.
pub const MAX_T: u32 = 256;

/// Whether the backward of these sizes runs materialized.
pub(super) fn applies(p: &AttentionParams) -> bool {
    p.heads == p.kv_heads
        && p.past == 0
        && p.tq == p.tk_stride
        && p.tq <= MAX_T
        && p.tq.is_multiple_of(4)
        && p.d.is_multiple_of(4)
}

/// Rows per workgroup of the row kernel: 64 threads per row, a `vec4` of scores each.
const ROWS: u32 = 4;

const SLOTS: &[Slot] = &[
    Slot::Read("o", "array<vec4<f32>>"),
    Slot::Read("go", "array<vec4<f32>>"),
    Slot::Read("lse", "array<f32>"),
    Slot::ReadWrite("s", "array<vec4<f32>>"),
    Slot::ReadWrite("dp", "array<vec4<f32>>"),
];

const BODY: &str = "const ROWS: u32 = 4u;
var<workgroup> part: array<f32, 256>;
var<workgroup> odd_half: array<vec2<u32>, 128>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    // Row r (of B * H * T) is query position i of its head; lane t of its 64 threads owns
    // scores 4t .. 4t + 3 and, below D / 4, a vec4 of the row's O and dO.
    let r = (wid.x + wid.y * nwg.x) * ROWS + lid / 64u;
    let t = lid % 64u;
    let live = r < p.batch * p.heads * p.tq;
    let i = r % p.tq;
    let d4 = p.d / 4u;
    var od = 0.0;
    if (live && t < d4) {
        od = dot(o[r * d4 + t], go[r * d4 + t]);
    }
    part[lid] = od;
    workgroupBarrier();
    for (var w = 32u; w > 0u; w = w >> 1u) {
        if (t < w) { part[lid] = part[lid] + part[lid + w]; }
        workgroupBarrier();
    }
    let delta = part[lid - t];
    // With dropout, the even row of each pair (rows `lid / 64` 0 and 2) makes the Philox
    // block of its patch with the odd row (`attention/dropout.rs`) and leaves the odd row's
    // half here: one block per eight weights. T is a multiple of 4, so pairs stay in a head.
    let k = lid / 64u;
    let drop = dropping();
    var f = vec4<f32>(1.0);
    if (drop && (k & 1u) == 0u) {
        let w = drop_block(r >> 1u, t);
        f = drop_factors(w.xy);
        odd_half[(k >> 1u) * 64u + t] = w.zw;
    }
    workgroupBarrier();
    if (drop && (k & 1u) == 1u) {
        f = drop_factors(odd_half[(k >> 1u) * 64u + t]);
    }
    let n4 = p.tq / 4u;
    if (!live || t >= n4) { return; }
    let at = r * n4 + t;
    let l = lse[r];
    let j = vec4<u32>(4u * t) + vec4<u32>(0u, 1u, 2u, 3u);
    let seen = (j <= vec4<u32>(i)) | vec4<bool>(p.causal == 0u);
    let pr = select(vec4<f32>(0.0), exp(p.scale * s[at] - l), seen);
    // With dropout: dV takes P M, and dS = P (M dP - delta).
    dp[at] = pr * (dp[at] * f - delta) * p.scale;
    s[at] = pr * f;
}
";

static K_PROBS_GRAD: Spec<AttentionParams> = Spec::new(
    "attention_probs_grad",
    &[PHILOX_WGSL, DROPOUT_WGSL],
    SLOTS,
    BODY,
);

/// The row kernel, for the registry.
pub(super) fn kernels() -> Vec<Source> {
    vec![K_PROBS_GRAD.source()]
}

/// The materialized backward (see the module docs): `(dq, dk, dv)`.
pub(super) fn backward(
    p: &AttentionParams,
    [q, k, v]: [&Tensor; 3],
    o: &Tensor,
    lse: &Tensor,
    grad_out: &Tensor,
    f16_inputs: bool,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let nt = MatmulOptions {
        transpose_b: true,
        f16_inputs,
        ..MatmulOptions::default()
    };
    let tn = MatmulOptions {
        transpose_a: true,
        f16_inputs,
        ..MatmulOptions::default()
    };
    let nn = MatmulOptions {
        f16_inputs,
        ..MatmulOptions::default()
    };
    let s = matmul_with(q, k, &nt)?;
    let dp = matmul_with(grad_out, v, &nt)?;
    let rows = p.batch * p.heads * p.tq;
    let groups = u64::from(rows.div_ceil(ROWS));
    let grid = crate::spec::grid(q.device(), "attention_backward", groups)?;
    K_PROBS_GRAD.dispatch(dropout::constants(p), p, &[o, grad_out, lse, &s, &dp], grid)?;
    // `s` now holds P and `dp` holds dS.
    let dv = matmul_with(&s, grad_out, &tn)?;
    let dq = matmul_with(&dp, k, &nn)?;
    let dk = matmul_with(&dp, q, &tn)?;
    Ok((dq, dk, dv))
}
