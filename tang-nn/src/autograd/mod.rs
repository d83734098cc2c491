//! # Reverse-mode autograd over GPU tensors
//!
//! ```
//! use tang_nn::autograd::Tensor;
//! use tang_nn::tang_runtime::Device;
//! let dev = Device::new()?;
//! let w = Tensor::from_slice(&dev, &[0.5, -1.0, 2.0, 0.0], &[2, 2])?.into_parameter();
//! let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[1, 2])?;
//! let loss = x.matmul(&w)?.relu()?.sum_all()?;
//! let grads = loss.backward()?;          // every parameter's gradient, on the GPU
//! let dw = grads.get(&w).unwrap();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Design
//!
//! - **The graph is held by the tensors** (candle's design, not a global tape): an op's
//!   result keeps an `Arc` to a node with its op-table entry and its inputs. Model code
//!   passes tensors and nothing else: no tape or context argument, no lifetimes. A graph
//!   that is never backpropagated is freed when its last tensor drops; nothing global
//!   grows (Burn's global graph bookkeeping is what its users see as memory growth).
//! - **The op table** ([`op`](self) module, one `enum` entry per op, micrograd/tinygrad
//!   style) holds what each backward needs beyond the inputs (softmax's output, layer
//!   norm's statistics, embedding ids, cross-entropy's logits gradient) and its backward,
//!   which calls the GPU kernels of `tang_runtime::ops`.
//!   Elementwise ops are `#[fused_grad]` functions recorded by one entry: forward their
//!   kernel over the broadcast shape, backward the generated VJP kernel plus a sum over
//!   broadcast dimensions. [`apply`] records any user `#[fused_grad]` function the same way. No backward reads a value back to the host (a cross-entropy
//!   upstream scalar is applied by a kernel, not read).
//! - **Backward** computes a topological order with an explicit heap stack (a 100,000-op
//!   chain is fine), checks every saved tensor's version first, then runs each node's
//!   backward once, after every use of the node has contributed: gradients meeting at a
//!   tensor are summed in place on the GPU. Only tensors that require grad are visited,
//!   so a parameter the loss does not reach gets no entry in [`Gradients`].
//! - **Freeing**: backward takes each node's entry as it runs it, so saved tensors and
//!   input references go as soon as they are used (a second backward is
//!   [`Error::GraphFreed`], as PyTorch without `retain_graph`). Dropping a long chain
//!   unlinks it in a loop (`Drop for Node`), not by recursion.
//! - **In place**: every in-place method bumps a version counter shared by views of the
//!   buffer; ops record the versions of what they save, and backward refuses with
//!   [`Error::ModifiedAfterSave`] when one changed. In-place writes to a tensor that
//!   requires grad are refused while recording ([`Error::InPlaceOnGraph`]): optimizers
//!   update parameters inside [`no_grad`], as in PyTorch.
//! - **Gradients are keyed by a stable [`TensorId`]** (shared by clones of a tensor),
//!   looked up with the tensor itself; each gradient owns its buffer.
//! - **`no_grad`** is a thread-local switch: inside it ops record nothing and hold no
//!   graph.

mod conv_ops;
mod create;
mod elementwise;
mod engine;
mod error;
mod fused;
mod layer_kernels;
mod layer_ops;
mod op;
mod operators;
mod ops;
mod tensor;

pub use create::Dims;
pub use engine::Gradients;
pub use error::Error;
pub use fused::apply;
/// `1 / x` as a kernel (the losses' reciprocal counts).
pub(crate) use layer_kernels::recip as recip_kernel;
pub use tensor::{RawTensor, Tensor, TensorId, is_grad_enabled, no_grad};
