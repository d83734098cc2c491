//! The forward's large tile shape, for devices with 48 KiB of workgroup memory (NVIDIA) at
//! DP = 64; at DP = 32 it needs 32 KiB, so lavapipe runs it there too.
//!
//! Like the small forward in `tiled.rs`, a workgroup of 128 threads owns 64 query rows and
//! thread `(ry, cx)` (`ry = tid % 16`, `cx = tid / 16`) owns rows `4 ry .. 4 ry + 4`; but
//! key tiles are 64 wide and the thread's S block is 4 rows x 8 keys (keys `4 cx ..` and
//! `32 + 4 cx ..`), so per head dim one Q read and two K reads feed 32 FMAs (the small
//! shape: two reads, 16 FMAs), and the fixed per-tile costs (barriers, the row-max
//! exchange, the online-softmax rescale of O) are paid once per 64 keys instead of 32.
//!
//! Per tile the kernel waits at five barriers instead of the small shape's twelve per 64
//! keys:
//! 1. the previous tile's P and V have been read: the K tile goes into `kp`;
//! 2. K is in place: S = Q K^T, masked, its row maxima go to `vs` (V is not there yet);
//! 3. every partial maximum is in place and every K read done: P goes into `kp`;
//! 4. every maximum has been read: the V tile goes into `vs`;
//! 5. P and V are in place: O += P V.
//!
//! Q, K and V alone fill 48 KiB at DP = 64, so there is no room for a separate row-max
//! buffer; it borrows the V buffer between steps 2 and 4, which costs barrier 4.
//!
//! The global loads of the next tile's K (and V) are issued into registers right after
//! the current one is stored, so their latency is hidden behind the tile's math instead
//! of stalling every warp at the top of the next tile. Their layout in workgroup memory
//! is that of the small shape: K transposed and XOR-swizzled (see `load_transposed` in
//! `tiled.rs`), V row-major.

use std::fmt::Write as _;

use super::layout;
use super::tiled::{ROWS, THREADS, slot};

/// Keys per tile.
pub const KT: u32 = 64;

/// Vec4s per line of the K^T, Q^T and P tiles: 64 keys or 64 rows.
const LINE: u32 = 16;

/// Vec4 lengths of the workgroup arrays `(qs, kp, vs)` at padded head dim `dp`.
const fn lens(dp: u32) -> (u32, u32, u32) {
    let k = dp * LINE;
    let p = KT * LINE;
    let v = KT * dp / 4;
    // The row-max partials: 8 column groups x 16 vec4s of rows.
    let mx = 8 * LINE;
    (
        dp * LINE,
        if k > p { k } else { p },
        if v > mx { v } else { mx },
    )
}

/// Bytes of workgroup memory of the large forward at padded head dim `dp`.
pub const fn shared_bytes(dp: u32) -> u32 {
    let (q, kp, v) = lens(dp);
    16 * (q + kp + v)
}

// 48 KiB (NVIDIA) at DP = 64; 32 KiB (lavapipe, so CI runs this kernel) at DP = 32.
const _: () = assert!(shared_bytes(64) <= 48 * 1024 && shared_bytes(32) <= 32 * 1024);

/// Emits the global loads of one K tile (rows `t + r`, `r < 64`) into the registers
/// `kr0 ..`, in the coalesced order of `load_transposed` (a warp covers 8 dims of 4
/// rows), zero past the visible keys or the head dim.
fn load_k(w: &mut String, ind: &str, dp: u32, t: &str) {
    let cb = dp / 8;
    for i in 0..KT * dp / THREADS {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let c = ((e / 32u) % {cb}u) * 8u + e % 8u;
{ind}    let r = ((e / 32u) / {cb}u) * 4u + (e / 8u) % 4u;
{ind}    kr{i} = 0.0;
{ind}    if ({t} + r < n_keys && c < d) {{
{ind}        kr{i} = k[(kvrow + {t} + r) * d + c];
{ind}    }}
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Emits the stores of `kr0 ..` (see [`load_k`]) into `kp` as K^T `[dp][64 keys]`,
/// swizzled: dim `c` row `r` at component `r % 4` of vec4 `c * 16 + ((r / 4) ^ (c % 8))`.
fn store_k(w: &mut String, ind: &str, dp: u32) {
    let cb = dp / 8;
    for i in 0..KT * dp / THREADS {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let c = ((e / 32u) % {cb}u) * 8u + e % 8u;
{ind}    let r = ((e / 32u) / {cb}u) * 4u + (e / 8u) % 4u;
{ind}    kp[c * {LINE}u + ((r / 4u) ^ (c % 8u))][r % 4u] = kr{i};
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Emits the global loads of one V tile (rows `t + j`) into `vr0 ..`: consecutive lanes
/// on consecutive dims.
fn load_v(w: &mut String, ind: &str, dp: u32, t: &str) {
    for i in 0..KT * dp / THREADS {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let c = e % {dp}u;
{ind}    let j = e / {dp}u;
{ind}    vr{i} = 0.0;
{ind}    if ({t} + j < n_keys && c < d) {{
{ind}        vr{i} = v[(kvrow + {t} + j) * d + c];
{ind}    }}
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Emits the stores of `vr0 ..` into `vs` as V `[64 keys][dp]`.
fn store_v(w: &mut String, ind: &str, dp: u32) {
    for i in 0..KT * dp / THREADS {
        let e0 = i * THREADS;
        let _ = writeln!(
            w,
            "{ind}vs[((tid + {e0}u) / {dp}u) * {d4}u + ((tid + {e0}u) % {dp}u) / 4u][(tid + {e0}u) % 4u] = vr{i};",
            d4 = dp / 4,
        );
    }
}

/// The large forward's WGSL for padded head dim `dp` (32 or 64): same bindings, grid
/// (64 query rows per workgroup, heaviest blocks first) and outputs as the small one,
/// the logsumexp included.
pub fn forward(dp: u32) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let nv = dp / 32;
    let d4 = dp / 4;
    let (qs_len, kp_len, vs_len) = lens(dp);
    let mut w = String::new();
    w.push_str(
        "// Causal flash-attention forward, large tiles (generated; see attention/fwd_large.rs).\n",
    );
    w.push_str(&layout::FWD.declarations());
    let mut q_load = String::new();
    super::tiled::load_q(&mut q_load, dp);
    let _ = write!(
        w,
        "

// Q^T pre-scaled by scale * log2(e): [DP][64 rows], swizzled
var<workgroup> qs: array<vec4<f32>, {qs_len}>;
// K^T [DP][64 keys] (swizzled), then P [64 keys][64 rows]
var<workgroup> kp: array<vec4<f32>, {kp_len}>;
// the row-max partials [8][64 rows], then V [64 keys][DP]
var<workgroup> vs: array<vec4<f32>, {vs_len}>;

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
"
    );
    for i in 0..KT * dp / THREADS {
        let _ = writeln!(w, "    var kr{i} = 0.0;\n    var vr{i} = 0.0;");
    }
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var o{a} = vec4<f32>(0.0);");
    }
    w.push_str("    // The first tile's loads; each tile then loads the next.\n");
    load_k(&mut w, "    ", dp, "0u");
    load_v(&mut w, "    ", dp, "0u");
    let _ = writeln!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();"
    );
    store_k(&mut w, "        ", dp);
    w.push_str("        workgroupBarrier();\n");
    let _ = writeln!(w, "        let tn = t0 + {KT}u;");
    load_k(&mut w, "        ", dp, "tn");
    for j in 0..8 {
        let _ = writeln!(w, "        var s{j} = vec4<f32>(0.0);");
    }
    let _ = writeln!(w, "        for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{");
    for u in 0..8 {
        let c = format!("c0 + {u}u");
        let u8 = format!("{u}u");
        let _ = writeln!(
            w,
            "            {{
                let a = qs[{qa}];
                let b0 = kp[{kb0}];
                let b1 = kp[{kb1}];",
            qa = slot(&c, ROWS / 4, "ry", &u8),
            kb0 = slot(&c, LINE, "cx", &u8),
            kb1 = slot(&c, LINE, "cx + 8u", &u8),
        );
        for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "                s{j} = fma(a, vec4<f32>(b0.{comp}), s{j});
                s{} = fma(a, vec4<f32>(b1.{comp}), s{});",
                j + 4,
                j + 4
            );
        }
        w.push_str("            }\n");
    }
    let _ = writeln!(
        w,
        "        }}
        // Only tiles that cross the diagonal (or the end of the keys) need the mask.
        if (t0 + {last}u > p.past + row0) {{
            let kj = t0 + 4u * cx;",
        last = KT - 1
    );
    for j in 0..4 {
        let _ = writeln!(
            w,
            "            s{j} = select(vec4<f32>(NEG), s{j}, vec4<u32>(kj + {j}u) <= lim);
            s{h} = select(vec4<f32>(NEG), s{h}, vec4<u32>(kj + {k}u) <= lim);",
            h = j + 4,
            k = j + 32
        );
    }
    w.push_str(
        "        }
        vs[cx * 16u + ry] = max(max(max(s0, s1), max(s2, s3)), max(max(s4, s5), max(s6, s7)));
        workgroupBarrier();
        var mn = m;
",
    );
    for c in 0..8 {
        let _ = writeln!(w, "        mn = max(mn, vs[{}u + ry]);", c * 16);
    }
    w.push_str("        let alpha = exp2(m - mn);\n        m = mn;\n");
    for j in 0..8 {
        let _ = writeln!(w, "        s{j} = exp2(s{j} - mn);");
    }
    w.push_str("        l = l * alpha + (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)));\n");
    for a in 0..4 * nv {
        let _ = writeln!(w, "        o{a} *= alpha;");
    }
    for j in 0..4 {
        let _ = writeln!(
            w,
            "        kp[(4u * cx + {j}u) * 16u + ry] = s{j};
        kp[(4u * cx + {k}u) * 16u + ry] = s{h};",
            k = j + 32,
            h = j + 4
        );
    }
    w.push_str("        workgroupBarrier();\n");
    store_v(&mut w, "        ", dp);
    load_v(&mut w, "        ", dp, "tn");
    let _ = writeln!(
        w,
        "        workgroupBarrier();
        for (var j0 = 0u; j0 < {KT}u; j0 += 8u) {{"
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
    vs[cx * 16u + ry] = l;
    workgroupBarrier();
    var lt = vec4<f32>(0.0);
",
    );
    for c in 0..8 {
        let _ = writeln!(w, "    lt += vs[{}u + ry];", c * 16);
    }
    w.push_str("    let inv = 1.0 / lt;\n");
    super::tiled::store_o(&mut w, nv);
    w.push_str("}\n");
    w
}
