//! WGSL helpers of the exponential family: exp_m1 and ln_1p (accurate near 0), the
//! hyperbolic functions and their inverses, hypot and cbrt.

use super::{F32_INF, F32_NAN, F32_NEG_INF, Helper, NAN, bits, horner, with_sign_of};
use crate::codegen::literal::wgsl_literal;
use crate::op::special::LN2_PARTS;

/// `log` or `log2` (`f`) that reads a subnormal argument right: drivers' builtins take
/// its exponent field at face value (the software adapter gave `log(1e-40) = -88.0`, not
/// -92.1), so it is scaled by 2^23 into the normal range first and `shift` (23 in the
/// base's units) subtracted. A driver that flushes subnormals gives `-inf`, the log of the
/// flushed zero.
fn log_with_subnormals(name: &str, f: &str, shift: f32) -> String {
    let (min, two23, shift) = (
        wgsl_literal(f32::MIN_POSITIVE),
        wgsl_literal(2f32.powi(23)),
        wgsl_literal(shift),
    );
    format!(
        "fn {name}(x: {{T}}) -> {{T}} {{
    let sub = x < {{T}}({min});
    return {f}(select(x, x * {two23}, sub)) - select({{T}}(0.0f), {{T}}({shift}), sub);
}}
"
    )
}

pub(crate) static LN: Helper = Helper {
    name: "tang_ln",
    uses: &[],
    text: || log_with_subnormals("tang_ln", "log", 23.0 * std::f32::consts::LN_2),
};

pub(crate) static LOG2: Helper = Helper {
    name: "tang_log2",
    uses: &[],
    text: || log_with_subnormals("tang_log2", "log2", 23.0),
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

/// `exp(a) / 2` for `a >= 20` (sinh and cosh there), finite up to where they overflow.
pub(crate) static HALF_EXP: Helper = Helper {
    name: "tang_half_exp",
    uses: &[],
    text: || {
        let log2e = wgsl_literal(std::f32::consts::LOG2_E);
        let (hi, lo) = (wgsl_literal(LN2_PARTS[0]), wgsl_literal(LN2_PARTS[1]));
        format!(
            "fn tang_half_exp(a: {{T}}) -> {{T}} {{
    // 2^(n-1) exp(a - n ln2) with n = round(a / ln2) <= 128: exp sees a small argument,
    // and the power of two is built on the bits, so nothing overflows before the product
    // (a driver that reassociated (exp(a/2) / 2) exp(a/2) overflowed at 89); n ln2 is
    // split so that its products are exact, fused or not. Above 89.5 sinh and cosh are
    // inf anyway.
    let b = min(a, {{T}}(89.5f));
    let n = min(round(b * {log2e}), {{T}}(128.0f));
    let r = (b - n * {hi}) - n * {lo};
    return exp(r) * bitcast<{{T}}>(({{U}}(n) + {{U}}(126u)) << {{U}}(23u));
}}
"
        )
    },
};

pub(crate) static SINH: Helper = Helper {
    name: "tang_sinh",
    uses: &[&NAN, &EXPM1, &HALF_EXP],
    text: || {
        let r = with_sign_of("r", "x");
        format!(
            "fn tang_sinh(x: {{T}}) -> {{T}} {{
    // through expm1 near 0 (e^a - e^-a cancels); exp(a)/2 from 20 on (e^-a is below an
    // ulp of it there)
    let a = abs(x);
    let t = tang_expm1(a);
    let r = select(tang_half_exp(a), 0.5f * (t + t / (t + 1.0f)), a < {{T}}(20.0f));
    return select({r}, x, tang_nan(x));
}}
"
        )
    },
};

pub(crate) static COSH: Helper = Helper {
    name: "tang_cosh",
    uses: &[&NAN, &HALF_EXP],
    text: || {
        "fn tang_cosh(x: {T}) -> {T} {
    // exp(a)/2 from 20 on (e^-a is below an ulp of it there)
    let a = abs(x);
    let e = exp(a);
    let r = select(tang_half_exp(a), 0.5f * e + 0.5f / e, a < {T}(20.0f));
    return select(r, x, tang_nan(x));
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

pub(crate) static HYPOT: Helper = Helper {
    name: "tang_hypot",
    uses: &[&NAN],
    text: || {
        let inf = bits(F32_INF, "a");
        // 1, 2^64 and 2^-64 as bits
        let (one, big, small) = (
            format!("0x{:08x}u", 1f32.to_bits()),
            format!("0x{:08x}u", 2f32.powi(64).to_bits()),
            format!("0x{:08x}u", 2f32.powi(-64).to_bits()),
        );
        format!(
            "fn tang_hypot(a: {{T}}, b: {{T}}) -> {{T}} {{
    // m sqrt(1 + (n/m)^2) cannot overflow before the result does. m is first scaled into
    // [2^-64, 2^64] by an exact power of two (picked on the bits): drivers divide through
    // the reciprocal and flush subnormals, and 1/m is subnormal for m above 2^126 (NVIDIA
    // gave hypot(3e38, 3e38) = 3e38); at the other end a subnormal m becomes normal where
    // the driver keeps subnormals. An infinite side wins over NaN, as in Rust.
    let x = abs(a);
    let y = abs(b);
    let m = max(x, y);
    let mb = bitcast<{{U}}>(m);
    let down = mb > {{U}}({big});
    let up = mb < {{U}}({small});
    let s = bitcast<{{T}}>(select(select({{U}}({one}), {{U}}({big}), up), {{U}}({small}), down));
    let back = bitcast<{{T}}>(select(select({{U}}({one}), {{U}}({small}), up), {{U}}({big}), down));
    let ms = m * s;
    let q = (min(x, y) * s) / ms;
    let r = select((ms * sqrt(1.0f + q * q)) * back, {{T}}(0.0f), ms == {{T}}(0.0f));
    let inf = {{U}}(0x7f800000u);
    let v = select(r, a + b, tang_nan(a) | tang_nan(b));
    return select(v, {inf}, (bitcast<{{U}}>(x) == inf) | (bitcast<{{U}}>(y) == inf));
}}
"
        )
    },
};

pub(crate) static CBRT: Helper = Helper {
    name: "tang_cbrt",
    uses: &[],
    text: || {
        let third = wgsl_literal(1.0 / 3.0);
        let r = with_sign_of("y", "x");
        let (quarter, scale) = (wgsl_literal(0.25), wgsl_literal(2f32.powi(-49)));
        format!(
            "fn tang_cbrt(x: {{T}}) -> {{T}} {{
    // exp2(log2(a) / 3) and one Newton step; 0, inf and NaN are their own cube roots. A
    // subnormal a = m 2^-149 is read from its bits as (m / 4) 2^-147, whose cube root is
    // cbrt(m / 4) 2^-49, a normal number: right whether or not the driver flushes
    // subnormals (from a flushed zero, log2 and the Newton step would give 0 / 0 = NaN)
    let b = bitcast<{{U}}>(x) & {{U}}(0x7fffffffu);
    let sub = b < {{U}}(0x00800000u);
    let a = select(abs(x), {{T}}(b) * {quarter}, sub);
    let y0 = exp2(log2(a) * {third});
    var y = y0 - (y0 - a / (y0 * y0)) * {third};
    y = select(y, y * {scale}, sub);
    return select({r}, x, (b == {{U}}(0u)) | (b >= {{U}}(0x7f800000u)));
}}
"
        )
    },
};
