//! The op table: every operation of the IR, each defined by one entry (name, types,
//! flags, kernel-language method, CPU evaluation in f32 and f64 through [`Float`], local
//! derivatives written in the same op set, WGSL, accuracy). `macros.rs` turns the table
//! into the [`Op`] enum, [`ALL_OPS`], the lowering's method lookup, the tracing methods and
//! [`StableExt`]; simplification rules live in `simplify.rs`, keyed by the same enum.

// The macro that expands the table below, first: textual scope.
#[macro_use]
mod macros;

pub(crate) mod float;
pub(crate) mod lanes;
mod partials;
pub(crate) mod special;
#[cfg(test)]
mod tests;
mod types;
mod wgsl_helpers;

use Partial::{MinusOne, One, Route, Scale, Zero};
use float::{Float, b2f, sigmoid, truthy};
use special::{GELU_C, GELU_K};
pub use types::{Accuracy, Method, Partial, Provider, Sig};
use types::{COMMUTATIVE, CONSTANT, EXACT, NONE, fill_wgsl, i32_literal, k, pad};
use wgsl_helpers::Helper;

use crate::graph::{Graph, NodeId};

op_table! {
    /// `-a`
    Neg {
        name: "neg", sig: F1, flags: EXACT, method: none,
        eval: |x| -x,
        d: |g, [a], out| [MinusOne],
        wgsl: "(-{0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `1 / a`
    Recip {
        name: "recip", sig: F1, flags: NONE, method: std recip,
        eval: |x| k::<F>(1.0) / x,
        d: |g, [a], out| {
            // d(1/a) = -out^2
            let sq = g.app(Op::Mul, &[out, out]);
            [Scale(g.app(Op::Neg, &[sq]))]
        },
        wgsl: "(1.0f / {0})", helper: none, accuracy: (0.0, 3e-7),
    }
    /// `a.sqrt()`
    Sqrt {
        name: "sqrt", sig: F1, flags: EXACT, method: std sqrt,
        eval: |x| x.sqrt(),
        d: |g, [a], out| {
            let half = g.constant(0.5);
            [Scale(g.app(Op::Div, &[half, out]))]
        },
        wgsl: "sqrt({0})", helper: none, accuracy: (0.0, 3e-7),
    }
    /// `a.exp()`
    Exp {
        name: "exp", sig: F1, flags: NONE, method: std exp,
        eval: |x| x.exp(),
        d: |g, [a], out| [Scale(out)],
        wgsl: "exp({0})", helper: none, accuracy: (0.0, 2e-6),
    }
    /// `a.ln()`
    Ln {
        name: "ln", sig: F1, flags: NONE, method: std ln,
        eval: |x| x.ln(),
        d: |g, [a], out| [Scale(g.app(Op::Recip, &[a]))],
        wgsl: "tang_ln({0})", helper: LN, accuracy: (5e-7, 4e-7),
    }
    /// `a.log2()`
    Log2 {
        name: "log2", sig: F1, flags: NONE, method: std log2,
        eval: |x| x.log2(),
        d: |g, [a], out| {
            let ln2 = g.constant(std::f32::consts::LN_2);
            let d = g.app(Op::Mul, &[a, ln2]);
            [Scale(g.app(Op::Recip, &[d]))]
        },
        wgsl: "tang_log2({0})", helper: LOG2, accuracy: (5e-7, 4e-7),
    }
    /// `a.exp2()`
    Exp2 {
        name: "exp2", sig: F1, flags: NONE, method: std exp2,
        eval: |x| x.exp2(),
        d: |g, [a], out| {
            let ln2 = g.constant(std::f32::consts::LN_2);
            [Scale(g.app(Op::Mul, &[out, ln2]))]
        },
        wgsl: "exp2({0})", helper: none, accuracy: (0.0, 2e-6),
    }
    /// `a.sin()`
    Sin {
        name: "sin", sig: F1, flags: NONE, method: std sin,
        eval: |x| x.sin(),
        d: |g, [a], out| [Scale(g.app(Op::Cos, &[a]))],
        wgsl: "tang_sin({0})", helper: SIN, accuracy: (6e-8, 1.2e-7, up_to 1e5),
    }
    /// `a.cos()`
    Cos {
        name: "cos", sig: F1, flags: NONE, method: std cos,
        eval: |x| x.cos(),
        d: |g, [a], out| {
            let s = g.app(Op::Sin, &[a]);
            [Scale(g.app(Op::Neg, &[s]))]
        },
        wgsl: "tang_cos({0})", helper: COS, accuracy: (6e-8, 1.2e-7, up_to 1e5),
    }
    /// `a.tan()`
    Tan {
        name: "tan", sig: F1, flags: NONE, method: std tan,
        eval: |x| x.tan(),
        d: |g, [a], out| {
            let one = g.constant(1.0);
            let sq = g.app(Op::Mul, &[out, out]);
            [Scale(g.app(Op::Add, &[one, sq]))]
        },
        // near a pole tan is only as exact as its argument: one ulp of it, through tan'
        wgsl: "tang_tan({0})", helper: TAN, accuracy: (0.0, 2.5e-7, up_to 1e5, arg_ulps 1.0),
    }
    /// `a.tanh()` (the GPU clamps the input first: `tanh` of a large value is exactly ±1
    /// in f32, and some drivers compute it through `exp`, which overflows)
    Tanh {
        name: "tanh", sig: F1, flags: NONE, method: std tanh,
        eval: |x| x.tanh(),
        d: |g, [a], out| {
            let one = g.constant(1.0);
            let sq = g.app(Op::Mul, &[out, out]);
            [Scale(g.app(Op::Sub, &[one, sq]))]
        },
        wgsl: "tang_tanh({0})", helper: TANH, accuracy: (1e-6, 2e-6),
    }
    /// `a.abs()`
    Abs {
        name: "abs", sig: F1, flags: EXACT, method: std abs,
        eval: |x| x.abs(),
        d: |g, [a], out| [Scale(partials::abs_slope(g, a))],
        wgsl: "abs({0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.signum()` with Rust's meaning: 1 for +0, -1 for -0, NaN for NaN
    Signum {
        name: "signum", sig: F1, flags: CONSTANT, method: std signum,
        eval: |x| x.signum(),
        d: |g, [a], out| [Zero],
        wgsl: "tang_signum({0})", helper: SIGNUM, accuracy: (0.0, 0.0),
    }
    /// `a.floor()`
    Floor {
        name: "floor", sig: F1, flags: CONSTANT, method: std floor,
        eval: |x| x.floor(),
        d: |g, [a], out| [Zero],
        wgsl: "floor({0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.ceil()`
    Ceil {
        name: "ceil", sig: F1, flags: CONSTANT, method: std ceil,
        eval: |x| x.ceil(),
        d: |g, [a], out| [Zero],
        wgsl: "ceil({0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.round()`: halves away from zero, as Rust does (WGSL's `round` rounds halves to even)
    Round {
        name: "round", sig: F1, flags: CONSTANT, method: std round,
        eval: |x| x.round(),
        d: |g, [a], out| [Zero],
        wgsl: "tang_round({0})", helper: ROUND, accuracy: (0.0, 0.0),
    }
    /// `a.trunc()`
    Trunc {
        name: "trunc", sig: F1, flags: CONSTANT, method: std trunc,
        eval: |x| x.trunc(),
        d: |g, [a], out| [Zero],
        wgsl: "trunc({0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.fract() = a - a.trunc()`, the fractional part with the sign of `a` (PyTorch's
    /// `frac`; NaN for infinities)
    Fract {
        name: "fract", sig: F1, flags: EXACT, method: std fract,
        eval: |x| x.fract(),
        d: |g, [a], out| [One],
        wgsl: "({0} - trunc({0}))", helper: none, accuracy: (0.0, 0.0),
    }
    /// `1 / (1 + exp(-a))` without overflow
    Sigmoid {
        name: "sigmoid", sig: F1, flags: NONE, method: ext sigmoid,
        eval: |x| sigmoid(x),
        d: |g, [a], out| {
            let one = g.constant(1.0);
            let rest = g.app(Op::Sub, &[one, out]);
            [Scale(g.app(Op::Mul, &[out, rest]))]
        },
        wgsl: "tang_sigmoid({0})", helper: SIGMOID, accuracy: (1e-6, 2e-6),
    }
    /// `ln(1 + exp(a))` without overflow
    Softplus {
        name: "softplus", sig: F1, flags: NONE, method: ext softplus,
        eval: |x| {
            // max(x, 0) + ln(1 + exp(-|x|))
            let m = if x > k(0.0) { x } else { k(0.0) };
            m + (-x.abs()).exp().ln_1p()
        },
        d: |g, [a], out| [Scale(g.app(Op::Sigmoid, &[a]))],
        wgsl: "tang_softplus({0})", helper: SOFTPLUS, accuracy: (1e-6, 2e-6),
    }
    /// `ln(sigmoid(a)) = -softplus(-a)` without overflow
    LogSigmoid {
        name: "log_sigmoid", sig: F1, flags: NONE, method: ext log_sigmoid,
        eval: |x| {
            // min(x, 0) - ln(1 + exp(-|x|))
            let m = if x < k(0.0) { x } else { k(0.0) };
            m - (-x.abs()).exp().ln_1p()
        },
        d: |g, [a], out| {
            let na = g.app(Op::Neg, &[a]);
            [Scale(g.app(Op::Sigmoid, &[na]))]
        },
        wgsl: "tang_log_sigmoid({0})", helper: LOG_SIGMOID, accuracy: (1e-6, 2e-6),
    }
    /// `a * sigmoid(a)` (also called swish)
    Silu {
        name: "silu", sig: F1, flags: NONE, method: ext silu,
        eval: |x| x * sigmoid(x),
        d: |g, [a], out| {
            // s (1 + a (1 - s))
            let s = g.app(Op::Sigmoid, &[a]);
            let one = g.constant(1.0);
            let rest = g.app(Op::Sub, &[one, s]);
            let t = g.app(Op::Mul, &[a, rest]);
            let t = g.app(Op::Add, &[one, t]);
            [Scale(g.app(Op::Mul, &[s, t]))]
        },
        wgsl: "({0} * tang_sigmoid({0}))", helper: SIGMOID, accuracy: (1e-6, 2e-6),
    }
    /// The tanh approximation of GELU, `0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))`,
    /// finite for every finite input
    GeluTanh {
        name: "gelu_tanh", sig: F1, flags: NONE, method: ext gelu_tanh,
        eval: |x| {
            // the same (f32) constants in f32 and f64, the WGSL and the derivative, so f64
            // evaluation is a faithful reference for all of them
            let (kk, c) = (k::<F>(GELU_K as f64), k::<F>(GELU_C as f64));
            k::<F>(0.5) * x * (k::<F>(1.0) + (kk * (x + c * x * x * x)).tanh())
        },
        d: |g, [a], out| [Scale(partials::gelu_tanh(g, a))],
        wgsl: "tang_gelu_tanh({0})", helper: GELU_TANH, accuracy: (1e-6, 2e-6),
    }
    /// `a` in value, zero in every derivative
    StopGradient {
        name: "stop_gradient", sig: F1, flags: CONSTANT, method: ext stop_gradient,
        eval: |x| x,
        d: |g, [a], out| [Zero],
        wgsl: "{0}", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.powi(n)` for a constant integer `n`
    PowI(n: i32 = 3) {
        name: "powi", sig: F1, flags: NONE, method: int powi,
        eval: |x| x.powi(n),
        d: |g, [a], out| {
            if n == 0 {
                [Zero]
            } else {
                let nn = g.constant(n as f32);
                let p = g.app(Op::PowI(n - 1), &[a]);
                [Scale(g.app(Op::Mul, &[nn, p]))]
            }
        },
        wgsl: format!("tang_powi({{0}}, {})", i32_literal(n)),
        helper: POWI, accuracy: (0.0, 2e-7),
    }
    /// `a + b`
    Add {
        name: "add", sig: F2, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| x + y,
        d: |g, [a, b], out| [One, One],
        wgsl: "({0} + {1})", helper: none, accuracy: (0.0, 6e-8),
    }
    /// `a - b`
    Sub {
        name: "sub", sig: F2, flags: EXACT, method: none,
        eval: |x, y| x - y,
        d: |g, [a, b], out| [One, MinusOne],
        wgsl: "({0} - {1})", helper: none, accuracy: (0.0, 6e-8),
    }
    /// `a * b`
    Mul {
        name: "mul", sig: F2, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| x * y,
        d: |g, [a, b], out| [Scale(b), Scale(a)],
        wgsl: "({0} * {1})", helper: none, accuracy: (0.0, 6e-8),
    }
    /// `a / b`
    Div {
        name: "div", sig: F2, flags: EXACT, method: none,
        eval: |x, y| x / y,
        d: |g, [a, b], out| {
            let rb = g.app(Op::Recip, &[b]);
            let q = g.app(Op::Div, &[out, b]);
            [Scale(rb), Scale(g.app(Op::Neg, &[q]))]
        },
        wgsl: "({0} / {1})", helper: none, accuracy: (0.0, 3e-7),
    }
    /// `a.powf(b)`
    Powf {
        name: "powf", sig: F2, flags: NONE, method: std powf,
        eval: |x, y| x.powf(y),
        d: |g, [a, b], out| {
            // d/da = b a^(b-1), d/db = out ln(a)
            let one = g.constant(1.0);
            let bm1 = g.app(Op::Sub, &[b, one]);
            let p = g.app(Op::Powf, &[a, bm1]);
            let da = g.app(Op::Mul, &[b, p]);
            let ln = g.app(Op::Ln, &[a]);
            [Scale(da), Scale(g.app(Op::Mul, &[out, ln]))]
        },
        wgsl: "tang_powf({0}, {1})", helper: POWF, accuracy: (1e-6, 2e-5),
    }
    /// `a.min(b)` (Rust's: the other argument where one is NaN)
    Min {
        name: "min", sig: F2, flags: EXACT, method: std min,
        eval: |x, y| x.min(y),
        d: |g, [a, b], out| partials::min_max(g, Op::Lt, a, b),
        wgsl: "tang_min({0}, {1})", helper: MIN, accuracy: (0.0, 0.0),
    }
    /// `a.max(b)` (Rust's: the other argument where one is NaN)
    Max {
        name: "max", sig: F2, flags: EXACT, method: std max,
        eval: |x, y| x.max(y),
        d: |g, [a, b], out| partials::min_max(g, Op::Gt, a, b),
        wgsl: "tang_max({0}, {1})", helper: MAX, accuracy: (0.0, 0.0),
    }
    /// `ln(exp(a) + exp(b))` without overflow
    LogAddExp {
        name: "logaddexp", sig: F2, flags: COMMUTATIVE, method: ext logaddexp,
        eval: |x, y| {
            if x == y {
                // also covers -inf, -inf (ln 0 + ln 2 = -inf) without a NaN from inf-inf
                x + k(std::f64::consts::LN_2)
            } else {
                let m = if x > y { x } else { y };
                m + (-(x - y).abs()).exp().ln_1p()
            }
        },
        d: |g, [a, b], out| {
            let d = g.app(Op::Sub, &[a, b]);
            let sa = g.app(Op::Sigmoid, &[d]);
            let nd = g.app(Op::Neg, &[d]);
            [Scale(sa), Scale(g.app(Op::Sigmoid, &[nd]))]
        },
        wgsl: "tang_logaddexp({0}, {1})", helper: LOGADDEXP, accuracy: (1e-6, 2e-6),
    }
    /// `a < b`
    Lt {
        name: "lt", sig: Cmp, flags: EXACT, method: none,
        eval: |x, y| b2f(x < y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_lt({0}, {1})", helper: LT, accuracy: (0.0, 0.0),
    }
    /// `a <= b`
    Le {
        name: "le", sig: Cmp, flags: EXACT, method: none,
        eval: |x, y| b2f(x <= y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_le({0}, {1})", helper: LE, accuracy: (0.0, 0.0),
    }
    /// `a > b`
    Gt {
        name: "gt", sig: Cmp, flags: EXACT, method: none,
        eval: |x, y| b2f(x > y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_gt({0}, {1})", helper: GT, accuracy: (0.0, 0.0),
    }
    /// `a >= b`
    Ge {
        name: "ge", sig: Cmp, flags: EXACT, method: none,
        eval: |x, y| b2f(x >= y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_ge({0}, {1})", helper: GE, accuracy: (0.0, 0.0),
    }
    /// `a == b`
    Eq {
        name: "eq", sig: Cmp, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| b2f(x == y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_eq({0}, {1})", helper: EQ, accuracy: (0.0, 0.0),
    }
    /// `a != b`
    Ne {
        name: "ne", sig: Cmp, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| b2f(x != y),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "tang_ne({0}, {1})", helper: NE, accuracy: (0.0, 0.0),
    }
    /// `a && b`
    And {
        name: "and", sig: B2, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| b2f(truthy(x) && truthy(y)),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "({0} & {1})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a || b`
    Or {
        name: "or", sig: B2, flags: EXACT | COMMUTATIVE, method: none,
        eval: |x, y| b2f(truthy(x) || truthy(y)),
        d: |g, [a, b], out| [Zero, Zero],
        wgsl: "({0} | {1})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `!a`
    Not {
        name: "not", sig: B1, flags: EXACT, method: none,
        eval: |x| b2f(!truthy(x)),
        d: |g, [a], out| [Zero],
        wgsl: "(!{0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `if c { a } else { b }`: arguments (c, a, b)
    Select {
        name: "select", sig: Sel, flags: EXACT, method: none,
        eval: |c, x, y| if truthy(c) { x } else { y },
        d: |g, [c, a, b], out| [
            Zero,
            Route { cond: c, on_true: true },
            Route { cond: c, on_true: false },
        ],
        wgsl: "select({2}, {1}, {0})", helper: none, accuracy: (0.0, 0.0),
    }
    /// `a.mul_add(b, c) = a * b + c` (fused on the GPU where the driver fuses it)
    MulAdd {
        name: "mul_add", sig: F3, flags: NONE, method: std mul_add,
        eval: |x, y, z| x.mul_add(y, z),
        d: |g, [a, b, c], out| [Scale(b), Scale(a), One],
        wgsl: "fma({0}, {1}, {2})", helper: none, accuracy: (1e-5, 6e-8),
    }
    /// `a.clamp(lo, hi)`: arguments (a, lo, hi), Rust's order of tests (NaN stays NaN)
    Clamp {
        name: "clamp", sig: F3, flags: NONE, method: std clamp,
        eval: |x, lo, hi| if x < lo { lo } else if x > hi { hi } else { x },
        d: |g, [a, lo, hi], out| partials::clamp(g, a, lo, hi),
        wgsl: "tang_clamp({0}, {1}, {2})", helper: CLAMP, accuracy: (0.0, 0.0),
    }
    /// `a.erf()`, the error function (through `StableExt`: Rust's `f32` has none yet)
    Erf {
        name: "erf", sig: F1, flags: NONE, method: ext erf,
        eval: |x| x.erf(),
        d: |g, [a], out| [Scale(partials::erf(g, a, 1.0))],
        wgsl: "tang_erf({0})", helper: ERF, accuracy: (2e-7, 0.0),
    }
    /// `a.erfc() = 1 - erf(a)`, with relative accuracy where it is tiny (through
    /// `StableExt`)
    Erfc {
        name: "erfc", sig: F1, flags: NONE, method: ext erfc,
        eval: |x| x.erfc(),
        d: |g, [a], out| [Scale(partials::erf(g, a, -1.0))],
        wgsl: "tang_erfc({0})", helper: ERFC, accuracy: (2e-7, 2e-6),
    }
    /// PyTorch's exact GELU (`nn.GELU()`): `a Phi(a) = a/2 (1 + erf(a / sqrt 2))`,
    /// computed as `a/2 erfc(-a / sqrt 2)` so the left tail keeps its digits
    GeluErf {
        name: "gelu_erf", sig: F1, flags: NONE, method: ext gelu_erf,
        eval: |x| x.gelu_exact(),
        d: |g, [a], out| [Scale(g.app(Op::GeluErfGrad, &[a]))],
        wgsl: "tang_gelu_erf({0})", helper: GELU_ERF, accuracy: (1e-6, 0.0),
    }
    /// The derivative of the exact GELU, `Phi(a) + a phi(a)` (the standard normal's CDF and
    /// density): one op, so that its kernel shares one exponential between the two
    GeluErfGrad {
        name: "gelu_erf_grad", sig: F1, flags: NONE, method: none,
        eval: |x| x.gelu_exact_grad(),
        d: |g, [a], out| [Scale(partials::gelu_erf_second(g, a))],
        wgsl: "tang_gelu_erf_grad({0})", helper: GELU_ERF_GRAD, accuracy: (1e-6, 0.0),
    }
    /// `a.atan()`
    Atan {
        name: "atan", sig: F1, flags: NONE, method: std atan,
        eval: |x| x.atan(),
        d: |g, [a], out| {
            let r = partials::one_plus_square(g, a, 1.0);
            [Scale(g.app(Op::Recip, &[r]))]
        },
        wgsl: "tang_atan({0})", helper: ATAN, accuracy: (3e-7, 0.0),
    }
    /// `a.atan2(b)`: the angle of the point `(b, a)` in `[-pi, pi]`, with IEEE's values at
    /// zeros and infinities (`atan2(±0, -0) = ±pi`)
    Atan2 {
        name: "atan2", sig: F2, flags: NONE, method: std atan2,
        eval: |y, x| y.atan2(x),
        d: |g, [a, b], out| {
            let r2 = partials::sum_of_squares(g, a, b);
            let da = g.app(Op::Div, &[b, r2]);
            let db = g.app(Op::Div, &[a, r2]);
            [Scale(da), Scale(g.app(Op::Neg, &[db]))]
        },
        wgsl: "tang_atan2({0}, {1})", helper: ATAN2, accuracy: (4e-7, 0.0),
    }
    /// `a.asin()` (NaN outside `[-1, 1]`)
    Asin {
        name: "asin", sig: F1, flags: NONE, method: std asin,
        eval: |x| x.asin(),
        d: |g, [a], out| {
            let r = partials::one_plus_square(g, a, -1.0);
            [Scale(g.app(Op::Rsqrt, &[r]))]
        },
        wgsl: "tang_asin({0})", helper: ASIN, accuracy: (3e-7, 0.0),
    }
    /// `a.acos()` (NaN outside `[-1, 1]`)
    Acos {
        name: "acos", sig: F1, flags: NONE, method: std acos,
        eval: |x| x.acos(),
        d: |g, [a], out| {
            let r = partials::one_plus_square(g, a, -1.0);
            let d = g.app(Op::Rsqrt, &[r]);
            [Scale(g.app(Op::Neg, &[d]))]
        },
        wgsl: "tang_acos({0})", helper: ACOS, accuracy: (6e-7, 0.0),
    }
    /// `a.sinh()`, accurate near 0 and finite up to 89
    Sinh {
        name: "sinh", sig: F1, flags: NONE, method: std sinh,
        eval: |x| x.sinh(),
        d: |g, [a], out| [Scale(g.app(Op::Cosh, &[a]))],
        wgsl: "tang_sinh({0})", helper: SINH, accuracy: (0.0, 2e-6),
    }
    /// `a.cosh()`, finite up to 89
    Cosh {
        name: "cosh", sig: F1, flags: NONE, method: std cosh,
        eval: |x| x.cosh(),
        d: |g, [a], out| [Scale(g.app(Op::Sinh, &[a]))],
        wgsl: "tang_cosh({0})", helper: COSH, accuracy: (0.0, 2e-6),
    }
    /// `a.asinh()`, accurate near 0 (like Rust's `f32::asinh`, inf above `f32::MAX / 2`)
    Asinh {
        name: "asinh", sig: F1, flags: NONE, method: std asinh,
        eval: |x| x.asinh(),
        d: |g, [a], out| {
            let r = partials::one_plus_square(g, a, 1.0);
            [Scale(g.app(Op::Rsqrt, &[r]))]
        },
        wgsl: "tang_asinh({0})", helper: ASINH, accuracy: (0.0, 6e-7),
    }
    /// `a.acosh()` (NaN below 1; like Rust's `f32::acosh`, inf above `f32::MAX / 2`)
    Acosh {
        name: "acosh", sig: F1, flags: NONE, method: std acosh,
        eval: |x| x.acosh(),
        d: |g, [a], out| {
            let one = g.constant(1.0);
            let lo = g.app(Op::Sub, &[a, one]);
            let hi = g.app(Op::Add, &[a, one]);
            let r = g.app(Op::Mul, &[lo, hi]);
            [Scale(g.app(Op::Rsqrt, &[r]))]
        },
        wgsl: "tang_acosh({0})", helper: ACOSH, accuracy: (0.0, 6e-7),
    }
    /// `a.atanh()` (±inf at ±1, NaN beyond)
    Atanh {
        name: "atanh", sig: F1, flags: NONE, method: std atanh,
        eval: |x| x.atanh(),
        d: |g, [a], out| {
            let r = partials::one_plus_square(g, a, -1.0);
            [Scale(g.app(Op::Recip, &[r]))]
        },
        // Rust's f32::atanh (the CPU side) loses digits near -1: up to 7e-6 relative
        wgsl: "tang_atanh({0})", helper: ATANH, accuracy: (0.0, 1e-5),
    }
    /// `a.exp_m1() = exp(a) - 1`, accurate near 0 (where `exp(a) - 1` loses every digit)
    ExpM1 {
        name: "exp_m1", sig: F1, flags: NONE, method: std exp_m1,
        eval: |x| x.exp_m1(),
        d: |g, [a], out| [Scale(g.app(Op::Exp, &[a]))],
        wgsl: "tang_expm1({0})", helper: EXPM1, accuracy: (0.0, 2e-6),
    }
    /// `a.ln_1p() = ln(1 + a)`, accurate near 0 (-inf at -1, NaN below)
    Ln1p {
        name: "ln_1p", sig: F1, flags: NONE, method: std ln_1p,
        eval: |x| x.ln_1p(),
        d: |g, [a], out| {
            let one = g.constant(1.0);
            let r = g.app(Op::Add, &[one, a]);
            [Scale(g.app(Op::Recip, &[r]))]
        },
        wgsl: "tang_ln1p({0})", helper: LN1P, accuracy: (1e-7, 6e-7),
    }
    /// `a.hypot(b) = sqrt(a^2 + b^2)` without overflow (inf if either is infinite, even
    /// with a NaN on the other side)
    Hypot {
        name: "hypot", sig: F2, flags: COMMUTATIVE, method: std hypot,
        eval: |x, y| x.hypot(y),
        d: |g, [a, b], out| [
            Scale(partials::over_positive(g, a, out)),
            Scale(partials::over_positive(g, b, out)),
        ],
        wgsl: "tang_hypot({0}, {1})", helper: HYPOT, accuracy: (0.0, 4e-7),
    }
    /// `a.rsqrt() = 1 / a.sqrt()` (through `StableExt`: ±inf at ±0, NaN below 0)
    Rsqrt {
        name: "rsqrt", sig: F1, flags: NONE, method: ext rsqrt,
        eval: |x| k::<F>(1.0) / x.sqrt(),
        d: |g, [a], out| {
            // -out^3 / 2
            let h = g.constant(-0.5);
            let sq = g.app(Op::Mul, &[out, out]);
            let cube = g.app(Op::Mul, &[sq, out]);
            [Scale(g.app(Op::Mul, &[h, cube]))]
        },
        wgsl: "tang_rsqrt({0})", helper: RSQRT, accuracy: (0.0, 4e-7),
    }
    /// `a.copysign(b)`: the magnitude of `a` with the sign of `b`
    Copysign {
        name: "copysign", sig: F2, flags: EXACT, method: std copysign,
        eval: |x, y| x.copysign(y),
        d: |g, [a, b], out| {
            let slope = partials::abs_slope(g, a);
            let s = g.app(Op::Signum, &[b]);
            [Scale(g.app(Op::Mul, &[slope, s])), Zero]
        },
        wgsl: "tang_copysign({0}, {1})", helper: COPYSIGN, accuracy: (0.0, 0.0),
    }
    /// `a.cbrt()`, the real cube root (negative for a negative `a`)
    Cbrt {
        name: "cbrt", sig: F1, flags: NONE, method: std cbrt,
        eval: |x| x.cbrt(),
        d: |g, [a], out| {
            // 1 / (3 out^2)
            let three = g.constant(3.0);
            let sq = g.app(Op::Mul, &[out, out]);
            let d = g.app(Op::Mul, &[three, sq]);
            [Scale(g.app(Op::Recip, &[d]))]
        },
        wgsl: "tang_cbrt({0})", helper: CBRT, accuracy: (0.0, 3e-7),
    }
}
