//! safetensors files: PyTorch state dicts read, loaded onto the device and saved, with
//! every defect of a hostile file reported as a typed error.
//!
//! - [`read_file`] / [`read_bytes`]: tensors on the host in their file dtype;
//!   [`load_file`]: F32, F16 and BF16 onto the device as f32, integer ids kept on the host
//!   (or [`StateDict::u32_tensor`]).
//! - [`save_file`] / [`save_bytes`]: F32, F16 or BF16, tied entries once as
//!   `safetensors.torch.save_model` writes them, byte-identical to
//!   `safetensors.torch.save_file` for untied tensors.
//! - [`save_model`] / [`load_model`]: a [`crate::Module`]'s parameters, as
//!   `safetensors.torch.save_model` / `load_model`.
//! - [`check_state_dict`]: strict and non-strict loading checks in PyTorch's words.
//!
//! Headers are parsed and validated, and files written, by the `safetensors` crate (its
//! [`Dtype`] is tang's); tang adds what the crate does not do: it refuses a key named
//! twice (the crate keeps one), names the defect of a refused header with its own error,
//! widens and narrows floats, and handles tied entries as `save_model` does. The state
//! dict itself, and matching it to a module's parameters, live beside [`crate::module`].

pub(crate) mod convert;
mod diagnose;
mod error;
pub(crate) mod header;
mod read;
mod write;

pub use crate::module::file::{load_model, save_model, save_model_with};
pub use crate::module::host_tensor::{HostTensor, StateTensor};
pub use crate::module::state_dict::StateDict;
pub use crate::module::strict::{IncompatibleKeys, SizeMismatch, StateDictError, check_state_dict};
pub use convert::FloatDtype;
pub use error::SafetensorsError;
pub use header::{Header, MAX_HEADER_LEN, MAX_RANK, TensorInfo};
pub use read::{Checkpoint, load_file, read_bytes, read_file};
pub use safetensors::Dtype;
pub use write::{save_bytes, save_file};
