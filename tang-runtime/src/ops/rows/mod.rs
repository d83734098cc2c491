//! Row kernels: each workgroup (or subgroup team) reduces and rewrites whole rows:
//! softmax, the norms, cross-entropy (and its recomputed gradient), the team path they share, and the f16 forms that
//! they and the reductions take for f16 tensors (`half.rs`).

pub(super) mod cross_entropy;
pub(super) mod cross_entropy_backward;
pub(crate) mod half;
mod layout;
pub(super) mod norm;
pub(super) mod softmax;
pub mod team;

crate::spec::kernel_modules! { "ops/rows": cross_entropy, cross_entropy_backward, norm, softmax, team }
