//! A `DataLoader` feeding the `Trainer` through `StepContext::next_batch`: the loader's
//! position is checkpointed, and a resumed run (fresh loader, fresh trainer) takes
//! exactly the batches that the uninterrupted run took, across epoch boundaries.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use tang_nn::Module;
use tang_nn::autograd::Tensor;
use tang_nn::data::{DataError, DataLoader, LoaderOptions};
use tang_nn::nn::Linear;
use tang_nn::nn::functional::{Reduction, mse_loss_with};
use tang_nn::optim::{Sgd, SgdOptions};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::{Device, Tensor as RawTensor};
use tang_nn::train::{Progress, StepContext, TrainError, Trainer, TrainerOptions};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Samples: 11 ids; a batch of 3 (the last of an epoch: 2) is shuffled per epoch.
const SAMPLES: u32 = 11;

fn loader_options() -> LoaderOptions {
    LoaderOptions {
        batch_size: 3,
        shuffle: true,
        seed: 9,
        ..LoaderOptions::default()
    }
}

fn trainer_options(max_steps: u64) -> TrainerOptions {
    TrainerOptions {
        log_every: 1,
        handle_ctrl_c: false,
        ..TrainerOptions::new(max_steps)
    }
}

/// A fresh directory under the target's temporary directory.
fn tempdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trainer-loader-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Trains a fresh model and loader in `dir` (resuming its latest checkpoint, if any) up
/// to `max_steps`; returns the ids of every batch the steps took, in order.
fn train(
    dev: &Device,
    dir: &Path,
    max_steps: u64,
    samples: u32,
) -> Result<Vec<Vec<u32>>, TrainError> {
    let model = Linear::new(dev, 1, 1, true, &mut SplitMix64::new(1)).unwrap();
    let opt = Sgd::new(model.named_parameters(), SgdOptions::default()).unwrap();
    let taken = RefCell::new(Vec::new());
    // A batch of ids becomes x = id, y = 2 id; the ids are noted as they are collated.
    let collate = |ids: Vec<u32>| -> Result<(Tensor, Tensor), DataError> {
        let x: Vec<f32> = ids.iter().map(|&i| i as f32).collect();
        let y: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
        let n = ids.len();
        taken.borrow_mut().push(ids);
        Ok((
            Tensor::constant(RawTensor::from_slice(dev, &x, &[n, 1])?),
            Tensor::constant(RawTensor::from_slice(dev, &y, &[n, 1])?),
        ))
    };
    let mut loader =
        DataLoader::new((0..samples).collect::<Vec<_>>(), collate, loader_options()).unwrap();
    let quiet = Progress::lines(Box::new(std::io::sink()), max_steps, 1).unwrap();
    let mut trainer =
        Trainer::new(&model, opt, dir, trainer_options(max_steps))?.with_progress(quiet);
    trainer.resume_latest()?;
    trainer.fit(|ctx: &mut StepContext<'_>| -> Result<Tensor, BoxError> {
        let (x, y) = ctx.next_batch(&mut loader)?;
        Ok(mse_loss_with(&model.forward(&x)?, &y, Reduction::Mean)?)
    })?;
    drop(loader);
    Ok(taken.into_inner())
}

#[test]
fn a_resumed_run_takes_the_batches_the_uninterrupted_run_took() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    // 4 batches per epoch; 10 steps cross two epoch boundaries.
    let whole = train(&dev, &tempdir("whole"), 10, SAMPLES).unwrap();
    assert_eq!(whole.len(), 10);
    let mut epoch0: Vec<u32> = whole[..4].concat();
    epoch0.sort_unstable();
    assert_eq!(
        epoch0,
        (0..SAMPLES).collect::<Vec<_>>(),
        "each sample once per epoch"
    );
    assert_ne!(whole[..4], whole[4..8], "each epoch reshuffled");
    // Stopped mid-epoch (step 6 of 10), then resumed by a new trainer and a new loader.
    let dir = tempdir("resumed");
    let first = train(&dev, &dir, 6, SAMPLES).unwrap();
    assert_eq!(first[..], whole[..6]);
    let rest = train(&dev, &dir, 10, SAMPLES).unwrap();
    assert_eq!(
        rest[..],
        whole[6..],
        "the resumed loader continues the stream"
    );
}

#[test]
fn a_checkpointed_position_beyond_the_data_set_is_a_typed_error() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    let dir = tempdir("smaller");
    train(&dev, &dir, 3, SAMPLES).unwrap(); // position 9 of epoch 0
    let err = train(&dev, &dir, 4, 5).unwrap_err();
    let TrainError::Step { source, .. } = &err else {
        panic!("expected a step error, got {err}");
    };
    assert!(
        matches!(
            source.downcast_ref::<DataError>(),
            Some(DataError::Resume { .. })
        ),
        "{err}"
    );
}
