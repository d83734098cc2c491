//! Draws the loss curve of a `metrics.jsonl` (tang's trainer writes one; so does
//! `examples/scripts/train_char_gpt_torch.py`) into a PNG: training loss and validation
//! loss against the step.
//!
//! ```text
//! cargo run --release -p tang-examples --example plot_metrics -- runs/char-gpt/metrics.jsonl loss.png
//! ```

use clap::Parser;
use tang_examples::report::Report;
use tang_nn::train::{PlotOptions, plot_loss_curve, read_metrics};

/// Draws the training and validation loss of a metrics.jsonl into a PNG.
#[derive(Parser)]
struct Cli {
    /// The metrics.jsonl to read (one JSON object per logged step).
    metrics: String,
    /// The PNG to write.
    png: String,
}

fn main() -> Result<(), Report> {
    let Cli { metrics, png } = Cli::parse();
    plot_loss_curve(&png, &read_metrics(&metrics)?, PlotOptions::default())?;
    println!("wrote {png}");
    Ok(())
}
