//! The `f32` methods, associated functions and constants the kernel language knows.

use crate::op::Op;

/// Methods with no argument besides the receiver.
pub(crate) fn unary_method(name: &str) -> Option<Op> {
    Some(match name {
        "exp" => Op::Exp,
        "ln" => Op::Ln,
        "log2" => Op::Log2,
        "exp2" => Op::Exp2,
        "sqrt" => Op::Sqrt,
        "abs" => Op::Abs,
        "sin" => Op::Sin,
        "cos" => Op::Cos,
        "tan" => Op::Tan,
        "tanh" => Op::Tanh,
        "recip" => Op::Recip,
        "signum" => Op::Signum,
        "floor" => Op::Floor,
        "ceil" => Op::Ceil,
        "round" => Op::Round,
        "trunc" => Op::Trunc,
        "sigmoid" => Op::Sigmoid,
        "softplus" => Op::Softplus,
        "log_sigmoid" => Op::LogSigmoid,
        "silu" => Op::Silu,
        "gelu_tanh" => Op::GeluTanh,
        "stop_gradient" => Op::StopGradient,
        _ => return None,
    })
}

/// Methods with one float argument besides the receiver.
pub(crate) fn binary_method(name: &str) -> Option<Op> {
    Some(match name {
        "powf" => Op::Powf,
        "min" => Op::Min,
        "max" => Op::Max,
        "logaddexp" => Op::LogAddExp,
        _ => return None,
    })
}

/// Methods with two float arguments besides the receiver.
pub(crate) fn ternary_method(name: &str) -> Option<Op> {
    Some(match name {
        "mul_add" => Op::MulAdd,
        "clamp" => Op::Clamp,
        _ => return None,
    })
}

/// What an unknown method's error lists.
pub(crate) const METHODS: &str = "exp, ln, log2, exp2, sqrt, powi, powf, abs, min, max, clamp, \
sin, cos, tan, tanh, mul_add, recip, signum, floor, ceil, round, trunc, is_nan, and (through \
`tang_runtime::StableExt`) sigmoid, softplus, log_sigmoid, silu, gelu_tanh, logaddexp, \
stop_gradient";

/// `std::f32::consts::NAME` and the associated constants `f32::NAME`.
fn named_constant(name: &str) -> Option<f32> {
    use std::f32::consts as c;
    Some(match name {
        "PI" => c::PI,
        "TAU" => c::TAU,
        "E" => c::E,
        "SQRT_2" => c::SQRT_2,
        "LN_2" => c::LN_2,
        "LN_10" => c::LN_10,
        "LOG2_E" => c::LOG2_E,
        "LOG10_E" => c::LOG10_E,
        "LOG2_10" => c::LOG2_10,
        "LOG10_2" => c::LOG10_2,
        "FRAC_PI_2" => c::FRAC_PI_2,
        "FRAC_PI_3" => c::FRAC_PI_3,
        "FRAC_PI_4" => c::FRAC_PI_4,
        "FRAC_PI_6" => c::FRAC_PI_6,
        "FRAC_PI_8" => c::FRAC_PI_8,
        "FRAC_1_PI" => c::FRAC_1_PI,
        "FRAC_2_PI" => c::FRAC_2_PI,
        "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
        "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
        _ => return None,
    })
}

fn associated_constant(name: &str) -> Option<f32> {
    Some(match name {
        "EPSILON" => f32::EPSILON,
        "MAX" => f32::MAX,
        "MIN" => f32::MIN,
        "MIN_POSITIVE" => f32::MIN_POSITIVE,
        "INFINITY" => f32::INFINITY,
        "NEG_INFINITY" => f32::NEG_INFINITY,
        "NAN" => f32::NAN,
        _ => return None,
    })
}

/// The value of a constant path: `std::f32::consts::PI`, `core::f32::consts::E`,
/// `f32::consts::TAU`, `f32::EPSILON`, `std::f32::MAX`, ...
pub(crate) fn constant(segments: &[String]) -> Option<f32> {
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let rest = match s.as_slice() {
        ["std" | "core", rest @ ..] => rest,
        rest => rest,
    };
    match rest {
        ["f32", "consts", name] => named_constant(name),
        ["f32", name] => associated_constant(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        p.split("::").map(String::from).collect()
    }

    #[test]
    fn constants_and_methods() {
        assert_eq!(
            constant(&path("std::f32::consts::PI")),
            Some(std::f32::consts::PI)
        );
        assert_eq!(
            constant(&path("core::f32::consts::E")),
            Some(std::f32::consts::E)
        );
        assert_eq!(
            constant(&path("f32::consts::TAU")),
            Some(std::f32::consts::TAU)
        );
        assert_eq!(constant(&path("f32::EPSILON")), Some(f32::EPSILON));
        assert_eq!(constant(&path("f64::consts::PI")), None);
        assert_eq!(constant(&path("std::f32::consts::PIE")), None);
        assert_eq!(unary_method("exp"), Some(Op::Exp));
        assert_eq!(binary_method("max"), Some(Op::Max));
        assert_eq!(ternary_method("clamp"), Some(Op::Clamp));
        assert_eq!(unary_method("expp"), None);
    }
}
