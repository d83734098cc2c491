//! Every operation of the IR, each defined in one place: its name, types, CPU evaluation
//! (f32 and f64 through [`Float`](crate::Float)), local derivatives (written in the same op set, see
//! [`Partial`]) and WGSL. Simplification rules live in `simplify.rs`, keyed by the same
//! enum, so adding an op means touching this file and, if it folds, that one.

use crate::float::*;
use crate::graph::{Graph, NodeId, Ty};

/// An operation of the IR.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Op {
    // ---- unary float -> float
    /// `-a`
    Neg,
    /// `1 / a`
    Recip,
    /// `a.sqrt()`
    Sqrt,
    /// `a.exp()`
    Exp,
    /// `a.ln()`
    Ln,
    /// `a.exp2()`
    Exp2,
    /// `a.log2()`
    Log2,
    /// `a.sin()`
    Sin,
    /// `a.cos()`
    Cos,
    /// `a.tan()`
    Tan,
    /// `a.tanh()` (the GPU clamps the input first: `tanh` of a large value is exactly ±1
    /// in f32, and some drivers compute it through `exp`, which overflows)
    Tanh,
    /// `a.abs()`
    Abs,
    /// `a.signum()` with Rust's meaning: 1 for +0, -1 for -0, NaN for NaN
    Signum,
    /// `a.floor()`
    Floor,
    /// `a.ceil()`
    Ceil,
    /// `a.round()`: halves away from zero, as Rust does (WGSL's `round` rounds halves to even)
    Round,
    /// `a.trunc()`
    Trunc,
    /// `1 / (1 + exp(-a))` without overflow
    Sigmoid,
    /// `ln(1 + exp(a))` without overflow
    Softplus,
    /// `ln(sigmoid(a)) = -softplus(-a)` without overflow
    LogSigmoid,
    /// `a * sigmoid(a)`
    Silu,
    /// `0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))`
    GeluTanh,
    /// `a` in value, zero in every derivative
    StopGradient,
    /// `a.powi(n)` for a constant integer `n`
    PowI(i32),
    // ---- binary float, float -> float
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `a.powf(b)`
    Powf,
    /// `a.min(b)`
    Min,
    /// `a.max(b)`
    Max,
    /// `ln(exp(a) + exp(b))` without overflow
    LogAddExp,
    // ---- comparisons float, float -> bool
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    // ---- boolean
    /// `a && b`
    And,
    /// `a || b`
    Or,
    /// `!a`
    Not,
    // ---- ternary
    /// `if c { a } else { b }`: arguments (c, a, b)
    Select,
    /// `a.mul_add(b, c) = a * b + c` (fused on the GPU)
    MulAdd,
    /// `a.clamp(lo, hi)`: arguments (a, lo, hi)
    Clamp,
}

/// Every operation, for generators and exhaustive tests (`PowI` appears with exponent 3).
pub const ALL_OPS: &[Op] = &[
    Op::Neg,
    Op::Recip,
    Op::Sqrt,
    Op::Exp,
    Op::Ln,
    Op::Exp2,
    Op::Log2,
    Op::Sin,
    Op::Cos,
    Op::Tan,
    Op::Tanh,
    Op::Abs,
    Op::Signum,
    Op::Floor,
    Op::Ceil,
    Op::Round,
    Op::Trunc,
    Op::Sigmoid,
    Op::Softplus,
    Op::LogSigmoid,
    Op::Silu,
    Op::GeluTanh,
    Op::StopGradient,
    Op::PowI(3),
    Op::Add,
    Op::Sub,
    Op::Mul,
    Op::Div,
    Op::Powf,
    Op::Min,
    Op::Max,
    Op::LogAddExp,
    Op::Lt,
    Op::Le,
    Op::Gt,
    Op::Ge,
    Op::Eq,
    Op::Ne,
    Op::And,
    Op::Or,
    Op::Not,
    Op::Select,
    Op::MulAdd,
    Op::Clamp,
];

/// `sqrt(2 / pi)`, the constant inside the tanh approximation of GELU.
pub const GELU_K: f32 = 0.797_884_6;
/// The cubic coefficient of the tanh approximation of GELU.
pub const GELU_C: f32 = 0.044_715;
/// Where the GPU clamps `tanh`'s input: `tanh(±15)` is already ±1 in f32.
pub const TANH_CLAMP: f32 = 15.0;

/// How an argument's adjoint follows from the output's adjoint `adj`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Partial {
    /// The argument does not influence the output's derivative (contributes nothing).
    Zero,
    /// `adj`
    One,
    /// `-adj`
    MinusOne,
    /// `adj * p` for the float node `p`.
    Scale(NodeId),
    /// `if cond == on_true { adj } else { 0 }`: a branch routes the adjoint with `select`
    /// instead of multiplying by an indicator, so a NaN on the branch not taken never
    /// leaks (`0 * NaN = NaN`).
    Route {
        /// The boolean node that picks the branch.
        cond: NodeId,
        /// Whether the adjoint passes when `cond` is true (or when it is false).
        on_true: bool,
    },
}

impl Op {
    /// The op's name (used in errors, hashes and debugging output).
    pub fn name(self) -> &'static str {
        match self {
            Op::Neg => "neg",
            Op::Recip => "recip",
            Op::Sqrt => "sqrt",
            Op::Exp => "exp",
            Op::Ln => "ln",
            Op::Exp2 => "exp2",
            Op::Log2 => "log2",
            Op::Sin => "sin",
            Op::Cos => "cos",
            Op::Tan => "tan",
            Op::Tanh => "tanh",
            Op::Abs => "abs",
            Op::Signum => "signum",
            Op::Floor => "floor",
            Op::Ceil => "ceil",
            Op::Round => "round",
            Op::Trunc => "trunc",
            Op::Sigmoid => "sigmoid",
            Op::Softplus => "softplus",
            Op::LogSigmoid => "log_sigmoid",
            Op::Silu => "silu",
            Op::GeluTanh => "gelu_tanh",
            Op::StopGradient => "stop_gradient",
            Op::PowI(_) => "powi",
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Powf => "powf",
            Op::Min => "min",
            Op::Max => "max",
            Op::LogAddExp => "logaddexp",
            Op::Lt => "lt",
            Op::Le => "le",
            Op::Gt => "gt",
            Op::Ge => "ge",
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::And => "and",
            Op::Or => "or",
            Op::Not => "not",
            Op::Select => "select",
            Op::MulAdd => "mul_add",
            Op::Clamp => "clamp",
        }
    }

    /// Number of arguments.
    pub fn arity(self) -> usize {
        use Op::*;
        match self {
            Neg | Recip | Sqrt | Exp | Ln | Exp2 | Log2 | Sin | Cos | Tan | Tanh | Abs | Signum
            | Floor | Ceil | Round | Trunc | Sigmoid | Softplus | LogSigmoid | Silu | GeluTanh
            | StopGradient | PowI(_) | Not => 1,
            Add | Sub | Mul | Div | Powf | Min | Max | LogAddExp | Lt | Le | Gt | Ge | Eq | Ne
            | And | Or => 2,
            Select | MulAdd | Clamp => 3,
        }
    }

    /// Whether swapping the two arguments gives the same value (the graph then stores
    /// them in a canonical order). `min`/`max` are not listed: their derivative at a tie
    /// depends on the argument order.
    pub fn is_commutative(self) -> bool {
        matches!(
            self,
            Op::Add | Op::Mul | Op::Eq | Op::Ne | Op::And | Op::Or | Op::LogAddExp
        )
    }

    /// The types the arguments must have.
    pub fn arg_types(self) -> impl Iterator<Item = Ty> {
        let types: [Ty; 3] = match self {
            Op::And | Op::Or | Op::Not => [Ty::Bool, Ty::Bool, Ty::Bool],
            Op::Select => [Ty::Bool, Ty::F32, Ty::F32],
            _ => [Ty::F32, Ty::F32, Ty::F32],
        };
        types.into_iter().take(self.arity())
    }

    /// The type of the result.
    pub fn result_type(self) -> Ty {
        match self {
            Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Eq | Op::Ne | Op::And | Op::Or | Op::Not => {
                Ty::Bool
            }
            _ => Ty::F32,
        }
    }

    /// Whether the op's result is exactly rounded in IEEE arithmetic, so folding it on the
    /// host gives the bits the GPU would compute (the only ops constant folding may touch).
    pub fn is_exactly_rounded(self) -> bool {
        matches!(
            self,
            Op::Add
                | Op::Sub
                | Op::Mul
                | Op::Div
                | Op::Sqrt
                | Op::Min
                | Op::Max
                | Op::Neg
                | Op::Select
                | Op::Abs
                | Op::Lt
                | Op::Le
                | Op::Gt
                | Op::Ge
                | Op::Eq
                | Op::Ne
                | Op::And
                | Op::Or
                | Op::Not
        )
    }

    /// Evaluates the op on the CPU in the precision of `F`. Booleans are 0 or 1. Pass
    /// [`Op::arity`] values; a missing argument reads as NaN (so a wrong call gives a NaN
    /// result rather than a panic).
    pub fn eval<F: Float>(self, args: &[F]) -> F {
        let nan = F::from_f64(f64::NAN);
        let a = [
            args.first().copied().unwrap_or(nan),
            args.get(1).copied().unwrap_or(nan),
            args.get(2).copied().unwrap_or(nan),
        ];
        let x = a[0];
        let f = |v: f64| F::from_f64(v);
        match self {
            Op::Neg => f(-x.to_f64()),
            Op::Recip => bin(F::from_f64(1.0), x, |a, b| a / b, |a, b| a / b),
            Op::Sqrt => f_sqrt(x),
            Op::Exp => f_exp(x),
            Op::Ln => f_ln(x),
            Op::Exp2 => f_exp2(x),
            Op::Log2 => f_log2(x),
            Op::Sin => f_sin(x),
            Op::Cos => f_cos(x),
            Op::Tan => f_tan(x),
            Op::Tanh => f_tanh(x),
            Op::Abs => f_abs(x),
            Op::Signum => f_signum(x),
            Op::Floor => f_floor(x),
            Op::Ceil => f_ceil(x),
            Op::Round => f_round(x),
            Op::Trunc => f_trunc(x),
            Op::Sigmoid => x.sigmoid(),
            Op::Softplus => {
                // max(x, 0) + ln(1 + exp(-|x|))
                let m = if x.to_f64() > 0.0 { x } else { f(0.0) };
                let t = f_ln_1p(f_exp(f(-f_abs(x).to_f64())));
                bin(m, t, |a, b| a + b, |a, b| a + b)
            }
            Op::LogSigmoid => {
                // min(x, 0) - ln(1 + exp(-|x|))
                let m = if x.to_f64() < 0.0 { x } else { f(0.0) };
                let t = f_ln_1p(f_exp(f(-f_abs(x).to_f64())));
                bin(m, t, |a, b| a - b, |a, b| a - b)
            }
            Op::Silu => bin(x, x.sigmoid(), |a, b| a * b, |a, b| a * b),
            Op::GeluTanh => {
                if is_f32::<F>() {
                    let v = x.to_f64() as f32;
                    f((0.5 * v * (1.0 + (GELU_K * (v + GELU_C * v * v * v)).tanh())) as f64)
                } else {
                    let v = x.to_f64();
                    // the same (f32) constants as the f32 path, the WGSL and the derivative,
                    // so f64 evaluation is a faithful reference for all of them
                    let k = GELU_K as f64;
                    f(0.5 * v * (1.0 + (k * (v + GELU_C as f64 * v * v * v)).tanh()))
                }
            }
            Op::StopGradient => x,
            Op::PowI(n) => {
                if is_f32::<F>() {
                    f((x.to_f64() as f32).powi(n) as f64)
                } else {
                    f(x.to_f64().powi(n))
                }
            }
            Op::Add => bin(x, a[1], |a, b| a + b, |a, b| a + b),
            Op::Sub => bin(x, a[1], |a, b| a - b, |a, b| a - b),
            Op::Mul => bin(x, a[1], |a, b| a * b, |a, b| a * b),
            Op::Div => bin(x, a[1], |a, b| a / b, |a, b| a / b),
            Op::Powf => bin(x, a[1], f64::powf, f32::powf),
            Op::Min => bin(x, a[1], f64::min, f32::min),
            Op::Max => bin(x, a[1], f64::max, f32::max),
            Op::LogAddExp => {
                let (p, q) = (x.to_f64(), a[1].to_f64());
                if p == q {
                    // also covers -inf, -inf (ln 0 + ln 2 = -inf) without a NaN from inf-inf
                    bin(x, f(std::f64::consts::LN_2), |a, b| a + b, |a, b| a + b)
                } else {
                    let m = if p > q { x } else { a[1] };
                    let d = f_abs(bin(x, a[1], |a, b| a - b, |a, b| a - b));
                    let t = f_ln_1p(f_exp(f(-d.to_f64())));
                    bin(m, t, |a, b| a + b, |a, b| a + b)
                }
            }
            Op::Lt => b2f(x < a[1]),
            Op::Le => b2f(x <= a[1]),
            Op::Gt => b2f(x > a[1]),
            Op::Ge => b2f(x >= a[1]),
            Op::Eq => b2f(x.to_f64() == a[1].to_f64()),
            Op::Ne => b2f(x.to_f64() != a[1].to_f64()),
            Op::And => b2f(truthy(x) && truthy(a[1])),
            Op::Or => b2f(truthy(x) || truthy(a[1])),
            Op::Not => b2f(!truthy(x)),
            Op::Select => {
                if truthy(x) {
                    a[1]
                } else {
                    a[2]
                }
            }
            Op::MulAdd => {
                if is_f32::<F>() {
                    let (p, q, r) = (
                        x.to_f64() as f32,
                        a[1].to_f64() as f32,
                        a[2].to_f64() as f32,
                    );
                    f(p.mul_add(q, r) as f64)
                } else {
                    f(x.to_f64().mul_add(a[1].to_f64(), a[2].to_f64()))
                }
            }
            Op::Clamp => {
                // Rust's clamp: lo if x < lo, hi if x > hi, else x (NaN stays NaN)
                if x < a[1] {
                    a[1]
                } else if x > a[2] {
                    a[2]
                } else {
                    x
                }
            }
        }
    }

    /// The local derivatives of `out = op(args)` with respect to each argument, built in
    /// `g` from the same op set (so derivatives can be differentiated again, simplified and
    /// emitted as WGSL like any other expression).
    pub fn partials(self, g: &mut Graph, args: &[NodeId], out: NodeId) -> [Partial; 3] {
        use Partial::*;
        let a = args.first().copied().unwrap_or(NodeId::NONE);
        let b = args.get(1).copied().unwrap_or(NodeId::NONE);
        let c = args.get(2).copied().unwrap_or(NodeId::NONE);
        let k = |g: &mut Graph, v: f32| g.constant(v);
        match self {
            Op::Neg => [MinusOne, Zero, Zero],
            Op::Recip => {
                // d(1/a) = -out^2
                let sq = g.app(Op::Mul, &[out, out]);
                [Scale(g.app(Op::Neg, &[sq])), Zero, Zero]
            }
            Op::Sqrt => {
                let half = k(g, 0.5);
                [Scale(g.app(Op::Div, &[half, out])), Zero, Zero]
            }
            Op::Exp => [Scale(out), Zero, Zero],
            Op::Ln => [Scale(g.app(Op::Recip, &[a])), Zero, Zero],
            Op::Exp2 => {
                let ln2 = k(g, std::f32::consts::LN_2);
                [Scale(g.app(Op::Mul, &[out, ln2])), Zero, Zero]
            }
            Op::Log2 => {
                let ln2 = k(g, std::f32::consts::LN_2);
                let d = g.app(Op::Mul, &[a, ln2]);
                [Scale(g.app(Op::Recip, &[d])), Zero, Zero]
            }
            Op::Sin => [Scale(g.app(Op::Cos, &[a])), Zero, Zero],
            Op::Cos => {
                let s = g.app(Op::Sin, &[a]);
                [Scale(g.app(Op::Neg, &[s])), Zero, Zero]
            }
            Op::Tan => {
                let one = k(g, 1.0);
                let sq = g.app(Op::Mul, &[out, out]);
                [Scale(g.app(Op::Add, &[one, sq])), Zero, Zero]
            }
            Op::Tanh => {
                let one = k(g, 1.0);
                let sq = g.app(Op::Mul, &[out, out]);
                [Scale(g.app(Op::Sub, &[one, sq])), Zero, Zero]
            }
            Op::Abs => {
                // +1 above zero, -1 below, 0 at zero (abs'(0) = 0), all through select
                let zero = k(g, 0.0);
                let one = k(g, 1.0);
                let minus = k(g, -1.0);
                let pos = g.app(Op::Gt, &[a, zero]);
                let neg = g.app(Op::Lt, &[a, zero]);
                let below = g.app(Op::Select, &[neg, minus, zero]);
                [Scale(g.app(Op::Select, &[pos, one, below])), Zero, Zero]
            }
            Op::Signum | Op::Floor | Op::Ceil | Op::Round | Op::Trunc | Op::StopGradient => {
                [Zero, Zero, Zero]
            }
            Op::Sigmoid => {
                let one = k(g, 1.0);
                let rest = g.app(Op::Sub, &[one, out]);
                [Scale(g.app(Op::Mul, &[out, rest])), Zero, Zero]
            }
            Op::Softplus => [Scale(g.app(Op::Sigmoid, &[a])), Zero, Zero],
            Op::LogSigmoid => {
                let na = g.app(Op::Neg, &[a]);
                [Scale(g.app(Op::Sigmoid, &[na])), Zero, Zero]
            }
            Op::Silu => {
                // s (1 + a (1 - s))
                let s = g.app(Op::Sigmoid, &[a]);
                let one = k(g, 1.0);
                let rest = g.app(Op::Sub, &[one, s]);
                let t = g.app(Op::Mul, &[a, rest]);
                let t = g.app(Op::Add, &[one, t]);
                [Scale(g.app(Op::Mul, &[s, t])), Zero, Zero]
            }
            Op::GeluTanh => {
                // u = K (a + C a^3), t = tanh(u)
                // d = 0.5 (1 + t) + 0.5 a (1 - t^2) K (1 + 3 C a^2)
                let kk = k(g, GELU_K);
                let cc = k(g, GELU_C);
                let c3 = k(g, 3.0 * GELU_C);
                let one = k(g, 1.0);
                let half = k(g, 0.5);
                let a2 = g.app(Op::Mul, &[a, a]);
                let a3 = g.app(Op::Mul, &[a2, a]);
                let inner = g.app(Op::Mul, &[cc, a3]);
                let inner = g.app(Op::Add, &[a, inner]);
                let u = g.app(Op::Mul, &[kk, inner]);
                let t = g.app(Op::Tanh, &[u]);
                let left = g.app(Op::Add, &[one, t]);
                let left = g.app(Op::Mul, &[half, left]);
                let t2 = g.app(Op::Mul, &[t, t]);
                let sech2 = g.app(Op::Sub, &[one, t2]);
                let du = g.app(Op::Mul, &[c3, a2]);
                let du = g.app(Op::Add, &[one, du]);
                let du = g.app(Op::Mul, &[kk, du]);
                let right = g.app(Op::Mul, &[half, a]);
                let right = g.app(Op::Mul, &[right, sech2]);
                let right = g.app(Op::Mul, &[right, du]);
                [Scale(g.app(Op::Add, &[left, right])), Zero, Zero]
            }
            Op::PowI(n) => {
                if n == 0 {
                    [Zero, Zero, Zero]
                } else {
                    let nn = k(g, n as f32);
                    let p = g.app(Op::PowI(n - 1), &[a]);
                    [Scale(g.app(Op::Mul, &[nn, p])), Zero, Zero]
                }
            }
            Op::Add => [One, One, Zero],
            Op::Sub => [One, MinusOne, Zero],
            Op::Mul => [Scale(b), Scale(a), Zero],
            Op::Div => {
                let rb = g.app(Op::Recip, &[b]);
                let q = g.app(Op::Div, &[out, b]);
                [Scale(rb), Scale(g.app(Op::Neg, &[q])), Zero]
            }
            Op::Powf => {
                // d/da = b a^(b-1), d/db = out ln(a)
                let one = k(g, 1.0);
                let bm1 = g.app(Op::Sub, &[b, one]);
                let p = g.app(Op::Powf, &[a, bm1]);
                let da = g.app(Op::Mul, &[b, p]);
                let ln = g.app(Op::Ln, &[a]);
                let db = g.app(Op::Mul, &[out, ln]);
                [Scale(da), Scale(db), Zero]
            }
            Op::Min => {
                // The smaller argument takes the adjoint; at a tie the second one does, so
                // `x.min(0.0)` has derivative 0 at 0 and `x.min(x)` derivative 1 (giving
                // it to neither would make the derivative of `x.min(x) = x` zero).
                let lt = g.app(Op::Lt, &[a, b]);
                [
                    Route {
                        cond: lt,
                        on_true: true,
                    },
                    Route {
                        cond: lt,
                        on_true: false,
                    },
                    Zero,
                ]
            }
            Op::Max => {
                // as min: ties go to the second argument (relu `x.max(0.0)` has 0 at 0)
                let gt = g.app(Op::Gt, &[a, b]);
                [
                    Route {
                        cond: gt,
                        on_true: true,
                    },
                    Route {
                        cond: gt,
                        on_true: false,
                    },
                    Zero,
                ]
            }
            Op::LogAddExp => {
                let d = g.app(Op::Sub, &[a, b]);
                let sa = g.app(Op::Sigmoid, &[d]);
                let nd = g.app(Op::Neg, &[d]);
                let sb = g.app(Op::Sigmoid, &[nd]);
                [Scale(sa), Scale(sb), Zero]
            }
            Op::Lt | Op::Le | Op::Gt | Op::Ge | Op::Eq | Op::Ne | Op::And | Op::Or | Op::Not => {
                [Zero, Zero, Zero]
            }
            Op::Select => [
                Zero,
                Route {
                    cond: a,
                    on_true: true,
                },
                Route {
                    cond: a,
                    on_true: false,
                },
            ],
            Op::MulAdd => [Scale(b), Scale(a), One],
            Op::Clamp => {
                // Rust's clamp: lo if a < lo, hi if a > hi, else a
                let below = g.app(Op::Lt, &[a, b]);
                let above = g.app(Op::Gt, &[a, c]);
                let outside = g.app(Op::Or, &[below, above]);
                let above_only = {
                    let nb = g.app(Op::Not, &[below]);
                    g.app(Op::And, &[nb, above])
                };
                [
                    Route {
                        cond: outside,
                        on_true: false,
                    },
                    Route {
                        cond: below,
                        on_true: true,
                    },
                    Route {
                        cond: above_only,
                        on_true: true,
                    },
                ]
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_has_consistent_arity_and_types() {
        for &op in ALL_OPS {
            assert_eq!(op.arg_types().count(), op.arity(), "{}", op.name());
            let args: Vec<String> = (0..op.arity()).map(|i| format!("a{i}")).collect();
            assert!(!op.wgsl(&args, "f32").is_empty());
        }
    }

    #[test]
    fn missing_arguments_read_as_nan() {
        assert!(Op::Add.eval::<f64>(&[1.0]).is_nan());
        assert!(Op::Exp.eval::<f32>(&[]).is_nan());
        assert_eq!(Op::Add.eval::<f64>(&[1.0, 2.0, 99.0]), 3.0);
    }

    #[test]
    fn stable_forms_do_not_overflow() {
        for x in [-1e4f32, -100.0, 0.0, 100.0, 1e4] {
            for op in [
                Op::Sigmoid,
                Op::Softplus,
                Op::LogSigmoid,
                Op::Silu,
                Op::GeluTanh,
            ] {
                let v: f32 = op.eval(&[x]);
                assert!(v.is_finite(), "{}({x}) = {v}", op.name());
            }
        }
        let v: f64 = Op::LogAddExp.eval(&[1000.0, 999.0]);
        assert!((v - (1000.0 + (1.0 + (-1.0f64).exp()).ln())).abs() < 1e-12);
    }

    #[test]
    fn rust_semantics_for_signum_round_clamp() {
        assert_eq!(Op::Signum.eval(&[0.0f32]), 1.0);
        assert_eq!(Op::Signum.eval(&[-0.0f32]), -1.0);
        assert_eq!(Op::Round.eval(&[2.5f32]), 3.0);
        assert_eq!(Op::Round.eval(&[-2.5f32]), -3.0);
        assert_eq!(Op::Clamp.eval(&[5.0f32, 0.0, 1.0]), 1.0);
        assert_eq!(Op::PowI(3).eval(&[-2.0f64]), -8.0);
    }
}
