//! Helpers shared by tang's example programs (argument parsing, timing, report tables).
//!
//! - [`args`]: `--name value` options with typed values.
//! - [`digits`]: the bundled digits data set: CSV parsing, train/test split, batches.
//! - [`mlp`]: the digits model (64-128-10 MLP), its GPU forward/backward and Adam.
//! - [`report`]: the error type of an example's `main`, printed as its message.

pub mod args;
pub mod digits;
pub mod mlp;
pub mod report;
