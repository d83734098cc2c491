//! The training loop's plain pieces: metrics.jsonl, plain progress lines, the loss-curve
//! PNG and the step timer.

mod train_common;

use std::io::Write;
use std::path::PathBuf;

use train_common::Captured;

use tang_nn::train::{
    MetricsLog, MetricsRecord, PlotOptions, Progress, StepTimer, TrainError, plot_loss_curve,
    read_metrics,
};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tang-train-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A made-up but realistic run: a decaying, noisy training loss every step and a
/// validation loss every 50 steps.
fn run(steps: u64) -> Vec<MetricsRecord> {
    (1..=steps)
        .map(|step| {
            let t = step as f64;
            MetricsRecord {
                step,
                loss: Some(1.2 + 3.0 * (-t / 120.0).exp() + 0.05 * (t * 1.7).sin()),
                val_loss: (step % 50 == 0).then(|| 1.3 + 3.0 * (-t / 120.0).exp()),
                lr: Some(6e-4),
                grad_norm: Some(0.9),
                tokens_per_sec: Some(51_200.0),
                ms_per_step: Some(10.0),
                ..Default::default()
            }
        })
        .collect()
}

#[test]
fn metrics_lines_are_json_records_and_read_back() {
    let dir = scratch("metrics");
    let path = dir.join("run/metrics.jsonl");
    let records = run(120);
    {
        let mut log = MetricsLog::open(&path).unwrap();
        for r in &records[..60] {
            log.append(r).unwrap();
        }
    }
    // Reopening appends.
    let mut log = MetricsLog::open(&path).unwrap();
    for r in &records[60..] {
        log.append(r).unwrap();
    }
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 120);
    for (line, r) in lines.iter().zip(&records) {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["step"], r.step);
        assert_eq!(value["loss"].as_f64(), r.loss);
        assert_eq!(
            value.get("val_loss").is_some(),
            r.val_loss.is_some(),
            "absent values are left out"
        );
    }
    assert_eq!(read_metrics(&path).unwrap(), records);

    // A line cut short by a crash is skipped; a bad complete line is an error.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"step\": 121, \"lo")
        .unwrap();
    assert_eq!(read_metrics(&path).unwrap().len(), 120);
    std::fs::write(&path, "{\"step\": 1}\nnot json\n").unwrap();
    assert!(matches!(
        read_metrics(&path),
        Err(TrainError::BadMetricsLine { line: 2, .. })
    ));
    // Non-finite values become null, which reads back as None.
    let mut log = MetricsLog::open(dir.join("nan.jsonl")).unwrap();
    log.append(&MetricsRecord {
        step: 3,
        loss: Some(f64::NAN),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(read_metrics(dir.join("nan.jsonl")).unwrap()[0].loss, None);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn piped_progress_prints_plain_lines_every_n_steps_and_at_the_end() {
    let out = Captured::default();
    let mut progress = Progress::lines(Box::new(out.clone()), 25, 10).unwrap();
    assert!(!progress.is_bar());
    for r in run(25) {
        progress.update(&r).unwrap();
    }
    progress.println("saved checkpoint-25").unwrap();
    let text = out.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with("step 10/25 (40%) loss "),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains("| lr 6.00e-4 |") && lines[0].contains("tokens/s 51200"),
        "{}",
        lines[0]
    );
    assert!(lines[2].starts_with("step 25/25 (100%)"));
    assert_eq!(lines[3], "saved checkpoint-25");
    assert!(
        !text.contains('\r') && !text.contains('\x1b'),
        "no terminal control codes when piped"
    );
    assert!(Progress::lines(Box::new(out), 25, 0).is_err());
}

#[test]
fn the_loss_curve_is_a_png_of_the_requested_size_with_both_curves() {
    let dir = scratch("plot");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("loss.png");
    plot_loss_curve(
        &path,
        &run(400),
        PlotOptions {
            width: 640,
            height: 400,
        },
    )
    .unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (640, 400));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let count = |rgb: [u8; 3]| pixels.chunks(3).filter(|p| *p == rgb).count();
    let (blue, red, text) = (
        count([31, 119, 180]),
        count([214, 39, 40]),
        count([40, 40, 40]),
    );
    println!("pixels: {blue} train-blue, {red} val-red, {text} text/frame");
    assert!(blue > 1000, "the training curve is drawn ({blue} pixels)");
    assert!(
        red > 200,
        "the validation curve and markers are drawn ({red} pixels)"
    );
    assert!(text > 2000, "labels and frame are drawn ({text} pixels)");
    let white = count([255, 255, 255]);
    assert!(white > pixels.len() / 3 / 2, "mostly background");
    // Only the final file is left: the temporary one was renamed over it.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

    // Redrawing on demand replaces the file; bad input is a typed error.
    plot_loss_curve(&path, &run(3), PlotOptions::default()).unwrap();
    let single = [MetricsRecord {
        step: 7,
        loss: Some(2.0),
        ..Default::default()
    }];
    plot_loss_curve(&path, &single, PlotOptions::default()).unwrap();
    let no_loss = [MetricsRecord {
        step: 1,
        loss: Some(f64::NAN),
        ..Default::default()
    }];
    assert!(matches!(
        plot_loss_curve(&path, &no_loss, PlotOptions::default()),
        Err(TrainError::NothingToPlot)
    ));
    let tiny = PlotOptions {
        width: 10,
        height: 10,
    };
    assert!(matches!(
        plot_loss_curve(&path, &run(3), tiny),
        Err(TrainError::InvalidOption { .. })
    ));
    let huge = PlotOptions {
        width: u32::MAX,
        height: u32::MAX,
    };
    assert!(matches!(
        plot_loss_curve(&path, &run(3), huge),
        Err(TrainError::InvalidOption { .. })
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn step_timer_reports_ms_per_step_and_throughput() {
    let mut timer = StepTimer::new();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (ms, per_sec) = timer.lap(4, 4 * 256).unwrap();
    assert!((5.0..5000.0).contains(&ms), "{ms} ms per step");
    assert!(
        per_sec > 0.0 && per_sec <= 1024.0 / 0.020,
        "{per_sec} items per second"
    );
    assert!(timer.lap(0, 0).is_none());
}
