//! [`DistributedDataParallel`]: PyTorch's DDP over MPI. Parameters are broadcast from
//! rank 0 at the start; each backward's gradients are averaged over the ranks in buckets
//! of about 25 MB (`bucket_cap_mb`), each bucket read back from the GPU and all-reduced
//! on the MPI thread as soon as its gradients are final, while backward records the rest
//! of the pass; the averages are written back before the optimizer step.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use tang_runtime::ops;
use tang_runtime::ops::cat;
use web_time::Instant;

use super::DistError;
use super::group::{ProcessGroup, Reduce, all_reduce_on};
use crate::autograd::{Gradients, RawTensor, Tensor, TensorId};
use crate::module::Module;

/// PyTorch's default bucket size for the gradient all-reduce, in MiB.
pub const BUCKET_CAP_MB: f64 = 25.0;

/// How [`DistributedDataParallel`] reduces gradients.
///
/// ```
/// use tang_nn::distributed::DdpOptions;
/// let opts = DdpOptions { bucket_cap_mb: 50.0, ..DdpOptions::default() };
/// assert!(opts.overlap); // buckets are reduced while backward runs
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DdpOptions {
    /// The most MiB of gradients all-reduced at once (PyTorch's `bucket_cap_mb`, 25).
    pub bucket_cap_mb: f64,
    /// Reduce each bucket while backward goes on (PyTorch's behaviour, the default);
    /// `false` reduces every bucket after backward, to measure what the overlap saves.
    pub overlap: bool,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: BUCKET_CAP_MB,
            overlap: true,
        }
    }
}

/// Where the time of the last synchronised backward went.
///
/// ```
/// use tang_nn::distributed::SyncTimes;
/// let t = SyncTimes::default();
/// assert_eq!(t.exposed, std::time::Duration::ZERO);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncTimes {
    /// The MPI thread's time on the buckets: reading each back from the GPU (which waits
    /// for the GPU to finish the gradients in it) and the all-reduce.
    pub communication: Duration,
    /// Of which in the all-reduce alone.
    pub all_reduce: Duration,
    /// How long the training thread waited for the reductions after its backward was
    /// recorded, writing back included: the communication the overlap did not hide.
    pub exposed: Duration,
    /// How many buckets were reduced.
    pub buckets: usize,
}

/// Data-parallel training over the ranks of an MPI job, as PyTorch's
/// `DistributedDataParallel`: every rank holds the whole model, trains on its own shard
/// of each batch, and takes the same optimizer step with the gradients averaged over the
/// ranks. [`crate::train::Trainer`] wraps its model in one by itself under `mpirun`; use
/// this in a loop of your own.
///
/// ```no_run
/// # use tang_nn::Module;
/// # use tang_nn::nn::{Linear, functional::mse_loss};
/// # use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::autograd::Tensor;
/// use tang_nn::distributed::{DistributedDataParallel, process_group};
/// // mpirun -np 2 ./train
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let model = Linear::new(&dev, 4, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// let group = process_group()?.ok_or("run this under mpirun -np 2")?;
/// let ddp = DistributedDataParallel::new(group, &model)?; // rank 0's weights everywhere
/// let mut opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
/// let (x, y) = (Tensor::zeros(&dev, &[8, 4])?, Tensor::zeros(&dev, &[8, 1])?); // this rank's shard
/// let grads = ddp.backward(&mse_loss(&model.forward(&x)?, &y)?)?; // averaged over the ranks
/// opt.step(&grads)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DistributedDataParallel {
    group: &'static ProcessGroup,
    /// The trainable parameters, each once, in the model's order.
    params: Vec<Tensor>,
    /// Indices into `params`, in the order gradients are expected to become final (the
    /// model's order reversed, as PyTorch fills its buckets).
    buckets: Vec<Vec<usize>>,
    /// The bucket of each parameter.
    bucket_of: HashMap<TensorId, usize>,
    options: DdpOptions,
    sync: bool,
    times: Cell<SyncTimes>,
}

impl DistributedDataParallel {
    /// Wraps the trainable parameters of `model` with [`DdpOptions::default`], and sets
    /// them to rank 0's values on every rank (so every rank starts from the same weights
    /// whatever its seed).
    ///
    /// # Errors
    /// As [`DistributedDataParallel::with_options`].
    pub fn new<M: Module + ?Sized>(
        group: &'static ProcessGroup,
        model: &M,
    ) -> Result<Self, DistError> {
        Self::with_options(group, model, DdpOptions::default())
    }

    /// [`DistributedDataParallel::new`] with `options`.
    ///
    /// # Errors
    /// [`DistError::InvalidOption`] when `bucket_cap_mb` is not positive;
    /// [`DistError::Runtime`] when the parameters cannot be read or written;
    /// [`DistError::Communication`] when the broadcast fails.
    pub fn with_options<M: Module + ?Sized>(
        group: &'static ProcessGroup,
        model: &M,
        options: DdpOptions,
    ) -> Result<Self, DistError> {
        let named: Vec<(String, Tensor)> = model
            .named_parameters()
            .into_iter()
            .filter(|(_, p)| p.requires_grad())
            .collect();
        Self::over_parameters(group, &named, options)
    }

    /// [`DistributedDataParallel::with_options`] over `params` (the trainer's).
    pub(crate) fn over_parameters(
        group: &'static ProcessGroup,
        named: &[(String, Tensor)],
        options: DdpOptions,
    ) -> Result<Self, DistError> {
        if !(options.bucket_cap_mb > 0.0 && options.bucket_cap_mb.is_finite()) {
            return Err(DistError::InvalidOption {
                detail: format!(
                    "bucket_cap_mb is {}; pass a positive size in MiB (PyTorch's default is 25)",
                    options.bucket_cap_mb
                ),
            });
        }
        let mut params: Vec<Tensor> = Vec::new();
        for (_, p) in named {
            if !params.iter().any(|q| q.id() == p.id()) {
                params.push(p.clone());
            }
        }
        let cap = (options.bucket_cap_mb * 1024.0 * 1024.0) as usize;
        let mut buckets: Vec<Vec<usize>> = Vec::new();
        let mut filled = cap;
        for i in (0..params.len()).rev() {
            let bytes = params[i].data().len() * 4;
            if filled > 0 && filled + bytes > cap {
                buckets.push(Vec::new());
                filled = 0;
            }
            if let Some(b) = buckets.last_mut() {
                b.push(i);
            }
            filled += bytes;
        }
        let bucket_of = buckets
            .iter()
            .enumerate()
            .flat_map(|(b, members)| members.iter().map(move |&i| (i, b)))
            .map(|(i, b)| (params[i].id(), b))
            .collect();
        let ddp = DistributedDataParallel {
            group,
            params,
            buckets,
            bucket_of,
            options,
            sync: true,
            times: Cell::new(SyncTimes::default()),
        };
        ddp.broadcast_parameters()?;
        Ok(ddp)
    }

    /// Sets every parameter to rank 0's value (one read, one broadcast, one write per
    /// parameter on the other ranks).
    fn broadcast_parameters(&self) -> Result<(), DistError> {
        let Some(flat) = flatten(self.params.iter().map(Tensor::data))? else {
            return Ok(());
        };
        let values = self.group.broadcast(flat.to_vec()?)?;
        if self.group.rank() != 0 {
            scatter(self.params.iter().map(Tensor::data), &values)?;
        }
        Ok(())
    }

    /// The process group.
    pub fn process_group(&self) -> &'static ProcessGroup {
        self.group
    }

    /// How many buckets the gradients are reduced in.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Where the last synchronised backward's time went (for benchmarks).
    pub fn last_sync_times(&self) -> SyncTimes {
        self.times.get()
    }

    /// Runs `f` with gradient synchronisation off (PyTorch's `with ddp.no_sync():`): the
    /// backwards inside return this rank's own gradients, to be summed with
    /// [`Gradients::accumulate`] and passed to
    /// [`DistributedDataParallel::backward_accumulating`] by the last micro-batch, whose
    /// backward averages the sum over the ranks once.
    ///
    /// ```no_run
    /// # use tang_nn::Module;
    /// # use tang_nn::nn::{Linear, functional::mse_loss};
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::distributed::{DistributedDataParallel, process_group};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let model = Linear::new(&dev, 4, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// # let group = process_group()?.ok_or("run this under mpirun")?;
    /// # let micro: Vec<(Tensor, Tensor)> = vec![(Tensor::zeros(&dev, &[8, 4])?, Tensor::zeros(&dev, &[8, 1])?); 4];
    /// let mut ddp = DistributedDataParallel::new(group, &model)?;
    /// let (last, first) = micro.split_last().ok_or("no micro-batches")?;
    /// let local = ddp.no_sync(|ddp| -> Result<_, Box<dyn std::error::Error>> {
    ///     let mut sum = tang_nn::Gradients::default();
    ///     for (x, y) in first {
    ///         sum.accumulate(ddp.backward(&mse_loss(&model.forward(x)?, y)?)?)?;
    ///     }
    ///     Ok(sum)
    /// })?;
    /// let mut grads = ddp.backward_accumulating(&mse_loss(&model.forward(&last.0)?, &last.1)?, local)?;
    /// grads.scale(1.0 / micro.len() as f32)?; // the mean over the micro-batches
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn no_sync<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let before = std::mem::replace(&mut self.sync, false);
        let out = f(self);
        self.sync = before;
        out
    }

    /// The gradients of `loss`, averaged over the ranks (this rank's own inside
    /// [`DistributedDataParallel::no_sync`]). Every rank must call it the same number of
    /// times, with a loss over its own shard of the batch.
    ///
    /// # Errors
    /// [`DistError::Autograd`] when backward fails; [`DistError::Runtime`] when a bucket
    /// cannot be read or written back; [`DistError::Communication`].
    pub fn backward(&self, loss: &Tensor) -> Result<Gradients, DistError> {
        self.backward_accumulating(loss, Gradients::default())
    }

    /// The gradients of `loss` plus `accumulated` (the sum of earlier micro-batches'
    /// gradients), averaged over the ranks: the last backward of a gradient accumulation.
    ///
    /// # Errors
    /// As [`DistributedDataParallel::backward`]; [`DistError::Autograd`] when a gradient
    /// of `accumulated` has another shape than its parameter's.
    pub fn backward_accumulating(
        &self,
        loss: &Tensor,
        mut accumulated: Gradients,
    ) -> Result<Gradients, DistError> {
        if !self.sync {
            accumulated.accumulate(loss.backward()?)?;
            return Ok(accumulated);
        }
        let mut reducer = Reducer::new(self, accumulated);
        let backward = loss.backward_hooked(&mut |id, grad| {
            if self.options.overlap {
                reducer.on_final(id, grad);
            }
        });
        let recorded = Instant::now();
        let mut grads = backward?;
        for (id, grad) in grads.iter() {
            if !self.options.overlap {
                reducer.on_final(id, grad);
            }
        }
        let mut times = reducer.finish(&mut grads)?;
        times.exposed = recorded.elapsed();
        self.times.set(times);
        Ok(grads)
    }
}

/// A bucket's averages, the MPI thread's time on it, and of that the all-reduce's.
type Reduced = (Vec<f32>, Duration, Duration);

/// The reduction of one backward's buckets.
struct Reducer<'a> {
    ddp: &'a DistributedDataParallel,
    /// Earlier micro-batches' gradients, added to each gradient as it becomes final.
    accumulated: Gradients,
    /// The final gradient of each parameter seen so far.
    finals: HashMap<TensorId, RawTensor>,
    /// How many of each bucket's gradients are final.
    ready: Vec<usize>,
    /// The next bucket to hand to the MPI thread: buckets go in index order on every
    /// rank, so the ranks' all-reduces always pair up (PyTorch's rule too).
    next: usize,
    /// The buckets' reductions under way, in launch order.
    pending: Vec<Receiver<Result<Reduced, DistError>>>,
    /// The first failure seen inside backward's hook, reported after it.
    error: Option<DistError>,
    times: SyncTimes,
}

impl<'a> Reducer<'a> {
    fn new(ddp: &'a DistributedDataParallel, accumulated: Gradients) -> Self {
        Reducer {
            ddp,
            accumulated,
            finals: HashMap::new(),
            ready: vec![0; ddp.buckets.len()],
            next: 0,
            pending: Vec::new(),
            error: None,
            times: SyncTimes::default(),
        }
    }

    /// Notes that the gradient of `id` is final and launches the buckets that are
    /// complete in order. A failure is kept for [`Reducer::finish`].
    fn on_final(&mut self, id: TensorId, grad: &RawTensor) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.note(id, grad.clone()) {
            self.error = Some(e);
        }
    }

    fn note(&mut self, id: TensorId, grad: RawTensor) -> Result<(), DistError> {
        let Some(&bucket) = self.ddp.bucket_of.get(&id) else {
            return Ok(()); // not a trainable parameter of the model (a user's leaf)
        };
        if let Some(earlier) = self.accumulated.get_id(id) {
            ops::add_(&grad, earlier, 1.0)?;
        }
        if self.finals.insert(id, grad).is_none() {
            self.ready[bucket] += 1;
        }
        self.launch_ready()
    }

    /// Hands every complete bucket from `next` on to the MPI thread.
    fn launch_ready(&mut self) -> Result<(), DistError> {
        while let Some(members) = self.ddp.buckets.get(self.next) {
            if self.ready[self.next] < members.len() {
                break;
            }
            let grads = members
                .iter()
                .filter_map(|&i| self.finals.get(&self.ddp.params[i].id()));
            let Some(flat) = flatten(grads)? else {
                self.next += 1;
                continue;
            };
            let world = self.ddp.group.world_size() as f32;
            self.pending.push(self.ddp.group.submit(move |comm| {
                let started = Instant::now();
                // Waits for the GPU to finish this bucket's gradients; the training
                // thread meanwhile records the rest of backward.
                let host = flat.to_vec()?;
                let reducing = Instant::now();
                let mut sum = all_reduce_on(comm, &host, Reduce::Sum);
                let all_reduce = reducing.elapsed();
                for v in &mut sum {
                    *v /= world;
                }
                Ok((sum, started.elapsed(), all_reduce))
            })?);
            self.next += 1;
        }
        Ok(())
    }

    /// Gives the parameters this rank's backward did not reach a gradient (their
    /// accumulated one, or zeros: another rank may have reached them, and every rank
    /// must take the same step), launches the remaining buckets, and writes the averages
    /// back into `grads`; returns where the time went.
    fn finish(mut self, grads: &mut Gradients) -> Result<SyncTimes, DistError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        for p in &self.ddp.params {
            if grads.get_id(p.id()).is_none() {
                let g = match self.accumulated.get_id(p.id()) {
                    Some(g) => g.clone(),
                    None => RawTensor::zeros(p.data().device(), p.shape())?,
                };
                grads.insert(p.id(), g.clone());
                // Already accumulated: noted without adding it again.
                if let Some(&bucket) = self.ddp.bucket_of.get(&p.id()) {
                    self.finals.insert(p.id(), g);
                    self.ready[bucket] += 1;
                }
            }
        }
        self.launch_ready()?;
        for (bucket, result) in self.pending.into_iter().enumerate() {
            let (values, took, all_reduce) = result.recv().map_err(|_| {
                DistError::Communication("the MPI thread stopped during a reduction".into())
            })??;
            self.times.communication += took;
            self.times.all_reduce += all_reduce;
            self.times.buckets += 1;
            let members = &self.ddp.buckets[bucket];
            let targets = members
                .iter()
                .filter_map(|&i| self.finals.get(&self.ddp.params[i].id()));
            scatter(targets, &values)?;
        }
        Ok(self.times)
    }
}

/// The tensors one after another in one flat tensor (`None` for none).
fn flatten<'t>(
    tensors: impl Iterator<Item = &'t RawTensor>,
) -> Result<Option<RawTensor>, DistError> {
    let flat: Vec<RawTensor> = tensors
        .map(|t| t.reshape(&[t.len()]))
        .collect::<Result<_, _>>()?;
    if flat.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&RawTensor> = flat.iter().collect();
    Ok(Some(cat(&refs, 0)?))
}

/// Writes consecutive pieces of `values` into `targets`, in order.
fn scatter<'t>(
    targets: impl Iterator<Item = &'t RawTensor>,
    values: &[f32],
) -> Result<(), DistError> {
    let mut offset = 0;
    for t in targets {
        let piece = values.get(offset..offset + t.len()).ok_or_else(|| {
            DistError::Communication(format!(
                "{} values came back for tensors of more; the ranks' models differ",
                values.len()
            ))
        })?;
        t.write(piece)?;
        offset += t.len();
    }
    Ok(())
}
