//! `metrics.jsonl`: one JSON object per logged step, appended as training goes, and the
//! timer that measures milliseconds per step and samples (or tokens) per second.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
// web-time: std's `Instant::now` panics on wasm32, where a page may time its steps.
use web_time::Instant;

use serde::{Deserialize, Serialize};

use super::error::{TrainError, io_error};

/// One line of `metrics.jsonl`: the step and whichever measurements were taken at it.
/// Absent measurements are left out of the line. JSON has no NaN or infinity, so a
/// non-finite value (a diverged loss) is written as `null` and reads back as `None`.
///
/// ```
/// use tang_nn::train::MetricsRecord;
/// let record = MetricsRecord { step: 100, loss: Some(2.5), lr: Some(6e-4), ..MetricsRecord::default() };
/// assert_eq!(record.val_loss, None); // left out of the JSON line
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsRecord {
    /// The optimizer step the measurements belong to.
    pub step: u64,
    /// Training loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    /// Validation loss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val_loss: Option<f64>,
    /// Learning rate used for this step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// Global L2 norm of the gradients (before clipping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_norm: Option<f64>,
    /// Training samples per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_per_sec: Option<f64>,
    /// Training tokens per second (language models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_sec: Option<f64>,
    /// Wall-clock milliseconds per training step, evaluation and checkpoints left out
    /// (they are `eval_ms` and `checkpoint_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms_per_step: Option<f64>,
    /// Model FLOPs utilisation: the model's FLOPs per second (as nanoGPT counts them,
    /// [`super::TrainerOptions::flops_per_step`]) over the adapter's peak
    /// ([`super::peak_flops`]), a fraction in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mfu: Option<f64>,
    /// Milliseconds the evaluation at this step took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_ms: Option<f64>,
    /// Milliseconds the checkpoint written at this step took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_ms: Option<f64>,
}

/// An append-only `metrics.jsonl`. Each record is written as one complete line with one
/// write, so a crash loses at most the line being written.
///
/// ```
/// use tang_nn::train::{MetricsLog, MetricsRecord, read_metrics};
/// # let dir = std::env::temp_dir().join(format!("tang-doc-metricslog-{}", std::process::id()));
/// let mut log = MetricsLog::open(dir.join("metrics.jsonl"))?;
/// log.append(&MetricsRecord { step: 10, loss: Some(3.2), ..MetricsRecord::default() })?;
/// assert_eq!(read_metrics(log.path())?[0].loss, Some(3.2));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct MetricsLog {
    path: PathBuf,
    file: File,
}

impl MetricsLog {
    /// Opens `path` for appending, creating it (and its directory) if needed.
    ///
    /// ```
    /// use tang_nn::train::MetricsLog;
    /// # let dir = std::env::temp_dir().join(format!("tang-doc-metricslog-open-{}", std::process::id()));
    /// let log = MetricsLog::open(dir.join("run/metrics.jsonl"))?; // creates run/
    /// assert!(log.path().exists());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Io`] when the file cannot be created or opened.
    pub fn open(path: impl Into<PathBuf>) -> Result<MetricsLog, TrainError> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_error("create directory", dir))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_error("open for appending", &path))?;
        Ok(MetricsLog { path, file })
    }

    /// Opens `path` for appending after dropping its records past `step` (a run resumed
    /// from the checkpoint of `step` logs those steps again), and returns the records
    /// kept. The shortened file replaces the old one atomically (written beside it and
    /// renamed); a missing file starts empty.
    ///
    /// ```
    /// use tang_nn::train::{MetricsLog, MetricsRecord};
    /// # let dir = std::env::temp_dir().join(format!("tang-doc-metricslog-through-{}", std::process::id()));
    /// let path = dir.join("metrics.jsonl");
    /// let mut log = MetricsLog::open(&path)?;
    /// for step in [10, 20, 30] {
    ///     log.append(&MetricsRecord { step, ..MetricsRecord::default() })?;
    /// }
    /// // Resuming from the checkpoint of step 20: step 30 will be logged again.
    /// let (_log, kept) = MetricsLog::open_through(&path, 20)?;
    /// assert_eq!(kept.iter().map(|r| r.step).collect::<Vec<_>>(), [10, 20]);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`MetricsLog::open`] and [`read_metrics`].
    pub fn open_through(
        path: impl Into<PathBuf>,
        step: u64,
    ) -> Result<(MetricsLog, Vec<MetricsRecord>), TrainError> {
        let path = path.into();
        let mut kept = Vec::new();
        if path.exists() {
            let all = read_metrics(&path)?;
            let total = all.len();
            kept = all.into_iter().filter(|r| r.step <= step).collect();
            if kept.len() != total || !ends_with_newline(&path)? {
                let mut text = String::new();
                for r in &kept {
                    text.push_str(&record_line(r)?);
                }
                let temp = path.with_extension("jsonl.tmp");
                fs::write(&temp, text).map_err(io_error("write", &temp))?;
                fs::rename(&temp, &path).map_err(io_error("replace", &path))?;
            }
        }
        Ok((MetricsLog::open(path)?, kept))
    }

    /// The file's path.
    ///
    /// ```
    /// use tang_nn::train::MetricsLog;
    /// # let dir = std::env::temp_dir().join(format!("tang-doc-metricslog-path-{}", std::process::id()));
    /// let log = MetricsLog::open(dir.join("metrics.jsonl"))?;
    /// assert!(log.path().ends_with("metrics.jsonl"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` as one line.
    ///
    /// ```
    /// use tang_nn::train::{MetricsLog, MetricsRecord};
    /// # let dir = std::env::temp_dir().join(format!("tang-doc-metricslog-append-{}", std::process::id()));
    /// let mut log = MetricsLog::open(dir.join("metrics.jsonl"))?;
    /// log.append(&MetricsRecord { step: 1, loss: Some(f64::NAN), ..MetricsRecord::default() })?; // written as null
    /// assert!(std::fs::read_to_string(log.path())?.contains("null"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`TrainError::Io`] when the write fails.
    pub fn append(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        let line = record_line(record)?;
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(io_error("append to", &self.path))
    }
}

/// `record` as one line of JSON with its newline.
fn record_line(record: &MetricsRecord) -> Result<String, TrainError> {
    let mut line = serde_json::to_string(record).map_err(|e| TrainError::InvalidOption {
        detail: format!("the metrics record does not serialize: {e}"),
    })?;
    line.push('\n');
    Ok(line)
}

/// Whether the file is empty or ends with a newline (a crash may cut the last line).
fn ends_with_newline(path: &Path) -> Result<bool, TrainError> {
    let text = fs::read(path).map_err(io_error("read", path))?;
    Ok(text.last().is_none_or(|&b| b == b'\n'))
}

/// Reads every record of a `metrics.jsonl`. A last line without its newline (cut short
/// by a crash) is skipped; any other line that does not parse is an error.
///
/// ```
/// use tang_nn::train::{MetricsLog, MetricsRecord, read_metrics};
/// # let dir = std::env::temp_dir().join(format!("tang-doc-read-metrics-{}", std::process::id()));
/// let mut log = MetricsLog::open(dir.join("metrics.jsonl"))?;
/// log.append(&MetricsRecord { step: 5, loss: Some(1.0), ..MetricsRecord::default() })?;
/// let losses: Vec<(u64, f64)> = read_metrics(log.path())?.iter().filter_map(|r| Some((r.step, r.loss?))).collect();
/// assert_eq!(losses, [(5, 1.0)]);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`TrainError::Io`] when the file cannot be read; [`TrainError::BadMetricsLine`].
pub fn read_metrics(path: impl AsRef<Path>) -> Result<Vec<MetricsRecord>, TrainError> {
    let path = path.as_ref();
    let text = fs::read_to_string(path).map_err(io_error("read", path))?;
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| TrainError::BadMetricsLine {
                path: path.to_path_buf(),
                line: i + 1,
                detail: e.to_string(),
            })
        })
        .collect()
}

/// Measures wall-clock time between laps: milliseconds per step and items (samples or
/// tokens) per second since the previous lap.
///
/// GPU work is queued, not finished, when a step returns; a lap is accurate when it
/// follows a read from the GPU (the logged loss), which waits for the queued work.
///
/// ```
/// use tang_nn::train::StepTimer;
/// let mut timer = StepTimer::new();
/// std::thread::sleep(std::time::Duration::from_millis(2)); // ten steps' work
/// if let Some((ms_per_step, tokens_per_sec)) = timer.lap(10, 10 * 1024) {
///     assert!(ms_per_step > 0.0 && tokens_per_sec > 0.0);
/// }
/// ```
#[derive(Clone, Debug)]
pub struct StepTimer {
    last: Instant,
    /// Time inside the lap that was not training (evaluation, checkpoints).
    excluded: web_time::Duration,
}

impl Default for StepTimer {
    fn default() -> Self {
        StepTimer::new()
    }
}

impl StepTimer {
    /// A timer whose first lap starts now.
    ///
    /// ```
    /// let timer = tang_nn::train::StepTimer::new(); // the first lap starts now
    /// # let _ = timer;
    /// ```
    pub fn new() -> StepTimer {
        StepTimer {
            last: Instant::now(),
            excluded: web_time::Duration::ZERO,
        }
    }

    /// Ends a lap of `steps` steps that processed `items` samples or tokens and starts the
    /// next: returns `(ms_per_step, items_per_sec)` (`None` for a lap of 0 steps or no
    /// measurable time).
    ///
    /// ```
    /// let mut timer = tang_nn::train::StepTimer::new();
    /// assert_eq!(timer.lap(0, 0), None); // a lap of no steps measures nothing
    /// ```
    pub fn lap(&mut self, steps: u64, items: u64) -> Option<(f64, f64)> {
        let now = Instant::now();
        let lap = now.duration_since(self.last);
        let seconds = lap.saturating_sub(self.excluded).as_secs_f64();
        self.last = now;
        self.excluded = web_time::Duration::ZERO;
        (steps > 0 && seconds > 0.0).then(|| (seconds * 1e3 / steps as f64, items as f64 / seconds))
    }

    /// Leaves `time` spent inside the current lap on something other than training steps
    /// (an evaluation, a checkpoint) out of it.
    ///
    /// ```
    /// let mut timer = tang_nn::train::StepTimer::new();
    /// std::thread::sleep(std::time::Duration::from_millis(20)); // an evaluation
    /// timer.exclude(std::time::Duration::from_millis(20));
    /// let (ms_per_step, _) = timer.lap(1, 1).unwrap_or((0.0, 0.0));
    /// assert!(ms_per_step < 20.0);
    /// ```
    pub fn exclude(&mut self, time: web_time::Duration) {
        self.excluded += time;
    }
}
