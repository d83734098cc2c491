//! Hand-written dense kernels: matmul, reductions, softmax, norms, embedding,
//! cross-entropy, attention and shape operations, each with its backward. Every kernel is
//! written in the form of `crate::spec` (params struct, ordered bindings, body), validated
//! by naga once per process when first used, runs trusted, and is checked against a CPU
//! reference in the tests.

pub(crate) mod check;
mod nan_max;
pub(crate) mod wgsl;

pub mod attention;
// The tile override of the implicit-GEMM convolution: a hook for benchmarks and tuning,
// not part of the API.
#[doc(hidden)]
pub mod conv_gemm;
pub mod cross_entropy;
pub mod embedding;
pub mod matmul;
pub mod norm;
pub mod reduce;
mod reduce_backward;
// The choice between the subgroup team path and the workgroup fallback of the row
// kernels: hooks for tests and benchmarks, not part of the API.
#[doc(hidden)]
pub mod rows_team;
pub mod shape;
pub mod softmax;

// The modules that hold kernels (declared above, outside any macro, so that `cargo fmt`
// reaches their files).
crate::spec::kernel_modules! {
    "dense": attention, conv_gemm, cross_entropy, embedding, matmul, norm, reduce,
    reduce_backward, rows_team, shape, softmax
}
