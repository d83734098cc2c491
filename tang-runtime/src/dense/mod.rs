//! Hand-written dense kernels: matmul, reductions, softmax, norms, embedding,
//! cross-entropy, attention and shape operations, each with its backward. Every shader is
//! validated by naga in `cargo test`, runs trusted, and is checked against a CPU reference.

pub mod attention;
pub mod cross_entropy;
pub mod embedding;
pub mod matmul;
mod nan_max;
pub mod norm;
pub mod reduce;
mod reduce_backward;
pub mod rows_team;
pub mod shape;
pub mod softmax;
