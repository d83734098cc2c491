//! What a training step's closures are given ([`StepContext`]) and what a step and a
//! whole run report ([`StepReport`], [`FitSummary`]).

use tang_runtime::ops::Generator;

use super::metrics::MetricsRecord;
use crate::checkpoint::Checkpoint;
use crate::data::LoaderState;

/// What the forward and evaluation closures are given.
///
/// ```
/// # use tang_nn::autograd::{RawTensor, Tensor};
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss}};
/// # use tang_nn::optim::{Sgd, SgdOptions, named_parameters_of};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(named_parameters_of(&model), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-stepcontext-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::constant(RawTensor::zeros(&dev, &[4, 2])?);
/// # let y = Tensor::constant(RawTensor::full(&dev, &[4, 1], 1.0)?);
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss(&model.forward(&x)?, &y, Reduction::Mean);
/// let mut trainer = Trainer::new(&model, opt, &out, options)?;
/// trainer.step(&mut |ctx: &mut StepContext<'_>| {
///     let noisy = x.dropout(0.1, ctx.generator)?; // the step's own random numbers
///     mse_loss(&model.forward(&noisy)?, &y, Reduction::Mean)
/// })?;
/// # std::fs::remove_dir_all(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct StepContext<'a> {
    /// The step (0-based: the number of steps taken before this one).
    pub step: u64,
    /// A device generator for this step's own random draws (noise, augmentation, or
    /// dropout through [`Tensor::dropout`]), seeded from `(seed, step)`.
    pub generator: &'a mut Generator,
    /// Where a [`crate::data::DataLoader`] feeding the steps stands: set it after taking
    /// a batch and checkpoints carry it (`Trainer::state().loader` after a resume).
    pub loader: &'a mut Option<LoaderState>,
}

/// What one [`Trainer::step`] did.
///
/// ```
/// # use tang_nn::autograd::{RawTensor, Tensor};
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss}};
/// # use tang_nn::optim::{Sgd, SgdOptions, named_parameters_of};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(named_parameters_of(&model), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-stepreport-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::constant(RawTensor::zeros(&dev, &[4, 2])?);
/// # let y = Tensor::constant(RawTensor::full(&dev, &[4, 1], 1.0)?);
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss(&model.forward(&x)?, &y, Reduction::Mean);
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
    /// optimizer step: 0, because nothing there reads back.
    pub host_reads_backward_to_step: u64,
    /// The metrics of this step when it was a log step.
    pub record: Option<MetricsRecord>,
}

/// How a [`Trainer::fit`] run ended.
///
/// ```
/// # use tang_nn::autograd::{RawTensor, Tensor};
/// # use tang_nn::nn::{Linear, functional::{Reduction, mse_loss}};
/// # use tang_nn::optim::{Sgd, SgdOptions, named_parameters_of};
/// # use tang_nn::train::{StepContext, Trainer, TrainerOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let opt = Sgd::new(named_parameters_of(&model), SgdOptions::default())?;
/// # let out = std::env::temp_dir().join(format!("tang-doc-fitsummary-{}", std::process::id()));
/// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
/// # let x = Tensor::constant(RawTensor::zeros(&dev, &[4, 2])?);
/// # let y = Tensor::constant(RawTensor::full(&dev, &[4, 1], 1.0)?);
/// # let mut forward = |_: &mut StepContext<'_>| mse_loss(&model.forward(&x)?, &y, Reduction::Mean);
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
    /// Whether it stopped early because of Ctrl-C (or [`Interrupt::request`]).
    pub interrupted: bool,
    /// The checkpoint saved at the end.
    pub checkpoint: Checkpoint,
}
