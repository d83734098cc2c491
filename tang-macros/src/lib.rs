//! # tang-macros: `#[kernel]`, `#[fused_grad]`, `#[kernels]`
