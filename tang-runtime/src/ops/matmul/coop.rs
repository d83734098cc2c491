//! The tensor-core matmul: f16 products with f32 accumulation on WGSL cooperative
//! matrices (`coop_mat16x16`), one shader per [`CoopVariant`].
//!
//! Scheme (the block shape is a [`CoopTile`]; measured on an H200 against other
//! schedules, BENCHMARKS.md):
//! - A workgroup of `sg_m x sg_n` subgroups of 32 computes a block of C; each subgroup
//!   holds `frag_m x frag_n` 16 x 16 f32 accumulator fragments.
//! - Both operands' k tiles (`bk` deep) are staged in workgroup memory as f16, each line
//!   padded by 8 halves (unpadded lines ran 2-3x slower: bank conflicts of the fragment
//!   loads). Staging keeps the operand's own memory order (no transposing stores): a
//!   fragment is then read row-major (`coopLoadT`) or column-major (`coopLoad`).
//! - The next k tile is loaded into registers (four elements per load, f32 operands
//!   rounded to f16 there) while the fragments of the current one multiply: with one
//!   staging buffer a barrier pair per k tile, with two one barrier. Loads are guarded
//!   without branches (zero fill), or clamped where k is a multiple of `bk`.
//! - C leaves through workgroup memory, one fragment (or one row of fragments) at a
//!   time per subgroup, so bounds, the bias, the epilogue and an f16 result are applied
//!   per element and the global stores are coalesced.
//!
//! The WGSL rules this respects (naga 30 and NVIDIA's driver): every cooperative-matrix
//! operation sits in uniform control flow at the top level of the loop (the k loop's exit
//! is workgroup-uniform), a `coopStoreT` target index is bound to a `let` first (naga's
//! SPIR-V writer fails on an inline expression there), and fragment pointers address
//! `array<f16>` workgroup memory (pointers into `u32`-typed memory are rejected by the
//! driver's compiler).

use std::fmt::Write as _;

use super::codegen::{MatmulParams, emit_grouped_origin};
use super::coop_tile::CoopTile;
use super::store::emit_coop_store;
use crate::spec::{Layout, Slot};

/// Halves of padding after every staged line.
const PAD: u32 = CoopTile::PAD;

/// Everything that changes the shader text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct CoopVariant {
    /// A is stored `[k, m]`.
    pub ta: bool,
    /// B is stored `[n, k]`.
    pub tb: bool,
    /// A's contiguous dimension is a multiple of 4 (four-element loads).
    pub va: bool,
    /// B's contiguous dimension is a multiple of 4.
    pub vb: bool,
    /// n is a multiple of 4 (four-element stores of C and loads of the bias).
    pub vc: bool,
    /// A is stored as f16 (else f32, rounded to f16 on load).
    pub ha: bool,
    /// B is stored as f16.
    pub hb: bool,
    /// C is stored as f16 (else f32).
    pub hc: bool,
    /// k is a positive multiple of the k tile: loads need no zero fill, only their rows
    /// (and columns) clamped into the matrix (see [`emit_load`]).
    pub kexact: bool,
    /// A bias row is added on store.
    pub bias: bool,
    /// `tang_epilogue` is applied on store.
    pub epilogue: bool,
    /// The block shape and staging.
    pub tile: CoopTile,
}

impl CoopVariant {
    /// The variant of the default tile whose flags are the low bits of `bits`, in field
    /// order (`ta` is bit 0); for enumerating them.
    pub(crate) fn from_bits(bits: u32) -> CoopVariant {
        let bit = |k: u32| bits & (1 << k) != 0;
        CoopVariant {
            ta: bit(0),
            tb: bit(1),
            va: bit(2),
            vb: bit(3),
            vc: bit(4),
            ha: bit(5),
            hb: bit(6),
            hc: bit(7),
            kexact: bit(8),
            bias: bit(9),
            epilogue: bit(10),
            tile: CoopTile::DEFAULT,
        }
    }
}

/// The WGSL type of an operand or result binding.
fn storage(half: bool, vec: bool) -> &'static str {
    match (half, vec) {
        (true, true) => "array<vec4<f16>>",
        (true, false) => "array<f16>",
        (false, true) => "array<vec4<f32>>",
        (false, false) => "array<f32>",
    }
}

/// The params (shared with the f32 tile: [`MatmulParams`]) and bindings of `v`.
pub(crate) fn layout(v: &CoopVariant) -> Layout<MatmulParams, Vec<Slot>> {
    let mut slots = vec![
        Slot::Read("a", storage(v.ha, v.va)),
        Slot::Read("b", storage(v.hb, v.vb)),
    ];
    if v.bias {
        slots.push(Slot::Read("bias", storage(false, v.vc)));
    }
    slots.push(Slot::ReadWrite("c", storage(v.hc, v.vc)));
    Layout::with_slots(slots)
}

/// One operand's staging plan.
struct Staged {
    /// `a` or `b`: the binding; `sa`/`sb` is its workgroup array.
    name: char,
    /// Stored f16.
    half: bool,
    /// Four-element global loads.
    vec: bool,
    /// Elements along k are contiguous in memory (A not transposed, B transposed).
    kcontig: bool,
    /// Clamped loads instead of zero-filled ones ([`CoopVariant::kexact`]).
    kexact: bool,
    /// The block's extent along this operand's rows (m for A, n for B).
    rows: u32,
    /// The k tile's depth.
    bk: u32,
    /// Threads per workgroup.
    threads: u32,
    /// Fragments per subgroup along `rows`.
    frags: u32,
}

impl Staged {
    /// Halves per staged line: k runs along lines when `kcontig`, else the block's rows.
    fn line(&self) -> u32 {
        if self.kcontig {
            self.bk + PAD
        } else {
            self.rows + PAD
        }
    }
    /// Units of four elements along one line.
    fn units_per_line(&self) -> u32 {
        if self.kcontig {
            self.bk / 4
        } else {
            self.rows / 4
        }
    }
    /// `read` (a value loaded from the binding) as f16: itself when stored f16, else
    /// converted by `ty` (`f16` or `vec4<f16>`), which rounds to nearest even.
    fn as_f16(&self, read: String, ty: &str) -> String {
        if self.half {
            read
        } else {
            format!("{ty}({read})")
        }
    }
    /// The staged line (a WGSL expression) of unit `u`'s line `u / units_per_line` as
    /// the threads count them.
    ///
    /// With k contiguous and k tiles of 32 a subgroup's 32 threads write four lines of
    /// eight units, and lines are 40 halves (20 banks) apart, so consecutive lines start
    /// at banks 0, 20, 8 and 28: the four-element stores of a half-subgroup's two lines
    /// overlap in banks and take two passes. Writing the lines in the order 0, 4, 1, 5,
    /// 2, 6, 3, 7 (each group of eight) pairs lines 16 banks apart, which the
    /// half-subgroups write without a conflict. Loads from global memory follow the same
    /// order, so each thread still reads whole 8-byte units of one row. Measured on an
    /// H200 (BENCHMARKS.md, 2026-11-29 (fifth session)): 4096³ 268 -> 279 TFLOP/s,
    /// 4096x4096x1024 `A·Bᵀ` 209 -> 236, the GPT's 16384x1536x384 `A·Bᵀ` 178 -> 193.
    fn line_of(&self, u: &str) -> String {
        let per = self.units_per_line();
        if self.kcontig && self.bk == 32 {
            let q = format!("({u} / {per}u)");
            format!("(({q} & ~7u) | (({q} & 1u) << 2u) | (({q} >> 1u) & 3u))")
        } else {
            format!("({u} / {per}u)")
        }
    }
    /// Prefetch registers per thread (units of four elements).
    fn registers(&self) -> u32 {
        self.rows * self.bk / 4 / self.threads
    }
    /// The length in halves of one staging buffer.
    fn len(&self) -> u32 {
        if self.kcontig {
            self.rows * self.line()
        } else {
            self.bk * self.line()
        }
    }
}

/// The operands' staging plans.
fn staged(v: &CoopVariant) -> [Staged; 2] {
    let t = &v.tile;
    [
        Staged {
            name: 'a',
            half: v.ha,
            vec: v.va,
            kcontig: !v.ta,
            kexact: v.kexact,
            rows: t.block_m(),
            bk: t.bk,
            threads: t.threads(),
            frags: t.frag_m,
        },
        Staged {
            name: 'b',
            half: v.hb,
            vec: v.vb,
            kcontig: v.tb,
            kexact: v.kexact,
            rows: t.block_n(),
            bk: t.bk,
            threads: t.threads(),
            frags: t.frag_n,
        },
    ]
}

/// Statements loading unit `u` of k tile `k0` of `op` into register `p<name><i>` (zero
/// outside the matrix).
fn emit_load(w: &mut String, op: &Staged, i: u32) {
    let n = op.name;
    let per = op.units_per_line();
    let (r0, rmax, ld, base) = if n == 'a' {
        ("m0", "p.m", "p.lda", "a_base")
    } else {
        ("n0", "p.n", "p.ldb", "b_base")
    };
    let _ = writeln!(
        w,
        "        {{\n            let u = lid + {}u;",
        i * op.threads
    );
    // `r`: row of the operand (m for A, n for B); `kk`: index along k. The unit's four
    // elements run along the contiguous dimension.
    if op.kcontig {
        let _ = writeln!(
            w,
            "            let r = {r0} + {};\n            let kk = k0 + (u % {per}u) * 4u;",
            op.line_of("u")
        );
    } else {
        let _ = writeln!(
            w,
            "            let r = {r0} + (u % {per}u) * 4u;\n            let kk = k0 + u / {per}u;"
        );
    }
    let at = |row: &str| {
        if op.kcontig {
            format!("{base} + {row} * {ld} + kk")
        } else {
            format!("{base} + kk * {ld} + {row}")
        }
    };
    if op.kexact {
        // Every k of the tile is inside the matrix, so only rows (columns of B) past the
        // edge remain: they are read clamped to the last one. Their products land only in
        // rows (columns) of C past the edge, which are never stored, so no zero fill is
        // needed: one `min` per load instead of two compares and two selects (measured
        // 1.55x faster at 4096^3 on an H200).
        if op.vec {
            // Along a contiguous row (B stored [k, n], A stored [k, m]) units start at
            // multiples of 4 and the extent is one (vec loads need it): the last unit is
            // the last inside. Across rows (k contiguous) a unit lies in one row.
            let last = if op.kcontig { "1u" } else { "4u" };
            let _ = writeln!(
                w,
                "            let gi = {};",
                at(&format!("min(r, {rmax} - {last})"))
            );
            let read = op.as_f16(format!("{n}[gi >> 2u]"), "vec4<f16>");
            let _ = writeln!(w, "            p{n}{i} = {read};");
        } else if op.kcontig {
            let _ = writeln!(
                w,
                "            let gi = {};",
                at(&format!("min(r, {rmax} - 1u)"))
            );
            for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
                let read = op.as_f16(format!("{n}[gi + {e}u]"), "f16");
                let _ = writeln!(w, "            p{n}{i}.{comp} = {read};");
            }
        } else {
            for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
                let gi = at(&format!("min(r + {e}u, {rmax} - 1u)"));
                let read = op.as_f16(format!("{n}[{gi}]"), "f16");
                let _ = writeln!(w, "            p{n}{i}.{comp} = {read};");
            }
        }
        w.push_str("        }\n");
        return;
    }
    let _ = writeln!(w, "            let gi = {};", at("r"));
    let (along, alongmax) = if op.kcontig {
        ("kk", "p.k")
    } else {
        ("r", rmax)
    };
    let (other, othermax) = if op.kcontig {
        ("r", rmax)
    } else {
        ("kk", "p.k")
    };
    // Branch-free guards: an index outside the matrix reads element 0 (every binding
    // holds at least one 16-byte unit) and the value is replaced by zero. One code path
    // for edge and inner tiles keeps the register count of the loop down (a second,
    // unguarded copy of the loads made the kernel spill on the H200).
    if op.vec {
        let _ = writeln!(
            w,
            "            let ok = {other} < {othermax} && {along} < {alongmax};\n            let v = {n}[select(0u, gi >> 2u, ok)];"
        );
        let v = op.as_f16("v".to_string(), "vec4<f16>");
        let _ = writeln!(w, "            p{n}{i} = select(vec4<f16>(), {v}, ok);");
    } else {
        for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
            let _ = writeln!(
                w,
                "            let ok{e} = {other} < {othermax} && {along} + {e}u < {alongmax};\n            let v{e} = {n}[select(0u, gi + {e}u, ok{e})];"
            );
            let v = op.as_f16(format!("v{e}"), "f16");
            let _ = writeln!(w, "            p{n}{i}.{comp} = select(0.0h, {v}, ok{e});");
        }
    }
    w.push_str("        }\n");
}

/// `buf + ` (a buffer offset and a plus), or nothing for the first buffer (`""`).
fn plus(buf: &str) -> String {
    if buf.is_empty() {
        String::new()
    } else {
        format!("{buf} + ")
    }
}

/// Statements storing the registers of `op` into its workgroup array, at `buf` (a WGSL
/// expression: the first half of the staging buffer it writes).
fn emit_stage(w: &mut String, op: &Staged, buf: &str) {
    let n = op.name;
    let per = op.units_per_line();
    let line = op.line();
    for i in 0..op.registers() {
        let _ = writeln!(
            w,
            "        {{\n            let u = lid + {}u;\n            let s = {}{} * {line}u + (u % {per}u) * 4u;",
            i * op.threads,
            plus(buf),
            op.line_of("u")
        );
        // Four scalar stores: measured faster than vector stores into vec4<f16> memory,
        // whose fragment loads the driver serves more slowly.
        for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
            let _ = writeln!(w, "            s{n}[s + {e}u] = p{n}{i}.{comp};");
        }
        w.push_str("        }\n");
    }
}

/// The loads of k tile `k0` into the registers.
fn emit_loads(w: &mut String, ops: &[Staged; 2]) {
    for op in ops {
        for i in 0..op.registers() {
            emit_load(w, op, i);
        }
    }
}

/// The loads of `op`'s fragments at this subgroup's k step `kk` from its workgroup array
/// at `buf` (a WGSL expression): A's `fa{kk}_{i}` (rows `sm * 16 frag_m + 16 i ..`), B's
/// `fb{kk}_{j}` (columns `sn * 16 frag_n + 16 j ..`). With `kgroups` groups the step is
/// the tile's `kg + kgroups kk`.
fn emit_fragment_loads(w: &mut String, op: &Staged, kk: u32, kgroups: u32, buf: &str) {
    let (n, line) = (op.name, op.line());
    let (role, origin) = if n == 'a' { ("A", "sm") } else { ("B", "sn") };
    let span = op.frags * 16;
    for f in 0..op.frags {
        // Element (row, k) of an A fragment, (k, col) of a B one: along a line of
        // [row or col][k] lines when k is contiguous, else across [k][row or col] lines.
        let at = match (op.kcontig, kgroups) {
            (true, 1) => format!(
                "{}({origin} * {span}u + {}u) * {line}u + {}u",
                plus(buf),
                f * 16,
                kk * 16
            ),
            (true, _) => format!(
                "{}({origin} * {span}u + {}u) * {line}u + kg * 16u + {}u",
                plus(buf),
                f * 16,
                kk * 16 * kgroups
            ),
            (false, 1) => format!(
                "{}{}u + {origin} * {span}u + {}u",
                plus(buf),
                kk * 16 * line,
                f * 16
            ),
            (false, _) => format!(
                "{}kg * {}u + {}u + {origin} * {span}u + {}u",
                plus(buf),
                16 * line,
                kk * 16 * kgroups * line,
                f * 16
            ),
        };
        // A fragment is row-major in [row][k] lines, B's in [k][col] ones.
        let load = if op.kcontig == (n == 'a') {
            "coopLoadT"
        } else {
            "coopLoad"
        };
        let _ = writeln!(
            w,
            "        let f{n}{kk}_{f} = {load}<coop_mat16x16<f16, {role}>>(&s{n}[{at}], {line}u);"
        );
    }
}

/// The fragment loads and products of one staged k tile, read from the staging buffers
/// at `bufs` (WGSL expressions, A's and B's): this subgroup's share of its 16-deep steps
/// when `kgroups` groups split it.
fn emit_products(w: &mut String, ops: &[Staged; 2], kgroups: u32, bufs: [&str; 2]) {
    for kk in 0..ops[0].bk / 16 / kgroups {
        for (op, buf) in ops.iter().zip(bufs) {
            emit_fragment_loads(w, op, kk, kgroups, buf);
        }
        for i in 0..ops[0].frags {
            for j in 0..ops[1].frags {
                let _ = writeln!(
                    w,
                    "        acc{i}_{j} = coopMultiplyAdd(fa{kk}_{i}, fb{kk}_{j}, acc{i}_{j});"
                );
            }
        }
    }
}

/// The WGSL of `v`, with `epilogue` (the text of `fn tang_epilogue(x: f32, zero: u32) ->
/// f32` and its helpers) pasted in when `v.epilogue` is set.
pub(crate) fn generate(v: &CoopVariant, epilogue: &str) -> String {
    let ops = staged(v);
    let t = &v.tile;
    let mut w = String::with_capacity(24 * 1024);
    let shape = if *t == CoopTile::DEFAULT {
        String::new()
    } else {
        format!(
            " (subgroups {}x{}, fragments {}x{}, {} stage(s), {} fragment(s) per store, {} k group(s))",
            t.sg_m, t.sg_n, t.frag_m, t.frag_n, t.stages, t.store_frags, t.kgroups
        )
    };
    let _ = writeln!(
        w,
        "// tang tensor-core matmul {}x{}x{}{shape}, A{} B{} (generated)\nenable f16;\nenable wgpu_cooperative_matrix;",
        t.block_m(),
        t.block_n(),
        t.bk,
        if v.ta { "^T" } else { "" },
        if v.tb { "^T" } else { "" }
    );
    w.push_str(&layout(v).declarations());
    for op in &ops {
        let _ = writeln!(
            w,
            "var<workgroup> s{}: array<f16, {}>;",
            op.name,
            op.len() * t.stages
        );
    }
    let scratch = t.sg_m * t.sg_n * t.kgroups * 256 * t.store_frags;
    let _ = writeln!(w, "var<workgroup> sc: array<f32, {scratch}>;");
    if v.epilogue {
        w.push_str(epilogue);
        w.push('\n');
    }
    emit_grouped_origin(&mut w, t.threads(), t.block_m(), t.block_n());
    // `sg` counts every subgroup; with k groups, `kg` is its group and `sgl` its place
    // in the block, which the group's other subgroups share.
    let place = if t.kgroups == 1 {
        "sg"
    } else {
        let _ = write!(
            w,
            "    let kg = lid / {}u;\n    let sgl = (lid / 32u) % {}u;\n",
            32 * t.sg_m * t.sg_n,
            t.sg_m * t.sg_n
        );
        "sgl"
    };
    let _ = write!(
        w,
        "    let sg = lid / 32u;
    let lane = lid % 32u;
    let sm = {place} / {sgn}u;
    let sn = {place} % {sgn}u;
    let a_base = bat * p.a_bstride;
    let b_base = bat * p.b_bstride;
    let c_base = bat * p.c_bstride;
",
        sgn = t.sg_n
    );
    for i in 0..t.frag_m {
        for j in 0..t.frag_n {
            let _ = writeln!(w, "    var acc{i}_{j} = coop_mat16x16<f32, C>();");
        }
    }
    for op in &ops {
        for i in 0..op.registers() {
            let _ = writeln!(w, "    var p{}{i}: vec4<f16>;", op.name);
        }
    }
    w.push_str("    var k0 = 0u;\n    {\n");
    emit_loads(&mut w, &ops);
    w.push_str("    }\n");
    if t.stages == 1 {
        // Stage, barrier, prefetch the next tile into registers, multiply, barrier.
        w.push_str("    loop {\n");
        for op in &ops {
            emit_stage(&mut w, op, "");
        }
        let _ = writeln!(
            w,
            "        workgroupBarrier();\n        k0 += {}u;\n        if (k0 < p.k) {{",
            t.bk
        );
        emit_loads(&mut w, &ops);
        w.push_str("        }\n");
        emit_products(&mut w, &ops, t.kgroups, ["", ""]);
        w.push_str("        workgroupBarrier();\n        if (k0 >= p.k) { break; }\n    }\n");
    } else {
        // Two buffers: the tile in `cur` multiplies while the next is written into the
        // other, so one barrier per k tile separates a buffer's writes from its reads.
        for op in &ops {
            emit_stage(&mut w, op, "");
        }
        let _ = writeln!(
            w,
            "    workgroupBarrier();\n    var cur = 0u;\n    loop {{\n        k0 += {}u;\n        let more = k0 < p.k;\n        if (more) {{",
            t.bk
        );
        emit_loads(&mut w, &ops);
        w.push_str("        }\n");
        let reads = [&ops[0], &ops[1]].map(|op| format!("cur * {}u", op.len()));
        emit_products(&mut w, &ops, t.kgroups, [&reads[0], &reads[1]]);
        w.push_str("        if (more) {\n");
        for op in &ops {
            emit_stage(&mut w, op, &format!("(1u - cur) * {}u", op.len()));
        }
        w.push_str("        }\n        workgroupBarrier();\n        if (!more) { break; }\n        cur = 1u - cur;\n    }\n");
    }
    emit_coop_store(&mut w, v);
    w.push_str("}\n");
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant with a bias or an epilogue passes naga (which validates
    /// cooperative-matrix shaders without a GPU that has them); the registry lists the
    /// others (`bits < 512`), which the workspace's shader test validates.
    #[test]
    fn every_variant_with_bias_or_epilogue_validates() {
        let epi =
            "fn tang_epilogue(x: f32, zero: u32) -> f32 { return max(x, bitcast<f32>(zero)); }\n";
        for bits in 512..2048u32 {
            // The operand and result types all f32 or all f16: each type's code is
            // independent of the others', and this halves the test's time.
            if !matches!((bits >> 5) & 7, 0 | 7) {
                continue;
            }
            let v = CoopVariant::from_bits(bits);
            let text = generate(&v, epi);
            if let Err(e) = tang_expr::validate(&text) {
                panic!("{v:?}: {e}\n{text}");
            }
        }
    }

    /// Tiles of two k groups validate in each layout, one and two staging buffers, with
    /// f16 results, the bias and the epilogue, guarded and clamped.
    #[test]
    fn k_group_tiles_validate() {
        let epi =
            "fn tang_epilogue(x: f32, zero: u32) -> f32 { return max(x, bitcast<f32>(zero)); }\n";
        for (bk, stages) in [(32, 1), (32, 2), (64, 1)] {
            let tile = CoopTile {
                kgroups: 2,
                bk,
                stages,
                ..CoopTile::DEFAULT
            };
            assert!(tile.is_valid(), "{tile:?}");
            for layout in 0..4u32 {
                for extra in [0b111_1110_0000u32, 0b010_1111_1100] {
                    let v = CoopVariant {
                        tile,
                        ..CoopVariant::from_bits(layout | extra)
                    };
                    let text = generate(&v, epi);
                    if let Err(e) = tang_expr::validate(&text) {
                        panic!("{v:?}: {e}\n{text}");
                    }
                }
            }
        }
    }

    /// Every preset tile other than the default (which the registry lists) validates in
    /// each layout, with f32 and f16 operands and results, guarded and clamped loads,
    /// and with the bias and the epilogue.
    #[test]
    fn every_preset_tile_validates() {
        let epi =
            "fn tang_epilogue(x: f32, zero: u32) -> f32 { return max(x, bitcast<f32>(zero)); }\n";
        for tile in &CoopTile::PRESETS[1..] {
            for bits in 0..2048u32 {
                // Layouts (bits 0-1) crossed with: all-vec4 f32, all-scalar f16 and
                // all-vec4 f16 with the bias and epilogue, each guarded and clamped.
                let rest = bits >> 2;
                let types = rest & 0b111;
                let half = (rest >> 3) & 0b111;
                // Bit 6 (clamped loads) runs both ways.
                let extra = rest >> 7;
                let keep = matches!(
                    (types, half, extra),
                    (0b111, 0, 0) | (0, 0b111, 0) | (0b111, 0b111, 0b11)
                );
                if !keep {
                    continue;
                }
                let v = CoopVariant {
                    tile: *tile,
                    ..CoopVariant::from_bits(bits)
                };
                let text = generate(&v, epi);
                if let Err(e) = tang_expr::validate(&text) {
                    panic!("{v:?}: {e}\n{text}");
                }
            }
        }
    }
}
