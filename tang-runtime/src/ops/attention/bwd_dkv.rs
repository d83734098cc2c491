//! The dk/dv pass of the register-blocked backward (padded head dims 32 and 64): per key
//! block, dK and dV summed over the query heads that share its kv head. Tile loads and
//! layout conventions are those of `emit.rs`.

use std::fmt::Write as _;

use super::emit::{Block, Rows, Tile, step_slot, store_rows, unrolled_dims};
use super::layout::DKV_KEYS;
use super::{dropout, layout};

/// The dk/dv pass of the backward for padded head dim `dp` (32 or 64) and `threads` (64
/// or 128) threads per workgroup, register-blocked like [`backward_dq`]. A workgroup owns
/// 32 keys of one (batch, kv head) and keeps K^T (pre-scaled by scale * log2(e)) and V^T
/// resident in workgroup memory; it walks the query heads that share the kv head in a
/// fixed order (the grouped-query sum is deterministic without atomics) and, per head,
/// the query tiles of `QT = threads / 4` from the block's first key on (earlier queries
/// see none of its keys; only the tile that crosses the diagonal is masked). With 64
/// threads (QT = 16) the pass fits 32 KiB; with 128 (QT = 32) it needs 42 KiB.
///
/// Per tile, the first half of the threads compute S^T = K Q^T and the other half
/// dP^T = V dO^T, each a 4 keys x 4 queries block (one code path: the half only picks the
/// operands' offsets), so each step reads two vec4s for 16 FMAs. P = exp2(S - lse) and
/// dS = P (dP - delta) (delta from the dq pass) go to workgroup memory as [query][32 keys].
/// Then every thread accumulates 4 keys x `DP / (threads / 8)` dims of dV += P^T dO and
/// dK += dS^T Q: per four queries, eight vec4 reads of P and dS shared by all its dims
/// and one dO and one Q read per dim, each feeding four FMAs.
pub fn backward_dkv(dp: u32, threads: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    assert!(
        threads == 64 || threads == 128,
        "dk/dv pass threads are 64 or 128"
    );
    let qt = threads / 4;
    let cxn = threads / 8;
    let s = Dkv {
        dp,
        threads,
        qt,
        // The queries plus one vec4 of padding, an odd count, so the dims a warp touches
        // (in the accumulation step and in the transposed stores of the tile loads) land
        // in different bank groups.
        ql: qt / 4 + 1,
        half_n: threads / 2,
        cxn,
        na: dp / cxn,
        kt_line: DKV_KEYS / 4,
    };
    let mut w = String::new();
    prologue(&mut w, s);
    query_tile(&mut w, s);
    scores(&mut w, s);
    accumulate(&mut w, s);
    store(&mut w, s);
    w
}

/// The dk/dv pass's sizes (see [`backward_dkv`]), shared by its steps.
#[derive(Clone, Copy)]
struct Dkv {
    dp: u32,
    threads: u32,
    /// Queries per tile.
    qt: u32,
    /// Line of the Q^T and dO^T tiles in vec4s.
    ql: u32,
    /// Threads per half (S^T or dP^T).
    half_n: u32,
    /// Threads along the dims in the accumulation.
    cxn: u32,
    /// Accumulator vec4s per thread.
    na: u32,
    /// Line of the K^T and V^T tiles in vec4s.
    kt_line: u32,
}

/// Writes the declarations, the workgroup arrays and the entry point up to the loop over
/// the query heads: the block's K^T and V^T loaded, the thread's roles, dK and dV zeroed.
fn prologue(w: &mut String, s: Dkv) {
    let (dp, threads, qt, ql, half_n, cxn, kt_line, na) = (
        s.dp, s.threads, s.qt, s.ql, s.half_n, s.cxn, s.kt_line, s.na,
    );
    w.push_str("// Flash-attention backward, dk/dv pass, register-blocked (generated; see attention/bwd_dkv.rs).\n");
    w.push_str(&layout::DKV.declarations());
    dropout::emit_fma_functions(w);
    let block = Block { threads, dp };
    let mut kv_load = String::new();
    let kv_tiles = [
        Tile::new("kv", "k").scaled("p.scale_log2"),
        Tile::new("kv", "v").at(dp * kt_line),
    ];
    let kv_rows = Rows::swizzled(DKV_KEYS, "kvrow", "k0", "p.tq");
    block.load_transposed(&mut kv_load, "    ", kv_rows, &kv_tiles);
    let _ = write!(
        w,
        "

// K^T pre-scaled by scale * log2(e), then V^T: [2][DP][32 keys], swizzled
var<workgroup> kv: array<vec4<f32>, {kv_len}>;
// Q^T, then dO^T: [2][DP][{ql} vec4s] ({qt} queries and a padding vec4)
var<workgroup> qg: array<vec4<f32>, {qg_len}>;
// P, then dS: [2][{qt} queries][32 keys]
var<workgroup> pd: array<vec4<f32>, {pd_len}>;

const LOG2E: f32 = 1.4426950408889634;

@compute @workgroup_size({threads})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
) {{
    // Low key blocks see the most queries; workgroup 0 starts first.
    let kb = wg.x;
    let gh = wg.y;
    let b = wg.z;
    let d = p.d;
    let k0 = kb * {DKV_KEYS}u;
    let kvrow = (b * p.kv_heads + gh) * p.tk_stride;
{kv_load}    // Score phase: half 0 computes S^T, half 1 dP^T, for keys 4 sy .. and queries 4 sx ..
    let half = tid / {half_n}u;
    let sy = tid % 8u;
    let sx = (tid % {half_n}u) / 8u;
    let kvo = half * {dp}u * {kt_line}u;
    let qgo = half * {dp}u * {ql}u;
    let keys = vec4<u32>(k0 + 4u * sy) + vec4<u32>(0u, 1u, 2u, 3u);
    // Accumulation phase: keys 4 ry .., dims cx + {cxn} a.
    let ry = tid % 8u;
    let cx = tid / 8u;
    let group = p.heads / p.kv_heads;
",
        kv_len = 2 * dp * kt_line,
        qg_len = 2 * dp * ql,
        pd_len = 2 * qt * kt_line,
    );
    for a in 0..na {
        let _ = writeln!(
            w,
            "    var dk{a} = vec4<f32>(0.0);\n    var dv{a} = vec4<f32>(0.0);"
        );
    }
}

/// Opens the loops over the query heads of the kv head and their query tiles, loads the
/// tile of Q and dO transposed, and each query's logsumexp or delta.
fn query_tile(w: &mut String, s: Dkv) {
    let (dp, qt, ql, threads) = (s.dp, s.qt, s.ql, s.threads);
    let block = Block { threads, dp };
    let _ = writeln!(
        w,
        "    for (var hh = gh * group; hh < (gh + 1u) * group; hh++) {{
        let head_row = (b * p.heads + hh) * p.tq;
        // Causal: queries before the block's first key see none of its keys; that key is a
        // multiple of the query tile, so no tile straddles it.
        for (var t0 = select(0u, k0, p.causal != 0u); t0 < p.tq; t0 += {qt}u) {{
            workgroupBarrier();"
    );
    let q_tiles = [Tile::new("qg", "q"), Tile::new("qg", "go").at(dp * ql)];
    let q_rows = Rows::padded(qt, "head_row", "t0", "p.tq");
    block.load_transposed(w, "            ", q_rows, &q_tiles);
    let _ = write!(
        w,
        "            // Per query of the block: logsumexp (log2 units) for half 0, delta for half 1.
            // A query past the end gets a logsumexp no score reaches, so its P is 0.
            var rs = vec4<f32>(3.0e38);
            if (half == 1u) {{
                rs = vec4<f32>(0.0);
            }}
            // (Components by name, not a dynamic index, so rs stays in registers.)
{rs_loads}            workgroupBarrier();
            var s0 = vec4<f32>(0.0);
            var s1 = vec4<f32>(0.0);
            var s2 = vec4<f32>(0.0);
            var s3 = vec4<f32>(0.0);
",
        rs_loads = ["x", "y", "z", "w"]
            .iter()
            .enumerate()
            .map(|(jq, comp)| format!(
                "            {{
                let i = t0 + 4u * sx + {jq}u;
                if (i < p.tq) {{
                    if (half == 0u) {{
                        rs.{comp} = lse[head_row + i] * LOG2E;
                    }} else {{
                        rs.{comp} = delta[head_row + i];
                    }}
                }}
            }}
"
            ))
            .collect::<String>(),
    );
}

/// Computes the tile's scores (half 0: S^T, made P in place; half 1: dP^T) and writes P
/// and dS = P (dP - delta) to workgroup memory.
fn scores(w: &mut String, s: Dkv) {
    let (dp, qt, ql, kt_line) = (s.dp, s.qt, s.ql, s.kt_line);
    unrolled_dims(w, "            ", dp, |w, u| {
        let _ = writeln!(
            w,
            "                    let a = kv[kvo + {ka}];
                    let bq = qg[qgo + (c0 + {u}u) * {ql}u + sx];
                    s0 = fma(a, vec4<f32>(bq.x), s0);
                    s1 = fma(a, vec4<f32>(bq.y), s1);
                    s2 = fma(a, vec4<f32>(bq.z), s2);
                    s3 = fma(a, vec4<f32>(bq.w), s3);",
            ka = step_slot(u, kt_line, "sy"),
        );
    });
    let _ = writeln!(
        w,
        "            let i0 = t0 + 4u * sx;
            if (half == 0u) {{"
    );
    for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(w, "                s{j} = exp2(s{j} - rs.{comp});");
    }
    let _ = writeln!(
        w,
        "                // Only tiles that cross the diagonal hold keys after their queries.
                if (p.causal != 0u && t0 < k0 + {last}u) {{",
        last = DKV_KEYS - 1
    );
    for j in 0..4 {
        let _ = writeln!(
            w,
            "                    s{j} = select(vec4<f32>(0.0), s{j}, keys <= vec4<u32>(i0 + {j}u));"
        );
    }
    w.push_str("                }\n");
    for j in 0..4 {
        let _ = writeln!(
            w,
            "                pd[(4u * sx + {j}u) * {kt_line}u + sy] = s{j};"
        );
    }
    // With dropout (`attention/dropout.rs`) half 1 also applies the mask M of its keys:
    // dS = P (M dP - delta), and P becomes P M for dV.
    w.push_str(
        "            }
            workgroupBarrier();
            if (half == 1u) {
                let drop = pipeline_drops();
                var f0 = vec4<f32>(1.0);
                var f1 = vec4<f32>(1.0);
                var f2 = vec4<f32>(1.0);
                var f3 = vec4<f32>(1.0);
                if (drop) {
",
    );
    dropout::emit_factors_rows_by_keys(
        w,
        "                    ",
        "df",
        "head_row + i0",
        "k0 + 4u * sy",
    );
    w.push_str(
        "                    f0 = df0;
                    f1 = df1;
                    f2 = df2;
                    f3 = df3;
                }
",
    );
    for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "                {{
                    let at = (4u * sx + {j}u) * {kt_line}u + sy;
                    let pr = pd[at];
                    if (drop) {{
                        let f = f{j};
                        pd[{o}u + at] = pr * (s{j} * f - rs.{comp});
                        pd[at] = pr * f;
                    }} else {{
                        pd[{o}u + at] = pr * (s{j} - rs.{comp});
                    }}
                }}",
            o = qt * kt_line
        );
    }
    w.push_str("            }\n            workgroupBarrier();\n");
}

/// Accumulates dV += P^T dO and dK += dS^T Q over the tile's queries.
fn accumulate(w: &mut String, s: Dkv) {
    let (dp, qt, ql, cxn, kt_line, na) = (s.dp, s.qt, s.ql, s.cxn, s.kt_line, s.na);
    for i0 in (0..qt).step_by(4) {
        w.push_str("            {\n");
        for u in 0..4 {
            let _ = writeln!(
                w,
                "                let p{u} = pd[{pi}u + ry];\n                let ds{u} = pd[{di}u + ry];",
                pi = (i0 + u) * kt_line,
                di = qt * kt_line + (i0 + u) * kt_line,
            );
        }
        for a in 0..na {
            let _ = writeln!(
                w,
                "                {{
                    let gv = qg[{go}u + (cx + {ca}u) * {ql}u];
                    dv{a} = fma(p0, vec4<f32>(gv.x), dv{a});
                    dv{a} = fma(p1, vec4<f32>(gv.y), dv{a});
                    dv{a} = fma(p2, vec4<f32>(gv.z), dv{a});
                    dv{a} = fma(p3, vec4<f32>(gv.w), dv{a});
                    let qv = qg[{qo}u + (cx + {ca}u) * {ql}u];
                    dk{a} = fma(ds0, vec4<f32>(qv.x), dk{a});
                    dk{a} = fma(ds1, vec4<f32>(qv.y), dk{a});
                    dk{a} = fma(ds2, vec4<f32>(qv.z), dk{a});
                    dk{a} = fma(ds3, vec4<f32>(qv.w), dk{a});
                }}",
                go = dp * ql + i0 / 4,
                qo = i0 / 4,
                ca = cxn * a,
            );
        }
        w.push_str("            }\n");
    }
}

/// Closes the loops and stores the block's dK (times the scale) and dV.
fn store(w: &mut String, s: Dkv) {
    let Dkv { cxn, na, .. } = s;
    w.push_str("        }\n    }\n");
    store_rows(w, "j", "k0", "kvrow", |w, comp| {
        for a in 0..na {
            let _ = writeln!(
                w,
                "            if (cx + {ca}u < d) {{
                dk[base + cx + {ca}u] = dk{a}.{comp} * p.scale;
                dv[base + cx + {ca}u] = dv{a}.{comp};
            }}",
                ca = cxn * a
            );
        }
    });
    w.push_str("}\n");
}
