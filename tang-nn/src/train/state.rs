//! A [`Trainer`]'s state and checkpoints: what it has done so far, saving it, and resuming
//! a run from a checkpoint.

use std::path::Path;

use super::TrainError;
use super::metrics::MetricsRecord;
use super::trainer::{STEP_SEED, Trainer};
use crate::amp::{GradScaler, GradScalerOptions};
use crate::checkpoint::{
    Checkpoint, CheckpointDir, CheckpointError, TrainerState, load_training, save_training,
};
use crate::module::Module;
use crate::optim::{Algorithm, Optimizer};

impl<M: Module + ?Sized, A: Algorithm> Trainer<'_, M, A> {
    /// The trainer state: steps taken, seed, loader position, metrics.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-state-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.step(&mut forward)?;
    /// assert_eq!(trainer.state().step, 1);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> &TrainerState {
        &self.state
    }

    /// The metrics records of this run (and, after a resume, of the run before it).
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-history-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.fit(&mut forward)?;
    /// let last = trainer.history().last().ok_or("log_every is 1")?;
    /// assert!(last.step == 2 && last.loss.is_some()); // the last logged loss
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn history(&self) -> &[MetricsRecord] {
        &self.history
    }

    /// The optimizer.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-optimizer-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let trainer = Trainer::new(&model, opt, &out, options)?;
    /// assert_eq!(trainer.optimizer().lr(), 1e-3);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn optimizer(&self) -> &Optimizer<A> {
        &self.optimizer
    }

    /// The gradient scaler of a mixed-precision run ([`TrainerOptions::amp`]); `None`
    /// in f32.
    ///
    /// [`TrainerOptions::amp`]: super::TrainerOptions::amp
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-grad_scaler-{}", std::process::id()));
    /// let options = TrainerOptions { amp: true, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// let trainer = Trainer::new(&model, opt, &out, options)?;
    /// assert_eq!(trainer.grad_scaler().map(|s| s.get_scale()), Some(65536.0));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn grad_scaler(&self) -> Option<&GradScaler> {
        self.scaler.as_ref()
    }

    /// The output directory.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-out_dir-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let trainer = Trainer::new(&model, opt, &out, options)?;
    /// assert_eq!(trainer.out_dir(), out.as_path());
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn out_dir(&self) -> &Path {
        &self.out_dir
    }

    /// The checkpoint store (`out_dir/checkpoints`).
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-checkpoints-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.step(&mut forward)?;
    /// trainer.save_checkpoint()?;
    /// assert_eq!(trainer.checkpoints().list()?.len(), 1);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoints(&self) -> &CheckpointDir {
        &self.checkpoints
    }

    /// Continues from the most recent checkpoint in `out_dir/checkpoints`, if there is
    /// one; returns its step.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-resume_latest-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, Sgd::new(model.named_parameters(), SgdOptions::default())?, &out, options.clone())?;
    /// trainer.step(&mut forward)?;
    /// trainer.save_checkpoint()?;
    /// // A new process: the same model, optimizer and directory continue from step 1.
    /// let mut again = Trainer::new(&model, opt, &out, options)?;
    /// assert_eq!(again.resume_latest()?, Some(1));
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Under `mpirun` every rank resumes the checkpoint rank 0 finds latest.
    ///
    /// # Errors
    /// As [`Trainer::resume`]; under `mpirun`, [`TrainError::InvalidOption`] when this
    /// rank does not see rank 0's checkpoint (the output directory is not shared), and
    /// [`TrainError::Distributed`].
    pub fn resume_latest(&mut self) -> Result<Option<u64>, TrainError> {
        // Under mpirun every rank resumes rank 0's latest checkpoint, even when one was
        // written while another rank listed the directory.
        let latest = self.checkpoints.list()?.pop().map(|(step, _)| step);
        let step = self.replicas.main_value(latest.unwrap_or(u64::MAX))?;
        if step == u64::MAX {
            return Ok(None);
        }
        let checkpoint = self.checkpoint_of_step(step)?;
        self.resume(&checkpoint)?;
        Ok(Some(step))
    }

    /// The checkpoint of `step` in `out_dir/checkpoints`, which rank 0 wrote.
    fn checkpoint_of_step(&self, step: u64) -> Result<Checkpoint, TrainError> {
        let found = self
            .checkpoints
            .list()?
            .into_iter()
            .find(|(s, _)| *s == step);
        let Some((_, path)) = found else {
            return Err(TrainError::InvalidOption {
                detail: format!(
                    "rank 0 has a checkpoint of step {step} in {}, this rank does not; \
                     put the output directory on a file system every rank shares",
                    self.checkpoints.root().display()
                ),
            });
        };
        Ok(Checkpoint::load(path)?)
    }

    /// Continues from `checkpoint`: the weights (strictly), the optimizer state and, in
    /// mixed precision, the gradient scaler's state are loaded, and the step, the seed
    /// (which replaces [`TrainerOptions::seed`](super::TrainerOptions::seed)), the loader
    /// position (from which [`StepContext::next_batch`](super::StepContext::next_batch)
    /// continues) and the metrics come from its trainer state. Records that an interrupted
    /// run logged after the checkpoint are dropped from `metrics.jsonl` when the run goes
    /// on.
    ///
    /// A checkpoint that is refused changes nothing: its trainer state, weights and
    /// optimizer state are all read and checked before the model, the optimizer or the
    /// trainer is written to (see [`load_training`]), so after the error the trainer is
    /// where it was and may start fresh. The loader position is the one part checked
    /// later: the trainer does not hold the loader, so the position is checked against it
    /// when [`StepContext::next_batch`](super::StepContext::next_batch) first resumes it
    /// ([`DataError::Resume`](crate::data::DataError::Resume) there, with the loader
    /// unchanged).
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-resume-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, Sgd::new(model.named_parameters(), SgdOptions::default())?, &out, options.clone())?;
    /// trainer.step(&mut forward)?;
    /// let saved = trainer.save_checkpoint()?;
    /// let mut again = Trainer::new(&model, opt, &out, options)?;
    /// again.resume(&saved)?;
    /// assert_eq!(again.state().step, 1);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Checkpoint`] when a file does not load or does not fit the model or
    /// the optimizer.
    pub fn resume(&mut self, checkpoint: &Checkpoint) -> Result<(), TrainError> {
        // Checked before anything is loaded, so a refused checkpoint changes nothing.
        let Some(&seed) = checkpoint.state().seeds.get(STEP_SEED) else {
            return Err(TrainError::Checkpoint(CheckpointError::Corrupt {
                path: checkpoint.path().to_path_buf(),
                detail: format!("its trainer state has no {STEP_SEED:?} seed"),
            }));
        };
        // The scaler's state is checked before anything is loaded too. A checkpoint of
        // an f32 run resumed in mixed precision starts a fresh scaler (there is no
        // scale to continue from); one of a mixed-precision run resumed in f32 leaves its
        // scaler state unused.
        let scaler = match (&self.scaler, &checkpoint.state().grad_scaler) {
            (Some(_), Some(saved)) => {
                let mut scaler = GradScaler::new(GradScalerOptions::default())?;
                scaler.load_state_dict(saved).map_err(|e| {
                    TrainError::Checkpoint(CheckpointError::Corrupt {
                        path: checkpoint.path().to_path_buf(),
                        detail: format!("its gradient scaler state does not load: {e}"),
                    })
                })?;
                Some(scaler)
            }
            (Some(_), None) => Some(GradScaler::new(GradScalerOptions::default())?),
            (None, _) => None,
        };
        let state = load_training(checkpoint, self.model, &mut self.optimizer)?;
        self.options.seed = seed;
        self.state = state;
        self.scaler = scaler;
        self.metrics = None;
        Ok(())
    }

    /// Saves a checkpoint of the current step (weights, optimizer state, trainer state)
    /// into `out_dir/checkpoints`, applying the retention policy.
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
    /// # let out = std::env::temp_dir().join(format!("tang-doc-trainer-save_checkpoint-{}", std::process::id()));
    /// # let options = TrainerOptions { log_every: 1, handle_ctrl_c: false, ..TrainerOptions::new(2) };
    /// # let x = Tensor::zeros(&dev, &[4, 2])?;
    /// # let y = Tensor::full(&dev, &[4, 1], 1.0)?;
    /// # let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    /// let mut trainer = Trainer::new(&model, opt, &out, options)?;
    /// trainer.step(&mut forward)?;
    /// let checkpoint = trainer.save_checkpoint()?; // weights, optimizer and trainer state
    /// assert_eq!(checkpoint.state().step, 1);
    /// # std::fs::remove_dir_all(&out)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// Under `mpirun` rank 0 writes it and the other ranks open it once written.
    ///
    /// # Errors
    /// [`TrainError::Checkpoint`] (also when this step was already saved); under
    /// `mpirun`, as [`Trainer::resume_latest`].
    pub fn save_checkpoint(&mut self) -> Result<Checkpoint, TrainError> {
        // Under mpirun rank 0 writes it (every rank holds the same weights and state);
        // the others wait for it and open it.
        self.state.grad_scaler = self.scaler.as_ref().and_then(GradScaler::state_dict);
        if self.replicas.is_main() {
            let saved = save_training(&self.checkpoints, self.model, &self.optimizer, &self.state);
            self.replicas.barrier()?;
            return Ok(saved?);
        }
        self.replicas.barrier()?;
        self.checkpoint_of_step(self.state.step)
    }
}
