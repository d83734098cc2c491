//! Ctrl-C: the first SIGINT lets the trainer finish its step, save (weights, optimizer
//! state, step and the data loader's position) and return cleanly; a second one exits at
//! once with status 130. The loops run in child processes (this
//! test binary re-invoked with `TANG_INTERRUPT_CHILD` set), so the signals reach only
//! them.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tang_nn::Module;
use tang_nn::autograd::Tensor;
use tang_nn::checkpoint::{CheckpointDir, Retention, load_training};
use tang_nn::data::{DataError, DataLoader, LoaderOptions};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::nn::{Dropout, Linear, ReLU, Sequential};
use tang_nn::optim::{AdamW, AdamWOptions};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::Device;
use tang_nn::train::{CHECKPOINTS_DIR, Interrupt, Progress, StepContext, Trainer, TrainerOptions};

const CHILD_ENV: &str = "TANG_INTERRUPT_CHILD";
const ROOT_ENV: &str = "TANG_INTERRUPT_ROOT";

/// Starts this binary running only `test` as a child, and waits for it to print "ready".
fn spawn(test: &str, mode: &str, root: &Path) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode)
        .env(ROOT_ENV, root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the child exited before it was ready"
        );
    }
    (child, out)
}

fn sigint(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Samples: 4 features and a class.
type Samples = Vec<(Vec<f32>, u32)>;
/// A batch: `[n, 4]` features and `[n]` classes.
type Batch = (Tensor, Tensor);

/// A classifier with dropout.
fn model(dev: &Device) -> Sequential {
    let mut rng = SplitMix64::new(3);
    Sequential::new()
        .append(Linear::new(dev, 4, 8, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Dropout::new(0.1).unwrap())
        .append(Linear::new(dev, 8, 3, true, &mut rng).unwrap())
}

/// A shuffled loader of 40 samples in batches of 8 (5 batches an epoch).
fn loader(dev: &Device) -> DataLoader<Samples, impl FnMut(Samples) -> Result<Batch, DataError>> {
    let mut rng = SplitMix64::new(4);
    let samples: Samples = (0..40)
        .map(|_| {
            let x = (0..4).map(|_| rng.normal() as f32).collect();
            (x, rng.below(3) as u32)
        })
        .collect();
    let dev = dev.clone();
    let collate = move |batch: Samples| {
        let x: Vec<f32> = batch.iter().flat_map(|(x, _)| x.clone()).collect();
        let y: Vec<u32> = batch.iter().map(|(_, y)| *y).collect();
        Ok((
            Tensor::from_slice(&dev, &x, &[batch.len(), 4])?,
            Tensor::from_u32(&dev, &y, &[batch.len()])?,
        ))
    };
    let options = LoaderOptions {
        batch_size: 8,
        shuffle: true,
        drop_last: true,
        seed: 9,
        sampler: None,
    };
    DataLoader::new(samples, collate, options).unwrap()
}

/// The child's run: the trainer (which installs the Ctrl-C handler) steps until
/// interrupted, then finishes the step, saves and returns; the step and the loader
/// position are printed for the parent to compare with the checkpoint.
fn train_until_interrupted(root: &Path) {
    let dev = Device::new().unwrap();
    let (model, mut loader) = (model(&dev), loader(&dev));
    let opt = AdamW::new(model.named_parameters(), AdamWOptions::default()).unwrap();
    let options = TrainerOptions {
        log_every: 1000,
        ..TrainerOptions::new(u64::MAX)
    };
    let mut trainer = Trainer::new(&model, opt, root, options)
        .unwrap()
        .with_progress(Progress::lines(Box::new(std::io::sink()), u64::MAX, 1000).unwrap());
    let summary = trainer
        .fit(|ctx: &mut StepContext<'_>| {
            if ctx.step == 6 {
                // The handler is installed, and the loader is past its first epoch.
                println!("ready");
            }
            std::thread::sleep(Duration::from_millis(2));
            let (x, y) = match loader.next_batch()? {
                Some(batch) => batch,
                // End of an epoch: the next call starts the next one.
                None => loader.next_batch()?.expect("a batch per epoch"),
            };
            *ctx.loader = Some(loader.state());
            let logits = model.forward(&x)?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(cross_entropy(&logits, &y)?)
        })
        .unwrap();
    assert!(summary.interrupted);
    let position = summary.checkpoint.state().loader.unwrap();
    println!(
        "stopped cleanly at step {} epoch {} position {}",
        summary.steps, position.epoch, position.position
    );
}

#[test]
fn ctrl_c_finishes_the_step_saves_and_exits_cleanly() {
    if std::env::var(CHILD_ENV).as_deref() == Ok("train") {
        return train_until_interrupted(Path::new(&std::env::var_os(ROOT_ENV).unwrap()));
    }
    let root = std::env::temp_dir().join(format!("tang-interrupt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (mut child, mut out) = spawn(
        "ctrl_c_finishes_the_step_saves_and_exits_cleanly",
        "train",
        &root,
    );
    std::thread::sleep(Duration::from_millis(50));
    sigint(&child);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(status.success(), "{status}: {rest}");
    let reported: Vec<u64> = rest
        .lines()
        .find_map(|l| l.strip_prefix("stopped cleanly at step "))
        .expect("the loop reports its clean stop")
        .split(' ')
        .filter_map(|w| w.parse().ok())
        .collect();
    let [step, epoch, position] = reported[..] else {
        panic!("{rest}");
    };
    let latest = CheckpointDir::open(root.join(CHECKPOINTS_DIR), Retention::default())
        .unwrap()
        .latest()
        .unwrap()
        .unwrap();
    assert_eq!(
        latest.state().step,
        step,
        "the checkpoint is of the step that was finished"
    );
    let loader = latest.state().loader.unwrap();
    assert_eq!((loader.epoch, loader.position), (epoch, position));
    println!("interrupted after {step} steps, loader at epoch {epoch} position {position}");
    // The checkpoint loads into a fresh model and optimizer, strictly.
    let dev = Device::new().unwrap();
    let model = model(&dev);
    let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default()).unwrap();
    let state = load_training(&latest, &model, &mut opt).unwrap();
    assert_eq!(state.step, step);
    assert!(opt.state("0.weight").unwrap().step() == step);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_second_ctrl_c_exits_at_once_with_status_130() {
    if std::env::var(CHILD_ENV).as_deref() == Ok("stuck") {
        let _interrupt = Interrupt::install().unwrap();
        println!("ready");
        // A loop that never checks the flag.
        loop {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let (mut child, _out) = spawn(
        "a_second_ctrl_c_exits_at_once_with_status_130",
        "stuck",
        Path::new("."),
    );
    sigint(&child);
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first Ctrl-C only asks the loop to stop"
    );
    sigint(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status}");
}

#[test]
fn every_handle_shares_the_one_flag() {
    let a = Interrupt::install().unwrap();
    let b = Interrupt::install().unwrap();
    assert!(!a.requested());
    b.request();
    assert!(a.requested());
    a.clear();
    assert!(!b.requested());
}
