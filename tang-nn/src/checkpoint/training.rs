//! A training checkpoint: the model's weights as safetensors under PyTorch's names
//! ([`MODEL_FILE`]: `Module::state_dict`, tied parameters stored once as
//! `safetensors.torch.save_model` does), the optimizer's state by parameter name
//! ([`OPTIMIZER_FILE`]) and the trainer state, saved atomically by [`CheckpointDir`].
//! Plain functions, usable without the trainer.

use std::collections::BTreeMap;

use super::{Checkpoint, CheckpointDir, CheckpointError, TrainerState};
use crate::module::Module;
use crate::optim::{Algorithm, Optimizer};
use crate::safetensors::{FloatDtype, read_file, save_file};

/// The model's weights in a checkpoint (F32, exact).
pub const MODEL_FILE: &str = "model.safetensors";
/// The optimizer's state in a checkpoint.
pub const OPTIMIZER_FILE: &str = "optimizer.safetensors";

/// Saves `model`'s weights, `optimizer`'s state and `state` as one checkpoint of `dir`
/// (atomically; then the retention policy applies). Reads the weights and the state
/// buffers back from the device.
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
/// every shape equal; in place, so the optimizer's parameters see them) and its
/// optimizer state into `optimizer`. Returns the checkpoint's trainer state.
///
/// # Errors
/// [`CheckpointError::Load`] naming the file that does not load or does not fit.
pub fn load_training<M: Module + ?Sized, A: Algorithm>(
    checkpoint: &Checkpoint,
    model: &M,
    optimizer: &mut Optimizer<A>,
) -> Result<TrainerState, CheckpointError> {
    let weights = checkpoint.file(MODEL_FILE)?;
    let load_error = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |e: Box<dyn std::error::Error + Send + Sync>| CheckpointError::Load { path, source: e }
    };
    let file = read_file(&weights).map_err(|e| load_error(&weights)(e.into()))?;
    model
        .load_state_dict(&file.tensors, true)
        .map_err(|e| load_error(&weights)(e.into()))?;
    let opt_path = checkpoint.file(OPTIMIZER_FILE)?;
    optimizer
        .load(&opt_path)
        .map_err(|e| load_error(&opt_path)(e.into()))?;
    Ok(checkpoint.state().clone())
}
