//! Helpers shared by tang's example programs (data, the digits model, report tables).
//!
//! - [`digits`]: the bundled digits data set: CSV parsing, train/test split, batches.
//! - [`mlp`]: the digits model (64-128-10 MLP), its GPU forward/backward and Adam.
//! - [`report`]: the error type of an example's `main`, printed as its message.
//! - [`resume`]: `--resume`, or a refusal to train over another run's checkpoints.

pub mod digits;
pub mod mlp;
pub mod report;
pub mod resume;
