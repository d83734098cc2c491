//! Layers with PyTorch's names, layouts and defaults.

mod attention_cache;
mod attention_sdpa;

pub use attention_cache::KvCache;
pub use attention_sdpa::{AttnMask, WeightDropout, scaled_dot_product_attention};
