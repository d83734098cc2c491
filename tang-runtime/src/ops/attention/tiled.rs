//! Generated register-blocked kernels (forward, dq pass, dk/dv pass) for padded head dims
//! 32 and 64. The forward:
//!
//! A workgroup of 128 threads owns 64 query rows of one (batch, head) and walks the keys
//! in tiles of 32. Thread `(ry, cx)` (`ry = tid % 16`, `cx = tid / 16`) owns query rows
//! `4 ry .. 4 ry + 4` and, per tile, keys `4 cx .. 4 cx + 4` of S and head dims
//! `4 NV cx .. 4 NV (cx + 1)` of O (`NV = DP / 32` vec4s). Every accumulator is a `vec4`
//! over the thread's four rows, so each step of both micro-matmuls is outer products of
//! `vec4` reads from workgroup memory: per head dim, one Q read (`qs` is `[DP][64 rows]`)
//! and one K read (`kp` is `[DP][32 keys]`) feed 16 FMAs; per key, one P read
//! (`[32 keys][64 rows]`) and `NV` V reads feed `16 NV` FMAs. That is 4 to 8 FMAs per
//! vec4 load instead of the 1 of a row-per-thread kernel, so the FMA units, not the
//! workgroup-memory pipe, are the limit on NVIDIA.
//!
//! Lanes vary `ry` fastest, so within a warp the 16 threads that share a key column read
//! 16 consecutive vec4s of Q or P (no bank conflicts) and the K and V reads are broadcasts,
//! and the transposed store of P is conflict-free.
//!
//! The row maximum of the online softmax is combined across the 8 threads that share a
//! row through workgroup memory (portable: no subgroup feature or subgroup size assumed);
//! the row sums stay per-thread partials, rescaled with the same factors, and are combined
//! once at the end. The K tile, the row-max partials and P share one buffer (`kp`), which
//! keeps the kernel at 32 KiB of workgroup memory for DP = 64 (the lavapipe limit; NVIDIA
//! has 48 KiB) at the price of two extra barriers per tile.
//!
//! Every tile is read from global memory with the lanes of a warp on consecutive dims
//! (coalesced) and stored transposed into workgroup memory; see `Block::load_transposed` in
//! `emit.rs` for how the stores avoid bank conflicts (and the XOR swizzle its readers undo).
//!
//! naga does not unroll loops, so the inner steps are written out here (8 per loop trip)
//! with every accumulator a separate named variable the driver keeps in registers.

use std::fmt::Write as _;

use super::emit::{
    Block, Rows, Tile, key_tile_loop, query_block_main, step_slot, store_rows, unrolled_dims,
};
use super::layout::{KT, ROWS, THREADS, fwd_shared_bytes};
use super::{dropout, layout};

/// The forward kernel's WGSL for padded head dim `dp` (32 or 64).
pub fn forward(dp: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let nv = dp / 32;
    let kp_len = fwd_shared_bytes(dp) / 4 - dp * ROWS - KT * dp;
    let mut w = String::new();
    w.push_str(
        "// Flash-attention forward, register-blocked (generated; see attention/tiled.rs).\n",
    );
    w.push_str(&layout::FWD.declarations());
    dropout::emit_fma_functions(&mut w);
    let _ = write!(
        w,
        "

// Q^T pre-scaled by scale * log2(e): [DP][64 rows]
var<workgroup> qs: array<vec4<f32>, {qs}>;
// K^T [DP][32 keys], then the row-max partials [8][64 rows], then P [32 keys][64 rows]
var<workgroup> kp: array<vec4<f32>, {kp}>;
// V [32 keys][DP]
var<workgroup> vs: array<vec4<f32>, {vs}>;

",
        qs = dp * 16,
        kp = kp_len / 4,
        vs = KT * dp / 4,
    );
    forward_prologue(&mut w, dp);
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var o{a} = vec4<f32>(0.0);");
    }
    let block = Block {
        threads: THREADS,
        dp,
    };
    key_tile_loop(&mut w, block, &[Tile::new("kp", "k")]);
    let _ = writeln!(
        w,
        "        for (var e = tid; e < {kn}u; e += {THREADS}u) {{
            let c = e % {dp}u;
            let j = e / {dp}u;
            var x = 0.0;
            if (t0 + j < n_keys && c < d) {{
                x = v[(kvrow + t0 + j) * d + c];
            }}
            vs[j * {d4}u + c / 4u][c % 4u] = x;
        }}
        workgroupBarrier();
        var s0 = vec4<f32>(0.0);
        var s1 = vec4<f32>(0.0);
        var s2 = vec4<f32>(0.0);
        var s3 = vec4<f32>(0.0);",
        kn = KT * dp,
        d4 = dp / 4,
    );
    unrolled_dims(&mut w, "        ", dp, |w, u| {
        let _ = writeln!(
            w,
            "                let a = qs[{qa}];
                let bk = kp[{kb}];
                s0 = fma(a, vec4<f32>(bk.x), s0);
                s1 = fma(a, vec4<f32>(bk.y), s1);
                s2 = fma(a, vec4<f32>(bk.z), s2);
                s3 = fma(a, vec4<f32>(bk.w), s3);",
            qa = step_slot(u, ROWS / 4, "ry"),
            kb = step_slot(u, KT / 4, "cx"),
        );
    });
    w.push_str(
        "        // Only tiles that cross the thread's diagonal (or the end of the keys) need the mask.
        if (t0 + 31u > lim.x) {
            let kj = t0 + 4u * cx;
            s0 = select(vec4<f32>(NEG), s0, vec4<u32>(kj) <= lim);
            s1 = select(vec4<f32>(NEG), s1, vec4<u32>(kj + 1u) <= lim);
            s2 = select(vec4<f32>(NEG), s2, vec4<u32>(kj + 2u) <= lim);
            s3 = select(vec4<f32>(NEG), s3, vec4<u32>(kj + 3u) <= lim);
        }
        workgroupBarrier();
",
    );
    online_softmax(&mut w, nv, "kp", 4);
    let rows = "head_row + row0 + 4u * ry";
    dropout::emit_rows_by_keys(
        &mut w,
        "        ",
        ["s0", "s1", "s2", "s3"],
        rows,
        "t0 + 4u * cx",
    );
    w.push_str(
        "        workgroupBarrier();
        kp[(4u * cx) * 16u + ry] = s0;
        kp[(4u * cx + 1u) * 16u + ry] = s1;
        kp[(4u * cx + 2u) * 16u + ry] = s2;
        kp[(4u * cx + 3u) * 16u + ry] = s3;
        workgroupBarrier();
",
    );
    accumulate_pv(&mut w, dp, KT);
    w.push_str("    }\n");
    forward_epilogue(&mut w, nv, "kp");
    w
}

/// Emits the forward's entry point up to its key loop, the same in both tile shapes: the
/// block's query rows and kv head, the Q tile (`qs`, Q^T `[dp][64 rows]`, swizzled,
/// pre-scaled by scale * log2(e) so the scores come out in log2 units), the causal limits
/// and the online-softmax state `m`, `l` of the thread's four rows.
pub(super) fn forward_prologue(w: &mut String, dp: u32) {
    w.push_str("const NEG: f32 = -3.0e38;\n\n");
    let note =
        "    // The last query blocks see the most keys: start them first to shorten the tail.\n";
    query_block_main(w, ROWS, note);
    let block = Block {
        threads: THREADS,
        dp,
    };
    let q_rows = Rows::swizzled(ROWS, "head_row", "row0", "p.tq");
    block.load_transposed(
        w,
        "    ",
        q_rows,
        &[Tile::new("qs", "q").scaled("p.scale_log2")],
    );
    let _ = write!(
        w,
        "    // Keys this block can see at all (causal: every tile past the diagonal is skipped),
    // and the last key visible to each of the thread's four rows.
    var n_keys = p.tq;
    var lim = vec4<u32>(p.tq - 1u);
    if (p.causal != 0u) {{
        n_keys = p.past + min(row0 + {ROWS}u, p.tq);
        lim = vec4<u32>(p.past + row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
    }}
    var m = vec4<f32>(-1.0e30);
    var l = vec4<f32>(0.0);
"
    );
}

/// `(({s0} op {s1}) op ({s2} op {s3})) ..`: the pairwise tree of `n` (a power of two)
/// scores `s0 ..` under the WGSL operator `op` (`"max"` or `"+"`).
fn pairwise(first: u32, n: u32, op: &str) -> String {
    if n == 1 {
        return format!("s{first}");
    }
    let (a, b) = (
        pairwise(first, n / 2, op),
        pairwise(first + n / 2, n / 2, op),
    );
    if op == "+" {
        format!("({a} + {b})")
    } else {
        format!("{op}({a}, {b})")
    }
}

/// Emits the forward's online-softmax update for the thread's `n` score vec4s `s0 ..`:
/// the row maxima meet across the 8 threads of a row in `scratch` (the caller has put a
/// barrier before), then `m` moves to the new maximum, the scores become `exp2(s - m)`,
/// and the row sums `l` and the `4 nv` output accumulators `o0 ..` are rescaled.
pub(super) fn online_softmax(w: &mut String, nv: u32, scratch: &str, n: u32) {
    let _ = writeln!(
        w,
        "        {scratch}[cx * 16u + ry] = {};
        workgroupBarrier();
        var mn = m;",
        pairwise(0, n, "max")
    );
    for c in 0..8 {
        let _ = writeln!(w, "        mn = max(mn, {scratch}[{}u + ry]);", c * 16);
    }
    w.push_str("        let alpha = exp2(m - mn);\n        m = mn;\n");
    for j in 0..n {
        let _ = writeln!(w, "        s{j} = exp2(s{j} - mn);");
    }
    let _ = writeln!(w, "        l = l * alpha + {};", pairwise(0, n, "+"));
    for a in 0..4 * nv {
        let _ = writeln!(w, "        o{a} *= alpha;");
    }
}

/// Emits O += P V over a tile of `keys` keys: P `[keys][64 rows]` in `kp`, V
/// `[keys][dp]` in `vs`, each P read feeding `4 nv` vec4 FMAs.
pub(super) fn accumulate_pv(w: &mut String, dp: u32, keys: u32) {
    let (nv, d4) = (dp / 32, dp / 4);
    let _ = writeln!(w, "        for (var j0 = 0u; j0 < {keys}u; j0 += 8u) {{");
    for u in 0..8 {
        let _ = writeln!(
            w,
            "            {{\n                let pa = kp[(j0 + {u}u) * 16u + ry];"
        );
        for x in 0..nv {
            let _ = writeln!(
                w,
                "                let v{x} = vs[(j0 + {u}u) * {d4}u + {nv}u * cx + {x}u];"
            );
            for (ci, comp) in ["x", "y", "z", "w"].iter().enumerate() {
                let a = 4 * x + ci as u32;
                let _ = writeln!(
                    w,
                    "                o{a} = fma(pa, vec4<f32>(v{x}.{comp}), o{a});"
                );
            }
        }
        w.push_str("            }\n");
    }
    w.push_str("        }\n");
}

/// Emits the forward's end after its key loop: the per-thread partial row sums combined
/// through `scratch`, then O (accumulators `o0 ..`, `4 nv` of them, over dims
/// `4 (nv cx + x) ..`) divided by the row sums, and the natural-log logsumexp of each row
/// from the running maximum `m` and the sum `lt`, both in log2 units.
pub(super) fn forward_epilogue(w: &mut String, nv: u32, scratch: &str) {
    let _ = writeln!(
        w,
        "    // Combine the per-thread partial row sums.
    workgroupBarrier();
    {scratch}[cx * 16u + ry] = l;
    workgroupBarrier();
    var lt = vec4<f32>(0.0);"
    );
    for c in 0..8 {
        let _ = writeln!(w, "    lt += {scratch}[{}u + ry];", c * 16);
    }
    w.push_str("    let inv = 1.0 / lt;\n");
    store_rows(w, "i", "row0", "head_row", |w, comp| {
        for a in 0..4 * nv {
            let (x, ci) = (a / 4, a % 4);
            let _ = writeln!(
                w,
                "            {{
                let c = 4u * ({nv}u * cx + {x}u) + {ci}u;
                if (c < d) {{
                    o[base + c] = o{a}.{comp} * inv.{comp};
                }}
            }}"
            );
        }
        let _ = writeln!(
            w,
            "            if (cx == 0u) {{
                // natural-log logsumexp (m and log2(l) are in log2 units)
                lse[head_row + i] = (m.{comp} + log2(lt.{comp})) * 0.6931471805599453;
            }}"
        );
    });
    w.push_str("}\n");
}
