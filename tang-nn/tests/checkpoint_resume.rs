//! A checkpoint that is refused changes nothing: `load_training` and `Trainer::resume`
//! read and check every file of a checkpoint before they write into the model, the
//! optimizer or the trainer, so a caller that falls back to a fresh start after the error
//! starts from its own weights, not from a mix of the checkpoint's and its own.
//!
//! A checkpoint of AdamW over nanoGPT's two parameter groups resumes: its state, kept in
//! one flat buffer per group, is saved whole, and the resumed run ends at the
//! uninterrupted run's weights.

use std::path::{Path, PathBuf};

use tang_nn::Module;
use tang_nn::autograd::Tensor;
use tang_nn::checkpoint::{
    Checkpoint, CheckpointDir, CheckpointError, MODEL_FILE, OPTIMIZER_FILE, Retention,
    load_training,
};
use tang_nn::nn::functional::{Reduction, mse_loss_with};
use tang_nn::nn::{Linear, Sequential, Tanh};
use tang_nn::optim::{AdamW, AdamWOptions, Sgd, SgdOptions, decay_groups};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::Device;
use tang_nn::train::{Progress, StepContext, Trainer, TrainerOptions};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("checkpoint-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn model(dev: &Device, seed: u64) -> Linear {
    Linear::new(dev, 3, 2, true, &mut SplitMix64::new(seed)).unwrap()
}

fn adamw(model: &Linear) -> AdamW {
    AdamW::new(model.named_parameters(), AdamWOptions::default()).unwrap()
}

fn weights(model: &impl Module) -> Vec<Vec<f32>> {
    model
        .named_parameters()
        .iter()
        .map(|(_, p)| p.to_vec().unwrap())
        .collect()
}

fn options() -> TrainerOptions {
    TrainerOptions {
        log_every: 1,
        handle_ctrl_c: false,
        ..TrainerOptions::new(10)
    }
}

fn quiet() -> Progress {
    Progress::lines(Box::new(std::io::sink()), 10, 1).unwrap()
}

/// Trains a model two steps in `out` and returns its checkpoint (weights, AdamW state
/// and trainer state at step 2).
fn trained_checkpoint(dev: &Device, out: &Path) -> Checkpoint {
    let m = model(dev, 0);
    let x = Tensor::full(dev, &[4, 3], 0.5).unwrap();
    let y = Tensor::full(dev, &[4, 2], 1.0).unwrap();
    let mut forward = |_: &mut StepContext<'_>| mse_loss_with(&m.forward(&x)?, &y, Reduction::Mean);
    let mut trainer = Trainer::new(&m, adamw(&m), out, options())
        .unwrap()
        .with_progress(quiet());
    trainer.step(&mut forward).unwrap();
    trainer.step(&mut forward).unwrap();
    trainer.save_checkpoint().unwrap()
}

/// A copy of `good` under `root` at `step`, with its optimizer file replaced by
/// `optimizer` (left out when `None`).
fn with_optimizer_file(
    root: &Path,
    good: &Checkpoint,
    step: u64,
    optimizer: Option<&[u8]>,
) -> Checkpoint {
    // Keeps every checkpoint: each case is one.
    let keep = Retention {
        keep_last: 100,
        ..Retention::default()
    };
    let dir = CheckpointDir::open(root, keep).unwrap();
    let model_bytes = good.read(MODEL_FILE).unwrap();
    let mut files: Vec<(&str, &[u8])> = vec![(MODEL_FILE, &model_bytes)];
    if let Some(bytes) = optimizer {
        files.push((OPTIMIZER_FILE, bytes));
    }
    let mut state = good.state().clone();
    state.step = step;
    dir.save(&state, &files).unwrap()
}

/// Every way the optimizer file can be bad: missing, truncated, another optimizer's,
/// not a safetensors file.
fn bad_checkpoints(dev: &Device, name: &str) -> Vec<(&'static str, Checkpoint)> {
    let good = trained_checkpoint(dev, &scratch(&format!("{name}-good")));
    let optimizer = good.read(OPTIMIZER_FILE).unwrap();
    let sgd_path = scratch(&format!("{name}-sgd.safetensors"));
    let other = model(dev, 0);
    Sgd::new(other.named_parameters(), SgdOptions::default())
        .unwrap()
        .save(&sgd_path)
        .unwrap();
    let sgd = std::fs::read(&sgd_path).unwrap();
    let root = scratch(&format!("{name}-bad"));
    vec![
        ("missing", with_optimizer_file(&root, &good, 10, None)),
        (
            "truncated",
            with_optimizer_file(&root, &good, 11, Some(&optimizer[..optimizer.len() / 2])),
        ),
        ("of SGD", with_optimizer_file(&root, &good, 12, Some(&sgd))),
        (
            "garbage",
            with_optimizer_file(&root, &good, 13, Some(b"not a file")),
        ),
    ]
}

#[test]
fn load_training_with_a_bad_optimizer_file_leaves_the_model_unchanged() {
    let dev = Device::new().unwrap();
    for (what, checkpoint) in bad_checkpoints(&dev, "load") {
        let fresh = model(&dev, 1);
        let mut opt = adamw(&fresh);
        let before = weights(&fresh);
        let err = load_training(&checkpoint, &fresh, &mut opt).unwrap_err();
        assert!(matches!(err, CheckpointError::Load { .. }), "{what}: {err}");
        assert!(err.to_string().contains(OPTIMIZER_FILE), "{what}: {err}");
        assert_eq!(weights(&fresh), before, "{what}: the model changed");
        assert!(
            opt.state("weight").is_some_and(|s| s.is_empty()),
            "{what}: the optimizer changed"
        );
    }
}

#[test]
fn a_refused_resume_leaves_the_trainer_and_the_model_unchanged() {
    let dev = Device::new().unwrap();
    for (what, checkpoint) in bad_checkpoints(&dev, "resume") {
        let fresh = model(&dev, 1);
        let before = weights(&fresh);
        let out = scratch(&format!("resume-{}", what.replace(' ', "-")));
        let mut trainer = Trainer::new(&fresh, adamw(&fresh), &out, options())
            .unwrap()
            .with_progress(quiet());
        let err = trainer.resume(&checkpoint).unwrap_err();
        assert!(err.to_string().contains(OPTIMIZER_FILE), "{what}: {err}");
        assert_eq!(trainer.state().step, 0, "{what}: the trainer moved");
        assert_eq!(weights(&fresh), before, "{what}: the model changed");
    }
}

/// Two layers of one shape: each group of [`decay_groups`] holds two parameters of equal
/// shape (the weights, the biases), as a GPT's blocks do.
fn two_layers(dev: &Device, seed: u64) -> Sequential {
    let mut rng = SplitMix64::new(seed);
    Sequential::new()
        .append(Linear::new(dev, 3, 3, true, &mut rng).unwrap())
        .append(Tanh)
        .append(Linear::new(dev, 3, 3, true, &mut rng).unwrap())
}

/// AdamW as `train_char_gpt` builds it: weight decay on the 2-D parameters only.
fn grouped_adamw(model: &Sequential) -> AdamW {
    let groups = decay_groups(model.named_parameters(), 0.1).to_vec();
    AdamW::with_groups(groups, AdamWOptions::default()).unwrap()
}

/// Trains `model` with a trainer in `out` until its step `to`, starting from the latest
/// checkpoint there when `resume` is set, and returns the trainer's step.
fn train_until(dev: &Device, model: &Sequential, out: &Path, resume: bool, to: u64) -> u64 {
    let x = Tensor::from_slice(dev, &[0.5, -1.0, 2.0, 0.25, 1.5, -0.5], &[2, 3]).unwrap();
    let y = Tensor::full(dev, &[2, 3], 0.75).unwrap();
    let mut forward =
        |_: &mut StepContext<'_>| mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean);
    let mut trainer = Trainer::new(model, grouped_adamw(model), out, options())
        .unwrap()
        .with_progress(quiet());
    if resume {
        trainer.resume_latest().unwrap();
    }
    while trainer.state().step < to {
        trainer.step(&mut forward).unwrap();
    }
    trainer.save_checkpoint().unwrap();
    trainer.state().step
}

#[test]
fn adamw_over_two_groups_resumes_to_the_uninterrupted_weights() {
    let dev = Device::new().unwrap();
    let straight = two_layers(&dev, 0);
    assert_eq!(
        train_until(&dev, &straight, &scratch("groups-straight"), false, 6),
        6
    );
    let out = scratch("groups-interrupted");
    let first = two_layers(&dev, 0);
    train_until(&dev, &first, &out, false, 3);
    let stopped = weights(&first);
    // A new process's worth of objects, from other initial weights: the checkpoint
    // replaces them and the optimizer state (every parameter's moments) comes back.
    let second = two_layers(&dev, 7);
    assert_eq!(train_until(&dev, &second, &out, true, 6), 6);
    assert_eq!(weights(&second), weights(&straight));
    assert_ne!(
        stopped,
        weights(&straight),
        "the steps after the resume train"
    );
}
