//! Helpers shared by tang's cross-crate tests: the kernel tables; the seeded random
//! generator and tolerances come from `tang_testing`.

pub mod import_graph;
pub mod kernels;

pub use tang_testing::{Rng, close};

/// Every argument tuple within one ulp of `x` (each coordinate at `x`, one float below or
/// one above): where a GPU rounds differently near a kink or a pole, its value is the
/// exact one of a neighbouring input.
pub fn neighbours(x: &[f32]) -> Vec<Vec<f32>> {
    let mut out = vec![Vec::new()];
    for &v in x {
        out = out
            .into_iter()
            .flat_map(|pre| {
                [v, v.next_down(), v.next_up()].map(|n| {
                    let mut p = pre.clone();
                    p.push(n);
                    p
                })
            })
            .collect();
    }
    out
}
