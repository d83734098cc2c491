//! WGSL helpers of the activations and special functions: tanh, sigmoid and its
//! relatives, GELU in both forms, logaddexp, erf and erfc (the algorithm of the last two
//! is in `op/special.rs`, printed here from the same coefficients).

use super::{Helper, NAN, horner, with_sign_of};
use crate::codegen::literal::wgsl_literal;
use crate::op::special::{
    ERF_SMALL, ERFC_CUTOFF, ERFC_TAIL, GELU_C, GELU_ERF_Z, GELU_ERFC, GELU_K, INV_SQRT_2PI,
    SPLIT_MASK, TANH_CLAMP,
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

/// `erfc(a)` for `a >= 1`; see `op/special.rs` for the algorithm.
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

/// GELU's one-piece `erfc(|z|) = t exp(P(t) - z^2)`, `z = -x / sqrt 2`,
/// `t = 1 / (1 + |z| / 2)`: `z` and `P(t)` (see `op/special.rs`, `gelu_erf_f32`).
pub(crate) static GELU_TAIL: Helper = Helper {
    name: "tang_gelu_tail",
    uses: &[],
    text: || {
        let p = horner(&GELU_ERFC, "t");
        let c = wgsl_literal(GELU_ERF_Z);
        format!(
            "fn tang_gelu_z(x: {{T}}) -> {{T}} {{
    return x * {c};
}}

fn tang_gelu_tail(t: {{T}}) -> {{T}} {{
    return {p};
}}
"
        )
    },
};

pub(crate) static GELU_ERF: Helper = Helper {
    name: "tang_gelu_erf",
    uses: &[&GELU_TAIL],
    text: || {
        "fn tang_gelu_erf(x: {T}) -> {T} {
    // x Phi(x) = x/2 erfc(z): erfc in one piece and one exponential, reflected for z < 0
    // (the two-piece erfc computes both pieces where a subgroup's lanes differ)
    let z = tang_gelu_z(x);
    let a = abs(z);
    let t = 1.0f / (1.0f + 0.5f * a);
    let y = t * exp(tang_gelu_tail(t) - a * a);
    return 0.5f * x * select(2.0f - y, y, z >= {T}(0.0f));
}
"
        .into()
    },
};

pub(crate) static GELU_ERF_GRAD: Helper = Helper {
    name: "tang_gelu_erf_grad",
    uses: &[&GELU_TAIL],
    text: || {
        let k = wgsl_literal(INV_SQRT_2PI);
        format!(
            "fn tang_gelu_erf_grad(x: {{T}}) -> {{T}} {{
    // Phi(x) + x phi(x): exp(-z^2) is the density's exponential and a factor of erfc
    let z = tang_gelu_z(x);
    let a = abs(z);
    let t = 1.0f / (1.0f + 0.5f * a);
    let e = exp(-(a * a));
    let y = t * e * exp(tang_gelu_tail(t));
    return 0.5f * select(2.0f - y, y, z >= {{T}}(0.0f)) + x * (e * {k});
}}
"
        )
    },
};
