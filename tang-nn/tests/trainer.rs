//! The trainer: exact resume (losses and weights bit-identical to an uninterrupted run),
//! no host read between backward and the optimizer step and one read per log interval,
//! metrics, plot, keep-last and keep-best checkpoints, Ctrl-C, plain progress lines.

mod train_common;

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use tang_nn::Module;
use tang_nn::autograd::Tensor;
use tang_nn::checkpoint::{MODEL_FILE, Mode, Retention};
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::nn::{Dropout, Embedding, Linear, ReLU, Sequential};
use tang_nn::optim::{AdamW, AdamWOptions, Sgd, SgdOptions, decay_groups};
use tang_nn::rng::SplitMix64;
use tang_nn::safetensors::read_file;
use tang_nn::schedule::Schedule;
use tang_nn::tang_runtime::ops::randn;
use tang_nn::tang_runtime::{Device, Tensor as RawTensor};
use tang_nn::train::{
    Interrupt, Progress, StepContext, Throughput, TrainError, Trainer, TrainerOptions, read_metrics,
};
use train_common::Captured;

const BATCH: usize = 8;
const INPUTS: usize = 6;
const HIDDEN: usize = 16;
const CLASSES: usize = 4;

/// A two-layer classifier with dropout: `0` Linear, `1` ReLU, `2` Dropout(0.2), `3`
/// Linear (PyTorch's numbering in a `Sequential`).
type Mlp = Sequential;

fn mlp(dev: &Device, seed: u64) -> Mlp {
    let mut rng = SplitMix64::new(seed);
    Sequential::new()
        .append(Linear::new(dev, INPUTS, HIDDEN, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Dropout::new(0.2).unwrap())
        .append(Linear::new(dev, HIDDEN, CLASSES, true, &mut rng).unwrap())
}

/// A data set of 64 samples: each step takes 8 of them (a pure function of the step) and
/// adds noise drawn from the step's device generator; the model's dropout draws from the
/// process-wide generator that the trainer reseeds per step.
struct Data {
    x: Vec<f32>,
    y: Vec<u32>,
}

fn data() -> Data {
    let mut rng = SplitMix64::new(5);
    let x = (0..64 * INPUTS).map(|_| rng.normal() as f32).collect();
    let y = (0..64).map(|_| rng.below(CLASSES) as u32).collect();
    Data { x, y }
}

impl Data {
    fn loss(
        &self,
        model: &Mlp,
        dev: &Device,
        ctx: &mut StepContext<'_>,
    ) -> Result<Tensor, tang_nn::autograd::Error> {
        let start = (ctx.step as usize * BATCH) % 64;
        let xs = &self.x[start * INPUTS..(start + BATCH) * INPUTS];
        let x = RawTensor::from_slice(dev, xs, &[BATCH, INPUTS])?;
        let noise = randn(dev, &[BATCH, INPUTS], ctx.generator)?;
        let x = Tensor::constant(x).add(&Tensor::constant(noise).mul_scalar(0.1)?)?;
        let y = Tensor::from_u32(dev, &self.y[start..start + BATCH], &[BATCH])?;
        cross_entropy(&model.forward(&x)?, &y)
    }
}

fn adamw(model: &Mlp) -> AdamW {
    let groups = decay_groups(model.named_parameters(), 0.1);
    AdamW::with_groups(groups.into(), AdamWOptions::default().lr(1e-2)).unwrap()
}

/// Dropout draws from one process-wide generator that every trainer reseeds at each
/// step, so the tests of this file, which run on parallel threads, step one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Quiet progress (a sink), so test output stays readable.
fn quiet(total: u64) -> Progress {
    Progress::lines(Box::new(std::io::sink()), total, 1).unwrap()
}

fn options(max_steps: u64) -> TrainerOptions {
    TrainerOptions {
        log_every: 7,
        clip_grad_norm: Some(0.5),
        throughput: Some(Throughput::Samples(BATCH as u64)),
        seed: 11,
        // Tests run in parallel in one process, which has one Ctrl-C flag: only the
        // interrupt test uses it.
        handle_ctrl_c: false,
        ..TrainerOptions::new(max_steps)
    }
}

fn schedule() -> Schedule {
    Schedule::warmup_cosine(1e-2, 1e-3, 10, 200).unwrap()
}

fn weights(model: &Mlp) -> Vec<Vec<f32>> {
    model
        .named_parameters()
        .iter()
        .map(|(_, p)| p.to_vec().unwrap())
        .collect()
}

/// Runs `steps` steps of `trainer`, keeping each step's loss on the device, and reads
/// them all at the end.
fn losses(
    trainer: &mut Trainer<'_, Mlp, AdamWOptions>,
    model: &Mlp,
    dev: &Device,
    data: &Data,
    steps: u64,
) -> Vec<f32> {
    let mut kept: Vec<RawTensor> = Vec::new();
    let mut forward = |ctx: &mut StepContext<'_>| {
        let loss = data.loss(model, dev, ctx)?;
        kept.push(loss.data().clone());
        Ok::<_, tang_nn::autograd::Error>(loss)
    };
    for _ in 0..steps {
        trainer.step(&mut forward).unwrap();
    }
    kept.iter().map(|t| t.item().unwrap()).collect()
}

/// A quiet trainer of `model` into `dir` for `total` steps, on the test's schedule.
fn scheduled<'m>(model: &'m Mlp, dir: &Path, total: u64) -> Trainer<'m, Mlp, AdamWOptions> {
    Trainer::new(model, adamw(model), dir, options(total))
        .unwrap()
        .with_schedule(schedule())
        .with_progress(quiet(total))
}

/// Trains `before` steps, checkpoints, resumes in fresh objects (other initial weights)
/// and trains `after` more: the losses of those steps and the final weights must equal an
/// uninterrupted run's bit for bit. Returns the uninterrupted run's losses after
/// `before` and the directory whose checkpoint was resumed.
fn resume_matches_the_uninterrupted_run(
    dev: &Device,
    data: &Data,
    name: &str,
    before: u64,
    after: u64,
) -> (Vec<f32>, std::path::PathBuf) {
    let dir = tempdir(name);
    let total = before + after;
    // The uninterrupted run (in its own directory).
    let model = mlp(dev, 1);
    let mut straight_run = scheduled(&model, &dir.join("straight"), total);
    let _ = losses(&mut straight_run, &model, dev, data, before);
    let straight = losses(&mut straight_run, &model, dev, data, after);
    let straight_weights = weights(&model);
    // The interrupted run: `before` steps, a checkpoint, a new process's worth of objects.
    let first = mlp(dev, 1);
    let mut interrupted = scheduled(&first, &dir.join("run"), total);
    let _ = losses(&mut interrupted, &first, dev, data, before);
    interrupted.save_checkpoint().unwrap();
    drop(interrupted);
    let checkpointed = weights(&first);
    let second = mlp(dev, 99); // other initial weights: the checkpoint replaces them
    let mut resumed = scheduled(&second, &dir.join("run"), total);
    assert_eq!(resumed.resume_latest().unwrap(), Some(before));
    assert_eq!(resumed.state().step, before);
    let continued = losses(&mut resumed, &second, dev, data, after);
    let differing = straight
        .iter()
        .zip(&continued)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let last = after as usize - 1;
    println!(
        "resumed after {before} steps: {differing} of {after} losses differ from the uninterrupted run (first {} last {})",
        continued[0], continued[last]
    );
    assert_eq!(differing, 0);
    assert_eq!(weights(&second), straight_weights);
    assert_ne!(
        checkpointed, straight_weights,
        "the steps after the checkpoint train"
    );
    (straight, dir.join("run"))
}

#[test]
fn a_resumed_run_continues_bit_exactly_for_200_steps() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    let data = data();
    let (before, after) = (20, 200);
    let (straight, run) =
        resume_matches_the_uninterrupted_run(&dev, &data, "resume", before, after);
    // Dropout is on and its masks come from the step's seed: other masks (the generator
    // reseeded by hand) give other losses, so the comparison above can fail.
    let third = mlp(&dev, 99);
    let mut restarted = scheduled(&third, &run, before + after);
    assert_eq!(restarted.resume_latest().unwrap(), Some(before));
    let mut kept = Vec::new();
    let mut forward = |ctx: &mut StepContext<'_>| {
        tang_nn::nn::manual_seed(12345);
        let loss = data.loss(&third, &dev, ctx)?;
        kept.push(loss.data().clone());
        Ok::<_, tang_nn::autograd::Error>(loss)
    };
    for _ in 0..5 {
        restarted.step(&mut forward).unwrap();
    }
    let other: Vec<f32> = kept.iter().map(|t| t.item().unwrap()).collect();
    assert_ne!(other, straight[..5]);
}

/// The same over 2,000 steps after a resume at step 300 (about 40 s on lavapipe in
/// debug): `cargo test -p tang-nn --test trainer -- --ignored`.
#[test]
#[ignore]
fn a_resumed_run_continues_bit_exactly_for_2000_steps() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    resume_matches_the_uninterrupted_run(&dev, &data(), "resume-long", 300, 2000);
}

#[test]
fn nothing_is_read_between_backward_and_the_step_and_the_loss_once_per_log_interval() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    let data = data();
    let dir = tempdir("reads");
    for clip in [Some(1.0), None] {
        let model = mlp(&dev, 2);
        let opts = TrainerOptions {
            clip_grad_norm: clip,
            ..options(14)
        };
        let mut trainer = Trainer::new(&model, adamw(&model), dir.join(format!("{clip:?}")), opts)
            .unwrap()
            .with_progress(quiet(14));
        let mut forward = |ctx: &mut StepContext<'_>| data.loss(&model, &dev, ctx);
        let mut reads = Vec::new();
        for _ in 0..14 {
            let before = dev.stats().host_reads;
            let report = trainer.step(&mut forward).unwrap();
            assert_eq!(report.host_reads_backward_to_step, 0, "clip {clip:?}");
            reads.push((dev.stats().host_reads - before, report.record.is_some()));
        }
        println!("clip {clip:?}: host reads per step {reads:?}");
        for (i, (n, logged)) in reads.iter().enumerate() {
            // Steps 7 and 14 log: the loss and the gradient norm in one read.
            assert_eq!(*logged, (i + 1) % 7 == 0);
            assert_eq!(*n, u64::from(*logged), "step {}", i + 1);
        }
        let r = trainer.history().to_vec();
        assert!(r.is_empty(), "step() alone does not append");
    }
}

#[test]
fn fit_logs_metrics_draws_the_curve_and_keeps_the_last_and_the_best_checkpoints() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    let data = data();
    let dir = tempdir("fit");
    let model = mlp(&dev, 3);
    let out = Captured::default();
    let opts = TrainerOptions {
        log_every: 5,
        eval_every: 10,
        // Checkpoints between evaluations carry no metric, so keep-best keeps step 20's.
        checkpoint_every: 5,
        retention: Retention {
            keep_last: 2,
            keep_best: 1,
            mode: Mode::Min,
        },
        ..options(40)
    };
    let mut trainer = Trainer::new(&model, adamw(&model), &dir, opts)
        .unwrap()
        .with_schedule(schedule())
        .with_progress(Progress::lines(Box::new(out.clone()), 40, 5).unwrap());
    // A validation loss that is best at step 20, so keep-best keeps that checkpoint.
    let val = |ctx: &mut StepContext<'_>| {
        Ok::<_, TrainError>(if ctx.step == 20 {
            0.5
        } else {
            1.0 + ctx.step as f64
        })
    };
    let summary = trainer
        .fit_with_eval(
            |ctx: &mut StepContext<'_>| data.loss(&model, &dev, ctx),
            val,
        )
        .unwrap();
    assert_eq!(summary.steps, 40);
    assert!(!summary.interrupted);
    let records = read_metrics(dir.join("metrics.jsonl")).unwrap();
    let steps: Vec<u64> = records.iter().map(|r| r.step).collect();
    assert_eq!(steps, [5, 10, 15, 20, 25, 30, 35, 40]);
    for r in &records {
        assert!(r.loss.is_some_and(f64::is_finite), "{r:?}");
        assert!(r.grad_norm.is_some_and(|g| g > 0.0), "{r:?}");
        assert_eq!(r.lr, Some(schedule().lr(r.step - 1)));
        assert!(
            r.ms_per_step.is_some() && r.samples_per_sec.is_some(),
            "{r:?}"
        );
        assert_eq!(r.val_loss.is_some(), r.step % 10 == 0, "{r:?}");
    }
    let png = std::fs::read(dir.join("loss.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let kept: Vec<u64> = trainer
        .checkpoints()
        .list()
        .unwrap()
        .iter()
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(kept, [20, 35, 40], "the best (20) and the last two");
    assert_eq!(
        trainer.checkpoints().best().unwrap().unwrap().state().step,
        20
    );
    assert_eq!(summary.checkpoint.state().best_metric, Some(0.5));
    // The weights carry the model's names, as PyTorch's state_dict.
    let file = read_file(summary.checkpoint.file(MODEL_FILE).unwrap()).unwrap();
    let mut names: Vec<String> = file.tensors.names().map(str::to_string).collect();
    names.sort();
    assert_eq!(names, ["0.bias", "0.weight", "3.bias", "3.weight"]);
    let text = out.text();
    println!("{text}");
    assert!(text.contains("step 40/40 (100%) loss "), "{text}");
    assert!(text.contains("val_loss 0.5000"), "{text}");
    // Plotting on demand.
    std::fs::remove_file(dir.join("loss.png")).unwrap();
    trainer.plot().unwrap();
    assert!(dir.join("loss.png").exists());
}

#[test]
fn an_interrupt_finishes_the_step_saves_and_stops_and_the_run_resumes() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    let data = data();
    let dir = tempdir("interrupt");
    let model = mlp(&dev, 4);
    let interrupt = Interrupt::install().unwrap();
    interrupt.clear();
    let mut trainer = Trainer::new(&model, adamw(&model), &dir, options(30))
        .unwrap()
        .with_progress(quiet(30))
        .with_interrupt(interrupt.clone());
    let summary = trainer
        .fit(|ctx: &mut StepContext<'_>| {
            if ctx.step == 12 {
                // As Ctrl-C would, in the middle of step 13.
                interrupt.request();
            }
            data.loss(&model, &dev, ctx)
        })
        .unwrap();
    interrupt.clear();
    assert!(summary.interrupted);
    assert_eq!(summary.steps, 13);
    assert_eq!(summary.checkpoint.state().step, 13);
    assert!(dir.join("loss.png").exists());
    drop(trainer);
    let mut again = Trainer::new(&model, adamw(&model), &dir, options(30))
        .unwrap()
        .with_progress(quiet(30));
    assert_eq!(again.resume_latest().unwrap(), Some(13));
    let summary = again
        .fit(|ctx: &mut StepContext<'_>| data.loss(&model, &dev, ctx))
        .unwrap();
    assert_eq!(summary.steps, 30);
    let steps: Vec<u64> = read_metrics(dir.join("metrics.jsonl"))
        .unwrap()
        .iter()
        .map(|r| r.step)
        .collect();
    assert_eq!(steps, [7, 13, 14, 21, 28, 30]);
}

#[test]
fn an_optimizer_over_other_parameters_is_refused() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    let model = mlp(&dev, 5);
    let other = mlp(&dev, 5);
    let e = Trainer::new(&model, adamw(&other), tempdir("mismatch"), options(1))
        .err()
        .unwrap();
    assert!(matches!(e, TrainError::ParameterMismatch { .. }), "{e}");
    let partial = Sgd::new(
        [("0.weight", model.named_parameters()[0].1.clone())],
        SgdOptions::default(),
    )
    .unwrap();
    let e = Trainer::new(&model, partial, tempdir("mismatch2"), options(1))
        .err()
        .unwrap();
    assert!(e.to_string().contains("\"0.bias\" is missing"), "{e}");
    let e = Trainer::new(
        &model,
        adamw(&model),
        tempdir("mismatch3"),
        TrainerOptions {
            log_every: 0,
            ..options(1)
        },
    )
    .err()
    .unwrap();
    assert!(matches!(e, TrainError::InvalidOption { .. }), "{e}");
}

/// A fresh directory under the target's temporary directory.
fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("trainer-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_bigram_model_trains_on_windows_gathered_on_the_device() {
    let _serial = one_at_a_time();
    let dev = Device::new().unwrap();
    // A corpus where each token is mostly followed by the next one (mod 8).
    let mut rng = SplitMix64::new(8);
    let mut corpus = vec![0u32];
    for _ in 0..2000 {
        let last = *corpus.last().unwrap();
        let next = if rng.below(10) == 0 {
            rng.below(8) as u32
        } else {
            (last + 1) % 8
        };
        corpus.push(next);
    }
    let (batch, block) = (4, 16);
    let batches = DeviceTokenBatcher::new(&dev, &corpus, batch, block, 3).unwrap();
    let model = Embedding::new(&dev, 8, 8, &mut SplitMix64::new(1)).unwrap();
    let opt = AdamW::new(model.named_parameters(), AdamWOptions::default().lr(5e-2)).unwrap();
    let opts = TrainerOptions {
        log_every: 10,
        throughput: Some(Throughput::Tokens((batch * block) as u64)),
        ..options(60)
    };
    let dir = tempdir("bigram");
    let mut trainer = Trainer::new(&model, opt, &dir, opts)
        .unwrap()
        .with_progress(quiet(60));
    trainer
        .fit(|ctx: &mut StepContext<'_>| {
            let (x, y) = batches.batch(ctx.step)?;
            let logits = model.forward(&x.reshape(&[batch * block])?)?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(cross_entropy(
                &logits,
                &y.reshape(&[batch * block])?,
            )?)
        })
        .unwrap();
    let records = read_metrics(dir.join("metrics.jsonl")).unwrap();
    let (first, last) = (records[0].loss.unwrap(), records[5].loss.unwrap());
    println!("bigram loss {first:.3} at step 10, {last:.3} at step 60 (uniform: ln 8 = 2.079)");
    assert!(last < first && last < 1.2, "{first} -> {last}");
    assert!(
        records
            .iter()
            .all(|r| r.tokens_per_sec.is_some() && r.samples_per_sec.is_none())
    );
}
