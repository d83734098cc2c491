//! Draws the loss curve of a `metrics.jsonl` (tang's trainer writes one; so does
//! `examples/scripts/train_char_gpt_torch.py`) into a PNG: training loss and validation
//! loss against the step.
//!
//! ```text
//! cargo run --release -p tang-examples --example plot_metrics -- runs/char-gpt/metrics.jsonl loss.png
//! ```

use std::process::ExitCode;

use tang_nn::train::{PlotOptions, plot_loss_curve, read_metrics};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [metrics, png] = args.as_slice() else {
        eprintln!("usage: plot_metrics METRICS.jsonl OUT.png");
        return ExitCode::from(2);
    };
    match read_metrics(metrics)
        .and_then(|records| plot_loss_curve(png, &records, PlotOptions::default()))
    {
        Ok(()) => {
            println!("wrote {png}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("plot_metrics: {e}");
            ExitCode::FAILURE
        }
    }
}
