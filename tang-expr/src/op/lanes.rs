//! The two shapes of value tang's WGSL computes on: a scalar `f32` (epilogues, scalar
//! functions) and a `vec4<f32>` (elementwise kernels process four elements per thread
//! with 128-bit loads: on an H200 through Vulkan a scalar copy moved 2.2 TB/s and a vec4
//! copy 4.0 TB/s, bench cases `copy_256MiB_scalar` / `copy_256MiB`).
//!
//! Every op's WGSL is written once for both (the op table, `mod.rs`): expressions take the
//! float type `t` so that constants passed to builtins can be splat (`t(1.0f)`: WGSL
//! builtins like `clamp` and `select` need matching types), booleans use `&`/`|`, which
//! WGSL defines for `bool` and `vec4<bool>` alike (`&&`/`||` exist only for scalars), and
//! helper functions are templates instantiated per shape (`wgsl_helpers/`).

/// The shape of the values an emitted expression computes on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lanes {
    /// One `f32` per value.
    Scalar,
    /// Four elements at once: `vec4<f32>` (and `vec4<bool>` for conditions).
    Vec4,
}

impl Lanes {
    /// The WGSL float type.
    pub fn float(self) -> &'static str {
        match self {
            Lanes::Scalar => "f32",
            Lanes::Vec4 => "vec4<f32>",
        }
    }

    /// The WGSL bool type.
    pub fn bool(self) -> &'static str {
        match self {
            Lanes::Scalar => "bool",
            Lanes::Vec4 => "vec4<bool>",
        }
    }

    /// The WGSL u32 type of the same shape (helpers test floats on their bits).
    pub(crate) fn uint(self) -> &'static str {
        match self {
            Lanes::Scalar => "u32",
            Lanes::Vec4 => "vec4<u32>",
        }
    }
}
