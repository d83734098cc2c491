//! [`Trainer`], the training loop over a module and an optimizer, and its plain pieces,
//! each usable on its own: [`MetricsLog`]
//! (`metrics.jsonl`), [`StepTimer`] (ms per step, samples or tokens per second),
//! [`Progress`] (a progress bar on a terminal, plain lines when piped), [`peak_flops`]
//! (the adapter's peak, for model FLOPs utilisation),
//! [`plot_loss_curve`] (a PNG of the loss curves) and [`Interrupt`] (Ctrl-C finishes the
//! step, saves and exits).

mod context;
mod error;
mod fit;
mod font;
mod interrupt;
mod metrics;
mod options;
mod peak;
mod plot;
mod progress;
mod replicas;
mod state;
mod step;
mod trainer;

pub use context::{FitSummary, StepContext, StepReport};
pub use error::TrainError;
pub use interrupt::Interrupt;
pub use metrics::{MetricsLog, MetricsRecord, StepTimer, read_metrics};
pub use options::{Throughput, TrainerOptions};
pub use peak::{peak_flops, training_peak_flops};
pub use plot::{PlotOptions, plot_loss_curve};
pub use progress::Progress;
pub use trainer::{CHECKPOINTS_DIR, METRICS_FILE, PLOT_FILE, STEP_SEED, Trainer};
