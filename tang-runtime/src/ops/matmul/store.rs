//! The store of one four-column unit of C, shared by the f32 tile (`codegen.rs`) and the
//! tensor-core kernel (`coop.rs`): bounds, the bias row, the epilogue and the result's
//! element type.

use std::fmt::Write as _;

use super::coop::CoopVariant;

/// What the store of C does besides writing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CStore {
    /// n is a multiple of 4: C (and the bias) are bound as `vec4`s.
    pub vc: bool,
    /// A bias row is bound and added.
    pub bias: bool,
    /// `tang_epilogue` is applied.
    pub epilogue: bool,
    /// C is f16 (rounded as it is stored).
    pub half: bool,
}

/// Writes, at `indent`, the store of `var` (a `vec4<f32>` variable: columns `col..col + 4`
/// of row `row` of C), skipping what lies outside `p.m` x `p.n`.
pub(crate) fn emit_c_store(w: &mut String, indent: &str, var: &str, s: CStore) {
    if s.vc {
        let _ = writeln!(w, "{indent}if (row < p.m && col < p.n) {{");
        if s.bias {
            let _ = writeln!(w, "{indent}    {var} = {var} + bias[col >> 2u];");
        }
        if s.epilogue {
            let _ = writeln!(
                w,
                "{indent}    {var} = vec4<f32>(tang_epilogue({var}.x, p.zero), tang_epilogue({var}.y, p.zero), tang_epilogue({var}.z, p.zero), tang_epilogue({var}.w, p.zero));"
            );
        }
        let value = if s.half {
            format!("vec4<f16>({var})")
        } else {
            var.to_string()
        };
        let _ = writeln!(
            w,
            "{indent}    c[(c_base + row * p.n + col) >> 2u] = {value};\n{indent}}}"
        );
        return;
    }
    let _ = writeln!(w, "{indent}if (row < p.m) {{");
    for (e, comp) in ['x', 'y', 'z', 'w'].iter().enumerate() {
        let _ = writeln!(
            w,
            "{indent}    if (col + {e}u < p.n) {{\n{indent}        var s = {var}.{comp};"
        );
        if s.bias {
            let _ = writeln!(w, "{indent}        s = s + bias[col + {e}u];");
        }
        if s.epilogue {
            let _ = writeln!(w, "{indent}        s = tang_epilogue(s, p.zero);");
        }
        let value = if s.half { "f16(s)" } else { "s" };
        let _ = writeln!(
            w,
            "{indent}        c[c_base + row * p.n + col + {e}u] = {value};\n{indent}    }}"
        );
    }
    let _ = writeln!(w, "{indent}}}");
}

/// The store of C by the tensor-core kernel (`coop.rs`): each subgroup puts `store_frags`
/// fragments side by side in its scratch (16 rows of `16 store_frags`), then its 32 lanes
/// write them out four elements at a time. One fragment at a time keeps the workgroup
/// memory, and so the occupancy, at the staging's; a row of them takes fewer barriers and
/// writes longer rows.
pub(crate) fn emit_coop_store(w: &mut String, v: &CoopVariant) {
    let t = &v.tile;
    let per = t.store_frags;
    let width = 16 * per;
    let scratch = 16 * width;
    let units_per_row = width / 4;
    let (span_m, span_n) = (16 * t.frag_m, 16 * t.frag_n);
    for i in 0..t.frag_m {
        for j0 in (0..t.frag_n).step_by(per as usize) {
            for j in j0..j0 + per {
                // The first fragment of a row sits at the scratch's start.
                let at = match (j - j0) * 16 {
                    0 => String::new(),
                    off => format!(" + {off}u"),
                };
                let _ = writeln!(
                    w,
                    "    {{\n        let si = sg * {scratch}u{at};\n        coopStoreT(acc{i}_{j}, &sc[si], {width}u);\n    }}"
                );
            }
            w.push_str("    workgroupBarrier();\n");
            // With k groups the subgroups at one place (`sgl`) share its units and add
            // the groups' partial sums, which lie a group's scratch apart.
            let (lane, place) = match t.kgroups {
                1 => ("lane", "sg"),
                _ => ("lane + kg * 32u", "sgl"),
            };
            let lanes = 32 * t.kgroups;
            let group = t.sg_m * t.sg_n * scratch;
            for q in 0..scratch / 4 / lanes {
                let _ = writeln!(
                    w,
                    "    {{\n        let u = {lane} + {}u;\n        let r = u / {units_per_row}u;\n        let cq = (u % {units_per_row}u) * 4u;\n        let s = {place} * {scratch}u + r * {width}u + cq;\n        var x = vec4<f32>(sc[s], sc[s + 1u], sc[s + 2u], sc[s + 3u]);",
                    q * lanes,
                );
                for g in 1..t.kgroups {
                    let o = g * group;
                    let _ = writeln!(
                        w,
                        "        x = x + vec4<f32>(sc[s + {o}u], sc[s + {}u], sc[s + {}u], sc[s + {}u]);",
                        o + 1,
                        o + 2,
                        o + 3
                    );
                }
                let _ = writeln!(
                    w,
                    "        let row = m0 + sm * {span_m}u + {}u + r;\n        let col = n0 + sn * {span_n}u + {}u + cq;",
                    i * 16,
                    j0 * 16
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
