//! Shape ops: views, permutes and copies, broadcasting, attention heads, packing.

pub(super) mod broadcast;
pub(super) mod copy;
pub(super) mod heads;
pub(super) mod segments;
pub(super) mod view;

crate::spec::kernel_modules! { "ops/shape": copy, heads, segments }
