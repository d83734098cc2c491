//! tang's benchmark program: GPU cases timed with completion waits after a warm-up
//! (median of repeats, random data), printed as a table and written as JSON.
//!
//! `cargo run --release -p tang-examples --example bench -- [--quick] [--json PATH] [--only SUBSTRING]`
//! (`--help` lists the options)
//!
//! `--tiny` runs only the training-step cases, at small shapes (names suffixed `_tiny`),
//! to check them on a software adapter.
//!
//! Case names match `torch_anchors.py` where PyTorch has a counterpart, so the two JSON
//! files compare by name. `--cold-start` is internal: the program re-runs itself with it
//! to time process start to the first downloaded result.

mod attention;
mod elementwise;
mod gpt2;
mod matmul;
mod recipe;
mod report;
mod rows;
mod training;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use report::Report;
use tang_runtime::{Device, Tensor};

fn cold_start_child() -> ExitCode {
    let run = || -> Result<f32, tang_runtime::Error> {
        let dev = Device::new()?;
        let x = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[4])?;
        let y = dev.map(&[&x], |v| v[0] * 2.0 + 1.0)?;
        Ok(y.to_vec()?.iter().sum())
    };
    match run() {
        Ok(24.0) => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("cold start: wrong result {s}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cold start: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Spawns this program with `--cold-start` and times it to exit (median of a few).
fn cold_start(report: &mut Report, quick: bool) {
    let name = "cold_start_first_result";
    if !report.wants(name) {
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return report.fail(name, &e),
    };
    let mut ms = Vec::new();
    for _ in 0..if quick { 1 } else { 5 } {
        let t = Instant::now();
        match std::process::Command::new(&exe)
            .arg("--cold-start")
            .status()
        {
            Ok(s) if s.success() => ms.push(t.elapsed().as_secs_f64() * 1e3),
            Ok(s) => return report.fail(name, &format!("child exited with {s}")),
            Err(e) => return report.fail(name, &e),
        }
    }
    ms.sort_by(f64::total_cmp);
    report.add(name, ms[ms.len() / 2]);
}

/// Times tang's GPU cases and prints them as a table (and JSON with --json).
#[derive(Parser)]
struct Cli {
    /// Fewer repeats and smaller warm-ups, for a quick look.
    #[arg(long)]
    quick: bool,
    /// Only the training-step cases, at small shapes (names suffixed `_tiny`).
    #[arg(long)]
    tiny: bool,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "PATH")]
    json: Option<String>,
    /// Run only the cases whose names contain this text.
    #[arg(long, value_name = "SUBSTRING")]
    only: Option<String>,
    /// Internal: time process start to the first downloaded result.
    #[arg(long = "cold-start", hide = true)]
    cold_start_child: bool,
}

fn main() -> ExitCode {
    let Cli {
        quick,
        tiny,
        json,
        only,
        cold_start_child: child,
    } = Cli::parse();
    if child {
        return cold_start_child();
    }
    let dev = match Device::new() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let info = dev.info();
    let mut report = Report::new(
        format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type),
        only,
    );

    gpt2::run(&dev, quick, tiny, &mut report);
    if tiny {
        training::run(&dev, quick, true, &mut report);
        recipe::run(&dev, quick, true, &mut report);
        return finish(&report, json);
    }
    if let Err(e) = elementwise::warm_up(&dev, if quick { 0.2 } else { 2.0 }) {
        eprintln!("bench: warm-up failed: {e}");
        return ExitCode::FAILURE;
    }
    elementwise::run(&dev, quick, &mut report);
    // Groups are skipped whole when `--only` names none of their cases.
    // Each group starts on a busy GPU (the clocks drop during the launch-bound cases).
    let rewarm = |report: &mut Report| {
        if let Err(e) = elementwise::warm_up(&dev, if quick { 0.1 } else { 0.5 }) {
            report.fail("warm-up", &e);
        }
    };
    if report.wants("matmul") {
        rewarm(&mut report);
        matmul::run(&dev, quick, &mut report);
    }
    if ["rows", "softmax", "layer_norm", "bias_grad"]
        .iter()
        .any(|g| report.wants(g))
    {
        rewarm(&mut report);
        rows::run(&dev, quick, &mut report);
        rows::bias_grads(&dev, quick, &mut report);
    }
    if report.wants("attention") {
        rewarm(&mut report);
        attention::run(&dev, quick, &mut report);
    }
    if ["mlp_", "gpt_char", "_step"]
        .iter()
        .any(|g| report.wants(g))
    {
        rewarm(&mut report);
        training::run(&dev, quick, false, &mut report);
    }
    if report.wants("gpt_recipe") {
        rewarm(&mut report);
        recipe::run(&dev, quick, false, &mut report);
    }
    cold_start(&mut report, quick);
    finish(&report, json)
}

/// Writes the JSON (when asked for) and turns failures into the exit status.
fn finish(report: &Report, json: Option<String>) -> ExitCode {
    if let Some(path) = json
        && let Err(e) = std::fs::write(&path, report.to_json())
    {
        eprintln!("bench: cannot write {path}: {e}");
        return ExitCode::FAILURE;
    }
    if report.failures() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
