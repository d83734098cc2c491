//! A training checkpoint: the model's weights as safetensors under PyTorch's names
//! ([`MODEL_FILE`]: `Module::state_dict`, tied parameters stored once as
//! `safetensors.torch.save_model` does), the optimizer's state by parameter name
//! ([`OPTIMIZER_FILE`]) and the trainer state, saved atomically by [`CheckpointDir`].
//! Plain functions, usable without the trainer.

use std::collections::BTreeMap;

use super::{Checkpoint, CheckpointDir, CheckpointError, TrainerState};
use crate::module::Module;
use crate::module::load::{Ties, stage};
use crate::optim::{Algorithm, Optimizer};
use crate::safetensors::{FloatDtype, read_file, save_file};

/// The model's weights in a checkpoint (F32, exact).
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-model_file-{}", std::process::id()));
/// # use tang_nn::nn::Linear;
/// # use tang_nn::optim::{AdamW, AdamWOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
/// use tang_nn::checkpoint::{MODEL_FILE, save_training};
/// use tang_nn::safetensors::read_file;
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// let checkpoint = save_training(&dir, &model, &opt, &TrainerState::default())?;
/// let weights = read_file(checkpoint.file(MODEL_FILE)?)?; // PyTorch reads it as a state_dict
/// assert!(weights.tensors.contains("weight") && weights.tensors.contains("bias"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MODEL_FILE: &str = "model.safetensors";
/// The optimizer's state in a checkpoint.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-optimizer_file-{}", std::process::id()));
/// # use tang_nn::nn::Linear;
/// # use tang_nn::optim::{AdamW, AdamWOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
/// use tang_nn::checkpoint::{OPTIMIZER_FILE, save_training};
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// let checkpoint = save_training(&dir, &model, &opt, &TrainerState::default())?;
/// assert!(checkpoint.file(OPTIMIZER_FILE)?.exists());
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";

/// Saves `model`'s weights, `optimizer`'s state and `state` as one checkpoint of `dir`
/// (atomically; then the retention policy applies). Reads the weights and the state
/// buffers back from the device.
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-save_training-{}", std::process::id()));
/// # use tang_nn::nn::Linear;
/// # use tang_nn::optim::{AdamW, AdamWOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
/// use tang_nn::checkpoint::save_training;
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// // torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 100}, ...)
/// let checkpoint = save_training(&dir, &model, &opt, &TrainerState { step: 100, ..TrainerState::default() })?;
/// assert!(checkpoint.path().ends_with("checkpoint-0000000100"));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`CheckpointError::Writer`] when a file cannot be written or a buffer read; as
/// [`CheckpointDir::save_with`].
pub fn save_training<M: Module + ?Sized, A: Algorithm>(
    dir: &CheckpointDir,
    model: &M,
    optimizer: &Optimizer<A>,
    state: &TrainerState,
) -> Result<Checkpoint, CheckpointError> {
    dir.save_with(
        state,
        |path| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
            save_file(
                path.join(MODEL_FILE),
                &model.state_dict(),
                FloatDtype::F32,
                &BTreeMap::new(),
            )?;
            optimizer.save(path.join(OPTIMIZER_FILE))?;
            Ok(())
        },
    )
}

/// Loads `checkpoint`'s weights into `model` (strictly: every key present, none extra,
/// every shape equal, one name per tie as [`crate::safetensors::load_model`] takes them;
/// in place, so the optimizer's parameters see them) and its optimizer state into
/// `optimizer`. Returns the checkpoint's trainer state.
///
/// Every file is read and checked, and the weights uploaded, before anything is written:
/// a checkpoint that is refused (a weights or optimizer file missing, truncated, of
/// another model or optimizer) leaves `model` and `optimizer` as they were, so the caller
/// can start fresh instead. (Only a device failure during the final copies could leave
/// part of the weights written; the device is lost then anyway.)
///
/// ```
/// # use tang_nn::Module;
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-load_training-{}", std::process::id()));
/// # use tang_nn::nn::Linear;
/// # use tang_nn::optim::{AdamW, AdamWOptions};
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// # let model = Linear::new(&dev, 2, 1, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// # let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
/// use tang_nn::checkpoint::{load_training, save_training};
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// save_training(&dir, &model, &opt, &TrainerState { step: 100, ..TrainerState::default() })?;
/// let latest = dir.latest()?.ok_or("saved above")?;
/// let state = load_training(&latest, &model, &mut opt)?; // model.load_state_dict(...); opt.load_state_dict(...)
/// assert_eq!(state.step, 100);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`CheckpointError::Load`] naming the file that does not load or does not fit.
pub fn load_training<M: Module + ?Sized, A: Algorithm>(
    checkpoint: &Checkpoint,
    model: &M,
    optimizer: &mut Optimizer<A>,
) -> Result<TrainerState, CheckpointError> {
    let load_error = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |e: Box<dyn std::error::Error + Send + Sync>| CheckpointError::Load { path, source: e }
    };
    // The weights: read, checked against the model and uploaded, not yet copied in.
    let weights = checkpoint.file(MODEL_FILE)?;
    let file = read_file(&weights).map_err(|e| load_error(&weights)(e.into()))?;
    let staged = stage(model, &file.tensors, true, Ties::OneName)
        .map_err(|e| load_error(&weights)(e.into()))?;
    // The optimizer state: `Optimizer::load` reads and checks all of it before it
    // changes anything, so a refusal here leaves both the optimizer and the model as
    // they were.
    let opt_path = checkpoint.file(OPTIMIZER_FILE)?;
    optimizer
        .load(&opt_path)
        .map_err(|e| load_error(&opt_path)(e.into()))?;
    staged.apply().map_err(|e| load_error(&weights)(e.into()))?;
    Ok(checkpoint.state().clone())
}
