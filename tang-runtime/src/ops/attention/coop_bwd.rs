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
    Coop, ROWS, TOKEN_ROWS, emit_accumulate, emit_header, emit_main, emit_product_to_scratch,
    emit_row_blocks, emit_store, emit_tile_fetch, emit_tile_registers, emit_tile_stage, row_unit,
    rows_of,
};
use super::coop_fwd::{
    emit_first_key_tiles, emit_key_tile_loop, emit_lane_dropout, emit_lane_reads, emit_lane_writes,
    emit_probabilities, emit_query_start, kernel_name, lane_vec4s, score_factor,
};
use super::layout::AttentionParams;
use crate::spec::{Layout, Slot};

/// The dq pass's bindings (those of the register-blocked dq pass, `layout::DQ_SLOTS`).
pub(super) fn dq_layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
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
pub(super) fn dq_binding(v: &Coop) -> &'static str {
    if v.packed { "dqkv" } else { "dq" }
}

/// The dk/dv pass's bindings (`layout::DKV_SLOTS`).
pub(super) fn dkv_layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
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
    emit_query_start(&mut w, v, &["q", "go"], true);
    // o and its gradient: token-major, or the query's head rows.
    let o_rows = if v.tm { TOKEN_ROWS } else { "head_row" };
    emit_tile_fetch(&mut w, v, "    ", "go", [o_rows, "row0", "p.tq"], ROWS);
    emit_first_key_tiles(&mut w, v);
    emit_row_blocks(&mut w, v, &[("q", "ks", "q"), ("go", "vs", "g")]);
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
    emit_probabilities(&mut w, v);
    // Every lane has read S: dP may take the scratch.
    w.push_str("        workgroupBarrier();\n");
    emit_product_to_scratch(&mut w, v, "g", "vs");
    w.push_str("        workgroupBarrier();\n");
    emit_lane_reads(&mut w, v, "y", if v.split { "i_gv" } else { "1.0" }, false);
    emit_lane_dropout(&mut w, v, "y");
    for j in 0..lane_vec4s(v) {
        let _ = writeln!(w, "        x{j} = x{j} * (y{j} - delta_i);");
    }
    emit_lane_writes(&mut w, v, "x", "x_ds");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dq", "ks");
    w.push_str("    }\n");
    let rows = if v.packed {
        rows_of(v, "q")
    } else {
        "head_row"
    };
    let factor = if v.split {
        "p.scale / (x_ds * x_k)"
    } else {
        "p.scale"
    };
    emit_store(
        &mut w,
        v,
        "dq",
        dq_binding(v),
        [rows, "row0", "p.tq"],
        factor,
    );
    w.push_str("}\n");
    w
}

/// The queries of a dk/dv lane: 8 of a 64-query tile, 4 of a 32-query one.
fn lane_queries(v: &Coop) -> u32 {
    v.tile() / 8
}

/// Emits, for the dk/dv pass, the lane's 4 keys x [`lane_queries`] queries of the f32
/// scratch (at `sb`: keys `4 kg ..` of the subgroup's 16, queries `4 qg ..` and, in a
/// 64-query tile, `32 + 4 qg ..`; eight consecutive lanes read 8 distinct bank groups)
/// into `{x}0 ..`, vec4s over the 4 keys, one per query `qq` (`qq < 4`: `4 qg + qq`, else
/// `32 + 4 qg + qq - 4`).
fn emit_key_lane_reads(w: &mut String, v: &Coop, x: &str) {
    for qq in 0..lane_queries(v) {
        let col = if qq < 4 { qq } else { 32 + qq - 4 };
        let reads: Vec<String> = (0..4)
            .map(|kk| format!("ss[sb + {}u]", kk * v.s_line() + col))
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

/// Emits the stores of the dk/dv lane's vec4s `{x}0 ..` into the f16 scratch (at `pb`, a
/// `vec4<f16>` unit) as `[16 keys][tile queries]`, rounded: each key's four consecutive
/// queries `4 qg ..` (and `32 + 4 qg ..`) in one 8-byte store; `split` stores the parts
/// of the values times `scale` in `ps` and `psl`.
fn emit_key_lane_writes(w: &mut String, v: &Coop, x: &str, scale: &str) {
    for (kk, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        for half in 0..lane_queries(v) / 4 {
            let q: Vec<String> = (0..4)
                .map(|i| format!("{x}{}.{comp}", 4 * half + i))
                .collect();
            let at = format!("pb + {}u + qg", kk as u32 * v.p_line() / 4 + 8 * half);
            if v.split {
                let store = super::split::stores(
                    &format!("vec4<f32>({}) * {scale}", q.join(", ")),
                    &format!("ps[{at}]"),
                    &format!("psl[{at}]"),
                );
                let _ = writeln!(w, "        {{ {store} }}");
            } else {
                let _ = writeln!(
                    w,
                    "        ps[{at}] = vec4<f16>(vec4<f32>({}));",
                    q.join(", ")
                );
            }
        }
    }
}

/// The dk/dv pass's WGSL.
pub(super) fn generate_dkv(v: &Coop) -> String {
    let mut w = String::with_capacity(16 * 1024);
    emit_header(&mut w, v, "backward (dk, dv)", &dkv_layout(v));
    let tile = v.tile();
    let nq = lane_queries(v);
    let _ = writeln!(
        w,
        "// lse (log2 units) and delta of the tile's {tile} queries
var<workgroup> lsq: array<f32, {tile}>;
var<workgroup> dlq: array<f32, {tile}>;
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
    if v.split {
        super::split::emit_scales(&mut w, true);
    }
    emit_tile_registers(&mut w, v, &["k", "v"], ROWS);
    emit_tile_registers(&mut w, v, &["q", "go"], tile);
    for src in ["k", "v"] {
        let rows = [rows_of(v, src), "k0", "p.tk_stride"];
        emit_tile_fetch(&mut w, v, "    ", src, rows, ROWS);
    }
    emit_row_blocks(&mut w, v, &[("k", "ks", "kf"), ("v", "vs", "vf")]);
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
    emit_tile_fetch(
        &mut w,
        v,
        "    ",
        "q",
        [rows_of(v, "q"), "q_start", "p.tq"],
        tile,
    );
    emit_tile_fetch(&mut w, v, "    ", "go", [o_rows, "q_start", "p.tq"], tile);
    let _ = writeln!(
        w,
        "    for (var t0 = q_start; t0 < p.tq; t0 += {tile}u) {{
        workgroupBarrier();
        if (tid < {tile}u && t0 + tid < p.tq) {{
            lsq[tid] = lse[head_row + t0 + tid] * LOG2E;
            dlq[tid] = delta[head_row + t0 + tid];
        }}",
    );
    emit_tile_stage(&mut w, v, "        ", "q", "ks", tile);
    emit_tile_stage(&mut w, v, "        ", "go", "vs", tile);
    let _ = writeln!(
        w,
        "        workgroupBarrier();\n        let tn = t0 + {tile}u;\n        if (tn < p.tq) {{",
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "q",
        [rows_of(v, "q"), "tn", "p.tq"],
        tile,
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "go",
        [o_rows, "tn", "p.tq"],
        tile,
    );
    w.push_str("        }\n");
    // S^T = K Q^T, then P^T (masked: query i sees key j when j <= i, both in range).
    emit_product_to_scratch(&mut w, v, "kf", "ks");
    w.push_str("        workgroupBarrier();\n");
    let (s_line, p_line) = (v.s_line(), v.p_line());
    let _ = writeln!(
        w,
        "        let sb = sg * {}u + 4u * kg * {s_line}u + 4u * qg;\n        let pb = sg * {}u + kg * {p_line}u;",
        16 * s_line,
        16 * p_line / 4
    );
    emit_key_lane_reads(&mut w, v, "x");
    let factor = score_factor(v);
    for qq in 0..nq {
        let _ = writeln!(
            w,
            "        {{
            let qi = {q};
            let iq = t0 + qi;
            let seen = vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u);
            let ok = (seen < vec4<u32>(p.tk_stride)) & vec4<bool>(iq < p.tq) & ((seen <= vec4<u32>(iq)) | vec4<bool>(p.causal == 0u));
            x{qq} = select(vec4<f32>(0.0), exp2(x{qq} * {factor} - lsq[qi]), ok);
        }}",
            q = lane_query(qq)
        );
    }
    // The dropout factors of the lane's 4 keys, per query row.
    for qq in 0..nq {
        let _ = writeln!(w, "        var f{qq} = vec4<f32>(1.0);");
    }
    // Queries 2m and 2m + 1 of the lane are the two rows of a dropout patch when the
    // head's first query of the tile is even: one Philox block for both.
    w.push_str("        if (dropping()) {\n            if (((head_row + t0) & 1u) == 0u) {\n");
    for m in 0..nq / 2 {
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
    for qq in 0..nq {
        let _ = writeln!(
            w,
            "                f{qq} = drop4(head_row + t0 + {}, j0);",
            lane_query(qq)
        );
    }
    w.push_str("            }\n        }\n");
    for qq in 0..nq {
        let _ = writeln!(w, "        let pd{qq} = x{qq} * f{qq};");
    }
    emit_key_lane_writes(&mut w, v, "pd", "x_pb");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dv", "vs");
    // dP^T = V dO^T (every lane has read S^T).
    emit_product_to_scratch(&mut w, v, "vf", "vs");
    w.push_str("        workgroupBarrier();\n");
    emit_key_lane_reads(&mut w, v, "y");
    let f = if v.split { "(f{qq} * i_gv)" } else { "f{qq}" };
    for qq in 0..nq {
        let _ = writeln!(
            w,
            "        let ds{qq} = x{qq} * (y{qq} * {} - dlq[{}]);",
            f.replace("{qq}", &qq.to_string()),
            lane_query(qq)
        );
    }
    emit_key_lane_writes(&mut w, v, "ds", "x_ds");
    w.push_str("        workgroupBarrier();\n");
    emit_accumulate(&mut w, v, "dk", "ks");
    w.push_str("    }\n    }\n");
    let [(dk, dk_rows), (dv, dv_rows)] = if v.packed {
        [("dqkv", rows_of(v, "k")), ("dqkv", rows_of(v, "v"))]
    } else {
        [("dk", "kvrow"), ("dv", "kvrow")]
    };
    let (dk_factor, dv_factor) = if v.split {
        ("p.scale / (x_ds * x_q)", "1.0 / (x_pb * x_go)")
    } else {
        ("p.scale", "1.0")
    };
    emit_store(
        &mut w,
        v,
        "dk",
        dk,
        [dk_rows, "k0", "p.tk_stride"],
        dk_factor,
    );
    emit_store(
        &mut w,
        v,
        "dv",
        dv,
        [dv_rows, "k0", "p.tk_stride"],
        dv_factor,
    );
    w.push_str("}\n");
    w
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
