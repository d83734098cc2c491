//! WGSL literals for f32 constants: a leaf, so that the op table's WGSL helpers and the
//! code generator format constants the same way without importing each other.

/// Prints an f32 as a WGSL literal that round-trips: `1.0f`, `(-0.5f)`, `1e-7f`.
/// Non-finite values have no WGSL literal; they are built at run time from bits (naga's
/// constant evaluator rejects an infinite or NaN constant) OR'ed with the `zero` word of
/// an elementwise kernel's `Params` (see [`crate::kernel`]), which the compiler cannot
/// see, so the text is meant for those kernels.
pub fn wgsl_literal(v: f32) -> String {
    if !v.is_finite() {
        return format!("bitcast<f32>(0x{:08x}u | {ZERO_WORD})", v.to_bits());
    }
    // The shortest decimal of ±f32::MAX, 3.4028235e38, lies just outside the f32 range:
    // naga rounds it, Chrome's WGSL compiler rejects it. The hex form is exact.
    let mut s = if v.abs() == f32::MAX {
        "0x1.fffffep+127".to_string()
    } else {
        format!("{:?}", v.abs())
    };
    if v.is_sign_negative() {
        s.insert(0, '-');
    }
    if !s.contains(['.', 'e', 'p']) {
        s.push_str(".0");
    }
    if let Some(stripped) = s.strip_prefix('-') {
        format!("(-{stripped}f)")
    } else {
        format!("{s}f")
    }
}

/// The `Params` word that is 0 at run time, as generated code reads it (module docs of
/// [`crate::kernel`]).
pub(crate) const ZERO_WORD: &str = "params.zero";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_valid_wgsl() {
        assert_eq!(wgsl_literal(1.0), "1.0f");
        assert_eq!(wgsl_literal(-0.5), "(-0.5f)");
        assert_eq!(wgsl_literal(-0.0), "(-0.0f)");
        assert_eq!(wgsl_literal(1e-7), "1e-7f");
        assert_eq!(wgsl_literal(3e38), "3e38f");
        assert_eq!(wgsl_literal(f32::MAX), "0x1.fffffep+127f");
        assert_eq!(wgsl_literal(f32::MIN), "(-0x1.fffffep+127f)");
        assert!(wgsl_literal(f32::INFINITY).contains("0x7f800000"));
        assert!(wgsl_literal(f32::NAN).contains(ZERO_WORD));
    }
}
