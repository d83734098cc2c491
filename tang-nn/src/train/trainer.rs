//! [`Trainer`]: the loop a user would otherwise write around a [`Module`] and an
//! [`Optimizer`]. Each step: the learning rate from the schedule, the user's forward and
//! loss (a closure), `backward`, clipping by global norm on the device, the optimizer step
//! (the clip coefficient taken inside the update kernels). Every `log_every` steps the
//! loss and the gradient norm are read back (one host read of both), and a metrics record
//! (loss, lr, grad norm, ms per step, samples or tokens per second) is appended to
//! `metrics.jsonl` and shown by the progress bar (plain lines when piped). Evaluation
//! runs every `eval_every` steps in eval mode without gradients; checkpoints (weights,
//! optimizer state, trainer state) are saved every `checkpoint_every` steps, at the end
//! and on Ctrl-C, which finishes the current step first; the loss curve is drawn at the
//! end and on demand ([`Trainer::plot`]).
//!
//! A run resumed from a checkpoint continues exactly: the weights and optimizer state are
//! restored bit for bit, and everything else a step draws on is a pure function of the
//! step: the schedule, [`crate::data::DeviceTokenBatcher`]'s windows, and the random
//! numbers. Before each step the trainer reseeds the process-wide generator of
//! [`crate::nn::Dropout`] ([`crate::nn::manual_seed`]) and makes the step's own
//! generator ([`StepContext::generator`]), both from `(seed, step)`, so a resumed run
//! draws the same dropout masks without saving any generator position.
//!
//! ```no_run
//! # use tang_nn::Module;
//! use tang_nn::data::DeviceTokenBatcher;
//! use tang_nn::nn::{Embedding, functional::cross_entropy};
//! use tang_nn::optim::{AdamW, AdamWOptions};
//! use tang_nn::rng::SplitMix64;
//! use tang_nn::schedule::Schedule;
//! use tang_nn::train::{StepContext, Throughput, Trainer, TrainerOptions};
//! let dev = tang_nn::tang_runtime::Device::new()?;
//! let corpus: Vec<u32> = (0..10_000).map(|i| (i * 7 % 64) as u32).collect();
//! let batches = DeviceTokenBatcher::new(&dev, &corpus, 8, 32, 1337)?;
//! let model = Embedding::new(&dev, 64, 64, &mut SplitMix64::new(0))?;
//! let opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
//! let options = TrainerOptions {
//!     clip_grad_norm: Some(1.0),
//!     throughput: Some(Throughput::Tokens(8 * 32)),
//!     checkpoint_every: 500,
//!     ..TrainerOptions::new(2000)
//! };
//! let mut trainer = Trainer::new(&model, opt, "runs/bigram", options)?
//!     .with_schedule(Schedule::warmup_cosine(1e-3, 1e-4, 100, 2000)?);
//! trainer.resume_latest()?; // continues a previous run of this directory, if any
//! let summary = trainer.fit(|ctx: &mut StepContext<'_>| {
//!     let (x, y) = batches.batch(ctx.step)?;
//!     let logits = model.forward(&x.reshape(&[8 * 32])?)?;
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(cross_entropy(
//!         &logits,
//!         &y.reshape(&[8 * 32])?,
//!     )?)
//! })?;
//! println!("{} steps, checkpoint {}", summary.steps, summary.checkpoint.path().display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::PathBuf;

use tang_runtime::ops::Generator;
use tang_runtime::ops::cat;

use super::context::{StepContext, StepReport};
use super::metrics::{MetricsLog, MetricsRecord, StepTimer};
use super::options::{Throughput, TrainerOptions};
use super::plot::plot_loss_curve;
use super::{Interrupt, Progress, TrainError};
use crate::autograd::{Tensor, no_grad};
use crate::checkpoint::{CheckpointDir, TrainerState};
use crate::module::Module;
use crate::optim::{Algorithm, NamedGradients, Optimizer, grad_norm};
use crate::rng::SplitMix64;
use crate::schedule::Schedule;

/// The metrics file in the output directory.
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
/// # let out = std::env::temp_dir().join(format!("tang-doc-metrics_file-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// use tang_nn::train::{METRICS_FILE, read_metrics};
/// Trainer::new(&model, opt, &out, options)?.fit(&mut forward)?;
/// assert_eq!(read_metrics(out.join(METRICS_FILE))?.len(), 2);
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const METRICS_FILE: &str = "metrics.jsonl";
/// The loss-curve PNG in the output directory.
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
/// # let out = std::env::temp_dir().join(format!("tang-doc-plot_file-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// use tang_nn::train::PLOT_FILE;
/// Trainer::new(&model, opt, &out, options)?.fit(&mut forward)?;
/// assert!(out.join(PLOT_FILE).exists());
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const PLOT_FILE: &str = "loss.png";
/// The checkpoint root under the output directory.
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
/// # let out = std::env::temp_dir().join(format!("tang-doc-checkpoints_dir-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// use tang_nn::train::CHECKPOINTS_DIR;
/// let trainer = Trainer::new(&model, opt, &out, options)?;
/// assert_eq!(trainer.checkpoints().root(), out.join(CHECKPOINTS_DIR));
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// The name of the trainer's seed in [`TrainerState::seeds`] (dropout and the step
/// generators derive from it).
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
/// # let out = std::env::temp_dir().join(format!("tang-doc-step_seed-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// use tang_nn::train::STEP_SEED;
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// let checkpoint = trainer.save_checkpoint()?;
/// assert!(checkpoint.state().seeds.contains_key(STEP_SEED));
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const STEP_SEED: &str = "step";

/// An error from a user's closure.
pub(super) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The training loop over a model and an optimizer (see the module documentation).
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
/// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::zeros(&dev, &[4, 2])?;
/// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
/// // The loop of a PyTorch script: zero_grad, forward, loss.backward(), clip, step, log.
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// let summary = trainer.fit(&mut forward)?;
/// assert_eq!(summary.steps, 2);
/// assert!(out.join("metrics.jsonl").exists() && out.join("loss.png").exists());
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Trainer<'m, M: Module + ?Sized, A: Algorithm> {
    pub(super) model: &'m M,
    pub(super) optimizer: Optimizer<A>,
    pub(super) params: Vec<(String, Tensor)>,
    pub(super) options: TrainerOptions,
    pub(super) schedule: Option<Schedule>,
    pub(super) out_dir: PathBuf,
    pub(super) checkpoints: CheckpointDir,
    pub(super) metrics: Option<MetricsLog>,
    pub(super) history: Vec<MetricsRecord>,
    pub(super) progress: Option<Progress>,
    pub(super) interrupt: Option<Interrupt>,
    pub(super) state: TrainerState,
    pub(super) timer: StepTimer,
    pub(super) steps_since_lap: u64,
    /// The adapter's peak FLOP/s from tang's table, for `mfu` (see [`super::peak_flops`]).
    pub(super) peak_flops: Option<f64>,
}

impl<'m, M: Module + ?Sized, A: Algorithm> Trainer<'m, M, A> {
    /// A trainer of `model` by `optimizer` (built over
    /// `model.named_parameters()`), writing `metrics.jsonl`,
    /// `loss.png` and `checkpoints/` into `out_dir`.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-new-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let trainer = Trainer::new(&model, opt, &out, options)?; // creates out/checkpoints
    /// assert_eq!(trainer.state().step, 0);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::InvalidOption`]; [`TrainError::ParameterMismatch`] when the
    /// optimizer's parameters are not the model's trainable ones (same names, same
    /// buffers); [`TrainError::Checkpoint`] when `out_dir/checkpoints` cannot be created.
    pub fn new(
        model: &'m M,
        optimizer: Optimizer<A>,
        out_dir: impl Into<PathBuf>,
        options: TrainerOptions,
    ) -> Result<Self, TrainError> {
        options.validate()?;
        let params: Vec<(String, Tensor)> = model
            .named_parameters()
            .into_iter()
            .filter(|(_, p)| p.requires_grad())
            .collect();
        check_parameters(&params, &optimizer)?;
        let out_dir = out_dir.into();
        let checkpoints = CheckpointDir::open(out_dir.join(CHECKPOINTS_DIR), options.retention)?;
        let mut state = TrainerState::default();
        state.seeds.insert(STEP_SEED.into(), options.seed);
        let peak_flops = params
            .first()
            .and_then(|(_, p)| super::peak_flops(p.data().device().info()));
        Ok(Trainer {
            model,
            optimizer,
            params,
            options,
            schedule: None,
            out_dir,
            checkpoints,
            metrics: None,
            history: Vec::new(),
            progress: None,
            interrupt: None,
            state,
            timer: StepTimer::new(),
            steps_since_lap: 0,
            peak_flops,
        })
    }

    /// Sets the learning rate of every group from `schedule` before each step.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-with_schedule-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// use tang_nn::schedule::Schedule;
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?
    ///     .with_schedule(Schedule::warmup_cosine(0.1, 0.01, 1, 2)?); // lr set before each step
    /// trainer.step(&mut forward)?;
    /// assert_eq!(trainer.optimizer().lr(), 0.05); // warmup: 0.1 * (0 + 1) / (1 + 1)
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_schedule(mut self, schedule: Schedule) -> Self {
        self.schedule = Some(schedule);
        self
    }

    /// Shows progress on `progress` (default: [`Progress::new`], a bar on a terminal and
    /// plain lines when standard error is piped).
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-with_progress-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// use tang_nn::train::Progress;
    /// let progress = Progress::lines(Box::new(std::io::sink()), 2, 1)?; // quiet
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?.with_progress(progress);
    /// trainer.step(&mut forward)?;
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Stops [`Trainer::fit`] cleanly when `interrupt` is requested (by default `fit`
    /// installs the Ctrl-C handler itself: see [`TrainerOptions::handle_ctrl_c`]).
    ///
    /// ```no_run
    /// # use tang_nn::Module;
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss_with}};
    /// # use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
    /// # let opt = Sgd::new(model.named_parameters(), SgdOptions::default())?;
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-with_interrupt-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// use tang_nn::train::Interrupt;
    /// let stop = Interrupt::install()?; // Ctrl-C, or stop.request() from the program
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?.with_interrupt(stop.clone());
    /// stop.request();
    /// assert!(trainer.fit(&mut forward)?.interrupted); // saved a checkpoint and returned
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// One training step (see the module documentation); `forward` returns the loss.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-step-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// let report = trainer.step(&mut forward)?; // one optimizer step
    /// assert_eq!((report.step, report.host_reads_backward_to_step), (1, 0));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Step`] when `forward` fails; [`TrainError::Autograd`] when backward
    /// or the read of the loss fails; [`TrainError::Optim`]; [`TrainError::Io`] when
    /// the metrics cannot be appended.
    pub fn step<F, E>(&mut self, forward: &mut F) -> Result<StepReport, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
    {
        let step = self.state.step;
        // The monitored metric belongs to the step it was evaluated at: a checkpoint of
        // a later step without an evaluation has none (and never ranks as best).
        self.state.metric = None;
        if let Some(schedule) = &self.schedule {
            self.optimizer.set_lr(schedule.lr(step));
        }
        let lr = self.optimizer.lr();
        self.model.train();
        let (dropout_seed, mut generator) = step_randomness(self.options.seed, step);
        crate::nn::manual_seed(dropout_seed);
        let loss = forward(&mut StepContext {
            step,
            generator: &mut generator,
            loader: &mut self.state.loader,
        })
        .map_err(|e| TrainError::Step {
            step,
            source: e.into(),
        })?;
        let dev = loss.data().device().clone();
        // The last step of a run, and a step that an interrupt will end the run after,
        // are logged too.
        let log_now = (step + 1).is_multiple_of(self.options.log_every)
            || step + 1 == self.options.max_steps
            || self.interrupt.as_ref().is_some_and(Interrupt::requested);
        let reads_before = dev.stats().host_reads;
        let grads = loss.backward()?;
        let named = NamedGradients::new(&self.params, &grads);
        // The norm is computed on the device every step when clipping (the update takes
        // its coefficient), and only on log steps otherwise.
        let norm = if named.is_empty() {
            None
        } else if let Some(max_norm) = self.options.clip_grad_norm {
            let norm = grad_norm(named.tensors(), max_norm)?;
            self.optimizer
                .step_with_clip_coef(&named, &norm.clip_coef)?;
            Some(norm.total_norm)
        } else {
            let norm = if log_now {
                Some(grad_norm(named.tensors(), f64::INFINITY)?.total_norm)
            } else {
                None
            };
            self.optimizer.step(&named)?;
            norm
        };
        let host_reads_backward_to_step = dev.stats().host_reads - reads_before;
        self.state.step = step + 1;
        self.steps_since_lap += 1;
        let record = if log_now {
            Some(self.log_record(&loss, norm.as_ref(), lr)?)
        } else {
            None
        };
        Ok(StepReport {
            step: step + 1,
            host_reads_backward_to_step,
            record,
        })
    }

    /// The metrics of the step just taken: the loss and the gradient norm read back in
    /// one read, the time per step since the previous log.
    fn log_record(
        &mut self,
        loss: &Tensor,
        norm: Option<&tang_runtime::Tensor>,
        lr: f64,
    ) -> Result<MetricsRecord, TrainError> {
        let loss = loss.data().reshape(&[1])?;
        let values = match norm {
            Some(n) => cat(&[&loss, &n.reshape(&[1])?], 0)?.to_vec()?,
            None => loss.to_vec()?,
        };
        let mut record = MetricsRecord {
            step: self.state.step,
            loss: values.first().map(|&v| f64::from(v)),
            grad_norm: values.get(1).map(|&v| f64::from(v)),
            lr: Some(lr),
            ..MetricsRecord::default()
        };
        let steps = std::mem::take(&mut self.steps_since_lap);
        let per_step = match self.options.throughput {
            Some(Throughput::Samples(n) | Throughput::Tokens(n)) => n,
            None => 0,
        };
        if let Some((ms, items_per_sec)) = self.timer.lap(steps, steps.saturating_mul(per_step)) {
            record.ms_per_step = Some(ms);
            let peak = self.options.peak_flops.or(self.peak_flops);
            if let (Some(flops), Some(peak)) = (self.options.flops_per_step, peak) {
                record.mfu = Some(flops / (ms * 1e-3) / peak);
            }
            match self.options.throughput {
                Some(Throughput::Samples(_)) => record.samples_per_sec = Some(items_per_sec),
                Some(Throughput::Tokens(_)) => record.tokens_per_sec = Some(items_per_sec),
                None => {}
            }
        }
        Ok(record)
    }

    /// Runs `eval` in eval mode without recording gradients (dropout off), with the next
    /// step's generator (evaluation cannot shift training's random numbers: each step
    /// makes its own), and returns its value (a validation loss, read back by `eval`).
    /// Training mode is restored afterwards.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-evaluate-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// // with torch.no_grad(): model.eval(); val_loss = ...
    /// let val_loss = trainer.evaluate(&mut |_: &mut StepContext<'_>| {
    ///     Ok::<_, tang_nn::autograd::Error>(f64::from(mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean)?.to_vec()?[0]))
    /// })?;
    /// assert!(val_loss > 0.0);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Step`] when `eval` fails.
    pub fn evaluate<G, E>(&mut self, eval: &mut G) -> Result<f64, TrainError>
    where
        G: FnMut(&mut StepContext<'_>) -> Result<f64, E>,
        E: Into<BoxError>,
    {
        let step = self.state.step;
        let (_, mut generator) = step_randomness(self.options.seed, step);
        let mut loader = self.state.loader;
        self.model.eval();
        let value = no_grad(|| {
            eval(&mut StepContext {
                step,
                generator: &mut generator,
                loader: &mut loader,
            })
        });
        self.model.train();
        value.map_err(|e| TrainError::Step {
            step,
            source: e.into(),
        })
    }

    /// Draws the loss curve of [`Trainer::history`] into `out_dir/loss.png` now.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-plot-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.fit(&mut forward)?;
    /// let png = trainer.plot()?; // out/loss.png, redrawn now
    /// assert!(png.exists());
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`plot_loss_curve`].
    pub fn plot(&self) -> Result<PathBuf, TrainError> {
        let path = self.out_dir.join(PLOT_FILE);
        plot_loss_curve(&path, &self.history, self.options.plot)?;
        Ok(path)
    }

    /// Opens `metrics.jsonl` for this run, dropping records past the current step (an
    /// interrupted run's tail, logged again by the resumed one).
    pub(super) fn open_metrics(&mut self) -> Result<(), TrainError> {
        if self.metrics.is_none() {
            let (log, kept) =
                MetricsLog::open_through(self.out_dir.join(METRICS_FILE), self.state.step)?;
            self.metrics = Some(log);
            self.history = kept;
        }
        Ok(())
    }

    /// Appends `record` to `metrics.jsonl` and the history.
    pub(super) fn append(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        self.open_metrics()?;
        if let Some(log) = self.metrics.as_mut() {
            log.append(record)?;
        }
        self.history.push(record.clone());
        Ok(())
    }
}

/// The seed of the dropout generator and the step generator of step `step`: two draws
/// of the stream that `(seed, step)` derives, so neighbouring steps are independent.
fn step_randomness(seed: u64, step: u64) -> (u64, Generator) {
    let mut rng = SplitMix64::derive(seed, step);
    let dropout_seed = rng.next_u64();
    (dropout_seed, Generator::new(rng.next_u64()))
}

/// Checks that `optimizer` holds exactly the trainable `params`, by name and buffer.
fn check_parameters<A: Algorithm>(
    params: &[(String, Tensor)],
    optimizer: &Optimizer<A>,
) -> Result<(), TrainError> {
    let held: std::collections::HashMap<&str, &tang_runtime::Tensor> = optimizer.params().collect();
    for (name, p) in params {
        match held.get(name.as_str()) {
            Some(t) if t.same_buffer(p.data()) => {}
            Some(_) => {
                return Err(TrainError::ParameterMismatch {
                    detail: format!("its {name:?} is another tensor than the model's"),
                });
            }
            None => {
                return Err(TrainError::ParameterMismatch {
                    detail: format!("the model's parameter {name:?} is missing"),
                });
            }
        }
    }
    if held.len() != params.len() {
        let extra = held
            .keys()
            .find(|k| !params.iter().any(|(n, _)| n == *k))
            .map_or_else(String::new, |k| format!("{k:?}"));
        return Err(TrainError::ParameterMismatch {
            detail: format!("it holds {extra}, which is not a trainable parameter of the model"),
        });
    }
    Ok(())
}
