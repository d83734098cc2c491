//! Trains `Sequential(Linear(64, 128), ReLU, Linear(128, 10))` on the bundled digits
//! (1,797 8x8 images, 80/20 split) with Adam and cross-entropy, as a PyTorch user would:
//! a `DataLoader`, and the `Trainer` for the loop (progress bar, `metrics.jsonl`, the
//! loss-curve PNG and a checkpoint in `runs/digits`). Expect about 98% test accuracy.
//!
//! `cargo run --release -p tang-examples --example train_digits`
//!
//! A second run continues from the checkpoint in `runs/digits` (delete it to start over).

use tang_examples::digits::{CLASSES, Digits, FEATURES};
use tang_nn::data::{DataLoader, LoaderOptions};
use tang_nn::metrics::accuracy;
use tang_nn::nn::{Linear, ReLU, Sequential, functional::cross_entropy};
use tang_nn::optim::{Adam, AdamOptions};
use tang_nn::rng::SplitMix64;
use tang_nn::train::{StepContext, Throughput, Trainer, TrainerOptions};
use tang_nn::{Device, Module, no_grad};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
const EPOCHS: u64 = 40;
const BATCH: usize = 64;
/// Fixes the split, the initial weights and the batch order: runs are reproducible.
const SEED: u64 = 2024;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new()?;
    let mut rng = SplitMix64::new(SEED);
    let (train, test) = Digits::bundled()?.split(0.2, &mut rng);
    let model = Sequential::new()
        .append(Linear::new(&dev, FEATURES, 128, true, &mut rng)?)
        .append(ReLU)
        .append(Linear::new(&dev, 128, CLASSES, true, &mut rng)?);
    let opt = Adam::new(model.named_parameters(), AdamOptions::default())?;

    // The data set is the training images' indices; a batch is uploaded as tensors.
    let collate = |indices: Vec<usize>| Ok(train.select(&indices).to_device(&dev)?);
    let options = LoaderOptions {
        batch_size: BATCH,
        shuffle: true,
        seed: SEED,
        ..LoaderOptions::default()
    };
    let mut loader = DataLoader::new((0..train.len()).collect::<Vec<_>>(), collate, options)?;
    let steps_per_epoch = loader.len() as u64;
    let (test_x, test_y) = test.to_device(&dev)?;
    let options = TrainerOptions {
        log_every: steps_per_epoch,
        eval_every: steps_per_epoch,
        throughput: Some(Throughput::Samples(BATCH as u64)),
        ..TrainerOptions::new(EPOCHS * steps_per_epoch)
    };
    let mut trainer = Trainer::new(&model, opt, "runs/digits", options)?;
    if let Some(step) = trainer.resume_latest()? {
        println!("continuing from the checkpoint of step {step} in runs/digits");
    }
    // Each step's batch; the trainer keeps the loader's position in its checkpoints.
    let forward = |ctx: &mut StepContext<'_>| -> Result<_, BoxError> {
        let (x, y) = ctx.next_batch(&mut loader)?;
        Ok(cross_entropy(&model.forward(&x)?, &y)?)
    };
    // The test loss, logged as `val_loss` and drawn in loss.png.
    let evaluate = |_: &mut StepContext<'_>| -> Result<f64, BoxError> {
        let loss = cross_entropy(&model.forward(&test_x)?, &test_y)?;
        Ok(f64::from(loss.item()?))
    };
    let summary = trainer.fit_with_eval(forward, evaluate)?;

    model.eval();
    let acc = no_grad(|| accuracy(&model.forward(&test_x)?, &test_y))?.item()?;
    println!(
        "test accuracy {:.2}% after {} steps; metrics, loss.png and checkpoints in runs/digits",
        100.0 * acc,
        summary.steps
    );
    Ok(())
}
