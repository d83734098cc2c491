//! # Data-parallel training over MPI
//!
//! Past one GPU, tang trains as PyTorch's `DistributedDataParallel` does, over MPI (the
//! `mpi` cargo feature; MPICH or OpenMPI, launched by `mpirun` or Slurm's `srun`): every
//! rank holds the whole model and trains on its own part of each batch; parameters are
//! broadcast from rank 0 at the start; the gradients of each backward are averaged over
//! the ranks by an all-reduce in buckets of about 25 MB, each started as soon as its
//! gradients are final, so communication overlaps the rest of backward. wgpu has no
//! peer-to-peer copies, so a bucket goes GPU -> host -> MPI -> host -> GPU.
//!
//! - `process_group` (with the `mpi` feature): this process's rank, the job's size and
//!   its local rank (`init_process_group`), `None` outside a launcher.
//! - `DistributedDataParallel` (with the `mpi` feature): the bucketed, overlapped
//!   gradient average, with `DistributedDataParallel::no_sync` for gradient accumulation.
//! - [`DistributedSampler`](crate::data::DistributedSampler): the shard of each epoch a
//!   [`DataLoader`](crate::data::DataLoader) visits on this rank;
//!   [`DeviceTokenBatcher`](crate::data::DeviceTokenBatcher) draws its windows from a
//!   stream of the rank's own.
//! - [`crate::train::Trainer`] does all of it by itself under `mpirun`: rank 0 logs,
//!   plots and checkpoints, the loss printed is the mean over the ranks, and a rank that
//!   fails ends the job with its error (`ProcessGroup::abort`).
//!
//! Without the feature, [`rank_and_world_size`] is `(0, 1)` and everything trains in one
//! process.
//!
//! The host round trip is confined to one place, a bucket's reduction (a flat copy of its
//! gradients, read back, all-reduced, written back): on NVIDIA hosts the faster path, a
//! bucket buffer exported from Vulkan (external memory) and all-reduced by NCCL on the
//! GPU, replaces that step and nothing else.

#[cfg(feature = "mpi")]
mod ddp;
mod error;
#[cfg(feature = "mpi")]
mod group;

#[cfg(feature = "mpi")]
pub use ddp::{BUCKET_CAP_MB, DdpOptions, DistributedDataParallel, SyncTimes};
pub use error::DistError;
#[cfg(feature = "mpi")]
pub use group::{ProcessGroup, Reduce, process_group};

/// This process's rank and the number of ranks training together: the MPI job's when
/// tang is built with the `mpi` feature and launched by `mpirun` or `srun`, `(0, 1)`
/// otherwise (PyTorch's `dist.get_rank()`, `dist.get_world_size()`).
///
/// ```
/// let (rank, world) = tang_nn::distributed::rank_and_world_size()?;
/// assert!(rank < world);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`DistError::Init`] when a launcher started the process but MPI fails to start.
pub fn rank_and_world_size() -> Result<(usize, usize), DistError> {
    #[cfg(feature = "mpi")]
    if let Some(group) = process_group()? {
        return Ok((group.rank(), group.world_size()));
    }
    Ok((0, 1))
}
