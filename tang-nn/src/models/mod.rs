//! Whole models with the names their reference implementations give their parameters, so
//! their checkpoints load as they are.
//!
//! - [`gpt`]: nanoGPT's GPT (tied head, exact GELU, KV-cache sampling).

pub mod gpt;
mod gpt_flops;
mod gpt_generate;
