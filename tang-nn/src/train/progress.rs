//! Training progress: an `indicatif` bar when standard error is a terminal, plain lines
//! every few steps when it is piped or redirected (a bar's redraws would fill a log
//! file).

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};

use super::TrainError;
use super::metrics::MetricsRecord;

/// Where progress goes.
enum Output {
    Bar(ProgressBar),
    Lines {
        out: Box<dyn Write + Send>,
        every: u64,
    },
}

/// Progress of a run of `total` steps, showing the latest metrics.
///
/// ```
/// use tang_nn::train::{MetricsRecord, Progress};
/// let mut progress = Progress::lines(Box::new(std::io::stdout()), 100, 50)?; // tqdm-like lines
/// for step in 1..=100 {
///     progress.update(&MetricsRecord { step, loss: Some(1.0), ..MetricsRecord::default() })?;
/// }
/// progress.finish();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Progress {
    output: Output,
    total: u64,
}

impl Progress {
    /// A bar on standard error when it is a terminal; otherwise a plain line on standard
    /// error every `total / 100` steps (at least every step), and at the last step.
    ///
    /// ```
    /// let progress = tang_nn::train::Progress::new(5000); // a bar on a terminal
    /// # let _ = progress;
    /// ```
    pub fn new(total: u64) -> Progress {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            // The template is a constant and valid; the default style is the fallback.
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30.cyan/blue} {pos}/{len} [{elapsed_precise}<{eta_precise}] {msg}",
            ) {
                bar.set_style(style);
            }
            Progress {
                output: Output::Bar(bar),
                total,
            }
        } else {
            Progress {
                output: Output::Lines {
                    out: Box::new(std::io::stderr()),
                    every: (total / 100).max(1),
                },
                total,
            }
        }
    }

    /// Plain lines to `out` every `every` steps and at the last step.
    ///
    /// ```
    /// let progress = tang_nn::train::Progress::lines(Box::new(std::io::sink()), 10, 1)?;
    /// assert!(!progress.is_bar());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::InvalidOption`] when `every` is 0.
    pub fn lines(
        out: Box<dyn Write + Send>,
        total: u64,
        every: u64,
    ) -> Result<Progress, TrainError> {
        if every == 0 {
            return Err(TrainError::InvalidOption {
                detail: "every is 0; pass at least 1".into(),
            });
        }
        Ok(Progress {
            output: Output::Lines { out, every },
            total,
        })
    }

    /// Whether progress is drawn as a bar.
    ///
    /// ```
    /// let progress = tang_nn::train::Progress::lines(Box::new(std::io::sink()), 10, 1)?;
    /// assert!(!progress.is_bar()); // lines, not a bar
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_bar(&self) -> bool {
        matches!(self.output, Output::Bar(_))
    }

    /// Shows that `record.step` steps are done, with the record's measurements.
    ///
    /// ```
    /// use tang_nn::train::{MetricsRecord, Progress};
    /// let mut progress = Progress::lines(Box::new(std::io::sink()), 10, 1)?;
    /// progress.update(&MetricsRecord { step: 1, loss: Some(2.0), lr: Some(1e-3), ..MetricsRecord::default() })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Io`] when a plain line cannot be written.
    pub fn update(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        match &mut self.output {
            Output::Bar(bar) => {
                bar.set_position(record.step);
                bar.set_message(describe(record));
                Ok(())
            }
            Output::Lines { out, every } => {
                if !record.step.is_multiple_of(*every) && record.step != self.total {
                    return Ok(());
                }
                let percent = if self.total == 0 {
                    100.0
                } else {
                    100.0 * record.step as f64 / self.total as f64
                };
                let line = format!(
                    "step {}/{} ({percent:.0}%) {}",
                    record.step,
                    self.total,
                    describe(record)
                );
                write_line(out, line.trim_end())
            }
        }
    }

    /// Prints a message without breaking the bar (evaluation results, "saving").
    ///
    /// ```
    /// let mut progress = tang_nn::train::Progress::lines(Box::new(std::io::sink()), 10, 1)?;
    /// progress.println("step 250: val loss 1.4")?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Io`] when a plain line cannot be written.
    pub fn println(&mut self, message: &str) -> Result<(), TrainError> {
        match &mut self.output {
            Output::Bar(bar) => {
                bar.println(message);
                Ok(())
            }
            Output::Lines { out, .. } => write_line(out, message),
        }
    }

    /// Leaves the bar drawn at its last position.
    ///
    /// ```
    /// let progress = tang_nn::train::Progress::lines(Box::new(std::io::sink()), 10, 1)?;
    /// progress.finish();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finish(&self) {
        if let Output::Bar(bar) = &self.output {
            bar.finish();
        }
    }
}

/// Writes one line and flushes it, so a piped log is current.
fn write_line(out: &mut Box<dyn Write + Send>, line: &str) -> Result<(), TrainError> {
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|source| TrainError::Io {
            action: "write progress to",
            path: "the progress output".into(),
            source,
        })
}

/// The record's measurements as `name value` pairs, in a fixed order.
fn describe(record: &MetricsRecord) -> String {
    let fields = [
        ("loss", record.loss, 4, false),
        ("val_loss", record.val_loss, 4, false),
        ("lr", record.lr, 2, true),
        ("grad_norm", record.grad_norm, 3, false),
        ("ms/step", record.ms_per_step, 1, false),
        ("samples/s", record.samples_per_sec, 0, false),
        ("tokens/s", record.tokens_per_sec, 0, false),
        ("mfu %", record.mfu.map(|m| 100.0 * m), 1, false),
        ("eval ms", record.eval_ms, 0, false),
        ("checkpoint ms", record.checkpoint_ms, 0, false),
    ];
    let mut parts = Vec::new();
    for (name, value, digits, scientific) in fields {
        if let Some(v) = value {
            parts.push(if scientific {
                format!("{name} {v:.digits$e}")
            } else {
                format!("{name} {v:.digits$}")
            });
        }
    }
    parts.join(" | ")
}
