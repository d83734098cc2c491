//! # tang-expr: the scalar expression IR behind tang's kernels
//!
//! A [`Graph`] is a hash-consed DAG of scalar nodes (element inputs, uniforms, constants
//! and [`Op`] applications). On it tang evaluates (f32 and f64), differentiates (reverse
//! and forward mode, to any order), simplifies, and emits WGSL for an elementwise kernel
//! whose shader naga validates before anyone runs it.
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

// The op table's macro, first: the modules below use it.
#[macro_use]
mod op_macro;

mod codegen;
mod diff;
mod error;
mod eval;
pub mod ext;
mod float;
pub mod fused;
mod graph;
pub mod kernel;
#[cfg(feature = "lower")]
pub mod lower;
mod op;
mod op_wgsl;
mod partials;
mod print;
pub mod scalar_fn;
mod simplify;
mod special;
mod trace;
mod validate;
mod wgsl_helpers;
mod wgsl_parts;

pub use codegen::{ElementwiseSpec, emit_elementwise, wgsl_literal};
pub use diff::{grad, jvp, vjp};
pub use error::{ExprError, ValidationError};
pub use eval::{Evaluator, eval_batch, eval_f32, eval_f64};
pub use float::Float;
pub use fused::{FusedKernels, FusedSpec, fused_grad_kernels};
pub use graph::{Graph, Node, NodeId, Ty, stable_hash};
pub use kernel::{Kernel, KernelDesc};
pub use op::{ALL_OPS, Accuracy, Method, Op, Partial, Provider, Sig};
pub use op_wgsl::Lanes;
pub use simplify::{simplify, try_simplify};
pub use special::{GELU_C, GELU_K, TANH_CLAMP};
pub use trace::{
    BoolExpr, Expr, Traced, fused_forward_backward, select, trace, trace_many, trace_with,
};
pub use validate::validate;
