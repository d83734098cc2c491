//! `--resume` as the training examples take it.

use tang_nn::Module;
use tang_nn::optim::Algorithm;
use tang_nn::train::Trainer;

/// With `resume`, continues from the latest checkpoint in `out` (says which, or that
/// there is none); without it, refuses to start over a directory that holds checkpoints,
/// so one run never mixes its checkpoints and metrics with another's.
///
/// # Errors
/// Without `resume` when `out` holds checkpoints (the message says to pass `--resume` or
/// another `--out`); the trainer's error when a checkpoint cannot be read.
pub fn resume_or_refuse<M: Module + ?Sized, A: Algorithm>(
    trainer: &mut Trainer<'_, M, A>,
    resume: bool,
    out: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    if resume {
        match trainer.resume_latest()? {
            Some(step) => println!("resumed from the checkpoint of step {step} in {out}"),
            None => println!("no checkpoint in {out}: starting from step 0"),
        }
    } else if trainer.checkpoints().latest()?.is_some() {
        return Err(format!("{out} holds checkpoints: pass --resume, or another --out").into());
    }
    Ok(())
}
