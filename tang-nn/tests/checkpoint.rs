//! The checkpoint store: what a save writes, keep-last-N and keep-best, the trainer
//! state's JSON, and typed errors for bad names, repeated steps and damaged directories.

use std::path::PathBuf;

use tang_nn::checkpoint::{
    Checkpoint, CheckpointDir, CheckpointError, Mode, Retention, TRAINER_STATE_FILE, TrainerState,
};
use tang_nn::data::LoaderState;

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tang-checkpoint-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn state(step: u64, metric: Option<f64>) -> TrainerState {
    TrainerState {
        step,
        metric,
        ..Default::default()
    }
}

fn steps(dir: &CheckpointDir) -> Vec<u64> {
    dir.list().unwrap().into_iter().map(|(s, _)| s).collect()
}

#[test]
fn a_checkpoint_holds_its_files_and_trainer_state() {
    let root = scratch("roundtrip");
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    assert!(dir.latest().unwrap().is_none());
    let full = TrainerState {
        step: 1200,
        loader: Some(LoaderState {
            seed: 1,
            epoch: 3,
            position: 64,
        }),
        seeds: [
            ("init".to_string(), 1337),
            ("dropout".to_string(), u64::MAX),
        ]
        .into(),
        metric: Some(1.25),
        best_metric: Some(1.125),
        // A mixed-precision run's scaler state round-trips too.
        grad_scaler: Some(tang_nn::amp::GradScalerState {
            scale: 8192.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            growth_tracker: 17,
        }),
    };
    let saved = dir
        .save(
            &full,
            &[
                ("model.safetensors", b"weights"),
                ("optimizer.safetensors", b""),
            ],
        )
        .unwrap();
    assert_eq!(saved.path(), root.join("checkpoint-0000001200"));
    let latest = dir.latest().unwrap().unwrap();
    assert_eq!(latest.state(), &full, "u64 seeds survive JSON exactly");
    assert_eq!(latest.read("model.safetensors").unwrap(), b"weights");
    assert_eq!(latest.read("optimizer.safetensors").unwrap(), b"");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(latest.path().join(TRAINER_STATE_FILE)).unwrap())
            .unwrap();
    assert_eq!(json["step"], 1200);
    assert_eq!(json["loader"]["position"], 64);
    // Nothing but the checkpoint is left in the root.
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["checkpoint-0000001200"]);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn save_with_fsyncs_what_the_writer_creates() {
    let root = scratch("save-with");
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    let saved = dir
        .save_with(&state(1, None), |tmp| {
            std::fs::write(tmp.join("weights.bin"), [1u8, 2, 3])
        })
        .unwrap();
    assert_eq!(saved.read("weights.bin").unwrap(), [1, 2, 3]);
    // A writer's own error comes back as CheckpointError::Writer and leaves nothing.
    let err = dir
        .save_with(&state(2, None), |_| {
            Err::<(), _>(std::io::Error::other("disk on fire"))
        })
        .unwrap_err();
    assert!(matches!(err, CheckpointError::Writer(_)), "{err}");
    let err = dir
        .save_with(&state(3, None), |tmp| {
            std::fs::create_dir(tmp.join("nested"))
        })
        .unwrap_err();
    assert!(matches!(err, CheckpointError::InvalidName { .. }), "{err}");
    assert_eq!(steps(&dir), [1]);
    assert_eq!(
        std::fs::read_dir(&root).unwrap().count(),
        1,
        "no temporary directory left"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn keeps_the_last_n_and_the_best() {
    let root = scratch("retention");
    let keep = Retention {
        keep_last: 2,
        keep_best: 1,
        mode: Mode::Min,
    };
    let dir = CheckpointDir::open(&root, keep).unwrap();
    let metrics = [3.0, 1.0, 2.0, 2.5, 1.5, 4.0];
    for (i, m) in metrics.iter().enumerate() {
        dir.save(&state(10 * (i as u64 + 1), Some(*m)), &[])
            .unwrap();
    }
    // The two most recent (50, 60) and the best (20, metric 1.0).
    assert_eq!(steps(&dir), [20, 50, 60]);
    assert_eq!(dir.best().unwrap().unwrap().state().step, 20);
    assert_eq!(dir.latest().unwrap().unwrap().state().step, 60);

    let root_max = scratch("retention-max");
    let dir = CheckpointDir::open(
        &root_max,
        Retention {
            keep_last: 1,
            keep_best: 2,
            mode: Mode::Max,
        },
    )
    .unwrap();
    for (i, m) in metrics.iter().enumerate() {
        dir.save(&state(i as u64, Some(*m)), &[]).unwrap();
    }
    // Highest metrics: 4.0 (step 5, also the latest) and 3.0 (step 0).
    assert_eq!(steps(&dir), [0, 5]);
    std::fs::remove_dir_all(root).unwrap();
    std::fs::remove_dir_all(root_max).unwrap();
}

#[test]
fn leftovers_of_an_interrupted_save_are_removed_on_open() {
    let root = scratch("leftovers");
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    dir.save(&state(1, None), &[("a", b"1")]).unwrap();
    std::fs::create_dir(root.join(".tmp-checkpoint-0000000002-1-0")).unwrap();
    std::fs::write(root.join(".tmp-checkpoint-0000000002-1-0/a"), b"half").unwrap();
    std::fs::create_dir(root.join(".trash-checkpoint-0000000000-1")).unwrap();
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["checkpoint-0000000001"]);
    assert_eq!(dir.latest().unwrap().unwrap().state().step, 1);
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn bad_input_gives_typed_errors() {
    let root = scratch("errors");
    assert!(matches!(
        CheckpointDir::open(
            &root,
            Retention {
                keep_last: 0,
                ..Default::default()
            }
        ),
        Err(CheckpointError::InvalidOption { .. })
    ));
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    for name in ["../escape", "a/b", "", ".hidden", TRAINER_STATE_FILE, ".."] {
        let err = dir.save(&state(1, None), &[(name, b"x")]).unwrap_err();
        assert!(
            matches!(err, CheckpointError::InvalidName { .. }),
            "{name:?}: {err}"
        );
    }
    let err = dir.save(&state(1, Some(f64::NAN)), &[]).unwrap_err();
    assert!(
        matches!(err, CheckpointError::InvalidOption { .. }),
        "{err}"
    );
    dir.save(&state(1, None), &[]).unwrap();
    let err = dir.save(&state(1, None), &[]).unwrap_err();
    assert!(matches!(err, CheckpointError::Exists { .. }), "{err}");
    assert!(err.to_string().contains("later step"), "{err}");
    let latest = dir.latest().unwrap().unwrap();
    assert!(matches!(
        latest.read("../x"),
        Err(CheckpointError::InvalidName { .. })
    ));
    assert!(matches!(
        latest.read("missing"),
        Err(CheckpointError::Io { .. })
    ));
    // A checkpoint damaged by hand is reported, with what to do.
    std::fs::write(latest.path().join(TRAINER_STATE_FILE), b"{\"step\": ").unwrap();
    let err = dir.latest().unwrap_err();
    assert!(
        matches!(err, CheckpointError::Corrupt { .. }) && err.to_string().contains("delete"),
        "{err}"
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[test]
fn a_checkpoint_path_that_does_not_exist_is_reported_as_missing() {
    let root = scratch("missing");
    let err = Checkpoint::load(root.join("checkpoint-0000000007")).unwrap_err();
    assert!(matches!(err, CheckpointError::NotFound { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("does not exist") && !text.contains("damaged"),
        "{text}"
    );
}

#[test]
fn leftovers_of_a_crashed_save_are_removed_by_the_next_save() {
    let root = scratch("leftovers-save");
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    // Another process crashed in the middle of a save after this one opened the root.
    let crashed = root.join(format!(
        ".tmp-checkpoint-0000000002-{}-0",
        std::process::id().wrapping_add(1)
    ));
    std::fs::create_dir(&crashed).unwrap();
    std::fs::write(crashed.join("a"), b"half").unwrap();
    dir.save(&state(3, None), &[("a", b"3")]).unwrap();
    let names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["checkpoint-0000000003"]);
    std::fs::remove_dir_all(root).unwrap();
}
