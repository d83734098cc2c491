//! How much arithmetic a [`Gpt`] training step is, counted as nanoGPT's `estimate_mfu`
//! counts it, for the trainer's model FLOPs utilisation.

use super::gpt::Gpt;
use crate::Module;

impl Gpt {
    /// FLOPs of one token's forward and backward pass: nanoGPT's `6 N + 12 L H Q T`, with
    /// `N` the parameters (tied ones once) less the position embedding (nanoGPT's
    /// `get_num_params()`), `L` layers, `H` heads of `Q` dimensions and `T` the block size
    /// (the attention's share at full context). A training step of `B` windows of `T`
    /// tokens is `B * T` times this.
    ///
    /// ```
    /// # use tang_nn::models::gpt::{Gpt, GptConfig};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let config = GptConfig { vocab_size: 8, block_size: 4, n_layer: 1, n_head: 2, n_kv_head: 2, n_embd: 8, dropout: 0.0, bias: false, ..GptConfig::gpt2() };
    /// let gpt = Gpt::new(&dev, &config, 0)?;
    /// // 6 N + 12 L H Q T, N = 8 x 8 embedding + 2 norms + 8 x 24 + 8 x 8 + 8 x 32 + 32 x 8 + final norm
    /// let n = 64 + 8 + 192 + 64 + 8 + 256 + 256 + 8;
    /// assert_eq!(gpt.flops_per_token(), (6 * n + 12 * 2 * 4 * 4) as f64);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flops_per_token(&self) -> f64 {
        let c = self.config();
        let non_embedding = self.num_params().saturating_sub(c.block_size * c.n_embd);
        let head_dim = c.n_embd / c.n_head.max(1);
        6.0 * non_embedding as f64 + 12.0 * (c.n_layer * c.n_head * head_dim * c.block_size) as f64
    }
}
