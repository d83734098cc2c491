//! The trainer in mixed precision (`TrainerOptions::amp`): it trains as the f32 run does
//! within f16's rounding, skips a step whose scaled gradients overflow and backs the
//! scale off, and saves the scaler's state in its checkpoints and restores it on resume.

use tang_nn::Module;
use tang_nn::autograd::Tensor;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::nn::{Linear, ReLU, Sequential};
use tang_nn::optim::{AdamW, AdamWOptions};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::Device;
use tang_nn::train::{Progress, StepContext, Trainer, TrainerOptions};

const BATCH: usize = 16;
const INPUTS: usize = 8;
const CLASSES: usize = 4;

fn mlp(dev: &Device) -> Sequential {
    let mut rng = SplitMix64::new(3);
    Sequential::new()
        .append(Linear::new(dev, INPUTS, 32, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Linear::new(dev, 32, CLASSES, true, &mut rng).unwrap())
}

/// A fixed batch: inputs and their classes.
fn batch(dev: &Device) -> (Tensor, Tensor) {
    let mut rng = SplitMix64::new(9);
    let x: Vec<f32> = (0..BATCH * INPUTS).map(|_| rng.normal() as f32).collect();
    let y: Vec<u32> = (0..BATCH).map(|_| rng.below(CLASSES) as u32).collect();
    (
        Tensor::from_slice(dev, &x, &[BATCH, INPUTS]).unwrap(),
        Tensor::from_u32(dev, &y, &[BATCH]).unwrap(),
    )
}

fn options(max_steps: u64, amp: bool) -> TrainerOptions {
    TrainerOptions {
        amp,
        log_every: 5,
        clip_grad_norm: Some(1.0),
        handle_ctrl_c: false,
        ..TrainerOptions::new(max_steps)
    }
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tang-trainer-amp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The losses of `steps` steps of a fresh model in `dir`, f32 or mixed precision.
fn run(dev: &Device, dir: &std::path::Path, steps: u64, amp: bool) -> Vec<f32> {
    let model = mlp(dev);
    let opt = AdamW::new(model.named_parameters(), AdamWOptions::default().lr(1e-2)).unwrap();
    let (x, y) = batch(dev);
    let mut trainer = Trainer::new(&model, opt, dir, options(steps, amp))
        .unwrap()
        .with_progress(Progress::lines(Box::new(std::io::sink()), steps, 1).unwrap());
    let mut losses = Vec::new();
    let mut forward = |_: &mut StepContext<'_>| {
        let loss = cross_entropy(&model.forward(&x)?, &y)?;
        losses.push(loss.data().clone());
        Ok::<_, tang_nn::autograd::Error>(loss)
    };
    for _ in 0..steps {
        trainer.step(&mut forward).unwrap();
    }
    losses.iter().map(|l| l.item().unwrap()).collect()
}

#[test]
fn mixed_precision_trains_as_f32_does_within_f16_rounding() {
    let dev = Device::new().unwrap();
    let dir = tempdir("parity");
    let f32_losses = run(&dev, &dir.join("f32"), 20, false);
    let amp_losses = run(&dev, &dir.join("amp"), 20, true);
    let (a, b) = (f32_losses[19], amp_losses[19]);
    println!("loss after 20 steps: f32 {a}, amp {b}");
    assert!(
        a < f32_losses[0] * 0.8,
        "the f32 run trains: {f32_losses:?}"
    );
    assert!(((a - b) / a).abs() < 1e-2, "f32 {a} amp {b}");
    // The runs differ at all: the products were rounded to f16.
    assert_ne!(f32_losses, amp_losses);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The loss of the batch, times 1e35 at step 1: times the scale 2^16 its gradients
/// overflow.
fn overflowing_at_step_1(
    model: &Sequential,
    x: &Tensor,
    y: &Tensor,
    ctx: &mut StepContext<'_>,
) -> Result<Tensor, tang_nn::autograd::Error> {
    let loss = cross_entropy(&model.forward(x)?, y)?;
    if ctx.step == 1 {
        loss.mul_scalar(1e35)
    } else {
        Ok(loss)
    }
}

#[test]
fn an_overflowing_step_is_skipped_and_the_scale_backs_off() {
    let dev = Device::new().unwrap();
    let dir = tempdir("overflow");
    let model = mlp(&dev);
    let opt = AdamW::new(model.named_parameters(), AdamWOptions::default()).unwrap();
    let (x, y) = batch(&dev);
    let mut trainer = Trainer::new(&model, opt, &dir, options(4, true)).unwrap();
    let mut forward = |ctx: &mut StepContext<'_>| overflowing_at_step_1(&model, &x, &y, ctx);
    let weights = |m: &Sequential| -> Vec<Vec<f32>> {
        m.parameters().iter().map(|p| p.to_vec().unwrap()).collect()
    };
    trainer.step(&mut forward).unwrap();
    let after_first = weights(&model);
    let report = trainer.step(&mut forward).unwrap();
    assert_eq!(
        report.host_reads_backward_to_step, 1,
        "the scaler's one read"
    );
    assert_eq!(
        weights(&model),
        after_first,
        "the overflowing step was skipped"
    );
    assert_eq!(trainer.grad_scaler().unwrap().get_scale(), 32768.0);
    trainer.step(&mut forward).unwrap();
    assert_ne!(weights(&model), after_first, "the next step trains");
    let state = trainer.grad_scaler().unwrap().state_dict().unwrap();
    assert_eq!((state.scale, state.growth_tracker), (32768.0, 1));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_scaler_state_is_checkpointed_and_resumed() {
    let dev = Device::new().unwrap();
    let dir = tempdir("resume");
    let (x, y) = batch(&dev);
    let train = |model: &Sequential, steps: u64, resume: bool| {
        let opt = AdamW::new(model.named_parameters(), AdamWOptions::default()).unwrap();
        let mut trainer = Trainer::new(model, opt, &dir, options(10, true)).unwrap();
        if resume {
            assert_eq!(trainer.resume_latest().unwrap(), Some(3));
            let state = trainer.grad_scaler().unwrap().state_dict().unwrap();
            // Step 1 overflowed: the scale halved, then step 2 was clean.
            assert_eq!((state.scale, state.growth_tracker), (32768.0, 1));
        }
        let mut forward = |ctx: &mut StepContext<'_>| overflowing_at_step_1(model, &x, &y, ctx);
        for _ in 0..steps {
            trainer.step(&mut forward).unwrap();
        }
        let checkpoint = trainer.save_checkpoint().unwrap();
        checkpoint.state().grad_scaler.unwrap()
    };
    let saved = train(&mlp(&dev), 3, false);
    assert_eq!((saved.scale, saved.growth_tracker), (32768.0, 1));
    let resumed = train(&mlp(&dev), 2, true);
    assert_eq!((resumed.scale, resumed.growth_tracker), (32768.0, 3));
    std::fs::remove_dir_all(&dir).unwrap();
}
