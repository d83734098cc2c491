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

use crate::codegen::wgsl_literal;
use crate::op_wgsl::Lanes;
use crate::special::{
    ATAN_POLY, ERF_SMALL, ERFC_CUTOFF, ERFC_TAIL, GELU_C, GELU_K, SPLIT_MASK, TANH_CLAMP,
};

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

pub(crate) static TANH: Helper = Helper {
    name: "tang_tanh",
    uses: &[&NAN],
    text: || {
        let c = wgsl_literal(TANH_CLAMP);
        let m = wgsl_literal(-TANH_CLAMP);
        format!(
            "fn tang_tanh(x: {{T}}) -> {{T}} {{
    // tanh(±{TANH_CLAMP}) is ±1 in f32; some drivers compute tanh through exp, which overflows
    return select(tanh(clamp(x, {{T}}({m}), {{T}}({c}))), x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static SIGMOID: Helper = Helper {
    name: "tang_sigmoid",
    uses: &[&NAN],
    text: || {
        "fn tang_sigmoid(x: {T}) -> {T} {
    // exp of a non-positive number only: no overflow
    let e = exp(-abs(x));
    return select(select(e / (1.0f + e), 1.0f / (1.0f + e), x >= {T}(0.0f)), x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static SOFTPLUS: Helper = Helper {
    name: "tang_softplus",
    uses: &[&NAN],
    text: || {
        "fn tang_softplus(x: {T}) -> {T} {
    return select(max(x, {T}(0.0f)) + log(1.0f + exp(-abs(x))), x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static LOG_SIGMOID: Helper = Helper {
    name: "tang_log_sigmoid",
    uses: &[&NAN],
    text: || {
        "fn tang_log_sigmoid(x: {T}) -> {T} {
    return select(min(x, {T}(0.0f)) - log(1.0f + exp(-abs(x))), x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static GELU_TANH: Helper = Helper {
    name: "tang_gelu_tanh",
    uses: &[&NAN],
    text: || {
        let (k, c) = (wgsl_literal(GELU_K), wgsl_literal(GELU_C));
        let (hi, lo) = (wgsl_literal(TANH_CLAMP), wgsl_literal(-TANH_CLAMP));
        format!(
            "fn tang_gelu_tanh(x: {{T}}) -> {{T}} {{
    let u = clamp({k} * (x + {c} * x * x * x), {{T}}({lo}), {{T}}({hi}));
    return select(0.5f * x * (1.0f + tanh(u)), x, tang_nan(x));
}}
"
        )
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
    let zero = xb == {{U}}(0u);
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
    // NaN in, NaN out, except that x^0 = 1 and 1^y = 1
    let one = ((bitcast<{{U}}>(y) & {{U}}(0x7fffffffu)) == {{U}}(0u)) | (bitcast<{{U}}>(x) == {{U}}(0x3f800000u));
    return select(select(r, x + y, tang_nan(x) | tang_nan(y)), {{T}}(1.0f), one);
}}
"
        )
    },
};

pub(crate) static LOGADDEXP: Helper = Helper {
    name: "tang_logaddexp",
    uses: &[&NAN],
    text: || {
        let ln2 = wgsl_literal(std::f32::consts::LN_2);
        format!(
            "fn tang_logaddexp(a: {{T}}, b: {{T}}) -> {{T}} {{
    // equal arguments (also both infinite) would give inf - inf = NaN below
    let r = select(max(a, b) + log(1.0f + exp(-abs(a - b))), a + {ln2}, a == b);
    return select(r, a + b, tang_nan(a) | tang_nan(b));
}}
"
        )
    },
};

/// `erfc(a)` for `a >= 1`; see `special.rs` for the algorithm.
pub(crate) static ERFC_TAIL_FN: Helper = Helper {
    name: "tang_erfc_tail",
    uses: &[],
    text: || {
        let r = horner(&ERFC_TAIL, "t");
        let cut = wgsl_literal(ERFC_CUTOFF);
        format!(
            "fn tang_erfc_tail(a: {{T}}) -> {{T}} {{
    // erfc(a) = exp(-a^2) R(1 / (1 + a)) for a >= 1, with a^2 split into an exact high
    // part and a small rest so that exp keeps its relative accuracy
    let b = min(a, {{T}}({cut}));
    let t = 1.0f / (1.0f + b);
    let r = {r};
    let bh = bitcast<{{T}}>(bitcast<{{U}}>(b) & {{U}}(0x{SPLIT_MASK:08x}u));
    return exp(-bh * bh) * exp((bh - b) * (b + bh)) * r;
}}
"
        )
    },
};

/// `erf(x)` for `|x| < 1`.
pub(crate) static ERF_SMALL_FN: Helper = Helper {
    name: "tang_erf_small",
    uses: &[],
    text: || {
        let q = horner(&ERF_SMALL, "s");
        format!(
            "fn tang_erf_small(x: {{T}}) -> {{T}} {{
    let s = x * x;
    return x + x * ({q});
}}
"
        )
    },
};

pub(crate) static ERF: Helper = Helper {
    name: "tang_erf",
    uses: &[&NAN, &ERF_SMALL_FN, &ERFC_TAIL_FN],
    text: || {
        let big = with_sign_of("1.0f - tang_erfc_tail(max(a, {T}(1.0f)))", "x");
        format!(
            "fn tang_erf(x: {{T}}) -> {{T}} {{
    let a = abs(x);
    let big = {big};
    return select(select(big, tang_erf_small(x), a < {{T}}(1.0f)), x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static ERFC: Helper = Helper {
    name: "tang_erfc",
    uses: &[&NAN, &ERF_SMALL_FN, &ERFC_TAIL_FN],
    text: || {
        "fn tang_erfc(x: {T}) -> {T} {
    let a = abs(x);
    let tail = tang_erfc_tail(max(a, {T}(1.0f)));
    let big = select(2.0f - tail, tail, x > {T}(0.0f));
    return select(select(big, 1.0f - tang_erf_small(x), a < {T}(1.0f)), x, tang_nan(x));
}
"
        .into()
    },
};

pub(crate) static GELU_ERF: Helper = Helper {
    name: "tang_gelu_erf",
    uses: &[&ERFC],
    text: || {
        let c = wgsl_literal(-std::f32::consts::FRAC_1_SQRT_2);
        format!(
            "fn tang_gelu_erf(x: {{T}}) -> {{T}} {{
    // x Phi(x) = x/2 erfc(-x / sqrt 2): erfc keeps the digits where 1 + erf cancels
    return 0.5f * x * tang_erfc(x * {c});
}}
"
        )
    },
};

pub(crate) static EXPM1: Helper = Helper {
    name: "tang_expm1",
    uses: &[],
    text: || {
        // Taylor coefficients 1/2!, 1/3!, ..., 1/9!: below |x| = 0.5 the truncation is
        // under 1e-8 relative, where exp(x) - 1 would lose up to every digit.
        let mut c = Vec::new();
        let mut fact = 1.0f64;
        for k in 2..=9 {
            fact *= k as f64;
            c.push((1.0 / fact) as f32);
        }
        let p = horner(&c, "x");
        format!(
            "fn tang_expm1(x: {{T}}) -> {{T}} {{
    let small = select(x + (x * x) * ({p}), x, (bitcast<{{U}}>(x) & {{U}}(0x7fffffffu)) == {{U}}(0u));
    return select(exp(x) - 1.0f, small, abs(x) < {{T}}(0.5f));
}}
"
        )
    },
};

pub(crate) static LN1P: Helper = Helper {
    name: "tang_ln1p",
    uses: &[],
    text: || {
        // 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = x / (2 + x): |s| < 0.18 for
        // |x| < 0.3, so six terms reach f32's precision where log(1 + x) loses digits.
        let c: Vec<f32> = [3.0f32, 5.0, 7.0, 9.0, 11.0]
            .iter()
            .map(|d| 1.0 / d)
            .collect();
        let p = horner(&c, "s2");
        let (ninf, nan) = (bits(F32_NEG_INF, "x"), bits(F32_NAN, "x"));
        format!(
            "fn tang_ln1p(x: {{T}}) -> {{T}} {{
    let s = x / (2.0f + x);
    let s2 = s * s;
    let small = 2.0f * (s + (s * s2) * ({p}));
    let r = select(log(1.0f + x), small, abs(x) < {{T}}(0.3f));
    // log is undefined at 0 and below: Rust gives -inf at -1 and NaN below
    return select(select(r, {nan}, x < {{T}}(-1.0f)), {ninf}, x == {{T}}(-1.0f));
}}
"
        )
    },
};

pub(crate) static SINH: Helper = Helper {
    name: "tang_sinh",
    uses: &[&EXPM1],
    text: || {
        let r = with_sign_of("r", "x");
        format!(
            "fn tang_sinh(x: {{T}}) -> {{T}} {{
    // through expm1 near 0 (e^a - e^-a cancels); as (e^(a/2) / 2) e^(a/2) above 20 so
    // that sinh stays finite up to 89
    let a = abs(x);
    let t = tang_expm1(a);
    let h = exp(0.5f * a);
    let r = select((0.5f * h) * h, 0.5f * (t + t / (t + 1.0f)), a < {{T}}(20.0f));
    return {r};
}}
"
        )
    },
};

pub(crate) static COSH: Helper = Helper {
    name: "tang_cosh",
    uses: &[],
    text: || {
        "fn tang_cosh(x: {T}) -> {T} {
    // (e^(a/2) / 2) e^(a/2) above 20 so that cosh stays finite up to 89
    let a = abs(x);
    let e = exp(a);
    let h = exp(0.5f * a);
    return select((0.5f * h) * h, 0.5f * e + 0.5f / e, a < {T}(20.0f));
}
"
        .into()
    },
};

pub(crate) static ASINH: Helper = Helper {
    name: "tang_asinh",
    uses: &[&LN1P],
    text: || {
        let ln2 = wgsl_literal(std::f32::consts::LN_2);
        let r = with_sign_of("r", "x");
        let (inf, half_max) = (bits(F32_INF, "x"), wgsl_literal(f32::MAX / 2.0));
        format!(
            "fn tang_asinh(x: {{T}}) -> {{T}} {{
    // ln_1p(a + a^2 / (1 + sqrt(1 + a^2))) keeps the digits near 0; ln(2a) above 4096,
    // where a^2 would overflow long before f32's range ends
    // (above f32::MAX / 2 Rust's f32::asinh overflows to inf, and so does this)
    let a = abs(x);
    let big = select(log(a) + {ln2}, {inf}, a > {{T}}({half_max}));
    let r = select(big, tang_ln1p(a + a * a / (1.0f + sqrt(1.0f + a * a))), a < {{T}}(4096.0f));
    return {r};
}}
"
        )
    },
};

pub(crate) static ACOSH: Helper = Helper {
    name: "tang_acosh",
    uses: &[&LN1P],
    text: || {
        let ln2 = wgsl_literal(std::f32::consts::LN_2);
        let (nan, inf) = (bits(F32_NAN, "x"), bits(F32_INF, "x"));
        let half_max = wgsl_literal(f32::MAX / 2.0);
        format!(
            "fn tang_acosh(x: {{T}}) -> {{T}} {{
    // ln_1p(t + sqrt(t (x + 1))), t = x - 1 (exact near 1); ln(2x) above 4096; NaN below 1
    // (above f32::MAX / 2 Rust's f32::acosh overflows to inf, and so does this)
    let t = x - 1.0f;
    let big = select(log(x) + {ln2}, {inf}, x > {{T}}({half_max}));
    let r = select(big, tang_ln1p(t + sqrt(t * (x + 1.0f))), x < {{T}}(4096.0f));
    return select(r, {nan}, x < {{T}}(1.0f));
}}
"
        )
    },
};

pub(crate) static ATANH: Helper = Helper {
    name: "tang_atanh",
    uses: &[&LN1P],
    text: || {
        let (inf, nan) = (bits(F32_INF, "x"), bits(F32_NAN, "x"));
        let r = with_sign_of("r", "x");
        format!(
            "fn tang_atanh(x: {{T}}) -> {{T}} {{
    // ln_1p(2a / (1 - a)) / 2 (1 - a is exact near 1); inf at 1, NaN beyond
    let a = abs(x);
    let r = select(select(0.5f * tang_ln1p(2.0f * a / (1.0f - a)), {inf}, a == {{T}}(1.0f)), {nan}, a > {{T}}(1.0f));
    return {r};
}}
"
        )
    },
};

/// `atan(n / d)` for `n, d >= 0`, in `[0, pi/2]`: the ratio that is at most 1 goes
/// through the polynomial (`special::ATAN_POLY`), the other one is reflected.
pub(crate) static ATAN_RATIO: Helper = Helper {
    name: "tang_atan_ratio",
    uses: &[],
    text: || {
        let q = horner(&ATAN_POLY, "s");
        let pi2 = wgsl_literal(std::f32::consts::FRAC_PI_2);
        format!(
            "fn tang_atan_ratio(n: {{T}}, d: {{T}}) -> {{T}} {{
    let t = min(n, d) / max(n, d);
    let s = t * t;
    let r = t + (t * s) * ({q});
    return select(r, {pi2} - r, n > d);
}}
"
        )
    },
};

pub(crate) static ATAN: Helper = Helper {
    name: "tang_atan",
    uses: &[&NAN, &ATAN_RATIO],
    text: || {
        let r = with_sign_of("tang_atan_ratio(abs(x), {T}(1.0f))", "x");
        format!(
            "fn tang_atan(x: {{T}}) -> {{T}} {{
    return select({r}, x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static ASIN: Helper = Helper {
    name: "tang_asin",
    uses: &[&NAN, &ATAN_RATIO],
    text: || {
        let nan = bits(F32_NAN, "x");
        let r = with_sign_of("tang_atan_ratio(a, sqrt((1.0f - a) * (1.0f + a)))", "x");
        format!(
            "fn tang_asin(x: {{T}}) -> {{T}} {{
    // atan(x / sqrt(1 - x^2)), with 1 - a exact near 1
    let a = abs(x);
    return select(select({r}, {nan}, a > {{T}}(1.0f)), x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static ACOS: Helper = Helper {
    name: "tang_acos",
    uses: &[&NAN, &ATAN_RATIO],
    text: || {
        let nan = bits(F32_NAN, "x");
        format!(
            "fn tang_acos(x: {{T}}) -> {{T}} {{
    // 2 atan(sqrt((1 - x) / (1 + x))): no cancellation at either end
    let r = 2.0f * tang_atan_ratio(sqrt(1.0f - x), sqrt(1.0f + x));
    return select(select(r, {nan}, abs(x) > {{T}}(1.0f)), x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static ATAN2: Helper = Helper {
    name: "tang_atan2",
    uses: &[&NAN, &ATAN_RATIO],
    text: || {
        let pi = wgsl_literal(std::f32::consts::PI);
        let pi2 = wgsl_literal(std::f32::consts::FRAC_PI_2);
        let pi4 = wgsl_literal(std::f32::consts::FRAC_PI_4);
        let s = with_sign_of("r", "y");
        format!(
            "fn tang_atan2(y: {{T}}, x: {{T}}) -> {{T}} {{
    // IEEE's corners on the bits (WGSL leaves atan2(0, 0) undefined): the angle of
    // (|x|, |y|) in [0, pi/2], reflected for a negative x (-0 included), signed as y
    let ya = bitcast<{{U}}>(y) & {{U}}(0x7fffffffu);
    let xa = bitcast<{{U}}>(x) & {{U}}(0x7fffffffu);
    let inf = {{U}}(0x7f800000u);
    var r = tang_atan_ratio(abs(y), abs(x));
    r = select(r, {{T}}({pi2}), (xa == {{U}}(0u)) | (ya == inf));
    r = select(r, {{T}}(0.0f), (ya == {{U}}(0u)) | ((xa == inf) & (ya != inf)));
    r = select(r, {{T}}({pi4}), (xa == inf) & (ya == inf));
    r = select(r, {pi} - r, (bitcast<{{U}}>(x) & {{U}}(0x80000000u)) != {{U}}(0u));
    return select({s}, x + y, tang_nan(x) | tang_nan(y));
}}
"
        )
    },
};

pub(crate) static HYPOT: Helper = Helper {
    name: "tang_hypot",
    uses: &[&NAN],
    text: || {
        let inf = bits(F32_INF, "a");
        format!(
            "fn tang_hypot(a: {{T}}, b: {{T}}) -> {{T}} {{
    // m sqrt(1 + (n/m)^2) cannot overflow; an infinite side wins over NaN, as in Rust
    let x = abs(a);
    let y = abs(b);
    let m = max(x, y);
    let q = min(x, y) / m;
    let r = select(select(m * sqrt(1.0f + q * q), {{T}}(0.0f), m == {{T}}(0.0f)), a + b, tang_nan(a) | tang_nan(b));
    let inf = {{U}}(0x7f800000u);
    return select(r, {inf}, (bitcast<{{U}}>(x) == inf) | (bitcast<{{U}}>(y) == inf));
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
