//! The types the op table (`mod.rs`) is written in (signatures, methods, accuracy,
//! partials), the small functions its entries call, and the methods of [`Op`] that follow
//! from the table's columns.

use std::collections::BTreeMap;

use super::Op;
use crate::graph::NodeId;
use crate::op::float::Float;
use crate::op::lanes::Lanes;
use crate::ty::Ty;
use Partial::Zero;

/// The result is exactly rounded in IEEE arithmetic, so folding it on the host gives the
/// bits the GPU would compute.
pub(super) const EXACT: u8 = 1;
/// Swapping the two arguments gives the same value (the graph stores them in a canonical
/// order). `min`/`max` are not: their derivative at a tie depends on the order.
pub(super) const COMMUTATIVE: u8 = 2;
/// Piecewise constant: the derivative is zero with respect to every argument.
pub(super) const CONSTANT: u8 = 4;
pub(super) const NONE: u8 = 0;

/// The argument and result types of an op.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Sig {
    /// `f32 -> f32`
    F1,
    /// `f32, f32 -> f32`
    F2,
    /// `f32, f32, f32 -> f32`
    F3,
    /// `f32, f32 -> bool`
    Cmp,
    /// `bool -> bool`
    B1,
    /// `bool, bool -> bool`
    B2,
    /// `bool, f32, f32 -> f32`
    Sel,
}

/// Where the CPU build of a kernel gets a kernel-language method from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Provider {
    /// Rust's own `f32` method.
    Std,
    /// [`StableExt`](crate::ext::StableExt), which tang implements for `f32`.
    StableExt,
}

/// A method of the kernel language: `x.name(args)` with the op's other arguments.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Method {
    /// The method's name.
    pub name: &'static str,
    /// Where the CPU build gets it from.
    pub provider: Provider,
}

/// How far an op's f32 results (GPU and CPU) may be from its f64 evaluation of the same
/// arguments: `|got - want| <= abs + rel * |want| + arg_ulps * sum_i |d want / d x_i| *
/// ulp(x_i)`, NaN only where the reference is NaN. The last term is the conditioning of
/// the op: where a result moves by much more than an ulp when its argument moves by one
/// (`tan` near a pole), no f32 algorithm is closer than the rounding of its argument.
/// Tested on arguments in `[-10, 10]` on the CPU and on the GPU; at larger arguments up
/// to [`Accuracy::args_up_to`] the GPU agrees with the CPU within twice the bound, NaN,
/// infinities and signed zeros exactly.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Accuracy {
    /// The absolute part of the bound.
    pub abs: f64,
    /// The relative part of the bound.
    pub rel: f64,
    /// How many ulps of each argument, through the op's derivative, the bound adds.
    pub arg_ulps: f64,
    /// The largest argument magnitude the bound holds for on the GPU (infinite for most
    /// ops; `sin`, `cos` and `tan` reduce their argument themselves up to 1e5 and rely on
    /// the driver's builtins beyond).
    pub args_up_to: f32,
}

impl Accuracy {
    /// The bound at a result `want` whose partial derivatives are `slopes`, at arguments
    /// `args` (see the type's docs).
    pub fn bound(&self, want: f64, slopes: &[f64], args: &[f32]) -> f64 {
        let conditioning: f64 = slopes
            .iter()
            .zip(args)
            .map(|(d, x)| (d * ulp(*x)).abs())
            .sum();
        self.abs + self.rel * want.abs() + self.arg_ulps * conditioning
    }
}

/// The spacing of f32 values at `|x|` (from it to the next one up; 0 for inf and NaN).
fn ulp(x: f32) -> f64 {
    if !x.is_finite() {
        return 0.0;
    }
    // the biased exponent: subnormals and zero share the spacing of the smallest normals
    let e = ((x.to_bits() >> 23) & 0xff).max(1) as i32;
    2f64.powi(e - 127 - 23)
}

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

/// The WGSL literal of a `powi` exponent: `i32::MIN` has none (`-2147483648i` is a
/// negated out-of-range literal), so it is written as a subtraction.
pub(super) fn i32_literal(n: i32) -> String {
    if n == i32::MIN {
        "(-2147483647i - 1i)".to_string()
    } else {
        format!("{n}i")
    }
}

/// Fills `{0}`, `{1}`, `{2}` with the printed arguments and `{t}` with the float type.
pub(super) fn fill_wgsl(template: &str, a: &[String], t: &str) -> String {
    let mut s = template.replace("{t}", t);
    for (i, arg) in a.iter().enumerate().take(3) {
        s = s.replace(&format!("{{{i}}}"), arg);
    }
    s
}

/// Pads an op's partials to three (unused arguments contribute nothing).
pub(super) fn pad<const N: usize>(p: [Partial; N]) -> [Partial; 3] {
    let mut out = [Zero; 3];
    out[..N].copy_from_slice(&p);
    out
}

pub(super) fn k<F: Float>(v: f64) -> F {
    F::from_f64(v)
}

impl Sig {
    /// The number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Sig::F1 | Sig::B1 => 1,
            Sig::F2 | Sig::Cmp | Sig::B2 => 2,
            Sig::F3 | Sig::Sel => 3,
        }
    }

    /// The types of the arguments, in order.
    pub fn arg_types(self) -> &'static [Ty] {
        use Ty::{Bool as B, F32 as F};
        match self {
            Sig::F1 => &[F],
            Sig::F2 | Sig::Cmp => &[F, F],
            Sig::F3 => &[F, F, F],
            Sig::B1 => &[B],
            Sig::B2 => &[B, B],
            Sig::Sel => &[B, F, F],
        }
    }

    /// The type of the result.
    pub fn result_type(self) -> Ty {
        match self {
            Sig::Cmp | Sig::B1 | Sig::B2 => Ty::Bool,
            _ => Ty::F32,
        }
    }
}

impl Op {
    /// Number of arguments.
    pub fn arity(self) -> usize {
        self.sig().arity()
    }

    /// The types the arguments must have.
    pub fn arg_types(self) -> impl Iterator<Item = Ty> {
        self.sig().arg_types().iter().copied()
    }

    /// The type of the result.
    pub fn result_type(self) -> Ty {
        self.sig().result_type()
    }

    /// Whether swapping the two arguments gives the same value (the graph then stores
    /// them in a canonical order). `min`/`max` are not: their derivative at a tie
    /// depends on the argument order.
    pub fn is_commutative(self) -> bool {
        self.flags() & COMMUTATIVE != 0
    }

    /// Whether the op's result is exactly rounded in IEEE arithmetic, so folding it on the
    /// host gives the bits the GPU would compute (the only ops constant folding may touch).
    pub fn is_exactly_rounded(self) -> bool {
        self.flags() & EXACT != 0
    }

    /// Whether the op is piecewise constant (zero derivative for every argument).
    pub fn is_piecewise_constant(self) -> bool {
        self.flags() & CONSTANT != 0
    }

    /// Adds the WGSL helper functions the op's expression calls (and those they call),
    /// instantiated for `lanes`, to `out`, keyed by name so each appears once per shader
    /// in a fixed order.
    pub fn wgsl_helpers(self, lanes: Lanes, out: &mut BTreeMap<&'static str, String>) {
        if let Some(h) = self.helper() {
            h.collect(lanes, out);
        }
    }
}
