//! `config.json` of a Hugging Face GPT-2 (`GPT2Config`) to and from a [`GptConfig`].

use std::path::Path;

use serde_json::{Map, Value, json};

use super::error::HubError;
use crate::models::gpt::GptConfig;
use crate::nn::Approximate;

/// `GPT2Config`'s defaults, for keys a config leaves out (as transformers fills them).
const VOCAB_SIZE: u64 = 50257;
const N_POSITIONS: u64 = 1024;
const N_EMBD: u64 = 768;
const N_LAYER: u64 = 12;
const N_HEAD: u64 = 12;
const PDROP: f64 = 0.1;
const LAYER_NORM_EPSILON: f64 = 1e-5;
/// GPT-2's `<|endoftext|>`, the default `bos_token_id` and `eos_token_id`.
const END_OF_TEXT: u64 = 50256;

/// The GELU behind one of transformers' `activation_function` names (`ACT2FN`): `gelu` is
/// the exact form, `gelu_new`, `gelu_pytorch_tanh` and `gelu_fast` the tanh form.
fn gelu_of(name: &str) -> Option<Approximate> {
    match name {
        "gelu" => Some(Approximate::None),
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Some(Approximate::Tanh),
        _ => None,
    }
}

/// A float as JSON through its shortest decimal form, so `1e-5f32` is written `1e-05`
/// and not `9.999999747378752e-06`.
fn json_f32(x: f32) -> Value {
    x.to_string()
        .parse::<f64>()
        .map_or(Value::Null, Value::from)
}

/// The [`GptConfig`] of the `config.json` text at `path` (named in errors).
///
/// # Errors
/// [`HubError::Config`] for text that is not a JSON object, a field of the wrong type, or
/// a GPT-2 variant tang's GPT does not build (another `model_type`, an unknown
/// `activation_function`, `n_inner` other than `4 n_embd`, untied embeddings, unscaled
/// or layer-scaled attention, cross-attention, differing dropout probabilities).
pub(super) fn parse(text: &str, path: &Path) -> Result<GptConfig, HubError> {
    let bad = |detail: String| HubError::Config {
        path: path.to_path_buf(),
        detail,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| bad("expected a JSON object (a GPT2Config)".into()))?;
    if let Some(t) = obj.get("model_type")
        && t != "gpt2"
    {
        return Err(bad(format!(
            "model_type is {t}; tang's GPT loads GPT-2 checkpoints (\"gpt2\")"
        )));
    }
    // What a key holds, for messages (only asked about keys that are present).
    let got = |key: &str| obj.get(key).map_or_else(String::new, Value::to_string);
    let size = |key: &str, default: u64| -> Result<usize, HubError> {
        let v = obj.get(key).map_or(Some(default), Value::as_u64);
        v.and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                bad(format!(
                    "{key} must be a positive integer, got {}",
                    got(key)
                ))
            })
    };
    let number = |key: &str, default: f64| -> Result<f64, HubError> {
        obj.get(key)
            .map_or(Some(default), Value::as_f64)
            .ok_or_else(|| bad(format!("{key} must be a number, got {}", got(key))))
    };
    let flag = |key: &str, default: bool| -> Result<bool, HubError> {
        obj.get(key)
            .map_or(Some(default), Value::as_bool)
            .ok_or_else(|| bad(format!("{key} must be true or false, got {}", got(key))))
    };
    let n_embd = size("n_embd", N_EMBD)?;
    let n_head = size("n_head", N_HEAD)?;
    let (vocab_size, block_size) = (
        size("vocab_size", VOCAB_SIZE)?,
        size("n_positions", N_POSITIONS)?,
    );
    // The largest matrices' element counts must be countable before anything is built.
    let inner = n_embd.checked_mul(4);
    let counts = [Some(vocab_size), Some(block_size), inner].map(|rows| rows?.checked_mul(n_embd));
    let Some(inner) = inner.filter(|_| counts.iter().all(Option::is_some)) else {
        return Err(bad(format!(
            "n_embd {n_embd} with vocab_size {vocab_size} and n_positions {block_size} is too large to build"
        )));
    };
    match obj.get("n_inner") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64() == Some(inner as u64) => {}
        Some(v) => {
            return Err(bad(format!(
                "n_inner is {v}; tang's GPT has an MLP of 4 n_embd = {inner} (null)"
            )));
        }
    }
    let act = obj
        .get("activation_function")
        .map_or(Some("gelu_new"), Value::as_str)
        .ok_or_else(|| bad("activation_function must be a string".into()))?;
    let gelu = gelu_of(act).ok_or_else(|| {
        bad(format!(
            "activation_function {act:?} is not supported; use \"gelu_new\" or \"gelu\""
        ))
    })?;
    for (key, default, want, what) in [
        ("tie_word_embeddings", true, true, "an lm_head tied to wte"),
        (
            "scale_attn_weights",
            true,
            true,
            "attention scaled by 1/sqrt(head size)",
        ),
        (
            "scale_attn_by_inverse_layer_idx",
            false,
            false,
            "no per-layer scaling",
        ),
        ("add_cross_attention", false, false, "no cross-attention"),
    ] {
        if flag(key, default)? != want {
            return Err(bad(format!("{key} must be {want}: tang's GPT has {what}")));
        }
    }
    let pdrop: Vec<f64> = ["resid_pdrop", "embd_pdrop", "attn_pdrop"]
        .iter()
        .map(|k| number(k, PDROP))
        .collect::<Result<_, _>>()?;
    if pdrop.iter().any(|&p| p != pdrop[0]) || !(0.0..1.0).contains(&pdrop[0]) {
        return Err(bad(format!(
            "resid_pdrop, embd_pdrop and attn_pdrop are {pdrop:?}; tang's GPT has one \
             dropout probability in [0, 1): make them equal"
        )));
    }
    let eps = number("layer_norm_epsilon", LAYER_NORM_EPSILON)?;
    if !(eps >= 0.0 && eps.is_finite()) {
        return Err(bad(format!(
            "layer_norm_epsilon must be a non-negative number, got {eps}"
        )));
    }
    Ok(GptConfig {
        vocab_size,
        block_size,
        n_layer: size("n_layer", N_LAYER)?,
        n_head,
        n_kv_head: n_head,
        n_embd,
        dropout: pdrop[0] as f32,
        bias: true,
        gelu,
        layer_norm_epsilon: eps as f32,
    })
}

/// `config.json` of a `GPT2LMHeadModel` with `config`'s sizes, as transformers'
/// `GPT2Config(...).to_json_string()` writes it (sorted keys, GPT-2's token ids).
///
/// # Errors
/// [`HubError::Unsupported`] for a config GPT-2 cannot express (no biases, grouped-query
/// attention).
pub(super) fn to_json(config: &GptConfig) -> Result<String, HubError> {
    let unsupported = |detail: String| HubError::Unsupported { detail };
    if !config.bias {
        return Err(unsupported(
            "GPT-2 has biases in every linear layer and layer norm; this GPT has none \
             (bias: false)"
                .into(),
        ));
    }
    if config.n_kv_head != config.n_head {
        return Err(unsupported(format!(
            "GPT-2 has as many key/value heads as query heads; this GPT has {} and {}",
            config.n_kv_head, config.n_head
        )));
    }
    let act = match config.gelu {
        Approximate::None => "gelu",
        Approximate::Tanh => "gelu_new",
    };
    let dropout = json_f32(config.dropout);
    let mut obj = Map::new();
    for (key, value) in [
        ("activation_function", json!(act)),
        ("architectures", json!(["GPT2LMHeadModel"])),
        ("attn_pdrop", dropout.clone()),
        ("bos_token_id", json!(END_OF_TEXT)),
        ("dtype", json!("float32")),
        ("embd_pdrop", dropout.clone()),
        ("eos_token_id", json!(END_OF_TEXT)),
        ("initializer_range", json!(0.02)),
        ("layer_norm_epsilon", json_f32(config.layer_norm_epsilon)),
        ("model_type", json!("gpt2")),
        ("n_embd", json!(config.n_embd)),
        ("n_head", json!(config.n_head)),
        ("n_inner", Value::Null),
        ("n_layer", json!(config.n_layer)),
        ("n_positions", json!(config.block_size)),
        ("reorder_and_upcast_attn", json!(false)),
        ("resid_pdrop", dropout),
        ("scale_attn_by_inverse_layer_idx", json!(false)),
        ("scale_attn_weights", json!(true)),
        ("tie_word_embeddings", json!(true)),
        ("use_cache", json!(true)),
        ("vocab_size", json!(config.vocab_size)),
    ] {
        obj.insert(key.to_string(), value);
    }
    // Serialising a map of plain values does not fail; keep the error typed all the same.
    serde_json::to_string_pretty(&Value::Object(obj)).map_err(|e| unsupported(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_gpt2_small_and_a_written_config_reads_back() {
        let path = Path::new("config.json");
        let c = parse("{}", path).unwrap();
        assert_eq!(
            (c.vocab_size, c.block_size, c.n_layer, c.n_embd),
            (50257, 1024, 12, 768)
        );
        assert_eq!((c.gelu, c.layer_norm_epsilon), (Approximate::Tanh, 1e-5));
        assert_eq!(parse(&to_json(&c).unwrap(), path).unwrap(), c);
        let exact = GptConfig {
            gelu: Approximate::None,
            dropout: 0.25,
            ..c
        };
        assert_eq!(parse(&to_json(&exact).unwrap(), path).unwrap(), exact);
    }

    #[test]
    fn unsupported_configs_say_what_to_change() {
        let path = Path::new("config.json");
        for (text, needle) in [
            (r#"{"model_type": "llama"}"#, "model_type"),
            (r#"{"activation_function": "relu"}"#, "activation_function"),
            (r#"{"n_inner": 100}"#, "n_inner"),
            (r#"{"tie_word_embeddings": false}"#, "tie_word_embeddings"),
            (
                r#"{"resid_pdrop": 0.1, "attn_pdrop": 0.0}"#,
                "make them equal",
            ),
            (r#"{"n_layer": -1}"#, "n_layer"),
            (r#"{"n_embd": "wide"}"#, "n_embd"),
            (r#"{"n_embd": 4611686018427387904}"#, "too large"),
            (
                r#"{"vocab_size": 4294967296, "n_embd": 4294967296}"#,
                "too large",
            ),
            ("[1]", "JSON object"),
            ("{", "not JSON"),
        ] {
            let err = parse(text, path).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let no_bias = GptConfig {
            bias: false,
            ..GptConfig::gpt2()
        };
        assert!(to_json(&no_bias).unwrap_err().to_string().contains("bias"));
    }
}
