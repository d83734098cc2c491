//! The attention forward on the tensor cores (WGSL cooperative matrices): f16 q, k, v (f16
//! tensors, or f32 ones rounded to f16 as they are loaded, which is what autocast runs),
//! f32 scores, softmax statistics and accumulators, P rounded to f16 for the `P V`
//! product, as PyTorch's fp16 SDPA (FlashAttention) does. Head dims up to 64 that are
//! multiples of 4, on devices with tensor cores ([`crate::DeviceInfo::tensor_cores`]) and
//! subgroup operations.
//!
//! A workgroup of four subgroups owns 64 query rows of one (batch, head); subgroup `sg`
//! owns rows `16 sg .. 16 sg + 16` and keeps their Q as `DP / 16` A fragments for the whole
//! kernel. Keys go by in tiles of 64, staged in workgroup memory as f16 (K and V `[key][dim]`
//! lines, padded by 8 halves against bank conflicts, as the matmul stages its operands).
//!
//! Cooperative matrices give no access to their elements, so the online softmax's
//! per-row rescaling of the output accumulators is out of reach; the kernel walks the keys
//! twice instead (FlashAttention-1's statistics pass, on tensor cores the extra `Q K^T` is
//! cheap next to the softmax and the staging):
//! 1. `S = Q K^T` per tile into workgroup memory (`coopStoreT`); two lanes per row read
//!    their 32 scores, mask them and keep a running maximum and sum: the row's logsumexp.
//! 2. `S` again, `P = exp2(S - lse)` (normalized already), dropout applied, rounded to f16
//!    into workgroup memory, and `O += P V` on the tensor cores: O needs no rescaling and no
//!    final division, and leaves through workgroup memory once, four elements per store.

use std::fmt::Write as _;

use super::dropout;
use super::layout::AttentionParams;
use crate::spec::{Layout, Slot, Variants};
use crate::{DType, Device, Error, RawKernel, Tensor};

/// Query rows per workgroup (four subgroups of 16 rows).
const ROWS: u32 = 64;
/// Keys per tile.
const KEYS: u32 = 64;
/// Threads per workgroup.
const THREADS: u32 = 128;
/// Halves of padding after each staged K, V, Q or P line.
const PAD: u32 = 8;
/// Floats per line of a subgroup's S scratch (64 keys and 4 of padding: the two lanes of a
/// row read 32 scores apart, the 16 rows 17 vec4s apart, so 8 consecutive lanes of a
/// four-element read hit 8 distinct bank groups).
const S_LINE: u32 = KEYS + 4;
/// The largest head dim the kernel takes (Q, K, V and the scratch fill 44 KiB at 64).
pub(super) const MAX_D: usize = 64;

/// Everything that changes the shader text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct CoopFwd {
    /// Head dim rounded up to 16 (the fragments' depth).
    pub dp: u32,
    /// q, k, v and o are f16 tensors (else f32, the inputs rounded to f16 on load).
    pub half: bool,
}

impl CoopFwd {
    /// Halves per staged K/V/Q line.
    fn line(&self) -> u32 {
        self.dp + PAD
    }

    /// Bytes of workgroup memory: K (Q before the loop) and V tiles, each subgroup's S
    /// scratch (also O's on the way out) and P.
    pub(super) fn shared_bytes(&self) -> u32 {
        let kv = 2 * 2 * KEYS * self.line();
        let s = 4 * 4 * 16 * S_LINE;
        let p = 2 * 4 * 16 * (KEYS + PAD);
        kv + s + p
    }

    /// The bindings: q, k, v and o four elements per index, lse f32.
    fn layout(&self) -> Layout<AttentionParams, Vec<Slot>> {
        let ty = if self.half {
            "array<vec4<f16>>"
        } else {
            "array<vec4<f32>>"
        };
        Layout::with_slots(vec![
            Slot::Read("q", ty),
            Slot::Read("k", ty),
            Slot::Read("v", ty),
            Slot::ReadWrite("o", ty),
            Slot::ReadWrite("lse", "array<f32>"),
        ])
    }
}

/// Registers (`vec4<f16>`) a thread holds of one 64-line tile: `64 dp / 4` four-dim units
/// over the workgroup's threads.
fn tile_registers(v: &CoopFwd) -> u32 {
    ROWS * (v.dp / 4) / THREADS
}

/// Emits the global loads of a 64-line tile of `src` (`q`, `k` or `v`; line `j` is row
/// `{first} + j` of the head, whose rows start at global row `{base}`, and is present when
/// `{first} + j < {rows}`) into the thread's registers `{src}r0 ..` as f16, zero past the
/// rows or the head dim. They are staged by [`emit_tile_stage`]; in between the thread
/// works on the previous tile, so the loads' latency is hidden behind it.
fn emit_tile_fetch(
    w: &mut String,
    v: &CoopFwd,
    ind: &str,
    src: &str,
    [base, first, rows]: [&str; 3],
) {
    let units = v.dp / 4;
    let read = format!("{src}[({base} + {first} + j) * d4 + c4]");
    let read = if v.half {
        read
    } else {
        format!("vec4<f16>({read})")
    };
    for i in 0..tile_registers(v) {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let j = e / {units}u;
{ind}    let c4 = e % {units}u;
{ind}    {src}r{i} = vec4<f16>();
{ind}    if ({first} + j < {rows} && c4 < d4) {{
{ind}        {src}r{i} = {read};
{ind}    }}
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Emits the stores of the registers `{src}r0 ..` of [`emit_tile_fetch`] into the f16
/// workgroup array `dst` as `[line][dim]` lines.
fn emit_tile_stage(w: &mut String, v: &CoopFwd, ind: &str, src: &str, dst: &str) {
    let units = v.dp / 4;
    for i in 0..tile_registers(v) {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let at = (e / {units}u) * {line}u + 4u * (e % {units}u);
{ind}    {dst}[at] = {src}r{i}.x;
{ind}    {dst}[at + 1u] = {src}r{i}.y;
{ind}    {dst}[at + 2u] = {src}r{i}.z;
{ind}    {dst}[at + 3u] = {src}r{i}.w;
{ind}}}",
            e0 = i * THREADS,
            line = v.line(),
        );
    }
}

/// Emits `S = Q K^T` of the staged K tile into the subgroup's scratch (64 keys as four
/// fragments, each over the `dp / 16` Q fragments).
fn emit_scores(w: &mut String, v: &CoopFwd) {
    let line = v.line();
    for kc in 0..KEYS / 16 {
        let _ = writeln!(w, "        var s{kc} = coop_mat16x16<f32, C>();");
        for dc in 0..v.dp / 16 {
            // K^T's fragment: B[dim][key] from [key][dim] lines, column-major.
            let _ = writeln!(
                w,
                "        s{kc} = coopMultiplyAdd(q{dc}, coopLoad<coop_mat16x16<f16, B>>(&ks[{}u], {line}u), s{kc});",
                kc * 16 * line + dc * 16
            );
        }
        let _ = writeln!(
            w,
            "        {{\n            let si = sg * {}u + {}u;\n            coopStoreT(s{kc}, &ss[si], {S_LINE}u);\n        }}",
            16 * S_LINE,
            kc * 16
        );
    }
}

/// Emits the reads of a lane's 32 scores of the tile (row `r`, keys `32 hh ..`) into
/// `x0 .. x7` (vec4s), scaled to log2 units and masked (keys past `lim` are `NEG`).
fn emit_lane_scores(w: &mut String) {
    let _ = writeln!(
        w,
        "        let sb = sg * {}u + r * {S_LINE}u + 32u * hh;\n        let kb = t0 + 32u * hh;",
        16 * S_LINE
    );
    for j in 0..8 {
        let _ = writeln!(
            w,
            "        var x{j} = vec4<f32>(ss[sb + {a}u], ss[sb + {b}u], ss[sb + {c}u], ss[sb + {d}u]) * p.scale_log2;",
            a = 4 * j,
            b = 4 * j + 1,
            c = 4 * j + 2,
            d = 4 * j + 3
        );
    }
    w.push_str("        if (kb + 31u > lim) {\n");
    for j in 0..8 {
        let _ = writeln!(
            w,
            "            x{j} = select(vec4<f32>(NEG), x{j}, vec4<u32>(kb + {}u) + vec4<u32>(0u, 1u, 2u, 3u) <= vec4<u32>(lim));",
            4 * j
        );
    }
    w.push_str("        }\n");
}

/// The kernel's WGSL.
pub(super) fn generate(v: &CoopFwd) -> String {
    let (dp, line) = (v.dp, v.line());
    let plen = KEYS + PAD;
    let mut w = String::with_capacity(16 * 1024);
    let _ = writeln!(
        w,
        "// tang tensor-core attention forward, head dim {dp}, {} (generated; see attention/coop_fwd.rs)\nenable f16;\nenable wgpu_cooperative_matrix;",
        if v.half { "f16" } else { "f32 rounded to f16" }
    );
    w.push_str(&v.layout().declarations());
    dropout::emit_functions(&mut w);
    let _ = write!(
        w,
        "
const NEG: f32 = -3.0e38;
// K tile [64 keys][dim] (the Q block before the key loops), V tile [64 keys][dim]
var<workgroup> ks: array<f16, {kv}>;
var<workgroup> vs: array<f16, {kv}>;
// per subgroup: S [16 rows][64 keys] (O [16 rows][dim] at the end), P [16 rows][64 keys]
var<workgroup> ss: array<f32, {s}>;
var<workgroup> ps: array<f16, {pl}>;

@compute @workgroup_size({THREADS})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    // The last query blocks see the most keys: start them first to shorten the tail.
    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d4 = p.d / 4u;
    let row0 = qb * {ROWS}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
    let sg = tid / 32u;
    let lane = tid % 32u;
    // Two lanes per query row: r's keys 0..32 (hh = 0) and 32..64 (hh = 1) of each tile.
    let r = lane % 16u;
    let hh = lane / 16u;
    let i = row0 + 16u * sg + r;
    // Keys this block sees (causal: tiles past the diagonal are skipped) and the last key
    // row i sees.
    var n_keys = p.tk_stride;
    var lim = p.tk_stride - 1u;
    if (p.causal != 0u) {{
        n_keys = p.past + min(row0 + {ROWS}u, p.tq);
        lim = min(p.past + i, p.tk_stride - 1u);
    }}
",
        kv = KEYS * line,
        s = 4 * 16 * S_LINE,
        pl = 4 * 16 * plen,
    );
    for i in 0..tile_registers(v) {
        let _ = writeln!(
            w,
            "    var qr{i}: vec4<f16>;\n    var kr{i}: vec4<f16>;\n    var vr{i}: vec4<f16>;"
        );
    }
    emit_tile_fetch(&mut w, v, "    ", "q", ["head_row", "row0", "p.tq"]);
    emit_tile_fetch(&mut w, v, "    ", "k", ["kvrow", "0u", "p.tk_stride"]);
    emit_tile_stage(&mut w, v, "    ", "q", "ks");
    w.push_str("    workgroupBarrier();\n");
    for dc in 0..dp / 16 {
        let _ = writeln!(
            w,
            "    let q{dc} = coopLoadT<coop_mat16x16<f16, A>>(&ks[sg * {}u + {}u], {line}u);",
            16 * line,
            dc * 16
        );
    }
    // Pass 1: the row statistics.
    w.push_str(
        "    var m = -1.0e30;
    var l = 0.0;
    for (var t0 = 0u; t0 < n_keys; t0 += 64u) {
        workgroupBarrier();
",
    );
    emit_tile_stage(&mut w, v, "        ", "k", "ks");
    w.push_str(
        "        workgroupBarrier();\n        let tn = t0 + 64u;\n        if (tn < n_keys) {\n",
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "k",
        ["kvrow", "tn", "p.tk_stride"],
    );
    w.push_str("        }\n");
    emit_scores(&mut w, v);
    w.push_str("        workgroupBarrier();\n");
    emit_lane_scores(&mut w);
    w.push_str(
        "        let mt = max(max(max(x0, x1), max(x2, x3)), max(max(x4, x5), max(x6, x7)));
        let mn = max(m, max(max(mt.x, mt.y), max(mt.z, mt.w)));
        let e = exp2(x0 - mn) + exp2(x1 - mn) + exp2(x2 - mn) + exp2(x3 - mn)
            + exp2(x4 - mn) + exp2(x5 - mn) + exp2(x6 - mn) + exp2(x7 - mn);
        l = l * exp2(m - mn) + e.x + e.y + e.z + e.w;
        m = mn;
    }
    // The row's two halves meet; lse2 is the logsumexp in log2 units.
    let mo = subgroupShuffleXor(m, 16u);
    let lo = subgroupShuffleXor(l, 16u);
    let mr = max(m, mo);
    let lse2 = mr + log2(l * exp2(m - mr) + lo * exp2(mo - mr));
",
    );
    // Pass 2: P and O.
    for dc in 0..dp / 16 {
        let _ = writeln!(w, "    var o{dc} = coop_mat16x16<f32, C>();");
    }
    emit_tile_fetch(&mut w, v, "    ", "k", ["kvrow", "0u", "p.tk_stride"]);
    emit_tile_fetch(&mut w, v, "    ", "v", ["kvrow", "0u", "p.tk_stride"]);
    w.push_str(
        "    for (var t0 = 0u; t0 < n_keys; t0 += 64u) {
        workgroupBarrier();
",
    );
    emit_tile_stage(&mut w, v, "        ", "k", "ks");
    emit_tile_stage(&mut w, v, "        ", "v", "vs");
    w.push_str(
        "        workgroupBarrier();\n        let tn = t0 + 64u;\n        if (tn < n_keys) {\n",
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "k",
        ["kvrow", "tn", "p.tk_stride"],
    );
    emit_tile_fetch(
        &mut w,
        v,
        "            ",
        "v",
        ["kvrow", "tn", "p.tk_stride"],
    );
    w.push_str("        }\n");
    emit_scores(&mut w, v);
    w.push_str("        workgroupBarrier();\n");
    emit_lane_scores(&mut w);
    for j in 0..8 {
        let _ = writeln!(w, "        x{j} = exp2(x{j} - lse2);");
    }
    w.push_str("        if (dropping()) {\n");
    for j in 0..8 {
        let _ = writeln!(
            w,
            "            x{j} *= drop4(head_row + i, kb + {}u);",
            4 * j
        );
    }
    w.push_str("        }\n");
    let _ = writeln!(
        w,
        "        let pb = sg * {}u + r * {plen}u + 32u * hh;",
        16 * plen
    );
    for j in 0..8 {
        for (e, comp) in ["x", "y", "z", "w"].iter().enumerate() {
            let _ = writeln!(
                w,
                "        ps[pb + {}u] = f16(x{j}.{comp});",
                4 * j + e as u32
            );
        }
    }
    w.push_str("        workgroupBarrier();\n");
    for kc in 0..KEYS / 16 {
        let _ = writeln!(
            w,
            "        let p{kc} = coopLoadT<coop_mat16x16<f16, A>>(&ps[sg * {}u + {}u], {plen}u);",
            16 * plen,
            kc * 16
        );
        for dc in 0..dp / 16 {
            let _ = writeln!(
                w,
                "        o{dc} = coopMultiplyAdd(p{kc}, coopLoadT<coop_mat16x16<f16, B>>(&vs[{}u], {line}u), o{dc});",
                kc * 16 * line + dc * 16
            );
        }
    }
    w.push_str("    }\n    workgroupBarrier();\n");
    // O leaves through the subgroup's scratch.
    for dc in 0..dp / 16 {
        let _ = writeln!(
            w,
            "    {{\n        let si = sg * {}u + {}u;\n        coopStoreT(o{dc}, &ss[si], {S_LINE}u);\n    }}",
            16 * S_LINE,
            dc * 16
        );
    }
    let units = dp / 4;
    let store = if v.half { "vec4<f16>(y)" } else { "y" };
    let _ = writeln!(
        w,
        "    workgroupBarrier();
    for (var u = lane; u < {total}u; u += 32u) {{
        let rr = u / {units}u;
        let c4 = u % {units}u;
        let row = row0 + 16u * sg + rr;
        if (row < p.tq && c4 < d4) {{
            let s = sg * {sl16}u + rr * {S_LINE}u + 4u * c4;
            let y = vec4<f32>(ss[s], ss[s + 1u], ss[s + 2u], ss[s + 3u]);
            o[(head_row + row) * d4 + c4] = {store};
        }}
    }}
    if (hh == 0u && i < p.tq) {{
        // natural-log logsumexp
        lse[head_row + i] = lse2 * 0.6931471805599453;
    }}
}}",
        total = 16 * units,
        sl16 = 16 * S_LINE,
    );
    w
}

/// The generated kernels, by variant.
static KERNELS: Variants<CoopFwd> = Variants::new();

/// The variant a call on `dev` with head dim `d` runs, if the tensor-core forward takes
/// it: a device with tensor cores, subgroup operations and room for the tiles, and a head
/// dim up to 64 that is a multiple of 4.
pub(super) fn variant_for(dev: &Device, d: usize, half: bool) -> Option<CoopFwd> {
    let info = dev.info();
    if !info.tensor_cores
        || !info.features.contains(wgpu::Features::SUBGROUP)
        || d > MAX_D
        || !d.is_multiple_of(4)
    {
        return None;
    }
    let v = CoopFwd {
        dp: d.div_ceil(16) as u32 * 16,
        half,
    };
    (v.shared_bytes() <= info.limits.max_compute_workgroup_storage_size).then_some(v)
}

/// Records the forward of checked `params` on the tensor cores: returns `o` (q's shape and
/// dtype) and `lse` `[B, H, Tq]` (f32).
pub(super) fn forward(
    v: CoopFwd,
    q: &Tensor,
    k: &Tensor,
    vt: &Tensor,
    params: &AttentionParams,
) -> Result<(Tensor, Tensor), Error> {
    let dev = q.device();
    let o = dev.empty(q.shape(), if v.half { DType::F16 } else { DType::F32 })?;
    let lse = dev.empty(&q.shape()[..3], DType::F32)?;
    let kernel: &RawKernel = KERNELS.get(&v, || {
        (format!("attention_fwd_coop_d{}", v.dp), generate(&v))
    })?;
    let grid = [params.tq.div_ceil(ROWS), params.heads, params.batch];
    v.layout().dispatch(
        kernel,
        dropout::constants(params),
        params,
        &[q, k, vt, &o, &lse],
        grid,
    )?;
    Ok((o, lse))
}

/// Every variant's WGSL, for the naga test (no device here has to run them).
pub(crate) fn kernels() -> Vec<(String, String)> {
    [16, 32, 48, 64]
        .into_iter()
        .flat_map(|dp| [false, true].map(|half| CoopFwd { dp, half }))
        .map(|v| {
            let name = format!(
                "attention_fwd_coop_d{}{}",
                v.dp,
                if v.half { "_f16" } else { "" }
            );
            (name, generate(&v))
        })
        .collect()
}
