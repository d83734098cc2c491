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
    Coop, ROWS, TOKEN_ROWS, emit_accumulate, emit_header, emit_main, emit_product_to_scratch,
    emit_row_blocks, emit_store, emit_tile_fetch, emit_tile_registers, emit_tile_stage, rows_of,
};
use super::dropout;
use super::layout::AttentionParams;
use crate::spec::{Layout, Slot, Variants};
use crate::{Error, Tensor};

/// The forward's bindings (and a split variant's `amax`, [`Coop::layout`]).
fn layout(v: &Coop) -> Layout<AttentionParams, Vec<Slot>> {
    v.layout(&[
        ("q", false, true),
        ("k", false, true),
        ("v", false, true),
        ("o", true, true),
        ("lse", true, false),
    ])
}

/// The vec4s of a lane's half row of a tile in the query-major passes (8 of 32 values,
/// or 4 of 16 at 32-row tiles).
pub(super) fn lane_vec4s(v: &Coop) -> u32 {
    v.tile() / 8
}

/// Emits, once per key tile of a query-major pass (forward, dq), where the lane's values
/// of the scratches lie (row `r`, the half `hh` of the tile's columns: `sb` in the f32
/// one, `pb`, a `vec4<f16>` unit, in the f16 one) and their first key `kb`.
fn emit_lane_base(w: &mut String, v: &Coop) {
    let (s_line, p_line, half) = (v.s_line(), v.p_line(), v.tile() / 2);
    let _ = writeln!(
        w,
        "        let sb = sg * {}u + r * {s_line}u + {half}u * hh;
        let pb = sg * {}u + r * {}u + {}u * hh;
        let kb = t0 + {half}u * hh;",
        16 * s_line,
        16 * p_line / 4,
        p_line / 4,
        half / 4
    );
}

/// Emits the reads of a lane's values of the f32 scratch (see [`emit_lane_base`]) into
/// the vec4s `{x}0 ..` ([`lane_vec4s`]), times `{factor}`; with `mask`, keys past `lim`
/// are `NEG`.
pub(super) fn emit_lane_reads(w: &mut String, v: &Coop, x: &str, factor: &str, mask: bool) {
    let n = lane_vec4s(v);
    for j in 0..n {
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
    let _ = writeln!(w, "        if (kb + {}u > lim) {{", 4 * n - 1);
    for j in 0..n {
        let _ = writeln!(
            w,
            "            {x}{j} = select(vec4<f32>(NEG), {x}{j}, vec4<u32>(kb + {}u) + vec4<u32>(0u, 1u, 2u, 3u) <= vec4<u32>(lim));",
            4 * j
        );
    }
    w.push_str("        }\n");
}

/// Emits, after the scores are in the f32 scratch, the lane's base ([`emit_lane_base`])
/// and its probabilities `x0 ..`: `P = exp2(S scale log2(e) - lse2)`, 0 where masked.
pub(super) fn emit_probabilities(w: &mut String, v: &Coop) {
    emit_lane_base(w, v);
    emit_lane_reads(w, v, "x", score_factor(v), true);
    for j in 0..lane_vec4s(v) {
        let _ = writeln!(w, "        x{j} = exp2(x{j} - lse2);");
    }
}

/// The factor of the scores read from the scratch: `scale log2(e)`, over the operands'
/// scales for `split` ([`super::split::emit_scales`]).
pub(super) fn score_factor(v: &Coop) -> &'static str {
    if v.split { "s_fac" } else { "p.scale_log2" }
}

/// Emits the dropout factors of the lane's keys of row `i` (see [`emit_lane_base`])
/// applied to its vec4s `{x}0 ..` (1 without dropout: a uniform branch).
///
/// Lanes `l` and `l ^ 1` hold rows `i` and `i ^ 1` at the same keys, the two rows of the
/// lane's dropout patches ([`crate::ops::dropout_block`]) when the head's first row is
/// even (the workgroup's rows start at a multiple of 64): each lane then makes half of the
/// Philox blocks and sends the other row's half to its partner. Otherwise each lane makes
/// the blocks of its own row.
pub(super) fn emit_lane_dropout(w: &mut String, v: &Coop, x: &str) {
    let n = lane_vec4s(v);
    let blocks = n / 2;
    let _ = writeln!(
        w,
        "        if (dropping()) {{
            if ((head_row & 1u) == 0u) {{
                let odd = (r & 1u) == 1u;
                let dpr = (head_row + i) >> 1u;
                let dg = (kb >> 2u) + select(0u, {blocks}u, odd);",
    );
    for m in 0..blocks {
        let _ = writeln!(
            w,
            "                let dw{m} = drop_block(dpr, dg + {m}u);
                let dmine{m} = select(dw{m}.xy, dw{m}.zw, odd);
                let dgot{m} = subgroupShuffleXor(select(dw{m}.zw, dw{m}.xy, odd), 1u);"
        );
    }
    for j in 0..n {
        let (a, b) = if j < blocks {
            ("dmine", "dgot")
        } else {
            ("dgot", "dmine")
        };
        let _ = writeln!(
            w,
            "                {x}{j} *= drop_factors(select({a}{m}, {b}{m}, odd));",
            m = j % blocks
        );
    }
    w.push_str("            } else {\n");
    for j in 0..n {
        let _ = writeln!(
            w,
            "                {x}{j} *= drop4(head_row + i, kb + {}u);",
            4 * j
        );
    }
    w.push_str("            }\n        }\n");
}

/// Emits the stores of the lane's vec4s `{x}0 ..` (see [`emit_lane_reads`]) into the
/// f16 scratch, rounded: one 8-byte store each; `split` stores the parts of the values
/// times `scale` in `ps` and `psl`.
pub(super) fn emit_lane_writes(w: &mut String, v: &Coop, x: &str, scale: &str) {
    for j in 0..lane_vec4s(v) {
        if v.split {
            let store = super::split::stores(
                &format!("{x}{j} * {scale}"),
                &format!("ps[pb + {j}u]"),
                &format!("psl[pb + {j}u]"),
            );
            let _ = writeln!(w, "        {{ {store} }}");
        } else {
            let _ = writeln!(w, "        ps[pb + {j}u] = vec4<f16>({x}{j});");
        }
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

/// Emits the start of a query-major pass: [`emit_query_block`], a split variant's scales
/// (`backward`: the dq pass's), the registers of the block's rows of `rows` and of the
/// key tiles of `k` and `v`, and the fetch of the block's q.
pub(super) fn emit_query_start(w: &mut String, v: &Coop, rows: &[&str], backward: bool) {
    emit_query_block(w);
    if v.split {
        super::split::emit_scales(w, backward);
    }
    emit_tile_registers(w, v, rows, ROWS);
    emit_tile_registers(w, v, &["k", "v"], v.tile());
    let q_rows = [rows_of(v, "q"), "row0", "p.tq"];
    emit_tile_fetch(w, v, "    ", "q", q_rows, ROWS);
}

/// Emits the top of a loop over the key tiles: staged `srcs` (`k` into `ks`, `v` into
/// `vs`), the next tile's loads issued.
pub(super) fn emit_key_tile_loop(w: &mut String, v: &Coop, srcs: &[&str]) {
    let tile = v.tile();
    let _ = writeln!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {tile}u) {{\n        workgroupBarrier();"
    );
    for src in srcs {
        emit_tile_stage(w, v, "        ", src, &format!("{src}s"), tile);
    }
    let _ = writeln!(
        w,
        "        workgroupBarrier();\n        let tn = t0 + {tile}u;\n        if (tn < n_keys) {{",
    );
    for src in srcs {
        emit_tile_fetch(
            w,
            v,
            "            ",
            src,
            [rows_of(v, src), "tn", "p.tk_stride"],
            tile,
        );
    }
    w.push_str("        }\n");
}

/// Emits the fetch of the first tile of `k` and `v` into registers (the loop of
/// [`emit_key_tile_loop`] stages it and fetches the next).
pub(super) fn emit_first_key_tiles(w: &mut String, v: &Coop) {
    for src in ["k", "v"] {
        let first = [rows_of(v, src), "0u", "p.tk_stride"];
        emit_tile_fetch(w, v, "    ", src, first, v.tile());
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
    emit_query_start(&mut w, v, &["q"], false);
    emit_first_key_tiles(&mut w, v);
    emit_row_blocks(&mut w, v, &[("q", "ks", "q")]);
    for dc in 0..v.dp / 16 {
        let _ = writeln!(w, "    var o{dc} = coop_mat16x16<f32, C>();");
    }
    // `m`: the maximum the row's probabilities are relative to (log2 units; below -1e29
    // until a key is seen); `l`: the lane's part of the row's sum relative to it.
    w.push_str("    var m = -1.0e30;\n    var l = 0.0;\n");
    emit_key_tile_loop(&mut w, v, &["k", "v"]);
    emit_product_to_scratch(&mut w, v, "q", "ks");
    w.push_str("        workgroupBarrier();\n");
    emit_lane_base(&mut w, v);
    emit_lane_reads(&mut w, v, "x", score_factor(v), true);
    let n = lane_vec4s(v);
    let _ = writeln!(w, "        let mt = {};", tree("max", "x", n));
    w.push_str(
        "        let ml = max(max(mt.x, mt.y), max(mt.z, mt.w));
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
    for j in 0..n {
        let _ = writeln!(w, "        x{j} = exp2(x{j} - m);");
    }
    let sum: Vec<String> = (0..n).map(|j| format!("x{j}")).collect();
    let _ = writeln!(
        w,
        "        let e = {};\n        l = l + e.x + e.y + e.z + e.w;",
        sum.join(" + ")
    );
    emit_lane_dropout(&mut w, v, "x");
    emit_lane_writes(&mut w, v, "x", "x_pf");
    // The flags' uniform load is also the barrier between the P writes and their reads.
    w.push_str(
        "        if (lane == 0u) {
            grow[sg] = select(0u, 1u, need);
        }
        let gf = workgroupUniformLoad(&grow);
        if ((gf[0] | gf[1] | gf[2] | gf[3]) != 0u) {
",
    );
    let s_line = v.s_line();
    let si = |dc: u32| format!("sg * {}u + {}u", 16 * s_line, dc * 16);
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "            {{\n                let si = {};\n                coopStoreT(o{dc}, &ss[si], {s_line}u);\n            }}",
            si(dc)
        );
    }
    w.push_str("            workgroupBarrier();\n");
    // The lane's half of its row's outputs (the scores' base `sb` is that at 64-row
    // tiles).
    let base = if v.split {
        let _ = writeln!(
            w,
            "            let ob = sg * {}u + r * {s_line}u + 32u * hh;",
            16 * s_line
        );
        "ob"
    } else {
        "sb"
    };
    for j in 0..32 {
        let _ = writeln!(w, "            ss[{base} + {j}u] *= alpha;");
    }
    w.push_str("            workgroupBarrier();\n");
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "            {{\n                let si = {};\n                o{dc} = coopLoadT<coop_mat16x16<f32, C>>(&ss[si], {s_line}u);\n            }}",
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
    let factor = if v.split {
        "rl[sg * 16u + rr] / (x_pf * x_v)"
    } else {
        "rl[sg * 16u + rr]"
    };
    emit_store(&mut w, v, "o", "o", [o_rows, "row0", "p.tq"], factor);
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

/// `op(op(x0, x1), op(x2, x3)) ..`: a balanced tree over `x0 .. x{n-1}` (as the 8-wide
/// kernels always wrote it).
fn tree(op: &str, x: &str, n: u32) -> String {
    fn go(op: &str, x: &str, lo: u32, hi: u32) -> String {
        if hi - lo == 1 {
            return format!("{x}{lo}");
        }
        let mid = (lo + hi) / 2;
        format!("{op}({}, {})", go(op, x, lo, mid), go(op, x, mid, hi))
    }
    go(op, x, 0, n)
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
    let amax = super::split::maxima_for(&v, [q, k, vt], None)?;
    let mut bindings = vec![q, k, vt, &o, &lse];
    bindings.extend(amax.as_ref());
    layout(&v).dispatch(kernel, dropout::constants(params), params, &bindings, grid)?;
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
        "attention_{pass}_coop_d{}{}{}",
        v.dp,
        if v.tm { "_tm" } else { "" },
        if v.split { "_split" } else { "" }
    )
}

/// Every variant's WGSL, for the naga test (no device here has to run them).
pub(crate) fn kernels() -> Vec<(String, String)> {
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
