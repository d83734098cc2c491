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

use super::bwd_dkv::dkv_shared_bytes;
use super::layout;
use super::bwd_dq::dq_shared_bytes;

/// Query rows per workgroup.
pub const ROWS: u32 = 64;
/// Threads per workgroup.
pub const THREADS: u32 = 128;
/// Keys per tile.
pub(super) const KT: u32 = 32;
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

/// One tile that [`load_transposed`] fills: the workgroup array, its first vec4, the
/// global buffer and what to multiply each value by (`1.0` for nothing).
pub(super) struct Tile<'a> {
    pub(super) dst: &'a str,
    pub(super) off: String,
    pub(super) src: &'a str,
    pub(super) scale: &'a str,
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
pub(super) fn load_transposed(
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
    w.push_str(&layout::FWD.declarations());
    let _ = write!(
        w,
        "

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

const _: () = assert!(
    fwd_shared_bytes(64) <= 32 * 1024
        && BWD_SMALL.shared_bytes(64) <= 32 * 1024
        && BWD_LARGE.shared_bytes(64) <= 48 * 1024
        && BWD_LARGE.shared_bytes(32) <= 32 * 1024
);
