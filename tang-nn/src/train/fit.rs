//! [`Trainer::fit`]: the loop over [`Trainer::step`] with evaluation, logging,
//! checkpoints, Ctrl-C and the loss curve.

use super::context::{FitSummary, StepContext};
use super::metrics::{MetricsRecord, StepTimer};
use super::trainer::{BoxError, Trainer};
use super::{Interrupt, Progress, TrainError};
use crate::autograd::Tensor;
use crate::checkpoint::Checkpoint;
use crate::module::Module;
use crate::optim::Algorithm;
// web-time: std's clock panics in a browser (wasm32).
use web_time::Instant;

impl<M: Module + ?Sized, A: Algorithm> Trainer<'_, M, A> {
    /// Trains up to `max_steps` (from the current step: 0, or a resumed checkpoint's):
    /// logs and checkpoints as the options say, without evaluation; saves a checkpoint and
    /// draws the loss curve at the end or when interrupted.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-fit-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// let summary = trainer.fit(&mut forward)?; // for step in range(max_steps): ...
    /// assert_eq!((summary.steps, summary.interrupted), (2, false));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Trainer::step`] and [`Trainer::save_checkpoint`].
    pub fn fit<F, E>(&mut self, mut forward: F) -> Result<FitSummary, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
    {
        self.run(&mut forward, None)
    }

    /// [`Trainer::fit`] with `eval` (returning a validation loss) run every `eval_every`
    /// steps and after the last one; its value is logged as `val_loss` and ranks the
    /// checkpoints for keep-best.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-fit_with_eval-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let options = TrainerOptions { eval_every: 1, ..options };
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// let mut eval = |_: &mut StepContext<'_>| {
    ///     Ok::<_, tang_nn::autograd::Error>(f64::from(mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean)?.to_vec()?[0]))
    /// };
    /// trainer.fit_with_eval(&mut forward, &mut eval)?;
    /// assert!(trainer.history().iter().any(|r| r.val_loss.is_some()));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Trainer::fit`]; [`TrainError::Step`] when `eval` fails.
    pub fn fit_with_eval<F, E, G, E2>(
        &mut self,
        mut forward: F,
        mut eval: G,
    ) -> Result<FitSummary, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
        G: FnMut(&mut StepContext<'_>) -> Result<f64, E2>,
        E2: Into<BoxError>,
    {
        let mut eval = |ctx: &mut StepContext<'_>| eval(ctx).map_err(Into::into);
        self.run(&mut forward, Some(&mut eval))
    }

    /// The loop of [`Trainer::fit`].
    #[allow(clippy::type_complexity)]
    fn run<F, E>(
        &mut self,
        forward: &mut F,
        mut eval: Option<&mut dyn FnMut(&mut StepContext<'_>) -> Result<f64, BoxError>>,
    ) -> Result<FitSummary, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
    {
        let result = self.run_with_progress(forward, &mut eval);
        // Under mpirun a failing rank ends the job with its error instead of leaving the
        // others waiting for it in a collective.
        self.replicas.end_job_on_error(result)
    }

    /// [`Trainer::run`] up to the error handling: the metrics file, Ctrl-C, and the
    /// progress display around [`Trainer::run_steps`].
    #[allow(clippy::type_complexity)]
    fn run_with_progress<F, E>(
        &mut self,
        forward: &mut F,
        eval: &mut Option<&mut dyn FnMut(&mut StepContext<'_>) -> Result<f64, BoxError>>,
    ) -> Result<FitSummary, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
    {
        self.open_metrics()?;
        if self.interrupt.is_none() && self.options.handle_ctrl_c {
            self.interrupt = Some(Interrupt::install()?);
        }
        let mut progress = match self.progress.take() {
            Some(p) if self.replicas.is_main() => p,
            // Under mpirun rank 0 shows the progress; the other ranks' would repeat it.
            _ if !self.replicas.is_main() => {
                Progress::lines(Box::new(std::io::sink()), self.options.max_steps, 1)?
            }
            _ => Progress::new(self.options.max_steps),
        };
        let result = self.run_steps(forward, eval, &mut progress);
        progress.finish();
        self.progress = Some(progress);
        result
    }

    /// The steps of [`Trainer::run`], with progress shown on `progress`.
    #[allow(clippy::type_complexity)]
    fn run_steps<F, E>(
        &mut self,
        forward: &mut F,
        eval: &mut Option<&mut dyn FnMut(&mut StepContext<'_>) -> Result<f64, BoxError>>,
        progress: &mut Progress,
    ) -> Result<FitSummary, TrainError>
    where
        F: FnMut(&mut StepContext<'_>) -> Result<Tensor, E>,
        E: Into<BoxError>,
    {
        let opts = self.options.clone();
        let mut saved: Option<Checkpoint> = None;
        let mut interrupted = false;
        self.timer = StepTimer::new();
        self.steps_since_lap = 0;
        while self.state.step < opts.max_steps {
            let report = self.step(forward)?;
            let done = report.step;
            let mut record = report.record;
            let eval_now = opts.eval_every > 0
                && (done.is_multiple_of(opts.eval_every) || done == opts.max_steps);
            if let (true, Some(eval)) = (eval_now, eval.as_mut()) {
                // Timed apart from the steps: the training work still queued is waited
                // for first, so that it is not counted as evaluation time.
                self.sync_device()?;
                let started = Instant::now();
                let val = self.evaluate(eval)?;
                let took = started.elapsed();
                self.timer.exclude(took);
                self.note_metric(val);
                let r = record.get_or_insert_with(|| MetricsRecord {
                    step: done,
                    ..MetricsRecord::default()
                });
                r.val_loss = Some(val);
                r.eval_ms = Some(took.as_secs_f64() * 1e3);
            }
            // Decided in the step, on every rank alike under mpirun.
            interrupted = self.stopping;
            let periodic = opts.checkpoint_every > 0 && done.is_multiple_of(opts.checkpoint_every);
            if periodic || interrupted || done == opts.max_steps {
                self.sync_device()?;
                let started = Instant::now();
                saved = Some(self.save_checkpoint()?);
                let took = started.elapsed();
                self.timer.exclude(took);
                let r = record.get_or_insert_with(|| MetricsRecord {
                    step: done,
                    ..MetricsRecord::default()
                });
                r.checkpoint_ms = Some(took.as_secs_f64() * 1e3);
            }
            if let Some(r) = &record {
                self.append(r)?;
                progress.update(r)?;
            }
            if interrupted {
                progress.println(&format!(
                    "interrupted: stopped after step {done}, checkpoint saved"
                ))?;
                break;
            }
        }
        let checkpoint = match saved {
            Some(c) => c,
            // Nothing to do (already at max_steps): the checkpoint of this step, if any.
            None => match self.checkpoints.latest()? {
                Some(c) if c.state().step == self.state.step => c,
                _ => self.save_checkpoint()?,
            },
        };
        if self
            .history
            .iter()
            .any(|r| r.loss.is_some() || r.val_loss.is_some())
        {
            self.plot()?;
        }
        Ok(FitSummary {
            steps: self.state.step,
            interrupted,
            checkpoint,
        })
    }

    /// Waits for the GPU to finish the work queued so far (the steps' launches), so that
    /// what is timed next starts on an idle GPU. Nothing to wait for without parameters.
    fn sync_device(&self) -> Result<(), TrainError> {
        if let Some((_, p)) = self.params.first() {
            p.data().device().sync().map_err(|e| TrainError::Step {
                step: self.state.step,
                source: e.into(),
            })?;
        }
        Ok(())
    }

    /// Records an evaluation's value as the current metric, and as the best when it is.
    fn note_metric(&mut self, value: f64) {
        if !value.is_finite() {
            self.state.metric = None;
            return;
        }
        self.state.metric = Some(value);
        let mode = self.options.retention.mode;
        if self
            .state
            .best_metric
            .is_none_or(|best| mode.is_better(value, best))
        {
            self.state.best_metric = Some(value);
        }
    }
}
