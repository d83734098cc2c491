//! Helpers shared by tang's cross-crate tests: the kernel tables; the seeded random
//! generator and tolerances come from `tang_testing`.

pub mod kernels;

pub use tang_testing::{Rng, close};
