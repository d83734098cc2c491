//! Index ops: gathers and scatters along a dim, embeddings, and the id checks they share.

pub(super) mod bounds;
pub(super) mod embedding;
pub(super) mod gather;

crate::spec::kernel_modules! { "ops/index": bounds, embedding, gather }
