//! WGSL helpers of the trigonometric functions: `sin`, `cos` and `tan` with a range
//! reduction of their own (drivers' builtins reduce large arguments poorly: NVIDIA's
//! `sin(1e4)` was off by 7e-4), and `atan`, `atan2`, `asin` and `acos`, all through one
//! polynomial for `atan` on `[0, 1]` (`special::ATAN_POLY`).
//!
//! `sin`, `cos` and `tan` of `x` compute on `a = |x|` (sin and tan are odd: the sign of
//! `x` goes on the result's bits, which keeps `sin(-0) = -0`): `k = round(a 2/pi)`,
//! `r = a - k pi/2` in three steps whose products are exact (`special::PIO2_PARTS`), so
//! a driver that fuses them into `fma` gets the same `r`; then minimax polynomials for
//! `sin r` and `cos r` on `[-pi/4, pi/4]` and the quadrant `k mod 4` pick the result.
//! Up to `|x| = 1e5` the error is below 9e-8 absolute for `sin`/`cos` (both with and
//! without contraction, checked in `op/special.rs`); beyond, the builtins take over.

use super::{F32_NAN, Helper, NAN, bits, horner, with_sign_of};
use crate::codegen::literal::wgsl_literal;
use crate::op::special::{
    ATAN_POLY, COS_POLY, PIO2_PARTS, SIN_POLY, TRIG_REDUCED_UP_TO, TWO_OVER_PI,
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
    // the ratio through an exact power of two where the larger side is above 2^64:
    // drivers divide through the reciprocal and flush subnormals (1/m is one above 2^126)
    let m = max(n, d);
    let sc = bitcast<{{T}}>(select({{U}}(0x3f800000u), {{U}}(0x1f800000u), bitcast<{{U}}>(m) > {{U}}(0x5f800000u)));
    let t = (min(n, d) * sc) / (m * sc);
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
    // subnormal sides count as 0 (as on drivers that flush them: 0/0 would be NaN there)
    let tiny = {{U}}(0x00800000u);
    var r = tang_atan_ratio(abs(y), abs(x));
    r = select(r, {{T}}({pi2}), (xa < tiny) | (ya == inf));
    r = select(r, {{T}}(0.0f), (ya < tiny) | ((xa == inf) & (ya != inf)));
    r = select(r, {{T}}({pi4}), (xa == inf) & (ya == inf));
    r = select(r, {pi} - r, (bitcast<{{U}}>(x) & {{U}}(0x80000000u)) != {{U}}(0u));
    return select({s}, x + y, tang_nan(x) | tang_nan(y));
}}
"
        )
    },
};

/// `a - k pi/2` for `a >= 0` and its quadrant `k` (see the module docs); `k` is 0 beyond
/// the reduction's range, where the caller uses the builtin.
pub(crate) static TRIG_REDUCE: Helper = Helper {
    name: "tang_trig_reduce",
    uses: &[],
    text: || {
        let (c1, c2, c3) = (
            wgsl_literal(PIO2_PARTS[0]),
            wgsl_literal(PIO2_PARTS[1]),
            wgsl_literal(PIO2_PARTS[2]),
        );
        let (two_over_pi, lim) = (wgsl_literal(TWO_OVER_PI), wgsl_literal(TRIG_REDUCED_UP_TO));
        format!(
            "fn tang_trig_k(a: {{T}}) -> {{T}} {{
    return select(round(a * {two_over_pi}), {{T}}(0.0f), a > {{T}}({lim}));
}}
fn tang_trig_reduce(a: {{T}}, k: {{T}}) -> {{T}} {{
    // k * part is exact for the first two parts: fused or not, r is the same
    return ((a - k * {c1}) - k * {c2}) - k * {c3};
}}
"
        )
    },
};

/// `sin r` and `cos r` on `[-pi/4, pi/4]` (`special::SIN_POLY`, `special::COS_POLY`).
pub(crate) static TRIG_POLY: Helper = Helper {
    name: "tang_trig_poly",
    uses: &[],
    text: || {
        let (p, q) = (horner(&SIN_POLY, "s"), horner(&COS_POLY, "s"));
        format!(
            "fn tang_sin_poly(r: {{T}}) -> {{T}} {{
    let s = r * r;
    return r + (r * s) * ({p});
}}
fn tang_cos_poly(r: {{T}}) -> {{T}} {{
    let s = r * r;
    return (1.0f - 0.5f * s) + (s * s) * ({q});
}}
"
        )
    },
};

/// The tail every trigonometric helper ends with: the builtin `f` beyond the reduction's
/// range, NaN for infinite and NaN arguments (`sin(inf)` is NaN; drivers differ).
fn trig_tail(f: &str) -> String {
    let lim = wgsl_literal(TRIG_REDUCED_UP_TO);
    let nan = bits(F32_NAN, "x");
    format!(
        "    v = select(v, {f}(x), a > {{T}}({lim}));
    return select(v, {nan}, (bitcast<{{U}}>(x) & {{U}}(0x7f800000u)) == {{U}}(0x7f800000u));"
    )
}

/// The start every trigonometric helper shares: `a = |x|`, its quadrant `q = k mod 4`,
/// and `sin r`, `cos r` of the reduced argument.
const TRIG_HEAD: &str = "    let a = abs(x);
    let k = tang_trig_k(a);
    let r = tang_trig_reduce(a, k);
    let q = {U}(k) & {U}(3u);
    let s = tang_sin_poly(r);
    let c = tang_cos_poly(r);";

/// `v` with its sign bit flipped where `x` is negative (for the odd functions).
const TRIG_ODD: &str =
    "    v = bitcast<{T}>(bitcast<{U}>(v) ^ (bitcast<{U}>(x) & {U}(0x80000000u)));";

pub(crate) static SIN: Helper = Helper {
    name: "tang_sin",
    uses: &[&TRIG_REDUCE, &TRIG_POLY],
    text: || {
        format!(
            "fn tang_sin(x: {{T}}) -> {{T}} {{
{TRIG_HEAD}
    // quadrants 0..3 of |x|: sin r, cos r, -sin r, -cos r
    var v = select(s, c, (q & {{U}}(1u)) != {{U}}(0u));
    v = select(v, -v, q >= {{U}}(2u));
{TRIG_ODD}
{}
}}
",
            trig_tail("sin")
        )
    },
};

pub(crate) static COS: Helper = Helper {
    name: "tang_cos",
    uses: &[&TRIG_REDUCE, &TRIG_POLY],
    text: || {
        format!(
            "fn tang_cos(x: {{T}}) -> {{T}} {{
{TRIG_HEAD}
    // quadrants 0..3 of |x|: cos r, -sin r, -cos r, sin r
    let q1 = (q + {{U}}(1u)) & {{U}}(3u);
    var v = select(s, c, (q1 & {{U}}(1u)) != {{U}}(0u));
    v = select(v, -v, q1 >= {{U}}(2u));
{}
}}
",
            trig_tail("cos")
        )
    },
};

pub(crate) static TAN: Helper = Helper {
    name: "tang_tan",
    uses: &[&TRIG_REDUCE, &TRIG_POLY],
    text: || {
        format!(
            "fn tang_tan(x: {{T}}) -> {{T}} {{
{TRIG_HEAD}
    // even quadrants: sin r / cos r; odd ones: -cos r / sin r (r is never 0 there)
    var v = select(s / c, -c / s, (q & {{U}}(1u)) != {{U}}(0u));
{TRIG_ODD}
{}
}}
",
            trig_tail("tan")
        )
    },
};
