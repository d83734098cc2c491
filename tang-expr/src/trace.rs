//! Runtime tracing: build a graph by running ordinary-looking Rust on [`Expr`] values.
//!
//! ```
//! use tang_expr::trace;
//!
//! let t = trace(2, |v| (v[0] * v[1] + 1.0).tanh().max(0.0));
//! assert_eq!(t.eval_f64(&[0.5, 2.0], &[])?, vec![2.0f64.tanh()]);
//! let kernel = t.kernel("scaled_tanh")?;
//! assert_eq!(kernel.inputs, ["x0", "x1"]);
//! # Ok::<(), tang_expr::ExprError>(())
//! ```
//!
//! While a trace runs, a thread-local builder holds its graph; an [`Expr`] is a node id
//! tagged with the id of the trace that made it (or a constant not yet placed in any
//! graph). Using an `Expr` in a trace other than its own (a nested trace, a later trace,
//! another thread) does not corrupt either graph: the trace records
//! [`ExprError::ForeignExpr`] and every use of the result ([`Traced::kernel`],
//! [`Traced::eval_f64`], [`Traced::check`]) reports it. Nothing here panics on misuse.

use std::cell::RefCell;
use std::ops::{
    Add, AddAssign, BitAnd, BitOr, Div, DivAssign, Mul, MulAssign, Neg, Not, Sub, SubAssign,
};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::codegen::{ElementwiseSpec, emit_elementwise};
use crate::error::ExprError;
use crate::eval::Evaluator;
use crate::fused::{FusedSpec, fused_grad_kernels};
use crate::graph::{Graph, NodeId};
use crate::kernel::Kernel;
use crate::op::Op;
use crate::simplify::simplify;

static NEXT_TRACE: AtomicU64 = AtomicU64::new(1);

struct Frame {
    id: u64,
    graph: Graph,
    error: Option<ExprError>,
}

thread_local! {
    static STACK: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Repr<T> {
    /// A constant not yet placed in a graph (works in any trace).
    Const(T),
    /// A node of the trace `trace`.
    Node { trace: u64, id: NodeId },
    /// The result of an operation outside any trace.
    Detached,
}

/// A traced float value. Arithmetic and the `f32`-like methods record operations in the
/// running trace (see [`trace`]). `f32` constants mix in on either side of an operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Expr(pub(crate) Repr<f32>);

/// A traced boolean: the result of a comparison; `select` turns it back into a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoolExpr(Repr<bool>);

impl From<f32> for Expr {
    fn from(v: f32) -> Self {
        Expr(Repr::Const(v))
    }
}

impl From<bool> for BoolExpr {
    fn from(v: bool) -> Self {
        BoolExpr(Repr::Const(v))
    }
}

/// Places an operand in the frame's graph; a foreign one poisons the frame and is
/// replaced by `stand_in` (its value never matters: the trace reports the error).
fn place<T: Copy>(
    frame: &mut Frame,
    r: Repr<T>,
    leaf: impl Fn(&mut Graph, T) -> NodeId,
    stand_in: T,
) -> NodeId {
    match r {
        Repr::Const(v) => leaf(&mut frame.graph, v),
        Repr::Node { trace, id } if trace == frame.id => id,
        _ => {
            frame.error.get_or_insert(ExprError::ForeignExpr);
            leaf(&mut frame.graph, stand_in)
        }
    }
}

/// An operand of a recorded op.
pub(crate) enum Arg {
    /// A float operand.
    F(Repr<f32>),
    /// A boolean operand.
    B(Repr<bool>),
}

/// Records `op(args)` in the running trace.
fn record(op: Op, args: &[Arg]) -> Repr<()> {
    STACK.with(|s| {
        let mut stack = s.borrow_mut();
        let Some(frame) = stack.last_mut() else {
            return Repr::Detached;
        };
        let ids: Vec<NodeId> = args
            .iter()
            .map(|a| match *a {
                Arg::F(r) => place(frame, r, Graph::constant, f32::NAN),
                Arg::B(r) => place(frame, r, Graph::boolean, false),
            })
            .collect();
        match frame.graph.apply(op, &ids) {
            Ok(id) => Repr::Node {
                trace: frame.id,
                id,
            },
            Err(e) => {
                frame.error.get_or_insert(e);
                Repr::Detached
            }
        }
    })
}

fn retag<T>(r: Repr<()>) -> Repr<T> {
    match r {
        Repr::Node { trace, id } => Repr::Node { trace, id },
        _ => Repr::Detached,
    }
}

/// Records a float-valued op (the tracing methods the op table generates call this).
pub(crate) fn float(op: Op, args: &[Arg]) -> Expr {
    Expr(retag(record(op, args)))
}

fn boolean(op: Op, args: &[Arg]) -> BoolExpr {
    BoolExpr(retag(record(op, args)))
}

/// A float operand from anything that converts to an `Expr`.
pub(crate) fn arg(e: impl Into<Expr>) -> Arg {
    Arg::F(e.into().0)
}

/// `if cond { a } else { b }`, evaluating both sides (their derivatives are routed by the
/// condition, so a NaN on the side not taken does not leak into gradients).
pub fn select(cond: BoolExpr, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    float(Op::Select, &[Arg::B(cond.0), arg(a), arg(b)])
}

macro_rules! compare {
    ($($(#[$doc:meta])* $name:ident => $op:expr;)*) => {
        $( $(#[$doc])* pub fn $name(self, other: impl Into<Expr>) -> BoolExpr {
            boolean($op, &[Arg::F(self.0), arg(other)])
        } )*
    };
}

impl Expr {
    /// A constant (usable in any trace).
    pub fn constant(v: f32) -> Expr {
        Expr::from(v)
    }

    compare! {
        /// `self < other`
        lt => Op::Lt;
        /// `self <= other`
        le => Op::Le;
        /// `self > other`
        gt => Op::Gt;
        /// `self >= other`
        ge => Op::Ge;
        /// `self == other`
        eq => Op::Eq;
        /// `self != other`
        ne => Op::Ne;
    }

    /// `self^n` for a constant integer `n`.
    pub fn powi(self, n: i32) -> Expr {
        float(Op::PowI(n), &[Arg::F(self.0)])
    }
}

impl BoolExpr {
    /// `self && other`
    pub fn and(self, other: impl Into<BoolExpr>) -> BoolExpr {
        boolean(Op::And, &[Arg::B(self.0), Arg::B(other.into().0)])
    }

    /// `self || other`
    pub fn or(self, other: impl Into<BoolExpr>) -> BoolExpr {
        boolean(Op::Or, &[Arg::B(self.0), Arg::B(other.into().0)])
    }

    /// `!self` (also available as the `!` operator)
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> BoolExpr {
        boolean(Op::Not, &[Arg::B(self.0)])
    }

    /// `if self { a } else { b }`; see [`select`].
    pub fn select(self, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
        select(self, a, b)
    }
}

macro_rules! arith {
    ($($tr:ident $m:ident $atr:ident $am:ident => $op:expr;)*) => {$(
        impl<R: Into<Expr>> $tr<R> for Expr {
            type Output = Expr;
            fn $m(self, rhs: R) -> Expr {
                float($op, &[Arg::F(self.0), arg(rhs)])
            }
        }
        impl $tr<Expr> for f32 {
            type Output = Expr;
            fn $m(self, rhs: Expr) -> Expr {
                float($op, &[arg(self), Arg::F(rhs.0)])
            }
        }
        impl<R: Into<Expr>> $atr<R> for Expr {
            fn $am(&mut self, rhs: R) {
                *self = float($op, &[Arg::F(self.0), arg(rhs)]);
            }
        }
    )*};
}

arith! {
    Add add AddAssign add_assign => Op::Add;
    Sub sub SubAssign sub_assign => Op::Sub;
    Mul mul MulAssign mul_assign => Op::Mul;
    Div div DivAssign div_assign => Op::Div;
}

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        float(Op::Neg, &[Arg::F(self.0)])
    }
}

impl Not for BoolExpr {
    type Output = BoolExpr;
    fn not(self) -> BoolExpr {
        BoolExpr::not(self)
    }
}

impl<R: Into<BoolExpr>> BitAnd<R> for BoolExpr {
    type Output = BoolExpr;
    fn bitand(self, rhs: R) -> BoolExpr {
        self.and(rhs)
    }
}

impl<R: Into<BoolExpr>> BitOr<R> for BoolExpr {
    type Output = BoolExpr;
    fn bitor(self, rhs: R) -> BoolExpr {
        self.or(rhs)
    }
}

/// A finished trace: the graph, its outputs, and the first misuse if there was one.
#[derive(Clone, Debug)]
pub struct Traced {
    /// The recorded graph. Element input `i` is `Node::Input(i)`, uniform `j` is
    /// `Node::Uniform(j)`.
    pub graph: Graph,
    /// The output nodes, in order.
    pub outputs: Vec<NodeId>,
    /// Number of element inputs the traced function took.
    pub n_inputs: usize,
    /// Number of uniforms the traced function took.
    pub n_uniforms: usize,
    error: Option<ExprError>,
}

impl Traced {
    /// The first misuse recorded while tracing (a foreign [`Expr`]), if any.
    pub fn error(&self) -> Option<&ExprError> {
        self.error.as_ref()
    }

    /// `Ok` if the trace is sound.
    ///
    /// # Errors
    /// The first misuse recorded while tracing ([`ExprError::ForeignExpr`]).
    pub fn check(&self) -> Result<(), ExprError> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Evaluates the outputs at one point in f64.
    ///
    /// # Errors
    /// A misuse recorded while tracing, or fewer inputs/uniforms than the graph reads.
    pub fn eval_f64(&self, inputs: &[f64], uniforms: &[f64]) -> Result<Vec<f64>, ExprError> {
        self.check()?;
        Evaluator::new(&self.graph, &self.outputs)?.run(inputs, uniforms)
    }

    /// Evaluates the outputs at one point in f32 (Rust's f32 rounding at every step).
    ///
    /// # Errors
    /// As [`Traced::eval_f64`].
    pub fn eval_f32(&self, inputs: &[f32], uniforms: &[f32]) -> Result<Vec<f32>, ExprError> {
        self.check()?;
        Evaluator::new(&self.graph, &self.outputs)?.run(inputs, uniforms)
    }

    /// A stable hash of the traced structure: the runtime's cache key for its kernels.
    pub fn structural_hash(&self) -> u64 {
        self.graph.structural_hash(&self.outputs)
    }

    fn input_names(&self) -> Vec<String> {
        (0..self.n_inputs).map(|i| format!("x{i}")).collect()
    }

    fn uniform_names(&self) -> Vec<String> {
        (0..self.n_uniforms).map(|i| format!("u{i}")).collect()
    }

    /// The simplified elementwise kernel: inputs `x0, x1, ...`, uniforms `u0, u1, ...`,
    /// outputs `y0, y1, ...`.
    ///
    /// # Errors
    /// A misuse recorded while tracing, a bad kernel name, or a trace with no outputs.
    pub fn kernel(&self, name: &str) -> Result<Kernel, ExprError> {
        self.check()?;
        let (g, roots) = simplify(&self.graph, &self.outputs);
        emit_elementwise(&ElementwiseSpec {
            name: name.to_string(),
            graph: &g,
            inputs: self.input_names(),
            uniforms: self.uniform_names(),
            inouts: vec![],
            outputs: roots
                .iter()
                .enumerate()
                .map(|(k, &r)| (format!("y{k}"), r))
                .collect(),
        })
    }

    /// The fused value-and-gradient kernel of the first output with respect to every
    /// input: outputs `loss`, then `d_loss_x0, d_loss_x1, ...` (the GRAD layout of
    /// [`crate::fused`]), named `<name>_grad`.
    ///
    /// # Errors
    /// As [`Traced::kernel`].
    pub fn fused_kernel(&self, name: &str) -> Result<Kernel, ExprError> {
        self.check()?;
        let first = *self.outputs.first().ok_or(ExprError::NoOutputs)?;
        let k = fused_grad_kernels(&FusedSpec {
            name: name.to_string(),
            graph: &self.graph,
            inputs: self.input_names(),
            uniforms: self.uniform_names(),
            outputs: vec![("loss".into(), first)],
            wrt: (0..self.n_inputs as u32).collect(),
        })?;
        Ok(k.grad)
    }
}

/// Pops the frame even if the traced closure panics.
struct FrameGuard;

impl Drop for FrameGuard {
    fn drop(&mut self) {
        STACK.with(|s| {
            s.borrow_mut().pop();
        });
    }
}

/// Traces `f` with `n_inputs` element inputs and `n_uniforms` uniforms, returning every
/// output `f` gives.
pub fn trace_with(
    n_inputs: usize,
    n_uniforms: usize,
    f: impl FnOnce(&[Expr], &[Expr]) -> Vec<Expr>,
) -> Traced {
    let id = NEXT_TRACE.fetch_add(1, Ordering::Relaxed);
    let (xs, us) = STACK.with(|s| {
        let mut stack = s.borrow_mut();
        let mut graph = Graph::new();
        let node = |id: NodeId| Expr(Repr::Node { trace: 0, id });
        let xs: Vec<Expr> = (0..n_inputs as u32).map(|i| node(graph.input(i))).collect();
        let us: Vec<Expr> = (0..n_uniforms as u32)
            .map(|j| node(graph.uniform(j)))
            .collect();
        stack.push(Frame {
            id,
            graph,
            error: None,
        });
        (xs, us)
    });
    let tag = |v: Vec<Expr>| -> Vec<Expr> {
        v.into_iter()
            .map(|e| match e.0 {
                Repr::Node { id: n, .. } => Expr(Repr::Node { trace: id, id: n }),
                other => Expr(other),
            })
            .collect()
    };
    let (xs, us) = (tag(xs), tag(us));
    let guard = FrameGuard;
    let outs = f(&xs, &us);
    let (graph, outputs, error) = STACK.with(|s| {
        let mut stack = s.borrow_mut();
        match stack.last_mut() {
            Some(frame) if frame.id == id => {
                let outputs = outs
                    .iter()
                    .map(|e| place(frame, e.0, Graph::constant, f32::NAN))
                    .collect();
                (
                    std::mem::take(&mut frame.graph),
                    outputs,
                    frame.error.take(),
                )
            }
            // Unreachable through this API (frames are strictly nested); reported, not
            // panicked on.
            _ => (Graph::new(), Vec::new(), Some(ExprError::ForeignExpr)),
        }
    });
    drop(guard);
    Traced {
        graph,
        outputs,
        n_inputs,
        n_uniforms,
        error,
    }
}

/// Traces a function of `n_inputs` element inputs with one output.
pub fn trace(n_inputs: usize, f: impl FnOnce(&[Expr]) -> Expr) -> Traced {
    trace_with(n_inputs, 0, |xs, _| vec![f(xs)])
}

/// Traces a function of `n_inputs` element inputs with several outputs.
pub fn trace_many(n_inputs: usize, f: impl FnOnce(&[Expr]) -> Vec<Expr>) -> Traced {
    trace_with(n_inputs, 0, |xs, _| f(xs))
}

/// One kernel that writes, per element, the loss `f(v0, ..., v(n-1))` and its partial
/// derivatives: outputs `loss, d_loss_x0, ..., d_loss_x(n-1)`, inputs `x0 ... x(n-1)`.
/// (With wgpu's default limit of 8 storage buffers per shader stage, `n <= 3`; the
/// runtime requests the adapter's real limit.)
///
/// # Errors
/// A misuse recorded while tracing ([`ExprError::ForeignExpr`]).
pub fn fused_forward_backward(
    n: usize,
    f: impl FnOnce(&[Expr]) -> Expr,
) -> Result<Kernel, ExprError> {
    trace(n, f).fused_kernel("traced")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Node;

    #[test]
    fn operators_and_methods_record_the_expression() {
        let t = trace(2, |v| {
            let (x, y) = (v[0], v[1]);
            let mut z = 2.0 * x - y / 4.0 + 1.0;
            z *= x.exp().ln();
            z += -y.powi(2);
            select(x.gt(y) & !y.lt(0.0), z, z.clamp(-1.0, 1.0))
        });
        let (x, y) = (1.5f64, 1.0f64);
        let z = (2.0 * x - y / 4.0 + 1.0) * x.exp().ln() - y * y;
        let got = t.eval_f64(&[x, y], &[]).unwrap()[0];
        assert!((got - z).abs() < 1e-12, "{got} vs {z}");
        assert!(t.kernel("k").unwrap().wgsl.contains("fn main"));
    }

    #[test]
    fn mixing_traces_is_an_error_not_corruption() {
        let mut leaked = None;
        let outer = trace(1, |v| {
            let inner = trace(1, |w| {
                leaked = Some(w[0]);
                w[0] + v[0] // v[0] belongs to the outer trace
            });
            assert_eq!(inner.check(), Err(ExprError::ForeignExpr));
            v[0].sin()
        });
        assert_eq!(outer.check(), Ok(()));
        assert_eq!(outer.eval_f64(&[0.0], &[]).unwrap(), vec![0.0]);
        let leaked = leaked.unwrap();
        let later = trace(1, |v| v[0] * leaked);
        assert!(later.kernel("k").is_err());
        assert!(later.eval_f32(&[1.0], &[]).is_err());
        // outside any trace: detached, no panic
        let d = leaked + 1.0;
        let t = trace(0, |_| d);
        assert_eq!(t.check(), Err(ExprError::ForeignExpr));
    }

    #[test]
    fn fused_forward_backward_writes_loss_and_partials() {
        let k = fused_forward_backward(2, |v| (v[0] * v[1]).sigmoid()).unwrap();
        assert_eq!(k.inputs, ["x0", "x1"]);
        assert_eq!(k.outputs, ["loss", "d_loss_x0", "d_loss_x1"]);
        let t = trace_with(1, 1, |x, u| vec![x[0] * u[0], Expr::constant(3.0)]);
        assert_eq!(t.eval_f64(&[2.0], &[5.0]).unwrap(), vec![10.0, 3.0]);
        assert!(matches!(
            t.graph.nodes()[t.outputs[1].index()],
            Node::Const(_)
        ));
        assert_eq!(t.kernel("k").unwrap().uniforms, ["u0"]);
    }
}
