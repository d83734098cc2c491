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
//!   without branches (zero fill), or clamped where k is a multiple of `bk`
//!   (`coop_stage.rs`).
//! - With two k groups ([`CoopTile::kgroups`]) twice the subgroups share the block, each
//!   group multiplying alternate 16-deep steps of every staged tile; their accumulators
//!   are added as C leaves.
//! - C leaves through workgroup memory, one fragment (or one row of fragments) at a
//!   time per subgroup, so bounds, the bias, the epilogue and an f16 result are applied
//!   per element and the global stores are coalesced.
//!
//! Where the time goes (a probe of this loop on an H200, BENCHMARKS.md, 2026-11-30): the
//! fragment loads from workgroup memory and the products alone run at the register-only
//! ceiling (564-584 TFLOP/s), one barrier per k tile costs 5%, and the staging (four
//! scalar f16 stores per register into `array<f16>`, and the second barrier) halves the
//! rate: the kernel's 280 TFLOP/s at 4096³. Staging buffers of `vec4<f16>` take one
//! 8-byte store per register and serve fragment loads as fast, but made this kernel
//! slower (`coop_stage.rs`, `emit_stage`).
//! Fetching the k tiles as whole fragments (`coopLoad` from the binding, staged with
//! `coopStore`) was 2.6x slower: cooperative loads from storage buffers are slow.
//!
//! What NVIDIA's driver makes of it (its machine code, read from the pipeline cache;
//! BENCHMARKS.md, 2026-11-30 (twelfth session)): fragment loads become `ldmatrix` and
//! each `coopMultiplyAdd` two synchronous `HMMA.16816`, whose ceiling (a register-only
//! loop of them) is 545-576 TFLOP/s, below cuBLAS's fp16 rate on the same GPU; the
//! k loop is unrolled eight times, and a k tile costs a subgroup 64 `HMMA`, 16 `ldmatrix`,
//! 16 global loads (each with a bounds compare from the device's robust buffer access),
//! 16 8-byte stores and about 135 integer instructions. Giving the staging to extra
//! producer subgroups (4x slower: the register cap and one workgroup per SM) and loads
//! from a per-thread base (fewer instructions and registers, up to 20% slower at `A·B`)
//! were tried and not kept.
//!
//! The WGSL rules this respects (naga 30 and NVIDIA's driver): every cooperative-matrix
//! operation sits in uniform control flow at the top level of the loop (the k loop's exit
//! is workgroup-uniform), a `coopStoreT` target index is bound to a `let` first (naga's
//! SPIR-V writer fails on an inline expression there), and fragment pointers address
//! `array<f16>` workgroup memory (pointers into `u32`-typed memory are rejected by the
//! driver's compiler).

use std::fmt::Write as _;

use super::codegen::{MatmulParams, emit_grouped_origin};
use super::coop_stage::{Staged, emit_loads, emit_stage, plus, staged};
use super::coop_tile::CoopTile;
use super::store::emit_coop_store;
use crate::spec::{Layout, Slot};

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
        // The step's offset along k, `stride` halves per k: with k groups each
        // subgroup's own step, `kg` steps in.
        let k_at = |stride: u32| match kgroups {
            1 => format!("{}u", kk * 16 * stride),
            _ => format!("kg * {}u + {}u", 16 * stride, kk * 16 * kgroups * stride),
        };
        let at = if op.kcontig {
            format!(
                "{}({origin} * {span}u + {}u) * {line}u + {}",
                plus(buf),
                f * 16,
                k_at(1)
            )
        } else {
            format!(
                "{}{} + {origin} * {span}u + {}u",
                plus(buf),
                k_at(line),
                f * 16
            )
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
