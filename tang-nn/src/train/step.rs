//! [`Trainer::step`]: one optimizer step (the schedule's learning rate, the user's
//! forward, backward, clipping, the update; in mixed precision the forward under
//! autocast, the loss scaled and the gradients unscaled before clipping) and its metrics
//! record, and
//! [`Trainer::evaluate`]; each step's random numbers derive from `(seed, step)`.

use tang_runtime::ops::Generator;
use tang_runtime::ops::cat;

use super::context::{StepContext, StepReport};
use super::metrics::MetricsRecord;
use super::options::Throughput;
use super::trainer::{BoxError, Trainer};
use super::{Interrupt, TrainError};
use crate::amp::GradScaler;
use crate::autograd::{Tensor, no_grad};
use crate::module::Module;
use crate::optim::{Algorithm, NamedGradients, Optimizer, grad_norm};
use crate::rng::SplitMix64;

impl<M: Module + ?Sized, A: Algorithm> Trainer<'_, M, A> {
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
    /// the metrics cannot be appended; under `mpirun`, [`TrainError::Distributed`] when
    /// the gradients cannot be averaged over the ranks.
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
        // Mixed precision: the forward under autocast (backward follows what each op
        // recorded, outside it, as PyTorch's recipe has it).
        let autocast = self.options.amp.then(|| crate::amp::autocast::enter(true));
        let loss = forward(&mut StepContext {
            step,
            generator: &mut generator,
            loader: &mut self.state.loader,
        });
        drop(autocast);
        let loss = loss.map_err(|e| TrainError::Step {
            step,
            source: e.into(),
        })?;
        let dev = loss.data().device().clone();
        // The last step of a run, and a step that an interrupt will end the run after,
        // are logged too.
        // Under mpirun a stop requested on any rank is taken by all after this step.
        self.stopping = self
            .replicas
            .any(self.interrupt.as_ref().is_some_and(Interrupt::requested))?;
        let log_now = (step + 1).is_multiple_of(self.options.log_every)
            || step + 1 == self.options.max_steps
            || self.stopping;
        let reads_before = dev.stats().host_reads;
        // Under mpirun: averaged over the ranks, bucket by bucket while backward runs.
        // In mixed precision, of the scaled loss, and unscaled before anything reads them.
        let grads = match &self.scaler {
            Some(scaler) => self.replicas.backward(&scaler.scale(&loss)?)?,
            None => self.replicas.backward(&loss)?,
        };
        let named = NamedGradients::new(&self.params, &grads);
        if let Some(scaler) = &mut self.scaler
            && !named.is_empty()
        {
            scaler.unscale_(&self.optimizer, &named)?;
        }
        // The norm is computed on the device every step when clipping (the update takes
        // its coefficient), and only on log steps otherwise.
        let norm = if named.is_empty() {
            None
        } else if let Some(max_norm) = self.options.clip_grad_norm {
            let norm = grad_norm(named.tensors(), max_norm)?;
            step_optimizer(
                &mut self.scaler,
                &mut self.optimizer,
                &named,
                Some(&norm.clip_coef),
            )?;
            Some(norm.total_norm)
        } else {
            let norm = if log_now {
                Some(grad_norm(named.tensors(), f64::INFINITY)?.total_norm)
            } else {
                None
            };
            step_optimizer(&mut self.scaler, &mut self.optimizer, &named, None)?;
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
        // Under mpirun the mean over the ranks (each rank's loss is over its shard);
        // the gradient norm is the same on every rank.
        let loss = match values.first() {
            Some(&v) => Some(self.replicas.mean(f64::from(v))?),
            None => None,
        };
        let mut record = MetricsRecord {
            step: self.state.step,
            loss,
            grad_norm: values.get(1).map(|&v| f64::from(v)),
            lr: Some(lr),
            ..MetricsRecord::default()
        };
        let steps = std::mem::take(&mut self.steps_since_lap);
        // Under mpirun every rank takes its own batch: the job's throughput is theirs.
        let per_step = match self.options.throughput {
            Some(Throughput::Samples(n) | Throughput::Tokens(n)) => {
                n.saturating_mul(self.replicas.world_size())
            }
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
    /// Training mode is restored afterwards. Under `mpirun` every rank must call it (the
    /// value returned is the mean over the ranks' shards).
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
    /// [`TrainError::Step`] when `eval` fails; under `mpirun`,
    /// [`TrainError::Distributed`] when its mean over the ranks fails.
    pub fn evaluate<G, E>(&mut self, eval: &mut G) -> Result<f64, TrainError>
    where
        G: FnMut(&mut StepContext<'_>) -> Result<f64, E>,
        E: Into<BoxError>,
    {
        let step = self.state.step;
        let (_, mut generator) = step_randomness(self.options.seed, step);
        let mut loader = self.state.loader;
        self.model.eval();
        // In mixed precision the evaluation runs under autocast too, as nanoGPT's does.
        let _autocast = self.options.amp.then(|| crate::amp::autocast::enter(true));
        let value = no_grad(|| {
            eval(&mut StepContext {
                step,
                generator: &mut generator,
                loader: &mut loader,
            })
        });
        self.model.train();
        let value = value.map_err(|e| TrainError::Step {
            step,
            source: e.into(),
        })?;
        // Under mpirun each rank evaluated its own shard: the mean over the ranks.
        self.replicas.mean(value)
    }
}

/// The optimizer step with the gradients times `clip_coef` (when given); in mixed
/// precision through the scaler, which skips it when the gradients overflowed, and the
/// scale updated.
fn step_optimizer<A: Algorithm>(
    scaler: &mut Option<GradScaler>,
    optimizer: &mut Optimizer<A>,
    grads: &NamedGradients<'_>,
    clip_coef: Option<&tang_runtime::Tensor>,
) -> Result<(), TrainError> {
    match (scaler, clip_coef) {
        (Some(scaler), Some(coef)) => {
            scaler.step_with_clip_coef(optimizer, grads, coef)?;
            scaler.update()?;
        }
        (Some(scaler), None) => {
            scaler.step(optimizer, grads)?;
            scaler.update()?;
        }
        (None, Some(coef)) => optimizer.step_with_clip_coef(grads, coef)?,
        (None, None) => optimizer.step(grads)?,
    }
    Ok(())
}

/// The seed of the dropout generator and the step generator of step `step`: two draws
/// of the stream that `(seed, step)` derives, so neighbouring steps are independent.
fn step_randomness(seed: u64, step: u64) -> (u64, Generator) {
    let mut rng = SplitMix64::derive(seed, step);
    let dropout_seed = rng.next_u64();
    (dropout_seed, Generator::new(rng.next_u64()))
}
