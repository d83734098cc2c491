//! GPT-2 checkpoints in Hugging Face's format: [`Gpt::from_pretrained`] reads a directory
//! that `save_pretrained` wrote (or that was downloaded from the Hub: `config.json` and
//! `model.safetensors`, or `model.safetensors.index.json` and its shards), in either key
//! layout (`GPT2LMHeadModel`'s `transformer.h.0...` or `GPT2Model`'s `h.0...`), and
//! [`Gpt::save_pretrained`] writes one that `transformers.GPT2LMHeadModel.from_pretrained`
//! loads.
//!
//! GPT-2 is nanoGPT's GPT with biases, the tanh GELU (`gelu_new`) and the config's
//! layer-norm epsilon, so it loads into the same [`Gpt`]: the only conversion is the
//! transpose of the `Conv1D` projections (`[in, out]` in the file, `[out, in]` as
//! `nn.Linear` in tang). `c_attn` stays one fused projection of q, k and v, as in both.
//!
//! ```no_run
//! use tang_nn::models::gpt::Gpt;
//! let dev = tang_nn::tang_runtime::Device::new()?;
//! let gpt = Gpt::from_pretrained(&dev, "gpt2")?; // GPT2LMHeadModel.from_pretrained("gpt2")
//! gpt.save_pretrained("gpt2-finetuned")?; // model.save_pretrained("gpt2-finetuned")
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod config;
mod error;
mod files;
mod keys;

use std::collections::BTreeMap;
use std::path::Path;

use tang_runtime::Tensor as RawTensor;
use tang_runtime::ops::permute;

use self::error::io;
use self::keys::{LM_HEAD, Layout, is_mask_buffer};
pub use error::HubError;
pub use keys::is_conv1d;

use super::gpt::{Gpt, GptConfig};
use crate::Module;
use crate::module::load::{Ties, stage};
use crate::safetensors::{FloatDtype, StateDict, check_state_dict, save_file};

/// The config file's name.
const CONFIG: &str = "config.json";

/// The [`GptConfig`] of the Hugging Face GPT-2 checkpoint in `dir` (its `config.json`):
/// `n_positions` is the block size, `activation_function` the GELU, `layer_norm_epsilon`
/// the norms' epsilon, the (equal) `*_pdrop` the dropout; keys left out take
/// `GPT2Config`'s defaults. Change what fine-tuning changes (nanoGPT's
/// `from_pretrained(override_args=dict(dropout=...))`), build the model with
/// [`Gpt::new`] and fill it with [`Gpt::load_pretrained`].
///
/// ```no_run
/// use tang_nn::models::gpt::Gpt;
/// use tang_nn::models::gpt2_hub::pretrained_config;
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let mut config = pretrained_config("gpt2")?;
/// config.dropout = 0.0; // GPT.from_pretrained('gpt2', dict(dropout=0.0))
/// let gpt = Gpt::new(&dev, &config, 0)?;
/// gpt.load_pretrained("gpt2")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`HubError::Io`] when `config.json` cannot be read, [`HubError::Config`] when it is
/// not a GPT-2 config tang's GPT builds (the message says which field and why).
pub fn pretrained_config(dir: impl AsRef<Path>) -> Result<GptConfig, HubError> {
    let path = dir.as_ref().join(CONFIG);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let hint = format!(
            "{e}; give the directory of a Hugging Face GPT-2 checkpoint (config.json and \
             model.safetensors, as save_pretrained writes them)"
        );
        io(&path)(std::io::Error::new(e.kind(), hint))
    })?;
    config::parse(&text, &path)
}

impl Gpt {
    /// A GPT-2 from the Hugging Face checkpoint directory `dir`, as
    /// `GPT2LMHeadModel.from_pretrained(dir)`: the config from `config.json`
    /// ([`pretrained_config`]), the weights from `model.safetensors` or its shards in
    /// either key layout, loaded strictly ([`Gpt::load_pretrained`]).
    ///
    /// ```no_run
    /// use tang_nn::Module;
    /// use tang_nn::models::gpt::Gpt;
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let gpt = Gpt::from_pretrained(&dev, "gpt2")?;
    /// assert_eq!(gpt.num_params(), 124_439_808);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`pretrained_config`] and [`Gpt::load_pretrained`]; [`HubError::Model`] when
    /// the device fails.
    pub fn from_pretrained(
        dev: &tang_runtime::Device,
        dir: impl AsRef<Path>,
    ) -> Result<Gpt, HubError> {
        let dir = dir.as_ref();
        let gpt = Gpt::new(dev, &pretrained_config(dir)?, 0)?;
        gpt.load_pretrained(dir)?;
        Ok(gpt)
    }

    /// Loads the weights of the Hugging Face GPT-2 checkpoint in `dir` into this GPT in
    /// place. Its config must be the directory's (sizes, GELU, epsilon; the dropout may
    /// differ). The keys may carry `GPT2LMHeadModel`'s `transformer.` prefix or not
    /// (`GPT2Model`); the causal-mask buffers older checkpoints hold (`h.0.attn.bias`)
    /// are skipped and a stored `lm_head.weight` is ignored (the head is tied to `wte`,
    /// as transformers ties it). The load is strict: every missing, unexpected or
    /// mis-shaped key is reported at once under its name in the file, and nothing is
    /// copied then.
    ///
    /// # Errors
    /// [`HubError::Config`] when the directory's config differs from this GPT's, as
    /// [`pretrained_config`]; [`HubError::Io`], [`HubError::Safetensors`] or
    /// [`HubError::Index`] for files that cannot be read; [`HubError::Keys`] for key and
    /// shape mismatches; [`HubError::Model`] when the device fails.
    pub fn load_pretrained(&self, dir: impl AsRef<Path>) -> Result<(), HubError> {
        let dir = dir.as_ref();
        let theirs = pretrained_config(dir)?;
        let same_but_dropout = GptConfig {
            dropout: self.config().dropout,
            ..theirs
        };
        if same_but_dropout != *self.config() {
            return Err(HubError::Config {
                path: dir.join(CONFIG),
                detail: format!(
                    "the checkpoint is {theirs:?}, this GPT {:?}; build it from \
                     pretrained_config",
                    self.config()
                ),
            });
        }
        let mut file = files::read_weights(dir)?;
        let masks: Vec<String> = file
            .names()
            .filter(|n| is_mask_buffer(n))
            .map(str::to_string)
            .collect();
        for name in masks {
            file.remove(&name);
        }
        let layout = Layout::of(file.names());
        // The tied head is listed once, as `transformer.wte.weight`.
        let params = self.named_parameters();
        let mut expected: Vec<(String, Vec<usize>)> = params
            .iter()
            .map(|(name, t)| (layout.key(name), key_shape(name, t.shape())))
            .collect();
        if layout == Layout::LmHead && file.contains(LM_HEAD) {
            // Stored anyway by some writers; transformers ties it to `wte` after loading.
            expected.push((LM_HEAD.to_string(), self.lm_head.weight.shape().to_vec()));
        }
        check_state_dict(layout.model_name(), expected, &file, true)?;
        let dev = self.lm_head.weight.data().device();
        let mut ours = StateDict::new();
        for (name, param) in &params {
            let key = layout.key(name);
            let values = file
                .f32_values(&key)
                .map_err(|source| HubError::Safetensors {
                    path: dir.to_path_buf(),
                    source,
                })?;
            let stored = RawTensor::from_slice(dev, &values, &key_shape(name, param.shape()))?;
            let value = if is_conv1d(name) {
                permute(&stored, &[1, 0])?
            } else {
                stored
            };
            ours.insert(name.clone(), value);
        }
        stage(self, &ours, true, Ties::OneName)?.apply()?;
        Ok(())
    }

    /// Writes this GPT to `dir` as `GPT2LMHeadModel.save_pretrained(dir)` does:
    /// `config.json` and `model.safetensors` (f32, keys `transformer.h.0.attn.c_attn.
    /// weight`, ..., the `Conv1D` weights `[in, out]`, the tied `lm_head.weight` left
    /// out and `{"format": "pt"}` in the metadata, as transformers expects). `dir` is
    /// created if needed; files of those names are replaced.
    ///
    /// ```no_run
    /// use tang_nn::models::gpt::Gpt;
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let gpt = Gpt::from_pretrained(&dev, "gpt2")?;
    /// gpt.save_pretrained("gpt2-copy")?; // GPT2LMHeadModel.from_pretrained("gpt2-copy") loads it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`HubError::Unsupported`] for a GPT that GPT-2 cannot express (no biases, grouped-
    /// query attention), [`HubError::Io`] or [`HubError::Safetensors`] when a file cannot
    /// be written, [`HubError::Model`] when the device fails.
    pub fn save_pretrained(&self, dir: impl AsRef<Path>) -> Result<(), HubError> {
        let dir = dir.as_ref();
        let config = config::to_json(self.config())?;
        let mut state = StateDict::new();
        // The tied head is listed once, as `transformer.wte.weight`: transformers ties
        // `lm_head.weight` to it on load.
        for (name, param) in self.named_parameters() {
            let data = param.data();
            state.insert(
                name.clone(),
                if is_conv1d(&name) {
                    permute(data, &[1, 0])?
                } else {
                    data.clone()
                },
            );
        }
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(CONFIG);
        std::fs::write(&path, config).map_err(io(&path))?;
        let path = dir.join(files::WEIGHTS);
        let metadata = BTreeMap::from([("format".to_string(), "pt".to_string())]);
        save_file(&path, &state, FloatDtype::F32, &metadata)
            .map_err(|source| HubError::Safetensors { path, source })
    }
}

/// The shape of tang's parameter `name` (of shape `shape`) in a GPT-2 checkpoint.
fn key_shape(name: &str, shape: &[usize]) -> Vec<usize> {
    if is_conv1d(name) {
        shape.iter().rev().copied().collect()
    } else {
        shape.to_vec()
    }
}
