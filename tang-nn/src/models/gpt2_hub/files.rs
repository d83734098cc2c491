//! The weights of a Hugging Face checkpoint directory: `model.safetensors`, or the shards
//! that `model.safetensors.index.json` lists (`{"weight_map": {key: shard file}}`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::{HubError, io};
use crate::safetensors::{StateDict, read_file};

/// The single-file checkpoint's name.
pub(super) const WEIGHTS: &str = "model.safetensors";
/// The sharded checkpoint's index.
const INDEX: &str = "model.safetensors.index.json";

/// Every tensor of the checkpoint in `dir`, on the host in its file dtype.
///
/// # Errors
/// [`HubError::Io`] when the directory holds neither file; [`HubError::Safetensors`]
/// for a malformed file; [`HubError::Index`] when the index is malformed, names a shard
/// outside `dir`, or disagrees with the shards (a key missing from its shard, a shard
/// holding a key the index puts elsewhere or not at all).
pub(super) fn read_weights(dir: &Path) -> Result<StateDict, HubError> {
    let single = dir.join(WEIGHTS);
    if single.is_file() {
        return read(&single);
    }
    let index = dir.join(INDEX);
    if index.is_file() {
        return read_sharded(dir, &index);
    }
    Err(HubError::Io {
        path: single,
        source: std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "neither {WEIGHTS} nor {INDEX} is there; give the directory a Hugging Face \
                 save_pretrained wrote (a pytorch_model.bin must be converted to safetensors)"
            ),
        ),
    })
}

fn read(path: &Path) -> Result<StateDict, HubError> {
    read_file(path)
        .map(|c| c.tensors)
        .map_err(|source| HubError::Safetensors {
            path: path.to_path_buf(),
            source,
        })
}

/// The shards `index` lists, merged; every disagreement is reported at once.
fn read_sharded(dir: &Path, index: &Path) -> Result<StateDict, HubError> {
    let bad = |detail: String| HubError::Index {
        path: index.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(index).map_err(io(index))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = value
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("expected an object with a \"weight_map\" object".into()))?;
    let mut shard_of: BTreeMap<&str, &str> = BTreeMap::new();
    for (key, file) in map {
        let file = file.as_str().ok_or_else(|| {
            bad(format!(
                "the shard of {key:?} must be a file name, got {file}"
            ))
        })?;
        // A shard is a file beside the index: nothing the index says reaches elsewhere.
        let plain = Path::new(file).file_name().is_some_and(|n| n == file);
        if !plain {
            return Err(bad(format!(
                "the shard of {key:?} is {file:?}, not a file name in the directory"
            )));
        }
        shard_of.insert(key, file);
    }
    let mut shards: Vec<&str> = shard_of.values().copied().collect();
    shards.sort_unstable();
    shards.dedup();
    let mut merged = StateDict::new();
    let mut problems = Vec::new();
    for shard in shards {
        let mut tensors = read(&dir.join(shard))?;
        let names: Vec<String> = tensors.names().map(str::to_string).collect();
        for name in names {
            match shard_of.get(name.as_str()) {
                Some(&s) if s == shard => {
                    if let Some(t) = tensors.remove(&name) {
                        merged.insert(name, t);
                    }
                }
                Some(&s) => problems.push(format!(
                    "{shard} holds {name:?}, which the index puts in {s}"
                )),
                None => problems.push(format!(
                    "{shard} holds {name:?}, which the index does not list"
                )),
            }
        }
    }
    for (key, shard) in &shard_of {
        if !merged.contains(key) {
            problems.push(format!("{shard} lacks {key:?}, which the index puts there"));
        }
    }
    if problems.is_empty() {
        Ok(merged)
    } else {
        Err(bad(format!(
            "the index and its shards disagree: {}",
            problems.join("; ")
        )))
    }
}
