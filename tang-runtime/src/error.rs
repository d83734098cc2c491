//! The runtime's error type: every public function returns `Result<_, Error>`, and each
//! message says what went wrong and what to do about it.

use std::fmt;

/// Everything that can go wrong when running tang kernels.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// No GPU adapter (hardware or software) could be found.
    NoAdapter {
        /// What was searched for (backends, name filter).
        detail: String,
    },
    /// The adapter refused to create a device.
    DeviceRequest(String),
    /// Tensor shapes do not fit together (or a shape does not match its data).
    ShapeMismatch {
        /// The kernel or operation.
        op: String,
        /// What did not fit.
        detail: String,
    },
    /// A tensor lives on another [`Device`](crate::Device) than the operation runs on.
    DeviceMismatch {
        /// The kernel or operation.
        op: String,
        /// Which tensor (an argument name or a binding index).
        what: String,
        /// The device the operation runs on (adapter name).
        expected: String,
        /// The device holding the tensor (adapter name).
        got: String,
    },
    /// A non-tensor argument is out of its range (a probability above 1, a zero step).
    InvalidArgument {
        /// The operation.
        op: String,
        /// What was given and what is allowed.
        detail: String,
    },
    /// The wrong number of tensors, uniforms or bindings was passed.
    Arity {
        /// The kernel or operation.
        op: String,
        /// Which list (inputs, in-outs, uniforms, bindings).
        what: &'static str,
        /// How many the kernel declares.
        expected: usize,
        /// How many were passed.
        got: usize,
    },
    /// A tensor of the wrong element type was passed.
    DType {
        /// The operation.
        op: String,
        /// The element type it needs.
        expected: crate::DType,
        /// The element type it got.
        got: crate::DType,
    },
    /// A request exceeds a limit of the device.
    TooLarge {
        /// What was too large.
        what: String,
        /// The amount requested; `u64::MAX` when it overflowed 64 bits (the message then
        /// says so instead of printing the number).
        requested: u64,
        /// The limit (of the device, or of tang's 32-bit indexing).
        limit: u64,
    },
    /// The device has no memory left for a new buffer, even after the pool's free
    /// buffers were released.
    OutOfMemory {
        /// Bytes of the buffer asked for.
        requested: u64,
        /// Bytes held by live tensors at the time.
        in_use: u64,
        /// What the driver said.
        detail: String,
    },
    /// An index, token id or class label is at or past the end of what it indexes
    /// (PyTorch's `IndexError`): found on the host when the ids came from host data, or
    /// by a check on the GPU reported at the next read or sync.
    IndexOutOfRange {
        /// The operation (`embedding`, `cross_entropy`, `index_select`, `gather`).
        op: String,
        /// The offending value (the largest one, when several are).
        value: u64,
        /// The size it must be below (vocabulary size, number of classes, dimension length).
        bound: u64,
    },
    /// One tensor was bound twice in one launch where at least one binding writes it.
    Aliasing {
        /// The kernel.
        op: String,
        /// Which bindings share the buffer.
        detail: String,
    },
    /// The GPU device was lost (driver reset, device removed, or destroyed).
    DeviceLost(String),
    /// A kernel could not be generated (a tang bug or an unsupported construct).
    Shader(tang_expr::ExprError),
    /// A download from the GPU failed.
    Map(String),
    /// wgpu reported a validation or out-of-memory error.
    Wgpu(String),
    /// A thread panicked while holding the device's lock; the device state is unusable.
    Poisoned,
    /// A call that blocks the thread until the GPU answers, made where no thread may block
    /// (WebAssembly in a browser: the GPU's answer arrives on the thread that would wait).
    Blocking {
        /// The blocking call.
        call: &'static str,
        /// What to await instead.
        instead: &'static str,
    },
    /// The adapter or target lacks a feature the call needs.
    Unsupported {
        /// The call.
        what: String,
        /// The missing feature and what to do instead.
        detail: String,
    },
}

/// What to do when no adapter is found, for where the program runs: natively a driver is
/// missing; in a browser (WebAssembly) the page's browser exposes no WebGPU, and no
/// package the user could install would change that.
#[cfg(not(target_arch = "wasm32"))]
const NO_ADAPTER_HINT: &str = "install a Vulkan, Metal or DX12 driver for your GPU, \
     or a software one: on Debian/Ubuntu without a GPU `apt-get install mesa-vulkan-drivers`; \
     unset TANG_ADAPTER/TANG_BACKEND if they are set";
#[cfg(target_arch = "wasm32")]
const NO_ADAPTER_HINT: &str = "this browser exposes no WebGPU adapter: open the page in a browser \
     with WebGPU (Chrome or Edge 113+, Safari 26+, Firefox 141+ on Windows), or enable it \
     (Chrome on Linux: chrome://flags/#enable-unsafe-webgpu and #enable-vulkan; Firefox: \
     dom.webgpu.enabled in about:config), and check that hardware acceleration is on";
/// Prints the [`Display`](std::fmt::Display) text, as `anyhow` does: `?` out of `main`
/// and `unwrap` show the message with its hint rather than the variant's fields.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoAdapter { detail } => {
                write!(f, "no GPU adapter found ({detail}); {NO_ADAPTER_HINT}")
            }
            Error::DeviceRequest(e) => write!(
                f,
                "the GPU adapter refused to create a device: {e}; update the GPU driver or pick another adapter with TANG_ADAPTER=<name substring>"
            ),
            Error::ShapeMismatch { op, detail } => {
                write!(f, "{op}: shape mismatch: {detail}")
            }
            Error::DeviceMismatch {
                op,
                what,
                expected,
                got,
            } => write!(
                f,
                "{op}: {what} is a tensor of device `{got}`, expected one of device `{expected}` \
                 (the same Device handle or a clone of it; two Devices opened on one adapter are \
                 different devices); read it back and upload it to that device"
            ),
            Error::InvalidArgument { op, detail } => write!(f, "{op}: invalid argument: {detail}"),
            Error::Arity {
                op,
                what,
                expected,
                got,
            } => write!(
                f,
                "{op}: expected {expected} {what}, got {got}; pass exactly the {what} the kernel declares, in order"
            ),
            Error::DType { op, expected, got } => write!(
                f,
                "{op}: expected a tensor of {expected:?}, got {got:?}; convert it with `to_dtype` or create the tensor with the right element type"
            ),
            Error::TooLarge {
                what,
                requested,
                limit,
            } => write!(
                f,
                "{what}: asked for {}, the limit is {}; split the work into smaller pieces",
                show_requested(*requested),
                show_limit(*limit)
            ),
            Error::OutOfMemory {
                requested,
                in_use,
                detail,
            } => write!(
                f,
                "out of GPU memory: a buffer of {requested} bytes was refused with {in_use} bytes held by live tensors ({detail}); use a smaller batch or model, or drop tensors you no longer need"
            ),
            Error::IndexOutOfRange { op, value, bound } => write!(
                f,
                "{op}: index {value} is out of range: it must be below {bound} (the size of the \
                 dimension it indexes: a vocabulary size, a number of classes); check the \
                 tokenizer or the labels against the model's size"
            ),
            Error::Aliasing { op, detail } => write!(
                f,
                "{op}: {detail}; a tensor written by a launch cannot also be bound elsewhere in it: pass a copy"
            ),
            Error::DeviceLost(e) => write!(
                f,
                "the GPU device was lost ({e}); create a new Device and upload the data again"
            ),
            Error::Shader(e) => write!(f, "kernel generation failed: {e}"),
            Error::Map(e) => write!(f, "reading a tensor back from the GPU failed: {e}"),
            Error::Wgpu(e) => write!(f, "wgpu error: {e}"),
            Error::Poisoned => write!(
                f,
                "a thread panicked while using this device; create a new Device"
            ),
            Error::Blocking { call, instead } => write!(
                f,
                "{call} blocks until the GPU answers, which cannot happen on this target \
                 (WebAssembly: the answer is delivered to the waiting thread itself); await {instead} instead"
            ),
            Error::Unsupported { what, detail } => write!(f, "{what}: unsupported here: {detail}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Shader(e) => Some(e),
            _ => None,
        }
    }
}

impl From<tang_expr::ExprError> for Error {
    fn from(e: tang_expr::ExprError) -> Self {
        Error::Shader(e)
    }
}

/// How the requested amount of [`Error::TooLarge`] is shown: `u64::MAX` stands for an
/// amount that overflowed 64 bits (see `Size::at_most`), never for itself.
fn show_requested(n: u64) -> String {
    if n == u64::MAX {
        "more than 2^64 - 1 (the size overflows)".into()
    } else {
        n.to_string()
    }
}

/// How the limit of [`Error::TooLarge`] is shown (`u64::MAX` as `2^64 - 1`).
fn show_limit(n: u64) -> String {
    if n == u64::MAX {
        "2^64 - 1".into()
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = Error::NoAdapter {
            detail: "backends: all".into(),
        };
        assert!(e.to_string().contains("mesa-vulkan-drivers"));
        let e = Error::Arity {
            op: "add".into(),
            what: "inputs",
            expected: 2,
            got: 1,
        };
        assert!(e.to_string().contains("expected 2 inputs, got 1"));
    }
}
