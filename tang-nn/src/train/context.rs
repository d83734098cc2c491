//! What a training step's closures are given ([`StepContext`]) and what a step and a
//! whole run report ([`StepReport`], [`FitSummary`]).

use tang_runtime::ops::Generator;

use super::metrics::MetricsRecord;
use crate::checkpoint::Checkpoint;
use crate::data::{DataError, DataLoader, Dataset, LoaderState};

/// What the forward and evaluation closures are given.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::autograd::Tensor;
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss_with}};
/// # use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-stepcontext-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// trainer.step(&mut |ctx: &mut StepContext<'_>| {
///     let noisy = x.dropout(0.1, ctx.generator)?; // the step's own random numbers
///     mse_loss_with(&model.forward(&noisy)?, &y, Reduction::Mean)
/// })?;
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StepContext<'a> {
    /// The step (0-based: the number of steps taken before this one).
    pub step: u64,
    /// A device generator for this step's own random draws (noise, augmentation, or
    /// dropout through [`Tensor::dropout`](crate::autograd::Tensor::dropout)), seeded
    /// from `(seed, step)`.
    pub generator: &'a mut Generator,
    /// Where the [`DataLoader`] feeding the steps stands, kept in checkpoints:
    /// [`StepContext::next_batch`] reads and sets it.
    pub loader: &'a mut Option<LoaderState>,
}

impl StepContext<'_> {
    /// The next batch of `loader` for this step, from where the trainer's state says the
    /// loader stands, going on into the next epoch when one ends (the loop is counted in
    /// steps); the loader's new position is recorded in the trainer state, so checkpoints
    /// carry it and a resumed run continues the same stream of batches (as Lightning
    /// restores a stateful loader from its checkpoint). One loader feeds a trainer.
    ///
    /// ```
    /// # use tang_nn::Module;
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss_with}};
    /// # use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
    /// use tang_nn::data::{DataError, DataLoader, LoaderOptions};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// # let opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
    /// # let out = std::env::temp_dir().join(format!("tang-doc-stepcontext-next_batch-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(3) };
    /// // Samples (x, y) with y = x0 + x1; a batch is uploaded as ([n, 2], [n, 1]).
    /// let samples: Vec<([f32; 2], f32)> = (0..6).map(|i| ([i as f32, 1.0], i as f32 + 1.0)).collect();
    /// let collate = |rows: Vec<([f32; 2], f32)>| -> Result<_, DataError> {
    ///     let x: Vec<f32> = rows.iter().flat_map(|(x, _)| *x).collect();
    ///     let y: Vec<f32> = rows.iter().map(|(_, y)| *y).collect();
    ///     let x = Tensor::from_slice(&dev, &x, &[rows.len(), 2])?;
    ///     Ok((x, Tensor::from_slice(&dev, &y, &[rows.len(), 1])?))
    /// };
    /// let opts = LoaderOptions { batch_size: 4, shuffle: true, ..LoaderOptions::default() };
    /// let mut loader = DataLoader::new(samples, collate, opts)?;
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.fit(|ctx: &mut StepContext<'_>| -> Result<_, Box<dyn std::error::Error + Send + Sync>> {
    ///     let (x, y) = ctx.next_batch(&mut loader)?; // batches 4, 2, then epoch 1
    ///     Ok(mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean)?)
    /// })?;
    /// let saved = trainer.state().loader.ok_or("set by next_batch")?; // in the checkpoint
    /// assert_eq!((saved.epoch, saved.position), (1, 4));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`DataError::Resume`] when the recorded position does not fit `loader` (another
    /// data set than the checkpoint's); as [`DataLoader::next_batch_cycled`].
    pub fn next_batch<D, C, B>(&mut self, loader: &mut DataLoader<D, C>) -> Result<B, DataError>
    where
        D: Dataset,
        C: FnMut(Vec<D::Item>) -> Result<B, DataError>,
    {
        // After a resume the trainer's state holds the checkpoint's position and the
        // loader its fresh one; otherwise they agree and nothing is replayed.
        if let Some(saved) = *self.loader
            && saved != loader.state()
        {
            loader.resume(saved)?;
        }
        let batch = loader.next_batch_cycled()?;
        *self.loader = Some(loader.state());
        Ok(batch)
    }
}

/// What one [`Trainer::step`](super::Trainer::step) did.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::autograd::Tensor;
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss_with}};
/// # use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-stepreport-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// let report = trainer.step(&mut forward)?;
/// assert!(report.record.is_some()); // log_every 1: every step is a log step
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// Steps taken, this one included.
    pub step: u64,
    /// The device's count of host reads from the start of `backward` to the end of the
    /// optimizer step: 0 in one process, because nothing there reads back (under
    /// `mpirun`, one per bucket of gradients averaged over the ranks; in mixed precision,
    /// one more: the gradient scaler's inf/NaN count, which decides whether to step).
    pub host_reads_backward_to_step: u64,
    /// The metrics of this step when it was a log step.
    pub record: Option<MetricsRecord>,
}

/// How a [`Trainer::fit`](super::Trainer::fit) run ended.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::autograd::Tensor;
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss_with}};
/// # use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-fitsummary-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// let summary = trainer.fit(&mut forward)?;
/// println!("{} steps; weights in {}", summary.steps, summary.checkpoint.path().display());
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct FitSummary {
    /// Steps taken in total (the resumed ones included).
    pub steps: u64,
    /// Whether it stopped early because of Ctrl-C (or
    /// [`Interrupt::request`](super::Interrupt::request)).
    pub interrupted: bool,
    /// The checkpoint saved at the end.
    pub checkpoint: Checkpoint,
}
