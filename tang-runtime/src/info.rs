//! What a device is and how it was opened ([`DeviceOptions`], [`DeviceInfo`], the
//! [`Stats`] it counts) and the wgpu handles the recording state works with ([`Gpu`]):
//! plain data below both `device.rs` and `state.rs`.

/// How to open a [`Device`](crate::Device). `DeviceOptions::default()` reads the environment:
/// `TANG_ADAPTER` (a substring of the adapter's name), `TANG_ADAPTER_INDEX` (which of
/// several equally good adapters), `TANG_BACKEND` (`vulkan`, `metal`, `dx12` or `gl`) and
/// `TANG_CHECKED=1` and `TANG_TENSOR_CORES=0`. Under an MPI or Slurm launcher without `TANG_ADAPTER_INDEX`, the
/// process's local rank picks the adapter (see [`DeviceOptions::adapter_index`]).
#[derive(Clone, Debug)]
pub struct DeviceOptions {
    /// Keep wgpu's shader runtime checks (bounds checks) on for every kernel. Off by
    /// default: tang's kernels guard their own indices (see DESIGN.md). On with the cargo
    /// feature `checked` or `TANG_CHECKED=1`.
    pub checked: bool,
    /// Submit the recorded work after this many launches even with no sync point. The
    /// first batch after a sync point is smaller (16 launches, then 32, 64, ... up to
    /// this), so the GPU does not wait for a whole batch to be recorded.
    pub batch_size: u32,
    /// Only use an adapter whose name contains this (case-insensitive).
    pub adapter: Option<String>,
    /// Which of the equally good adapters to open (same kind and backend, in the
    /// driver's order: the GPUs of a multi-GPU host), as `torch.cuda.set_device(i)`
    /// picks one. `None` opens the first. The default reads `TANG_ADAPTER_INDEX`, else
    /// the local rank a launcher sets (`MPI_LOCALRANKID` from MPICH,
    /// `OMPI_COMM_WORLD_LOCAL_RANK` from OpenMPI, `SLURM_LOCALID` from Slurm) so that the
    /// ranks of a data-parallel job on one host take one GPU each; a local rank past the
    /// number of GPUs wraps around (ranks share GPUs), while an index given explicitly
    /// must exist.
    pub adapter_index: Option<AdapterIndex>,
    /// Only use these backends.
    pub backends: Option<wgpu::Backends>,
    /// The most bytes of free buffers the pool keeps for reuse. `None` (the default): no
    /// limit on a GPU, as PyTorch's caching allocator keeps every freed block, so a
    /// training step that repeats the same shapes allocates nothing after the first steps
    /// at any model size the GPU holds; 4 GiB on a software adapter, whose "device"
    /// memory is the host's. Either way, an allocation the device refuses for lack of
    /// memory first empties the pool and tries again (PyTorch frees its cache the same
    /// way before it reports an out-of-memory error).
    pub pool_limit: Option<u64>,
    /// Run f16 matrix products on the tensor cores (WGSL cooperative matrices) where the
    /// adapter has them (see [`DeviceInfo::tensor_cores`]). On by default; off with
    /// `TANG_TENSOR_CORES=0`, which also leaves wgpu's experimental cooperative-matrix
    /// feature unrequested. Off, f16 products run on the f32 tile with the same rounding
    /// of the operands (slower, same accuracy class).
    pub tensor_cores: bool,
    /// Use 64-bit integers in shaders where the adapter has them (`SHADER_INT64`): the
    /// random generator's products (dropout, `rand`, attention's dropout) then take one
    /// multiply instead of about fifteen instructions, with the same bits. On by default;
    /// off with `TANG_SHADER_INT64=0`, which runs the portable 32-bit form every adapter
    /// (and WebGPU in browsers) has.
    pub shader_int64: bool,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        DeviceOptions {
            checked: cfg!(feature = "checked")
                || env("TANG_CHECKED").is_some_and(|v| v != "0" && v != "false"),
            batch_size: 256,
            adapter: env("TANG_ADAPTER"),
            adapter_index: AdapterIndex::from_env(),
            backends: env("TANG_BACKEND").map(|b| wgpu::Backends::from_comma_list(&b)),
            pool_limit: None,
            tensor_cores: env("TANG_TENSOR_CORES").is_none_or(|v| v != "0" && v != "false"),
            shader_int64: env("TANG_SHADER_INT64").is_none_or(|v| v != "0" && v != "false"),
        }
    }
}

/// Which adapter of several equally good ones a device opens
/// ([`DeviceOptions::adapter_index`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterIndex {
    /// This one; opening fails when there are fewer adapters.
    Exact(usize),
    /// A launcher's local rank: the adapter at `rank % count`, so ranks share GPUs when
    /// there are more ranks than GPUs on the host.
    LocalRank(usize),
}

impl AdapterIndex {
    /// `TANG_ADAPTER_INDEX` (exact), else the local rank an MPI or Slurm launcher set.
    /// A `TANG_ADAPTER_INDEX` that is not a number is reported when the device opens
    /// ([`Device::with_options`](crate::Device::with_options) checks it again).
    fn from_env() -> Option<AdapterIndex> {
        let number = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse().ok());
        if let Some(i) = number("TANG_ADAPTER_INDEX") {
            return Some(AdapterIndex::Exact(i));
        }
        [
            "MPI_LOCALRANKID",
            "OMPI_COMM_WORLD_LOCAL_RANK",
            "SLURM_LOCALID",
        ]
        .into_iter()
        .find_map(number)
        .map(AdapterIndex::LocalRank)
    }

    /// The position among `count` adapters, or `None` when an exact index is past them.
    pub(crate) fn resolve(self, count: usize) -> Option<usize> {
        match self {
            AdapterIndex::Exact(i) => (i < count).then_some(i),
            AdapterIndex::LocalRank(rank) => (count > 0).then(|| rank % count),
        }
    }
}

/// What the device is: adapter, backend, limits and the features tang enabled.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// The adapter's name, e.g. "NVIDIA H100 80GB HBM3" or "llvmpipe (LLVM 15.0.7, 256 bits)".
    pub name: String,
    /// The backend (Vulkan, Metal, DX12, GL).
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual or CPU.
    pub device_type: wgpu::DeviceType,
    /// The driver's name and version.
    pub driver: String,
    /// True for a software rasteriser (no GPU): expect it to be slow.
    pub is_software: bool,
    /// The limits the device was created with (the adapter's own).
    pub limits: wgpu::Limits,
    /// The features the device was created with.
    pub features: wgpu::Features,
    /// Whether shader runtime checks are on.
    pub checked: bool,
    /// The smallest subgroup (warp, wave) size the adapter may use: 32 on NVIDIA, 8 on
    /// lavapipe (meaningful when `features` contains `SUBGROUP`).
    pub subgroup_min_size: u32,
    /// The largest subgroup size the adapter may use.
    pub subgroup_max_size: u32,
    /// Whether f16 matrix products and attention run on the tensor cores:
    /// [`DeviceOptions::tensor_cores`] is on and the adapter has `SHADER_F16`, subgroup
    /// operations, wgpu's cooperative matrices with the 16x16x16 f16 x f16 + f32
    /// configuration, and subgroups of exactly 32 (NVIDIA's Vulkan driver; not lavapipe,
    /// not browsers today).
    pub tensor_cores: bool,
    /// Whether kernels round f32 to f16 with the adapter's `pack2x16float` (one
    /// instruction) rather than tang's integer arithmetic: only where a probe run when the
    /// device was made found it rounds to nearest even, as tang does everywhere, so the
    /// bits are the same either way (not in browsers, which cannot wait for the probe).
    pub native_f16_rounding: bool,
}

/// Counters of the device's resources and work, for tests and tuning.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes of buffers held by live tensors.
    pub bytes_in_use: u64,
    /// Bytes of free buffers kept for reuse.
    pub bytes_pooled: u64,
    /// Buffers allocated from the driver (pool misses).
    pub allocations: u64,
    /// Compute pipelines created (cache misses).
    pub pipelines_created: u64,
    /// Shader modules created.
    pub shader_modules_created: u64,
    /// Bind groups created: launches that did not find one binding the same buffers among
    /// the groups of earlier launches (see `bind_groups.rs`).
    pub bind_groups_created: u64,
    /// Kernel dispatches recorded.
    pub launches: u64,
    /// Command buffers submitted.
    pub submits: u64,
    /// Host time spent finishing and submitting command buffers: wgpu encodes a batch's
    /// dispatches for the driver when it is finished, so this is the driver's and wgpu's
    /// share of the launches, the rest of a launch's host time being tang's own recording.
    pub submit_time: std::time::Duration,
    /// Reads back to the host (each [`crate::Tensor::to_vec`], `to_vec_u32`, `item` or
    /// async read of a non-empty tensor): what "nothing is read back" is checked against.
    pub host_reads: u64,
}

/// The wgpu device and queue with the settings the recording state needs; the device's
/// `Inner` holds one and derefs to it.
pub(crate) struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: DeviceInfo,
    pub(crate) opts: DeviceOptions,
    /// `opts.pool_limit` resolved for the adapter (see [`DeviceOptions::pool_limit`]).
    pub(crate) pool_limit: u64,
}

#[cfg(test)]
mod tests {
    use super::AdapterIndex;

    #[test]
    fn an_exact_index_must_exist_and_a_local_rank_wraps() {
        assert_eq!(AdapterIndex::Exact(1).resolve(2), Some(1));
        assert_eq!(AdapterIndex::Exact(2).resolve(2), None);
        assert_eq!(AdapterIndex::LocalRank(5).resolve(2), Some(1));
        assert_eq!(AdapterIndex::LocalRank(0).resolve(0), None);
    }
}
