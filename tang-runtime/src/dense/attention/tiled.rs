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
//! (coalesced) and stored transposed into workgroup memory; see [`load_transposed`] for
//! how the stores avoid bank conflicts (and the XOR swizzle its readers undo).
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
/// Keys per tile of the forward in this (small) shape.
pub const FWD_KEYS: u32 = KT;

/// Bytes of workgroup memory of the forward kernel for padded head dim `dp`.
pub const fn fwd_shared_bytes(dp: u32) -> u32 {
    let kp = if dp * KT > KT * ROWS {
        dp * KT
    } else {
        KT * ROWS
    };
    4 * (dp * ROWS + kp + KT * dp)
}

/// The uniforms every kernel here reads (`Params` of `attention.rs`).
pub(super) const PARAMS: &str = "struct Params {
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

/// One tile that [`load_transposed`] fills: the workgroup array, its first vec4, the
/// global buffer and what to multiply each value by (`1.0` for nothing).
struct Tile<'a> {
    dst: &'a str,
    off: String,
    src: &'a str,
    scale: &'a str,
}

/// Emits a loop that copies `rows` rows of `dp` (padded) dims from global memory into
/// workgroup tiles stored transposed, `[dp][line vec4s]` with row `r` at component
/// `r % 4` of vec4 `r / 4`. `row` is the global row of local row `r` and `row_ok` says
/// whether it exists (both WGSL expressions in `r`).
///
/// Coalescing: the 32 lanes of a warp cover 8 consecutive dims of 4 consecutive rows, so
/// each global load instruction reads four full 32-byte sectors; the older mapping (rows
/// fastest) read one float from each of 32 rows. The transposed stores then put the 8
/// dims of a warp 4 (or more) vec4s apart: with an odd `line` (padded tiles) they fall
/// in 8 different bank groups; with `swizzle` (tiles with 8 or 16 vec4s per line, which
/// have no room for padding in 32 KiB), the vec4 slot is XORed with `c % 8`, which does
/// the same. Readers of a swizzled tile must apply the same XOR (see [`slot`]).
#[allow(clippy::too_many_arguments)]
fn load_transposed(
    w: &mut String,
    ind: &str,
    threads: u32,
    rows: u32,
    dp: u32,
    line: u32,
    swizzle: bool,
    row: &str,
    row_ok: &str,
    tiles: &[Tile],
) {
    assert!(
        rows.is_multiple_of(4)
            && dp.is_multiple_of(8)
            && (rows * dp).is_multiple_of(threads)
            && threads.is_multiple_of(32)
    );
    assert!(!swizzle || (line == rows / 4 && line >= 8 && line.is_power_of_two()));
    let cb = dp / 8;
    let _ = writeln!(
        w,
        "{ind}for (var e = tid; e < {n}u; e += {threads}u) {{
{ind}    let blk = e / 32u;
{ind}    let c = (blk % {cb}u) * 8u + e % 8u;
{ind}    let r = (blk / {cb}u) * 4u + (e / 8u) % 4u;
{ind}    let at = c * {line}u + {rv};",
        n = rows * dp,
        rv = if swizzle {
            "((r / 4u) ^ (c % 8u))"
        } else {
            "r / 4u"
        },
    );
    for (i, _) in tiles.iter().enumerate() {
        let _ = writeln!(w, "{ind}    var x{i} = 0.0;");
    }
    let _ = writeln!(
        w,
        "{ind}    if ({row_ok} && c < d) {{
{ind}        let gi = ({row}) * d + c;"
    );
    for (i, t) in tiles.iter().enumerate() {
        let _ = writeln!(w, "{ind}        x{i} = {}[gi];", t.src);
    }
    let _ = writeln!(w, "{ind}    }}");
    for (i, t) in tiles.iter().enumerate() {
        let _ = writeln!(
            w,
            "{ind}    {}[{} + at][r % 4u] = x{i} * {};",
            t.dst, t.off, t.scale
        );
    }
    let _ = writeln!(w, "{ind}}}");
}

/// The vec4 index of vec4 `rv` of dim `c` in a swizzled tile with `line` vec4s per dim
/// (WGSL; `c8` is `c % 8`, often a constant of the unrolled loop).
pub(super) fn slot(c: &str, line: u32, rv: &str, c8: &str) -> String {
    format!("({c}) * {line}u + (({rv}) ^ ({c8}))")
}

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
{q_load}    // Keys this block can see at all: every tile past the causal diagonal is skipped.
    let n_keys = p.past + min(row0 + {ROWS}u, p.tq);
    // Last key visible to each of the thread's four rows.
    let lim = vec4<u32>(p.past + row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
    var m = vec4<f32>(-1.0e30);
    var l = vec4<f32>(0.0);
",
        qs = dp * 16,
        kp = kp_len / 4,
        vs = KT * dp / 4,
        q_load = {
            let mut l = String::new();
            load_q(&mut l, dp);
            l
        },
    );
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var o{a} = vec4<f32>(0.0);");
    }
    let _ = write!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();
{k_load}        for (var e = tid; e < {kn}u; e += {THREADS}u) {{
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
        k_load = {
            let mut l = String::new();
            load_transposed(
                &mut l,
                "        ",
                THREADS,
                KT,
                dp,
                KT / 4,
                true,
                "kvrow + t0 + r",
                "t0 + r < n_keys",
                &[Tile {
                    dst: "kp",
                    off: "0u".into(),
                    src: "k",
                    scale: "1.0",
                }],
            );
            l
        },
    );
    for u in 0..8 {
        let _ = writeln!(
            w,
            "            {{
                let a = qs[{qa}];
                let bk = kp[{kb}];
                s0 = fma(a, vec4<f32>(bk.x), s0);
                s1 = fma(a, vec4<f32>(bk.y), s1);
                s2 = fma(a, vec4<f32>(bk.z), s2);
                s3 = fma(a, vec4<f32>(bk.w), s3);
            }}",
            qa = slot(&format!("c0 + {u}u"), ROWS / 4, "ry", &format!("{u}u")),
            kb = slot(&format!("c0 + {u}u"), KT / 4, "cx", &format!("{u}u")),
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
    store_o(&mut w, nv);
    w.push_str("}\n");
    w
}

/// Emits the forward's load of the block's 64 query rows into `qs` as Q^T `[dp][64 rows]`
/// (swizzled), pre-scaled by scale * log2(e) so the scores come out in log2 units.
pub(super) fn load_q(w: &mut String, dp: u32) {
    load_transposed(
        w,
        "    ",
        THREADS,
        ROWS,
        dp,
        ROWS / 4,
        true,
        "head_row + row0 + r",
        "row0 + r < p.tq",
        &[Tile {
            dst: "qs",
            off: "0u".into(),
            src: "q",
            scale: "p.scale_log2",
        }],
    );
}

/// Emits the forward's epilogue: O (accumulators `o0 ..`, `4 nv` of them, over dims
/// `4 (nv cx + x) ..`) divided by the row sums `lt` (`inv`), and the natural-log
/// logsumexp of each row from the running maximum `m` and `lt`, both in log2 units.
pub(super) fn store_o(w: &mut String, nv: u32) {
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
}

/// Tile shape of the two backward passes. [`BWD_SMALL`] fits the 32 KiB of workgroup memory
/// of lavapipe and most GPUs at DP = 64; [`BWD_LARGE`] needs 48 KiB there (NVIDIA; 28 KiB
/// at DP = 32) and doubles the dq block's rows (K and V tiles shared by twice the queries)
/// and the dk/dv pass's query tile and threads (twice the work per barrier, 128-thread
/// workgroups: more warps per SM for the same workgroup memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwdShape {
    /// Query rows per workgroup of the dq pass (its threads: twice that).
    pub dq_rows: u32,
    /// Threads per workgroup of the dk/dv pass (its query tile: a quarter of that).
    pub dkv_threads: u32,
}

/// The backward tile shape that fits 32 KiB of workgroup memory at DP = 64.
pub const BWD_SMALL: BwdShape = BwdShape {
    dq_rows: 32,
    dkv_threads: 64,
};

/// The backward tile shape for devices with room for it (48 KiB at DP = 64).
pub const BWD_LARGE: BwdShape = BwdShape {
    dq_rows: 64,
    dkv_threads: 128,
};

impl BwdShape {
    /// Threads per workgroup of the dq pass.
    pub const fn dq_threads(self) -> u32 {
        2 * self.dq_rows
    }

    /// Bytes of workgroup memory of the larger of the two passes at padded head dim `dp`.
    pub const fn shared_bytes(self, dp: u32) -> u32 {
        let a = dq_shared_bytes(dp, self.dq_rows);
        let b = dkv_shared_bytes(dp, self.dkv_threads);
        if a > b { a } else { b }
    }
}

/// Line of the K^T and V^T tiles in vec4s (the 32 keys), swizzled rather than padded: one
/// more vec4 per line would take the small shape of the dq pass past 32 KiB at DP = 64.
const KT_LINE: u32 = KT / 4;

/// Bytes of workgroup memory of the dq pass for padded head dim `dp` and `rows` rows.
pub const fn dq_shared_bytes(dp: u32, rows: u32) -> u32 {
    // Q^T and dO^T [dp][rows], K^T [dp][32 keys], V^T then dS (dS needs 32 keys x rows)
    let vt = if dp * KT > KT * rows {
        dp * KT
    } else {
        KT * rows
    };
    4 * (2 * dp * rows + dp * KT_LINE * 4 + vt)
}

// The small shape must fit the 32 KiB of lavapipe (and most GPUs) at DP = 64, or
// `attention.rs` falls back to the row-per-thread kernels there and CI would stop testing
// these; the large shape must fit NVIDIA's 48 KiB at DP = 64, and fits 32 KiB at DP = 32
// (so CI runs it there).
const _: () = assert!(
    fwd_shared_bytes(64) <= 32 * 1024
        && BWD_SMALL.shared_bytes(64) <= 32 * 1024
        && BWD_LARGE.shared_bytes(64) <= 48 * 1024
        && BWD_LARGE.shared_bytes(32) <= 32 * 1024
);

/// The dq pass of the backward (dq and delta = rowsum(dO * O)) for padded head dim `dp`
/// (32 or 64) and `rows` (32 or 64) query rows per workgroup, register-blocked like
/// [`forward`]: a workgroup of `2 rows` threads walks key tiles of 32; thread `(ry, cx)`
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
    w.push_str("// Causal flash-attention backward, dq pass, register-blocked (generated; see attention/tiled.rs).\n");
    w.push_str(PARAMS);
    let mut q_load = String::new();
    load_transposed(
        &mut q_load,
        "    ",
        threads,
        rows,
        dp,
        ry_n,
        true,
        "head_row + row0 + r",
        "row0 + r < p.tq",
        &[
            Tile {
                dst: "qs",
                off: "0u".into(),
                src: "q",
                scale: "p.scale_log2",
            },
            Tile {
                dst: "gs",
                off: "0u".into(),
                src: "go",
                scale: "1.0",
            },
        ],
    );
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

// Q^T pre-scaled by scale * log2(e), and dO^T: [DP][{rows} rows], swizzled
var<workgroup> qs: array<vec4<f32>, {rows_len}>;
var<workgroup> gs: array<vec4<f32>, {rows_len}>;
// K^T [DP][32 keys], swizzled
var<workgroup> kt: array<vec4<f32>, {kt_len}>;
// delta partials [8][{rows} rows], then V^T [DP][32 keys] (swizzled), then dS [32 keys][{rows} rows]
var<workgroup> vt: array<vec4<f32>, {vt_len}>;

const LOG2E: f32 = 1.4426950408889634;

@compute @workgroup_size({threads})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let ry = tid % {ry_n}u;
    let cx = tid / {ry_n}u;
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let row0 = qb * {rows}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
{q_load}    workgroupBarrier();
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
{lse_loads}    let n_keys = min(row0 + {rows}u, p.tq);
    let lim = vec4<u32>(row0 + 4u * ry) + vec4<u32>(0u, 1u, 2u, 3u);
",
        rows_len = dp * rows / 4,
        kt_len = dp * KT_LINE,
        vt_len = vt_len / 4,
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
    let _ = writeln!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();"
    );
    load_transposed(
        &mut w,
        "        ",
        threads,
        KT,
        dp,
        KT_LINE,
        true,
        "kvrow + t0 + r",
        "t0 + r < n_keys",
        &[
            Tile {
                dst: "kt",
                off: "0u".into(),
                src: "k",
                scale: "1.0",
            },
            Tile {
                dst: "vt",
                off: "0u".into(),
                src: "v",
                scale: "1.0",
            },
        ],
    );
    w.push_str("        workgroupBarrier();\n");
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        var s{j} = vec4<f32>(0.0);\n        var p{j} = vec4<f32>(0.0);"
        );
    }
    let _ = writeln!(w, "        for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{");
    for u in 0..8 {
        let c = format!("c0 + {u}u");
        let u8 = format!("{u}u");
        let _ = writeln!(
            w,
            "            {{
                let a = qs[{qa}];
                let ga = gs[{qa}];
                let bk = kt[{kb}];
                let bv = vt[{kb}];",
            qa = slot(&c, ry_n, "ry", &u8),
            kb = slot(&c, KT_LINE, "cx", &u8),
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

/// Bytes of workgroup memory of the dk/dv pass for padded head dim `dp` and `threads`
/// threads (query tile `threads / 4`).
pub const fn dkv_shared_bytes(dp: u32, threads: u32) -> u32 {
    let qt = threads / 4;
    let ql = qt / 4 + 1;
    // K^T and V^T [dp][32 keys], Q^T and dO^T [dp][ql vec4s], P and dS [qt queries][32 keys]
    4 * (2 * dp * DKV_KEYS + 2 * dp * ql * 4 + 2 * qt * DKV_KEYS)
}

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
    // Line of the Q^T and dO^T tiles in vec4s: the queries plus one vec4 of padding, an
    // odd count, so the dims a warp touches (in the accumulation step and in the
    // transposed stores of the tile loads) land in different bank groups.
    let ql = qt / 4 + 1;
    let half_n = threads / 2;
    let cxn = threads / 8;
    let na = dp / cxn;
    let kt_line = DKV_KEYS / 4;
    let mut w = String::new();
    w.push_str("// Causal flash-attention backward, dk/dv pass, register-blocked (generated; see attention/tiled.rs).\n");
    w.push_str(PARAMS);
    let mut kv_load = String::new();
    load_transposed(
        &mut kv_load,
        "    ",
        threads,
        DKV_KEYS,
        dp,
        kt_line,
        true,
        "kvrow + k0 + r",
        "k0 + r < p.tq",
        &[
            Tile {
                dst: "kv",
                off: "0u".into(),
                src: "k",
                scale: "p.scale_log2",
            },
            Tile {
                dst: "kv",
                off: format!("{}u", dp * kt_line),
                src: "v",
                scale: "1.0",
            },
        ],
    );
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
    let _ = writeln!(
        w,
        "    for (var hh = gh * group; hh < (gh + 1u) * group; hh++) {{
        let head_row = (b * p.heads + hh) * p.tq;
        // The block's first key is a multiple of the query tile, so no tile straddles it.
        for (var t0 = k0; t0 < p.tq; t0 += {qt}u) {{
            workgroupBarrier();"
    );
    load_transposed(
        &mut w,
        "            ",
        threads,
        qt,
        dp,
        ql,
        false,
        "head_row + t0 + r",
        "t0 + r < p.tq",
        &[
            Tile {
                dst: "qg",
                off: "0u".into(),
                src: "q",
                scale: "1.0",
            },
            Tile {
                dst: "qg",
                off: format!("{}u", dp * ql),
                src: "go",
                scale: "1.0",
            },
        ],
    );
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
            for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{
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
    for u in 0..8 {
        let _ = writeln!(
            w,
            "                {{
                    let a = kv[kvo + {ka}];
                    let bq = qg[qgo + (c0 + {u}u) * {ql}u + sx];
                    s0 = fma(a, vec4<f32>(bq.x), s0);
                    s1 = fma(a, vec4<f32>(bq.y), s1);
                    s2 = fma(a, vec4<f32>(bq.z), s2);
                    s3 = fma(a, vec4<f32>(bq.w), s3);
                }}",
            ka = slot(&format!("c0 + {u}u"), kt_line, "sy", &format!("{u}u")),
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
            o = qt * kt_line
        );
    }
    w.push_str("            }\n            workgroupBarrier();\n");
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
                "            if (cx + {ca}u < d) {{
                dk[base + cx + {ca}u] = dk{a}.{comp} * p.scale;
                dv[base + cx + {ca}u] = dv{a}.{comp};
            }}",
                ca = cxn * a
            );
        }
        w.push_str("        }\n    }\n");
    }
    w.push_str("}\n");
    w
}
