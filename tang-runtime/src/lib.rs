//! # tang-runtime: runs tang kernels on any GPU that wgpu reaches

extern crate self as tang_runtime;

pub mod dense;

pub use tang_expr;
pub use tang_macros::*;
