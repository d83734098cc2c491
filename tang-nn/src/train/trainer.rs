//! [`Trainer`]: the loop a user would otherwise write around a [`Module`] and an
//! [`Optimizer`]. Each step: the learning rate from the schedule, the user's forward and
//! loss (a closure), `backward`, clipping by global norm on the device, the optimizer step
//! (the clip coefficient taken inside the update kernels); in mixed precision
//! ([`TrainerOptions::amp`]) the forward under autocast and the loss scaled, the gradients
//! unscaled before clipping, an overflowing step skipped. Every `log_every` steps the
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

use super::metrics::{MetricsLog, MetricsRecord, StepTimer};
use super::options::TrainerOptions;
use super::plot::plot_loss_curve;
use super::replicas::Replicas;
use super::{Interrupt, Progress, TrainError};
use crate::amp::{GradScaler, GradScalerOptions};
use crate::autograd::Tensor;
use crate::checkpoint::{CheckpointDir, TrainerState};
use crate::module::Module;
use crate::optim::{Algorithm, Optimizer};
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
    /// The adapter's peak FLOP/s from tang's table, for `mfu` (see
    /// [`super::training_peak_flops`]).
    pub(super) peak_flops: Option<f64>,
    /// This process's part in a data-parallel job (nothing special in one process).
    pub(super) replicas: Replicas,
    /// Whether a stop was requested (on any rank) by the last step.
    pub(super) stopping: bool,
    /// The loss scaler of a mixed-precision run ([`TrainerOptions::amp`]).
    pub(super) scaler: Option<GradScaler>,
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
    /// buffers); [`TrainError::Checkpoint`] when `out_dir/checkpoints` cannot be created;
    /// [`TrainError::Distributed`] when, under `mpirun`, rank 0's parameters cannot be
    /// broadcast.
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
        // Under mpirun: every rank starts from rank 0's weights.
        let replicas = Replicas::new(&params)?;
        let out_dir = out_dir.into();
        let checkpoints = CheckpointDir::open(out_dir.join(CHECKPOINTS_DIR), options.retention)?;
        let mut state = TrainerState::default();
        state.seeds.insert(STEP_SEED.into(), options.seed);
        let scaler = if options.amp {
            Some(GradScaler::new(GradScalerOptions::default())?)
        } else {
            None
        };
        let peak_flops = params.first().and_then(|(_, p)| {
            super::peak::training_peak_flops(p.data().device().info(), options.amp)
        });
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
            replicas,
            stopping: false,
            scaler,
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

    /// Draws the loss curve of [`Trainer::history`] into `out_dir/loss.png` now (under
    /// `mpirun`, rank 0 draws it).
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
        // Under mpirun rank 0 draws it; the others' histories are the same.
        if self.replicas.is_main() {
            plot_loss_curve(&path, &self.history, self.options.plot)?;
        }
        Ok(path)
    }

    /// Opens `metrics.jsonl` for this run, dropping records past the current step (an
    /// interrupted run's tail, logged again by the resumed one).
    pub(super) fn open_metrics(&mut self) -> Result<(), TrainError> {
        // Under mpirun rank 0 writes the file; the others keep their history in memory.
        if self.metrics.is_none() && self.replicas.is_main() {
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
