//! Elementwise kernels: the binding layout shared by the code generator, the macros and
//! the runtime, and the descriptors that carry a kernel from one to the other.
//!
//! # Binding layout (bind group 0)
//!
//! | binding | WGSL | what |
//! |---|---|---|
//! | 0 | `var<uniform> params: Params` | see below |
//! | 1 ..= I | `var<storage, read> in_<name>: array<vec4<f32>>` | element inputs |
//! | then | `var<storage, read_write> io_<name>: array<vec4<f32>>` | in-out values (read, then written in place) |
//! | then | `var<storage, read_write> out_<name>: array<vec4<f32>>` | outputs |
//!
//! # f16 storage
//!
//! Every kernel also comes as an f16-storage variant ([`KernelDesc::wgsl_f16`]): the same
//! text but for the loads and stores, each tensor binding an `array<vec2<u32>>` holding
//! four f16 elements as the bits of two words (two per word, low half first), converted
//! to and from f32 with [`F16_BITS_TO_F32_WGSL`] and [`F32_TO_F16_BITS_WGSL`] (round to
//! nearest even). Arithmetic is f32, as PyTorch computes `torch.float16` elementwise ops.
//! The runtime launches it when every tensor is f16. A thread writes whole words and no
//! two threads write one word; in the last group a word that is half past `n` keeps its
//! other half (a larger view of the same buffer may hold an element there).
//!
//! Each thread computes [`ELEMENTS_PER_THREAD`] = 4 consecutive elements with 128-bit
//! loads and stores (on an H200 through Vulkan a vec4 copy moves 4.0 TB/s, a scalar one
//! 2.2: bench cases `copy_256MiB` / `copy_256MiB_scalar`). Storage bindings therefore cover whole vec4s: the runtime binds each tensor's
//! byte length rounded up to 16 (its buffers are allocated in larger size classes). Loads
//! of the last group may read up to three floats past `n` inside the binding; stores never
//! write past `n`.
//!
//! # Broadcasting (the `Params` uniform)
//!
//! The launch shape is the NumPy/PyTorch broadcast of the inputs' shapes. The runtime
//! coalesces it (size-1 dimensions dropped, neighbours that every input reads the same way
//! merged) to at most [`MAX_LAUNCH_DIMS`] = 4 dimensions `[d0, d1, d2, d3]`, and describes
//! how each input is read ([`InputRead`]). `Params` holds, 4-byte words in this order:
//!
//! | field | what |
//! |---|---|
//! | `n: u32` | elements of the launch |
//! | `d1, d2, d3: u32` | the coalesced launch shape's inner sizes (`d0` is implied) |
//! | `s_<input>: vec4<u32>` per input | its strides along the four dimensions (0 where it is broadcast) |
//! | `u_<uniform>: f32` per uniform | the uniforms |
//! | `zero: u32` | always 0: what zero and non-finite constants are built from |
//!
//! then padding to a multiple of 16 bytes. `zero` exists because shader compilers fold
//! arithmetic on constants they can see as if NaN, infinities and signed zeros never
//! occurred (`x * 0.0` to 0 at an infinite `x`, `x + 0.0` to `x` at `-0.0`), even when the
//! constant is spelled as an expression that is 0 for every launch (`n & 0u`): a word the
//! host writes is the one value the compiler cannot know, so a constant `c` that must not
//! be folded is printed as `bitcast<f32>(bits(c) | params.zero)`.
//!
//! How input `i` is read, its mode ([`InputRead::mode`]), is the pipeline-overridable constant
//! [`READ_MODE_CONSTANTS`]`[i]` (default 0): the runtime sets the others when it creates
//! the pipeline, so the driver's compiler drops the read paths a launch never takes (a
//! mode read from `Params` kept every path in the kernel and cost about 5% of bandwidth
//! on an all-contiguous chain). The modes: 0, a full-length input (one 128-bit
//! load, no index arithmetic); 1, a single element splat (no index arithmetic); 2, a
//! broadcast input when `d3` is a multiple of 4 (the four lanes of a thread share a row, so
//! one offset is computed per thread: three divisions, then a 128-bit load, a splat or a
//! strided gather); 3, any other broadcast input (an offset per lane).
//!
//! The entry point is [`ENTRY_POINT`], with workgroups of [`WORKGROUP_SIZE`] threads on a
//! 2-D grid: thread `q = gid.x + gid.y * num_workgroups.x * WORKGROUP_SIZE` handles
//! elements `4q .. 4q + 4`, so a launch can cover more than 65,535 workgroups (see
//! [`elementwise_dispatch`]). Every thread returns unless `4q < params.n` and stores only
//! lanes below `n`, which is what makes running the shader without wgpu's runtime bounds
//! checks sound.

pub use crate::codegen::storage::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};

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

/// The kind of one binding of a kernel's bind group 0: the part of the binding layout
/// a pipeline layout is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BindingKind {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// A compiled elementwise kernel, as a constant: what `#[kernel]` emits as `f::KERNEL`
/// and what the runtime launches. The one description of the elementwise ABI (see the
/// module docs): its binding kinds ([`KernelDesc::binding_kinds`]), its `Params` words
/// ([`KernelDesc::params`]) and its grid ([`elementwise_dispatch`]).
///
/// The fields are private: a descriptor either comes from the kernel macros (through an
/// `unsafe` constructor whose contract the generated WGSL meets, so it runs without
/// wgpu's runtime checks) or from [`Kernel::leak`] (runs with the checks on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelDesc {
    name: &'static str,
    wgsl: &'static str,
    inputs: &'static [&'static str],
    uniforms: &'static [&'static str],
    inouts: &'static [&'static str],
    outputs: &'static [&'static str],
    id: u64,
    wgsl_f16: Option<&'static str>,
    id_f16: u64,
    trusted: bool,
}

impl KernelDesc {
    /// A trusted descriptor: the runtime creates its shader without wgpu's runtime checks.
    /// Called by the code `#[kernel]` and `#[fused_grad]` generate; not part of the API.
    ///
    /// # Safety
    /// `wgsl` must be naga-valid WGSL with the binding layout of this module for these
    /// names, whose every array access is guarded by `params.n` and the read modes and
    /// strides (as the code generator emits it), so that no access goes out of the bound ranges.
    #[doc(hidden)]
    #[allow(unsafe_code)]
    #[allow(clippy::too_many_arguments)]
    pub const unsafe fn new_trusted(
        name: &'static str,
        wgsl: &'static str,
        inputs: &'static [&'static str],
        uniforms: &'static [&'static str],
        inouts: &'static [&'static str],
        outputs: &'static [&'static str],
        id: u64,
    ) -> KernelDesc {
        KernelDesc {
            name,
            wgsl,
            inputs,
            uniforms,
            inouts,
            outputs,
            id,
            wgsl_f16: None,
            id_f16: 0,
            trusted: true,
        }
    }

    /// The descriptor with its f16-storage variant (module docs), whose WGSL has the
    /// stable id `id`. Called by the code the kernel macros generate; not part of the API.
    ///
    /// # Safety
    /// As [`KernelDesc::new_trusted`], for `wgsl` with the f16 storage of this module.
    #[doc(hidden)]
    #[allow(unsafe_code)]
    pub const unsafe fn with_f16(self, wgsl: &'static str, id: u64) -> KernelDesc {
        KernelDesc {
            wgsl_f16: Some(wgsl),
            id_f16: id,
            ..self
        }
    }

    /// The kernel's name (the Rust function's name, with a suffix for derived kernels).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The WGSL entry point: [`ENTRY_POINT`].
    pub fn entry_point(&self) -> &'static str {
        ENTRY_POINT
    }

    /// The WGSL source (f32 storage; [`KernelDesc::wgsl_f16`] for f16).
    pub fn wgsl(&self) -> &'static str {
        self.wgsl
    }

    /// Names of the per-element inputs, in binding order.
    pub fn inputs(&self) -> &'static [&'static str] {
        self.inputs
    }

    /// Names of the uniforms, in order.
    pub fn uniforms(&self) -> &'static [&'static str] {
        self.uniforms
    }

    /// Names of the in-out values (read and written in place), in binding order.
    pub fn inouts(&self) -> &'static [&'static str] {
        self.inouts
    }

    /// Names of the outputs, in binding order.
    pub fn outputs(&self) -> &'static [&'static str] {
        self.outputs
    }

    /// A stable id (a hash of the WGSL): the pipeline cache's key.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The WGSL and stable id of the f16-storage variant (module docs), `None` for a
    /// descriptor made without one.
    pub fn wgsl_f16(&self) -> Option<(&'static str, u64)> {
        self.wgsl_f16.map(|w| (w, self.id_f16))
    }

    /// Whether the runtime may run the kernel without wgpu's runtime checks: true for
    /// descriptors the kernel macros build, false for [`Kernel::leak`].
    pub fn is_trusted(&self) -> bool {
        self.trusted
    }

    /// Number of storage buffers the kernel binds (inputs + in-outs + outputs).
    pub fn storage_buffers(&self) -> usize {
        self.inputs.len() + self.inouts.len() + self.outputs.len()
    }

    /// The kinds of bindings `0 ..= storage_buffers()`, in order: the `Params` uniform,
    /// then the inputs (read), then the in-outs and outputs (read-write).
    pub fn binding_kinds(&self) -> impl Iterator<Item = BindingKind> {
        std::iter::once(BindingKind::Uniform)
            .chain(std::iter::repeat_n(BindingKind::Read, self.inputs.len()))
            .chain(std::iter::repeat_n(
                BindingKind::ReadWrite,
                self.inouts.len() + self.outputs.len(),
            ))
    }

    /// Size in bytes of the `Params` uniform struct (layout in the module docs): the
    /// header, four strides per input, a value per uniform and the `zero` word, padded
    /// to 16 bytes.
    pub fn params_size(&self) -> usize {
        let words = 4 + 4 * self.inputs.len() + self.uniforms.len() + 1;
        4 * words.next_multiple_of(4)
    }

    /// The words of the `Params` uniform (layout in the module docs): `n`, the coalesced
    /// launch shape `dims = [d0, d1, d2, d3]` (`d0` is not stored), each input's strides
    /// the uniforms' bits and the `zero` word (the read modes are pipeline constants:
    /// [`READ_MODE_CONSTANTS`]). The caller checks the counts against
    /// [`KernelDesc::inputs`] and [`KernelDesc::uniforms`].
    pub fn params(
        &self,
        n: u32,
        dims: [u32; MAX_LAUNCH_DIMS],
        reads: &[InputRead],
        uniforms: &[f32],
    ) -> Vec<u32> {
        let mut words = Vec::with_capacity(self.params_size() / 4);
        words.push(n);
        words.extend(dims[1..].iter().map(|&d| d.max(1)));
        for r in reads {
            words.extend_from_slice(&r.strides());
        }
        words.extend(uniforms.iter().map(|u| u.to_bits()));
        // `zero`: 0, and only the host knows it (module docs).
        words.push(0);
        words.resize(words.len().next_multiple_of(4), 0);
        words
    }
}

/// The names of the pipeline-overridable constants that hold each input's read mode
/// ([`InputRead::mode`]), by input position: an elementwise kernel has at most this many
/// inputs.
pub const READ_MODE_CONSTANTS: [&str; 32] = [
    "tang_read0",
    "tang_read1",
    "tang_read2",
    "tang_read3",
    "tang_read4",
    "tang_read5",
    "tang_read6",
    "tang_read7",
    "tang_read8",
    "tang_read9",
    "tang_read10",
    "tang_read11",
    "tang_read12",
    "tang_read13",
    "tang_read14",
    "tang_read15",
    "tang_read16",
    "tang_read17",
    "tang_read18",
    "tang_read19",
    "tang_read20",
    "tang_read21",
    "tang_read22",
    "tang_read23",
    "tang_read24",
    "tang_read25",
    "tang_read26",
    "tang_read27",
    "tang_read28",
    "tang_read29",
    "tang_read30",
    "tang_read31",
];

/// Most dimensions of a coalesced launch shape that the generated index arithmetic
/// handles; the runtime materialises inputs whose broadcast needs more (see
/// `tang_runtime::Device::launch`).
pub const MAX_LAUNCH_DIMS: usize = 4;

/// How an elementwise kernel reads one input (its `s_<input>` words of `Params` and its
/// read-mode pipeline constant; module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputRead {
    /// As many elements as the launch, in its order: one 128-bit load per thread.
    Full,
    /// One element, the same for every position.
    Scalar,
    /// Broadcast: element `(c0, c1, c2, c3)` of the coalesced launch shape reads the
    /// input at `Σ ck * strides[k]`. `rows`: the launch's `d3` is a multiple of 4, so the
    /// four lanes of a thread share a row.
    Strided {
        /// The input's stride along each launch dimension (0 where broadcast).
        strides: [u32; MAX_LAUNCH_DIMS],
        /// Whether `d3` is a multiple of 4.
        rows: bool,
    },
}

impl InputRead {
    /// The mode word: 0 full, 1 scalar, 2 broadcast by rows, 3 broadcast per lane.
    pub fn mode(&self) -> u32 {
        match self {
            InputRead::Full => 0,
            InputRead::Scalar => 1,
            InputRead::Strided { rows: true, .. } => 2,
            InputRead::Strided { rows: false, .. } => 3,
        }
    }

    /// The strides words (zeros for the modes that read no strides).
    pub fn strides(&self) -> [u32; MAX_LAUNCH_DIMS] {
        match self {
            InputRead::Strided { strides, .. } => *strides,
            _ => [0; MAX_LAUNCH_DIMS],
        }
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
    /// The f16-storage variant's WGSL (module docs); `None` leaves the kernel f32-only.
    pub wgsl_f16: Option<String>,
    /// The stable id of [`Kernel::wgsl_f16`].
    pub id_f16: u64,
}

impl Kernel {
    /// Leaks the strings to make a `'static` descriptor that runs with wgpu's runtime
    /// checks on (a `Kernel`'s fields are public, so its text may come from anywhere).
    /// Meant for kernels that live as long as the program anyway: the leak is bounded by
    /// the number of distinct kernels.
    pub fn leak(self) -> &'static KernelDesc {
        self.leak_as(false)
    }

    /// [`Kernel::leak`] for a kernel that runs without wgpu's runtime checks.
    ///
    /// # Safety
    /// `self` must be what tang-expr's code generator returned (unchanged), or meet the
    /// same contract as [`KernelDesc::new_trusted`].
    #[allow(unsafe_code)]
    pub unsafe fn leak_trusted(self) -> &'static KernelDesc {
        self.leak_as(true)
    }

    fn leak_as(self, trusted: bool) -> &'static KernelDesc {
        fn names(v: Vec<String>) -> &'static [&'static str] {
            let v: Vec<&'static str> = v.into_iter().map(|s| &*s.leak()).collect();
            v.leak()
        }
        Box::leak(Box::new(KernelDesc {
            name: self.name.leak(),
            wgsl: self.wgsl.leak(),
            inputs: names(self.inputs),
            uniforms: names(self.uniforms),
            inouts: names(self.inouts),
            outputs: names(self.outputs),
            id: self.id,
            wgsl_f16: self.wgsl_f16.map(|w| &*w.leak()),
            id_f16: self.id_f16,
            trusted,
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
