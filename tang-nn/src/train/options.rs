//! What a [`super::Trainer`] does besides stepping: how often it logs, evaluates and
//! saves, whether it clips, and how it counts throughput.

use crate::checkpoint::Retention;

use super::TrainError;
use super::plot::PlotOptions;

/// What one step processes, for the throughput column of the metrics.
///
/// ```
/// use tang_nn::train::{Throughput, TrainerOptions};
/// // A language model's batch of 12 windows of 1024 tokens: tokens per second are logged.
/// let options = TrainerOptions { throughput: Some(Throughput::Tokens(12 * 1024)), ..TrainerOptions::new(5000) };
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throughput {
    /// `n` samples per step (logged as samples per second).
    Samples(u64),
    /// `n` tokens per step (logged as tokens per second; a language model's
    /// `batch_size * block_size`).
    Tokens(u64),
}

/// A [`super::Trainer`]'s schedule of logging, evaluation and checkpoints, with
/// nanoGPT-like defaults.
///
/// ```
/// use tang_nn::train::TrainerOptions;
/// // nanoGPT's train.py: max_iters 5000, eval_interval 250, log_interval 10, grad_clip 1.0
/// let options = TrainerOptions {
///     eval_every: 250,
///     clip_grad_norm: Some(1.0),
///     checkpoint_every: 1000,
///     ..TrainerOptions::new(5000)
/// };
/// options.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TrainerOptions {
    /// Steps to train in total (a resumed run continues up to it).
    pub max_steps: u64,
    /// Read the loss back (the one host read of a log interval), append a metrics record
    /// and update the progress every `log_every` steps (default 10).
    pub log_every: u64,
    /// Run the evaluation function every `eval_every` steps and after the last one; 0:
    /// never (default 0).
    pub eval_every: u64,
    /// Save a checkpoint every `checkpoint_every` steps; 0: only at the end (default
    /// 0). A run also saves at the end and when interrupted.
    pub checkpoint_every: u64,
    /// Clip the gradients to this global L2 norm (nanoGPT's `grad_clip`, 1.0); `None`:
    /// no clipping (default `None`).
    pub clip_grad_norm: Option<f64>,
    /// Train in mixed precision, PyTorch's AMP recipe (default false): the step function
    /// runs under [`autocast(F16)`](crate::amp::autocast), the loss is scaled by a
    /// [`GradScaler`](crate::amp::GradScaler) with PyTorch's defaults before backward, the
    /// gradients are unscaled before clipping, and a step whose gradients overflow is
    /// skipped (the scale backs off). The scaler's state is saved in checkpoints and
    /// restored on resume. Parameters and optimizer state stay f32. Each step reads one
    /// value back (the scaler's inf/NaN count), as PyTorch's `scaler.step` does.
    pub amp: bool,
    /// What a step processes, for samples or tokens per second (default `None`: not
    /// logged). Under `mpirun`, what one rank's step processes; the rate logged is the
    /// job's (times the number of ranks).
    pub throughput: Option<Throughput>,
    /// The model's FLOPs per training step (forward and backward), for the logged model
    /// FLOPs utilisation (`mfu`); e.g. `Gpt::flops_per_token(block) * tokens per step`,
    /// nanoGPT's count. Default `None`: not logged.
    pub flops_per_step: Option<f64>,
    /// The adapter's peak FLOP/s that `mfu` is a share of. Default `None`: looked up by
    /// the adapter's name ([`super::training_peak_flops`]: the fp16 tensor-core peak with
    /// `amp` on tensor cores, else the fp32 one); `mfu` is not logged for an adapter not
    /// in that table unless this is given.
    pub peak_flops: Option<f64>,
    /// Seed of the device generator handed to each step (dropout; default 0).
    pub seed: u64,
    /// Which checkpoints to keep (default: the 3 most recent and the best).
    pub retention: Retention,
    /// Size of the loss-curve PNG.
    pub plot: PlotOptions,
    /// Whether [`super::Trainer::fit`] installs the Ctrl-C handler ([`super::Interrupt`])
    /// when none was given with `with_interrupt`, so that Ctrl-C finishes the step, saves
    /// and returns (default true; the handler is process-wide: turn this off when the
    /// program handles SIGINT itself, or `fit` fails with [`TrainError::Interrupt`]).
    pub handle_ctrl_c: bool,
}

impl TrainerOptions {
    /// The defaults, for a run of `max_steps` steps.
    ///
    /// ```
    /// let options = tang_nn::train::TrainerOptions::new(100);
    /// assert_eq!((options.log_every, options.eval_every, options.clip_grad_norm), (10, 0, None));
    /// ```
    pub fn new(max_steps: u64) -> TrainerOptions {
        TrainerOptions {
            max_steps,
            log_every: 10,
            eval_every: 0,
            checkpoint_every: 0,
            clip_grad_norm: None,
            amp: false,
            throughput: None,
            flops_per_step: None,
            peak_flops: None,
            seed: 0,
            retention: Retention::default(),
            plot: PlotOptions::default(),
            handle_ctrl_c: true,
        }
    }

    /// Checks the options.
    ///
    /// ```
    /// use tang_nn::train::TrainerOptions;
    /// assert!(TrainerOptions { clip_grad_norm: Some(-1.0), ..TrainerOptions::new(10) }.validate().is_err());
    /// ```
    ///
    /// # Errors
    /// [`TrainError::InvalidOption`] for a zero `log_every` or a negative or NaN
    /// `clip_grad_norm`.
    pub fn validate(&self) -> Result<(), TrainError> {
        if self.log_every == 0 {
            return Err(TrainError::InvalidOption {
                detail: "log_every is 0; pass at least 1".into(),
            });
        }
        // NaN fails `c >= 0.0` too.
        if let Some(c) = self.clip_grad_norm
            && c.partial_cmp(&0.0).is_none_or(|o| o.is_lt())
        {
            return Err(TrainError::InvalidOption {
                detail: format!("clip_grad_norm is {c}; pass a norm of at least 0, or None"),
            });
        }
        Ok(())
    }
}
