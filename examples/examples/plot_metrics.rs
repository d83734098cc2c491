//! Draws the loss curve of a `metrics.jsonl` (tang's trainer writes one; so does
//! `examples/scripts/train_char_gpt_torch.py`) into a PNG: training loss and validation
//! loss against the step.
//!
//! ```text
//! cargo run --release -p tang-examples --example plot_metrics -- runs/char-gpt/metrics.jsonl loss.png
//! ```

use tang_examples::report::Report;
use tang_nn::train::{PlotOptions, plot_loss_curve, read_metrics};

fn main() -> Result<(), Report> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [metrics, png] = args.as_slice() else {
        return Err("usage: plot_metrics METRICS.jsonl OUT.png".into());
    };
    plot_loss_curve(png, &read_metrics(metrics)?, PlotOptions::default())?;
    println!("wrote {png}");
    Ok(())
}
