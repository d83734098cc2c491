//! What the tensor-core attention kernels share (`coop_fwd.rs`, `coop_bwd.rs`): f16 q, k,
//! v (f16 tensors, or f32 ones rounded to f16 as they are loaded, which is what autocast
//! runs, or f32 ones split into two f16 parts each for f32 accuracy, `split.rs`), f32
//! accumulators and softmax, on WGSL cooperative matrices, for head dims up to 64 that are
//! multiples of 4 on devices with tensor cores ([`crate::DeviceInfo::tensor_cores`]) and
//! subgroup operations. The split variants walk the other side in tiles of 32 rows where
//! the others take 64 (`Coop::tile`); everything below describes the 64-row tiles.
//!
//! A workgroup is four subgroups of 32; each owns 16 rows of the block (queries, or keys
//! in the dk/dv pass) and keeps their operand fragments in registers for the whole
//! kernel. The other side goes by in tiles of 64 rows, staged in workgroup memory as f16
//! `[row][dim]` lines padded by 8 halves against bank conflicts (as the matmul stages its
//! operands); the next tile is loaded into registers while the current one multiplies.
//! The staged tiles and the f16 scratch are `array<vec4<f16>>`, written one 8-byte store
//! per four halves, and fragments load from them with offsets and strides in those
//! units: measured on an H200 (BENCHMARKS.md, 2026-11-30 (tenth session)), B8 H8 T1024
//! forward + backward 0.656 -> 0.633 ms, with dropout 0.759 -> 0.737, GPT-2's T1024
//! 0.952 -> 0.922, against four scalar f16 stores. The f32 scratch as `vec4<f32>` (one
//! 16-byte read per lane's four values) was measured too and not kept: 5-7% slower
//! without dropout (0.673 ms at B8 H8 T1024), 1% faster with it.
//! Cooperative matrices give no access to their elements, so every product whose
//! elements the softmax needs goes through a per-subgroup f32 scratch (`coopStoreT`), and
//! what the scalar code makes of it (P, dS) goes back through an f16 one for the next
//! product.
//!
//! The tiles and scratches fill 44 KiB of workgroup memory, so one workgroup runs per SM
//! on an H200 (the driver fits two only below 24 KiB each; see `CoopTile::PRESETS`). A
//! forward on 32-key tiles (23.5 KiB: two per SM) was measured and not kept: 13% faster
//! without dropout, 14% slower with it (B8 H8 T1024; BENCHMARKS.md, 2026-11-29 (night)).

use std::fmt::Write as _;

use super::layout::AttentionParams;
use crate::Device;
use crate::spec::{Layout, Slot};

/// Rows per workgroup (four subgroups of 16).
pub(super) const ROWS: u32 = 64;
/// Threads per workgroup.
pub(super) const THREADS: u32 = 128;
/// Halves of padding after each staged line.
const PAD: u32 = 8;
/// The largest head dim the kernels take (the tiles and scratches fill 44 KiB at 64).
const MAX_D: usize = 64;

/// Everything that changes a kernel's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Coop {
    /// Head dim rounded up to 16 (the fragments' depth).
    pub dp: u32,
    /// The tensors are f16 (else f32, the operands rounded to f16 on load).
    pub half: bool,
    /// `o` and its gradient are token-major, `[B, T, H, D]` (what an output projection
    /// reads as `[B, T, H·D]`), where q, k and v are `[B, H, T, D]`: see [`TOKEN_ROWS`].
    pub tm: bool,
    /// q, k and v are read from one packed projection `[B, T, (H + 2 Hkv) D]` (q's heads,
    /// k's, v's: the same tensor bound three times), not `[B, H, T, D]` tensors; only with
    /// `tm`.
    pub packed: bool,
    /// f32 tensors computed to f32 accuracy (not with `half`): see [`crate::ops::attention`]'s
    /// `split` module.
    pub split: bool,
}

/// Where a kernel reads rows of `src` (`q`, `k`, `v`: a [`row_unit`] base): the query's
/// head (`head_row`) or kv head (`kvrow`) of `[B, H, T, D]` tensors, or the packed
/// projection's templates.
pub(super) fn rows_of(v: &Coop, src: &str) -> &'static str {
    match (v.packed, src) {
        (true, "q") => "(b * p.tq + {r}) * (p.heads + 2u * p.kv_heads) + h",
        (true, "k") => "(b * p.tq + {r}) * (p.heads + 2u * p.kv_heads) + p.heads + g",
        (true, _) => "(b * p.tq + {r}) * (p.heads + 2u * p.kv_heads) + p.heads + p.kv_heads + g",
        (false, "q") => "head_row",
        (false, _) => "kvrow",
    }
}

/// The row unit (`D` elements) of row `{r}` of head `h` of batch `b` in a token-major
/// `[B, T, H, D]` tensor, for the `base` of [`emit_tile_fetch`] and [`emit_store`].
pub(super) const TOKEN_ROWS: &str = "(b * p.tq + {r}) * p.heads + h";

/// The row unit of row `r` (a WGSL expression) from a `base`: a template holding `{r}`
/// (a token-major tensor, [`TOKEN_ROWS`]), or the first row unit of a head-major
/// `[B, H, T, D]` head, followed by its rows.
pub(super) fn row_unit(base: &str, r: &str) -> String {
    if base.contains("{r}") {
        base.replace("{r}", r)
    } else {
        format!("{base} + {r}")
    }
}

impl Coop {
    /// Every variant, for the naga test.
    pub(super) fn all() -> impl Iterator<Item = Coop> {
        [16, 32, 48, 64]
            .into_iter()
            .flat_map(|dp| {
                [(false, false), (true, false), (false, true)]
                    .map(move |(half, split)| (dp, half, split))
            })
            .flat_map(|(dp, half, split)| {
                [(false, false), (true, false), (true, true)].map(move |(tm, packed)| Coop {
                    dp,
                    half,
                    tm,
                    packed,
                    split,
                })
            })
    }

    /// The variant a call on `dev` with head dim `d` runs, if the tensor-core kernels take
    /// it: a device with tensor cores (which implies subgroup operations) and room for the
    /// tiles, and a head dim up to 64 that is a multiple of 4. `half` (f16) tensors, and
    /// f32 ones with autocast's `f16_inputs`, take the f16 kernels; f32 tensors without it
    /// the `split` ones (f32 accuracy).
    pub(super) fn pick(
        dev: &Device,
        d: usize,
        half: bool,
        f16_inputs: bool,
        tm: bool,
        packed: bool,
    ) -> Option<Coop> {
        let info = dev.info();
        if !info.tensor_cores || d > MAX_D || !d.is_multiple_of(4) {
            return None;
        }
        let v = Coop {
            dp: d.div_ceil(16) as u32 * 16,
            half,
            tm: tm || packed,
            packed,
            split: !half && !f16_inputs,
        };
        (v.shared_bytes() <= info.limits.max_compute_workgroup_storage_size).then_some(v)
    }

    /// Rows per tile of the other side: 64, or 32 for `split` (its staged tiles and f16
    /// scratch are twice as large, a high and a low part, and one workgroup has at most
    /// 48 KiB of workgroup memory).
    pub(super) fn tile(&self) -> u32 {
        if self.split { 32 } else { 64 }
    }

    /// Floats per line of a subgroup's f32 scratch: 64 (a 64-row tile's scores, or the
    /// outputs of a head dim up to 64 on their way out) and 4 of padding (lines 17 vec4s
    /// apart, so 8 consecutive lanes of a four-element read hit 8 distinct bank groups).
    pub(super) fn s_line(&self) -> u32 {
        MAX_D as u32 + 4
    }

    /// Halves per line of a subgroup's f16 scratch.
    pub(super) fn p_line(&self) -> u32 {
        self.tile() + PAD
    }

    /// The parts each f16 operand has: 2 (high and low) for `split`, else 1.
    fn parts(&self) -> u32 {
        if self.split { 2 } else { 1 }
    }

    /// Halves per staged line.
    fn line(&self) -> u32 {
        self.dp + PAD
    }

    /// Bytes of workgroup memory: two staged tiles, each subgroup's f32 and f16 scratch,
    /// and the per-row values of the forward (flags, factors) or the dk/dv pass (lse,
    /// delta).
    fn shared_bytes(&self) -> u32 {
        let parts = self.parts();
        parts * 2 * 2 * self.tile() * self.line()
            + 4 * 4 * 16 * self.s_line()
            + parts * 2 * 4 * 16 * self.p_line()
            + 4 * (4 + ROWS).max(2 * self.tile())
    }

    /// The WGSL type of a q/k/v/o/gradient binding: four elements per index.
    fn tensor_type(&self) -> &'static str {
        if self.half {
            "array<vec4<f16>>"
        } else {
            "array<vec4<f32>>"
        }
    }

    /// The layout of `slots`, in order, each `(name, written, tensor)`: a tensor binding
    /// ([`Coop::tensor_type`]) when `tensor`, else per-row f32 values (lse, delta);
    /// read-write when `written`.
    pub(super) fn layout(
        &self,
        slots: &[(&'static str, bool, bool)],
    ) -> Layout<AttentionParams, Vec<Slot>> {
        let mut slots: Vec<Slot> = slots
            .iter()
            .map(|&(name, written, tensor)| {
                let ty = if tensor {
                    self.tensor_type()
                } else {
                    "array<f32>"
                };
                if written {
                    Slot::ReadWrite(name, ty)
                } else {
                    Slot::Read(name, ty)
                }
            })
            .collect();
        if self.split {
            // The tensors' largest magnitudes (`split::maxima`).
            slots.push(Slot::Read("amax", "array<f32>"));
        }
        Layout::with_slots(slots)
    }

    /// The dtype of the gradients and outputs the kernels write.
    pub(super) fn dtype(&self) -> crate::DType {
        if self.half {
            crate::DType::F16
        } else {
            crate::DType::F32
        }
    }

    /// Registers (`vec4`s) a thread holds of `lines` lines (a tile, or a block's
    /// [`ROWS`]).
    fn registers(&self, lines: u32) -> u32 {
        lines * (self.dp / 4) / THREADS
    }

    /// Where the low part of a staged tile starts in its array (`vec4<f16>` units): the
    /// arrays hold the high part's lines, then the low part's.
    pub(super) fn low(&self) -> u32 {
        self.tile() * self.line() / 4
    }

    /// The WGSL type of a tile's registers: f32 for `split` (split as they are staged),
    /// else f16.
    fn register_type(&self) -> &'static str {
        if self.split { "vec4<f32>" } else { "vec4<f16>" }
    }
}

/// The header, the kernel's workgroup arrays (`ks`, `vs`: staged tiles; `ss`: f32 scratch;
/// `ps`: f16 scratch) and `NEG`, after the bindings of `layout`.
pub(super) fn emit_header(
    w: &mut String,
    v: &Coop,
    what: &str,
    layout: &Layout<AttentionParams, Vec<Slot>>,
) {
    let _ = writeln!(
        w,
        "// tang tensor-core attention {what}, head dim {}, {} (generated; see attention/coop*.rs)\nenable f16;\nenable wgpu_cooperative_matrix;",
        v.dp,
        if v.half {
            "f16"
        } else if v.split {
            "f32 split into f16 high and low parts"
        } else {
            "f32 rounded to f16"
        }
    );
    w.push_str(&layout.declarations());
    super::dropout::emit_functions(w);
    let tile = v.tile();
    let _ = writeln!(
        w,
        "
const NEG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;
// Two staged tiles [{tile} rows][dim] (f16, four per element: one 8-byte store per four)
var<workgroup> ks: array<vec4<f16>, {kv}>;
var<workgroup> vs: array<vec4<f16>, {kv}>;
// Per subgroup: an f32 scratch [16][{tile}] (products, results on the way out) and an f16
// one [16][{tile}] (P or dS on the way into a product; four per element)
var<workgroup> ss: array<f32, {s}>;
var<workgroup> ps: array<vec4<f16>, {pl}>;
",
        kv = v.parts() * v.low(),
        s = 4 * 16 * v.s_line(),
        pl = 4 * 16 * v.p_line() / 4,
    );
    if v.split {
        super::split::emit_declarations(w, 4 * 16 * v.p_line() / 4);
    }
}

/// Emits the global loads of `lines` lines of `src` (line `j` is row `{first} + j` of the
/// head, whose rows start at global row `{base}` (or a [`row_unit`] template), present
/// when `{first} + j < {rows}`) into
/// the thread's registers `{src}r0 ..` as f16, zero past the rows or the head dim. They
/// are staged by [`emit_tile_stage`]; in between the thread works on the previous tile, so
/// the loads' latency hides behind it.
///
/// Each load computes its index from its row (about 13 instructions on an H200). Loads
/// from a per-thread base with uniform offsets cut the forward's instructions by 14% and
/// made every f16 kernel 7-18% slower (BENCHMARKS.md, 2026-11-30 (twelfth session)), so
/// the index arithmetic stays.
pub(super) fn emit_tile_fetch(
    w: &mut String,
    v: &Coop,
    ind: &str,
    src: &str,
    [base, first, rows]: [&str; 3],
    lines: u32,
) {
    let units = v.dp / 4;
    let unit = row_unit(base, &format!("{first} + j"));
    let read = format!("{src}[({unit}) * d4 + c4]");
    let read = if v.half || v.split {
        read
    } else {
        format!("vec4<f16>({read})")
    };
    let ty = v.register_type();
    for i in 0..v.registers(lines) {
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    let j = e / {units}u;
{ind}    let c4 = e % {units}u;
{ind}    {src}r{i} = {ty}();
{ind}    if ({first} + j < {rows} && c4 < d4) {{
{ind}        {src}r{i} = {read};
{ind}    }}
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Declares the registers of [`emit_tile_fetch`] of `lines` lines for each of `srcs`.
pub(super) fn emit_tile_registers(w: &mut String, v: &Coop, srcs: &[&str], lines: u32) {
    for src in srcs {
        for i in 0..v.registers(lines) {
            let _ = writeln!(w, "    var {src}r{i}: {};", v.register_type());
        }
    }
}

/// Emits the stores of the registers `{src}r0 ..` of [`emit_tile_fetch`] (`lines`
/// lines) into the workgroup array `dst` (`vec4<f16>` units) as `[line][dim]` lines: one
/// 8-byte store per register (faster here than four scalar f16 stores: the module doc).
/// `split` stores the high part of the values times `{src}`'s scale there and the low
/// part after it ([`Coop::low`]); a block of [`ROWS`] lines, twice a split tile, fills
/// `ks` with the high part and `vs` with the low one (see [`emit_row_blocks`]).
pub(super) fn emit_tile_stage(
    w: &mut String,
    v: &Coop,
    ind: &str,
    src: &str,
    dst: &str,
    lines: u32,
) {
    let units = v.dp / 4;
    for i in 0..v.registers(lines) {
        let at = format!("(e / {units}u) * {}u + e % {units}u", v.line() / 4);
        let store = if v.split {
            let (hi, lo) = if lines == v.tile() {
                (
                    format!("{dst}[{at}]"),
                    format!("{dst}[{}u + {at}]", v.low()),
                )
            } else {
                (format!("ks[{at}]"), format!("vs[{at}]"))
            };
            super::split::stores(
                &format!("{src}r{i} * {}", super::split::scale(src)),
                &hi,
                &lo,
            )
        } else {
            format!("{dst}[{at}] = {src}r{i};")
        };
        let _ = writeln!(
            w,
            "{ind}{{
{ind}    let e = tid + {e0}u;
{ind}    {store}
{ind}}}",
            e0 = i * THREADS,
        );
    }
}

/// Emits the staging of blocks of [`ROWS`] lines (`(src, dst, name)`: the registers of
/// `src` into `dst`) and the loads of each subgroup's 16 rows of them as `dp / 16` A
/// fragments `{name}0 ..` (rows by dims), kept for the whole kernel. `split` stages one
/// block at a time (its high part fills `ks`, its low part `vs`) and loads the low parts
/// as `{name}l0 ..` too.
pub(super) fn emit_row_blocks(w: &mut String, v: &Coop, blocks: &[(&str, &str, &str)]) {
    if !v.split {
        for (src, dst, _) in blocks {
            emit_tile_stage(w, v, "    ", src, dst, ROWS);
        }
        w.push_str("    workgroupBarrier();\n");
        for (_, dst, name) in blocks {
            emit_row_fragments(w, v, name, &[("", dst)]);
        }
        return;
    }
    for (n, (src, dst, name)) in blocks.iter().enumerate() {
        if n > 0 {
            // Every subgroup has its fragments of the block before.
            w.push_str("    workgroupBarrier();\n");
        }
        emit_tile_stage(w, v, "    ", src, dst, ROWS);
        w.push_str("    workgroupBarrier();\n");
        emit_row_fragments(w, v, name, &[("", "ks"), ("l", "vs")]);
    }
}

/// Emits the loads of the subgroup's 16 rows of staged blocks as A fragments
/// `{name}{part}0 ..`, each `(part, array)`.
fn emit_row_fragments(w: &mut String, v: &Coop, name: &str, parts: &[(&str, &str)]) {
    let line = v.line() / 4;
    for (part, src) in parts {
        for dc in 0..v.dp / 16 {
            let _ = writeln!(
                w,
                "    let {name}{part}{dc} = coopLoadT<coop_mat16x16<f16, A>>(&{src}[sg * {}u + {}u], {line}u);",
                16 * line,
                dc * 4
            );
        }
    }
}

/// Emits the product of the subgroup's fragments `{a}0 ..` (16 rows by dims) with the
/// transposed staged tile `src` (64 lines by dims): 16 x 64 into the subgroup's f32
/// scratch `ss`.
pub(super) fn emit_product_to_scratch(w: &mut String, v: &Coop, a: &str, src: &str) {
    let line = v.line() / 4;
    let s_line = v.s_line();
    w.push_str("        {\n");
    for c in 0..v.tile() / 16 {
        let _ = writeln!(w, "        var fr{c} = coop_mat16x16<f32, C>();");
        for dc in 0..v.dp / 16 {
            // B[dim][line] from [line][dim] lines: column-major.
            let b = |low: u32| {
                format!(
                    "coopLoad<coop_mat16x16<f16, B>>(&{src}[{}u], {line}u)",
                    low + c * 16 * line + dc * 4
                )
            };
            for (a, b) in super::split::terms(v, &format!("{a}{dc}"), &format!("{a}l{dc}"), b) {
                let _ = writeln!(w, "        fr{c} = coopMultiplyAdd({a}, {b}, fr{c});");
            }
        }
        let _ = writeln!(
            w,
            "        {{\n            let si = sg * {}u + {}u;\n            coopStoreT(fr{c}, &ss[si], {s_line}u);\n        }}",
            16 * s_line,
            c * 16
        );
    }
    w.push_str("        }\n");
}

/// Emits `{acc}0 .. += P src`: the subgroup's f16 scratch `ps` (16 rows by the tile's 64
/// lines) times the staged tile `src` (64 lines by dims).
pub(super) fn emit_accumulate(w: &mut String, v: &Coop, acc: &str, src: &str) {
    // Offsets and strides count `vec4<f16>` units.
    let line = v.line() / 4;
    let p_line = v.p_line() / 4;
    let parts: &[&str] = if v.split { &["", "l"] } else { &[""] };
    w.push_str("        {\n");
    for c in 0..v.tile() / 16 {
        for part in parts {
            let _ = writeln!(
                w,
                "        let pf{part}{c} = coopLoadT<coop_mat16x16<f16, A>>(&ps{part}[sg * {}u + {}u], {p_line}u);",
                16 * p_line,
                c * 4
            );
        }
        for dc in 0..v.dp / 16 {
            let b = |low: u32| {
                format!(
                    "coopLoadT<coop_mat16x16<f16, B>>(&{src}[{}u], {line}u)",
                    low + c * 16 * line + dc * 4
                )
            };
            for (a, b) in super::split::terms(v, &format!("pf{c}"), &format!("pfl{c}"), b) {
                let _ = writeln!(
                    w,
                    "        {acc}{dc} = coopMultiplyAdd({a}, {b}, {acc}{dc});"
                );
            }
        }
    }
    w.push_str("        }\n");
}

/// Emits the way out of the accumulators `{acc}0 ..` (16 rows by dims per subgroup): into
/// the f32 scratch, then four elements per lane and store into `dst` (a tensor binding),
/// row `rr` of the subgroup at global row `({base}) + {first} + 16 sg + rr` (or where the
/// [`row_unit`] template `base` puts row `{first} + 16 sg + rr`) when
/// `{first} + 16 sg + rr < {rows}`, times `{factor}`. Starts with a barrier.
pub(super) fn emit_store(
    w: &mut String,
    v: &Coop,
    acc: &str,
    dst: &str,
    [base, first, rows]: [&str; 3],
    factor: &str,
) {
    let s_line = v.s_line();
    w.push_str("    workgroupBarrier();\n");
    for dc in 0..v.dp / 16 {
        let _ = writeln!(
            w,
            "    {{\n        let si = sg * {}u + {}u;\n        coopStoreT({acc}{dc}, &ss[si], {s_line}u);\n    }}",
            16 * s_line,
            dc * 16
        );
    }
    let units = v.dp / 4;
    let value = if v.half {
        format!("vec4<f16>(y * {factor})")
    } else {
        format!("y * {factor}")
    };
    let _ = writeln!(
        w,
        "    workgroupBarrier();
    for (var u = lane; u < {total}u; u += 32u) {{
        let rr = u / {units}u;
        let c4 = u % {units}u;
        let row = {first} + 16u * sg + rr;
        if (row < {rows} && c4 < d4) {{
            let s = sg * {sl16}u + rr * {s_line}u + 4u * c4;
            let y = vec4<f32>(ss[s], ss[s + 1u], ss[s + 2u], ss[s + 3u]);
            {dst}[({unit}) * d4 + c4] = {value};
        }}
    }}",
        total = 16 * units,
        sl16 = 16 * s_line,
        unit = row_unit(base, "row"),
    );
}

/// The entry point's start: the workgroup's ids and the subgroup and lane.
pub(super) fn emit_main(w: &mut String) {
    let _ = writeln!(
        w,
        "@compute @workgroup_size({THREADS})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let b = wg.z;
    let d4 = p.d / 4u;
    let sg = tid / 32u;
    let lane = tid % 32u;"
    );
}
