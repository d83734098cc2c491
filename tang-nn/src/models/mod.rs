//! Whole models with the names their reference implementations give their parameters, so
//! their checkpoints load as they are.
//!
//! - [`gpt`]: nanoGPT's GPT (tied head, exact or tanh GELU, KV-cache sampling).
//! - [`gpt2_hub`]: GPT-2 checkpoints in Hugging Face's format, loaded into and saved from
//!   that GPT.

pub mod gpt;
pub mod gpt2_hub;
mod gpt_flops;
mod gpt_generate;
