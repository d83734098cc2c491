//! Checkpoints as directories written atomically, with keep-last-N and keep-best.
//!
//! A checkpoint is a directory `checkpoint-<step>` under a root, holding whatever files
//! the caller gives it (model weights as safetensors, optimizer state, anything else)
//! and `trainer_state.json` ([`TrainerState`]: step, loader position, seeds, metrics).
//! [`CheckpointDir::save`] writes everything into a hidden temporary directory, fsyncs
//! each file and the directory, renames it to its final name and fsyncs the root, so a
//! crash at any moment leaves either the complete checkpoint or none: the latest
//! checkpoint always loads. Old checkpoints are removed by renaming them away first, for
//! the same reason. One process writes to a root at a time.

mod dir;
mod durable;
mod error;
mod training;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use dir::CheckpointDir;
pub use error::CheckpointError;
pub use training::{MODEL_FILE, OPTIMIZER_FILE, load_training, save_training};

use crate::data::LoaderState;
use error::io_error;

/// The trainer state file in every checkpoint directory.
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-trainer_state_file-{}", std::process::id()));
/// use tang_nn::checkpoint::TRAINER_STATE_FILE;
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// let checkpoint = dir.save(&TrainerState { step: 1, ..TrainerState::default() }, &[])?;
/// assert!(checkpoint.path().join(TRAINER_STATE_FILE).exists());
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const TRAINER_STATE_FILE: &str = "trainer_state.json";

const CHECKPOINT_PREFIX: &str = "checkpoint-";
const TEMP_PREFIX: &str = ".tmp-";
const TRASH_PREFIX: &str = ".trash-";

/// What a training loop needs, besides weights and optimizer state, to continue exactly.
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-trainerstate-{}", std::process::id()));
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// let mut state = TrainerState { step: 500, metric: Some(1.42), ..TrainerState::default() };
/// state.seeds.insert("data".into(), 1337);
/// let checkpoint = dir.save(&state, &[])?;
/// assert_eq!(checkpoint.state(), &state); // read back from trainer_state.json
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    /// Optimizer steps taken.
    pub step: u64,
    /// Where the data loader is, when one is used.
    #[serde(default)]
    pub loader: Option<LoaderState>,
    /// Named seeds (initialisation, dropout, data) so a resumed run draws the same numbers.
    #[serde(default)]
    pub seeds: BTreeMap<String, u64>,
    /// This checkpoint's value of the monitored metric (validation loss, say): what
    /// keep-best ranks by. Finite.
    #[serde(default)]
    pub metric: Option<f64>,
    /// The best value of the monitored metric so far. Finite.
    #[serde(default)]
    pub best_metric: Option<f64>,
    /// The gradient scaler's state, in a mixed-precision run (PyTorch's
    /// `scaler.state_dict()`, saved beside the optimizer's in its recipe).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_scaler: Option<crate::amp::GradScalerState>,
}

/// Whether a lower or a higher metric is better (PyTorch Lightning's `mode`).
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-mode-{}", std::process::id()));
/// use tang_nn::checkpoint::Mode;
/// // Keep the checkpoint with the highest accuracy (Lightning's mode="max").
/// let retention = Retention { keep_last: 1, keep_best: 1, mode: Mode::Max };
/// let dir = CheckpointDir::open(&root, retention)?;
/// for (step, accuracy) in [(1, 0.9), (2, 0.7), (3, 0.8)] {
///     dir.save(&TrainerState { step, metric: Some(accuracy), ..TrainerState::default() }, &[])?;
/// }
/// assert_eq!(dir.best()?.map(|c| c.state().step), Some(1));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Lower is better (losses).
    #[default]
    Min,
    /// Higher is better (accuracies).
    Max,
}

impl Mode {
    /// Whether `a` is better than `b`.
    ///
    /// ```
    /// use tang_nn::checkpoint::Mode;
    /// assert!(Mode::Min.is_better(0.5, 1.0) && Mode::Max.is_better(1.0, 0.5));
    /// ```
    pub fn is_better(self, a: f64, b: f64) -> bool {
        match self {
            Mode::Min => a < b,
            Mode::Max => a > b,
        }
    }
}

/// Which checkpoints a [`CheckpointDir`] keeps after each save: the `keep_last` most
/// recent ones and the `keep_best` ones with the best `metric` (checkpoints without a
/// metric never count as best).
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-retention-{}", std::process::id()));
/// // Keep the 2 most recent checkpoints and the best one by metric (lowest loss).
/// let dir = CheckpointDir::open(&root, Retention { keep_last: 2, ..Retention::default() })?;
/// for (step, loss) in [(1, 1.0), (2, 3.0), (3, 2.0), (4, 2.5)] {
///     dir.save(&TrainerState { step, metric: Some(loss), ..TrainerState::default() }, &[])?;
/// }
/// let steps: Vec<u64> = dir.list()?.into_iter().map(|(step, _)| step).collect();
/// assert_eq!(steps, [1, 3, 4]);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// How many of the most recent checkpoints to keep (at least 1).
    pub keep_last: usize,
    /// How many of the best checkpoints to keep besides those.
    pub keep_best: usize,
    /// Whether a lower or a higher metric is better.
    pub mode: Mode,
}

impl Default for Retention {
    /// The 3 most recent checkpoints and the one with the lowest metric.
    fn default() -> Self {
        Retention {
            keep_last: 3,
            keep_best: 1,
            mode: Mode::Min,
        }
    }
}

/// A complete checkpoint on disk.
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-{}", std::process::id()));
/// use tang_nn::checkpoint::Checkpoint;
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// let saved = dir.save(&TrainerState { step: 7, ..TrainerState::default() }, &[("notes.txt", b"hello")])?;
/// let loaded = Checkpoint::load(saved.path())?;
/// assert_eq!((loaded.state().step, loaded.read("notes.txt")?), (7, b"hello".to_vec()));
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    path: PathBuf,
    state: TrainerState,
}

impl Checkpoint {
    /// Opens the checkpoint in `path` (a `checkpoint-<step>` directory).
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-load-{}", std::process::id()));
    /// use tang_nn::checkpoint::Checkpoint;
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// dir.save(&TrainerState { step: 3, ..TrainerState::default() }, &[])?;
    /// let checkpoint = Checkpoint::load(root.join("checkpoint-0000000003"))?; // the step, 10 digits
    /// assert_eq!(checkpoint.state().step, 3);
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::NotFound`] when `path` does not exist or is not a directory;
    /// [`CheckpointError::Io`] when it cannot be inspected;
    /// [`CheckpointError::Corrupt`] when its trainer state is missing or does not parse.
    pub fn load(path: impl Into<PathBuf>) -> Result<Checkpoint, CheckpointError> {
        let path = path.into();
        // A wrong path is the caller's mistake, not a damaged checkpoint: saying so keeps
        // them from deleting directories to "fall back".
        match fs::metadata(&path) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(CheckpointError::NotFound { path }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CheckpointError::NotFound { path });
            }
            Err(e) => return Err(io_error("inspect", path)(e)),
        }
        let state_path = path.join(TRAINER_STATE_FILE);
        let text = fs::read_to_string(&state_path).map_err(|e| CheckpointError::Corrupt {
            path: path.clone(),
            detail: format!("cannot read {TRAINER_STATE_FILE}: {e}"),
        })?;
        let state = serde_json::from_str(&text).map_err(|e| CheckpointError::Corrupt {
            path: path.clone(),
            detail: format!("{TRAINER_STATE_FILE} does not parse: {e}"),
        })?;
        Ok(Checkpoint { path, state })
    }

    /// The checkpoint's directory.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-path-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let checkpoint = dir.save(&TrainerState { step: 3, ..TrainerState::default() }, &[])?;
    /// assert!(checkpoint.path().ends_with("checkpoint-0000000003"));
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its trainer state.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-state-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let checkpoint = dir.save(&TrainerState { step: 3, ..TrainerState::default() }, &[])?;
    /// assert_eq!(checkpoint.state().step, 3);
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self) -> &TrainerState {
        &self.state
    }

    /// The path of its file `name` (for readers that open files themselves).
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-file-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let checkpoint = dir.save(&TrainerState::default(), &[("vocab.json", b"{}")])?;
    /// assert!(checkpoint.file("vocab.json")?.exists());
    /// assert!(checkpoint.file("../escape").is_err()); // plain names only
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::InvalidName`] when `name` is not a plain file name.
    pub fn file(&self, name: &str) -> Result<PathBuf, CheckpointError> {
        check_name(name)?;
        Ok(self.path.join(name))
    }

    /// The contents of its file `name`.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpoint-read-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let checkpoint = dir.save(&TrainerState::default(), &[("vocab.json", b"{}")])?;
    /// assert_eq!(checkpoint.read("vocab.json")?, b"{}");
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::InvalidName`], or [`CheckpointError::Io`] when it cannot be read.
    pub fn read(&self, name: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.file(name)?;
        fs::read(&path).map_err(io_error("read", path))
    }
}

/// Accepts a plain file name that the store does not reserve.
fn check_name(name: &str) -> Result<(), CheckpointError> {
    let refuse = |detail| {
        Err(CheckpointError::InvalidName {
            name: name.to_string(),
            detail,
        })
    };
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return refuse("pass a plain file name without a directory");
    }
    if name.starts_with('.') {
        return refuse("hidden names are reserved for unfinished writes");
    }
    if name == TRAINER_STATE_FILE {
        return refuse("the store writes this file itself");
    }
    Ok(())
}
