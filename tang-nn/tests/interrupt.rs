//! Ctrl-C: the first SIGINT lets a training loop finish its step, save and exit cleanly;
//! a second one exits at once with status 130. The loops run in child processes (this
//! test binary re-invoked with `TANG_INTERRUPT_CHILD` set), so the signals reach only
//! them.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
use tang_nn::train::Interrupt;

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

/// The child's loop: steps until interrupted, then saves and returns.
fn train_until_interrupted(root: &Path) {
    let interrupt = Interrupt::install().unwrap();
    let checkpoints = CheckpointDir::open(root, Retention::default()).unwrap();
    println!("ready");
    let mut step = 0u64;
    loop {
        std::thread::sleep(Duration::from_millis(2)); // one training step
        step += 1;
        if interrupt.requested() {
            checkpoints
                .save(
                    &TrainerState {
                        step,
                        ..Default::default()
                    },
                    &[("model.safetensors", b"w")],
                )
                .unwrap();
            println!("stopped cleanly at step {step}");
            return;
        }
    }
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
    let step: u64 = rest
        .lines()
        .find_map(|l| l.strip_prefix("stopped cleanly at step "))
        .expect("the loop reports its clean stop")
        .parse()
        .unwrap();
    let latest = CheckpointDir::open(&root, Retention::default())
        .unwrap()
        .latest()
        .unwrap()
        .unwrap();
    assert_eq!(
        latest.state().step,
        step,
        "the checkpoint is of the step that was finished"
    );
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
