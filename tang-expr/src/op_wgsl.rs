//! The WGSL of every [`Op`], written once for both shapes of value tang emits: a scalar
//! `f32` (epilogues, scalar functions) and a `vec4<f32>` (elementwise kernels process four
//! elements per thread with 128-bit loads: on an H200 through Vulkan a scalar copy moved
//! 2.2 TB/s and a vec4 copy 4.0 TB/s, bench cases `copy_256MiB_scalar` / `copy_256MiB`).
//!
//! Expressions take the float type `t` (`"f32"` or `"vec4<f32>"`) so that constants passed
//! to builtins can be splat (`t(1.0f)`: WGSL builtins like `clamp` and `select` need
//! matching types). Booleans use `&`/`|`, which WGSL defines for `bool` and `vec4<bool>`
//! alike (`&&`/`||` exist only for scalars). Helper functions are templates over `{T}`
//! (float type), `{U}` (matching u32 type) instantiated by [`Op::wgsl_helper`].

use crate::op::Op;

/// The shape of the values an emitted expression computes on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lanes {
    /// One `f32` per value.
    Scalar,
    /// Four elements at once: `vec4<f32>` (and `vec4<bool>` for conditions).
    Vec4,
}

impl Lanes {
    /// The WGSL float type.
    pub fn float(self) -> &'static str {
        match self {
            Lanes::Scalar => "f32",
            Lanes::Vec4 => "vec4<f32>",
        }
    }

    /// The WGSL bool type.
    pub fn bool(self) -> &'static str {
        match self {
            Lanes::Scalar => "bool",
            Lanes::Vec4 => "vec4<bool>",
        }
    }

    fn uint(self) -> &'static str {
        match self {
            Lanes::Scalar => "u32",
            Lanes::Vec4 => "vec4<u32>",
        }
    }
}

impl Op {
    /// The WGSL expression of the op applied to already-printed arguments whose float type
    /// is `t` (`"f32"` or `"vec4<f32>"`). Ops that need more than one WGSL builtin call a
    /// helper function from [`Op::wgsl_helper`].
    pub fn wgsl(self, a: &[String], t: &str) -> String {
        let x = a.first().map(String::as_str).unwrap_or("");
        let y = a.get(1).map(String::as_str).unwrap_or("");
        let z = a.get(2).map(String::as_str).unwrap_or("");
        match self {
            Op::Neg => format!("(-{x})"),
            Op::Recip => format!("(1.0f / {x})"),
            Op::Sqrt => format!("sqrt({x})"),
            Op::Exp => format!("exp({x})"),
            Op::Ln => format!("log({x})"),
            Op::Exp2 => format!("exp2({x})"),
            Op::Log2 => format!("log2({x})"),
            Op::Sin => format!("sin({x})"),
            Op::Cos => format!("cos({x})"),
            Op::Tan => format!("tan({x})"),
            Op::Tanh => format!("tanh(clamp({x}, {t}(-15.0f), {t}(15.0f)))"),
            Op::Abs => format!("abs({x})"),
            Op::Signum => format!("tang_signum({x})"),
            Op::Floor => format!("floor({x})"),
            Op::Ceil => format!("ceil({x})"),
            Op::Round => format!("tang_round({x})"),
            Op::Trunc => format!("trunc({x})"),
            Op::Sigmoid => format!("tang_sigmoid({x})"),
            Op::Softplus => format!("tang_softplus({x})"),
            Op::LogSigmoid => format!("tang_log_sigmoid({x})"),
            Op::Silu => format!("({x} * tang_sigmoid({x}))"),
            Op::GeluTanh => format!("tang_gelu_tanh({x})"),
            Op::StopGradient => x.to_string(),
            Op::PowI(n) => format!("tang_powi({x}, {n}i)"),
            Op::Add => format!("({x} + {y})"),
            Op::Sub => format!("({x} - {y})"),
            Op::Mul => format!("({x} * {y})"),
            Op::Div => format!("({x} / {y})"),
            Op::Powf => format!("tang_powf({x}, {y})"),
            Op::Min => format!("min({x}, {y})"),
            Op::Max => format!("max({x}, {y})"),
            Op::LogAddExp => format!("tang_logaddexp({x}, {y})"),
            Op::Lt => format!("({x} < {y})"),
            Op::Le => format!("({x} <= {y})"),
            Op::Gt => format!("({x} > {y})"),
            Op::Ge => format!("({x} >= {y})"),
            Op::Eq => format!("({x} == {y})"),
            Op::Ne => format!("({x} != {y})"),
            Op::And => format!("({x} & {y})"),
            Op::Or => format!("({x} | {y})"),
            Op::Not => format!("(!{x})"),
            Op::Select => format!("select({z}, {y}, {x})"),
            Op::MulAdd => format!("fma({x}, {y}, {z})"),
            Op::Clamp => format!("tang_clamp({x}, {y}, {z})"),
        }
    }

    /// The WGSL helper function the op's expression calls, if any, for values of the
    /// given lanes: its name and its text (emitted once per shader, only for ops the
    /// shader uses).
    pub fn wgsl_helper(self, lanes: Lanes) -> Option<(&'static str, String)> {
        let (name, template) = match self {
            Op::Signum => ("tang_signum", WGSL_SIGNUM),
            Op::Round => ("tang_round", WGSL_ROUND),
            Op::Sigmoid | Op::Silu => ("tang_sigmoid", WGSL_SIGMOID),
            Op::Softplus => ("tang_softplus", WGSL_SOFTPLUS),
            Op::LogSigmoid => ("tang_log_sigmoid", WGSL_LOG_SIGMOID),
            Op::GeluTanh => ("tang_gelu_tanh", WGSL_GELU_TANH),
            Op::PowI(_) => ("tang_powi", WGSL_POWI),
            Op::Powf => ("tang_powf", WGSL_POWF),
            Op::LogAddExp => ("tang_logaddexp", WGSL_LOGADDEXP),
            Op::Clamp => ("tang_clamp", WGSL_CLAMP),
            _ => return None,
        };
        let text = template
            .replace("{T}", lanes.float())
            .replace("{U}", lanes.uint());
        Some((name, text))
    }
}

const WGSL_SIGNUM: &str = "fn tang_signum(x: {T}) -> {T} {
    // Rust's signum: 1 for +0, -1 for -0, NaN stays NaN
    let s = select({T}(1.0f), {T}(-1.0f), (bitcast<{U}>(x) & {U}(0x80000000u)) != {U}(0u));
    return select(s, x, x != x);
}
";

const WGSL_ROUND: &str = "fn tang_round(x: {T}) -> {T} {
    // halves away from zero, as Rust's round (WGSL's round goes to even)
    let t = trunc(x);
    return select(t, t + select({T}(1.0f), {T}(-1.0f), x < {T}(0.0f)), abs(x - t) >= {T}(0.5f));
}
";

const WGSL_SIGMOID: &str = "fn tang_sigmoid(x: {T}) -> {T} {
    // exp of a non-positive number only: no overflow
    let e = exp(-abs(x));
    return select(e / (1.0f + e), 1.0f / (1.0f + e), x >= {T}(0.0f));
}
";

const WGSL_SOFTPLUS: &str = "fn tang_softplus(x: {T}) -> {T} {
    return max(x, {T}(0.0f)) + log(1.0f + exp(-abs(x)));
}
";

const WGSL_LOG_SIGMOID: &str = "fn tang_log_sigmoid(x: {T}) -> {T} {
    return min(x, {T}(0.0f)) - log(1.0f + exp(-abs(x)));
}
";

const WGSL_GELU_TANH: &str = "fn tang_gelu_tanh(x: {T}) -> {T} {
    let u = clamp(0.7978846f * (x + 0.044715f * x * x * x), {T}(-15.0f), {T}(15.0f));
    return 0.5f * x * (1.0f + tanh(u));
}
";

const WGSL_POWI: &str = "fn tang_powi(x: {T}, n: i32) -> {T} {
    // square-and-multiply: exact sign for negative bases, like Rust's powi
    var base = x;
    var e = abs(n);
    var r = {T}(1.0f);
    loop {
        if (e == 0) { break; }
        if ((e & 1) == 1) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return select(r, 1.0f / r, n < 0);
}
";

const WGSL_POWF: &str = "fn tang_powf(x: {T}, y: {T}) -> {T} {
    // WGSL's pow is undefined for x < 0; Rust's powf is defined for integral y
    let m = pow(abs(x), y);
    let odd = trunc(y * 0.5f) * 2.0f != y;
    let negative = select({T}(bitcast<f32>(0x7fc00000u)), select(m, -m, odd), trunc(y) == y);
    return select(select(negative, m, x >= {T}(0.0f)), {T}(1.0f), y == {T}(0.0f));
}
";

const WGSL_LOGADDEXP: &str = "fn tang_logaddexp(a: {T}, b: {T}) -> {T} {
    // equal arguments (also both infinite) would give inf - inf = NaN below
    let r = max(a, b) + log(1.0f + exp(-abs(a - b)));
    return select(r, a + 0.6931472f, a == b);
}
";

const WGSL_CLAMP: &str = "fn tang_clamp(x: {T}, lo: {T}, hi: {T}) -> {T} {
    // Rust's clamp order of tests (WGSL's clamp is undefined when lo > hi)
    return select(select(x, hi, x > hi), lo, x < lo);
}
";
