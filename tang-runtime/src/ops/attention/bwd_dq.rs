//! The dq pass of the register-blocked backward (padded head dims 32 and 64): per query
//! block, dQ and delta = rowsum(dO * O). Tile loads and layout conventions are those of
//! `emit.rs`.

use std::fmt::Write as _;

use super::emit::{
    Block, Rows, Tile, key_tile_loop, query_block_main, slot, step_slot, store_rows, unrolled_dims,
};
use super::layout::{KT_LINE, dq_shared_bytes};
use super::{dropout, layout};

// The small shape must fit the 32 KiB of lavapipe (and most GPUs) at DP = 64, or
// `attention.rs` falls back to the row-per-thread kernels there and CI would stop testing
// these; the large shape must fit NVIDIA's 48 KiB at DP = 64, and fits 32 KiB at DP = 32
// (so CI runs it there).
/// The dq pass of the backward (dq and delta = rowsum(dO * O)) for padded head dim `dp`
/// (32 or 64) and `rows` (32 or 64) query rows per workgroup, register-blocked like
/// [`super::tiled::forward`]: a workgroup of `2 rows` threads walks key tiles of 32; thread `(ry, cx)`
/// (`ry = tid % (rows / 4)`) computes a 4 x 4 block of S = Q K^T and of dP = dO V^T (two
/// vec4 reads feed 16 FMAs each), turns it into dS = P (dP - delta) with P recomputed from
/// the saved logsumexp, stores dS in workgroup memory and accumulates 4 rows x `DP / 8`
/// dims of dQ += dS K. At 32 rows Q, dO, K and V tiles fit 32 KiB; K and V are then read
/// from L2 by twice as many workgroups as at 64 rows.
///
/// delta is computed from the dO tile already in workgroup memory and O read by every
/// thread for its four rows and every eighth dim (the eight partials meet in workgroup
/// memory), not by one thread per row walking all dims of O and dO.
pub fn backward_dq(dp: u32, rows: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    assert!(rows == 32 || rows == 64, "dq pass rows are 32 or 64");
    let nv = dp / 32;
    let ry_n = rows / 4;
    let threads = 2 * rows;
    let vt_len = dq_shared_bytes(dp, rows) / 4 - 2 * dp * rows - dp * KT_LINE * 4;
    let mut w = String::new();
    w.push_str("// Flash-attention backward, dq pass, register-blocked (generated; see attention/bwd_dq.rs).\n");
    w.push_str(&layout::DQ.declarations());
    dropout::emit_fma_functions(&mut w);
    let block = Block { threads, dp };
    let _ = write!(
        w,
        "

// Q^T pre-scaled by scale * log2(e), and dO^T: [DP][{rows} rows], swizzled
var<workgroup> qs: array<vec4<f32>, {rows_len}>;
var<workgroup> gs: array<vec4<f32>, {rows_len}>;
// K^T [DP][32 keys], swizzled
var<workgroup> kt: array<vec4<f32>, {kt_len}>;
// delta partials [8][{rows} rows], then V^T [DP][32 keys] (swizzled), then dS [32 keys][{rows} rows]
var<workgroup> vt: array<vec4<f32>, {vt_len}>;

const LOG2E: f32 = 1.4426950408889634;

",
        rows_len = dp * rows / 4,
        kt_len = dp * KT_LINE,
        vt_len = vt_len / 4,
    );
    query_block_main(&mut w, rows, "");
    let q_tiles = [
        Tile::new("qs", "q").scaled("p.scale_log2"),
        Tile::new("gs", "go"),
    ];
    let q_rows = Rows::swizzled(rows, "head_row", "row0", "p.tq");
    block.load_transposed(&mut w, "    ", q_rows, &q_tiles);
    let _ = write!(
        w,
        "    workgroupBarrier();
    // delta = rowsum(dO * O) of the thread's four rows over dims cx, cx + 8, ...
    var dpart = vec4<f32>(0.0);
    for (var c = cx; c < d; c += 8u) {{
        var ov = vec4<f32>(0.0);
{o_loads}        dpart = fma(gs[c * {ry_n}u + (ry ^ (c % 8u))], ov, dpart);
    }}
    vt[cx * {ry_n}u + ry] = dpart;
    workgroupBarrier();
    var dl = vt[ry];
{dl_sum}    // logsumexp (log2 units) of the thread's four rows
    var lse2 = vec4<f32>(0.0);
{lse_loads}    // Keys the block sees, and the last key each of the thread's rows sees.
    var n_keys = p.tq;
    var lim = vec4<u32>(p.tq - 1u);
    if (p.causal != 0u) {{
        n_keys = min(row0 + {rows}u, p.tq);
        lim = vec4<u32>(row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
    }}
",
        o_loads = ["x", "y", "z", "w"]
            .iter()
            .enumerate()
            .map(|(i, comp)| format!(
                "        if (row0 + 4u * ry + {i}u < p.tq) {{
            ov.{comp} = o[(head_row + row0 + 4u * ry + {i}u) * d + c];
        }}
"
            ))
            .collect::<String>(),
        dl_sum = (1..8)
            .map(|x| format!("    dl += vt[{}u + ry];\n", x * ry_n))
            .collect::<String>(),
        lse_loads = ["x", "y", "z", "w"]
            .iter()
            .enumerate()
            .map(|(i, comp)| format!(
                "    if (row0 + 4u * ry + {i}u < p.tq) {{
        lse2.{comp} = lse[head_row + row0 + 4u * ry + {i}u] * LOG2E;
        if (cx == 0u) {{
            delta[head_row + row0 + 4u * ry + {i}u] = dl.{comp};
        }}
    }}
"
            ))
            .collect::<String>(),
    );
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var a{a} = vec4<f32>(0.0);");
    }
    key_tile_loop(&mut w, block, &[Tile::new("kt", "k"), Tile::new("vt", "v")]);
    w.push_str("        workgroupBarrier();\n");
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        var s{j} = vec4<f32>(0.0);\n        var p{j} = vec4<f32>(0.0);"
        );
    }
    unrolled_dims(&mut w, "        ", dp, |w, u| {
        let _ = writeln!(
            w,
            "                let a = qs[{qa}];
                let ga = gs[{qa}];
                let bk = kt[{kb}];
                let bv = vt[{kb}];",
            qa = step_slot(u, ry_n, "ry"),
            kb = step_slot(u, KT_LINE, "cx"),
        );
        for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "                s{j} = fma(a, vec4<f32>(bk.{comp}), s{j});\n                p{j} = fma(ga, vec4<f32>(bv.{comp}), p{j});"
            );
        }
    });
    w.push_str("        let kj = t0 + 4u * cx;\n");
    // With dropout, dS = P (M dP - delta): the mask scales dP.
    let rows = "head_row + row0 + 4u * ry";
    dropout::emit_rows_by_keys(&mut w, "        ", ["p0", "p1", "p2", "p3"], rows, "kj");
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        s{j} = select(vec4<f32>(0.0), exp2(s{j} - lse2), vec4<u32>(kj + {j}u) <= lim);
        s{j} = s{j} * (p{j} - dl);"
        );
    }
    w.push_str("        workgroupBarrier();\n");
    for j in 0..4 {
        let _ = writeln!(w, "        vt[(4u * cx + {j}u) * {ry_n}u + ry] = s{j};");
    }
    w.push_str("        workgroupBarrier();\n        for (var j0 = 0u; j0 < 32u; j0 += 4u) {\n");
    // Thread cx owns dims 4 (cx + 8 x) + comp, so a warp's K^T reads are 4 dims apart.
    let _ = writeln!(w, "            let kq = j0 / 4u;");
    for u in 0..4 {
        let _ = writeln!(w, "            let ds{u} = vt[(j0 + {u}u) * {ry_n}u + ry];");
    }
    for a in 0..4 * nv {
        let (x, ci) = (a / 4, a % 4);
        let _ = writeln!(
            w,
            "            {{
                let kv = kt[{at}];
                a{a} = fma(ds0, vec4<f32>(kv.x), a{a});
                a{a} = fma(ds1, vec4<f32>(kv.y), a{a});
                a{a} = fma(ds2, vec4<f32>(kv.z), a{a});
                a{a} = fma(ds3, vec4<f32>(kv.w), a{a});
            }}",
            at = slot(
                &format!("4u * (cx + {}u) + {ci}u", 8 * x),
                KT_LINE,
                "kq",
                &format!("(4u * cx + {ci}u) % 8u")
            ),
        );
    }
    w.push_str("        }\n    }\n");
    store_rows(&mut w, "r", "row0", "head_row", |w, comp| {
        for a in 0..4 * nv {
            let (x, ci) = (a / 4, a % 4);
            let _ = writeln!(
                w,
                "            {{
                let c = 4u * (cx + {}u) + {ci}u;
                if (c < d) {{
                    dq[base + c] = a{a}.{comp} * p.scale;
                }}
            }}",
                8 * x
            );
        }
    });
    w.push_str("}\n");
    w
}
