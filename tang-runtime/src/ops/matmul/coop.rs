//! The tensor-core matmul: f16 products with f32 accumulation on WGSL cooperative
//! matrices (`coop_mat16x16`), one shader per [`CoopVariant`].
//!
//! Scheme (measured on an H200 against other schedules, BENCHMARKS.md):
//! - A workgroup of 128 threads (four subgroups of 32, 2 x 2) computes a 128 x 128 block
//!   of C; each subgroup a 64 x 64 quarter held in 4 x 4 f32 accumulator fragments.
//! - Both operands' k tiles (32 deep) are staged in workgroup memory as f16, each line
//!   padded by 8 halves (unpadded lines ran 2-3x slower: bank conflicts of the fragment
//!   loads). Staging keeps the operand's own memory order (no transposing stores): a
//!   fragment is then read row-major (`coopLoadT`) or column-major (`coopLoad`).
//! - The next k tile is loaded into registers (four elements per load, f32 operands
//!   rounded to f16 there) while the fragments of the current one multiply: one barrier
//!   pair per k tile. Loads are guarded without branches (zero fill).
//! - C leaves through workgroup memory, one fragment at a time per subgroup, so
//!   bounds, the bias, the epilogue and an f16 result are applied per element and the
//!   global stores are coalesced.
//!
//! The WGSL rules this respects (naga 30 and NVIDIA's driver): every cooperative-matrix
//! operation sits in uniform control flow at the top level of the loop (the k loop's exit
//! is workgroup-uniform), a `coopStoreT` target index is bound to a `let` first (naga's
//! SPIR-V writer fails on an inline expression there), and fragment pointers address
//! `array<f16>` workgroup memory (pointers into `u32`-typed memory are rejected by the
//! driver's compiler).

use std::fmt::Write as _;

use super::codegen::{MatmulParams, emit_grouped_origin};
use super::store::{CStore, emit_c_store};
use crate::spec::{Layout, Slot};

/// Rows and columns of C per workgroup.
pub(crate) const BLOCK: u32 = 128;
/// Depth of one staged k tile.
pub(crate) const BK: u32 = 32;
/// Threads per workgroup: four subgroups of 32.
const THREADS: u32 = 128;
/// Fragments per subgroup along each side (4 x 16 = 64, a quarter of the block).
const FRAGS: u32 = 4;
/// Halves of padding after every staged line.
const PAD: u32 = 8;
/// f32 of the store scratch: one 16 x 16 fragment per subgroup.
const SCRATCH: u32 = (THREADS / 32) * 16 * 16;

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
}

impl CoopVariant {
    /// The variant whose flags are the low bits of `bits`, in field order (`ta` is bit 0);
    /// for enumerating them.
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

/// Bytes of workgroup memory a kernel uses (both staged operands and the store scratch).
pub(crate) const fn workgroup_bytes() -> u32 {
    // The larger staging of either order: [128][32 + 8] halves against [32][128 + 8].
    let a = max(BLOCK * (BK + PAD), BK * (BLOCK + PAD));
    2 * 2 * a + 4 * SCRATCH
}

const fn max(a: u32, b: u32) -> u32 {
    if a > b { a } else { b }
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
}

impl Staged {
    /// Halves per staged line: k runs along lines when `kcontig`, else the block's rows.
    fn line(&self) -> u32 {
        if self.kcontig { BK + PAD } else { BLOCK + PAD }
    }
    /// Units of four elements along one line.
    fn units_per_line(&self) -> u32 {
        if self.kcontig { BK / 4 } else { BLOCK / 4 }
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
    /// Prefetch registers per thread (units of four elements).
    fn registers(&self) -> u32 {
        BLOCK * BK / 4 / THREADS
    }
    /// The workgroup array's length in halves.
    fn len(&self) -> u32 {
        if self.kcontig {
            BLOCK * self.line()
        } else {
            BK * self.line()
        }
    }
}

/// The operands' staging plans.
fn staged(v: &CoopVariant) -> [Staged; 2] {
    [
        Staged {
            name: 'a',
            half: v.ha,
            vec: v.va,
            kcontig: !v.ta,
            kexact: v.kexact,
        },
        Staged {
            name: 'b',
            half: v.hb,
            vec: v.vb,
            kcontig: v.tb,
            kexact: v.kexact,
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
    let _ = writeln!(w, "        {{\n            let u = lid + {}u;", i * THREADS);
    // `r`: row of the operand (m for A, n for B); `kk`: index along k. The unit's four
    // elements run along the contiguous dimension.
    if op.kcontig {
        let _ = writeln!(
            w,
            "            let r = {r0} + u / {per}u;\n            let kk = k0 + (u % {per}u) * 4u;"
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

/// Statements storing the registers of `op` into its workgroup array.
fn emit_stage(w: &mut String, op: &Staged) {
    let n = op.name;
    let per = op.units_per_line();
    let line = op.line();
    for i in 0..op.registers() {
        let _ = writeln!(
            w,
            "        {{\n            let u = lid + {}u;\n            let s = (u / {per}u) * {line}u + (u % {per}u) * 4u;",
            i * THREADS
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

/// The loads of `op`'s fragments at k step `kk` from its workgroup array: A's `fa{kk}_{i}`
/// (rows `sm * 64 + 16 i ..`), B's `fb{kk}_{j}` (columns `sn * 64 + 16 j ..`).
fn emit_fragment_loads(w: &mut String, op: &Staged, kk: u32) {
    let (n, line) = (op.name, op.line());
    let (role, origin) = if n == 'a' { ("A", "sm") } else { ("B", "sn") };
    for f in 0..FRAGS {
        // Element (row, k) of an A fragment, (k, col) of a B one: along a line of
        // [row or col][k] lines when k is contiguous, else across [k][row or col] lines.
        let at = if op.kcontig {
            format!("({origin} * 64u + {}u) * {line}u + {}u", f * 16, kk * 16)
        } else {
            format!("{}u + {origin} * 64u + {}u", kk * 16 * line, f * 16)
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

/// The fragment loads and products of one staged k tile.
fn emit_products(w: &mut String, ops: &[Staged; 2]) {
    for kk in 0..BK / 16 {
        for op in ops {
            emit_fragment_loads(w, op, kk);
        }
        for i in 0..FRAGS {
            for j in 0..FRAGS {
                let _ = writeln!(
                    w,
                    "        acc{i}_{j} = coopMultiplyAdd(fa{kk}_{i}, fb{kk}_{j}, acc{i}_{j});"
                );
            }
        }
    }
}

/// The store of C: fragment by fragment, each subgroup puts one in its 16 x 16 scratch,
/// then its 32 lanes write it out four elements at a time (a scratch of one fragment,
/// not a row of them, keeps the workgroup memory, and so the occupancy, at the staging's).
fn emit_store(w: &mut String, v: &CoopVariant) {
    let scratch = 16 * 16;
    for i in 0..FRAGS {
        for j in 0..FRAGS {
            let _ = writeln!(
                w,
                "    {{\n        let si = sg * {scratch}u;\n        coopStoreT(acc{i}_{j}, &sc[si], 16u);\n    }}\n    workgroupBarrier();"
            );
            for q in 0..scratch / 4 / 32 {
                let _ = writeln!(
                    w,
                    "    {{\n        let u = lane + {}u;\n        let r = u / 4u;\n        let cq = (u % 4u) * 4u;\n        let s = sg * {scratch}u + r * 16u + cq;\n        var x = vec4<f32>(sc[s], sc[s + 1u], sc[s + 2u], sc[s + 3u]);\n        let row = m0 + sm * 64u + {}u + r;\n        let col = n0 + sn * 64u + {}u + cq;",
                    q * 32,
                    i * 16,
                    j * 16
                );
                let store = CStore {
                    vc: v.vc,
                    bias: v.bias,
                    epilogue: v.epilogue,
                    half: v.hc,
                };
                emit_c_store(w, "        ", "x", store);
                w.push_str("    }\n");
            }
            w.push_str("    workgroupBarrier();\n");
        }
    }
}

/// The WGSL of `v`, with `epilogue` (the text of `fn tang_epilogue(x: f32, zero: u32) ->
/// f32` and its helpers) pasted in when `v.epilogue` is set.
pub(crate) fn generate(v: &CoopVariant, epilogue: &str) -> String {
    let ops = staged(v);
    let mut w = String::with_capacity(24 * 1024);
    let _ = writeln!(
        w,
        "// tang tensor-core matmul {BLOCK}x{BLOCK}x{BK}, A{} B{} (generated)\nenable f16;\nenable wgpu_cooperative_matrix;",
        if v.ta { "^T" } else { "" },
        if v.tb { "^T" } else { "" }
    );
    w.push_str(&layout(v).declarations());
    for op in &ops {
        let _ = writeln!(w, "var<workgroup> s{}: array<f16, {}>;", op.name, op.len());
    }
    let _ = writeln!(w, "var<workgroup> sc: array<f32, {}>;", SCRATCH);
    if v.epilogue {
        w.push_str(epilogue);
        w.push('\n');
    }
    emit_grouped_origin(&mut w, THREADS, BLOCK, BLOCK);
    w.push_str(
        "    let sg = lid / 32u;
    let lane = lid % 32u;
    let sm = sg / 2u;
    let sn = sg % 2u;
    let a_base = bat * p.a_bstride;
    let b_base = bat * p.b_bstride;
    let c_base = bat * p.c_bstride;
",
    );
    for i in 0..FRAGS {
        for j in 0..FRAGS {
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
    w.push_str("    }\n    loop {\n");
    for op in &ops {
        emit_stage(&mut w, op);
    }
    w.push_str("        workgroupBarrier();\n        k0 += 32u;\n        if (k0 < p.k) {\n");
    emit_loads(&mut w, &ops);
    w.push_str("        }\n");
    emit_products(&mut w, &ops);
    w.push_str("        workgroupBarrier();\n        if (k0 >= p.k) { break; }\n    }\n");
    emit_store(&mut w, v);
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
}
