//! Checking a loaded state dict against what a model expects, reported as PyTorch's
//! `Module.load_state_dict` reports it: every missing, unexpected and shape-mismatched key
//! at once, in PyTorch's words.

use std::collections::HashSet;
use std::fmt;

use super::state_dict::StateDict;

/// A key whose shape in the checkpoint differs from the model's.
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, check_state_dict};
/// let mut found = StateDict::new();
/// found.insert("w", HostTensor::from_f32(&[0.0; 4], &[4])?);
/// let err = check_state_dict("Linear", [("w", vec![2, 2])], &found, true).err().ok_or("shapes differ")?;
/// assert_eq!((err.size_mismatches[0].checkpoint.as_slice(), err.size_mismatches[0].model.as_slice()), (&[4][..], &[2, 2][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeMismatch {
    /// The key.
    pub key: String,
    /// The shape in the checkpoint.
    pub checkpoint: Vec<usize>,
    /// The shape in the model.
    pub model: Vec<usize>,
}

/// What a non-strict load leaves out (PyTorch's `_IncompatibleKeys`).
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, check_state_dict};
/// let mut found = StateDict::new();
/// found.insert("extra", HostTensor::from_f32(&[0.0], &[1])?);
/// // model.load_state_dict(found, strict=False)
/// let keys = check_state_dict("Linear", [("weight", vec![1])], &found, false)?;
/// assert_eq!((keys.missing_keys, keys.unexpected_keys), (vec!["weight".to_string()], vec!["extra".to_string()]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    /// Keys the model has and the checkpoint lacks, in the model's order.
    pub missing_keys: Vec<String>,
    /// Keys the checkpoint has and the model lacks, in the checkpoint's order.
    pub unexpected_keys: Vec<String>,
}

impl IncompatibleKeys {
    /// Whether every key matched.
    ///
    /// ```
    /// use tang_nn::safetensors::{HostTensor, StateDict, check_state_dict};
    /// let mut found = StateDict::new();
    /// found.insert("weight", HostTensor::from_f32(&[0.0], &[1])?);
    /// assert!(check_state_dict("Linear", [("weight", vec![1])], &found, false)?.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.missing_keys.is_empty() && self.unexpected_keys.is_empty()
    }
}

/// Every problem of one load, reported together (PyTorch's "Error(s) in loading
/// state_dict for ..."). Fix the model or the checkpoint, or load non-strictly to accept
/// missing and unexpected keys.
///
/// ```
/// use tang_nn::safetensors::{StateDict, check_state_dict};
/// let err = check_state_dict("Mlp", [("fc.weight", vec![2, 2])], &StateDict::new(), true)
///     .err()
///     .ok_or("a missing key is an error when strict")?;
/// assert_eq!(err.missing_keys, ["fc.weight"]);
/// println!("{err}"); // Error(s) in loading state_dict for Mlp: Missing key(s) ...
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct StateDictError {
    /// The model's type name, as PyTorch's message shows it.
    pub model: String,
    /// Missing keys (empty in a non-strict load).
    pub missing_keys: Vec<String>,
    /// Unexpected keys (empty in a non-strict load).
    pub unexpected_keys: Vec<String>,
    /// Keys whose shapes differ (an error even in a non-strict load, as in PyTorch).
    pub size_mismatches: Vec<SizeMismatch>,
}

fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn shape(s: &[usize]) -> String {
    let dims: Vec<String> = s.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

crate::macros::debug_as_display!(StateDictError);

impl fmt::Display for StateDictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error(s) in loading state_dict for {}:", self.model)?;
        if !self.missing_keys.is_empty() {
            write!(
                f,
                "\n\tMissing key(s) in state_dict: {}. ",
                quoted(&self.missing_keys)
            )?;
        }
        if !self.unexpected_keys.is_empty() {
            write!(
                f,
                "\n\tUnexpected key(s) in state_dict: {}. ",
                quoted(&self.unexpected_keys)
            )?;
        }
        for m in &self.size_mismatches {
            write!(
                f,
                "\n\tsize mismatch for {}: copying a param with shape {} from checkpoint, \
                 the shape in current model is {}.",
                m.key,
                shape(&m.checkpoint),
                shape(&m.model)
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for StateDictError {}

/// Compares `found` (a loaded state dict) with `expected`, the model's (name, shape) list,
/// as PyTorch's `model.load_state_dict(found, strict)` does. Strict: any missing,
/// unexpected or shape-mismatched key is an error listing them all. Non-strict: missing
/// and unexpected keys are returned; shape mismatches are still an error, as in PyTorch.
/// `model` names the model in the message (PyTorch shows the class name).
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, check_state_dict};
/// let mut found = StateDict::new();
/// found.insert("weight", HostTensor::from_f32(&[0.0; 4], &[2, 2])?);
/// let expected = found.shapes(); // a model's (name, shape) list
/// assert!(check_state_dict("Linear", expected, &found, true)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`StateDictError`] with every problem found.
pub fn check_state_dict<N, S>(
    model: &str,
    expected: impl IntoIterator<Item = (N, S)>,
    found: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys, StateDictError>
where
    N: AsRef<str>,
    S: AsRef<[usize]>,
{
    let mut report = IncompatibleKeys::default();
    let mut size_mismatches = Vec::new();
    let mut known = HashSet::new();
    for (name, want) in expected {
        let (name, want) = (name.as_ref(), want.as_ref());
        known.insert(name.to_string());
        match found.get(name) {
            None => report.missing_keys.push(name.to_string()),
            Some(t) if t.shape() != want => size_mismatches.push(SizeMismatch {
                key: name.to_string(),
                checkpoint: t.shape().to_vec(),
                model: want.to_vec(),
            }),
            Some(_) => {}
        }
    }
    report.unexpected_keys = found
        .names()
        .filter(|n| !known.contains(*n))
        .map(str::to_string)
        .collect();
    if size_mismatches.is_empty() && (!strict || report.is_empty()) {
        return Ok(report);
    }
    let (missing_keys, unexpected_keys) = if strict {
        (report.missing_keys, report.unexpected_keys)
    } else {
        (Vec::new(), Vec::new())
    };
    Err(StateDictError {
        model: model.to_string(),
        missing_keys,
        unexpected_keys,
        size_mismatches,
    })
}
