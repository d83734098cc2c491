//! What the trainer does differently as one rank of a data-parallel job (`mpirun`, the
//! `mpi` feature): gradients averaged by [`DistributedDataParallel`], the logged loss and
//! evaluation the mean over the ranks, a stop requested on one rank taken by all at the
//! same step, and the files written by rank 0 alone. In one process every method is the
//! single-process behaviour.

use crate::autograd::{Gradients, Tensor};
#[cfg(feature = "mpi")]
use crate::distributed::{DistributedDataParallel, ProcessGroup, Reduce};

use super::TrainError;

/// The trainer's part in the job it runs in.
#[derive(Debug)]
pub(super) struct Replicas {
    #[cfg(feature = "mpi")]
    ddp: Option<DistributedDataParallel>,
}

impl Replicas {
    /// This process's part: under `mpirun`, the parameters are set to rank 0's.
    #[cfg_attr(not(feature = "mpi"), allow(clippy::unnecessary_wraps))]
    pub(super) fn new(params: &[(String, Tensor)]) -> Result<Self, TrainError> {
        #[cfg(feature = "mpi")]
        {
            let ddp = crate::distributed::process_group()?
                .map(|group| {
                    DistributedDataParallel::over_parameters(group, params, Default::default())
                })
                .transpose()?;
            Ok(Replicas { ddp })
        }
        #[cfg(not(feature = "mpi"))]
        {
            let _ = params;
            Ok(Replicas {})
        }
    }

    #[cfg(feature = "mpi")]
    fn group(&self) -> Option<&'static ProcessGroup> {
        self.ddp
            .as_ref()
            .map(DistributedDataParallel::process_group)
    }

    /// Whether this process writes the run's files (rank 0, or the only process).
    pub(super) fn is_main(&self) -> bool {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            return group.rank() == 0;
        }
        true
    }

    /// How many ranks train together (1 in one process).
    pub(super) fn world_size(&self) -> u64 {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            return group.world_size() as u64;
        }
        1
    }

    /// The gradients of `loss`, averaged over the ranks.
    pub(super) fn backward(&self, loss: &Tensor) -> Result<Gradients, TrainError> {
        #[cfg(feature = "mpi")]
        if let Some(ddp) = &self.ddp {
            return Ok(ddp.backward(loss)?);
        }
        Ok(loss.backward()?)
    }

    /// The mean of `value` over the ranks.
    #[cfg_attr(not(feature = "mpi"), allow(clippy::unnecessary_wraps))]
    pub(super) fn mean(&self, value: f64) -> Result<f64, TrainError> {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            return Ok(group.mean(value)?);
        }
        Ok(value)
    }

    /// Whether any rank asks to stop: every rank then stops after the same step.
    #[cfg_attr(not(feature = "mpi"), allow(clippy::unnecessary_wraps))]
    pub(super) fn any(&self, flag: bool) -> Result<bool, TrainError> {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            let any = group.all_reduce(vec![u8::from(flag)], Reduce::Max)?;
            return Ok(any.first().is_some_and(|&v| v > 0));
        }
        Ok(flag)
    }

    /// Rank 0's `value` on every rank.
    #[cfg_attr(not(feature = "mpi"), allow(clippy::unnecessary_wraps))]
    pub(super) fn main_value(&self, value: u64) -> Result<u64, TrainError> {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            let v = group.broadcast(vec![value])?;
            return Ok(v.first().copied().unwrap_or(value));
        }
        Ok(value)
    }

    /// Waits for every rank (after rank 0 has written a checkpoint the others open).
    #[cfg_attr(not(feature = "mpi"), allow(clippy::unnecessary_wraps))]
    pub(super) fn barrier(&self) -> Result<(), TrainError> {
        #[cfg(feature = "mpi")]
        if let Some(group) = self.group() {
            group.barrier()?;
        }
        Ok(())
    }

    /// Under `mpirun`, a rank whose run failed prints its error and ends the job
    /// (`MPI_Abort`), so the other ranks do not wait for it forever; otherwise hands the
    /// result back.
    pub(super) fn end_job_on_error<T>(
        &self,
        result: Result<T, TrainError>,
    ) -> Result<T, TrainError> {
        #[cfg(feature = "mpi")]
        if let (Err(e), Some(group)) = (&result, self.group()) {
            // One write, so the line reaches the launcher whole.
            let line = format!("rank {} of {}: {e}\n", group.rank(), group.world_size());
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            group.abort(1);
        }
        result
    }
}
