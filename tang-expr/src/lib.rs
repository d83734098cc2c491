//! # tang-expr: the scalar expression IR behind tang's kernels
//!
//! A [`Graph`] is a hash-consed DAG of scalar nodes (element inputs, uniforms, constants
//! and [`Op`] applications). On it tang evaluates (f32 and f64), differentiates (reverse
//! and forward mode, to any order), simplifies, and emits WGSL for an elementwise kernel
//! whose shader naga validates before anyone runs it.
//!
//! The source is laid out by subsystem: `op/` holds the op table and everything keyed by
//! op (its macro, types, local partials, special functions, float helpers, WGSL helpers);
//! `codegen/` turns a graph into WGSL (the printer, the splitting of long bodies, WGSL
//! literals); `lower/` compiles the kernel language. The graph and the op table import
//! each other (a graph stores ops, an op's partials build graph nodes); no other modules
//! do, which `tests/tests/import_graph.rs` in the workspace checks.
//!
//! ```
//! use tang_expr::{ElementwiseSpec, Graph, Op, emit_elementwise};
//!
//! let mut g = Graph::new();
//! let x = g.input(0);
//! let y = g.apply(Op::Tanh, &[x])?;
//! let kernel = emit_elementwise(&ElementwiseSpec {
//!     name: "tanh".into(),
//!     graph: &g,
//!     inputs: vec!["x".into()],
//!     uniforms: vec![],
//!     inouts: vec![],
//!     outputs: vec![("y".into(), y)],
//! })?;
//! assert!(kernel.wgsl.contains("tanh"));
//! # Ok::<(), tang_expr::ExprError>(())
//! ```

mod codegen;
mod diff;
mod error;
mod eval;
pub mod ext;
pub mod fused;
mod graph;
pub mod kernel;
#[cfg(feature = "lower")]
pub mod lower;
mod op;
pub mod scalar_fn;
mod simplify;
mod trace;
mod ty;
mod validate;

pub use codegen::literal::wgsl_literal;
pub use codegen::{ElementwiseSpec, emit_elementwise};
pub use diff::{grad, jvp, vjp};
pub use error::{ExprError, ValidationError};
pub use eval::{Evaluator, eval_batch, eval_f32, eval_f64};
pub use fused::{FusedKernels, FusedSpec, fused_grad_kernels};
pub use graph::{Graph, Node, NodeId, stable_hash};
pub use kernel::{Kernel, KernelDesc};
pub use op::float::Float;
pub use op::lanes::Lanes;
pub use op::special::{GELU_C, GELU_K, TANH_CLAMP};
pub use op::{ALL_OPS, Accuracy, Method, Op, Partial, Provider, Sig};
pub use simplify::{simplify, try_simplify};
pub use trace::{
    BoolExpr, Expr, Traced, fused_forward_backward, select, trace, trace_many, trace_with,
};
pub use ty::Ty;
pub use validate::validate;
