//! The attention backward on the tensor cores (see `coop.rs` for what the tensor-core
//! kernels share), FlashAttention-2's two passes with P recomputed from the forward's
//! logsumexp; dS is rounded to f16 for its products, as FlashAttention does.
//!
//! - The dq pass (64 query rows per workgroup, the forward's layout): per key tile,
//!   `S = Q K^T` and `dP = dO V^T` through the f32 scratch, two lanes per row make
//!   `dS = P (dP M / (1 - p) - delta)` (M the dropout mask) into the f16 scratch, and
//!   `dQ += dS K`. It also writes `delta = rowsum(dO O)`, which the dk/dv pass reads.
//! - The dk/dv pass (64 keys per workgroup, subgroup `sg` keeps the K and V of keys
//!   `16 sg ..` as A fragments), over the query heads that share the kv head in a fixed
//!   order and, per head, the query tiles from the block's first key on: `S^T = K Q^T`,
//!   `P^T` (kept in registers), `dV += (P M / (1 - p))^T dO`, `dP^T = V dO^T`,
//!   `dS^T = P^T (M / (1 - p) dP^T - delta)`, `dK += dS^T Q`. Its lanes each take 4 keys x
//!   8 queries of the scratch: one Philox block gives the dropout decisions of two
//!   neighbouring queries' 4 keys (a patch, `ops::dropout_block`) when the tile's first
//!   query row is even, one block per query otherwise.
//!
//! The gradients of the scaled scores are scaled once, on the way out (`dQ` and `dK`
//! times the softmax scale).
//!
//! Measured and not kept (BENCHMARKS.md, 2026-11-29 (night)): dq as one batched product
//! `dS K` on the tensor cores, the dk/dv pass writing dS (f16) in place of the dq pass's
//! second walk. Writing and reading the `T x T` dS cost more than the walk: forward and
//! backward 11% slower at B8 H8 T1024 f16, 3% at the GPT's T 256 (10% under autocast),
//! 2.5% faster only with dropout.

use std::fmt::Write as _;

use super::coop::{
    Coop, P_LINE, ROWS, S_LINE, TILE, TOKEN_ROWS, emit_accumulate, emit_header, emit_main,
    emit_product_to_scratch, emit_row_fragments, emit_store, emit_tile_fetch, emit_tile_registers,
    emit_tile_stage, row_unit, rows_of,
};
use super::coop_fwd::{
    emit_first_key_tiles, emit_key_tile_loop, emit_lane_dropout, emit_lane_reads, emit_lane_writes,
    emit_probabilities, emit_query_block, kernel_name,
};
use super::dropout;
use super::layout::AttentionParams;
use crate::spec::{Layout, Slot, Variants};
use crate::{DType, Error, Tensor};

/// The dq pass's bindings (those of the register-blocked dq pass, `layout::DQ_SLOTS`).
fn dq_layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
    v.layout(&[
        ("q", false, true),
        ("k", false, true),
        ("v", false, true),
        ("o", false, true),
        ("go", false, true),
        ("lse", false, false),
        (dq_binding(v), true, true),
        ("delta", true, false),
    ])
}

/// The dq pass's output: `dq`, or with a packed projection the gradient of the whole
/// projection, `dqkv` (`[B, T, (H + 2 Hkv) D]`, like the projection), whose q heads the
/// dq pass writes and whose k and v heads the dk/dv pass writes: the caller gets the
/// packed gradient without a merge of the three (0.19 ms of the character GPT's AMP
/// step on an H200).
fn dq_binding(v: &Coop) -> &'static str {
    if v.packed { "dqkv" } else { "dq" }
}

/// The dk/dv pass's bindings (`layout::DKV_SLOTS`).
fn dkv_layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
    let mut slots = vec![
        ("q", false, true),
        ("k", false, true),
        ("v", false, true),
        ("go", false, true),
        ("lse", false, false),
        ("delta", false, false),
    ];
    if v.packed {
        // One binding for both: a tensor bound twice for writing would alias.
        slots.push(("dqkv", true, true));
    } else {
        slots.extend([("dk", true, true), ("dv", true, true)]);
    }
    v.layout(&slots)
}

/// The dq pass's WGSL.
pub(super) fn generate_dq(v: &Coop) -> String {
    let mut w = String::with_capacity(16 * 1024);
    emit_header(&mut w, v, "backward (dq)", &dq_layout(v));
    emit_query_block(&mut w);
    emit_tile_registers(&mut w, v, &["q", "go", "k", "v"]);
    emit_tile_fetch(&mut w, v, "    ", "q", [rows_of(v, "q"), "row0", "p.tq"]);
    // o and its gradient: token-major, or the query's head rows.
    let o_rows = if v.tm { TOKEN_ROWS } else { "head_row" };
    emit_tile_fetch(&mut w, v, "    ", "go", [o_rows, "row0", "p.tq"]);
    emit_first_key_tiles(&mut w, v);
    emit_tile_stage(&mut w, v, "    ", "q", "ks");
    emit_tile_stage(&mut w, v, "    ", "go", "vs");
    w.push_str("    workgroupBarrier();\n");
    emit_row_fragments(&mut w, v, "q", "ks");
    emit_row_fragments(&mut w, v, "g", "vs");
    // delta = rowsum(dO O) in f32, each lane half of the row's dims.
    let half_units = v.dp / 8;
    let _ = writeln!(
        w,
        "    var dl = 0.0;
    var lse2 = 0.0;
    if (i < p.tq) {{
        for (var u = 0u; u < {half_units}u; u++) {{
            let c4 = hh * {half_units}u + u;
            if (c4 < d4) {{
                let at = ({}) * d4 + c4;
                dl += dot(vec4<f32>(go[at]), vec4<f32>(o[at]));
            }}
        }}
        lse2 = lse[head_row + i] * LOG2E;
    }}
    let delta_i = dl + subgroupShuffleXor(dl, 16u);
    if (hh == 0u && i < p.tq) {{
        delta[head_row + i] = delta_i;
    }}",
        row_unit(o_rows, "i")
    );
    for dc in 0..v.dp / 16 {
        let _ = writeln!(w, "    var dq{dc} = coop_mat16x16<f32, C>();");
    }
    emit_key_tile_loop(&mut w, v, &["k", "v"]);
    emit_product_to_scratch(&mut w, v, "q", "ks");
    w.push_str("        workgroupBarrier();\n");
    emit_probabilities(&mut w);
    // Every lane has read S: dP may take the scratch.
    w.push_str("        workgroupBarrier();\n");
    emit_product_to_scratch(&mut w, v, "g", "vs");
    w.push_str("        workgroupBarrier();\n");
    emit_lane_reads(&mut w, "y", "1.0", false);
    emit_lane_dropout(&mut w, "y");
    for j in 0..8 {
        let _ = writeln!(w, "        x{j} = x{j} * (y{j} - delta_i);");
    }
    emit_lane_writes(&mut w, "x");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dq", "ks");
    w.push_str("    }\n");
    let rows = if v.packed {
        rows_of(v, "q")
    } else {
        "head_row"
    };
    emit_store(
        &mut w,
        v,
        "dq",
        dq_binding(v),
        [rows, "row0", "p.tq"],
        "p.scale",
    );
    w.push_str("}\n");
    w
}

/// Emits, for the dk/dv pass, the lane's 4 keys x 8 queries of the f32 scratch (at `sb`:
/// keys `4 kg ..` of the subgroup's 16, queries `4 qg ..` and `32 + 4 qg ..` of the tile;
/// eight consecutive lanes read 8 distinct bank groups) into `{x}0 .. {x}7`, vec4s over the 4
/// keys, one per query `qq` (`qq < 4`: `4 qg + qq`, else `32 + 4 qg + qq - 4`).
fn emit_key_lane_reads(w: &mut String, x: &str) {
    for qq in 0..8u32 {
        let col = if qq < 4 { qq } else { 32 + qq - 4 };
        let reads: Vec<String> = (0..4)
            .map(|kk| format!("ss[sb + {}u]", kk * S_LINE + col))
            .collect();
        let _ = writeln!(w, "        var {x}{qq} = vec4<f32>({});", reads.join(", "));
    }
}

/// The query (within the tile) of the dk/dv lane's `qq`-th vec4 (see
/// [`emit_key_lane_reads`]).
fn lane_query(qq: u32) -> String {
    if qq < 4 {
        format!("4u * qg + {qq}u")
    } else {
        format!("32u + 4u * qg + {}u", qq - 4)
    }
}

/// Emits the stores of the dk/dv lane's vec4s `{x}0 .. {x}7` into the f16 scratch (at
/// `pb`, a `vec4<f16>` unit) as `[16 keys][64 queries]`, rounded: each key's four
/// consecutive queries `4 qg ..` (and `32 + 4 qg ..`) in one 8-byte store.
fn emit_key_lane_writes(w: &mut String, x: &str) {
    for (kk, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        for half in 0..2u32 {
            let q: Vec<String> = (0..4)
                .map(|i| format!("{x}{}.{comp}", 4 * half + i))
                .collect();
            let _ = writeln!(
                w,
                "        ps[pb + {}u + qg] = vec4<f16>(vec4<f32>({}));",
                kk as u32 * P_LINE / 4 + 8 * half,
                q.join(", ")
            );
        }
    }
}

/// The dk/dv pass's WGSL.
pub(super) fn generate_dkv(v: &Coop) -> String {
    let mut w = String::with_capacity(16 * 1024);
    emit_header(&mut w, v, "backward (dk, dv)", &dkv_layout(v));
    let _ = writeln!(
        w,
        "// lse (log2 units) and delta of the tile's 64 queries
var<workgroup> lsq: array<f32, {TILE}>;
var<workgroup> dlq: array<f32, {TILE}>;
"
    );
    emit_main(&mut w);
    let _ = writeln!(
        w,
        "    // The first key blocks see the most queries: they come first in the grid.
    let k0 = wg.x * {ROWS}u;
    let g = wg.y;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
    // Each lane's 4 keys and 8 queries of the scratch.
    let qg = lane % 8u;
    let kg = lane / 8u;
    let j0 = k0 + 16u * sg + 4u * kg;
    let group = p.heads / p.kv_heads;
    // Causal: query tiles before the block's first key see none of its keys (the
    // backward has no cache: past is 0 and q has k's length).
    var q_start = 0u;
    if (p.causal != 0u) {{
        q_start = k0;
    }}"
    );
    emit_tile_registers(&mut w, v, &["k", "v", "q", "go"]);
    emit_tile_fetch(
        &mut w,
        v,
        "    ",
        "k",
        [rows_of(v, "k"), "k0", "p.tk_stride"],
    );
    emit_tile_fetch(
        &mut w,
        v,
        "    ",
        "v",
        [rows_of(v, "v"), "k0", "p.tk_stride"],
    );
    emit_tile_stage(&mut w, v, "    ", "k", "ks");
    emit_tile_stage(&mut w, v, "    ", "v", "vs");
    w.push_str("    workgroupBarrier();\n");
    emit_row_fragments(&mut w, v, "kf", "ks");
    emit_row_fragments(&mut w, v, "vf", "vs");
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "    var dk{dc} = coop_mat16x16<f32, C>();\n    var dv{dc} = coop_mat16x16<f32, C>();"
        );
    }
    w.push_str(
        "    for (var hi = 0u; hi < group; hi++) {
    let h = g * group + hi;
    let head_row = (b * p.heads + h) * p.tq;
",
    );
    // The gradient of o: token-major, or the query head's rows.
    let o_rows = if v.tm { TOKEN_ROWS } else { "head_row" };
    emit_tile_fetch(&mut w, v, "    ", "q", [rows_of(v, "q"), "q_start", "p.tq"]);
    emit_tile_fetch(&mut w, v, "    ", "go", [o_rows, "q_start", "p.tq"]);
    w.push_str(
        "    for (var t0 = q_start; t0 < p.tq; t0 += 64u) {
        workgroupBarrier();
        if (tid < 64u && t0 + tid < p.tq) {
            lsq[tid] = lse[head_row + t0 + tid] * LOG2E;
            dlq[tid] = delta[head_row + t0 + tid];
        }
",
    );
    emit_tile_stage(&mut w, v, "        ", "q", "ks");
    emit_tile_stage(&mut w, v, "        ", "go", "vs");
    w.push_str(
        "        workgroupBarrier();\n        let tn = t0 + 64u;\n        if (tn < p.tq) {\n",
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "q",
        [rows_of(v, "q"), "tn", "p.tq"],
    );
    emit_tile_fetch(&mut w, v, "            ", "go", [o_rows, "tn", "p.tq"]);
    w.push_str("        }\n");
    // S^T = K Q^T, then P^T (masked: query i sees key j when j <= i, both in range).
    emit_product_to_scratch(&mut w, v, "kf", "ks");
    w.push_str("        workgroupBarrier();\n");
    let _ = writeln!(
        w,
        "        let sb = sg * {}u + 4u * kg * {S_LINE}u + 4u * qg;\n        let pb = sg * {}u + kg * {P_LINE}u;",
        16 * S_LINE,
        16 * P_LINE / 4
    );
    emit_key_lane_reads(&mut w, "x");
    for qq in 0..8 {
        let _ = writeln!(
            w,
            "        {{
            let qi = {q};
            let iq = t0 + qi;
            let seen = vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u);
            let ok = (seen < vec4<u32>(p.tk_stride)) & vec4<bool>(iq < p.tq) & ((seen <= vec4<u32>(iq)) | vec4<bool>(p.causal == 0u));
            x{qq} = select(vec4<f32>(0.0), exp2(x{qq} * p.scale_log2 - lsq[qi]), ok);
        }}",
            q = lane_query(qq)
        );
    }
    // The dropout factors of the lane's 4 keys, per query row.
    for qq in 0..8 {
        let _ = writeln!(w, "        var f{qq} = vec4<f32>(1.0);");
    }
    // Queries 2m and 2m + 1 of the lane are the two rows of a dropout patch when the
    // head's first query of the tile is even: one Philox block for both.
    w.push_str("        if (dropping()) {\n            if (((head_row + t0) & 1u) == 0u) {\n");
    for m in 0..4 {
        let _ = writeln!(
            w,
            "                let dp{m} = drop_patch((head_row + t0 + {}) >> 1u, j0 >> 2u);
                f{e} = dp{m}.even;
                f{o} = dp{m}.odd;",
            lane_query(2 * m),
            e = 2 * m,
            o = 2 * m + 1
        );
    }
    w.push_str("            } else {\n");
    for qq in 0..8 {
        let _ = writeln!(
            w,
            "                f{qq} = drop4(head_row + t0 + {}, j0);",
            lane_query(qq)
        );
    }
    w.push_str("            }\n        }\n");
    for qq in 0..8 {
        let _ = writeln!(w, "        let pd{qq} = x{qq} * f{qq};");
    }
    emit_key_lane_writes(&mut w, "pd");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dv", "vs");
    // dP^T = V dO^T (every lane has read S^T).
    emit_product_to_scratch(&mut w, v, "vf", "vs");
    w.push_str("        workgroupBarrier();\n");
    emit_key_lane_reads(&mut w, "y");
    for qq in 0..8 {
        let _ = writeln!(
            w,
            "        let ds{qq} = x{qq} * (y{qq} * f{qq} - dlq[{}]);",
            lane_query(qq)
        );
    }
    emit_key_lane_writes(&mut w, "ds");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dk", "ks");
    w.push_str("    }\n    }\n");
    let [(dk, dk_rows), (dv, dv_rows)] = if v.packed {
        [("dqkv", rows_of(v, "k")), ("dqkv", rows_of(v, "v"))]
    } else {
        [("dk", "kvrow"), ("dv", "kvrow")]
    };
    emit_store(
        &mut w,
        v,
        "dk",
        dk,
        [dk_rows, "k0", "p.tk_stride"],
        "p.scale",
    );
    emit_store(&mut w, v, "dv", dv, [dv_rows, "k0", "p.tk_stride"], "1.0");
    w.push_str("}\n");
    w
}

/// The generated kernels, by variant and pass (false: dq, true: dk/dv).
static KERNELS: Variants<(Coop, bool)> = Variants::new();

/// Where the backward writes its gradients: three tensors, or (a variant that reads a
/// packed projection) one packed gradient (see [`dq_binding`]).
enum Grads<'a> {
    Split([&'a Tensor; 3]),
    Packed(&'a Tensor),
}

/// Records the backward of checked `params` on the tensor cores from `[q, k, v, o,
/// grad_out]` (all of the variant's dtype) and the forward's `lse`: returns `(dq, dk, dv)`
/// in that dtype.
pub(super) fn backward(
    v: Coop,
    inputs: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
) -> Result<(Tensor, Tensor, Tensor), Error> {
    let [b, h, hkv, t, tk, d] = sizes(params);
    let dev = inputs[0].device();
    let dq = dev.empty(&[b, h, t, d], v.dtype())?;
    let dk = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    let dv = dev.empty(&[b, hkv, tk, d], v.dtype())?;
    record(v, inputs, lse, params, Grads::Split([&dq, &dk, &dv]))?;
    Ok((dq, dk, dv))
}

/// [`backward`] of a variant that reads a packed projection (q, k and v all that tensor),
/// returning the projection's gradient, `[B, T, (H + 2 Hkv) D]`.
pub(super) fn backward_packed(
    v: Coop,
    inputs: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
) -> Result<Tensor, Error> {
    let [b, h, hkv, t, _, d] = sizes(params);
    let dqkv = inputs[0]
        .device()
        .empty(&[b, t, (h + 2 * hkv) * d], v.dtype())?;
    record(v, inputs, lse, params, Grads::Packed(&dqkv))?;
    Ok(dqkv)
}

/// `[B, H, Hkv, T, Tk, D]` of `params`.
fn sizes(params: &AttentionParams) -> [usize; 6] {
    [
        params.batch,
        params.heads,
        params.kv_heads,
        params.tq,
        params.tk_stride,
        params.d,
    ]
    .map(|x| x as usize)
}

/// The two passes of the backward, into `grads`.
fn record(
    v: Coop,
    [q, k, vt, o, go]: [&Tensor; 5],
    lse: &Tensor,
    params: &AttentionParams,
    grads: Grads<'_>,
) -> Result<(), Error> {
    debug_assert_eq!(v.packed, matches!(grads, Grads::Packed(_)));
    let [b, h, _, t, _, _] = sizes(params);
    let delta = q.device().empty(&[b, h, t], DType::F32)?;
    let dq = match grads {
        Grads::Split([dq, _, _]) => dq,
        Grads::Packed(dqkv) => dqkv,
    };
    let constants = dropout::constants(params);
    let kernel = KERNELS.get(&(v, false), || (kernel_name("bwd_dq", &v), generate_dq(&v)))?;
    let grid = [params.tq.div_ceil(ROWS), params.heads, params.batch];
    dq_layout(&v).dispatch(
        kernel,
        constants,
        params,
        &[q, k, vt, o, go, lse, dq, &delta],
        grid,
    )?;
    // Recorded after the dq pass on the same encoder, so it reads its `delta`.
    let kernel = KERNELS.get(&(v, true), || {
        (kernel_name("bwd_dkv", &v), generate_dkv(&v))
    })?;
    let grid = [
        params.tk_stride.div_ceil(ROWS),
        params.kv_heads,
        params.batch,
    ];
    let mut bindings = vec![q, k, vt, go, lse, &delta];
    match grads {
        Grads::Split([_, dk, dv]) => bindings.extend([dk, dv]),
        Grads::Packed(dqkv) => bindings.push(dqkv),
    }
    dkv_layout(&v).dispatch(kernel, constants, params, &bindings, grid)?;
    Ok(())
}

/// Every variant's WGSL, for the naga test.
pub(crate) fn kernels() -> Vec<(String, String)> {
    Coop::all()
        .flat_map(|v| {
            let f16 = if v.half { "_f16" } else { "" };
            [
                (
                    format!("{}{f16}", kernel_name("bwd_dq", &v)),
                    generate_dq(&v),
                ),
                (
                    format!("{}{f16}", kernel_name("bwd_dkv", &v)),
                    generate_dkv(&v),
                ),
            ]
        })
        .collect()
}
