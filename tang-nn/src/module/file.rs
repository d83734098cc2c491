//! A module's parameters to and from a safetensors file: [`save_model`] (and
//! [`save_model_with`]) and
//! [`load_model`], PyTorch's `safetensors.torch.save_model` / `load_model`.

use std::collections::BTreeMap;
use std::path::Path;

use super::load::{Ties, stage};
use super::strict::IncompatibleKeys;
use super::{Error, Module};
use crate::safetensors::{FloatDtype, SafetensorsError, read_file, save_file};

/// Writes `model`'s `state_dict` to `path` in f32, as `safetensors.torch.save_model(model,
/// path)` does (see [`save_model_with`] for another float type or metadata).
///
/// ```
/// use tang_nn::nn::Linear;
/// use tang_nn::safetensors::{load_model, save_model};
/// let dev = tang_nn::Device::new()?;
/// # let path = std::env::temp_dir().join(format!("tang-doc-save-model-{}.safetensors", std::process::id()));
/// let fc = Linear::new(&dev, 2, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// save_model(&fc, &path)?; // safetensors.torch.save_model(fc, path)
/// load_model(&fc, &path, true)?;
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`save_model_with`].
pub fn save_model<M: Module + ?Sized>(
    model: &M,
    path: impl AsRef<Path>,
) -> Result<(), SafetensorsError> {
    save_model_with(model, path, FloatDtype::F32, &BTreeMap::new())
}

/// [`save_model`] with the floats in `float` (F32, or F16/BF16 rounded to nearest even)
/// and `metadata` (a config, say) in the header's `__metadata__`: each group of tied parameters
/// once under its first name in string order with the other names recorded in
/// `__metadata__` as `{dropped: kept}`, and `metadata` (a config, say) kept. For a model
/// without ties the file is byte-identical to `safetensors.torch.save_file` of its
/// state dict.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use tang_nn::models::gpt::{Gpt, GptConfig};
/// use tang_nn::safetensors::{FloatDtype, load_model, save_model_with};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let config = GptConfig { vocab_size: 81, block_size: 64, n_layer: 2, n_head: 4, n_kv_head: 4,
///                          n_embd: 64, dropout: 0.0, bias: false, ..GptConfig::gpt2() };
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// let meta = BTreeMap::from([("config".to_string(), "{}".to_string())]);
/// save_model_with(&gpt, "gpt.safetensors", FloatDtype::BF16, &meta)?;
/// let again = Gpt::new(&dev, &config, 1)?;
/// load_model(&again, "gpt.safetensors", true)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SafetensorsError::Io`] when the file cannot be written, [`SafetensorsError::Runtime`]
/// when a download fails.
pub fn save_model_with<M: Module + ?Sized>(
    model: &M,
    path: impl AsRef<Path>,
    float: FloatDtype,
    metadata: &BTreeMap<String, String>,
) -> Result<(), SafetensorsError> {
    save_file(path, &model.state_dict(), float, metadata)
}

/// Loads the safetensors file at `path` into `model`'s parameters in place, as
/// `safetensors.torch.load_model(model, path, strict)`: F16 and BF16 are widened to f32;
/// of each group of the model's tied parameters one name is a key (the first in string
/// order among those the file holds), so a file that [`save_model`] wrote with one name
/// per tie loads, and a second name the file holds anyway is an unexpected key; the
/// file's `__metadata__` is not read (it is the writer's: a config, `{"format": "pt"}`).
/// With `strict` every missing, unexpected or shape-mismatched key is reported at once in
/// PyTorch's words (nothing is copied then). Returns the keys a non-strict load left out.
///
/// ```
/// use tang_nn::nn::Linear;
/// use tang_nn::safetensors::{load_model, save_model};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// # let path = std::env::temp_dir().join(format!("tang-doc-load-model-{}.safetensors", std::process::id()));
/// let a = Linear::new(&dev, 2, 2, true, &mut tang_nn::rng::SplitMix64::new(0))?;
/// save_model(&a, &path)?;
/// let b = Linear::new(&dev, 2, 2, true, &mut tang_nn::rng::SplitMix64::new(1))?;
/// let missing = load_model(&b, &path, true)?; // safetensors.torch.load_model(b, path)
/// assert!(missing.is_empty() && b.weight.to_vec()? == a.weight.to_vec()?);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`Error::Safetensors`] for a file that cannot be read or is malformed (never a
/// panic), [`Error::Keys`] for key or shape mismatches, [`Error::Autograd`] when a copy
/// fails on the device.
pub fn load_model<M: Module + ?Sized>(
    model: &M,
    path: impl AsRef<Path>,
    strict: bool,
) -> Result<IncompatibleKeys, Error> {
    let checkpoint = read_file(path)?;
    stage(model, &checkpoint.tensors, strict, Ties::OneName)?.apply()
}
