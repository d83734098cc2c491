//! Crash safety of checkpoints: a writer process saving checkpoints in a loop is killed
//! with SIGKILL at 100 random moments; after every kill the latest checkpoint (and every
//! other one listed) loads and holds exactly what was saved.
//!
//! The writer is this test binary itself, re-invoked with `TANG_CHECKPOINT_WRITER` set to
//! the checkpoint root.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tang_nn::checkpoint::{Checkpoint, CheckpointDir, Mode, Retention, TrainerState};
use tang_nn::data::LoaderState;
use tang_nn::rng::SplitMix64;

const WRITER_ENV: &str = "TANG_CHECKPOINT_WRITER";
const TEST_NAME: &str = "latest_checkpoint_loads_after_sigkill_at_100_random_moments";
const RETENTION: Retention = Retention {
    keep_last: 2,
    keep_best: 1,
    mode: Mode::Min,
};

/// The files of step `step`: sizes and bytes both depend on the step, so a file from
/// another step or a truncated one is caught.
fn files(step: u64) -> Vec<(&'static str, Vec<u8>)> {
    [
        ("model.safetensors", 96 * 1024),
        ("optimizer.safetensors", 48 * 1024),
        ("extra.bin", 100),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (name, len))| {
        let mut rng = SplitMix64::derive(step, k as u64);
        let len = len + (step % 97) as usize;
        (name, (0..len).map(|_| rng.next_u64() as u8).collect())
    })
    .collect()
}

fn state(step: u64) -> TrainerState {
    TrainerState {
        step,
        loader: Some(LoaderState {
            seed: 5,
            epoch: step / 10,
            position: step % 10,
        }),
        seeds: [("data".to_string(), 5), ("dropout".to_string(), step * 3)].into(),
        // A metric that goes up and down, so keep-best keeps an old checkpoint.
        metric: Some(((step * 7919) % 101) as f64 / 10.0),
        best_metric: None,
        grad_scaler: None,
    }
}

/// Checks that a checkpoint holds exactly what its step's save wrote.
fn verify(checkpoint: &Checkpoint) {
    let step = checkpoint.state().step;
    assert_eq!(
        checkpoint.state(),
        &state(step),
        "{}",
        checkpoint.path().display()
    );
    for (name, bytes) in files(step) {
        assert!(
            checkpoint.read(name).unwrap() == bytes,
            "{} / {name} differs",
            checkpoint.path().display()
        );
    }
}

/// Saves the checkpoint of `step`.
fn save_step(dir: &CheckpointDir, step: u64) {
    let owned = files(step);
    let borrowed: Vec<(&str, &[u8])> = owned.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    dir.save(&state(step), &borrowed).unwrap();
}

/// The writer: continues after the latest checkpoint and saves until it is killed.
fn write_forever(root: &Path) -> ! {
    let dir = CheckpointDir::open(root, RETENTION).unwrap();
    let mut step = dir.latest().unwrap().map_or(1, |c| c.state().step + 1);
    println!("ready");
    loop {
        save_step(&dir, step);
        step += 1;
    }
}

/// The median time of a save on this disk.
fn time_one_save(root: &Path) -> Duration {
    let _ = std::fs::remove_dir_all(root);
    let dir = CheckpointDir::open(root, RETENTION).unwrap();
    let mut times: Vec<Duration> = (1..=5)
        .map(|step| {
            let start = std::time::Instant::now();
            save_step(&dir, step);
            start.elapsed()
        })
        .collect();
    std::fs::remove_dir_all(root).unwrap();
    times.sort();
    times[2]
}

fn count_hidden(root: &Path, prefix: &str) -> usize {
    std::fs::read_dir(root)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(prefix)
        })
        .count()
}

#[test]
fn latest_checkpoint_loads_after_sigkill_at_100_random_moments() {
    if let Some(root) = std::env::var_os(WRITER_ENV) {
        write_forever(Path::new(&root));
    }
    let root = std::env::temp_dir().join(format!("tang-checkpoint-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    // The kill moments span about three saves, so that each writer finishes a few saves
    // and is killed at any point of one, however fast the disk's fsync is.
    let save = time_one_save(&root.with_extension("calibration"));
    let window_us = (3 * save.as_micros() as usize).max(2_000);
    let mut moments = SplitMix64::new(2026);
    let (mut mid_save, mut mid_removal, mut latest_step) = (0, 0, 0);
    for kill in 0..100 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env(WRITER_ENV, &root)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        while !line.contains("ready") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the writer exited before it was ready"
            );
        }
        std::thread::sleep(Duration::from_micros(moments.below(window_us) as u64));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        mid_save += usize::from(count_hidden(&root, ".tmp-") > 0);
        mid_removal += usize::from(count_hidden(&root, ".trash-") > 0);
        // Opening removes the leftovers; the next writer opens the root the same way.
        let reader = CheckpointDir::open(&root, RETENTION).unwrap();
        let latest = reader.latest().unwrap();
        let Some(latest) = latest else {
            assert_eq!(latest_step, 0, "kill {kill}: checkpoints disappeared");
            continue;
        };
        verify(&latest);
        assert!(
            latest.state().step >= latest_step,
            "kill {kill}: went back in time"
        );
        latest_step = latest.state().step;
        for (_, path) in reader.list().unwrap() {
            verify(&Checkpoint::load(path).unwrap());
        }
        // A kill between a save's rename and its removals leaves one checkpoint more than
        // the policy keeps; the next save removes it first.
        let kept = reader.list().unwrap().len();
        assert!(
            kept <= RETENTION.keep_last + RETENTION.keep_best + 1,
            "kill {kill}: {kept} checkpoints"
        );
    }
    println!(
        "100 kills within {window_us} us of a writer starting (one save: {save:?}): {mid_save} during a save, \
         {mid_removal} during a removal; {latest_step} checkpoints saved"
    );
    assert!(
        latest_step >= 50,
        "the writers saved too little to test anything"
    );
    assert!(mid_save > 0, "no kill landed inside a save");
    std::fs::remove_dir_all(&root).unwrap();
}
