//! The attention forward on the tensor cores (see `coop.rs` for what the tensor-core
//! kernels share): f32 scores, softmax statistics and accumulators, P rounded to f16 for
//! the `P V` product, as PyTorch's fp16 SDPA (FlashAttention) does.
//!
//! A workgroup owns 64 query rows of one (batch, head); subgroup `sg` keeps the Q of rows
//! `16 sg ..` as A fragments and walks the key tiles once (FlashAttention-2's online
//! softmax), with one change: cooperative matrices give no access to their elements, so
//! the per-row rescaling of the output accumulators when a row's maximum grows is a trip
//! through the f32 scratch, and it is taken only when some row's maximum grew by more
//! than [`RESCALE`] (log2 units) since the maximum its probabilities are relative to
//! (FlashAttention-4's conditional rescaling). Between rescalings a probability is at most
//! `2^RESCALE`, far inside f16 and f32; the sum and O are relative to the same stale
//! maximum, so `O / l` needs no correction. With scores of one scale the first key tile sets the maxima and the
//! trip is rare; the decision is workgroup-uniform (`workgroupUniformLoad` of a flag per
//! subgroup), which the cooperative-matrix operations inside it require. Per key tile:
//! `S = Q K^T` into the f32 scratch; two lanes per row read their 32 scores, mask them,
//! update the row's maximum and sum, and write `P` (dropout applied, rounded to f16) into
//! the f16 scratch; `O += P V`. O leaves divided by the row's sum.

use std::fmt::Write as _;

use super::coop::{
    Coop, P_LINE, ROWS, S_LINE, TILE, TOKEN_ROWS, emit_accumulate, emit_header, emit_main,
    emit_product_to_scratch, emit_row_fragments, emit_store, emit_tile_fetch, emit_tile_registers,
    emit_tile_stage, rows_of,
};
use super::dropout;
use super::layout::AttentionParams;
use crate::spec::{Layout, Slot, Variants};
use crate::{Error, Tensor};

/// The forward's bindings.
fn layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
    v.layout(&[
        ("q", false, true),
        ("k", false, true),
        ("v", false, true),
        ("o", true, true),
        ("lse", true, false),
    ])
}

/// Emits, once per key tile of a query-major pass (forward, dq), where the lane's 32 values
/// of the scratches lie (row `r`, columns `32 hh ..`: `sb` in the f32 one, `pb`, a
/// `vec4<f16>` unit, in the f16 one) and their first key `kb`.
fn emit_lane_base(w: &mut String) {
    let _ = writeln!(
        w,
        "        let sb = sg * {}u + r * {S_LINE}u + 32u * hh;
        let pb = sg * {}u + r * {}u + 8u * hh;
        let kb = t0 + 32u * hh;",
        16 * S_LINE,
        16 * P_LINE / 4,
        P_LINE / 4
    );
}

/// Emits the reads of a lane's 32 values of the f32 scratch (see [`emit_lane_base`]) into
/// the vec4s `{x}0 .. {x}7`, times `{factor}`; with `mask`, keys past `lim` are `NEG`.
pub(super) fn emit_lane_reads(w: &mut String, x: &str, factor: &str, mask: bool) {
    for j in 0..8 {
        let _ = writeln!(
            w,
            "        var {x}{j} = vec4<f32>(ss[sb + {a}u], ss[sb + {b}u], ss[sb + {c}u], ss[sb + {d}u]) * {factor};",
            a = 4 * j,
            b = 4 * j + 1,
            c = 4 * j + 2,
            d = 4 * j + 3
        );
    }
    if !mask {
        return;
    }
    w.push_str("        if (kb + 31u > lim) {\n");
    for j in 0..8 {
        let _ = writeln!(
            w,
            "            {x}{j} = select(vec4<f32>(NEG), {x}{j}, vec4<u32>(kb + {}u) + vec4<u32>(0u, 1u, 2u, 3u) <= vec4<u32>(lim));",
            4 * j
        );
    }
    w.push_str("        }\n");
}

/// Emits, after the scores are in the f32 scratch, the lane's base ([`emit_lane_base`])
/// and its 32 probabilities `x0 .. x7`: `P = exp2(S scale log2(e) - lse2)`, 0 where masked.
pub(super) fn emit_probabilities(w: &mut String) {
    emit_lane_base(w);
    emit_lane_reads(w, "x", "p.scale_log2", true);
    for j in 0..8 {
        let _ = writeln!(w, "        x{j} = exp2(x{j} - lse2);");
    }
}

/// Emits the dropout factors of the lane's 32 keys of row `i` (see [`emit_lane_base`])
/// applied to its vec4s `{x}0 .. {x}7` (1 without dropout: a uniform branch).
///
/// Lanes `l` and `l ^ 1` hold rows `i` and `i ^ 1` at the same keys, the two rows of eight
/// dropout patches ([`crate::ops::dropout_block`]) when the head's first row is even (the
/// workgroup's rows start at a multiple of 64): each lane then makes four of the eight
/// Philox blocks and sends the other row's half to its partner. Otherwise each lane makes
/// the blocks of its own row.
pub(super) fn emit_lane_dropout(w: &mut String, x: &str) {
    w.push_str(
        "        if (dropping()) {
            if ((head_row & 1u) == 0u) {
                let odd = (r & 1u) == 1u;
                let dpr = (head_row + i) >> 1u;
                let dg = (kb >> 2u) + select(0u, 4u, odd);
",
    );
    for m in 0..4 {
        let _ = writeln!(
            w,
            "                let dw{m} = drop_block(dpr, dg + {m}u);
                let dmine{m} = select(dw{m}.xy, dw{m}.zw, odd);
                let dgot{m} = subgroupShuffleXor(select(dw{m}.zw, dw{m}.xy, odd), 1u);"
        );
    }
    for j in 0..8 {
        let (a, b) = if j < 4 {
            ("dmine", "dgot")
        } else {
            ("dgot", "dmine")
        };
        let _ = writeln!(
            w,
            "                {x}{j} *= drop_factors(select({a}{m}, {b}{m}, odd));",
            m = j % 4
        );
    }
    w.push_str("            } else {\n");
    for j in 0..8 {
        let _ = writeln!(
            w,
            "                {x}{j} *= drop4(head_row + i, kb + {}u);",
            4 * j
        );
    }
    w.push_str("            }\n        }\n");
}

/// Emits the stores of the lane's vec4s `{x}0 .. {x}7` (see [`emit_lane_reads`]) into the
/// f16 scratch, rounded: one 8-byte store each.
pub(super) fn emit_lane_writes(w: &mut String, x: &str) {
    for j in 0..8 {
        let _ = writeln!(w, "        ps[pb + {j}u] = vec4<f16>({x}{j});");
    }
}

/// Emits the start shared by the query-major passes (forward, dq): the block's query
/// rows, kv head, the lane's row `i` (two lanes per row: keys `32 hh ..` of each tile),
/// the keys the block sees and the last key row `i` sees.
pub(super) fn emit_query_block(w: &mut String) {
    emit_main(w);
    let _ = writeln!(
        w,
        "    // The last query blocks see the most keys: start them first to shorten the tail.
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let g = h / (p.heads / p.kv_heads);
    let row0 = qb * {ROWS}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
    let r = lane % 16u;
    let hh = lane / 16u;
    let i = row0 + 16u * sg + r;
    var n_keys = p.tk_stride;
    var lim = p.tk_stride - 1u;
    if (p.causal != 0u) {{
        n_keys = p.past + min(row0 + {ROWS}u, p.tq);
        lim = min(p.past + i, p.tk_stride - 1u);
    }}"
    );
}

/// Emits the top of a loop over the key tiles: staged `srcs` (`k` into `ks`, `v` into
/// `vs`), the next tile's loads issued.
pub(super) fn emit_key_tile_loop(w: &mut String, v: &Coop, srcs: &[&str]) {
    w.push_str("    for (var t0 = 0u; t0 < n_keys; t0 += 64u) {\n        workgroupBarrier();\n");
    for src in srcs {
        emit_tile_stage(w, v, "        ", src, &format!("{src}s"));
    }
    w.push_str(
        "        workgroupBarrier();\n        let tn = t0 + 64u;\n        if (tn < n_keys) {\n",
    );
    for src in srcs {
        emit_tile_fetch(
            w,
            v,
            "            ",
            src,
            [rows_of(v, src), "tn", "p.tk_stride"],
        );
    }
    w.push_str("        }\n");
}

/// Emits the fetch of the first tile of `k` and `v` into registers (the loop of
/// [`emit_key_tile_loop`] stages it and fetches the next).
pub(super) fn emit_first_key_tiles(w: &mut String, v: &Coop) {
    for src in ["k", "v"] {
        emit_tile_fetch(w, v, "    ", src, [rows_of(v, src), "0u", "p.tk_stride"]);
    }
}

/// How far (log2 units) a row's maximum may grow past the one its probabilities are
/// relative to before the output accumulators are rescaled: probabilities stay below
/// `2^8`.
const RESCALE: f32 = 8.0;

/// The kernel's WGSL.
pub(super) fn generate(v: &Coop) -> String {
    let mut w = String::with_capacity(16 * 1024);
    emit_header(&mut w, v, "forward", &layout(v));
    let _ = writeln!(
        w,
        "// Per subgroup: whether one of its rows needs its output rescaled this key tile
var<workgroup> grow: array<u32, 4>;
// Per row of the block: 1 / the row's sum, applied as O leaves
var<workgroup> rl: array<f32, {ROWS}>;
const RESCALE: f32 = {RESCALE:?};"
    );
    emit_query_block(&mut w);
    emit_tile_registers(&mut w, v, &["q", "k", "v"]);
    emit_tile_fetch(&mut w, v, "    ", "q", [rows_of(v, "q"), "row0", "p.tq"]);
    emit_first_key_tiles(&mut w, v);
    emit_tile_stage(&mut w, v, "    ", "q", "ks");
    w.push_str("    workgroupBarrier();\n");
    emit_row_fragments(&mut w, v, "q", "ks");
    for dc in 0..v.dp / 16 {
        let _ = writeln!(w, "    var o{dc} = coop_mat16x16<f32, C>();");
    }
    // `m`: the maximum the row's probabilities are relative to (log2 units; below -1e29
    // until a key is seen); `l`: the lane's part of the row's sum relative to it.
    w.push_str("    var m = -1.0e30;\n    var l = 0.0;\n");
    emit_key_tile_loop(&mut w, v, &["k", "v"]);
    emit_product_to_scratch(&mut w, v, "q", "ks");
    w.push_str("        workgroupBarrier();\n");
    emit_lane_base(&mut w);
    emit_lane_reads(&mut w, "x", "p.scale_log2", true);
    w.push_str(
        "        let mt = max(max(max(x0, x1), max(x2, x3)), max(max(x4, x5), max(x6, x7)));
        let ml = max(max(mt.x, mt.y), max(mt.z, mt.w));
        let mrow = max(ml, subgroupShuffleXor(ml, 16u));
        // A row's first keys set its maximum (nothing to rescale yet); later ones move it
        // only past the threshold.
        let fresh = m < -1.0e29;
        let grows = mrow > m + select(RESCALE, 0.0, fresh);
        var alpha = 1.0;
        if (grows) {
            alpha = exp2(m - mrow);
            m = mrow;
            l = l * alpha;
        }
        let need = subgroupAny(grows && !fresh);
",
    );
    for j in 0..8 {
        let _ = writeln!(w, "        x{j} = exp2(x{j} - m);");
    }
    w.push_str(
        "        let e = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
        l = l + e.x + e.y + e.z + e.w;
",
    );
    emit_lane_dropout(&mut w, "x");
    emit_lane_writes(&mut w, "x");
    // The flags' uniform load is also the barrier between the P writes and their reads.
    w.push_str(
        "        if (lane == 0u) {
            grow[sg] = select(0u, 1u, need);
        }
        let gf = workgroupUniformLoad(&grow);
        if ((gf[0] | gf[1] | gf[2] | gf[3]) != 0u) {
",
    );
    let si = |dc: u32| format!("sg * {}u + {}u", 16 * S_LINE, dc * 16);
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "            {{\n                let si = {};\n                coopStoreT(o{dc}, &ss[si], {S_LINE}u);\n            }}",
            si(dc)
        );
    }
    w.push_str("            workgroupBarrier();\n");
    for j in 0..32 {
        let _ = writeln!(w, "            ss[sb + {j}u] *= alpha;");
    }
    w.push_str("            workgroupBarrier();\n");
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "            {{\n                let si = {};\n                o{dc} = coopLoadT<coop_mat16x16<f32, C>>(&ss[si], {S_LINE}u);\n            }}",
            si(dc)
        );
    }
    w.push_str("        }\n");
    emit_accumulate(&mut w, v, "o", "vs");
    w.push_str(
        "    }
    // The row's two halves meet; lse2 is the logsumexp in log2 units.
    let lt = l + subgroupShuffleXor(l, 16u);
    let lse2 = m + log2(lt);
    if (hh == 0u) {
        rl[sg * 16u + r] = 1.0 / lt;
    }
",
    );
    let o_rows = if v.tm { TOKEN_ROWS } else { "head_row" };
    emit_store(
        &mut w,
        v,
        "o",
        "o",
        [o_rows, "row0", "p.tq"],
        "rl[sg * 16u + rr]",
    );
    w.push_str(
        "    if (hh == 0u && i < p.tq) {
        // natural-log logsumexp
        lse[head_row + i] = lse2 / LOG2E;
    }
}
",
    );
    w
}

/// The generated kernels, by variant.
static KERNELS: Variants<Coop> = Variants::new();

/// Records the forward of checked `params` on the tensor cores: returns `o` (q's shape and
/// dtype) and `lse` `[B, H, Tq]` (f32).
pub(super) fn forward(
    v: Coop,
    q: &Tensor,
    k: &Tensor,
    vt: &Tensor,
    params: &AttentionParams,
) -> Result<(Tensor, Tensor), Error> {
    let dev = q.device();
    let [b, h, t, d] = [params.batch, params.heads, params.tq, params.d].map(|x| x as usize);
    let o = dev.empty(&o_shape(&v, &[b, h, t, d]), v.dtype())?;
    let lse = dev.empty(&[b, h, t], crate::DType::F32)?;
    let kernel = KERNELS.get(&v, || (kernel_name("fwd", &v), generate(&v)))?;
    let grid = [params.tq.div_ceil(ROWS), params.heads, params.batch];
    layout(&v).dispatch(
        kernel,
        dropout::constants(params),
        params,
        &[q, k, vt, &o, &lse],
        grid,
    )?;
    Ok((o, lse))
}

/// The shape of `o` (and of its gradient) for q's `[B, H, T, D]`: the same, or `[B, T, H,
/// D]` token-major.
pub(super) fn o_shape(v: &Coop, q: &[usize]) -> Vec<usize> {
    match *q {
        [b, h, t, d] if v.tm => vec![b, t, h, d],
        _ => q.to_vec(),
    }
}

/// The name of pass `pass`'s kernel for `v` (as the profile shows it).
pub(super) fn kernel_name(pass: &str, v: &Coop) -> String {
    format!(
        "attention_{pass}_coop_d{}{}",
        v.dp,
        if v.tm { "_tm" } else { "" }
    )
}

/// Every variant's WGSL, for the naga test (no device here has to run them).
pub(crate) fn kernels() -> Vec<(String, String)> {
    debug_assert_eq!(TILE, ROWS);
    Coop::all()
        .map(|v| {
            let name = format!(
                "{}{}",
                kernel_name("fwd", &v),
                if v.half { "_f16" } else { "" }
            );
            (name, generate(&v))
        })
        .collect()
}
