//! Hand-written dense kernels: matmul, reductions, softmax, norms, embedding,
//! cross-entropy, attention and shape operations, each with its backward. Every kernel is
//! written in the form of `crate::spec` (params struct, ordered bindings, body), validated
//! by naga once per process when first used, runs trusted, and is checked against a CPU
//! reference in the tests.

pub(crate) mod check;
mod nan_max;
pub(crate) mod wgsl;

/// Declares the modules that hold kernels, and [`registry`] over all of them: each must
/// define `kernels()` (every kernel it can produce), so a module declared here cannot be
/// left out of the naga test.
macro_rules! kernel_modules {
    ($($(#[$m:meta])* $vis:vis mod $name:ident;)*) => {
        $($(#[$m])* $vis mod $name;)*

        /// Every kernel the dense modules can produce, as `(name, WGSL)`: the list the
        /// naga test validates (generated families by a representative set).
        pub(crate) fn registry() -> Vec<crate::spec::Source> {
            let mut all = Vec::new();
            $(all.extend($name::kernels());)*
            all
        }
    };
}

kernel_modules! {
    pub mod attention;
    // The tile override of the implicit-GEMM convolution: a hook for benchmarks and
    // tuning, not part of the API.
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
}
