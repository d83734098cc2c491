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

/// The modules that hold kernels, each with its `kernels()` (every kernel it can
/// produce). A test checks that every module defining `kernels()` is listed here, so none
/// is left out of the naga test. (The modules are declared above, outside any macro, so
/// that `cargo fmt` reaches their files.)
const KERNEL_MODULES: &[crate::spec::KernelModule] = &[
    ("attention", attention::kernels),
    ("conv_gemm", conv_gemm::kernels),
    ("cross_entropy", cross_entropy::kernels),
    ("embedding", embedding::kernels),
    ("matmul", matmul::kernels),
    ("norm", norm::kernels),
    ("reduce", reduce::kernels),
    ("reduce_backward", reduce_backward::kernels),
    ("rows_team", rows_team::kernels),
    ("shape", shape::kernels),
    ("softmax", softmax::kernels),
];

/// Every kernel the dense modules can produce, as `(name, WGSL)`: the list the naga test
/// validates (generated families by a representative set).
pub(crate) fn registry() -> Vec<crate::spec::Source> {
    crate::spec::registry_of(KERNEL_MODULES)
}

#[cfg(test)]
#[test]
fn every_module_with_kernels_is_registered() {
    crate::spec::assert_every_kernel_module_listed("dense", KERNEL_MODULES);
}
