//! The tensor-core matmul's operands on their way into workgroup memory: each operand's
//! staging plan ([`Staged`]), the loads of a k tile from the storage buffers into
//! registers (four elements per load, f32 operands rounded to f16 there, guarded without
//! branches or clamped), and the stores from registers into the staging buffers. The
//! kernel around them is `coop.rs`.

use std::fmt::Write as _;

use super::coop::CoopVariant;
use super::coop_tile::CoopTile;

/// Halves of padding after every staged line.
const PAD: u32 = CoopTile::PAD;

/// One operand's staging plan.
pub(super) struct Staged {
    /// `a` or `b`: the binding; `sa`/`sb` is its workgroup array.
    pub name: char,
    /// Stored f16.
    pub half: bool,
    /// Four-element global loads.
    pub vec: bool,
    /// Elements along k are contiguous in memory (A not transposed, B transposed).
    pub kcontig: bool,
    /// Clamped loads instead of zero-filled ones ([`CoopVariant::kexact`]).
    pub kexact: bool,
    /// The block's extent along this operand's rows (m for A, n for B).
    pub rows: u32,
    /// The k tile's depth.
    pub bk: u32,
    /// Threads per workgroup.
    pub threads: u32,
    /// Fragments per subgroup along `rows`.
    pub frags: u32,
}

impl Staged {
    /// Halves per staged line: k runs along lines when `kcontig`, else the block's rows.
    pub(super) fn line(&self) -> u32 {
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
    pub(super) fn registers(&self) -> u32 {
        self.rows * self.bk / 4 / self.threads
    }
    /// The length in halves of one staging buffer.
    pub(super) fn len(&self) -> u32 {
        if self.kcontig {
            self.rows * self.line()
        } else {
            self.bk * self.line()
        }
    }
}

/// The operands' staging plans.
pub(super) fn staged(v: &CoopVariant) -> [Staged; 2] {
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
pub(super) fn plus(buf: &str) -> String {
    if buf.is_empty() {
        String::new()
    } else {
        format!("{buf} + ")
    }
}

/// Statements storing the registers of `op` into its workgroup array, at `buf` (a WGSL
/// expression: the first half of the staging buffer it writes).
pub(super) fn emit_stage(w: &mut String, op: &Staged, buf: &str) {
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
        // Four scalar stores. Staging through `array<vec4<f16>>` with one 8-byte store
        // per register ran slower here (H200, BENCHMARKS.md 2026-11-30 (tenth session):
        // 4096³ 276 -> 188 TFLOP/s, every tile shape alike), though the fragment loads
        // from such memory are as fast (scalar stores into it: 274) and a probe of the
        // loop without global loads ran 261 -> 422 with the wide stores. With the loads
        // moved to just before the stores (no prefetch) the two store widths ran alike
        // (219 and 215): with the wide stores the kernel loses what the prefetch gives
        // it, for reasons the driver does not show. The attention kernels gained from
        // wide stores (`attention/coop.rs`).
        for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
            let _ = writeln!(w, "            s{n}[s + {e}u] = p{n}{i}.{comp};");
        }
        w.push_str("        }\n");
    }
}

/// The loads of k tile `k0` into the registers.
pub(super) fn emit_loads(w: &mut String, ops: &[Staged; 2]) {
    for op in ops {
        for i in 0..op.registers() {
            emit_load(w, op, i);
        }
    }
}
