//! # tang-runtime: runs tang kernels on any GPU that wgpu reaches
pub use tang_expr;
pub use tang_macros::*;
