//! [`CheckpointDir`]: a directory of numbered checkpoints, written atomically, listed,
//! and pruned by the retention policy.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::durable::{remove_via_trash, sync_dir, sync_file, write_synced};
use super::error::io_error;
use super::{
    CHECKPOINT_PREFIX, Checkpoint, CheckpointError, Mode, Retention, TEMP_PREFIX,
    TRAINER_STATE_FILE, TRASH_PREFIX, TrainerState, check_name,
};

/// A directory of checkpoints, one subdirectory per saved step.
///
/// ```
/// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
/// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-{}", std::process::id()));
/// let dir = CheckpointDir::open(&root, Retention::default())?;
/// dir.save(&TrainerState { step: 100, ..TrainerState::default() }, &[("weights.bin", &[0u8; 16])])?;
/// let latest = dir.latest()?.ok_or("one was saved")?; // resume from here
/// assert_eq!(latest.state().step, 100);
/// # std::fs::remove_dir_all(&root)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CheckpointDir {
    root: PathBuf,
    retention: Retention,
}

/// Makes temporary directory names unique within the process.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

impl CheckpointDir {
    /// Opens (creating it if needed) the checkpoint root `root`, and removes what an
    /// interrupted save or removal left behind (hidden `.tmp-*` and `.trash-*`
    /// directories: never a complete checkpoint). Each save removes those of other
    /// processes again.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-open-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?; // creates root
    /// assert!(dir.root().is_dir());
    /// assert!(CheckpointDir::open(&root, Retention { keep_last: 0, ..Retention::default() }).is_err());
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::InvalidOption`] when `keep_last` is 0; [`CheckpointError::Io`].
    pub fn open(
        root: impl Into<PathBuf>,
        retention: Retention,
    ) -> Result<CheckpointDir, CheckpointError> {
        if retention.keep_last == 0 {
            return Err(CheckpointError::InvalidOption {
                detail:
                    "keep_last is 0, which would delete every checkpoint it saves; pass at least 1"
                        .into(),
            });
        }
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_error("create", &root))?;
        let dir = CheckpointDir { root, retention };
        dir.remove_leftovers(false)?;
        Ok(dir)
    }

    /// Removes the hidden `.tmp-*` and `.trash-*` directories an interrupted save or
    /// removal left in the root; with `others_only`, only those of other processes (the
    /// process id is part of their names), so that a save in this process never removes
    /// another save's directory while it is being written.
    fn remove_leftovers(&self, others_only: bool) -> Result<(), CheckpointError> {
        let own = std::process::id().to_string();
        for entry in self.entries()? {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Some(rest) = name
                .strip_prefix(TEMP_PREFIX)
                .or_else(|| name.strip_prefix(TRASH_PREFIX))
            else {
                continue;
            };
            // `.tmp-<checkpoint>-<pid>-<n>` and `.trash-<checkpoint>-<pid>`.
            let mut fields = rest.rsplit('-');
            let pid = if name.starts_with(TEMP_PREFIX) {
                fields.nth(1)
            } else {
                fields.next()
            };
            if others_only && pid == Some(own.as_str()) {
                continue;
            }
            let path = entry.path();
            fs::remove_dir_all(&path).map_err(io_error("remove leftover", path))?;
        }
        Ok(())
    }

    /// The root directory.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-root-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// assert_eq!(dir.root(), root.as_path());
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Saves a checkpoint of `files` (name and contents; plain names, not
    /// `trainer_state.json`) and `state`, atomically, then applies the retention policy.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-save-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let state = TrainerState { step: 10, ..TrainerState::default() };
    /// let checkpoint = dir.save(&state, &[("model.bin", &[1, 2, 3]), ("config.json", b"{}")])?;
    /// assert_eq!(checkpoint.read("model.bin")?, [1, 2, 3]);
    /// assert!(dir.save(&state, &[]).is_err()); // step 10 exists
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`CheckpointDir::save_with`].
    pub fn save(
        &self,
        state: &TrainerState,
        files: &[(&str, &[u8])],
    ) -> Result<Checkpoint, CheckpointError> {
        for (name, _) in files {
            check_name(name)?;
        }
        self.save_with(state, |dir| {
            for (name, bytes) in files {
                write_synced(&dir.join(name), bytes)?;
            }
            Ok::<(), CheckpointError>(())
        })
    }

    /// Saves a checkpoint whose files `write` creates in the directory it is given (so a
    /// writer that wants a path, such as a safetensors serializer, writes straight into
    /// it), and `state`, atomically; then applies the retention policy. Every file
    /// `write` leaves there is fsynced before the directory is renamed into place.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-save_with-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// let state = TrainerState { step: 1, ..TrainerState::default() };
    /// // A writer that wants a path (torch.save-like) writes straight into the checkpoint.
    /// let checkpoint = dir.save_with(&state, |path| std::fs::write(path.join("data.txt"), "42"))?;
    /// assert_eq!(checkpoint.read("data.txt")?, b"42");
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::Exists`] when this step was already saved;
    /// [`CheckpointError::InvalidOption`] for a non-finite metric;
    /// [`CheckpointError::Writer`] when `write` fails; [`CheckpointError::InvalidName`]
    /// when it creates a directory or `trainer_state.json`; [`CheckpointError::Io`].
    pub fn save_with<E>(
        &self,
        state: &TrainerState,
        write: impl FnOnce(&Path) -> Result<(), E>,
    ) -> Result<Checkpoint, CheckpointError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        for (what, value) in [("metric", state.metric), ("best_metric", state.best_metric)] {
            if value.is_some_and(|v| !v.is_finite()) {
                return Err(CheckpointError::InvalidOption {
                    detail: format!(
                        "{what} is {value:?}; JSON holds only finite numbers, so pass None instead"
                    ),
                });
            }
        }
        let target = self.root.join(checkpoint_name(state.step));
        if target.exists() {
            return Err(CheckpointError::Exists { path: target });
        }
        // Finishes a removal that a crash interrupted, so the root never holds more than
        // one checkpoint beyond what the policy keeps, and removes what a process that
        // crashed while saving here left (it may have crashed after this one opened the
        // root, as when another process writes checkpoints into the same root in turn).
        self.prune()?;
        self.remove_leftovers(true)?;
        let temp = self.root.join(format!(
            "{TEMP_PREFIX}{}-{}-{}",
            checkpoint_name(state.step),
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&temp).map_err(io_error("create", &temp))?;
        let written = self.fill(&temp, state, write).and_then(|()| {
            // A checkpoint may have appeared meanwhile only if another process writes
            // here too; renaming onto it would fail or mix the two.
            if target.exists() {
                return Err(CheckpointError::Exists {
                    path: target.clone(),
                });
            }
            fs::rename(&temp, &target).map_err(io_error("rename into place", &temp))?;
            sync_dir(&self.root)
        });
        if let Err(e) = written {
            // Best effort: a leftover temporary directory is removed by the next open.
            let _ = fs::remove_dir_all(&temp);
            return Err(e);
        }
        self.prune()?;
        Ok(Checkpoint {
            path: target,
            state: state.clone(),
        })
    }

    /// Writes the files and the trainer state into the temporary directory and makes
    /// them durable.
    fn fill<E>(
        &self,
        temp: &Path,
        state: &TrainerState,
        write: impl FnOnce(&Path) -> Result<(), E>,
    ) -> Result<(), CheckpointError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        write(temp).map_err(|e| {
            let e: Box<dyn std::error::Error + Send + Sync> = e.into();
            // A CheckpointError from the store's own helpers stays what it is.
            match e.downcast::<CheckpointError>() {
                Ok(own) => *own,
                Err(other) => CheckpointError::Writer(other),
            }
        })?;
        for entry in fs::read_dir(temp).map_err(io_error("list", temp))? {
            let entry = entry.map_err(io_error("list", temp))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry
                .file_type()
                .map_err(io_error("inspect", entry.path()))?
                .is_file();
            if !is_file {
                return Err(CheckpointError::InvalidName {
                    name,
                    detail: "a checkpoint holds plain files only",
                });
            }
            if name == TRAINER_STATE_FILE {
                return Err(CheckpointError::InvalidName {
                    name,
                    detail: "the store writes this file itself",
                });
            }
            sync_file(&entry.path())?;
        }
        // The trainer state goes in last: a directory that has it has everything.
        let json =
            serde_json::to_vec_pretty(state).map_err(|e| CheckpointError::InvalidOption {
                detail: format!("the trainer state does not serialize: {e}"),
            })?;
        write_synced(&temp.join(TRAINER_STATE_FILE), &json)?;
        sync_dir(temp)
    }

    /// The checkpoints' steps and directories, oldest first (whether they load is not
    /// checked).
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-list-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// for step in [5, 10] {
    ///     dir.save(&TrainerState { step, ..TrainerState::default() }, &[])?;
    /// }
    /// assert_eq!(dir.list()?.iter().map(|(step, _)| *step).collect::<Vec<_>>(), [5, 10]);
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::Io`] when the root cannot be listed.
    pub fn list(&self) -> Result<Vec<(u64, PathBuf)>, CheckpointError> {
        let mut found: Vec<(u64, PathBuf)> = self
            .entries()?
            .into_iter()
            .filter_map(|entry| {
                let step = entry
                    .file_name()
                    .to_str()?
                    .strip_prefix(CHECKPOINT_PREFIX)?
                    .parse()
                    .ok()?;
                Some((step, entry.path()))
            })
            .collect();
        found.sort();
        Ok(found)
    }

    /// The most recent checkpoint, or `None` when there is none.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-latest-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// assert!(dir.latest()?.is_none()); // a fresh run
    /// dir.save(&TrainerState { step: 5, ..TrainerState::default() }, &[])?;
    /// assert_eq!(dir.latest()?.map(|c| c.state().step), Some(5));
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::Corrupt`] when the most recent one does not load (it was
    /// changed by hand: the store never leaves an incomplete one).
    pub fn latest(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        self.list()?
            .pop()
            .map(|(_, path)| Checkpoint::load(path))
            .transpose()
    }

    /// The checkpoint with the best metric (the most recent among equals), or `None`
    /// when no checkpoint has a metric.
    ///
    /// ```
    /// # use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState};
    /// # let root = std::env::temp_dir().join(format!("tang-doc-ckpt-checkpointdir-best-{}", std::process::id()));
    /// let dir = CheckpointDir::open(&root, Retention::default())?;
    /// dir.save(&TrainerState { step: 1, metric: Some(2.0), ..TrainerState::default() }, &[])?;
    /// dir.save(&TrainerState { step: 2, metric: Some(1.5), ..TrainerState::default() }, &[])?;
    /// assert_eq!(dir.best()?.map(|c| c.state().step), Some(2)); // the lowest loss
    /// # std::fs::remove_dir_all(&root)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`CheckpointError::Corrupt`] when a checkpoint does not load.
    pub fn best(&self) -> Result<Option<Checkpoint>, CheckpointError> {
        let mut best: Option<Checkpoint> = None;
        for (_, path) in self.list()? {
            let candidate = Checkpoint::load(path)?;
            let Some(m) = candidate.state.metric else {
                continue;
            };
            let beats = match best.as_ref().and_then(|b| b.state.metric) {
                Some(b) => !self.retention.mode.is_better(b, m),
                None => true,
            };
            if beats {
                best = Some(candidate);
            }
        }
        Ok(best)
    }

    /// Removes the checkpoints the retention policy does not keep.
    fn prune(&self) -> Result<(), CheckpointError> {
        let all = self.list()?;
        let mut keep = vec![false; all.len()];
        let recent = all.len().saturating_sub(self.retention.keep_last);
        keep[recent..].iter_mut().for_each(|k| *k = true);
        if self.retention.keep_best > 0 {
            let mut ranked = Vec::new();
            for (i, (_, path)) in all.iter().enumerate() {
                if let Some(m) = Checkpoint::load(path)?.state.metric {
                    ranked.push((i, m));
                }
            }
            // Best first; among equal metrics the most recent first.
            let mode = self.retention.mode;
            ranked.sort_by(|a, b| {
                let order = a.1.total_cmp(&b.1);
                let order = if mode == Mode::Max {
                    order.reverse()
                } else {
                    order
                };
                order.then(b.0.cmp(&a.0))
            });
            for &(i, _) in ranked.iter().take(self.retention.keep_best) {
                keep[i] = true;
            }
        }
        for ((_, path), kept) in all.iter().zip(keep) {
            if !kept {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                let trash = self
                    .root
                    .join(format!("{TRASH_PREFIX}{name}-{}", std::process::id()));
                remove_via_trash(path, &trash)?;
            }
        }
        Ok(())
    }

    /// The root's entries.
    fn entries(&self) -> Result<Vec<fs::DirEntry>, CheckpointError> {
        fs::read_dir(&self.root)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(io_error("list", &self.root))
    }
}

/// The directory name of the checkpoint of `step` (zero-padded so names sort by step).
fn checkpoint_name(step: u64) -> String {
    format!("{CHECKPOINT_PREFIX}{step:010}")
}
