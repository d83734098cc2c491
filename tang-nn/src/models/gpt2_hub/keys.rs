//! tang's GPT parameter names and layouts against a Hugging Face GPT-2 checkpoint's keys.
//!
//! tang's names are nanoGPT's, which are `GPT2LMHeadModel`'s (`transformer.h.0.attn.
//! c_attn.weight`, ...); `GPT2Model` (the Hub's own `gpt2/model.safetensors`) drops the
//! `transformer.` prefix. The projections are `Conv1D` in GPT-2, `[in, out]`: the
//! transpose of tang's `Linear` weight `[out, in]`.

/// The tied head: `save_pretrained` leaves it out, transformers ties it to `wte` on load.
pub(super) const LM_HEAD: &str = "lm_head.weight";

/// The prefix of `GPT2LMHeadModel`'s keys.
const PREFIX: &str = "transformer.";

/// Which model saved a checkpoint: its keys' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Layout {
    /// `GPT2LMHeadModel`: `transformer.h.0.attn.c_attn.weight`, ...
    LmHead,
    /// `GPT2Model`: `h.0.attn.c_attn.weight`, ...
    Base,
}

impl Layout {
    /// `GPT2LMHeadModel`'s layout when a key carries its prefix, `GPT2Model`'s otherwise.
    pub(super) fn of<'a>(mut names: impl Iterator<Item = &'a str>) -> Layout {
        if names.any(|n| n.starts_with(PREFIX)) {
            Layout::LmHead
        } else {
            Layout::Base
        }
    }

    /// The class transformers would load the checkpoint into, for messages.
    pub(super) fn model_name(self) -> &'static str {
        match self {
            Layout::LmHead => "GPT2LMHeadModel",
            Layout::Base => "GPT2Model",
        }
    }

    /// The checkpoint key of tang's parameter `name`.
    pub(super) fn key(self, name: &str) -> String {
        match self {
            Layout::LmHead => name.to_string(),
            Layout::Base => name.strip_prefix(PREFIX).unwrap_or(name).to_string(),
        }
    }
}

/// Whether tang's parameter `name` is a `Conv1D` weight in GPT-2, stored `[in, out]`:
/// the transpose of tang's `Linear` weight (for comparing tensors under Hugging Face's
/// names, gradients say).
///
/// ```
/// use tang_nn::models::gpt2_hub::is_conv1d;
/// assert!(is_conv1d("transformer.h.0.attn.c_attn.weight"));
/// assert!(!is_conv1d("transformer.wte.weight") && !is_conv1d("transformer.h.0.attn.c_attn.bias"));
/// ```
pub fn is_conv1d(name: &str) -> bool {
    name.starts_with("transformer.h.")
        && [
            ".attn.c_attn.weight",
            ".attn.c_proj.weight",
            ".mlp.c_fc.weight",
            ".mlp.c_proj.weight",
        ]
        .iter()
        .any(|end| name.ends_with(end))
}

/// Whether `key` is one of the causal-mask buffers older GPT-2 checkpoints hold
/// (`h.0.attn.bias`, `h.0.attn.masked_bias`), which transformers ignores on load
/// (`_keys_to_ignore_on_load_unexpected`).
pub(super) fn is_mask_buffer(key: &str) -> bool {
    let key = key.strip_prefix(PREFIX).unwrap_or(key);
    let Some(rest) = key.strip_prefix("h.") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(&rest[digits..], ".attn.bias" | ".attn.masked_bias")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_between_layouts() {
        let name = "transformer.h.3.attn.c_attn.weight";
        assert_eq!(Layout::LmHead.key(name), name);
        assert_eq!(Layout::Base.key(name), "h.3.attn.c_attn.weight");
        assert_eq!(
            Layout::of(["wte.weight", "h.0.ln_1.bias"].into_iter()),
            Layout::Base
        );
        assert_eq!(
            Layout::of(["transformer.wte.weight"].into_iter()),
            Layout::LmHead
        );
        assert!(is_conv1d(name) && is_conv1d("transformer.h.0.mlp.c_proj.weight"));
        assert!(!is_conv1d("transformer.h.0.attn.c_attn.bias") && !is_conv1d(LM_HEAD));
        assert!(
            is_mask_buffer("h.11.attn.bias") && is_mask_buffer("transformer.h.0.attn.masked_bias")
        );
        assert!(!is_mask_buffer("h.0.attn.c_attn.bias") && !is_mask_buffer("h..attn.bias"));
    }
}
