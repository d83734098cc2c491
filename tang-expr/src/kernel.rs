//! Elementwise kernels: the binding layout shared by the code generator, the macros and
//! the runtime, and the descriptors that carry a kernel from one to the other.
//!
//! # Binding layout (bind group 0)
//!
//! | binding | WGSL | what |
//! |---|---|---|
//! | 0 | `var<uniform> params: Params` | `n: u32` (elements), one `p_<input>: u32` per element input, one `u_<uniform>: f32` per uniform |
//! | 1 ..= I | `var<storage, read> in_<name>: array<vec4<f32>>` | element inputs |
//! | then | `var<storage, read_write> io_<name>: array<vec4<f32>>` | in-out values (read, then written in place) |
//! | then | `var<storage, read_write> out_<name>: array<vec4<f32>>` | outputs |
//!
//! Each thread computes [`ELEMENTS_PER_THREAD`] = 4 consecutive elements with 128-bit
//! loads and stores (on an H200 through Vulkan a vec4 copy moves 4.0 TB/s, a scalar one
//! 2.2: bench cases `copy_256MiB` / `copy_256MiB_scalar`). Storage bindings therefore cover whole vec4s: the runtime binds each tensor's
//! byte length rounded up to 16 (its buffers are allocated in larger size classes). Loads
//! of the last group may read up to three floats past `n` inside the binding; stores never
//! write past `n`.
//!
//! `p_<input>` is the input's broadcast period: element `i` reads `in[i % p]`, so `p = n`
//! is an ordinary elementwise input, `p = 1` a scalar and `p = row length` a row (a
//! bias) repeated over every row. The `%` (a per-lane gather) only runs when `p != n`.
//!
//! The entry point is [`ENTRY_POINT`], with workgroups of [`WORKGROUP_SIZE`] threads on a
//! 2-D grid: thread `q = gid.x + gid.y * num_workgroups.x * WORKGROUP_SIZE` handles
//! elements `4q .. 4q + 4`, so a launch can cover more than 65,535 workgroups (see
//! [`elementwise_dispatch`]). Every thread returns unless `4q < params.n` and stores only
//! lanes below `n`, which is what makes running the shader without wgpu's runtime bounds
//! checks sound.

/// The entry point of every generated elementwise kernel.
pub const ENTRY_POINT: &str = "main";

/// Threads per workgroup of generated elementwise kernels.
pub const WORKGROUP_SIZE: u32 = 256;

/// Elements each thread of a generated elementwise kernel computes (one `vec4`).
pub const ELEMENTS_PER_THREAD: u32 = 4;

/// The `(x, y)` workgroup counts of a generated elementwise kernel over `n` elements
/// ([`ELEMENTS_PER_THREAD`] per thread); `None` past the 2-D grid's reach.
pub fn elementwise_dispatch(n: u64) -> Option<(u32, u32)> {
    dispatch_size(n.div_ceil(ELEMENTS_PER_THREAD as u64))
}

/// The most workgroups in one dimension of a dispatch (WebGPU's and wgpu's default limit).
pub const MAX_WORKGROUPS_PER_DIM: u32 = 65_535;

/// The `(x, y)` workgroup counts that cover `n` elements with [`WORKGROUP_SIZE`] threads
/// each, keeping both dimensions within [`MAX_WORKGROUPS_PER_DIM`]. Returns `None` when
/// even a full 2-D grid is too small (more than ~1.1e12 elements).
pub fn dispatch_size(n: u64) -> Option<(u32, u32)> {
    let groups = n.div_ceil(WORKGROUP_SIZE as u64).max(1);
    if groups <= MAX_WORKGROUPS_PER_DIM as u64 {
        return Some((groups as u32, 1));
    }
    let y = groups.div_ceil(MAX_WORKGROUPS_PER_DIM as u64);
    if y > MAX_WORKGROUPS_PER_DIM as u64 {
        return None;
    }
    let x = groups.div_ceil(y);
    Some((x as u32, y as u32))
}

/// A compiled elementwise kernel, as a constant: what `#[kernel]` emits as `f::KERNEL`
/// and what the runtime launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDesc {
    /// The kernel's name (the Rust function's name, with a suffix for derived kernels).
    pub name: &'static str,
    /// The WGSL entry point ([`ENTRY_POINT`] for generated kernels).
    pub entry_point: &'static str,
    /// The WGSL source, validated by naga when it was generated.
    pub wgsl: &'static str,
    /// Names of the per-element inputs, in binding order.
    pub inputs: &'static [&'static str],
    /// Names of the uniforms, in order.
    pub uniforms: &'static [&'static str],
    /// Names of the in-out values (read and written in place), in binding order.
    pub inouts: &'static [&'static str],
    /// Names of the outputs, in binding order.
    pub outputs: &'static [&'static str],
    /// A stable id (a hash of the WGSL): the pipeline cache's key.
    pub id: u64,
}

impl KernelDesc {
    /// Number of storage buffers the kernel binds (inputs + in-outs + outputs).
    pub fn storage_buffers(&self) -> usize {
        self.inputs.len() + self.inouts.len() + self.outputs.len()
    }

    /// Size in bytes of the `Params` uniform struct: `n`, one period per input, one value
    /// per uniform, 4 bytes each.
    pub fn params_size(&self) -> usize {
        4 * (1 + self.inputs.len() + self.uniforms.len())
    }
}

/// An elementwise kernel produced at run time (by tracing or by the macros during
/// expansion): owns its strings. [`Kernel::leak`] turns it into a [`KernelDesc`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// See [`KernelDesc::name`].
    pub name: String,
    /// See [`KernelDesc::wgsl`].
    pub wgsl: String,
    /// See [`KernelDesc::inputs`].
    pub inputs: Vec<String>,
    /// See [`KernelDesc::uniforms`].
    pub uniforms: Vec<String>,
    /// See [`KernelDesc::inouts`].
    pub inouts: Vec<String>,
    /// See [`KernelDesc::outputs`].
    pub outputs: Vec<String>,
    /// See [`KernelDesc::id`].
    pub id: u64,
}

impl Kernel {
    /// Leaks the strings to make a `'static` descriptor. Meant for kernels that live as
    /// long as the program anyway: the runtime does this once per distinct traced graph
    /// (its pipeline cache holds them forever), so the leak is bounded by the number of
    /// distinct kernels.
    pub fn leak(self) -> &'static KernelDesc {
        fn names(v: Vec<String>) -> &'static [&'static str] {
            let v: Vec<&'static str> = v.into_iter().map(|s| &*s.leak()).collect();
            v.leak()
        }
        Box::leak(Box::new(KernelDesc {
            name: self.name.leak(),
            entry_point: ENTRY_POINT,
            wgsl: self.wgsl.leak(),
            inputs: names(self.inputs),
            uniforms: names(self.uniforms),
            inouts: names(self.inouts),
            outputs: names(self.outputs),
            id: self.id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_covers_any_length_within_limits() {
        assert_eq!(dispatch_size(0), Some((1, 1)));
        assert_eq!(dispatch_size(256), Some((1, 1)));
        assert_eq!(dispatch_size(257), Some((2, 1)));
        for n in [20_000_003u64, 1 << 26, 1 << 32, 65_535 * 256 + 1] {
            let (x, y) = dispatch_size(n).unwrap();
            assert!(x <= MAX_WORKGROUPS_PER_DIM && y <= MAX_WORKGROUPS_PER_DIM);
            assert!(x as u64 * y as u64 * WORKGROUP_SIZE as u64 >= n);
        }
        assert_eq!(dispatch_size(u64::MAX / 2), None);
    }
}
