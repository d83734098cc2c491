//! tang in the browser: a page that runs a `#[fused_grad]` kernel, dense matmul and
//! softmax on WebGPU, checks every result against the CPU in the page, and trains the
//! digits MLP (tang-nn's `Sequential`, `Linear`, `ReLU`, `cross_entropy`, `Adam`) for a
//! few steps, showing the loss falling. It writes "n passed, m failed" into the page.
//!
//! - [`kernel`]: the fused-gradient kernel the page launches.
//! - [`reference`]: the CPU side of every check (plain Rust, tested natively) and the
//!   tally of checks.
//! - `page` (WebAssembly only): the `run` entry point the page's script awaits; it uses
//!   only the async entry points (`Device::new_async`, `Tensor::to_vec_async`).
//! - `panic` (WebAssembly only): the hook that turns a panic into a failed run with its
//!   message, so the test script fails at once instead of waiting out its timeout.
//!
//! Built and tested in headless Chromium by `scripts/web-test.sh`; see the README's
//! section "In the browser".

pub mod kernel;
pub mod reference;

#[cfg(target_arch = "wasm32")]
mod page;
#[cfg(target_arch = "wasm32")]
mod panic;
