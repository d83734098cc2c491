//! # tang-runtime: runs tang kernels on any GPU that wgpu reaches
//!
//! A [`Device`] records launches into one command encoder (consecutive dispatches share
//! a compute pass) and submits them at sync points: a read ([`Tensor::to_vec`]),
//! [`Device::sync`], or every `batch_size` launches. [`Tensor`]s come from a size-class
//! buffer pool and return to it when dropped. Pipelines are cached by the kernel's static
//! id, so a kernel compiled by `#[kernel]` costs one pipeline creation per process.
//!
//! ```no_run
//! use tang_runtime::{Device, Tensor};
//! let dev = Device::new()?;
//! let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3])?;
//! assert_eq!(x.to_vec()?, vec![1.0, 2.0, 3.0]);
//! # Ok::<(), tang_runtime::Error>(())
//! ```

extern crate self as tang_runtime;

pub mod dense;
mod device;
mod dispatch;
mod error;
mod launch;
mod lifecycle;
pub mod ops;
mod pipeline;
mod pool;
mod size;
mod spec;
mod state;
mod tensor;
mod traced;

pub use device::{Device, DeviceInfo, DeviceOptions, Stats};
pub use error::Error;
pub use pipeline::{Binding, RawKernel};
pub use tang_expr;
/// Stable `f32` extras of the kernel language (`x.sigmoid()`, `x.softplus()`, ...), so a
/// kernel function compiles on the CPU too.
pub use tang_expr::ext::StableExt;
pub use tang_expr::{KernelDesc, kernel::WORKGROUP_SIZE};
// The kernel macros (`#[kernel]`, `#[fused_grad]`, `#[kernels]`): users need only this crate.
#[allow(unused_imports)]
pub use tang_macros::*;
pub use tensor::{DType, Tensor};
pub use wgpu;

/// Hooks for tang's own tests; not part of the API.
#[doc(hidden)]
pub mod __testing {
    /// Every hand-written kernel the crate can produce (dense modules and ops), as
    /// `(name, WGSL)`.
    pub fn dense_kernels() -> Vec<(String, String)> {
        let mut all = crate::dense::registry();
        all.extend(crate::ops::registry());
        all
    }
}

/// Everything a file of kernels needs: `use tang_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{Device, StableExt, Tensor, fused_grad, kernel, kernels, uniform};
}
