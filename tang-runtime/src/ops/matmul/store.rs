//! The store of one four-column unit of C, shared by the f32 tile (`codegen.rs`) and the
//! tensor-core kernel (`coop.rs`): bounds, the bias row, the epilogue and the result's
//! element type.

use std::fmt::Write as _;

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
