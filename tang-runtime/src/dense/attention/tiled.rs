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
//! naga does not unroll loops, so the inner steps are written out here (8 per loop trip)
//! with every accumulator a separate named variable the driver keeps in registers.

use std::fmt::Write as _;

/// Query rows per workgroup.
pub const ROWS: u32 = 64;
/// Threads per workgroup.
pub const THREADS: u32 = 128;
/// Keys per tile.
const KT: u32 = 32;

/// Bytes of workgroup memory of the forward kernel for padded head dim `dp`.
pub const fn fwd_shared_bytes(dp: u32) -> u32 {
    let kp = if dp * KT > KT * ROWS {
        dp * KT
    } else {
        KT * ROWS
    };
    4 * (dp * ROWS + kp + KT * dp)
}

const PARAMS: &str = "struct Params {
    batch: u32,
    heads: u32,
    kv_heads: u32,
    tq: u32,
    tk_stride: u32,
    past: u32,
    d: u32,
    scale_log2: f32,
    scale: f32,
}
";

/// The forward kernel's WGSL for padded head dim `dp` (32 or 64).
pub fn forward(dp: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let nv = dp / 32;
    let d4 = dp / 4;
    let kp_len = fwd_shared_bytes(dp) / 4 - dp * ROWS - KT * dp;
    let mut w = String::new();
    w.push_str("// Causal flash-attention forward, register-blocked (generated; see attention/tiled.rs).\n");
    w.push_str(PARAMS);
    let _ = write!(
        w,
        "
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

// Q^T pre-scaled by scale * log2(e): [DP][64 rows]
var<workgroup> qs: array<vec4<f32>, {qs}>;
// K^T [DP][32 keys], then the row-max partials [8][64 rows], then P [32 keys][64 rows]
var<workgroup> kp: array<vec4<f32>, {kp}>;
// V [32 keys][DP]
var<workgroup> vs: array<vec4<f32>, {vs}>;

const NEG: f32 = -3.0e38;

@compute @workgroup_size({THREADS})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let ry = tid % 16u;
    let cx = tid / 16u;
    // The last query blocks see the most keys: start them first to shorten the tail.
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let row0 = qb * {ROWS}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
    for (var e = tid; e < {qn}u; e += {THREADS}u) {{
        let r = e % {ROWS}u;
        let c = e / {ROWS}u;
        let i = row0 + r;
        var x = 0.0;
        if (i < p.tq && c < d) {{
            x = q[(head_row + i) * d + c];
        }}
        qs[c * 16u + r / 4u][r % 4u] = x * p.scale_log2;
    }}
    // Keys this block can see at all: every tile past the causal diagonal is skipped.
    let n_keys = p.past + min(row0 + {ROWS}u, p.tq);
    // Last key visible to each of the thread's four rows.
    let lim = vec4<u32>(p.past + row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
    var m = vec4<f32>(-1.0e30);
    var l = vec4<f32>(0.0);
",
        qs = dp * 16,
        kp = kp_len / 4,
        vs = KT * dp / 4,
        qn = ROWS * dp,
    );
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var o{a} = vec4<f32>(0.0);");
    }
    let _ = write!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();
        for (var e = tid; e < {kn}u; e += {THREADS}u) {{
            let j = e % {KT}u;
            let c = e / {KT}u;
            var x = 0.0;
            if (t0 + j < n_keys && c < d) {{
                x = k[(kvrow + t0 + j) * d + c];
            }}
            kp[c * {kt4}u + j / 4u][j % 4u] = x;
        }}
        for (var e = tid; e < {kn}u; e += {THREADS}u) {{
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
        var s3 = vec4<f32>(0.0);
        for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{
",
        kn = KT * dp,
        kt4 = KT / 4,
    );
    for u in 0..8 {
        let _ = writeln!(
            w,
            "            {{
                let a = qs[(c0 + {u}u) * 16u + ry];
                let bk = kp[(c0 + {u}u) * {kt4}u + cx];
                s0 = fma(a, vec4<f32>(bk.x), s0);
                s1 = fma(a, vec4<f32>(bk.y), s1);
                s2 = fma(a, vec4<f32>(bk.z), s2);
                s3 = fma(a, vec4<f32>(bk.w), s3);
            }}",
            kt4 = KT / 4
        );
    }
    w.push_str(
        "        }
        // Only tiles that cross the diagonal (or the end of the keys) need the mask.
        if (t0 + 31u > p.past + row0) {
            let kj = t0 + 4u * cx;
            s0 = select(vec4<f32>(NEG), s0, vec4<u32>(kj) <= lim);
            s1 = select(vec4<f32>(NEG), s1, vec4<u32>(kj + 1u) <= lim);
            s2 = select(vec4<f32>(NEG), s2, vec4<u32>(kj + 2u) <= lim);
            s3 = select(vec4<f32>(NEG), s3, vec4<u32>(kj + 3u) <= lim);
        }
        workgroupBarrier();
        kp[cx * 16u + ry] = max(max(s0, s1), max(s2, s3));
        workgroupBarrier();
        var mn = m;
",
    );
    for c in 0..8 {
        let _ = writeln!(w, "        mn = max(mn, kp[{}u + ry]);", c * 16);
    }
    w.push_str(
        "        let alpha = exp2(m - mn);
        m = mn;
        s0 = exp2(s0 - mn);
        s1 = exp2(s1 - mn);
        s2 = exp2(s2 - mn);
        s3 = exp2(s3 - mn);
        l = l * alpha + ((s0 + s1) + (s2 + s3));
",
    );
    for a in 0..4 * nv {
        let _ = writeln!(w, "        o{a} *= alpha;");
    }
    w.push_str(
        "        workgroupBarrier();
        kp[(4u * cx) * 16u + ry] = s0;
        kp[(4u * cx + 1u) * 16u + ry] = s1;
        kp[(4u * cx + 2u) * 16u + ry] = s2;
        kp[(4u * cx + 3u) * 16u + ry] = s3;
        workgroupBarrier();
        for (var j0 = 0u; j0 < 32u; j0 += 8u) {
",
    );
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
    w.push_str(
        "        }
    }
    // Combine the per-thread partial row sums.
    workgroupBarrier();
    kp[cx * 16u + ry] = l;
    workgroupBarrier();
    var lt = vec4<f32>(0.0);
",
    );
    for c in 0..8 {
        let _ = writeln!(w, "    lt += kp[{}u + ry];", c * 16);
    }
    w.push_str("    let inv = 1.0 / lt;\n");
    for (i, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "    {{
        let i = row0 + 4u * ry + {i}u;
        if (i < p.tq) {{
            let base = (head_row + i) * d;"
        );
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
            }}
        }}
    }}"
        );
    }
    w.push_str("}\n");
    w
}

/// Query rows per workgroup of the dq pass.
pub const DQ_ROWS: u32 = 32;
/// Threads per workgroup of the dq pass.
pub const DQ_THREADS: u32 = 64;
/// Line of the K^T tile in vec4s (the 32 keys). Not padded: one more vec4 per line would
/// spread the dS K reads over more banks but take the kernel past 32 KiB at DP = 64.
const KT_LINE: u32 = 8;

/// Bytes of workgroup memory of the dq pass for padded head dim `dp`.
pub const fn dq_shared_bytes(dp: u32) -> u32 {
    // Q^T and dO^T [dp][32 rows], K^T [dp][32 keys], V^T then dS (dS needs 32 x 32)
    let vt = if dp * KT > KT * DQ_ROWS {
        dp * KT
    } else {
        KT * DQ_ROWS
    };
    4 * (2 * dp * DQ_ROWS + dp * KT_LINE * 4 + vt)
}

// Both kernels must fit the 32 KiB of lavapipe (and most GPUs), or `attention.rs` falls
// back to the row-per-thread kernels there and CI would stop testing these.
const _: () = assert!(fwd_shared_bytes(64) <= 32 * 1024 && dq_shared_bytes(64) <= 32 * 1024);

/// The dq pass of the backward (dq and delta = rowsum(dO * O)) for padded head dim `dp`
/// (32 or 64), register-blocked like [`forward`]: a workgroup of 64 threads owns 32 query
/// rows and walks key tiles of 32; thread `(ry, cx)` (`ry = tid % 8`) computes a 4 x 4
/// block of S = Q K^T and of dP = dO V^T (two vec4 reads feed 16 FMAs each), turns it
/// into dS = P (dP - delta) with P recomputed from the saved logsumexp, stores dS in
/// workgroup memory and accumulates 4 rows x `DP / 8` dims of dQ += dS K. The smaller
/// block (32 rows) keeps Q, dO, K and V tiles within 32 KiB; K and V are read from L2 by
/// twice as many workgroups, which is cheap next to the arithmetic.
pub fn backward_dq(dp: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let nv = dp / 32;
    let vt_len = dq_shared_bytes(dp) / 4 - 2 * dp * DQ_ROWS - dp * KT_LINE * 4;
    let mut w = String::new();
    w.push_str("// Causal flash-attention backward, dq pass, register-blocked (generated; see attention/tiled.rs).\n");
    w.push_str(PARAMS);
    let _ = write!(
        w,
        "
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> o: array<f32>;
@group(0) @binding(5) var<storage, read> go: array<f32>;
@group(0) @binding(6) var<storage, read> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;
@group(0) @binding(8) var<storage, read_write> delta: array<f32>;

// Q^T pre-scaled by scale * log2(e), and dO^T: [DP][32 rows]
var<workgroup> qs: array<vec4<f32>, {rows_len}>;
var<workgroup> gs: array<vec4<f32>, {rows_len}>;
// K^T [DP][32 keys]
var<workgroup> kt: array<vec4<f32>, {kt_len}>;
// V^T [DP][32 keys], then dS [32 keys][32 rows]
var<workgroup> vt: array<vec4<f32>, {vt_len}>;

const LOG2E: f32 = 1.4426950408889634;

@compute @workgroup_size({DQ_THREADS})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let ry = tid % 8u;
    let cx = tid / 8u;
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let row0 = qb * {DQ_ROWS}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
    for (var e = tid; e < {qn}u; e += {DQ_THREADS}u) {{
        let r = e % {DQ_ROWS}u;
        let c = e / {DQ_ROWS}u;
        let i = row0 + r;
        var x = 0.0;
        var y = 0.0;
        if (i < p.tq && c < d) {{
            x = q[(head_row + i) * d + c];
            y = go[(head_row + i) * d + c];
        }}
        qs[c * 8u + r / 4u][r % 4u] = x * p.scale_log2;
        gs[c * 8u + r / 4u][r % 4u] = y;
    }}
    // delta and logsumexp (log2 units) of the thread's four rows
    var dl = vec4<f32>(0.0);
    var lse2 = vec4<f32>(0.0);
    for (var i = 0u; i < 4u; i++) {{
        let r = row0 + 4u * ry + i;
        if (r < p.tq) {{
            let base = (head_row + r) * d;
            var acc = 0.0;
            for (var c = 0u; c < d; c++) {{
                acc = fma(go[base + c], o[base + c], acc);
            }}
            dl[i] = acc;
            lse2[i] = lse[head_row + r] * LOG2E;
            if (cx == 0u) {{
                delta[head_row + r] = acc;
            }}
        }}
    }}
    let n_keys = min(row0 + {DQ_ROWS}u, p.tq);
    let lim = vec4<u32>(row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
",
        rows_len = dp * DQ_ROWS / 4,
        kt_len = dp * KT_LINE,
        vt_len = vt_len / 4,
        qn = DQ_ROWS * dp,
    );
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var a{a} = vec4<f32>(0.0);");
    }
    let _ = write!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();
        for (var e = tid; e < {kn}u; e += {DQ_THREADS}u) {{
            let j = e % {KT}u;
            let c = e / {KT}u;
            var x = 0.0;
            var y = 0.0;
            if (t0 + j < n_keys && c < d) {{
                x = k[(kvrow + t0 + j) * d + c];
                y = v[(kvrow + t0 + j) * d + c];
            }}
            kt[c * {KT_LINE}u + j / 4u][j % 4u] = x;
            vt[c * 8u + j / 4u][j % 4u] = y;
        }}
        workgroupBarrier();
",
        kn = KT * dp,
    );
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        var s{j} = vec4<f32>(0.0);\n        var p{j} = vec4<f32>(0.0);"
        );
    }
    let _ = writeln!(w, "        for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{");
    for u in 0..8 {
        let _ = writeln!(
            w,
            "            {{
                let a = qs[(c0 + {u}u) * 8u + ry];
                let ga = gs[(c0 + {u}u) * 8u + ry];
                let bk = kt[(c0 + {u}u) * {KT_LINE}u + cx];
                let bv = vt[(c0 + {u}u) * 8u + cx];"
        );
        for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "                s{j} = fma(a, vec4<f32>(bk.{comp}), s{j});\n                p{j} = fma(ga, vec4<f32>(bv.{comp}), p{j});"
            );
        }
        w.push_str("            }\n");
    }
    w.push_str("        }\n        let kj = t0 + 4u * cx;\n");
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        s{j} = select(vec4<f32>(0.0), exp2(s{j} - lse2), vec4<u32>(kj + {j}u) <= lim);
        s{j} = s{j} * (p{j} - dl);"
        );
    }
    w.push_str("        workgroupBarrier();\n");
    for j in 0..4 {
        let _ = writeln!(w, "        vt[(4u * cx + {j}u) * 8u + ry] = s{j};");
    }
    w.push_str("        workgroupBarrier();\n        for (var j0 = 0u; j0 < 32u; j0 += 4u) {\n");
    // Thread cx owns dims 4 (cx + 8 x) + comp, so a warp's K^T reads are 4 dims apart.
    let _ = writeln!(w, "            let kq = j0 / 4u;");
    for u in 0..4 {
        let _ = writeln!(w, "            let ds{u} = vt[(j0 + {u}u) * 8u + ry];");
    }
    for a in 0..4 * nv {
        let (x, ci) = (a / 4, a % 4);
        let _ = writeln!(
            w,
            "            {{
                let kv = kt[(4u * (cx + {}u) + {ci}u) * {KT_LINE}u + kq];
                a{a} = fma(ds0, vec4<f32>(kv.x), a{a});
                a{a} = fma(ds1, vec4<f32>(kv.y), a{a});
                a{a} = fma(ds2, vec4<f32>(kv.z), a{a});
                a{a} = fma(ds3, vec4<f32>(kv.w), a{a});
            }}",
            8 * x
        );
    }
    w.push_str("        }\n    }\n");
    for (i, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "    {{
        let r = row0 + 4u * ry + {i}u;
        if (r < p.tq) {{
            let base = (head_row + r) * d;"
        );
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
        w.push_str("        }\n    }\n");
    }
    w.push_str("}\n");
    w
}

/// Keys per workgroup of the dk/dv pass.
pub const DKV_KEYS: u32 = 32;
/// Threads per workgroup of the dk/dv pass.
pub const DKV_THREADS: u32 = 64;
/// Queries per tile of the dk/dv pass.
const DKV_QT: u32 = 16;
/// Line of the Q^T and dO^T tiles in vec4s: the 16 queries plus one vec4 of padding, so
/// the four dims a warp reads in the accumulation step (`cx .. cx + 4`, 5 vec4s apart)
/// land in four different bank groups.
const DKV_QL: u32 = DKV_QT / 4 + 1;

/// Bytes of workgroup memory of the dk/dv pass for padded head dim `dp`.
pub const fn dkv_shared_bytes(dp: u32) -> u32 {
    // K^T and V^T [dp][32 keys], Q^T and dO^T [dp][QL vec4s], P and dS [16 queries][32 keys]
    4 * (2 * dp * DKV_KEYS + 2 * dp * DKV_QL * 4 + 2 * DKV_QT * DKV_KEYS)
}

// The dk/dv pass must fit the same 32 KiB as the others. This is what sets its query tile
// at 16: with 32 queries the Q and dO tiles alone would take the kernel to 40 KiB at
// DP = 64, since K and V stay resident for the whole pass.
const _: () = assert!(dkv_shared_bytes(64) <= 32 * 1024);

/// The dk/dv pass of the backward for padded head dim `dp` (32 or 64), register-blocked
/// like [`backward_dq`]. A workgroup of 64 threads owns 32 keys of one (batch, kv head) and
/// keeps K^T (pre-scaled by scale * log2(e)) and V^T resident in workgroup memory; it walks
/// the query heads that share the kv head in a fixed order (the grouped-query sum is
/// deterministic without atomics) and, per head, the query tiles of 16 from the block's
/// first key on (earlier queries see none of its keys; only the tiles that cross the
/// diagonal are masked).
///
/// Per tile, the first 32 threads compute S^T = K Q^T and the other 32 dP^T = V dO^T, each
/// a 4 keys x 4 queries block (one code path: the half only picks the operands' offsets),
/// so each step reads two vec4s for 16 FMAs, where a 4 x 2 block per thread over 64
/// threads would read four for the same work. P = exp2(S - lse) and dS = P (dP - delta)
/// (delta from the dq pass) go to workgroup memory as [query][32 keys]. Then every thread
/// accumulates 4 keys x `DP / 8` dims of dV += P^T dO and dK += dS^T Q: per four queries,
/// eight vec4 reads of P and dS shared by all its dims and one dO and one Q read per dim,
/// each feeding four FMAs.
pub fn backward_dkv(dp: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let na = dp / 8;
    let kt_line = DKV_KEYS / 4;
    let mut w = String::new();
    w.push_str("// Causal flash-attention backward, dk/dv pass, register-blocked (generated; see attention/tiled.rs).\n");
    w.push_str(PARAMS);
    let _ = write!(
        w,
        "
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> go: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

// K^T pre-scaled by scale * log2(e), then V^T: [2][DP][32 keys]
var<workgroup> kv: array<vec4<f32>, {kv_len}>;
// Q^T, then dO^T: [2][DP][{ql} vec4s] (16 queries and a padding vec4)
var<workgroup> qg: array<vec4<f32>, {qg_len}>;
// P, then dS: [2][16 queries][32 keys]
var<workgroup> pd: array<vec4<f32>, {pd_len}>;

const LOG2E: f32 = 1.4426950408889634;

@compute @workgroup_size({DKV_THREADS})
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
    for (var e = tid; e < {kn}u; e += {DKV_THREADS}u) {{
        let j = e % {DKV_KEYS}u;
        let c = e / {DKV_KEYS}u;
        var x = 0.0;
        var y = 0.0;
        if (k0 + j < p.tq && c < d) {{
            x = k[(kvrow + k0 + j) * d + c];
            y = v[(kvrow + k0 + j) * d + c];
        }}
        kv[c * {kt_line}u + j / 4u][j % 4u] = x * p.scale_log2;
        kv[{dp}u * {kt_line}u + c * {kt_line}u + j / 4u][j % 4u] = y;
    }}
    // Score phase: half 0 computes S^T, half 1 dP^T, for keys 4 sy .. and queries 4 sx ..
    let half = tid / 32u;
    let sy = tid % 8u;
    let sx = (tid % 32u) / 8u;
    let kvo = half * {dp}u * {kt_line}u;
    let qgo = half * {dp}u * {DKV_QL}u;
    let keys = vec4<u32>(k0 + 4u * sy) + vec4<u32>(0u, 1u, 2u, 3u);
    // Accumulation phase: keys 4 ry .., dims cx + 8 a.
    let ry = tid % 8u;
    let cx = tid / 8u;
    let group = p.heads / p.kv_heads;
",
        kv_len = 2 * dp * kt_line,
        ql = DKV_QL,
        qg_len = 2 * dp * DKV_QL,
        pd_len = 2 * DKV_QT * kt_line,
        kn = DKV_KEYS * dp,
    );
    for a in 0..na {
        let _ = writeln!(
            w,
            "    var dk{a} = vec4<f32>(0.0);\n    var dv{a} = vec4<f32>(0.0);"
        );
    }
    let _ = write!(
        w,
        "    for (var hh = gh * group; hh < (gh + 1u) * group; hh++) {{
        let head_row = (b * p.heads + hh) * p.tq;
        // The block's first key is a multiple of the query tile, so no tile straddles it.
        for (var t0 = k0; t0 < p.tq; t0 += {DKV_QT}u) {{
            workgroupBarrier();
            for (var e = tid; e < {qn}u; e += {DKV_THREADS}u) {{
                let r = e % {DKV_QT}u;
                let c = e / {DKV_QT}u;
                let i = t0 + r;
                var x = 0.0;
                var y = 0.0;
                if (i < p.tq && c < d) {{
                    x = q[(head_row + i) * d + c];
                    y = go[(head_row + i) * d + c];
                }}
                qg[c * {DKV_QL}u + r / 4u][r % 4u] = x;
                qg[{dp}u * {DKV_QL}u + c * {DKV_QL}u + r / 4u][r % 4u] = y;
            }}
            // Per query of the block: logsumexp (log2 units) for half 0, delta for half 1.
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
            for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{
",
        qn = DKV_QT * dp,
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
    for u in 0..8 {
        let _ = writeln!(
            w,
            "                {{
                    let a = kv[kvo + (c0 + {u}u) * {kt_line}u + sy];
                    let bq = qg[qgo + (c0 + {u}u) * {DKV_QL}u + sx];
                    s0 = fma(a, vec4<f32>(bq.x), s0);
                    s1 = fma(a, vec4<f32>(bq.y), s1);
                    s2 = fma(a, vec4<f32>(bq.z), s2);
                    s3 = fma(a, vec4<f32>(bq.w), s3);
                }}"
        );
    }
    let _ = writeln!(
        w,
        "            }}
            let i0 = t0 + 4u * sx;
            if (half == 0u) {{"
    );
    for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(w, "                s{j} = exp2(s{j} - rs.{comp});");
    }
    let _ = writeln!(
        w,
        "                // Only tiles that cross the diagonal hold keys after their queries.
                if (t0 < k0 + {last}u) {{",
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
    w.push_str("            }\n            workgroupBarrier();\n            if (half == 1u) {\n");
    for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "                pd[{o}u + (4u * sx + {j}u) * {kt_line}u + sy] = pd[(4u * sx + {j}u) * {kt_line}u + sy] * (s{j} - rs.{comp});",
            o = DKV_QT * kt_line
        );
    }
    w.push_str("            }\n            workgroupBarrier();\n");
    for i0 in (0..DKV_QT).step_by(4) {
        w.push_str("            {\n");
        for u in 0..4 {
            let _ = writeln!(
                w,
                "                let p{u} = pd[{pi}u + ry];\n                let ds{u} = pd[{di}u + ry];",
                pi = (i0 + u) * kt_line,
                di = DKV_QT * kt_line + (i0 + u) * kt_line,
            );
        }
        for a in 0..na {
            let _ = writeln!(
                w,
                "                {{
                    let gv = qg[{go}u + (cx + {c8}u) * {DKV_QL}u];
                    dv{a} = fma(p0, vec4<f32>(gv.x), dv{a});
                    dv{a} = fma(p1, vec4<f32>(gv.y), dv{a});
                    dv{a} = fma(p2, vec4<f32>(gv.z), dv{a});
                    dv{a} = fma(p3, vec4<f32>(gv.w), dv{a});
                    let qv = qg[{qo}u + (cx + {c8}u) * {DKV_QL}u];
                    dk{a} = fma(ds0, vec4<f32>(qv.x), dk{a});
                    dk{a} = fma(ds1, vec4<f32>(qv.y), dk{a});
                    dk{a} = fma(ds2, vec4<f32>(qv.z), dk{a});
                    dk{a} = fma(ds3, vec4<f32>(qv.w), dk{a});
                }}",
                go = dp * DKV_QL + i0 / 4,
                qo = i0 / 4,
                c8 = 8 * a,
            );
        }
        w.push_str("            }\n");
    }
    w.push_str("        }\n    }\n");
    for (i, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "    {{
        let j = k0 + 4u * ry + {i}u;
        if (j < p.tq) {{
            let base = (kvrow + j) * d;"
        );
        for a in 0..na {
            let _ = writeln!(
                w,
                "            if (cx + {c8}u < d) {{
                dk[base + cx + {c8}u] = dk{a}.{comp} * p.scale;
                dv[base + cx + {c8}u] = dv{a}.{comp};
            }}",
                c8 = 8 * a
            );
        }
        w.push_str("        }\n    }\n");
    }
    w.push_str("}\n");
    w
}
