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
//! `emit.rs`), V row-major.
//!
//! Where the head dim is a multiple of 4, K and V are bound as `vec4`s and each thread
//! loads four dims of a row at once ([`load_tile4`]): one load instead of four, and the
//! index and bounds arithmetic once per four. On an H200 loading one f32 at a time took
//! about 1,100 of a key tile's 2,250 instructions (512 of them FMAs); by fours the
//! forward at B8 H8 T1024 d64 ran 0.645 -> 0.473 ms, forward + backward 2.83 -> 2.65 ms
//! (BENCHMARKS.md, 2026-11-30 (twelfth session)).

use std::fmt::Write as _;

use super::emit::{step_slot, unrolled_dims};
use super::layout::{LARGE_KT as KT, LARGE_LINE as LINE, ROWS, THREADS, large_lens as lens};
use super::tiled::{accumulate_pv, forward_epilogue, forward_prologue, online_softmax};
use super::{dropout, layout};

/// Emits one block per register `i` of the `KT * dp / THREADS` a thread moves per tile:
/// element `e = tid + i * THREADS` is dim `c` of tile row `row`, in the coalesced order of
/// `load_transposed` for K (row `r`: a warp covers 8 dims of 4 rows) or row-major for V
/// (row `j`: consecutive lanes on consecutive dims), followed by the lines `body(w, i)`.
fn per_element(w: &mut String, ind: &str, dp: u32, row: &str, body: impl Fn(&mut String, u32)) {
    let cb = dp / 8;
    for i in 0..KT * dp / THREADS {
        let _ = writeln!(w, "{ind}{{\n{ind}    let e = tid + {}u;", i * THREADS);
        if row == "r" {
            let _ = writeln!(
                w,
                "{ind}    let c = ((e / 32u) % {cb}u) * 8u + e % 8u;
{ind}    let r = ((e / 32u) / {cb}u) * 4u + (e / 8u) % 4u;"
            );
        } else {
            let _ = writeln!(
                w,
                "{ind}    let c = e % {dp}u;\n{ind}    let j = e / {dp}u;"
            );
        }
        body(w, i);
        let _ = writeln!(w, "{ind}}}");
    }
}

/// Emits the global loads of one tile of `buf` (`"k"` or `"v"`, rows `t + ..`, in the
/// order of [`per_element`]) into the registers `kr0 ..` or `vr0 ..`, zero past the
/// visible keys or the head dim.
fn load_tile(w: &mut String, ind: &str, dp: u32, buf: &str, t: &str) {
    let row = if buf == "k" { "r" } else { "j" };
    per_element(w, ind, dp, row, |w, i| {
        let _ = writeln!(
            w,
            "{ind}    {buf}r{i} = 0.0;
{ind}    if ({t} + {row} < n_keys && c < d) {{
{ind}        {buf}r{i} = {buf}[(kvrow + {t} + {row}) * d + c];
{ind}    }}"
        );
    });
}

/// Emits the four-element loads of one tile of `buf` (`"k"` or `"v"`, bound as `vec4`s;
/// the head dim a multiple of 4) into the registers `kr0 ..` or `vr0 ..` (`vec4`s), zero
/// past the visible keys or the head dim. Unit `u = tid + i THREADS` of K is dims
/// `4 (u / KT) ..` of row `u % KT` (a warp reads 32 rows of one four-dim column, so the
/// transposed stores of [`store_k4`] meet no bank conflict); of V, dims `4 (u % (dp / 4))
/// ..` of row `u / (dp / 4)` (a warp reads whole rows).
fn load_tile4(w: &mut String, ind: &str, dp: u32, buf: &str, t: &str) {
    let units = dp / 4;
    for i in 0..KT * units / THREADS {
        let (row, c4) = if buf == "k" {
            (format!("u % {KT}u"), format!("u / {KT}u"))
        } else {
            (format!("u / {units}u"), format!("u % {units}u"))
        };
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let u = tid + {}u;
{ind}    let r = {row};
{ind}    let c4 = {c4};
{ind}    {buf}r{i} = vec4<f32>(0.0);
{ind}    if ({t} + r < n_keys && 4u * c4 < d) {{
{ind}        {buf}r{i} = {buf}[(kvrow + {t} + r) * (d / 4u) + c4];
{ind}    }}
{ind}}}",
            i * THREADS
        );
    }
}

/// Emits the stores of the `vec4` registers of [`load_tile4`] for K into `kp`, laid out as
/// [`store_k`] lays it out.
fn store_k4(w: &mut String, ind: &str, dp: u32) {
    for i in 0..KT * (dp / 4) / THREADS {
        let _ = writeln!(
            w,
            "{ind}{{\n{ind}    let u = tid + {}u;\n{ind}    let r = u % {KT}u;\n{ind}    let c0 = 4u * (u / {KT}u);",
            i * THREADS
        );
        for (j, comp) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "{ind}    kp[(c0 + {j}u) * {LINE}u + ((r / 4u) ^ ((c0 + {j}u) % 8u))][r % 4u] = kr{i}.{comp};"
            );
        }
        let _ = writeln!(w, "{ind}}}");
    }
}

/// Emits the stores of the `vec4` registers of [`load_tile4`] for V into `vs`, one
/// `vec4` each.
fn store_v4(w: &mut String, ind: &str, dp: u32) {
    for i in 0..KT * (dp / 4) / THREADS {
        let _ = writeln!(w, "{ind}vs[tid + {}u] = vr{i};", i * THREADS);
    }
}

/// Emits the stores of `kr0 ..` (see [`load_tile`]) into `kp` as K^T `[dp][64 keys]`,
/// swizzled: dim `c` row `r` at component `r % 4` of vec4 `c * 16 + ((r / 4) ^ (c % 8))`.
fn store_k(w: &mut String, ind: &str, dp: u32) {
    per_element(w, ind, dp, "r", |w, i| {
        let _ = writeln!(
            w,
            "{ind}    kp[c * {LINE}u + ((r / 4u) ^ (c % 8u))][r % 4u] = kr{i};"
        );
    });
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
/// the logsumexp included; with `by4`, K and V are bound as `vec4`s and read four
/// elements at a time ([`layout::FWD4`]; the head dim a multiple of 4).
pub fn forward(dp: u32, by4: bool) -> String {
    assert!(
        dp == 32 || dp == 64,
        "tiled attention supports DP 32 and 64"
    );
    let nv = dp / 32;
    let (qs_len, kp_len, vs_len) = lens(dp);
    let mut w = String::new();
    w.push_str(
        "// Flash-attention forward, large tiles (generated; see attention/fwd_large.rs).\n",
    );
    let decl = if by4 { &layout::FWD4 } else { &layout::FWD };
    w.push_str(&decl.declarations());
    dropout::emit_fma_functions(&mut w);
    let _ = write!(
        w,
        "

// Q^T pre-scaled by scale * log2(e): [DP][64 rows], swizzled
var<workgroup> qs: array<vec4<f32>, {qs_len}>;
// K^T [DP][64 keys] (swizzled), then P [64 keys][64 rows]
var<workgroup> kp: array<vec4<f32>, {kp_len}>;
// the row-max partials [8][64 rows], then V [64 keys][DP]
var<workgroup> vs: array<vec4<f32>, {vs_len}>;

"
    );
    forward_prologue(&mut w, dp);
    // The tile moves of one load width: registers a thread holds per tile and their zero,
    // the loads, K's and V's stores.
    type Load = fn(&mut String, &str, u32, &str, &str);
    type Store = fn(&mut String, &str, u32);
    let (regs, zero, load, store_k, store_v): (u32, &str, Load, Store, Store) = if by4 {
        let regs = KT * (dp / 4) / THREADS;
        (regs, "vec4<f32>(0.0)", load_tile4, store_k4, store_v4)
    } else {
        (KT * dp / THREADS, "0.0", load_tile, store_k, store_v)
    };
    for i in 0..regs {
        let _ = writeln!(w, "    var kr{i} = {zero};\n    var vr{i} = {zero};");
    }
    for a in 0..4 * nv {
        let _ = writeln!(w, "    var o{a} = vec4<f32>(0.0);");
    }
    w.push_str("    // The first tile's loads; each tile then loads the next.\n");
    load(&mut w, "    ", dp, "k", "0u");
    load(&mut w, "    ", dp, "v", "0u");
    let _ = writeln!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();"
    );
    store_k(&mut w, "        ", dp);
    w.push_str("        workgroupBarrier();\n");
    let _ = writeln!(w, "        let tn = t0 + {KT}u;");
    load(&mut w, "        ", dp, "k", "tn");
    for j in 0..8 {
        let _ = writeln!(w, "        var s{j} = vec4<f32>(0.0);");
    }
    unrolled_dims(&mut w, "        ", dp, |w, u| {
        let _ = writeln!(
            w,
            "                let a = qs[{qa}];
                let b0 = kp[{kb0}];
                let b1 = kp[{kb1}];",
            qa = step_slot(u, ROWS / 4, "ry"),
            kb0 = step_slot(u, LINE, "cx"),
            kb1 = step_slot(u, LINE, "cx + 8u"),
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
    });
    let _ = writeln!(
        w,
        "        // Only tiles that cross the thread's diagonal (or the end of the keys) need the mask.
        if (t0 + {last}u > lim.x) {{
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
    w.push_str("        }\n");
    online_softmax(&mut w, nv, "vs", 8);
    // Dropout scales what reaches O (P's keys 4 cx .. and 32 + 4 cx ..), not the row sums.
    let rows = "head_row + row0 + 4u * ry";
    let (low, high) = (["s0", "s1", "s2", "s3"], ["s4", "s5", "s6", "s7"]);
    dropout::emit_rows_by_keys(&mut w, "        ", low, rows, "t0 + 4u * cx");
    dropout::emit_rows_by_keys(&mut w, "        ", high, rows, "t0 + 32u + 4u * cx");
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
    load(&mut w, "        ", dp, "v", "tn");
    w.push_str("        workgroupBarrier();\n");
    accumulate_pv(&mut w, dp, KT);
    w.push_str("    }\n");
    forward_epilogue(&mut w, nv, "vs");
    w
}
