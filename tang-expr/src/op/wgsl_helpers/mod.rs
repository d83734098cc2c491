//! The WGSL helper functions the op table's expressions call, each a template over `{T}`
//! (the float type), `{U}` (the matching u32 type) and `{B}` (the matching bool type),
//! instantiated for scalar or vec4 values by [`Helper::collect`]. Constants shared with
//! the CPU evaluation are formatted from the Rust constants.
//!
//! **Non-finite values.** Vulkan drivers may compile float comparisons, `select`,
//! `min`/`max`/`clamp` and multiplication by zero as if NaN and infinities never occur
//! (measured on an NVIDIA H100 and on Mesa's lavapipe and llvmpipe: `x != x` false at NaN,
//! `x.clamp(-1, 1)` gave 1 at NaN). Integer operations are not subject to this, so every
//! helper that decides by a comparison tests NaN, infinities and zeros on the bits
//! (`tang_nan`) and returns Rust's result for them explicitly. Builtins that compute
//! (exp, log, sin, ...) propagate NaN on their own.

use std::collections::BTreeMap;

use crate::codegen::literal::wgsl_literal;
use crate::op::lanes::Lanes;

// The helpers by family; this file holds the shared machinery and the helpers decided on
// the bits (comparisons, min/max/clamp, signum, round, powers, rsqrt, copysign).
mod activation;
mod exp_log;
mod trig;

pub(crate) use activation::{
    ERF, ERFC, GELU_ERF, GELU_ERF_GRAD, GELU_TANH, LOG_SIGMOID, LOGADDEXP, SIGMOID, SOFTPLUS, TANH,
};
pub(crate) use exp_log::{ACOSH, ASINH, ATANH, CBRT, COSH, EXPM1, HYPOT, LN, LN1P, LOG2, SINH};
pub(crate) use trig::{ACOS, ASIN, ATAN, ATAN2, COS, SIN, TAN};

/// A WGSL function emitted once per shader that uses it, after the helpers it calls.
pub(crate) struct Helper {
    /// The function's name (also the key that keeps it unique in a shader).
    pub name: &'static str,
    /// The helpers its text calls.
    pub uses: &'static [&'static Helper],
    /// The text, a template over `{T}`, `{U}` and `{B}`.
    pub text: fn() -> String,
}

impl Helper {
    /// Adds this helper and those it calls, instantiated for `lanes`, to `out` (keyed by
    /// name, so each appears once and the order is fixed).
    pub(crate) fn collect(&'static self, lanes: Lanes, out: &mut BTreeMap<&'static str, String>) {
        if out.contains_key(self.name) {
            return;
        }
        for h in self.uses {
            h.collect(lanes, out);
        }
        let text = (self.text)()
            .replace("{T}", lanes.float())
            .replace("{U}", lanes.uint())
            .replace("{B}", lanes.bool());
        out.insert(self.name, text);
    }
}

/// `c[0] + t * (c[1] + t * (...))`, the coefficients printed as WGSL literals.
fn horner(c: &[f32], t: &str) -> String {
    let mut s = wgsl_literal(c[c.len() - 1]);
    for &k in c[..c.len() - 1].iter().rev() {
        s = format!("{} + {t} * ({s})", wgsl_literal(k));
    }
    s
}

/// A float with the given bits, built at run time from `x` so that naga's constant
/// evaluator (which rejects non-finite constants) and the driver see no constant.
fn bits(bits: u32, x: &str) -> String {
    format!("bitcast<{{T}}>({{U}}(0x{bits:08x}u) | (bitcast<{{U}}>({x}) & {{U}}(0u)))")
}

/// `x` with the sign bit of `s`.
fn with_sign_of(x: &str, s: &str) -> String {
    format!("bitcast<{{T}}>(bitcast<{{U}}>({x}) | (bitcast<{{U}}>({s}) & {{U}}(0x80000000u)))")
}

const F32_INF: u32 = 0x7f80_0000;
const F32_NEG_INF: u32 = 0xff80_0000;
const F32_NAN: u32 = 0x7fc0_0000;

pub(crate) static NAN: Helper = Helper {
    name: "tang_nan",
    uses: &[],
    text: || {
        "fn tang_nan(x: {T}) -> {B} {
    // on the bits: drivers may fold `x != x` to false
    return (bitcast<{U}>(x) & {U}(0x7fffffffu)) > {U}(0x7f800000u);
}
"
        .into()
    },
};

macro_rules! comparison {
    ($stat:ident, $name:literal, $op:literal, $nan_result:literal) => {
        pub(crate) static $stat: Helper = Helper {
            name: $name,
            uses: &[&NAN],
            text: || {
                let nan = "(tang_nan(a) | tang_nan(b))";
                let body = if $nan_result {
                    format!("(a {} b) | {nan}", $op)
                } else {
                    format!("(a {} b) & !{nan}", $op)
                };
                format!(
                    "fn {}(a: {{T}}, b: {{T}}) -> {{B}} {{\n    return {body};\n}}\n",
                    $name
                )
            },
        };
    };
}
comparison!(LT, "tang_lt", "<", false);
comparison!(LE, "tang_le", "<=", false);
comparison!(GT, "tang_gt", ">", false);
comparison!(GE, "tang_ge", ">=", false);
comparison!(EQ, "tang_eq", "==", false);
comparison!(NE, "tang_ne", "!=", true);

pub(crate) static MIN: Helper = Helper {
    name: "tang_min",
    uses: &[&NAN],
    text: || {
        "fn tang_min(a: {T}, b: {T}) -> {T} {
    // Rust's min: the other argument where one is NaN
    return select(select(min(a, b), b, tang_nan(a)), a, tang_nan(b));
}
"
        .into()
    },
};

pub(crate) static MAX: Helper = Helper {
    name: "tang_max",
    uses: &[&NAN],
    text: || {
        "fn tang_max(a: {T}, b: {T}) -> {T} {
    // Rust's max: the other argument where one is NaN
    return select(select(max(a, b), b, tang_nan(a)), a, tang_nan(b));
}
"
        .into()
    },
};

pub(crate) static CLAMP: Helper = Helper {
    name: "tang_clamp",
    uses: &[&NAN],
    text: || {
        "fn tang_clamp(x: {T}, lo: {T}, hi: {T}) -> {T} {
    // Rust's order of tests (WGSL's clamp is undefined when lo > hi); NaN stays NaN
    return select(select(select(x, hi, x > hi), lo, x < lo), x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static SIGNUM: Helper = Helper {
    name: "tang_signum",
    uses: &[&NAN],
    text: || {
        "fn tang_signum(x: {T}) -> {T} {
    // Rust's signum: 1 for +0, -1 for -0, NaN stays NaN
    let s = select({T}(1.0f), {T}(-1.0f), (bitcast<{U}>(x) & {U}(0x80000000u)) != {U}(0u));
    return select(s, x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static ROUND: Helper = Helper {
    name: "tang_round",
    uses: &[],
    text: || {
        "fn tang_round(x: {T}) -> {T} {
    // halves away from zero, as Rust's round (WGSL's round goes to even)
    let t = trunc(x);
    return select(t, t + select({T}(1.0f), {T}(-1.0f), x < {T}(0.0f)), abs(x - t) >= {T}(0.5f));
}
"
        .into()
    },
};

pub(crate) static POWI: Helper = Helper {
    name: "tang_powi",
    uses: &[],
    text: || {
        "fn tang_powi(x: {T}, n: i32) -> {T} {
    // square-and-multiply: exact sign for negative bases, like Rust's powi
    // the exponent's magnitude as u32: abs(i32::MIN) is i32::MIN, whose bits are 2^31
    var base = x;
    var e = bitcast<u32>(abs(n));
    var r = {T}(1.0f);
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) == 1u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return select(r, 1.0f / r, n < 0);
}
"
        .into()
    },
};

pub(crate) static POWF: Helper = Helper {
    name: "tang_powf",
    uses: &[&NAN],
    text: || {
        let (nan, inf) = (bits(F32_NAN, "x"), bits(F32_INF, "x"));
        format!(
            "fn tang_powf(x: {{T}}, y: {{T}}) -> {{T}} {{
    // Rust's powf, decided on the bits where WGSL's pow is undefined (x < 0, x = 0 with
    // y <= 0) or drivers differ (|x| = 1 with an infinite y, infinite x)
    let ax = abs(x);
    let xb = bitcast<{{U}}>(ax);
    // a subnormal base counts as 0 (as on drivers that flush it), so every adapter
    // agrees with the flushed result
    let zero = xb < {{U}}(0x00800000u);
    let xinf = xb == {{U}}(0x7f800000u);
    let yint = trunc(y) == y;
    let yodd = yint & (trunc(y * 0.5f) * 2.0f != y);
    // |x|^y
    var m = pow(ax, y);
    m = select(m, select({{T}}(0.0f), {inf}, y < {{T}}(0.0f)), zero);
    m = select(m, select({{T}}(0.0f), {inf}, y > {{T}}(0.0f)), xinf);
    m = select(m, {{T}}(1.0f), xb == {{U}}(0x3f800000u));
    // a negative base: an odd integer y flips the sign, another integer keeps it, and a
    // non-integer y gives NaN except at -0 and -inf
    let negative = select(select({nan}, m, zero | xinf), select(m, -m, yodd), yint);
    let r = select(m, negative, (bitcast<{{U}}>(x) & {{U}}(0x80000000u)) != {{U}}(0u));
    // NaN in, NaN out, except that x^0 = 1 (a subnormal y counts as 0) and 1^y = 1
    let one = ((bitcast<{{U}}>(y) & {{U}}(0x7fffffffu)) < {{U}}(0x00800000u)) | (bitcast<{{U}}>(x) == {{U}}(0x3f800000u));
    return select(select(r, x + y, tang_nan(x) | tang_nan(y)), {{T}}(1.0f), one);
}}
"
        )
    },
};

pub(crate) static RSQRT: Helper = Helper {
    name: "tang_rsqrt",
    uses: &[&NAN],
    text: || {
        let nan = bits(F32_NAN, "x");
        format!(
            "fn tang_rsqrt(x: {{T}}) -> {{T}} {{
    // inverseSqrt is undefined at 0 and below; 1 / sqrt(x) gives ±inf at ±0, NaN below 0
    // and 0 at inf
    let b = bitcast<{{U}}>(x);
    var r = select(inverseSqrt(x), {nan}, (b & {{U}}(0x80000000u)) != {{U}}(0u));
    r = select(r, bitcast<{{T}}>(b | {{U}}(0x7f800000u)), (b & {{U}}(0x7fffffffu)) == {{U}}(0u));
    r = select(r, {{T}}(0.0f), b == {{U}}(0x7f800000u));
    return select(r, x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static COPYSIGN: Helper = Helper {
    name: "tang_copysign",
    uses: &[],
    text: || {
        "fn tang_copysign(a: {T}, b: {T}) -> {T} {
    return bitcast<{T}>((bitcast<{U}>(a) & {U}(0x7fffffffu)) | (bitcast<{U}>(b) & {U}(0x80000000u)));
}
"
        .into()
    },
};
